package sample

import (
	"context"
	"fmt"
	"math/bits"
)

// Bitmap is a set of vertices: bit v%64 of word v/64.
type Bitmap []uint64

// NewBitmap is an empty set over n vertices.
func NewBitmap(n int) Bitmap { return make(Bitmap, (n+63)/64) }

// Set adds v.
func (b Bitmap) Set(v int32) { b[v>>6] |= 1 << (v & 63) }

// Has says whether v is in the set.
func (b Bitmap) Has(v int32) bool { return b[v>>6]&(1<<(v&63)) != 0 }

// Len is how many vertices the set holds.
func (b Bitmap) Len() int {
	n := 0
	for _, w := range b {
		n += bits.OnesCount64(w)
	}
	return n
}

// keep appends to dst the vertices of vs the set holds, in order.
func (b Bitmap) keep(dst, vs []int32) []int32 {
	for _, v := range vs {
		if b.Has(v) {
			dst = append(dst, v)
		}
	}
	return dst
}

// EpochWithin samples seeds in the fewest batches of at most BatchSize,
// of equal sizes (a macro-batch's seeds end in no runt batch), in order,
// from batch first on, each neighbourhood drawn only among the vertices within holds
// (the seeds need not be in it): HANOI's second stage, mini-batches
// sampled inside a macro-batch held in memory. A hop draws up to its
// fanout of a vertex's neighbours that are within, uniformly. Batch b is
// delivered as Index base+b of epoch, its draws keyed by (Seed, epoch,
// base+b) like Sample's, so the batches are a pure function of the
// arguments whatever the Workers. fn is called in order from the calling
// goroutine, as Epoch's.
func (s *Sampler) EpochWithin(ctx context.Context, epoch int, seeds []int32, within Bitmap, base, first int, fn func(*MiniBatch) error) error {
	nb := (len(seeds) + s.batchSize - 1) / s.batchSize
	switch {
	case first < 0 || first > nb:
		return fmt.Errorf("sample epoch %d: first batch %d out of range [0, %d]", epoch, first, nb)
	case len(within) != (s.n+63)/64:
		return fmt.Errorf("sample epoch %d: a vertex set of %d words for %d vertices", epoch, len(within), s.n)
	}
	for _, v := range seeds {
		if v < 0 || int(v) >= s.n {
			return fmt.Errorf("sample epoch %d: seed %d out of range [0, %d)", epoch, v, s.n)
		}
	}
	return s.run(ctx, epoch, first, nb, base, func(sc *sampleScratch, b int) *MiniBatch {
		lo, hi := b*len(seeds)/nb, (b+1)*len(seeds)/nb
		mb := s.sampleSeeds(sc, seeds[lo:hi], s.batchKey(epoch, base+b), within)
		mb.Index, mb.Epoch = base+b, epoch
		return mb
	}, fn)
}
