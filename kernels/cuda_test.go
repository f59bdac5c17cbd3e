//go:build cuda

package kernels

import (
	"context"
	"math"
	"slices"
	"testing"
	"time"
)

// These run only in a build with the cuda tag, on a machine with an
// NVIDIA GPU (gorgonia.org/cu's init ends the process where the driver
// finds none): `go test -tags cuda -c ./kernels`, then run the binary
// there.

func newTestCUDA(t *testing.T) *GPU {
	t.Helper()
	g, err := NewCUDA(0)
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Logf("%s", g.Name())
	return g
}

// TestCUDABackend runs the suite every backend passes on the GPU.
func TestCUDABackend(t *testing.T) {
	checkBackend(t, newTestCUDA(t))
}

// TestCUDAAgreesWithCPU runs the GAT-like sequence on the GPU and on the
// CPU and reports how many elements differ in their bits, failing where
// one differs by more than float32 rounding allows (the kernels follow the
// CPU's order of operations; the GPU's exp and log may round the last bit
// differently from Go's).
func TestCUDAAgreesWithCPU(t *testing.T) {
	c, err := NewCPU(CPUOptions{Threads: 2, BLAS: "gonum"})
	if err != nil {
		t.Fatal(err)
	}
	want := runDeterminismSequence(t, c)
	got := runDeterminismSequence(t, newTestCUDA(t))
	for name, w := range want {
		o := got[name]
		differ, worst := 0, 0.0
		for k := range w {
			if math.Float32bits(o[k]) == math.Float32bits(w[k]) {
				continue
			}
			differ++
			rel := math.Abs(float64(o[k])-float64(w[k])) / max(math.Abs(float64(w[k])), 1e-6)
			worst = max(worst, rel)
		}
		t.Logf("%s: %d of %d elements differ in their bits (largest relative difference %.2g)", name, differ, len(w), worst)
		if worst > 1e-4 {
			t.Errorf("%s: relative difference %.2g from the CPU", name, worst)
		}
	}
}

// TestCUDAStagingAndPeers uploads through a staging buffer on the copy
// stream and reads it back, measures copies, and, on a machine with two
// or more GPUs, moves a matrix from GPU 0 to GPU 1 by a peer copy.
func TestCUDAStagingAndPeers(t *testing.T) {
	g := newTestCUDA(t)
	s, err := g.NewStaging(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	h := s.Host()
	for i := range h {
		h[i] = float32(i % 977)
	}
	if err := s.Upload(context.Background(), 1024, 1024); err != nil {
		t.Fatal(err)
	}
	got := make([]float32, 1<<20)
	g.Download(got, s.Mat())
	s.Done()
	for i := range got {
		if got[i] != h[i] {
			t.Fatalf("staged value %d: %g, want %g", i, got[i], h[i])
		}
	}
	pinned, pageable, err := g.MeasureCopy(256<<20, 200*time.Millisecond)
	t.Logf("host to device: %.1f GB/s pinned, %.1f GB/s pageable (%v)", pinned, pageable, err)
	n, err := CUDACount()
	if err != nil || n < 2 {
		t.Skipf("peer copies need two GPUs (%d, %v)", n, err)
	}
	gs, err := NewCUDAs([]int{0, 1})
	if err != nil {
		t.Fatal(err)
	}
	src := gs[0].Wrap(1024, 1024, h)
	dst := gs[1].NewMat(0, 0)
	Transfer(gs[1], dst, gs[0], src, nil)
	gs[1].Download(got, dst)
	if !slices.Equal(got, h) {
		t.Error("the peer copy from GPU 0 to GPU 1 changed the values")
	}
}
