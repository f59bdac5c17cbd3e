package ddak

import (
	"context"
	"slices"
	"testing"
)

// wideHotness gives n vertices hotness with many distinct values above
// denseLimit: a share large of them draw a value from [denseLimit,
// denseLimit+span) (so values repeat when span < n), the rest a small
// value below 300. Seeded, deterministic.
func wideHotness(n int, large float64, span uint64, seed uint64) []uint32 {
	hot := make([]uint32, n)
	x := seed*0x9e3779b97f4a7c15 + 1
	for v := range hot {
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
		z = (z ^ z>>27) * 0x94d049bb133111eb
		z ^= z >> 31
		if float64(z>>11)/(1<<53) < large {
			hot[v] = uint32(denseLimit + (z>>7)%span)
		} else {
			hot[v] = uint32(z>>40) % 300
		}
	}
	return hot
}

func TestWideOrderEqualsBuckets(t *testing.T) {
	cases := []struct {
		name  string
		n     int
		large float64
		span  uint64
	}{
		{"few large vertices, all distinct", 200_000, 0.05, 1 << 40},
		{"most vertices large, values repeat", 400_000, 0.9, 50_000},
		{"large values crowd one coarse bucket", 300_000, 0.5, 60_000},
		{"every vertex large and distinct", 1_500_000, 1, 1 << 31},
		{"large values spread over all 32 bits", 300_000, 0.7, 1<<32 - denseLimit},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			prev := wideThreshold
			wideThreshold = func(int64) int { return 16 }
			defer func() { wideThreshold = prev }()
			hot := wideHotness(c.n, c.large, c.span, 3)
			o, err := countOrder(context.Background(), hot, true)
			if err != nil {
				t.Fatal(err)
			}
			if o.wide == nil {
				t.Fatal("the wide path was not taken")
			}
			bins, _ := testBins(hot)
			for _, prio := range []Priority{PrioritySum, PriorityProduct} {
				opt := Options{Priority: prio}
				wide, err := place(context.Background(), hot, bins, opt, true)
				if err != nil {
					t.Fatal(err)
				}
				slow, err := place(context.Background(), hot, bins, opt, false)
				if err != nil {
					t.Fatal(err)
				}
				checkLayout(t, wide, hot, bins, true)
				if !slices.Equal(wide.Bin, slow.Bin) || !slices.Equal(wide.Row, slow.Row) || !slices.Equal(wide.Stats, slow.Stats) {
					t.Errorf("%s: the wide path's layout differs from the per-value buckets'", prio)
				}
			}
		})
	}
}
