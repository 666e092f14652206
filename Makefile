# The README's commands. `make test` is what CI runs.
GO ?= go
PKGS := ./...

.PHONY: test deps fmt-check vet lint race modules demo demo-fleet bench bench-fleet fuzz

# The repository's other modules, each with its own go.mod so that their
# dependencies (OpenTelemetry, SDKs, Prometheus, peer libraries) stay out of
# the library's: make test vets, lints and tests them too. redisretry's
# tests and the bench's fleet-on-Redis table start redis-server from PATH,
# the bench's nginx table and its test nginx.
MODULES := otelretry redisretry examples/sdk examples/prometheus bench

# The modules whose tests run without the race detector: examples/sdk
# drives third-party SDKs (Stripe's, DynamoDB's, GitHub's, Elasticsearch's)
# against local fakes, and bench is the benchmark harness. Under -race
# their SDKs and peer libraries would be compiled a third time, after vet
# and staticcheck: five of a fresh clone's twenty minutes on 2 cores, for
# code that is not the library's, whose own modules run under it. Without
# it their tests reuse what vet compiled.
NORACE := examples/sdk bench

# staticcheck runs from the module proxy at a pinned version, so CI needs no
# install step of its own; the checks are our style rules.
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
STATICCHECK_CHECKS := inherit,ST1000,ST1003,ST1005,ST1016,ST1020,ST1021,ST1022

test: deps fmt-check vet lint race modules

# What the tests need that a fresh clone lacks: every module's dependencies
# in the module cache (the docs' snippets are compiled offline, so nothing
# may be left to download then), redis-server on PATH for redisretry and
# the bench, and nginx for the bench, each from Debian's package when it is
# missing (nginx-light; its binary is in /usr/sbin, which the bench also
# looks in). Each package starts a system service; the tests start their
# own servers, so it is stopped.
deps:
	@set -e; for m in . $(MODULES); do (cd $$m && $(GO) mod download); done
	@$(call apt-install,redis-server,redis-server,redis-server)
	@redis-server --version
	@$(call apt-install,nginx,nginx-light,nginx)
	@"$$(command -v nginx || echo /usr/sbin/nginx)" -v

# apt-install installs Debian's package $(2) when the command $(1) is found
# neither on PATH nor in /usr/sbin, with sudo unless root, updating the
# package lists only if the first try fails, and stops the system service
# $(3) that the package starts.
define apt-install
if ! command -v $(1) >/dev/null && [ ! -x /usr/sbin/$(1) ]; then \
  echo "installing $(1) (Debian package $(2))"; \
  sudo=""; [ "$$(id -u)" -eq 0 ] || sudo=sudo; \
  export DEBIAN_FRONTEND=noninteractive; \
  $$sudo apt-get install -y -q $(2) >/dev/null 2>&1 || \
    { $$sudo apt-get update -q >/dev/null && $$sudo apt-get install -y -q $(2) >/dev/null; }; \
  $$sudo systemctl stop $(3) >/dev/null 2>&1 || $$sudo service $(3) stop >/dev/null 2>&1 || true; \
fi
endef

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

lint:
	$(GO) run $(STATICCHECK) -checks $(STATICCHECK_CHECKS) $(PKGS)

# The simulations (TestXxxSimulation..., TestSim..., TestHangingServer...)
# run one goroutine each in virtual time: the race detector has nothing to
# find in them and slows them five to ten times, so they run in a pass of
# their own without it, in the packages that have them (simpkgs), and every
# other test under it.
SIMS := Simulation|^TestSim[A-Z]|^TestHangingServer
simpkgs = $$(for d in $$($(GO) list -f '{{.Dir}}' ./...); do if grep -qE '^func Test(\w*Simulation|Sim[A-Z]|HangingServer)' $$d/*_test.go 2>/dev/null; then echo $$d; fi; done)

race:
	$(GO) test -race -count=1 -timeout 300s -skip '$(SIMS)' $(PKGS)
	@pkgs="$(simpkgs)"; [ -z "$$pkgs" ] || $(GO) test -count=1 -timeout 300s -run '$(SIMS)' $$pkgs

modules:
	@set -e; race() { case " $(NORACE) " in *" $$1 "*) ;; *) echo -race;; esac; }; \
	for m in $(MODULES); do \
	  echo "== module $$m"; \
	  (cd $$m && $(GO) vet ./... && $(GO) run $(STATICCHECK) -checks $(STATICCHECK_CHECKS) ./... && \
	    $(GO) test $$(race $$m) -count=1 -timeout 300s -skip '$(SIMS)' ./... && \
	    pkgs="$(simpkgs)" && { [ -z "$$pkgs" ] || $(GO) test -count=1 -timeout 300s -run '$(SIMS)' $$pkgs; }); \
	done

demo:
	$(GO) run ./examples/demo

# A local redis-server, a failing API and a fleet of replicas: the shared
# retry quota stops the fleet's retries where each replica's own would not.
demo-fleet:
	cd redisretry && $(GO) run ./demofleet

# Every native fuzz target of every package, FUZZTIME each. The seed corpora
# also run as ordinary tests in make test.
FUZZTIME ?= 10s
fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "fuzz $$pkg $$f"; \
	    $(GO) test $$pkg -run '^$$' -fuzz "^$$f\$$" -fuzztime $(FUZZTIME); \
	  done; \
	done

# The root module's testing.B benchmarks (bare vs retrying, same run), then
# the bench/ module's side-by-side tables against peer libraries, about 50
# minutes in all; BENCHFLAGS=-quick shrinks the tables' scenarios to about
# two minutes. bench-fleet runs only the fleet tables and redraws their pictures
# in docs/img, which docs/fleets.md shows.
BENCHFLAGS ?=
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count 3 -benchtime 200ms .
	cd otelretry && $(GO) test -run '^$$' -bench . -benchmem -count 3 -benchtime 200ms .
	cd bench && $(GO) run . $(BENCHFLAGS)

bench-fleet:
	cd bench && $(GO) run . -scenarios fleet,single-ra -svg ../docs/img $(BENCHFLAGS)

# The fault-injection soak test (soak_test.go): 64 goroutines for 30 s against
# a server that fails a third of all attempts; make test runs it for 2 s.
.PHONY: soak
soak:
	RETRYTRANSPORT_SOAK=30s $(GO) test -race -run Soak -count=1 -timeout 10m .
