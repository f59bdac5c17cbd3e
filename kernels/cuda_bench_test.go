//go:build cuda

package kernels

import (
	"context"
	"fmt"
	"testing"
)

// The kernels on GPU 0, at the CPU benchmarks' GraphSAGE sizes, each op
// followed by nothing until the timer stops: b.Loop's end synchronises
// (Sync) so the rate counts finished work. Run on a GPU machine:
// go test -tags cuda -c ./kernels, then ./kernels.test -test.run '^$'
// -test.bench CUDA.

func benchCUDA(b *testing.B) *GPU {
	g, err := NewCUDA(0)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("%s", g.Name())
	return g
}

// BenchmarkCUDAGemm reports cuBLAS's TFLOP/s on the trainer's shapes.
func BenchmarkCUDAGemm(b *testing.B) {
	g := benchCUDA(b)
	for _, s := range [][3]int{{8192, 128, 256}, {8192, 256, 256}, {1024, 256, 16}, {65536, 256, 256}} {
		m, k, n := s[0], s[1], s[2]
		b.Run(fmt.Sprintf("NN_%dx%dx%d", m, k, n), func(b *testing.B) {
			x, w, c := g.Wrap(m, k, benchFill(m*k)), g.Wrap(k, n, benchFill(k*n)), g.NewMat(m, n)
			g.Gemm(false, false, 1, x, w, 0, c)
			g.Sync()
			for b.Loop() {
				g.Gemm(false, false, 1, x, w, 0, c)
			}
			g.Sync()
			b.ReportMetric(2*float64(m)*float64(n)*float64(k)*float64(b.N)/b.Elapsed().Seconds()/1e12, "TFLOP/s")
		})
	}
}

// BenchmarkCUDASegmentMean times the first layer's mean over a sampled
// block (the CPU's BenchmarkSegmentMean sizes), in GB/s touched.
func BenchmarkCUDASegmentMean(b *testing.B) {
	g := benchCUDA(b)
	blk := benchBlock()
	x := g.Wrap(benchSrc, benchCols, benchFill(benchSrc*benchCols))
	out := g.NewMat(benchDst, benchCols)
	csr := g.NewCSR(blk.off, blk.src, blk.numSrc)
	g.SegmentMean(out, x, csr)
	g.Sync()
	for b.Loop() {
		g.SegmentMean(out, x, csr)
	}
	g.Sync()
	reportGBps(b, len(blk.src)*(benchRowSize+4)+benchDst*benchRowSize)
}

// BenchmarkCUDAGatherRows times gathering a batch's source rows.
func BenchmarkCUDAGatherRows(b *testing.B) {
	g := benchCUDA(b)
	blk := benchBlock()
	x := g.Wrap(benchSrc, benchCols, benchFill(benchSrc*benchCols))
	dst := g.NewMat(len(blk.src), benchCols)
	idx := g.NewIndex(blk.src)
	for b.Loop() {
		g.GatherRows(dst, x, idx)
	}
	g.Sync()
	reportGBps(b, 2*len(blk.src)*benchRowSize)
}

// BenchmarkCUDAStagedCopy times a batch's rows through a staging buffer
// to the GPU, in GB/s.
func BenchmarkCUDAStagedCopy(b *testing.B) {
	g := benchCUDA(b)
	const rows = 262144
	s, err := g.NewStaging(rows * benchCols)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := s.Upload(context.Background(), rows, benchCols); err != nil {
			b.Fatal(err)
		}
		s.Mat()
		s.Done()
	}
	g.Sync()
	reportGBps(b, rows*benchRowSize)
}
