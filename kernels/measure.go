package kernels

import (
	"math/rand/v2"
	"time"
)

// MeasureGemm times C = A x B (m x k times k x n, float32) on b for about
// d, after one untimed call, and returns the rate in GFLOP/s (2mnk
// operations per call). It measures what a machine's training steps can
// reach: call it with the shapes the model multiplies.
func MeasureGemm(b Backend, m, k, n int, d time.Duration) float64 {
	r := rand.New(rand.NewPCG(uint64(m), uint64(n)))
	fill := func(rows, cols int) *Mat {
		v := make([]float32, rows*cols)
		for i := range v {
			v[i] = r.Float32() - 0.5
		}
		mat := b.NewMat(rows, cols)
		b.Upload(mat, rows, cols, v)
		return mat
	}
	a, bm, c := fill(m, k), fill(k, n), b.NewMat(m, n)
	b.Gemm(false, false, 1, a, bm, 0, c)
	if s, ok := b.(interface{ Sync() }); ok {
		s.Sync()
	}
	calls := 0
	start := time.Now()
	for calls == 0 || time.Since(start) < d {
		b.Gemm(false, false, 1, a, bm, 0, c)
		calls++
	}
	// A device queues GEMMs ahead of the host: the time counts once the
	// last has run.
	if s, ok := b.(interface{ Sync() }); ok {
		s.Sync()
	}
	secs := time.Since(start).Seconds()
	return 2 * float64(m) * float64(n) * float64(k) * float64(calls) / secs / 1e9
}
