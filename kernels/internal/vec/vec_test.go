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
	if !hasAVX2() {
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

// TestDropoutAssemblyMatchesGo compares the AVX2 dropout loops with the Go
// loops bit for bit, special values included.
func TestDropoutAssemblyMatchesGo(t *testing.T) {
	if !hasAVX2() {
		t.Skip("no AVX2 on this CPU: only the Go loops run")
	}
	r := rand.New(rand.NewPCG(3, 4))
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.NaN()), -float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 1e-45, -1e-45}
	for _, th := range []uint32{0, 1, 19661, 32768, 39322, 65535, 65536} {
		m := DropMask{S0: r.Uint32(), S1: r.Uint32(), Threshold: th, Scale: 1 / (1 - float32(th)/65536)}
		if th == 65536 {
			m.Scale = 0
		}
		for n := 0; n <= 70; n += 1 + n/8 {
			for _, base := range []int{0, 5, 1 << 20, 1<<32 - 3} {
				x := make([]float32, n)
				for i := range x {
					x[i] = float32(r.NormFloat64())
					if r.IntN(4) == 0 {
						x[i] = special[r.IntN(len(special))]
					}
				}
				dy := make([]float32, n)
				for i := range dy {
					dy[i] = float32(r.NormFloat64())
				}
				gr, wr := make([]float32, n), make([]float32, n)
				ReLU(gr, x)
				reluGo(wr, x)
				for i := range gr {
					if math.Float32bits(gr[i]) != math.Float32bits(wr[i]) {
						t.Fatalf("ReLU n=%d: element %d of %v is %v, the Go loop gives %v", n, i, x[i], gr[i], wr[i])
					}
				}
				for _, relu := range []bool{false, true} {
					got, want := make([]float32, n), make([]float32, n)
					if relu {
						ReLUDropout(got, x, base, m)
					} else {
						Dropout(got, x, base, m)
					}
					dropGo(want, x, base, m, relu)
					for i := range got {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							t.Fatalf("relu=%v th=%d n=%d base=%d: element %d of %v is %v, the Go loop gives %v", relu, th, n, base, i, x[i], got[i], want[i])
						}
					}
					gdx, wdx := make([]float32, n), make([]float32, n)
					ReLUDropoutBackward(gdx, dy, got, m.Scale)
					reluBackGo(wdx, dy, got, m.Scale)
					for i := range gdx {
						if math.Float32bits(gdx[i]) != math.Float32bits(wdx[i]) {
							t.Fatalf("backward th=%d n=%d: element %d is %v, the Go loop gives %v", th, n, i, gdx[i], wdx[i])
						}
					}
				}
			}
		}
	}
}

// TestDropMaskRate checks the keep rate and that masks differ by seed and
// do not repeat along the matrix.
func TestDropMaskRate(t *testing.T) {
	const n = 1 << 18
	for _, p := range []float64{0.1, 0.5, 0.6} {
		m := DropMask{S0: 12345, S1: 678, Threshold: uint32(math.Round(p * 65536))}
		other := DropMask{S0: 12346, S1: 678, Threshold: m.Threshold}
		kept, same := 0, 0
		for k := range n {
			if m.Keep(k) {
				kept++
			}
			if m.Keep(k) == other.Keep(k) {
				same++
			}
		}
		if rate := float64(kept) / n; math.Abs(rate-(1-p)) > 0.005 {
			t.Errorf("p=%g: kept %.4f of the elements, want %.4f", p, rate, 1-p)
		}
		// Independent masks agree on p^2 + (1-p)^2 of the elements.
		if agree, want := float64(same)/n, p*p+(1-p)*(1-p); math.Abs(agree-want) > 0.01 {
			t.Errorf("p=%g: masks of neighbouring seeds agree on %.4f, independent ones would on %.4f", p, agree, want)
		}
	}
}

func TestSignHelpers(t *testing.T) {
	nan := float32(math.NaN())
	cases := []struct {
		v        float32
		pos, neg bool
	}{{1, true, false}, {-1, false, true}, {0, false, false}, {float32(math.Copysign(0, -1)), false, false},
		{nan, false, false}, {-nan, false, false}, {float32(math.Inf(1)), true, false}, {float32(math.Inf(-1)), false, true}, {1e-45, true, false}}
	for _, c := range cases {
		if got := positive(c.v) != 0; got != c.pos {
			t.Errorf("positive(%v) = %v", c.v, got)
		}
		if got := negative(c.v) != 0; got != c.neg {
			t.Errorf("negative(%v) = %v", c.v, got)
		}
	}
}
