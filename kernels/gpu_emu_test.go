//go:build cgo

package kernels

import (
	"context"
	"maps"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/gnnplan/gnnplan/kernels/internal/cudac"
)

// TestGPUKernelTable checks that the Go side's kernel table, the CUDA
// source's list and gp_args agree.
func TestGPUKernelTable(t *testing.T) {
	if got := cudac.Kernels(); !slices.Equal(got, kernelNames[:]) {
		t.Errorf("kernels.cu lists %v,\nkernelNames %v", got, kernelNames)
	}
	if n := unsafe.Sizeof(gpArgs{}); n != gpArgsBytes {
		t.Errorf("gpArgs is %d bytes, want %d", n, gpArgsBytes)
	}
}

// TestGPUBackendEmulated runs the backend suite every backend passes
// (float64 references, views, empty blocks) on the GPU backend with its
// kernels emulated on the CPU.
func TestGPUBackendEmulated(t *testing.T) {
	g, d := newEmuGPU(0)
	checkBackend(t, g)
	for k := range numKernels {
		if d.launches[k] == 0 {
			t.Errorf("the suite never launched %s", k)
		}
	}
}

// TestGPUBitsMatchCPU runs a GAT-like forward and backward pass plus the
// reductions and the loss on the CPU backend and on the GPU backend's
// kernels (emulated), and wants the same bits: the kernels sum in the
// CPU's order and fuse no multiply-add, and C's exp and log agree with
// Go's after rounding to float32 on these inputs.
func TestGPUBitsMatchCPU(t *testing.T) {
	if testing.Short() {
		t.Skip("large inputs; skipped with -short")
	}
	c, err := NewCPU(CPUOptions{Threads: 2, BLAS: "gonum"})
	if err != nil {
		t.Fatal(err)
	}
	g, _ := newEmuGPU(0)
	want := runDeterminismSequence(t, c)
	got := runDeterminismSequence(t, g)
	names := slices.Sorted(maps.Keys(want))
	for _, name := range names {
		w, o := want[name], got[name]
		if len(o) != len(w) {
			t.Errorf("%s: %d values on the GPU, %d on the CPU", name, len(o), len(w))
			continue
		}
		differ := 0
		for k := range w {
			if math.Float32bits(o[k]) != math.Float32bits(w[k]) {
				if differ == 0 {
					t.Errorf("%s: element %d is %g (%#x) on the GPU, %g (%#x) on the CPU", name, k, o[k], math.Float32bits(o[k]), w[k], math.Float32bits(w[k]))
				}
				differ++
			}
		}
		if differ > 0 {
			t.Errorf("%s: %d of %d elements differ", name, differ, len(w))
		}
	}
}

// TestLaunchGeometry checks that a launch covers any size with its
// grid-stride loop, never launches more than launchMaxGrid blocks, and
// launches nothing for nothing.
func TestLaunchGeometry(t *testing.T) {
	for _, total := range []int64{0, 1, 255, 256, 257, launchBlock * launchMaxGrid, launchBlock*launchMaxGrid + 1, 1 << 31, 1e12} {
		grid, block := launchGeometry(total)
		if total == 0 {
			if grid != 0 {
				t.Errorf("total 0: grid %d, want 0", grid)
			}
			continue
		}
		threads := int64(grid) * int64(block)
		if grid < 1 || grid > launchMaxGrid || block != launchBlock {
			t.Errorf("total %d: %d x %d threads", total, grid, block)
		}
		if threads > total+launchBlock-1 {
			t.Errorf("total %d: %d threads, more than a block beyond the work", total, threads)
		}
		if total >= launchBlock*launchMaxGrid && grid != launchMaxGrid {
			t.Errorf("total %d: grid %d, want the cap %d", total, grid, launchMaxGrid)
		}
	}
}

// TestGPUGridStride runs kernels over more elements than one launch has
// threads, so each thread's loop takes several turns, and wants the
// CPU's bits.
func TestGPUGridStride(t *testing.T) {
	if testing.Short() {
		t.Skip("large inputs; skipped with -short")
	}
	c, err := NewCPU(CPUOptions{Threads: 2, BLAS: "gonum"})
	if err != nil {
		t.Fatal(err)
	}
	g, _ := newEmuGPU(0)
	const rows, cols = 2100, 1024 // 2.15M elements: over 2 turns per thread
	rng := rand.New(rand.NewPCG(7, 8))
	x := make([]float32, rows*cols)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	blk := detBlock(rng, rows, rows)
	run := func(b Backend) map[string][]float32 {
		xm, ym := b.Wrap(rows, cols, x), b.NewMat(rows, cols)
		b.Copy(ym, xm)
		b.Scale(ym, 0.5)
		b.Axpy(2, xm, ym)
		seg := b.NewMat(rows, cols)
		b.SegmentMean(seg, xm, b.NewCSR(blk.off, blk.src, blk.numSrc))
		drop := b.NewMat(rows, cols)
		b.ActDropout(Activation{Kind: ReLU}, drop, xm, 0.5, 42)
		out := map[string][]float32{}
		for name, m := range map[string]*Mat{"copy, scale, axpy": ym, "segment mean": seg, "relu dropout": drop} {
			out[name] = make([]float32, m.Len())
			b.Download(out[name], m)
		}
		return out
	}
	want, got := run(c), run(g)
	for name, w := range want {
		if !slices.EqualFunc(got[name], w, func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }) {
			t.Errorf("%s over %d x %d: the GPU's bits differ from the CPU's", name, rows, cols)
		}
	}
}

// TestTransfer moves a matrix between backends every way the trainer's
// workers do (CPU and CPU, CPU and GPU, GPU and GPU) and wants the same
// values, one peer copy between two GPUs, and a column view copied by
// rows.
func TestTransfer(t *testing.T) {
	cpu, err := NewCPU(CPUOptions{Threads: 1, BLAS: "gonum"})
	if err != nil {
		t.Fatal(err)
	}
	g0, d0 := newEmuGPU(0)
	g1, d1 := newEmuGPU(1)
	vals := make([]float32, 6*5)
	for i := range vals {
		vals[i] = float32(i) - 7.5
	}
	view := make([]float32, 6*2) // columns 1 and 2
	for r := range 6 {
		view[2*r], view[2*r+1] = vals[5*r+1], vals[5*r+2]
	}
	tests := []struct {
		name   string
		db, sb Backend
		cols   [2]int // the source's columns
		peer   *emuDevice
	}{
		{"one CPU", cpu, cpu, [2]int{0, 5}, nil},
		{"CPU to GPU", g0, cpu, [2]int{0, 5}, nil},
		{"GPU to CPU", cpu, g0, [2]int{0, 5}, nil},
		{"GPU to GPU", g1, g0, [2]int{0, 5}, d1},
		{"one GPU", g0, g0, [2]int{0, 5}, nil},
		{"GPU column view to GPU", g0, g1, [2]int{1, 3}, nil},
	}
	var stage []float32
	for _, tc := range tests {
		src := tc.sb.Wrap(6, 5, vals).ColSlice(tc.cols[0], tc.cols[1])
		dst := tc.db.NewMat(1, 1)
		before := []int{d0.peer, d1.peer}
		stage = Transfer(tc.db, dst, tc.sb, src, stage)
		got := make([]float32, dst.Len())
		tc.db.Download(got, dst)
		want := vals
		if tc.cols[1]-tc.cols[0] == 2 {
			want = view
		}
		if dst.Rows != 6 || dst.Cols != tc.cols[1]-tc.cols[0] || !slices.Equal(got, want) {
			t.Errorf("%s: got %dx%d %v, want %v", tc.name, dst.Rows, dst.Cols, got, want)
		}
		peers := d0.peer - before[0] + d1.peer - before[1]
		if wantPeers := map[bool]int{true: 1, false: 0}[tc.peer != nil]; peers != wantPeers {
			t.Errorf("%s: %d peer copies, want %d", tc.name, peers, wantPeers)
		}
	}
}

// TestMeasureOnAGPU runs the profile's GPU measurements on an emulated
// GPU: copies from pinned and pageable memory and GEMM give rates, and
// the device says which GPU it is.
func TestMeasureOnAGPU(t *testing.T) {
	g, d := newEmuGPU(3)
	live := d.live
	pinned, pageable, err := g.MeasureCopy(1<<20, time.Millisecond)
	if err != nil || !(pinned > 0) || !(pageable > 0) {
		t.Errorf("MeasureCopy: %g, %g GB/s, %v", pinned, pageable, err)
	}
	if d.live != live {
		t.Errorf("MeasureCopy left %d device allocations", d.live-live)
	}
	if r := MeasureGemm(g, 64, 32, 16, time.Millisecond); !(r > 0) {
		t.Errorf("MeasureGemm: %g GFLOP/s", r)
	}
	if info := g.Info(); info.Ordinal != 3 || !strings.Contains(info.Name, "emulated") || !strings.Contains(g.Name(), "GPU 3") {
		t.Errorf("Info: %+v", info)
	}
}

// TestStaging fills a pinned staging buffer, uploads part of it and reads
// it back through the device matrix, twice (the second batch smaller),
// and refuses an upload beyond the buffer.
func TestStaging(t *testing.T) {
	g, d := newEmuGPU(0)
	s, err := g.NewStaging(120)
	if err != nil {
		t.Fatal(err)
	}
	for _, shape := range [][2]int{{5, 20}, {3, 7}} {
		h := s.Host()
		for i := range shape[0] * shape[1] {
			h[i] = float32(i*shape[0]) + 0.5
		}
		if err := s.Upload(context.Background(), shape[0], shape[1]); err != nil {
			t.Fatal(err)
		}
		m := s.Mat()
		got := make([]float32, m.Len())
		g.Download(got, m)
		s.Done()
		if m.Rows != shape[0] || m.Cols != shape[1] || !slices.Equal(got, h[:shape[0]*shape[1]]) {
			t.Errorf("%v: device matrix %dx%d %v", shape, m.Rows, m.Cols, got)
		}
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("an upload of 11 x 11 from 120 values did not panic")
			}
		}()
		_ = s.Upload(context.Background(), 11, 11)
	}()
	if d.live == 0 {
		t.Error("the staging's device matrix is not on the device")
	}
}

// TestGPUBufferSizing checks how the GPU backend sizes device memory: a
// matrix resized smaller keeps its allocation and one resized larger gets
// a new one with room to grow; a scratch buffer is reused while it is big
// enough; a view cannot be resized; nothing leaks once unreferenced.
func TestGPUBufferSizing(t *testing.T) {
	g, d := newEmuGPU(0)
	m := g.NewMat(100, 10)
	first := m.buf
	if first.bytes < 4*100*10 {
		t.Fatalf("100x10 matrix on %d bytes", first.bytes)
	}
	g.Resize(m, 50, 10)
	if m.buf != first {
		t.Error("shrinking a matrix reallocated it")
	}
	g.Resize(m, 200, 10)
	if m.buf == first || m.buf.bytes < 4*200*10 || m.buf.bytes > 4*200*10*9/8+4 {
		t.Errorf("growing to 200x10: %d bytes (want 8000 plus at most an eighth)", m.buf.bytes)
	}
	s := g.takeScratch(scratchLoss, 400)
	g.releaseScratch(scratchLoss)
	if s2 := g.takeScratch(scratchLoss, 100); s2 != s {
		t.Error("a smaller scratch request reallocated")
	}
	g.releaseScratch(scratchLoss)
	if s3 := g.takeScratch(scratchLoss, 4000); s3 == s || s3.bytes < 4000 {
		t.Errorf("a larger scratch request: %d bytes", s3.bytes)
	}
	g.releaseScratch(scratchLoss)
	func() {
		defer func() {
			if recover() == nil {
				t.Error("resizing a column view did not panic")
			}
		}()
		g.Resize(m.ColSlice(2, 5), 3, 3)
	}()
	live := d.live
	m, s = nil, nil
	for range 10 {
		runtime.GC()
		time.Sleep(time.Millisecond)
		d.mu.Lock()
		freed := d.live < live
		d.mu.Unlock()
		if freed {
			return
		}
	}
	t.Errorf("no allocation was freed after the matrix was dropped (%d live)", d.live)
}
