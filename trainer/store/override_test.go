package store

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestHottestMatchesASort(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	gens := []struct {
		name string
		gen  func() uint32
	}{
		{"few values, many ties", func() uint32 { return uint32(rng.IntN(4)) }},
		{"below 2^16", func() uint32 { return uint32(rng.IntN(1 << 16)) }},
		{"wide", func() uint32 { return rng.Uint32() }},
		{"one high bucket", func() uint32 { return 7<<16 | uint32(rng.IntN(3)) }},
		{"all equal", func() uint32 { return 9 }},
	}
	for _, g := range gens {
		for _, n := range []int{1, 63, 64, 65, 1000} {
			hot := make([]uint32, n)
			for i := range hot {
				hot[i] = g.gen()
			}
			order := make([]int, n)
			for i := range order {
				order[i] = i
			}
			slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(hot[b], hot[a]) })
			for _, k := range []int64{0, 1, int64(n / 3), int64(n - 1), int64(n), int64(n + 5)} {
				t.Run(fmt.Sprintf("%s/n=%d/k=%d", g.name, n, k), func(t *testing.T) {
					set := hottest(hot, k)
					want := make([]bool, n)
					for _, v := range order[:min(int(max(k, 0)), n)] {
						want[v] = true
					}
					for v := range n {
						if got := set[v/64]&(1<<(v%64)) != 0; got != want[v] {
							t.Fatalf("vertex %d (count %d): in the set %v, want %v", v, hot[v], got, want[v])
						}
					}
				})
			}
		}
	}
}

// TestCacheOverride opens stores of every tier mix with the hottest 0%,
// 10%, 50% and 100% of the rows cached instead of the layout's caches:
// every row still reads right, the cache serves exactly the hottest rows,
// and rows the layout kept in memory come from features.npy.
func TestCacheOverride(t *testing.T) {
	for i, mix := range []tierMix{mixAllCache, mixAllSSD, mixMixed} {
		for _, dim := range []int{128, 100} {
			const n = 1000
			fx, _, _ := materialized(t, n, dim, mix, 2, uint64(40+i))
			rng := rand.New(rand.NewPCG(uint64(i), 1))
			hot := zipfHotness(n, 1.1, rng)
			for _, f := range []float64{0, 0.1, 0.5, 1} {
				t.Run(fmt.Sprintf("%s/dim=%d/cache=%g", mix, dim, f), func(t *testing.T) {
					s, err := Open(fx.dir, Options{QueueDepth: 8, Cache: &CacheOverride{Fraction: f, Hotness: hot}})
					if err != nil {
						t.Fatal(err)
					}
					defer s.Close()
					if got, want := s.CachedFraction(), math.Round(f*n)/n; got != want {
						t.Errorf("cached fraction %v, want %v", got, want)
					}
					all := make([]int32, n)
					for v := range all {
						all[v] = int32(v)
					}
					dst := make([]float32, n*dim)
					st, err := gatherNoHang(t, s, context.Background(), all, dst)
					if err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(dst, fx.feats) {
						t.Fatal("rows differ from the features")
					}
					if want := int(math.Round(f * n)); st.SocketCacheHits != want || st.WorkerCacheHits != 0 || st.SSDRows != n-want {
						t.Errorf("stats %+v: want %d rows from the cache, the rest from disk", st, want)
					}
					ids, sum := s.BinIDs(), 0
					for i, r := range st.BinRows {
						sum += r
						if ids[i] == "cache-override" && r != st.SocketCacheHits {
							t.Errorf("the cache override bin served %d rows, the stats say %d", r, st.SocketCacheHits)
						}
					}
					if len(st.BinRows) != len(ids) || sum != n {
						t.Errorf("per-bin rows %v over bins %v: want one count per bin summing to %d", st.BinRows, ids, n)
					}
					// The cached rows are the hottest.
					set := hottest(hot, int64(math.Round(f*n)))
					var minIn, maxOut uint32 = math.MaxUint32, 0
					for v := range n {
						if set[v/64]&(1<<(v%64)) != 0 {
							minIn = min(minIn, hot[v])
						} else {
							maxOut = max(maxOut, hot[v])
						}
					}
					if f > 0 && f < 1 && minIn < maxOut {
						t.Errorf("a cached row has count %d, an uncached one %d", minIn, maxOut)
					}
				})
			}
		}
	}
	t.Run("refusals", func(t *testing.T) {
		fx, _, _ := materialized(t, 300, 16, mixMixed, 1, 9)
		for _, c := range []CacheOverride{
			{Fraction: -0.1, Hotness: make([]uint32, 300)},
			{Fraction: 1.5, Hotness: make([]uint32, 300)},
			{Fraction: math.NaN(), Hotness: make([]uint32, 300)},
			{Fraction: 0.5, Hotness: make([]uint32, 299)},
		} {
			_, err := Open(fx.dir, Options{Cache: &c})
			if err == nil || !(strings.Contains(err.Error(), "--cache-fraction") || strings.Contains(err.Error(), "hotness")) {
				t.Errorf("%v, %d counts: err %v, want a refusal naming the flag or the hotness", c.Fraction, len(c.Hotness), err)
			}
		}
	})
}

// TestHitShareAndMeasureReads checks the two figures the prediction takes
// from a store: the share of accesses it serves from memory (the hotness
// summed over the cached rows) and the rate it reads a batch's disk rows.
func TestHitShareAndMeasureReads(t *testing.T) {
	const n, dim = 2000, 128
	fx, _, _ := materialized(t, n, dim, mixAllSSD, 1, 5)
	rng := rand.New(rand.NewPCG(5, 2))
	hot := zipfHotness(n, 1.1, rng)
	var total uint64
	for _, h := range hot {
		total += uint64(h)
	}
	for _, f := range []float64{0, 0.1, 0.5, 1} {
		s, err := Open(fx.dir, Options{QueueDepth: 8, Cache: &CacheOverride{Fraction: f, Hotness: hot}})
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.HitShare(hot)
		if err != nil {
			t.Fatal(err)
		}
		set := hottest(hot, int64(math.Round(f*n)))
		var in uint64
		for v := range n {
			if set[v/64]&(1<<(v%64)) != 0 {
				in += uint64(hot[v])
			}
			if s.InMemory(int32(v)) != (set[v/64]&(1<<(v%64)) != 0) {
				t.Fatalf("cache %g: vertex %d in memory %v, want %v", f, v, s.InMemory(int32(v)), !s.InMemory(int32(v)))
			}
		}
		if want := float64(in) / float64(total); math.Abs(got-want) > 1e-12 {
			t.Errorf("cache %g: hit share %v, want %v", f, got, want)
		}
		if f > 0 && f < 1 && got <= f {
			t.Errorf("cache %g: the hottest rows serve %v of the accesses, want more than their share", f, got)
		}
		batches := [][]int32{randomBatch(n, 300, rng), randomBatch(n, 200, rng)}
		var onDisk int
		for _, b := range batches {
			for _, v := range b {
				if !s.InMemory(v) {
					onDisk++
				}
			}
		}
		rr, err := s.MeasureReads(context.Background(), 0, batches)
		if err != nil {
			t.Fatal(err)
		}
		// A zero duration still reads one batch: the first with any row
		// on disk.
		if f == 1 && (rr.Rows != 0 || rr.RowsPerS != 0) {
			t.Errorf("cache 1: measured %+v, want nothing read", rr)
		}
		if rr.CPUSecondsPerRow < 0 || (f < 1 && rr.CPUSecondsPerRow > rr.Seconds) {
			t.Errorf("cache %g: %v CPU seconds per row over %v s", f, rr.CPUSecondsPerRow, rr.Seconds)
		}
		if f < 1 && (rr.Rows == 0 || rr.Rows > onDisk || !(rr.RowsPerS > 0)) {
			t.Errorf("cache %g: measured %+v, want one batch's disk rows (of %d) at a rate", f, rr, onDisk)
		}
		if _, err := s.HitShare(hot[:n-1]); err == nil {
			t.Error("a hotness of the wrong length was accepted")
		}
		s.Close()
	}
}

// TestRandomCacheOverride checks the baseline cache: the asked share of
// the rows, drawn at random (not the hottest), the same for the same
// seed, and rows still right.
func TestRandomCacheOverride(t *testing.T) {
	const n, dim = 3000, 32
	fx, _, _ := materialized(t, n, dim, mixAllSSD, 1, 6)
	rng := rand.New(rand.NewPCG(6, 1))
	hot := zipfHotness(n, 1.1, rng)
	open := func(seed uint64, random bool) *Store {
		s, err := Open(fx.dir, Options{QueueDepth: 8, Cache: &CacheOverride{Fraction: 0.2, Hotness: hot, Random: random, Seed: seed}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	a, b, c, hottestFirst := open(1, true), open(1, true), open(2, true), open(1, false)
	if a.CachedFraction() != 0.2 {
		t.Fatalf("cached %v, want 0.2", a.CachedFraction())
	}
	same, other := true, false
	for v := int32(0); v < n; v++ {
		same = same && a.InMemory(v) == b.InMemory(v)
		other = other || a.InMemory(v) != c.InMemory(v)
	}
	if !same || !other {
		t.Errorf("same seed gives the same set: %v; another seed another set: %v", same, other)
	}
	ha, _ := a.HitShare(hot)
	hh, _ := hottestFirst.HitShare(hot)
	if !(ha < hh) || math.Abs(ha-0.2) > 0.1 {
		t.Errorf("hit share: random %v, hottest first %v; want random near its 0.2 share and below", ha, hh)
	}
	all := make([]int32, n)
	for v := range all {
		all[v] = int32(v)
	}
	dst := make([]float32, n*dim)
	if _, err := gatherNoHang(t, a, context.Background(), all, dst); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(dst, fx.feats) {
		t.Fatal("rows differ from the features")
	}
}

// TestMemoryView checks the probe's view of a store: cached rows are the
// features, rows on disk are replaced by cached rows (so no read), and
// with nothing cached rows come from a pool.
func TestMemoryView(t *testing.T) {
	const n, dim = 2000, 32
	fx, _, _ := materialized(t, n, dim, mixAllSSD, 1, 8)
	hot := zipfHotness(n, 1.1, rand.New(rand.NewPCG(8, 1)))
	all := make([]int32, n)
	for v := range all {
		all[v] = int32(v)
	}
	for _, f := range []float64{0, 0.25} {
		s, err := Open(fx.dir, Options{QueueDepth: 8, Cache: &CacheOverride{Fraction: f, Hotness: hot}})
		if err != nil {
			t.Fatal(err)
		}
		mv := s.MemoryView()
		dst := make([]float32, n*dim)
		st, err := mv.Gather(context.Background(), all, dst)
		if err != nil {
			t.Fatal(err)
		}
		if st.Rows != n || st.SSDRows != 0 || st.DeviceReads != 0 || mv.Dim() != dim {
			t.Errorf("cache %g: stats %+v: want every row from memory", f, st)
		}
		cached := map[string]bool{}
		for v := range n {
			if s.InMemory(int32(v)) {
				cached[fmt.Sprint(fx.feats[v*dim:(v+1)*dim])] = true
			}
		}
		for v := range n {
			row := dst[v*dim : (v+1)*dim]
			switch {
			case s.InMemory(int32(v)) && !slices.Equal(row, fx.feats[v*dim:(v+1)*dim]):
				t.Fatalf("cache %g: cached vertex %d's row is not its features", f, v)
			case !s.InMemory(int32(v)) && f > 0 && !cached[fmt.Sprint(row)]:
				t.Fatalf("cache %g: vertex %d on disk got a row that is no cached row", f, v)
			}
		}
		if _, err := mv.Gather(context.Background(), []int32{n}, dst); err == nil {
			t.Error("an out-of-range vertex was served")
		}
		s.Close()
	}
}
