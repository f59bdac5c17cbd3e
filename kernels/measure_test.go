package kernels

import (
	"testing"
	"time"
)

func TestMeasureGemm(t *testing.T) {
	b, err := NewCPU(CPUOptions{Threads: 1, BLAS: "gonum"})
	if err != nil {
		t.Fatal(err)
	}
	g := MeasureGemm(b, 64, 32, 16, time.Millisecond)
	// Any machine does between a tenth of a GFLOP/s and a PFLOP/s on one
	// core; a wrong operation count or timing lands far outside.
	if !(g > 0.1 && g < 1e6) {
		t.Errorf("MeasureGemm = %v GFLOP/s", g)
	}
}

// TestMeasureKernelClasses checks each class's rate lands in the range any
// machine reaches: a wrong byte or operation count, or a timer read
// wrong, lands orders of magnitude outside.
func TestMeasureKernelClasses(t *testing.T) {
	b, err := NewCPU(CPUOptions{Threads: 2, BLAS: "gonum"})
	if err != nil {
		t.Fatal(err)
	}
	d := 5 * time.Millisecond
	for _, c := range []struct {
		name   string
		rate   float64
		lo, hi float64
	}{
		{"layer products GFLOP/s", MeasureLayerGemm(b, 256, 64, 32, d), 0.1, 1e6},
		{"row gather GB/s", MeasureRowGather(b, 32, 4096, 1024, d), 0.01, 1e4},
		{"aggregation GB/s", MeasureAggregation(b, 32, 4096, 512, 10, d), 0.01, 1e4},
		{"in-order passes GB/s", MeasureStream(b, 1024, 64, d), 0.01, 1e4},
	} {
		if !(c.rate > c.lo && c.rate < c.hi) {
			t.Errorf("%s = %v, want within (%g, %g)", c.name, c.rate, c.lo, c.hi)
		}
	}
}
