// Package rng is SplitMix64 (Steele, Lea and Flood, 2014), the counter
// based generator gnnplan draws every random choice from: samplers,
// dropout seeds, synthetic graphs, hash layouts. A stream is fixed by
// its starting key alone, so the same seed gives the same bits on any
// thread count and any machine.
package rng

import "math/bits"

// Golden is SplitMix64's increment, 2^64 over the golden ratio.
const Golden = 0x9e3779b97f4a7c15

// Mix is SplitMix64's finalizer: a bijection on uint64 whose output bits
// each depend on all the input's bits.
func Mix(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// SplitMix is a SplitMix64 stream: its state is a counter, each draw the
// counter advanced by Golden and mixed.
type SplitMix struct{ State uint64 }

// Next returns the stream's next 64 bits.
func (r *SplitMix) Next() uint64 {
	r.State += Golden
	return Mix(r.State)
}

// Below returns a uniform integer in [0, n), n > 0, by Lemire's
// multiply-shift with rejection (no modulo bias).
func (r *SplitMix) Below(n uint64) uint64 {
	hi, lo := bits.Mul64(r.Next(), n)
	if lo < n {
		thresh := -n % n
		for lo < thresh {
			hi, lo = bits.Mul64(r.Next(), n)
		}
	}
	return hi
}
