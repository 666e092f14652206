# The README's commands. `make test` is what CI runs.
GO ?= go
PKGS := ./...

.PHONY: test fmt-check vet lint race demo bench fuzz

# staticcheck runs from the module proxy at a pinned version, so CI needs no
# install step of its own; the checks are those STYLE.md asks for.
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
STATICCHECK_CHECKS := inherit,ST1000,ST1003,ST1005,ST1016,ST1020,ST1021,ST1022

test: fmt-check vet lint race

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

lint:
	$(GO) run $(STATICCHECK) -checks $(STATICCHECK_CHECKS) $(PKGS)

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
