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
			hot := wideHotness(c.n, c.large, c.span, 3)
			o, err := countOrder(context.Background(), hot, 16)
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
				quant, err := place(context.Background(), hot, bins, opt, placeRun{wide: true, wideAt: 16})
				if err != nil {
					t.Fatal(err)
				}
				exact, err := place(context.Background(), hot, bins, opt, placeRun{})
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

// TestWideIsSeenEarly: a counting worker stops collecting values >= 2^16
// as soon as it holds more distinct ones than the order may keep (the
// order is quantized then whatever else it sees), keeps collecting while
// they repeat, and quantizes when it holds largeCap of them.
func TestWideIsSeenEarly(t *testing.T) {
	cases := []struct {
		name       string
		values     func(i int) uint32
		n          int
		wideAt     int
		largeCap   int64
		wantCapped bool
		maxKept    int // the most values collected before capping
	}{
		{"distinct values past twice the threshold", func(i int) uint32 { return denseLimit + uint32(i) }, 40, 10, 1 << 20, true, 21},
		{"repeating values under the threshold", func(i int) uint32 { return denseLimit + uint32(i%7) }, 1000, 10, 1 << 20, false, 1000},
		{"repeating values up to the cap", func(i int) uint32 { return denseLimit + uint32(i%7) }, 1000, 10, 500, true, 501},
		{"no threshold (an exact order)", func(i int) uint32 { return denseLimit + uint32(i) }, 1000, 0, math.MaxInt64, false, 1000},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tl := tally{wideAt: c.wideAt, checkAt: c.largeCap}
			if c.wideAt > 0 {
				tl.checkAt = min(c.largeCap, 2*int64(c.wideAt))
			}
			kept := 0
			for i := range c.n {
				if !tl.capped {
					tl.keep(c.values(i), c.largeCap)
					kept = i + 1
				}
			}
			if tl.capped != c.wantCapped {
				t.Fatalf("capped = %v after %d values, want %v", tl.capped, kept, c.wantCapped)
			}
			if tl.capped && tl.large != nil {
				t.Errorf("a capped tally still holds %d values", len(tl.large))
			}
			if !tl.capped && len(tl.large) != c.n {
				t.Errorf("kept %d of %d values", len(tl.large), c.n)
			}
			if kept > c.maxKept {
				t.Errorf("collected %d values before capping, want at most %d", kept, c.maxKept)
			}
		})
	}
}

// TestQuantizedPoolsAreEqual: within a quantized bucket, pools of one size
// carry the same accesses (bar the bucket's remainder, one more each for
// its first sum mod count positions), and the bucket's positions sum to its
// exact total.
func TestQuantizedPoolsAreEqual(t *testing.T) {
	hot := wideHotness(300_000, 0.9, 1<<32-denseLimit, 5)
	o, err := countOrder(context.Background(), hot, 16)
	if err != nil {
		t.Fatal(err)
	}
	if !o.quant {
		t.Fatal("not quantized")
	}
	exact := make([]uint64, o.nLarge)
	for _, h := range hot {
		if h >= denseLimit {
			exact[o.bucketOf(h)] += uint64(h)
		}
	}
	for k := range o.nLarge {
		if got := o.prefix(k, o.count[k]); got != exact[k] {
			t.Fatalf("bucket %d sums to %d, want %d", k, got, exact[k])
		}
		for j := o.extra[k]; j+2 <= o.count[k]; j++ {
			if a, b := o.prefix(k, j+1)-o.prefix(k, j), o.prefix(k, j+2)-o.prefix(k, j+1); a != b {
				t.Fatalf("bucket %d: positions %d and %d carry %d and %d", k, j, j+1, a, b)
			}
		}
	}
}
