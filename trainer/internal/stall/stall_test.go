package stall

import (
	"math"
	"testing"
)

func TestLimit(t *testing.T) {
	steady := func(n int, x float64) []float64 {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = x
		}
		return xs
	}
	for _, tc := range []struct {
		name string
		xs   []float64
		want float64
	}{
		{"steady", steady(10, 2), 3},
		{"a stall does not move it", append(steady(9, 2), 50), 3},
		{"even count: the middle two's mean", append(steady(4, 1), steady(4, 3)...), 3},
		{"too few to tell", steady(MinSamples-1, 2), math.Inf(1)},
	} {
		if got := Limit(tc.xs); got != tc.want {
			t.Errorf("%s: %g, want %g", tc.name, got, tc.want)
		}
	}
}
