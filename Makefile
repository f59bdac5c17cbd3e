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
# VERSION names the build in `gnnplan version` and the review: the git
# revision (and "-dirty" for uncommitted changes), since Go stamps none
# where -buildvcs=false is set; "dev" outside a git checkout.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
BINFLAGS = $(LINKFLAGS) -X main.version=$(VERSION)
FUZZTIME  ?= 5s
# FUZZMINTIME bounds minimizing a new input (the default, 60s, can outlast
# FUZZTIME many times over and end in "hung while minimizing").
FUZZMINTIME ?= 2s

.PHONY: all setup build demo test vet unit fuzz bench bench-doc bench-deps cuda-deps cuda-check ptx build-cuda clean gpu-bundle

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
	$(GO) build -ldflags='$(BINFLAGS)' -o $(BIN) ./cmd/gnnplan

# demo: describe this machine, then plan the embedded default: what to buy
# for $80,000 for GraphSAGE on IGB-HOM in Moment's machine B, and where to
# put it (writes bin/plan.json, bin/tpc.svg and the review bin/review.html); then train GraphSAGE on a
# small synthetic graph train generates.
demo: setup build
	./$(BIN) discover
	./$(BIN) recommend --budget 80000 --save bin/plan.json --plot bin/tpc.svg
	./$(BIN) report --plan bin/plan.json --out bin/review.html
	./$(BIN) train --epochs 20

# STATICCHECK is the static analyser `make test` runs beside go vet, pinned
# and installed into .tools/ through the module proxy on first use.
STATICCHECK_VERSION ?= v0.8.2
STATICCHECK = $(CURDIR)/.tools/staticcheck-$(STATICCHECK_VERSION)

vet: $(STATICCHECK)
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(STATICCHECK) ./...

$(STATICCHECK):
	@mkdir -p $(CURDIR)/.tools
	GOBIN=$(CURDIR)/.tools/bin $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	mv $(CURDIR)/.tools/bin/staticcheck $@

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

test: vet unit fuzz cuda-check

# bench runs the benchmarks docs/benchmarks.md describes and rewrites it
# (internal/benchdoc; raw output kept in docs/bench/results.json). About 30
# minutes on 2 cores. BENCH_COUNT sets the repetitions, BENCH_FULL=1 adds the
# billion-vertex and other long runs, BENCH_ONLY=ddak,gemm runs only those
# sections (the others keep their saved figures). OPENBLAS_CORETYPE is unset
# so OpenBLAS picks its kernels as it does for users. bench-doc renders the
# document again from the saved results without running anything.
BENCH_COUNT ?= 3
BENCH_FULL  ?= 0
BENCH_ONLY  ?=
bench: build
	env -u OPENBLAS_CORETYPE $(GO) run ./internal/benchdoc -run -count $(BENCH_COUNT) -full=$(BENCH_FULL) -only '$(BENCH_ONLY)'

bench-doc:
	$(GO) run ./internal/benchdoc

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

# cuda-deps fetches into .cuda/ (git-ignored) what the cuda build tag needs
# to vet and build on a machine with no GPU and no CUDA install: cuda.h and
# nvrtc.h in .cuda/include, and in .cuda/lib a libcuda.so to link against
# and NVRTC (libnvrtc.so.11.2 and the libnvrtc-builtins.so.11.8 it loads),
# from Debian 12's CUDA 11.8 packages. Those live in non-free, which the
# system's apt sources may not enable, so it runs apt with its own sources,
# lists and cache under .cuda/apt, with the system's apt-get update hooks
# (cache cleaning, appstream) turned off: it changes nothing outside .cuda/
# and needs no root. Only nvidia-cuda-dev ships cuda.h and nvrtc.h, in a
# 774 MB archive whose data starts with usr/include: the two headers are
# streamed from the head of it with curl and the download is dropped as soon
# as tar has both (about 2 MB, under a second), so the archive's hash, which
# apt would check, is never seen; the headers are checked against the SHA-256
# pinned below instead. Where they differ (a new Debian revision, a cut
# stream) or curl is missing, it downloads the whole archive through apt,
# which verifies it, and says to update the pins. Its libcuda.so stub lies
# at the end, behind about 95 s of decompression, so the libcuda.so linked
# against is the driver library from libcuda1 (3 MB), which exports the
# same symbols under the same soname, libcuda.so.1. It does nothing when
# the files are already there; rm -rf .cuda fetches them again (about 21 MB,
# most of it libnvrtc11.2).
CUDA_DIR := $(CURDIR)/.cuda
CUDA_APT := -c $(CUDA_DIR)/apt/apt.conf
# The headers of nvidia-cuda-dev 11.8.89~11.8.0-5~deb12u1.
CUDA_H_SHA256  := 55639151a971a10c28d627a98dcd406c6320a5b4e5b67dd9d229056ed5c8e045
NVRTC_H_SHA256 := db31915b517d8df60bc9ba9dc0ce51c49ec464fe5a67372004672caa56dbbcab

cuda-deps:
	@set -e; d='$(CUDA_DIR)'; m=./usr/lib/x86_64-linux-gnu; \
	if [ -f "$$d/include/cuda.h" ] && [ -f "$$d/lib/libcuda.so" ] && \
		[ -f "$$d/lib/libnvrtc.so.11.2" ] && [ -f "$$d/lib/libnvrtc-builtins.so.11.8" ]; then \
		echo "cuda-deps: .cuda/ has cuda.h, libcuda.so and NVRTC already; nothing to do"; exit 0; \
	fi; \
	for t in apt-get dpkg-deb tar sha256sum; do \
		command -v $$t >/dev/null 2>&1 || { echo "cuda-deps: needs $$t (Debian 12, x86-64)"; exit 1; }; \
	done; \
	start=$$(date +%s); rm -rf "$$d/apt" "$$d/stage"; \
	mkdir -p "$$d/apt/lists/partial" "$$d/apt/cache/archives/partial" "$$d/stage"; \
	echo 'deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm non-free' \
		>"$$d/apt/sources.list"; \
	printf '%s\n' "Dir::Etc::SourceList \"$$d/apt/sources.list\";" 'Dir::Etc::SourceParts "/dev/null";' \
		"Dir::State::Lists \"$$d/apt/lists\";" "Dir::Cache \"$$d/apt/cache\";" 'APT::Sandbox::User "root";' \
		'#clear APT::Update::Post-Invoke;' '#clear APT::Update::Post-Invoke-Success;' >"$$d/apt/apt.conf"; \
	echo "cuda-deps: apt-get update of bookworm non-free into .cuda/apt (system apt untouched)"; \
	apt-get -qq $(CUDA_APT) update; \
	cd "$$d/apt"; \
	if command -v curl >/dev/null 2>&1; then \
		echo "cuda-deps: streaming cuda.h and nvrtc.h from the head of nvidia-cuda-dev (about 2 MB of 774 MB)"; \
		url=$$(apt-get -qq $(CUDA_APT) --print-uris download nvidia-cuda-dev | cut -d\' -f2); \
		curl -fsSL "$$url" 2>/dev/null | dpkg-deb --fsys-tarfile /dev/stdin 2>/dev/null | \
			tar -x --occurrence -C ../stage ./usr/include/cuda.h ./usr/include/nvrtc.h 2>/dev/null || true; \
	fi; \
	if ! printf '%s  %s\n' $(CUDA_H_SHA256) ../stage/usr/include/cuda.h $(NVRTC_H_SHA256) ../stage/usr/include/nvrtc.h | \
		sha256sum -c --status --strict 2>/dev/null; then \
		echo "cuda-deps: no curl, or the streamed headers are not the pinned ones (CUDA_H_SHA256, NVRTC_H_SHA256);"; \
		echo "cuda-deps: downloading nvidia-cuda-dev (774 MB), which apt verifies, for cuda.h and nvrtc.h"; \
		rm -rf ../stage/usr/include; \
		apt-get -qq $(CUDA_APT) download nvidia-cuda-dev; \
		dpkg-deb --fsys-tarfile nvidia-cuda-dev_*.deb 2>/dev/null | \
			tar -x --occurrence -C ../stage ./usr/include/cuda.h ./usr/include/nvrtc.h; \
		rm -f nvidia-cuda-dev_*.deb; \
		echo "cuda-deps: if Debian changed the headers, pin these in the Makefile:"; \
		printf '  CUDA_H_SHA256  := %s\n  NVRTC_H_SHA256 := %s\n' \
			$$(sha256sum <../stage/usr/include/cuda.h | cut -d' ' -f1) $$(sha256sum <../stage/usr/include/nvrtc.h | cut -d' ' -f1); \
	fi; \
	echo "cuda-deps: downloading libnvrtc11.2, libnvrtc-builtins11.8 and libcuda1"; \
	apt-get -qq $(CUDA_APT) download libnvrtc11.2 libnvrtc-builtins11.8 libcuda1; \
	for p in libnvrtc11.2 libnvrtc-builtins11.8; do \
		dpkg-deb --fsys-tarfile $${p}_*.deb | tar -x -C ../stage --wildcards "$$m/libnvrtc*"; \
	done; \
	dpkg-deb --fsys-tarfile libcuda1_*.deb | tar -x -C ../stage --wildcards "$$m/nvidia/current/libcuda.so.*.*"; \
	cd "$$d"; rm -rf include lib; mkdir include lib; \
	mv stage/usr/include/*.h include/; \
	mv stage/$$m/libnvrtc* lib/; \
	mv stage/$$m/nvidia/current/libcuda.so.*.* lib/libcuda.so; \
	ln -s libnvrtc.so.11.2 lib/libnvrtc.so; \
	rm -rf stage apt; \
	echo "cuda-deps: done in $$(($$(date +%s) - start))s; kept only these (the .deb files and apt lists are gone):"; \
	find include lib -type f -printf '  %10s  .cuda/%p\n'; find lib -type l -printf '              .cuda/%p -> %l\n'

# cuda-check vets and builds every package with the cuda build tag against
# .cuda/, so the cgo code behind that tag (cuda.h, -lcuda) is compiled and
# linked on CI, which has no GPU; nothing built here is run.
# It also compiles the kernels to PTX again and fails when the result is
# not the committed kernels/cuda_kernels.ptx (run `make ptx`).
cuda-check: cuda-deps
	CGO_CFLAGS='-I$(CUDA_DIR)/include' CGO_LDFLAGS='-L$(CUDA_DIR)/lib' $(GO) vet -tags cuda ./...
	CGO_CFLAGS='-I$(CUDA_DIR)/include' CGO_LDFLAGS='-L$(CUDA_DIR)/lib' \
		$(GO) build -tags cuda -ldflags='$(LINKFLAGS)' ./...
	@tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	LD_LIBRARY_PATH='$(CUDA_DIR)/lib' $(GO) run ./kernels/internal/ptxgen -nvrtc '$(CUDA_DIR)/lib/libnvrtc.so.11.2' -o "$$tmp/k.ptx" && \
	if cmp -s "$$tmp/k.ptx" kernels/cuda_kernels.ptx; then echo "cuda-check: kernels/cuda_kernels.ptx is current"; \
	else echo "cuda-check: kernels/cuda_kernels.ptx is not what NVRTC makes of kernels.cu: run make ptx"; exit 1; fi

# ptx compiles the CUDA kernels (kernels/internal/cudac/kernels.cu) to the
# PTX the CUDA backend embeds, kernels/cuda_kernels.ptx, with the NVRTC
# that cuda-deps extracts (NVRTC loads its builtins library by soname, so
# .cuda/lib goes on LD_LIBRARY_PATH). Run it after changing kernels.cu;
# the default tests fail until the PTX matches the source.
ptx: cuda-deps
	LD_LIBRARY_PATH='$(CUDA_DIR)/lib' $(GO) run ./kernels/internal/ptxgen -nvrtc '$(CUDA_DIR)/lib/libnvrtc.so.11.2' -o kernels/cuda_kernels.ptx

# build-cuda builds bin/gnnplan-cuda, the binary with the CUDA backend: it
# needs libcuda.so.1 (the NVIDIA driver) where it runs, and loads cuBLAS
# with dlopen; build it here, run it on the GPU machine.
build-cuda: cuda-deps
	CGO_CFLAGS='-I$(CUDA_DIR)/include' CGO_LDFLAGS='-L$(CUDA_DIR)/lib' \
		$(GO) build -tags cuda -ldflags='$(BINFLAGS)' -o bin/gnnplan-cuda ./cmd/gnnplan

# gpu-bundle builds what .ci/gpu-check.sh runs on a machine with a GPU
# (which needs no Go) into gpu-bundle/: the CUDA binary and the kernels'
# and trainer's CUDA test binaries, without symbol tables so the three fit
# what a device run carries (carry gpu-bundle, then run
# `.ci/gpu-check.sh` there).
gpu-bundle: cuda-deps
	mkdir -p gpu-bundle
	CGO_CFLAGS='-I$(CUDA_DIR)/include' CGO_LDFLAGS='-L$(CUDA_DIR)/lib' \
		$(GO) build -tags cuda -ldflags='$(BINFLAGS) -s -w' -o gpu-bundle/gnnplan-cuda ./cmd/gnnplan
	CGO_CFLAGS='-I$(CUDA_DIR)/include' CGO_LDFLAGS='-L$(CUDA_DIR)/lib' \
		$(GO) test -tags cuda -ldflags='$(LINKFLAGS) -s -w' -c -o gpu-bundle/kernels-cuda.test ./kernels
	CGO_CFLAGS='-I$(CUDA_DIR)/include' CGO_LDFLAGS='-L$(CUDA_DIR)/lib' \
		$(GO) test -tags cuda -ldflags='$(LINKFLAGS) -s -w' -c -o gpu-bundle/trainer-cuda.test ./trainer
	@du -ch gpu-bundle/* | tail -1

clean:
	rm -rf bin
