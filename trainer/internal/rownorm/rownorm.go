// Package rownorm scales feature rows to unit L1 norm. It is the one
// definition the in-memory feature matrix, the store's caches, its rows
// read from disk and its packed rows share, so that every way of loading
// a row trains on the same bits.
//
// A row's L1 norm is summed in float64 (four partial sums, added pairwise)
// and each feature is scaled by its inverse in float64 and rounded to
// float32 once. Rows of zeros stay as they are.
package rownorm

import "math"

// Rows scales each dim-wide row of x in place.
func Rows(x []float32, dim int) {
	if dim <= 0 {
		return
	}
	for r := 0; r+dim <= len(x); r += dim {
		row := x[r : r+dim : r+dim]
		Row(row, row)
	}
}

// Row writes src scaled to unit L1 norm into dst, which must be as long;
// dst may be src.
func Row(dst, src []float32) {
	s := l1(src)
	if s == 0 {
		copy(dst, src)
		return
	}
	scale(dst[:len(src)], src, 1/s)
}

// l1 is the sum of |x| in float64, in four interleaved partial sums: the
// additions overlap instead of waiting on one another.
func l1(x []float32) float64 {
	var s0, s1, s2, s3 float64
	j := 0
	for ; j+4 <= len(x); j += 4 {
		v := x[j : j+4 : j+4]
		s0 += math.Abs(float64(v[0]))
		s1 += math.Abs(float64(v[1]))
		s2 += math.Abs(float64(v[2]))
		s3 += math.Abs(float64(v[3]))
	}
	for ; j < len(x); j++ {
		s0 += math.Abs(float64(x[j]))
	}
	return (s0 + s1) + (s2 + s3)
}

// scale writes src times inv into dst.
func scale(dst, src []float32, inv float64) {
	j := 0
	for ; j+4 <= len(src); j += 4 {
		s, d := src[j:j+4:j+4], dst[j:j+4:j+4]
		d[0] = float32(float64(s[0]) * inv)
		d[1] = float32(float64(s[1]) * inv)
		d[2] = float32(float64(s[2]) * inv)
		d[3] = float32(float64(s[3]) * inv)
	}
	for ; j < len(src); j++ {
		dst[j] = float32(float64(src[j]) * inv)
	}
}
