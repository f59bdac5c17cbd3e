#!/bin/sh
# The GPU half of the checks, which CI (no GPU) cannot run: on a machine
# with an NVIDIA GPU and driver, from the repository root, after
# `make gpu-bundle` built bin/ elsewhere (the GPU machine needs no Go).
# Prints a summary (what ran, how it ended, the benchmark figures) and
# leaves it and every log, packed in gpu-check.tar.gz, under $OUT
# (default /tmp/gpu-check): two files, as a device run brings back.
set -u
OUT=${OUT:-/tmp/gpu-check}
# BIN and DEVICE let the steps after the CUDA tests run without a GPU
# (BIN=bin/gnnplan DEVICE=cpu), to check the script's flow.
BIN=${BIN:-gpu-bundle/gnnplan-cuda}
DEVICE=${DEVICE:-cuda}
logs=$(mktemp -d)
mkdir -p "$OUT"
# The summary is written into $OUT as it grows and the logs are packed on
# any exit, so a run cut off at a device call's limit still brings back
# what it did.
sum="$OUT/summary.txt"
: >"$sum"
note() { echo "$*" | tee -a "$sum"; }
finish() {
	rm -rf "${bins:-/tmp/gpu-check-bins}"
	tar -czf "$OUT/gpu-check.tar.gz" -C "$logs" --exclude=./synth . && rm -rf "$logs"
}
trap finish EXIT
trap 'note "stopped by a signal"; exit 1' INT TERM HUP

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

# Each step stops after STEP_S seconds (exit 124) so one that hangs on the
# GPU leaves time for the rest.
STEP_S=${STEP_S:-150}
run() { # name, command...
	name=$1
	shift
	start=$(date +%s)
	timeout "$STEP_S" "$@" >"$logs/$name.txt" 2>&1
	rc=$?
	note "$name: exit $rc in $(($(date +%s) - start)) s"
	# a failed step's last lines go into the summary too
	[ "$rc" = 0 ] || tail -n 12 "$logs/$name.txt" | sed 's/^/    /' >>"$sum"
}

run kernels-tests gpu-bundle/kernels-cuda.test -test.v -test.run CUDA
run trainer-tests gpu-bundle/trainer-cuda.test -test.v -test.run CUDA
run kernels-bench gpu-bundle/kernels-cuda.test -test.run '^$' -test.bench CUDA -test.benchtime 1s -test.count 3
run discover "$BIN" discover --save "$logs/machine.json"
run profile "$BIN" profile --ssd-dir /tmp --allow-non-block --file-size-mib 256 --seconds 1 --depths 1,32 --save "$logs/profile.json"
run train-gpu "$BIN" train --device "$DEVICE" --synthetic-nodes 200000 --epochs 5 --hidden 256 -o json
run train-cpu "$BIN" train --device cpu --synthetic-nodes 200000 --epochs 5 --hidden 256 -o json
grep -E 'TFLOP/s|GB/s' "$logs/kernels-bench.txt" | tee -a "$sum"

# The loop on this machine's own disk (issue 33): a synthetic graph,
# recommend --this-machine with the profile, a layout placed and cut into
# SSD bins, then training on the GPU at cache 0, 10, 50 and 100%, each
# epoch's prediction beside its measurement.
NODES=${NODES:-2000000}
data="$logs/synth"
bins=${SSD_DIR:-/tmp/gpu-check-bins}
rm -rf "$bins" && mkdir -p "$bins"
run synth "$BIN" dataset synth --out "$data" --nodes "$NODES" --edges $((NODES * 10)) --feature-dim 128 --train-fraction 0.05
run recommend-here "$BIN" recommend --this-machine --dataset "$data" --ssd-dir "$bins" --save "$logs/plan-here.json"
# A layout with GPU, host and SSD bins to cut the store from (the caches
# below override its split): one GPU and one SSD of Hyperion's machine.
run recommend-layout "$BIN" recommend --profile hyperion-a --dataset "$data" --gpus 1 --ssds 1 --save "$logs/plan-layout.json"
run place "$BIN" place --plan "$logs/plan-layout.json" --dataset "$data" --materialize --ssd-dir "$bins"
for f in 0 0.1 0.5 1; do
	run "train-$DEVICE-cache-$f" "$BIN" train --device "$DEVICE" --dataset "$data" --features store --cache-fraction "$f" \
		--model graphsage --hidden 256 --fanouts 25,10 --batch 1024 --epochs 2 --eval-every 0 -o json
	# predicted against measured, per epoch and in all
	grep -E '"(predicted_epoch_s|measured_epoch_s|prediction_error_pct|predicted_with_epoch_disk_s|epoch_disk_rows_per_s)"' \
		"$logs/train-$DEVICE-cache-$f.txt" | tr -d ' ,' | sed "s/^/  cache $f: /" | tee -a "$sum"
	# and per stage, each epoch (where python3 is there to read the JSON)
	command -v python3 >/dev/null && python3 - "$logs/train-$DEVICE-cache-$f.txt" "$f" <<'PY' | tee -a "$sum"
import json, sys
text = open(sys.argv[1]).read()
try:
    d = json.loads(text[text.index("{\n"):])
except ValueError:
    sys.exit(0)
for c in d.get("epoch_checks", []):
    parts = ["%s %.3f/%.3f s" % (k, c[k]["measured_s"], c[k]["predicted_s"]) for k in ("sample", "gather", "step") if k in c]
    print("  cache %s epoch %d, measured/predicted: %s" % (sys.argv[2], c["epoch"], ", ".join(parts)))
PY
done
