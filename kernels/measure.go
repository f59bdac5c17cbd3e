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
	calls, secs := timeCalls(b, d, func() { b.Gemm(false, false, 1, a, bm, 0, c) })
	return 2 * float64(m) * float64(n) * float64(k) * float64(calls) / secs / 1e9
}

// timeCalls runs f once untimed, then for about d (at least one call),
// and returns the calls timed and their seconds. On the host it evicts the
// caches before each call and times the calls alone (at most
// maxTimedCalls): a training step's kernels find their operands in
// memory, where the kernels before them left them, not in the caches a
// repeated call would warm. A device queues the calls and is drained once
// before the clock stops, as training queues its kernels.
func timeCalls(b Backend, d time.Duration, f func()) (calls int, secs float64) {
	if _, host := b.(*CPU); !host {
		sync := func() {
			if s, ok := b.(interface{ Sync() }); ok {
				s.Sync()
			}
		}
		f()
		sync()
		start := time.Now()
		for calls == 0 || time.Since(start) < d {
			f()
			calls++
		}
		sync()
		return calls, time.Since(start).Seconds()
	}
	src, dst := make([]byte, evictBytes/2), make([]byte, evictBytes/2)
	for i := 0; i < len(src); i += 4096 {
		src[i] = byte(i >> 12) // every page backed: a page never written reads as the shared zero page
	}
	f()
	var total time.Duration
	for calls == 0 || (total < d && calls < maxTimedCalls) {
		copy(dst, src)
		t0 := time.Now()
		f()
		total += time.Since(t0)
		calls++
	}
	return calls, total.Seconds()
}

// evictBytes is copied (half to the other half) between timed calls to
// push their operands out of the caches: more than one die's last-level
// cache on today's parts (32 to 96 MiB a CCD or tile). A fixed size keeps
// the measure the same on every machine.
const evictBytes = 256 << 20

// maxTimedCalls bounds the calls timed, so that a short kernel is not
// evicted for far longer than it is timed.
const maxTimedCalls = 16

// randMat is a rows x cols matrix on b of values in [-0.5, 0.5).
func randMat(b Backend, r *rand.Rand, rows, cols int) *Mat {
	v := make([]float32, rows*cols)
	for i := range v {
		v[i] = r.Float32() - 0.5
	}
	return b.Wrap(rows, cols, v)
}

// randIndexes is sets index sets of n rows drawn from [0, rows).
func randIndexes(b Backend, r *rand.Rand, sets, n, rows int) []*Index {
	out := make([]*Index, sets)
	for s := range out {
		v := make([]int32, n)
		for i := range v {
			v[i] = int32(r.IntN(rows))
		}
		out[s] = b.NewIndex(v)
	}
	return out
}

// tileMat is a rows x cols matrix on b that repeats a random block of up
// to 4096 rows: every page written (an untouched page reads as the zero
// page, faster than memory), quicker to fill than rows x cols draws.
func tileMat(b Backend, r *rand.Rand, rows, cols int) *Mat {
	tile := make([]float32, min(rows, 4096)*cols)
	for i := range tile {
		tile[i] = r.Float32() - 0.5
	}
	v := make([]float32, rows*cols)
	for i := 0; i < len(v); i += len(tile) {
		copy(v[i:], tile)
	}
	return b.Wrap(rows, cols, v) // shared on the host, copied to a device
}

// MeasureLayerGemm times the three products a dense layer of in x out
// weights runs on rows inputs in a training step (the forward X W, the
// weight gradient X^T dY and the input gradient dY W^T) for about d, and
// returns their rate in GFLOP/s. The three differ in shape (the weight
// gradient sums over rows) and a BLAS runs them at different rates, so a
// step's products are priced at their mix, not at the forward's alone.
func MeasureLayerGemm(b Backend, rows, in, out int, d time.Duration) float64 {
	r := rand.New(rand.NewPCG(uint64(rows), uint64(in)))
	x, w, y := randMat(b, r, rows, in), randMat(b, r, in, out), b.NewMat(rows, out)
	dy, dw, dx := randMat(b, r, rows, out), b.NewMat(in, out), b.NewMat(rows, in)
	calls, secs := timeCalls(b, d, func() {
		b.Gemm(false, false, 1, x, w, 0, y)
		b.Gemm(true, false, 1, x, dy, 0, dw)
		b.Gemm(false, true, 1, dy, w, 0, dx)
	})
	return 3 * 2 * float64(rows) * float64(in) * float64(out) * float64(calls) / secs / 1e9
}

// MeasureRowGather times GatherRows of rows random rows of cols values
// from a table of tableRows rows (a batch's input from a feature matrix:
// make it the features' size) for about d, cold, and returns the rows'
// bytes per second in GB/s.
func MeasureRowGather(b Backend, cols, tableRows, rows int, d time.Duration) float64 {
	r := rand.New(rand.NewPCG(uint64(cols), uint64(tableRows)))
	table, dst := tileMat(b, r, tableRows, cols), b.NewMat(rows, cols)
	ix := randIndexes(b, r, 4, rows, tableRows)
	n := 0
	calls, secs := timeCalls(b, d, func() {
		b.GatherRows(dst, table, ix[n%len(ix)])
		n++
	})
	return 4 * float64(rows) * float64(cols) * float64(calls) / secs / 1e9
}

// MeasureAggregation times GraphSAGE's mean aggregation, forward and
// backward, over a block of dst destinations with fanout random sources
// each among src rows of cols values (the outermost layer's block, whose
// sources are a batch's input rows, or the whole feature matrix when the
// layer reads it in place), for about d, cold, and returns the source
// rows' bytes read per second in GB/s (cols x 4 bytes per edge and pass).
func MeasureAggregation(b Backend, cols, src, dst, fanout int, d time.Duration) float64 {
	r := rand.New(rand.NewPCG(uint64(cols), uint64(src)))
	off, idx := make([]int32, dst+1), make([]int32, dst*fanout)
	for i := range dst {
		off[i+1] = int32((i + 1) * fanout)
	}
	for i := range idx {
		idx[i] = int32(r.IntN(src))
	}
	g := b.NewCSR(off, idx, src)
	x, out, dx := tileMat(b, r, src, cols), b.NewMat(dst, cols), tileMat(b, r, src, cols)
	calls, secs := timeCalls(b, d, func() {
		b.SegmentMean(out, x, g)
		b.SegmentMeanBackward(dx, out, g)
	})
	return 2 * 4 * float64(len(idx)) * float64(cols) * float64(calls) / secs / 1e9
}

// MeasureStream times an in-order pass over a rows x cols matrix (an
// activation with dropout, reading and writing every element) for about
// d, and returns the bytes read and written per second in GB/s.
func MeasureStream(b Backend, rows, cols int, d time.Duration) float64 {
	r := rand.New(rand.NewPCG(uint64(rows), uint64(cols)))
	x, y := randMat(b, r, rows, cols), b.NewMat(rows, cols)
	relu := Activation{Kind: ReLU}
	calls, secs := timeCalls(b, d, func() { b.ActDropout(relu, y, x, 0.5, 1) })
	return 2 * 4 * float64(rows) * float64(cols) * float64(calls) / secs / 1e9
}
