#!/usr/bin/python3
"""Time numpy's float32 matmul on the shapes of kernels' GEMM benchmark.

BenchmarkGemmVsNumpy (kernels/gemm_bench_test.go) runs this in turns with
its own OpenBLAS GEMM, so both are measured on the same machine at nearly
the same moment. A shape is OPS_MxKxN: OPS is N or T for op(A) and op(B),
op(A) is M x K and op(B) is K x N; a T operand is the transposed view of a
row-major array (A stored K x M, B stored N x K), which numpy hands to BLAS
as CblasTrans, as the Go side does. The product is written into a
preallocated C (np.matmul(..., out=c)), as the Go side writes into its C.

Output: one JSON object on stdout with schema_version, numpy's version,
the BLAS library this process loaded (from /proc/self/maps) with
OpenBLAS's config and thread count when it is OpenBLAS, and per shape the
GFLOP/s (2*M*N*K flops per product) over repeats products timed after one
warm-up product.

With --serve it instead reads requests from stdin, one a line, "SHAPE
SECONDS", and answers each with one line of JSON holding that shape's
result (the first line it writes, before any request, holds the versions
and the BLAS library): the benchmark alternates with it in short turns
without starting Python each time.

Usage: gemm_numpy.py [--seconds S] SHAPE...
       gemm_numpy.py --serve
"""

import argparse
import ctypes
import json
import re
import sys
import time

import numpy as np

SHAPE = re.compile(r"^([NT])([NT])_(\d+)x(\d+)x(\d+)$")


def blas_info():
    """Which BLAS library numpy uses in this process, and its settings."""
    libs = set()
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1]
            if re.search(r"lib(open)?blas[^/]*\.so", path):
                libs.add(path)
    info = {"libraries": sorted(libs)}
    for path in sorted(libs):
        try:
            lib = ctypes.CDLL(path)
            config = lib.openblas_get_config
        except (OSError, AttributeError):
            continue
        config.restype = ctypes.c_char_p
        info["openblas_config"] = config().decode()
        info["openblas_threads"] = lib.openblas_get_num_threads()
        break
    return info


def operands(shape, rng):
    """op(A), op(B) and C for shape, and the flops of one product."""
    m = SHAPE.match(shape)
    if not m:
        raise SystemExit(f"gemm_numpy.py: shape {shape!r}: want OPS_MxKxN, e.g. TN_256x8192x256")
    ta, tb = m.group(1) == "T", m.group(2) == "T"
    M, K, N = (int(g) for g in m.group(3, 4, 5))
    a = rng.standard_normal((K, M) if ta else (M, K), dtype=np.float32)
    b = rng.standard_normal((N, K) if tb else (K, N), dtype=np.float32)
    c = np.empty((M, N), dtype=np.float32)
    return (a.T if ta else a), (b.T if tb else b), c, 2.0 * M * N * K


def time_shape(shape, seconds, ops):
    a_op, b_op, c, flops = ops
    np.matmul(a_op, b_op, out=c)  # warm-up: OpenBLAS's threads, C's pages
    repeats = 0
    start = time.perf_counter()
    while True:
        np.matmul(a_op, b_op, out=c)
        repeats += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds and repeats >= 3:
            break
    return {"shape": shape, "repeats": repeats, "seconds": elapsed, "gflops": flops * repeats / elapsed / 1e9}


def serve():
    print(json.dumps({"schema_version": 1, "numpy_version": np.__version__, "blas": blas_info()}), flush=True)
    rng = np.random.default_rng(1)
    cache = {}
    for line in sys.stdin:
        if not line.strip():
            continue
        shape, seconds = line.split()
        if shape not in cache:
            cache[shape] = operands(shape, rng)
        print(json.dumps(time_shape(shape, float(seconds), cache[shape])), flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=float, default=0.3, help="time each shape at least this long")
    p.add_argument("--serve", action="store_true", help="answer requests from stdin (see above)")
    p.add_argument("shapes", nargs="*", metavar="SHAPE")
    args = p.parse_args()
    if args.serve:
        serve()
        return
    if not args.shapes:
        p.error("name at least one SHAPE, or --serve")
    rng = np.random.default_rng(1)
    results = [time_shape(s, args.seconds, operands(s, rng)) for s in args.shapes]
    json.dump({"schema_version": 1, "numpy_version": np.__version__, "blas": blas_info(), "results": results}, sys.stdout)
    print()


if __name__ == "__main__":
    main()
