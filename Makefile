# The README's commands. `make test` is what CI runs.
GO ?= go
PKGS := ./...

.PHONY: test fmt-check vet race demo bench fuzz

test: fmt-check vet race

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

race:
	$(GO) test -race -count=1 -timeout 300s $(PKGS)

demo:
	$(GO) run ./examples/demo

# Native fuzz targets, a few seconds each.
FUZZTIME ?= 10s
fuzz:
	$(GO) test ./retryafter -run '^$$' -fuzz '^FuzzParseValue$$' -fuzztime $(FUZZTIME)
	$(GO) test ./classify -run '^$$' -fuzz FuzzCode -fuzztime $(FUZZTIME)

bench:
	$(GO) test -run '^$$' -bench . -benchmem -count 5 .
