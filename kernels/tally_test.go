package kernels

import (
	"math"
	"testing"
)

// TestTallyCountsEachClass runs one kernel of each class through a Tally
// and checks that each lands in its own class, with its work, and that
// the results are the wrapped backend's.
func TestTallyCountsEachClass(t *testing.T) {
	cpu, err := NewCPU(CPUOptions{Threads: 2, BLAS: "gonum"})
	if err != nil {
		t.Fatal(err)
	}
	tl := NewTally(cpu)
	var b Backend = tl
	a, w, c := b.NewMat(64, 32), b.NewMat(32, 16), b.NewMat(64, 16)
	for i := range a.h {
		a.h[i] = float32(i%7) - 3
	}
	for i := range w.h {
		w.h[i] = float32(i%5) - 2
	}
	b.Gemm(false, false, 1, a, w, 0, c)
	ref := cpu.NewMat(64, 16)
	cpu.Gemm(false, false, 1, a, w, 0, ref)
	for i := range ref.h {
		if c.h[i] != ref.h[i] {
			t.Fatalf("the tally changed a product: element %d %v, want %v", i, c.h[i], ref.h[i])
		}
	}
	g := b.NewCSR([]int32{0, 2, 3}, []int32{0, 5, 7}, 64)
	mean := b.NewMat(2, 32)
	b.SegmentMean(mean, a, g)
	rows := b.NewMat(3, 32)
	b.GatherRows(rows, a, b.NewIndex([]int32{1, 2, 3}))
	b.ActDropout(Activation{Kind: ReLU}, c, c, 0.5, 1)
	b.SoftmaxCrossEntropy(nil, c, b.NewIndex(make([]int32, 64)), 1)
	b.Adam(w, w, b.NewMat(32, 16), b.NewMat(32, 16), AdamStep{LR: 0.01, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, T: 1})

	k := tl.Times()
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"product GFLOP", k.Work.ProductGFLOP, 2 * 64 * 32 * 16 / 1e9},
		{"aggregation GB", k.Work.AggregationGB, 3 * 32 * 4 / 1e9},
		{"row gather GB", k.Work.RowGatherGB, 3 * 32 * 4 / 1e9},
		{"row gather rows", k.Work.RowGatherRows, 3},
		{"elementwise GB", k.Work.ElementwiseGB, 2 * 64 * 16 * 4 / 1e9},
		{"optimizer GB", k.Work.OptimizerGB, 7 * 32 * 16 * 4 / 1e9},
	} {
		if math.Abs(c.got-c.want) > 1e-9*c.want {
			t.Errorf("%s: %g, want %g", c.name, c.got, c.want)
		}
	}
	for _, s := range []struct {
		name string
		secs float64
	}{{"products", k.ProductsS}, {"aggregation", k.AggregationS}, {"row gather", k.RowGatherS}, {"elementwise", k.ElementwiseS}, {"loss", k.LossS}, {"optimizer", k.OptimizerS}} {
		if !(s.secs > 0) {
			t.Errorf("%s: %v s after a call", s.name, s.secs)
		}
	}
	if d := k.Sub(k); d.TotalS() != 0 || d.Work != (KernelWork{}) {
		t.Errorf("k - k = %+v, want zero", d)
	}
	if s := k.Scale(2); math.Abs(s.TotalS()-2*k.TotalS()) > 1e-12 || s.Work.RowGatherRows != 6 {
		t.Errorf("2k = %+v from %+v", s, k)
	}
}
