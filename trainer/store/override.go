package store

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/gnnplan/gnnplan/internal/inputerr"
)

// overrideCache replaces the layout's cache bins by one host-memory cache
// of the hottest rows (CacheOverride); rows outside it come from their SSD
// bin, or from features.npy when the layout kept them in memory. It
// rebuilds the per-vertex bin and row arrays (the layout's are not
// changed).
func (s *Store) overrideCache(c CacheOverride, src *features) error {
	n := s.m.NumNodes
	switch {
	case math.IsNaN(c.Fraction) || c.Fraction < 0 || c.Fraction > 1:
		return &inputerr.Error{Field: "--cache-fraction", Msg: fmt.Sprintf("%g (want a share of the rows from 0 to 1)", c.Fraction)}
	case int64(len(c.Hotness)) != n:
		return &inputerr.Error{Field: "hotness", Msg: fmt.Sprintf("%d counts for %d vertices (run gnnplan place on this dataset again)", len(c.Hotness), n)}
	case len(s.bins)+2 > math.MaxUint8+1:
		return fmt.Errorf("store: %d bins leave no room for the cache override (at most %d)", len(s.bins), math.MaxUint8-1)
	}
	k := int64(math.Round(c.Fraction * float64(n)))
	hot := hottest(c.Hotness, k)
	if c.Random {
		hot = randomSet(n, k, c.Seed)
	}

	cacheBin, npyBin := len(s.bins), len(s.bins)+1
	bin := make([]uint8, n)
	row := make([]uint32, n)
	var cacheRows, npyRows int64
	for v := range n {
		switch {
		case hot[v/64]&(1<<(v%64)) != 0:
			bin[v], row[v] = uint8(cacheBin), uint32(cacheRows)
			cacheRows++
		case s.bins[s.bin[v]].tier == tierSSD:
			bin[v], row[v] = s.bin[v], s.row[v]
		default:
			// The layout kept it in memory: it is in no SSD bin.
			bin[v], row[v] = uint8(npyBin), uint32(v)
			npyRows++
		}
	}
	if n > math.MaxUint32 && npyRows > 0 {
		return fmt.Errorf("store: the cache override reads rows from %s by vertex id, which stops at %d vertices", src.path, uint64(math.MaxUint32))
	}
	// The layout's cache bins now serve nothing.
	for i := range s.bins {
		if s.bins[i].tier != tierSSD {
			s.bins[i].rows = 0
		}
	}
	s.bins = append(s.bins,
		binSrc{id: "cache-override", name: "the cache override", tier: tierSocket, rows: cacheRows, file: -1},
		binSrc{id: "features.npy", name: fmt.Sprintf("%s (rows the layout keeps in memory)", src.path), tier: tierSSD, rows: npyRows, file: -1,
			path: src.path, base: src.offset, stride: src.rowB})
	s.bin, s.row = bin, row
	s.cached = float64(cacheRows) / float64(max(n, 1))
	return nil
}

// hottest marks the k vertices with the highest counts, ties broken by
// the lower vertex id, in a bit set: a two-level radix select over the
// counts' high and low 16 bits, linear in the number of vertices.
func hottest(hot []uint32, k int64) []uint64 {
	n := int64(len(hot))
	set := make([]uint64, (n+63)/64)
	if k <= 0 {
		return set
	}
	// The threshold t: fewer than k counts above t, at least k at or
	// above it. Find its high 16 bits, then its low 16 bits.
	var hist [1 << 16]int64
	for _, h := range hot {
		hist[h>>16]++
	}
	need := k
	hi := -1
	for b := len(hist) - 1; b >= 0; b-- {
		if hist[b] >= need {
			hi = b
			break
		}
		need -= hist[b]
	}
	if hi < 0 { // k >= n: every vertex
		for v := range n {
			set[v/64] |= 1 << (v % 64)
		}
		return set
	}
	clear(hist[:])
	for _, h := range hot {
		if int(h>>16) == hi {
			hist[h&0xFFFF]++
		}
	}
	lo := 0
	for b := len(hist) - 1; b >= 0; b-- {
		if hist[b] >= need {
			lo = b
			break
		}
		need -= hist[b]
	}
	t := uint32(hi)<<16 | uint32(lo)
	// need counts at the threshold are taken, lowest ids first.
	for v, h := range hot {
		switch {
		case h > t:
		case h == t && need > 0:
			need--
		default:
			continue
		}
		set[v/64] |= 1 << (uint(v) % 64)
	}
	return set
}

// CachedFraction is the share of the rows the store holds in memory: the
// layout's cache bins, or the cache override's.
func (s *Store) CachedFraction() float64 { return s.cached }

// randomSet marks k of the n vertices, drawn uniformly without
// replacement (selection sampling, Knuth's algorithm S), in a bit set.
func randomSet(n, k int64, seed uint64) []uint64 {
	set := make([]uint64, (n+63)/64)
	r := rand.New(rand.NewPCG(seed, 0x72616e64)) // "rand"
	for v, left := int64(0), k; v < n && left > 0; v++ {
		if r.Int64N(n-v) < left {
			set[v/64] |= 1 << (v % 64)
			left--
		}
	}
	return set
}
