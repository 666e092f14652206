module github.com/retrytransport/retrytransport/redisretry

go 1.24.0

replace github.com/retrytransport/retrytransport => ../

require (
	github.com/go-redis/redis_rate/v10 v10.0.1
	github.com/google/go-cmp v0.7.0
	github.com/redis/go-redis/v9 v9.22.0
	github.com/retrytransport/retrytransport v0.0.0
	go.uber.org/goleak v1.3.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/hashicorp/go-cleanhttp v0.5.2 // indirect
	go.uber.org/atomic v1.11.0 // indirect
	golang.org/x/sys v0.30.0 // indirect
	golang.org/x/time v0.14.0 // indirect
)
