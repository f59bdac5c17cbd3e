package rng

import "testing"

// TestSplitMixKnownValues: the first outputs for seed 0 and for seed
// 1234567 are the reference implementation's (Vigna's splitmix64.c), so
// every stream gnnplan drew before keeps its bits.
func TestSplitMixKnownValues(t *testing.T) {
	for _, c := range []struct {
		seed uint64
		want []uint64
	}{
		{0, []uint64{0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4, 0x06c45d188009454f}},
		{1234567, []uint64{6457827717110365317, 3203168211198807973, 9817491932198370423}},
	} {
		r := SplitMix{State: c.seed}
		for i, w := range c.want {
			if got := r.Next(); got != w {
				t.Errorf("seed %d, draw %d: %#x, want %#x", c.seed, i, got, w)
			}
		}
	}
}

func TestBelowIsInRangeAndCoversIt(t *testing.T) {
	r := SplitMix{State: 42}
	var seen [7]int
	for range 7000 {
		v := r.Below(7)
		if v >= 7 {
			t.Fatalf("Below(7) = %d", v)
		}
		seen[v]++
	}
	for v, n := range seen {
		if n < 800 || n > 1200 {
			t.Errorf("value %d drawn %d times in 7000, want about 1000", v, n)
		}
	}
}
