#!/bin/sh
# The GPU half of the checks, which CI (no GPU) cannot run: on a machine
# with an NVIDIA GPU and driver, from the repository root, after
# `make gpu-bundle` built bin/ elsewhere (the GPU machine needs no Go).
# Prints a summary (what ran, how it ended, the benchmark figures) and
# leaves it and every log, packed in gpu-check.tar.gz, under $OUT
# (default /tmp/gpu-check): two files, as a device run brings back.
set -u
OUT=${OUT:-/tmp/gpu-check}
logs=$(mktemp -d)
mkdir -p "$OUT"
sum="$logs/summary.txt"
: >"$sum"
note() { echo "$*" | tee -a "$sum"; }

note "date: $(date -u +%Y-%m-%dT%H:%MZ)"
nvidia-smi >"$logs/nvidia-smi.txt" 2>&1 && note "gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | head -1)"

# cuBLAS: a CUDA toolkit's, or the one a PyTorch wheel carries.
if ! ldconfig -p 2>/dev/null | grep -q 'libcublas\.so\.1[1-3]'; then
	lib=$(find / -xdev -name 'libcublas.so.1[1-3]*' 2>/dev/null | head -1)
	if [ -n "$lib" ]; then
		LD_LIBRARY_PATH="$(dirname "$lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
		export LD_LIBRARY_PATH
		note "cublas: $lib"
	fi
fi

run() { # name, command...
	name=$1
	shift
	start=$(date +%s)
	"$@" >"$logs/$name.txt" 2>&1
	rc=$?
	note "$name: exit $rc in $(($(date +%s) - start)) s"
}

run kernels-tests gpu-bundle/kernels-cuda.test -test.v -test.run CUDA
run trainer-tests gpu-bundle/trainer-cuda.test -test.v -test.run CUDA
run kernels-bench gpu-bundle/kernels-cuda.test -test.run '^$' -test.bench CUDA -test.benchtime 2s -test.count 3
run discover gpu-bundle/gnnplan-cuda discover
run profile gpu-bundle/gnnplan-cuda profile --ssd-dir /tmp --allow-non-block --file-size-mib 256 --seconds 1 --depths 1,32 --save "$logs/profile.json"
run train-gpu gpu-bundle/gnnplan-cuda train --device cuda --gpus 1 --synthetic-nodes 200000 --epochs 5 --hidden 256 -o json
run train-cpu gpu-bundle/gnnplan-cuda train --device cpu --synthetic-nodes 200000 --epochs 5 --hidden 256 -o json
grep -E 'TFLOP/s|GB/s' "$logs/kernels-bench.txt" | tee -a "$sum"
cp "$sum" "$OUT/summary.txt"
tar -czf "$OUT/gpu-check.tar.gz" -C "$logs" .
rm -rf "$logs"
