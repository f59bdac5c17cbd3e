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
