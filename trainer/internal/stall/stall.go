// Package stall tells a measurement's stalled samples from its steady
// ones: on a shared machine another process's burst or a page-fault storm
// slows a few batches of a short probe far more than the run it predicts.
// A sample counts as stalled when it is over Factor times the median of at
// least MinSamples samples; with fewer none does.
package stall

import (
	"math"
	"slices"
)

const (
	// Factor is how many times the median a stalled sample takes.
	Factor = 1.5
	// MinSamples is the fewest samples whose median tells a stall.
	MinSamples = 8
)

// Limit is the largest steady value among xs (xs is not changed): Factor
// times their median, or +Inf with fewer than MinSamples.
func Limit(xs []float64) float64 {
	if len(xs) < MinSamples {
		return math.Inf(1)
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	m := s[n/2]
	if n%2 == 0 {
		m = (s[n/2-1] + s[n/2]) / 2
	}
	return Factor * m
}
