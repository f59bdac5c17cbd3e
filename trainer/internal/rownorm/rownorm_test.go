package rownorm

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestRows(t *testing.T) {
	for _, tc := range []struct {
		name string
		dim  int
		x    []float32
		want []float32
	}{
		{"sums to one", 3, []float32{1, 1, 2, 0, 0, 0, -1, 3, 0}, []float32{0.25, 0.25, 0.5, 0, 0, 0, -0.25, 0.75, 0}},
		{"one column", 1, []float32{4, -2, 0}, []float32{1, -1, 0}},
		{"a partial row is left", 2, []float32{1, 3, 5}, []float32{0.25, 0.75, 5}},
		{"dim 0 does nothing", 0, []float32{2}, []float32{2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			Rows(tc.x, tc.dim)
			for i := range tc.want {
				if tc.x[i] != tc.want[i] {
					t.Fatalf("got %v, want %v", tc.x, tc.want)
				}
			}
		})
	}
}

// TestRowIsOneSum checks the interleaved sums against one float64 sum on
// rows of every length up to 130 and both signs: a row comes out with
// unit L1 norm to float32 precision, and Row into another slice gives
// Rows's bits.
func TestRowIsOneSum(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for dim := 1; dim <= 130; dim++ {
		src := make([]float32, dim)
		for i := range src {
			src[i] = float32(rng.NormFloat64())
		}
		dst := make([]float32, dim)
		Row(dst, src)
		in := append([]float32(nil), src...)
		Rows(in, dim)
		var norm float64
		for i, v := range dst {
			if math.Float32bits(v) != math.Float32bits(in[i]) {
				t.Fatalf("dim %d: Row and Rows differ at %d: %v vs %v", dim, i, v, in[i])
			}
			if (v < 0) != (src[i] < 0) {
				t.Fatalf("dim %d: sign of %d changed", dim, i)
			}
			norm += math.Abs(float64(v))
		}
		if math.Abs(norm-1) > 1e-5 {
			t.Fatalf("dim %d: L1 norm %v after scaling", dim, norm)
		}
	}
}

func BenchmarkRows(b *testing.B) {
	for _, dim := range []int{128, 1024} {
		b.Run(map[int]string{128: "128", 1024: "1024"}[dim], func(b *testing.B) {
			src := make([]float32, 1<<22)
			rng := rand.New(rand.NewPCG(1, 2))
			for i := range src {
				src[i] = float32(rng.NormFloat64())
			}
			x := make([]float32, len(src))
			b.SetBytes(int64(4 * len(x)))
			for b.Loop() {
				copy(x, src)
				Rows(x, dim)
			}
		})
	}
}
