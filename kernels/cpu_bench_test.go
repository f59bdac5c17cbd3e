package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// The sizes of one sampled GraphSAGE layer on ogbn-products: a batch's
// 26624 destinations with 10 sampled neighbours each, drawn from 290k
// source rows of 128 features.
const (
	benchDst     = 26624
	benchFanout  = 10
	benchSrc     = 290_000
	benchCols    = 128
	benchRowSize = benchCols * 4 // bytes
)

// benchThreads are the thread counts each benchmark runs with.
var benchThreads = []int{1, 2}

func benchCPU(b *testing.B, threads int) *CPU {
	c, err := NewCPU(CPUOptions{Threads: threads, BLAS: "gonum"})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// benchFill returns n float32 values from a cheap generator: the
// benchmarks measure memory traffic, not the values.
func benchFill(n int) []float32 {
	s := make([]float32, n)
	x := uint32(2463534242)
	for i := range s {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		s[i] = float32(x>>8)/(1<<24) - 0.5
	}
	return s
}

// benchBlock samples benchFanout sources per destination, uniformly.
func benchBlock() refBlock {
	rng := rand.New(rand.NewPCG(3, 4))
	g := refBlock{off: make([]int32, benchDst+1), src: make([]int32, benchDst*benchFanout), numSrc: benchSrc}
	for i := range benchDst {
		for k := range benchFanout {
			g.src[i*benchFanout+k] = int32(rng.IntN(benchSrc))
		}
		g.off[i+1] = int32((i + 1) * benchFanout)
	}
	return g
}

// reportGBps reports bytes touched per operation as decimal GB/s.
func reportGBps(b *testing.B, bytesPerOp int) {
	b.ReportMetric(float64(bytesPerOp)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
}

// BenchmarkSegmentMean counts as touched: each edge's source row and
// index read, and each destination row written.
func BenchmarkSegmentMean(b *testing.B) {
	g := benchBlock()
	E := g.numEdges()
	bytes := E*(benchRowSize+4) + benchDst*(benchRowSize+4)
	for _, threads := range benchThreads {
		b.Run(fmt.Sprintf("threads=%d", threads), func(b *testing.B) {
			c := benchCPU(b, threads)
			x := c.Wrap(benchSrc, benchCols, benchFill(benchSrc*benchCols))
			out := c.NewMat(benchDst, benchCols)
			csr := c.NewCSR(g.off, g.src, g.numSrc)
			for b.Loop() {
				c.SegmentMean(out, x, csr)
			}
			reportGBps(b, bytes)
		})
	}
}

// BenchmarkSegmentMeanBackward counts as touched: each edge's dout row
// and index read, and each source row that some edge reaches read and
// written once. "new block" builds the transposed block in every
// operation, as a training step does once per block.
func BenchmarkSegmentMeanBackward(b *testing.B) {
	g := benchBlock()
	E := g.numEdges()
	reached := map[int32]bool{}
	for _, u := range g.src {
		reached[u] = true
	}
	bytes := E*(benchRowSize+4) + 2*len(reached)*benchRowSize
	for _, threads := range benchThreads {
		for _, fresh := range []bool{false, true} {
			name := fmt.Sprintf("threads=%d/cached transpose", threads)
			if fresh {
				name = fmt.Sprintf("threads=%d/new block", threads)
			}
			b.Run(name, func(b *testing.B) {
				c := benchCPU(b, threads)
				dx := c.NewMat(benchSrc, benchCols)
				dout := c.Wrap(benchDst, benchCols, benchFill(benchDst*benchCols))
				csr := c.NewCSR(g.off, g.src, g.numSrc)
				c.SegmentMeanBackward(dx, dout, csr) // builds the transpose
				for b.Loop() {
					if fresh {
						csr = c.NewCSR(g.off, g.src, g.numSrc)
					}
					c.SegmentMeanBackward(dx, dout, csr)
				}
				reportGBps(b, bytes)
			})
		}
	}
}

// BenchmarkGatherRows gathers a batch's 290k input rows from a 2M-row
// feature matrix (1 GiB); touched: each row read and written, and its
// index.
func BenchmarkGatherRows(b *testing.B) {
	const srcRows, n = 2_000_000, benchSrc
	rng := rand.New(rand.NewPCG(5, 6))
	idx := make([]int32, n)
	for i := range idx {
		idx[i] = int32(rng.IntN(srcRows))
	}
	src := benchFill(srcRows * benchCols)
	bytes := n * (2*benchRowSize + 4)
	for _, threads := range benchThreads {
		b.Run(fmt.Sprintf("threads=%d", threads), func(b *testing.B) {
			c := benchCPU(b, threads)
			x := c.Wrap(srcRows, benchCols, src)
			dst := c.NewMat(n, benchCols)
			ix := c.NewIndex(idx)
			for b.Loop() {
				c.GatherRows(dst, x, ix)
			}
			reportGBps(b, bytes)
		})
	}
}
