# gnnplan build, demo and test entry points. `make demo` and `make test` are
# the two commands README.md promises work on a fresh machine.

GO       ?= go
BIN      ?= bin/gnnplan
# giouring (the io_uring binding the feature store uses) reaches into the
# runtime with //go:linkname syscall.mmap, which Go >= 1.23 refuses to link
# unless the linker is told to allow it. Only the gnnplan binary and the
# test run need the flag; `go build ./topology/...` and other packages that
# do not import giouring build without it.
LINKFLAGS ?= -checklinkname=0
FUZZTIME  ?= 5s
# FUZZMINTIME bounds minimizing a new input (the default, 60s, can outlast
# FUZZTIME many times over and end in "hung while minimizing").
FUZZMINTIME ?= 2s

.PHONY: all setup build demo test vet unit fuzz bench bench-deps clean

all: build

# setup installs what gnnplan uses when present: pci.ids (device names for
# discovery; without it names fall back to vendor:device in hex) and
# OpenBLAS's runtime library (the CPU trainer's GEMM, loaded with dlopen;
# without it GEMM runs on gonum's pure-Go BLAS, 10-20x slower). It never
# fails the build: on a machine without apt or root it only says what it
# skipped.
setup:
	@if [ -e /usr/share/misc/pci.ids ] || [ -e /usr/share/hwdata/pci.ids ]; then \
		echo "setup: pci.ids present"; \
	elif command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
		echo "setup: installing pci.ids (device names for discover)"; \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pci.ids >/dev/null) \
			|| echo "setup: could not install pci.ids; names will be vendor:device"; \
	else \
		echo "setup: no pci.ids and no root apt-get; names will be vendor:device"; \
	fi
	@if /sbin/ldconfig -p 2>/dev/null | grep -q 'libopenblas\.so\.0'; then \
		echo "setup: OpenBLAS present"; \
	elif command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
		echo "setup: installing OpenBLAS (libopenblas0-pthread, the CPU trainer's GEMM)"; \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libopenblas0-pthread >/dev/null) \
			|| echo "setup: could not install OpenBLAS; the CPU trainer's GEMM will use gonum"; \
	else \
		echo "setup: no OpenBLAS and no root apt-get; the CPU trainer's GEMM will use gonum"; \
	fi
	@if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then \
		echo "setup: chromium present"; \
	elif command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
		echo "setup: installing chromium (headless, for the capacity review's browser test)"; \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null) \
			|| echo "setup: could not install chromium; the review's browser test will be skipped"; \
	else \
		echo "setup: no chromium and no root apt-get; the review's browser test will be skipped"; \
	fi
	$(GO) mod download

build:
	$(GO) build -ldflags='$(LINKFLAGS)' -o $(BIN) ./cmd/gnnplan

# demo: describe this machine, then plan the embedded default: what to buy
# for $80,000 for GraphSAGE on IGB-HOM in Moment's machine B, and where to
# put it (writes bin/plan.json, bin/tpc.svg and the review bin/review.html); then train GraphSAGE on a
# small synthetic graph train generates.
demo: setup build
	./$(BIN) discover
	./$(BIN) recommend --budget 80000 -o bin/plan.json --plot bin/tpc.svg
	./$(BIN) report --plan bin/plan.json -o bin/review.html
	./$(BIN) train --epochs 20

vet:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

unit:
	$(GO) test -ldflags='$(LINKFLAGS)' -count=1 ./...

# fuzz runs every Fuzz target for FUZZTIME each (seeded from the fixtures);
# a failure prints that run's output. A failure that wrote no failing input
# and says only "context deadline exceeded" is Go 1.26's fuzz coordinator
# racing its own -fuzztime deadline (go.dev/issue/75804, fixed in Go 1.27):
# it is reported and ignored; any other failure, or a new input under
# testdata/fuzz, fails the target.
fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
		for f in $$($(GO) test -ldflags='$(LINKFLAGS)' -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
			echo "fuzz $$pkg $$f ($(FUZZTIME))"; \
			log=$$(mktemp); corpus=$$($(GO) list -f '{{.Dir}}' $$pkg)/testdata/fuzz/$$f; \
			before=$$(ls $$corpus 2>/dev/null | wc -l); \
			if ! $(GO) test -ldflags='$(LINKFLAGS)' -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) \
				-fuzzminimizetime $(FUZZMINTIME) $$pkg >$$log 2>&1; then \
				if [ "$$(ls $$corpus 2>/dev/null | wc -l)" != "$$before" ] || ! grep -q 'context deadline exceeded' $$log; then \
					cat $$log; rm -f $$log; exit 1; \
				fi; \
				echo "  ignored: context deadline exceeded at the fuzztime boundary with no failing input (Go 1.26's coordinator race, go.dev/issue/75804)"; \
			fi; \
			rm -f $$log; \
		done; \
	done

test: vet unit fuzz

bench:
	$(GO) test -ldflags='$(LINKFLAGS)' -run '^$$' -bench . -benchmem ./...

# bench-deps installs the anchors some benchmarks compare against, from
# Debian: numpy (kernels' BenchmarkGemmVsNumpy) and PyTorch. Not needed to
# build or test, and not run by CI; benchmarks skip what is missing.
bench-deps:
	@if ! command -v apt-get >/dev/null 2>&1; then \
		echo "bench-deps: needs apt-get (Debian or Ubuntu)"; exit 1; \
	fi
	@sudo=; [ "$$(id -u)" = 0 ] || sudo=sudo; \
		$$sudo apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq python3-numpy python3-torch >/dev/null && \
		echo "bench-deps: $$(/usr/bin/python3 -c 'import numpy, torch; print("numpy", numpy.__version__, "torch", torch.__version__)')"

clean:
	rm -rf bin
