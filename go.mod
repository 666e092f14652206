module github.com/retrytransport/retrytransport

go 1.24.0

require (
	github.com/google/go-cmp v0.7.0
	github.com/hashicorp/go-cleanhttp v0.5.2
	github.com/jarcoal/httpmock v1.4.2
	go.uber.org/goleak v1.3.0
	golang.org/x/time v0.14.0
)
