package vec

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestAssemblyMatchesGo requires the AVX2 loops to give bitwise the Go
// loops' results, at every length around the 8-wide steps and from
// unaligned starts, so training results do not depend on the CPU.
func TestAssemblyMatchesGo(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2 on this CPU: only the Go loops run")
	}
	r := rand.New(rand.NewPCG(1, 2))
	rnd := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(r.NormFloat64() * math.Pow(10, float64(r.IntN(7)-3)))
		}
		return v
	}
	same := func(t *testing.T, what string, n, off int, got, want []float32) {
		t.Helper()
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s n=%d offset=%d: element %d is %v, the Go loop gives %v", what, n, off, i, got[i], want[i])
			}
		}
	}
	for n := 0; n <= 70; n++ {
		for _, off := range []int{0, 1, 3} {
			a, b, c, d, src := rnd(n + off)[off:], rnd(n + off)[off:], rnd(n + off)[off:], rnd(n + off)[off:], rnd(n + off)[off:]
			dst := rnd(n + off)[off:]
			alpha := float32(r.NormFloat64())

			got, want := slices.Clone(dst), slices.Clone(dst)
			Add(got, src)
			addGo(want, src)
			same(t, "Add", n, off, got, want)

			got, want = slices.Clone(dst), slices.Clone(dst)
			Add4(got, a, b, c, d)
			add4Go(want, a, b, c, d)
			same(t, "Add4", n, off, got, want)

			got, want = slices.Clone(dst), slices.Clone(dst)
			Axpy(got, alpha, src)
			axpyGo(want, alpha, src)
			same(t, "Axpy", n, off, got, want)

			Prefetch(src) // a hint: must not fault on any length
		}
	}
}

func TestGoLoopsAreTheDefinition(t *testing.T) {
	dst := []float32{1, 2, 3}
	add4Go(dst, []float32{1, 1, 1}, []float32{2, 2, 2}, []float32{3, 3, 3}, []float32{4, 4, 4})
	axpyGo(dst, 2, []float32{1, 0, -1})
	addGo(dst, []float32{0.5, 0.5, 0.5})
	if want := []float32{13.5, 12.5, 11.5}; !slices.Equal(dst, want) {
		t.Fatalf("got %v, want %v", dst, want)
	}
}

func BenchmarkAdd4(b *testing.B) {
	x := make([]float32, 5*256)
	for range b.N {
		Add4(x[:256], x[256:512], x[512:768], x[768:1024], x[1024:])
	}
}
