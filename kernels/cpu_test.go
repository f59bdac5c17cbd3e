package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
)

func TestCPUBackend(t *testing.T) {
	for _, threads := range []int{1, 2, 7} {
		for _, lib := range []string{"gonum", ""} {
			t.Run(fmt.Sprintf("threads=%d blas=%q", threads, lib), func(t *testing.T) {
				c, err := NewCPU(CPUOptions{Threads: threads, BLAS: lib})
				if err != nil {
					t.Fatal(err)
				}
				if c.Threads() != threads {
					t.Errorf("Threads() = %d, want %d", c.Threads(), threads)
				}
				t.Logf("%s %s", c.Name(), c.Note())
				checkBackend(t, c)
			})
		}
	}
}

func TestNewCPU(t *testing.T) {
	cases := []struct {
		name        string
		o           CPUOptions
		wantThreads int
		wantErr     bool
	}{
		{"zero threads means GOMAXPROCS", CPUOptions{BLAS: "gonum"}, runtime.GOMAXPROCS(0), false},
		{"explicit threads", CPUOptions{Threads: 3, BLAS: "gonum"}, 3, false},
		{"negative threads", CPUOptions{Threads: -1, BLAS: "gonum"}, 0, true},
		{"negative BLAS threads", CPUOptions{Threads: 2, BLASThreads: -1, BLAS: "gonum"}, 0, true},
		{"BLAS threads leave gonum's kernels alone", CPUOptions{Threads: 2, BLASThreads: 1, BLAS: "gonum"}, 2, false},
		{"unknown BLAS", CPUOptions{BLAS: "mkl-of-course"}, 0, true},
		{"missing library", CPUOptions{BLAS: "/nonexistent/libcblas.so"}, 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := NewCPU(tc.o)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("NewCPU(%+v) = %s, want an error", tc.o, c.Name())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Threads() != tc.wantThreads {
				t.Errorf("Threads() = %d, want %d", c.Threads(), tc.wantThreads)
			}
			if !strings.Contains(c.Name(), fmt.Sprintf("%d threads", tc.wantThreads)) {
				t.Errorf("Name() = %q does not say %d threads", c.Name(), tc.wantThreads)
			}
		})
	}
}

// TestCPUBLASThreads: products on fewer threads than the kernels, set at
// NewCPU or later, show in the backend's name and leave the library's own
// threading off.
func TestCPUBLASThreads(t *testing.T) {
	lib, _, err := loadBLAS("openblas")
	if err != nil {
		t.Skipf("OpenBLAS not tested: %v (install Debian's libopenblas0-pthread: make setup)", err)
	}
	cases := []struct {
		o        CPUOptions
		wantBLAS int
		wantName string
	}{
		{CPUOptions{Threads: 2, BLASThreads: 1, BLAS: "openblas"}, 1, "2 threads, products on 1"},
		{CPUOptions{Threads: 2, BLAS: "openblas"}, 2, "2 threads"},
		{CPUOptions{Threads: 3, BLASThreads: 3, BLAS: "openblas"}, 3, "3 threads"},
	}
	for _, c := range cases {
		cpu, err := NewCPU(c.o)
		if err != nil {
			t.Fatal(err)
		}
		if cpu.BLASThreads() != c.wantBLAS || !strings.HasSuffix(cpu.Name(), c.wantName) {
			t.Errorf("NewCPU(%+v): products on %d, name %q; want %d and a name ending %q", c.o, cpu.BLASThreads(), cpu.Name(), c.wantBLAS, c.wantName)
		}
	}
	cpu, err := NewCPU(CPUOptions{Threads: 2, BLAS: "openblas"})
	if err != nil {
		t.Fatal(err)
	}
	if err := cpu.SetBLASThreads(1); err != nil {
		t.Fatal(err)
	}
	if cpu.BLASThreads() != 1 || !strings.HasSuffix(cpu.Name(), "2 threads, products on 1") {
		t.Errorf("after SetBLASThreads(1): BLASThreads() %d, name %q", cpu.BLASThreads(), cpu.Name())
	}
	if n := lib.(cLib).threads(); n != 1 {
		t.Errorf("the library runs on %d threads of its own, want 1", n)
	}
	if err := cpu.SetBLASThreads(0); err == nil {
		t.Error("SetBLASThreads(0) did not fail")
	}
}

// TestCPUSharesHostMemory checks what the CPU backend promises beyond
// Backend: Wrap, NewIndex and NewCSR share the caller's slices and Host
// exposes a matrix's storage.
func TestCPUSharesHostMemory(t *testing.T) {
	c, err := NewCPU(CPUOptions{Threads: 2, BLAS: "gonum"})
	if err != nil {
		t.Fatal(err)
	}
	data := []float32{1, 2, 3, 4, 5, 6}
	m := c.Wrap(2, 3, data)
	data[4] = 50
	if h := c.Host(m); h[4] != 50 {
		t.Errorf("Wrap copied its data: Host[4] = %g after data[4] = 50", h[4])
	}
	c.Scale(m, 2)
	if data[0] != 2 {
		t.Errorf("Scale of a wrapped matrix left data[0] = %g, want 2", data[0])
	}

	v := []int32{2, 0}
	idx := c.NewIndex(v)
	v[0] = 1
	dst := c.NewMat(2, 3)
	c.GatherRows(dst, m, idx)
	if got := c.Host(dst)[:3]; got[0] != 8 {
		t.Errorf("NewIndex copied its slice: row 0 gathered %v, want row 1 of the wrapped matrix", got)
	}
}

func TestCPUPanicsOnShapeMismatch(t *testing.T) {
	c, err := NewCPU(CPUOptions{Threads: 2, BLAS: "gonum"})
	if err != nil {
		t.Fatal(err)
	}
	a, b := c.NewMat(3, 4), c.NewMat(5, 6)
	wide := c.NewMat(4, 8)
	g := c.NewCSR([]int32{0, 1, 2}, []int32{0, 2}, 3)
	cases := []struct {
		name string
		fn   func()
	}{
		{"Gemm inner dimensions", func() { c.Gemm(false, false, 1, a, b, 0, c.NewMat(3, 6)) }},
		{"Gemm output shape", func() { c.Gemm(false, true, 1, a, c.NewMat(6, 4), 0, c.NewMat(3, 5)) }},
		{"Copy", func() { c.Copy(a, b) }},
		{"Axpy", func() { c.Axpy(1, a, b) }},
		{"AddBias", func() { c.AddBias(a, c.NewMat(1, 5)) }},
		{"SumRows", func() { c.SumRows(c.NewMat(1, 3), a, 0) }},
		{"SegmentMean rows", func() { c.SegmentMean(c.NewMat(2, 4), a.RowSlice(0, 2), g) }},
		{"WeightedSum heads", func() { c.WeightedSum(c.NewMat(2, 4), a, c.NewMat(2, 3), g) }},
		{"Upload length", func() { c.Upload(a, 2, 2, make([]float32, 3)) }},
		{"Resize of a view", func() { c.Resize(wide.ColSlice(2, 5), 2, 2) }},
		{"CSR offsets", func() { c.NewCSR([]int32{0, 3}, []int32{0, 1}, 2) }},
		{"Adam step 0", func() { c.Adam(a, a, a, a, AdamStep{LR: 1}) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("did not panic")
				}
			}()
			tc.fn()
		})
	}
}

// detBlock is a large random block for the determinism test: 0 to 20
// edges per destination (200k in all for 20k destinations), a tenth of
// them into ten hub sources.
func detBlock(rng *rand.Rand, numDst, numSrc int) refBlock {
	g := refBlock{off: make([]int32, 1, numDst+1), numSrc: numSrc}
	for range numDst {
		for range rng.IntN(21) {
			u := rng.IntN(numSrc)
			if rng.IntN(10) == 0 {
				u = rng.IntN(10)
			}
			g.src = append(g.src, int32(u))
		}
		g.off = append(g.off, int32(len(g.src)))
	}
	return g
}

// runDeterminismSequence runs a GAT-like forward and backward pass plus
// the reductions the trainer uses and returns every output by name.
func runDeterminismSequence(t *testing.T, c Backend) map[string][]float32 {
	t.Helper()
	const numDst, numSrc, H, F = 20000, 60000, 4, 16
	rng := rand.New(rand.NewPCG(11, 12))
	g := detBlock(rng, numDst, numSrc)
	csr := c.NewCSR(g.off, g.src, g.numSrc)
	randMat := func(rows, cols int) *Mat {
		s := make([]float32, rows*cols)
		for i := range s {
			s[i] = float32(2*rng.Float64() - 1)
		}
		return c.Wrap(rows, cols, s)
	}
	E := g.numEdges()
	x, hdst := randMat(numSrc, H*F), randMat(numDst, H*F)
	aL, aR := randMat(1, H*F), randMat(1, H*F)
	dout := randMat(numDst, H*F)
	out := map[string]*Mat{}
	mat := func(name string, rows, cols int) *Mat {
		m := c.NewMat(rows, cols)
		out[name] = m
		return m
	}

	c.SegmentMean(mat("SegmentMean", numDst, H*F), x, csr)
	c.SegmentMeanBackward(mat("SegmentMeanBackward", numSrc, H*F), dout, csr)
	el, er := mat("HeadDot el", numSrc, H), mat("HeadDot er", numDst, H)
	c.HeadDot(el, x, aL)
	c.HeadDot(er, hdst, aR)
	s := mat("EdgeAdd", E, H)
	c.EdgeAdd(s, el, er, csr)
	c.Act(Activation{Kind: LeakyReLU, Slope: 0.2}, s, s)
	att := mat("EdgeSoftmax", E, H)
	c.EdgeSoftmax(att, s, csr)
	c.WeightedSum(mat("WeightedSum", numDst, H*F), x, att, csr)
	c.WeightedSumBackward(mat("WeightedSumBackward", numSrc, H*F), dout, att, csr)
	datt := mat("EdgeDot", E, H)
	c.EdgeDot(datt, dout, x, csr)
	ds := mat("EdgeSoftmaxBackward", E, H)
	c.EdgeSoftmaxBackward(ds, datt, att, csr)
	del, der := mat("EdgeAddBackward del", numSrc, H), mat("EdgeAddBackward der", numDst, H)
	c.EdgeAddBackward(del, der, ds, csr)
	c.HeadDotBackward(mat("HeadDotBackward dx", numSrc, H*F), mat("HeadDotBackward da", 1, H*F), del, x, aL)
	c.HeadMean(mat("HeadMean", numDst, F), out["WeightedSum"])

	idx := make([]int32, numDst)
	for i := range idx {
		idx[i] = int32(rng.IntN(5000))
	}
	c.ScatterAddRows(mat("ScatterAddRows", 5000, H*F), out["WeightedSum"], c.NewIndex(idx))
	c.SumRows(mat("SumRows", 1, H*F), dout, 0)

	labels := make([]int32, numDst)
	for i := range labels {
		labels[i] = int32(rng.IntN(H*F+1) - 1)
	}
	loss, correct := c.SoftmaxCrossEntropy(mat("SoftmaxCrossEntropy", numDst, H*F), out["WeightedSum"], c.NewIndex(labels), 1/float32(numDst))

	res := map[string][]float32{}
	for name, m := range out {
		res[name] = make([]float32, m.Len())
		c.Download(res[name], m)
	}
	bits := math.Float64bits(loss)
	res["loss and correct"] = []float32{math.Float32frombits(uint32(bits)), math.Float32frombits(uint32(bits >> 32)), float32(correct)}
	return res
}

func TestCPUKernelsDeterministicAcrossThreads(t *testing.T) {
	if testing.Short() {
		t.Skip("large inputs; skipped with -short")
	}
	var base map[string][]float32
	for _, threads := range []int{1, 2, 3, 8} {
		c, err := NewCPU(CPUOptions{Threads: threads, BLAS: "gonum"})
		if err != nil {
			t.Fatal(err)
		}
		got := runDeterminismSequence(t, c)
		if base == nil {
			base = got
			continue
		}
		for name, want := range base {
			g := got[name]
			for k := range want {
				if math.Float32bits(g[k]) != math.Float32bits(want[k]) {
					t.Errorf("%s with %d threads: element %d = %x, with 1 thread %x", name, threads, k, math.Float32bits(g[k]), math.Float32bits(want[k]))
					break
				}
			}
		}
	}
}
