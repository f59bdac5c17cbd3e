package kernels

import (
	"sync"
	"sync/atomic"
)

// gemmSplit is how one product is cut into single-threaded library calls:
// C into tiles of rows x cols, and, where C is too small to share out and
// k is long, k into chunks whose partial products are added into C in
// chunk order. It is a function of the product's shape alone, never of
// the thread count, so every element of C is the sum of the same terms in
// the same order on 1 thread or 64: the thread count only decides which
// thread makes which call.
type gemmSplit struct {
	rows, cols, kChunk int
}

const (
	// splitMinRows and splitMinCols are the least a tile of C spans
	// before it is cut further: each tile packs its own panel of the
	// other operand, so thinner tiles repeat more packing per FLOP.
	splitMinRows = 1024
	splitMinCols = 256
	// splitMinK is the shortest chunk of k a product is cut into.
	splitMinK = 4096
	// splitMaxPieces bounds the pieces of one product: enough for 16
	// threads to balance, few enough that each does real work.
	splitMaxPieces = 64
	// splitMinFlops is the smallest product worth cutting at all.
	splitMinFlops = 8 << 20
	// splitAlign keeps tile edges on multiples of the widest register
	// block of the x86-64 kernels, so only the last tile has a ragged
	// edge.
	splitAlign = 32
)

// planGemm returns the split of an m x n x k product.
func planGemm(m, n, k int) gemmSplit {
	s := gemmSplit{rows: m, cols: n, kChunk: k}
	if 2*float64(m)*float64(n)*float64(k) < splitMinFlops {
		return s
	}
	// Rows first (a tile then spans whole rows of C and op(A)), then
	// columns, into at most splitMaxPieces tiles.
	s.rows = tileSize(m, splitMinRows, splitMaxPieces)
	tilesM := ceilDiv(m, s.rows)
	s.cols = tileSize(n, splitMinCols, splitMaxPieces/tilesM)
	tiles := tilesM * ceilDiv(n, s.cols)
	if tiles < 4 {
		// A small C over a long k (a weight gradient): chunks of k too.
		s.kChunk = tileSize(k, splitMinK, splitMaxPieces/tiles)
	}
	return s
}

// tileSize cuts n into at most maxPieces pieces of at least least each,
// rounded up to splitAlign; n itself when it cannot be cut in two.
func tileSize(n, least, maxPieces int) int {
	if maxPieces < 2 || n < 2*least {
		return n
	}
	size := max(least, ceilDiv(n, maxPieces))
	size = ceilDiv(size, splitAlign) * splitAlign
	return min(size, n)
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// pieces is the number of library calls the split makes.
func (s gemmSplit) pieces(m, n, k int) int {
	return ceilDiv(m, s.rows) * ceilDiv(n, s.cols) * ceilDiv(k, s.kChunk)
}

// addChunks adds the partial products of k's chunks after the first
// (chunks of them, each m x n in scratch) into C, in chunk order for
// every element, rows split in blocks among up to threads goroutines.
func addChunks(threads, m, n, chunks int, scratch, c []float32, ldc int) {
	rows := max(1, grainElems/max(n*chunks, 1))
	blocks := ceilDiv(m, rows)
	add := func(blk int) {
		for i := blk * rows; i < min((blk+1)*rows, m); i++ {
			row := c[i*ldc : i*ldc+n]
			for q := range chunks {
				part := scratch[(q*m+i)*n : (q*m+i)*n+n]
				for j, v := range part {
					row[j] += v
				}
			}
		}
	}
	if threads <= 1 || blocks <= 1 {
		for blk := range blocks {
			add(blk)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(threads, blocks) {
		wg.Go(func() {
			for blk := int(next.Add(1) - 1); blk < blocks; blk = int(next.Add(1) - 1) {
				add(blk)
			}
		})
	}
	wg.Wait()
}
