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
