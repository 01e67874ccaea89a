# Herald's two entry points: `make run` and `make test`. See README.md.

GO ?= go
# Fuzz targets run briefly on every `make test`; longer runs: make fuzz FUZZTIME=5m.
# The default counts executions rather than seconds: a time limit can expire
# while a loaded machine is still gathering baseline coverage, which the fuzzer
# reports as a failure ("context deadline exceeded") though nothing was found.
FUZZTIME ?= 5000x
FUZZ_TARGETS ?= ./schedule/:FuzzParseRetryAfter ./internal/ssrf/:FuzzCheckURLReadsHostsAsTheDialer ./signing/:FuzzParseSignatureHeader ./signing/:FuzzParseSecret ./signing/:FuzzSignMatchesReference ./signing/:FuzzVerifyTimestamp ./api/:FuzzPublishRequest ./api/:FuzzEndpointRequest ./receiver/:FuzzDecodePayload ./internal/sanitize/:FuzzSanitize ./filter/:FuzzParse

.PHONY: run test check-fmt vet check-layout browser unit fuzz build bench

## run: start Postgres if needed, the API, the dispatcher and a demo (see scripts/run.sh)
run: build
	./scripts/run.sh

build:
	$(GO) build -o bin/ ./cmd/...

## test: formatting, vet, the layout's rules, every test with the race
## detector, a short fuzz; installs chromium for the browser tests if missing
test: check-fmt vet check-layout browser unit fuzz

## check-layout: internal/ holds leaves; only cmd/ reads flags and the environment
check-layout:
	./scripts/check-layout.sh

browser:
	@./scripts/ensure-chromium.sh

check-fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change these files (run gofmt -w):"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

unit:
	$(GO) test -race -count=1 ./...

fuzz:
	@for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "fuzz $$name in $$pkg ($(FUZZTIME))"; \
		$(GO) test -run='^$$' -fuzz="^$$name$$" -fuzztime=$(FUZZTIME) $$pkg || exit 1; \
	done

## sim: the reference article's experiments at full size against local
## Postgres (a couple of minutes); writes docs/sim/output.txt and jitter.svg
.PHONY: sim
sim:
	$(GO) run ./cmd/sim --out docs/sim

## bench: every benchmark scenario (under 10 minutes): prints the tables and
## writes docs/benchmarks/results.json and docs/benchmarks/latency.svg
BENCH_FLAGS ?=
bench: build
	@mkdir -p docs/benchmarks
	./bin/bench $(BENCH_FLAGS) --json docs/benchmarks/results.json --svg docs/benchmarks/latency.svg

## chaos: Herald end to end under faults at full size (2 to 3 minutes):
## 20,000 events, two dispatcher processes killed six times, a real restart
## of Postgres, a 410 endpoint enabled and replayed, resends, jobs ended by
## force, a black-holed dispatcher and a poison event at the consumer. It runs
## its own Postgres server (initdb and pg_ctl in a temporary directory, on a
## free loopback port), never the shared one, so it may run beside other
## tests; writes docs/chaos/output.txt
.PHONY: chaos
chaos:
	$(GO) run ./cmd/chaos --out docs/chaos

## chaos-split: the same run in split mode: the producers publish into a
## database of their own that holds only the outbox, and the dispatchers
## relay it into Herald's (killed with them); writes docs/chaos-split/output.txt
.PHONY: chaos-split
chaos-split:
	$(GO) run ./cmd/chaos --split --out docs/chaos-split

## soak: steady traffic for 6 minutes with one-minute partitions and a
## retention of 2 minutes (about 8 minutes in all): prints the size curve
## of history, River's jobs and the database, and checks that history
## levels off, that partitions are dropped while deliveries are in flight
## and that nothing pending is lost. Runs its own Postgres server, as chaos
## does; writes docs/soak/output.txt
.PHONY: soak
soak:
	$(GO) run ./cmd/soak --out docs/soak
