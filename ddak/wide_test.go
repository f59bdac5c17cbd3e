package ddak

import (
	"context"
	"math"
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

// TestQuantizedOrder: hotness with many distinct values >= 2^16 is ranked
// by quantized value; the layout is a valid one in that order (rows of a
// bin and the tiers descend in quantized hotness, exact below 2^16), its
// stats are exact, and each bin's traffic is where the exact per-value
// order puts it, to within a small fraction of a percent of the epoch.
func TestQuantizedOrder(t *testing.T) {
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
			if !o.quant {
				t.Fatal("the quantized path was not taken")
			}
			if got := o.start[len(o.val)]; got != int64(c.n) {
				t.Fatalf("buckets hold %d positions, want %d", got, c.n)
			}
			bins, _ := testBins(hot)
			for _, prio := range Priorities() {
				opt := Options{Priority: prio}
				quant, err := place(context.Background(), hot, bins, opt, true, nil)
				if err != nil {
					t.Fatal(err)
				}
				exact, err := place(context.Background(), hot, bins, opt, false, nil)
				if err != nil {
					t.Fatal(err)
				}
				checkLayout(t, quant, hot, bins, true)
				for b := range bins {
					q := float64(quant.Stats[b].Accesses) / float64(quant.TotalAccesses)
					e := float64(exact.Stats[b].Accesses) / float64(exact.TotalAccesses)
					if math.Abs(q-e) > 0.002 {
						t.Errorf("%s: bin %s serves %.4f of the epoch, %.4f in the exact order", prio, bins[b].ID, q, e)
					}
				}
			}
		})
	}
}

// TestQuantKey: the quantized value is monotone in the hotness and within
// 2^-12 of it, over the whole range above 2^16.
func TestQuantKey(t *testing.T) {
	vals := []uint32{denseLimit, denseLimit + 1, 1<<17 - 1, 1 << 17, 1<<20 + 12345, 1<<31 - 1, 1 << 31, math.MaxUint32}
	x := uint64(7)
	for range 100_000 {
		x = x*6364136223846793005 + 1442695040888963407
		vals = append(vals, denseLimit+uint32(x>>33)%(math.MaxUint32-denseLimit))
	}
	slices.Sort(vals)
	for i, h := range vals {
		k := quantKey(h)
		if k < 0 || k >= 1<<16 {
			t.Fatalf("quantKey(%d) = %d, want 0..65535", h, k)
		}
		lo := quantFloor(k)
		if lo > h || float64(h-lo) >= float64(lo)/(1<<quantBits) {
			t.Fatalf("quantKey(%d) = %d, whose least value is %d: not within 2^-12", h, k, lo)
		}
		if i > 0 && quantKey(vals[i-1]) > k {
			t.Fatalf("quantKey not monotone: %d -> %d, %d -> %d", vals[i-1], quantKey(vals[i-1]), h, k)
		}
	}
	// Every bucket starts exactly at its least value.
	for k := range 1 << 16 {
		lo := quantFloor(k)
		if quantKey(lo) != k || (k > 0 && quantKey(lo-1) != k-1) {
			t.Fatalf("bucket %d: quantKey(%d) = %d, quantKey(%d) = %d", k, lo, quantKey(lo), lo-1, quantKey(lo-1))
		}
	}
	if quantKey(denseLimit) != 0 || quantKey(math.MaxUint32) != 1<<16-1 {
		t.Errorf("range: quantKey(2^16) = %d, quantKey(2^32-1) = %d", quantKey(denseLimit), quantKey(math.MaxUint32))
	}
}
