package ddak

import (
	"context"
	"fmt"
	"math"

	"github.com/gnnplan/gnnplan/internal/hugepage"

	"github.com/gnnplan/gnnplan/internal/rng"

	"github.com/gnnplan/gnnplan/maxflow/placement"
	"github.com/gnnplan/gnnplan/topology"
)

// PlaceHash is the baseline Moment compares DDAK with (section 4.5):
// hash-based partitioning of the rows over the SSDs.
//
// Our reading of the baseline: Moment measures DDAK against hash for a
// fixed hardware placement and the same cache sizes, and the caches (the
// hottest rows in GPU and CPU memory) are the system's cache policy, not
// the data distribution under test. So the GPU and CPU tiers are filled
// exactly as Place fills them with the default options, and only the rows
// left for the SSDs are distributed by hash: vertex v goes to SSD bin
// hash(v, seed) mod (number of SSD bins). The comparison then isolates how
// traffic is spread over the SSDs, which is where the two differ. When an
// SSD is full the row goes to the next SSD bin in order (linear probing),
// which only matters when the SSDs are nearly full. Rows within an SSD bin
// are numbered in vertex order.
func PlaceHash(hotness []uint32, bins []Bin, seed uint64) (*Layout, error) {
	return PlaceHashContext(context.Background(), hotness, bins, seed)
}

// PlaceHashContext is PlaceHash that stops when ctx is done.
func PlaceHashContext(ctx context.Context, hotness []uint32, bins []Bin, seed uint64) (*Layout, error) {
	n := int64(len(hotness))
	if n > math.MaxUint32 {
		return nil, &topology.InputError{Field: "hotness", Msg: fmt.Sprintf("%d vertices (at most 2^32-1: vertex ids and rows are 32-bit)", n)}
	}
	if err := validateBins(bins, n); err != nil {
		return nil, err
	}
	o, err := newOrder(ctx, hotness)
	if err != nil {
		return nil, fmt.Errorf("hash placement: %w", err)
	}
	opt, _ := Options{}.withDefaults()
	l := &Layout{Policy: PolicyHash, Seed: seed, Stats: make([]BinStats, len(bins)), TotalAccesses: o.total}
	r, cacheEnd, err := decide(ctx, o, bins, opt, l.Stats, 2)
	if err != nil {
		return nil, err
	}
	var ssd []int
	for i, b := range bins {
		if b.Kind == placement.StorageSSD {
			ssd = append(ssd, i)
		}
	}
	l.Bin, l.Row = make([]uint8, n), make([]uint32, n)
	hugepage.Advise(l.Bin)
	hugepage.Advise(l.Row)
	// One sequential pass: rows are handed out in vertex order and a full
	// SSD spills to the next, both of which depend on every earlier vertex.
	rs := *r
	pos := o.cursors(0) // each bucket's next position
	st, at := startStates(rs, pos)
	for v, h := range hotness {
		if v%ctxEvery == 0 {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("hash placement: %w", err)
			}
		}
		k := o.bucketOf(h)
		p := pos[k]
		pos[k]++
		if p < cacheEnd {
			l.Bin[v], l.Row[v] = next(rs, st, at, k)
			continue
		}
		i := int(mix64(uint64(v)^seed) % uint64(len(ssd)))
		b := ssd[i]
		for tries := 0; l.Stats[b].Rows >= usableRows(bins[b]); tries++ {
			if tries == len(ssd) { // validateBins guarantees room: a bug guard
				return nil, fmt.Errorf("hash placement: no SSD bin has room for vertex %d", v)
			}
			i = (i + 1) % len(ssd)
			b = ssd[i]
		}
		l.Bin[v] = uint8(b)
		l.Row[v] = uint32(l.Stats[b].Rows)
		l.Stats[b].Rows++
		l.Stats[b].Accesses += uint64(h)
	}
	return l, nil
}

// mix64 is SplitMix64's finalizer: a cheap hash whose low bits are as
// random as its high bits, so "mod the SSD count" spreads evenly.
func mix64(x uint64) uint64 { return rng.Mix(x + rng.Golden) }
