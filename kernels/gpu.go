package kernels

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// device is what a GPU backend needs of one GPU: memory, copies, kernel
// launches and a GEMM. The CUDA build implements it on the driver API and
// cuBLAS (cuda.go); tests implement it on host memory, running the same
// CUDA C on the CPU (kernels/internal/cudac), so everything above the
// device boundary (arguments, geometry, grouping and transposes, the
// order of launches) is tested on machines without a GPU.
//
// Calls are ordered: a download sees every launch made before it.
type device interface {
	// name says which GPU, e.g. "NVIDIA H100 80GB HBM3 (sm_90, 79.1 GiB)".
	name() string
	// alloc returns bytes of device memory (not cleared), or an error when
	// the device has no room.
	alloc(bytes int) (uintptr, error)
	// free releases an allocation. It may be called from any goroutine.
	free(ptr uintptr)
	// upload copies bytes from host memory at src to the device at dst.
	upload(dst uintptr, src unsafe.Pointer, bytes int)
	// download copies bytes from the device at src to host memory at dst.
	download(dst unsafe.Pointer, src uintptr, bytes int)
	// launch runs kernel k on grid x block threads with args.
	launch(k kernelID, grid, block uint32, args *gpArgs)
	// sgemm is cublasSgemm on device pointers (column-major, alpha and
	// beta on the host).
	sgemm(g cublasGemm, alpha float32, a, b uintptr, beta float32, c uintptr)
	// hostAlloc returns bytes of page-locked host memory, which the GPU
	// copies from at the link's full rate; hostFree releases it.
	hostAlloc(bytes int) (unsafe.Pointer, error)
	hostFree(p unsafe.Pointer)
	// sync waits until every launch and copy queued so far has finished.
	sync()
	// newFence returns a fence for ordering an asynchronous copy before
	// the launches that read its data; freeFence releases it (from any
	// goroutine).
	newFence() (int, error)
	freeFence(f int)
	// uploadAsync queues a copy from page-locked host memory on the
	// device's copy stream, which runs beside the kernels: the copy waits
	// for fence after (set by signal; 0: none), and sets fence done when
	// it lands. The host does not wait.
	uploadAsync(dst uintptr, src unsafe.Pointer, bytes int, after, done int)
	// await makes every launch queued after it wait for fence f; signal
	// sets f once every launch queued before it has run. The host waits
	// for neither.
	await(f int)
	signal(f int)
	// info describes the GPU.
	info() GPUInfo
}

// GPUInfo is what the driver says of a GPU.
type GPUInfo struct {
	Ordinal int    `json:"ordinal"`
	Name    string `json:"name"`
	// MemoryBytes is the device memory in bytes.
	MemoryBytes int64 `json:"memory_bytes"`
	// PCIBusID is the GPU's PCI address, "0000:65:00.0" (empty when
	// emulated).
	PCIBusID string `json:"pci_bus_id,omitempty"`
	// ComputeCapability is "9.0" for an H100.
	ComputeCapability string `json:"compute_capability,omitempty"`
}

// devBuf is one device allocation; its cleanup frees it once no Mat or
// Index refers to it.
type devBuf struct {
	ptr   uintptr
	bytes int
}

// GPU is a Backend on one GPU: matrices in device memory, every kernel a
// launch of the CUDA C in internal/cudac/kernels.cu, GEMM in cuBLAS. Results match
// the CPU backend's: bitwise where the arithmetic has no exponential or
// logarithm (the kernels sum in the CPU's order and do not fuse
// multiply-adds), within float32 rounding elsewhere, and with GEMM
// within cuBLAS's rounding.
type GPU struct {
	dev device
	// scratch are device buffers that kernels' temporaries reuse from
	// call to call (a device allocation per batch would cost a driver
	// call and a synchronisation each), one per use, each locked while in
	// use: the backend may be called from several goroutines.
	scratch [numScratch]scratchBuf
}

// scratchSlot names one use of a scratch buffer.
type scratchSlot int

const (
	scratchPartial scratchSlot = iota // column sums' partial sums
	scratchLoss                       // per-row losses
	scratchHit                        // per-row hits
	scratchArgmax                     // per-row argmax
	scratchStart                      // ScatterAddRows' group starts
	scratchOrder                      // ScatterAddRows' group members
	numScratch
)

type scratchBuf struct {
	mu  sync.Mutex
	buf *devBuf
}

// takeScratch locks slot s and returns its buffer, grown to at least
// bytes; releaseScratch unlocks it.
func (g *GPU) takeScratch(s scratchSlot, bytes int) *devBuf {
	sb := &g.scratch[s]
	sb.mu.Lock()
	if sb.buf == nil || sb.buf.bytes < bytes {
		sb.buf = g.allocBuf(bytes + bytes/4)
	}
	return sb.buf
}

func (g *GPU) releaseScratch(s scratchSlot) { g.scratch[s].mu.Unlock() }

// newGPU returns a backend on dev.
func newGPU(dev device) *GPU { return &GPU{dev: dev} }

// Name implements Backend.
func (g *GPU) Name() string { return "cuda: " + g.dev.name() }

// Threads implements Backend: the GPU runs one stream of kernels.
func (g *GPU) Threads() int { return 1 }

// allocBuf returns a device buffer of at least bytes (at least 4, so a
// buffer always has an address).
func (g *GPU) allocBuf(bytes int) *devBuf {
	bytes = max(bytes, 4)
	ptr, err := g.dev.alloc(bytes)
	if err != nil {
		panic(&DeviceError{Device: g.dev.name(), Op: fmt.Sprintf("allocating %.1f MiB", float64(bytes)/(1<<20)), Err: err})
	}
	b := &devBuf{ptr: ptr, bytes: bytes}
	dev := g.dev
	runtime.AddCleanup(b, func(p uintptr) { dev.free(p) }, ptr)
	return b
}

// NewMat implements Backend.
func (g *GPU) NewMat(rows, cols int) *Mat {
	m := &Mat{}
	g.Resize(m, rows, cols)
	g.Zero(m)
	return m
}

// Resize implements Backend.
func (g *GPU) Resize(m *Mat, rows, cols int) {
	checkDims(rows, cols)
	if m.Stride != m.Cols && m.Rows > 1 {
		panic("kernels: Resize of a view")
	}
	need := 4 * rows * cols
	if m.buf == nil || m.buf.bytes < need || m.d != m.buf.ptr {
		m.buf = g.allocBuf(need + need/8)
		m.d = m.buf.ptr
	}
	m.Rows, m.Cols, m.Stride = rows, cols, cols
}

// Upload implements Backend.
func (g *GPU) Upload(m *Mat, rows, cols int, src []float32) {
	defer keepAlive(m)
	if len(src) != rows*cols {
		panic(fmt.Sprintf("kernels: Upload of %d values into %dx%d", len(src), rows, cols))
	}
	g.Resize(m, rows, cols)
	if len(src) > 0 {
		g.dev.upload(m.d, unsafe.Pointer(&src[0]), 4*len(src))
	}
	runtime.KeepAlive(src)
}

// Download implements Backend.
func (g *GPU) Download(dst []float32, m *Mat) {
	defer keepAlive(m)
	if len(dst) < m.Len() {
		panic(fmt.Sprintf("kernels: Download of %dx%d into %d values", m.Rows, m.Cols, len(dst)))
	}
	if m.Len() == 0 {
		return
	}
	if m.Contiguous() {
		g.dev.download(unsafe.Pointer(&dst[0]), m.d, 4*m.Len())
	} else {
		for r := range m.Rows {
			g.dev.download(unsafe.Pointer(&dst[r*m.Cols]), m.d+uintptr(4*r*m.Stride), 4*m.Cols)
		}
	}
	runtime.KeepAlive(dst)
}

// Wrap implements Backend: a device backend copies data.
func (g *GPU) Wrap(rows, cols int, data []float32) *Mat {
	checkDims(rows, cols)
	if len(data) < rows*cols {
		panic(fmt.Sprintf("kernels: Wrap of %d values as %dx%d", len(data), rows, cols))
	}
	m := &Mat{}
	g.Upload(m, rows, cols, data[:rows*cols])
	return m
}

// keepAlive keeps the operands of a launch or copy reachable until it
// has been issued: a kernel gets raw device addresses, and an operand the
// caller no longer refers to could otherwise have its memory freed by its
// cleanup while the kernel runs.
func keepAlive(xs ...any) { runtime.KeepAlive(xs) }

// run launches k over total items.
func (g *GPU) run(k kernelID, total int64, a *gpArgs) {
	grid, block := launchGeometry(total)
	if grid == 0 {
		return
	}
	g.dev.launch(k, grid, block, a)
}

func ptr(m *Mat) uint64 { return uint64(m.d) }

// Zero implements Backend.
func (g *GPU) Zero(m *Mat) {
	defer keepAlive(m)
	a := gpArgs{P: [8]uint64{ptr(m)}, N: [8]int64{int64(m.Rows), int64(m.Cols), int64(m.Stride)}}
	g.run(kFill, int64(m.Len()), &a)
}

// Copy implements Backend.
func (g *GPU) Copy(dst, src *Mat) {
	defer keepAlive(dst, src)
	sameShape("Copy", dst, src)
	a := gpArgs{P: [8]uint64{ptr(dst), ptr(src)}, N: [8]int64{int64(dst.Rows), int64(dst.Cols), int64(dst.Stride), int64(src.Stride)}}
	g.run(kCopy, int64(dst.Len()), &a)
}

// NewIndex implements Backend: the values are copied to the device, and
// kept on the host too.
func (g *GPU) NewIndex(v []int32) *Index {
	x := &Index{N: len(v), h: v}
	x.buf = g.allocBuf(4 * len(v))
	x.d = x.buf.ptr
	if len(v) > 0 {
		g.dev.upload(x.d, unsafe.Pointer(&v[0]), 4*len(v))
	}
	return x
}

// gpuTranspose is a CSR by source on the device (see cpuTranspose).
type gpuTranspose struct {
	start, edge, dst *Index
}

// NewCSR implements Backend.
func (g *GPU) NewCSR(offsets, srcIdx []int32, numSrc int) *CSR {
	if len(offsets) < 1 || offsets[0] != 0 || int(offsets[len(offsets)-1]) != len(srcIdx) {
		panic(fmt.Sprintf("kernels: CSR offsets must run from 0 to %d", len(srcIdx)))
	}
	return &CSR{NumDst: len(offsets) - 1, NumSrc: numSrc, NumEdges: len(srcIdx),
		offsets: g.NewIndex(offsets), srcIdx: g.NewIndex(srcIdx)}
}

// transpose returns g's transpose on the device, built on the host on
// first use with the CPU backend's stable counting sort.
func (g *GPU) transpose(b *CSR) *gpuTranspose {
	if t, ok := b.t.(*gpuTranspose); ok {
		return t
	}
	ct := (&CPU{}).transpose(&CSR{NumDst: b.NumDst, NumSrc: b.NumSrc, NumEdges: b.NumEdges, offsets: b.offsets, srcIdx: b.srcIdx})
	t := &gpuTranspose{start: g.NewIndex(ct.start), edge: g.NewIndex(ct.edge), dst: g.NewIndex(ct.dst)}
	b.t = t
	return t
}

// Gemm implements Backend.
func (g *GPU) Gemm(transA, transB bool, alpha float32, a, b *Mat, beta float32, cm *Mat) {
	defer keepAlive(a, b, cm)
	m, n, k := gemmDims(transA, transB, a, b, cm)
	if gemmEmpty(g, m, n, k, beta, cm) {
		return
	}
	c := rowMajorToCublas(transA, transB, m, n, k, a.Stride, b.Stride, cm.Stride)
	g.dev.sgemm(c, alpha, b.d, a.d, beta, cm.d)
}

// GatherRows implements Backend.
func (g *GPU) GatherRows(dst, src *Mat, idx *Index) {
	defer keepAlive(dst, src, idx)
	if dst.Rows != idx.N || dst.Cols != src.Cols {
		panic(fmt.Sprintf("kernels: GatherRows of %d rows of %d columns into %dx%d", idx.N, src.Cols, dst.Rows, dst.Cols))
	}
	a := gpArgs{P: [8]uint64{ptr(dst), ptr(src), uint64(idx.d)},
		N: [8]int64{int64(dst.Rows), int64(dst.Cols), int64(dst.Stride), int64(src.Stride)}}
	g.run(kGatherRows, int64(dst.Len()), &a)
}

// GatherRowsTwo implements Backend.
func (g *GPU) GatherRowsTwo(dst, a, b *Mat, idx *Index) {
	defer keepAlive(dst, a, b, idx)
	checkGatherTwo(dst, a, b, idx)
	args := gpArgs{P: [8]uint64{ptr(dst), ptr(a), ptr(b), uint64(idx.d)},
		N: [8]int64{int64(dst.Rows), int64(dst.Cols), int64(dst.Stride), int64(a.Stride), int64(b.Stride)}}
	g.run(kGatherRowsTwo, int64(dst.Len()), &args)
}

// ScatterAddRows implements Backend: the rows landing on one dst row are
// grouped on the host (in idx order), then each dst row sums its group.
func (g *GPU) ScatterAddRows(dst, src *Mat, idx *Index) {
	defer keepAlive(dst, src, idx)
	if src.Rows != idx.N || dst.Cols != src.Cols {
		panic(fmt.Sprintf("kernels: ScatterAddRows of %dx%d by %d indices into %dx%d", src.Rows, src.Cols, idx.N, dst.Rows, dst.Cols))
	}
	start, order := groupByTarget(idx.h, dst.Rows)
	st, or := g.takeScratch(scratchStart, 4*len(start)), g.takeScratch(scratchOrder, 4*len(order))
	defer g.releaseScratch(scratchStart)
	defer g.releaseScratch(scratchOrder)
	g.dev.upload(st.ptr, unsafe.Pointer(&start[0]), 4*len(start))
	if len(order) > 0 {
		g.dev.upload(or.ptr, unsafe.Pointer(&order[0]), 4*len(order))
	}
	a := gpArgs{P: [8]uint64{ptr(dst), ptr(src), uint64(st.ptr), uint64(or.ptr)},
		N: [8]int64{int64(dst.Rows), int64(dst.Cols), int64(dst.Stride), int64(src.Stride)}}
	g.run(kScatterAddRows, int64(dst.Len()), &a)
}

// SegmentMean implements Backend.
func (g *GPU) SegmentMean(out, x *Mat, b *CSR) {
	defer keepAlive(out, x, b)
	checkCSR("SegmentMean", b, out.Rows, x.Rows)
	if out.Cols != x.Cols {
		panic(fmt.Sprintf("kernels: SegmentMean of %d columns into %d", x.Cols, out.Cols))
	}
	a := gpArgs{P: [8]uint64{ptr(out), ptr(x), uint64(b.offsets.d), uint64(b.srcIdx.d)},
		N: [8]int64{int64(out.Rows), int64(out.Cols), int64(out.Stride), int64(x.Stride)}}
	g.run(kSegmentMean, int64(out.Len()), &a)
}

// SegmentMeanBackward implements Backend.
func (g *GPU) SegmentMeanBackward(dx, dout *Mat, b *CSR) {
	defer keepAlive(dx, dout, b)
	checkCSR("SegmentMeanBackward", b, dout.Rows, dx.Rows)
	t := g.transpose(b)
	a := gpArgs{P: [8]uint64{ptr(dx), ptr(dout), uint64(t.start.d), uint64(t.dst.d), uint64(b.offsets.d)},
		N: [8]int64{int64(dx.Rows), int64(dx.Cols), int64(dx.Stride), int64(dout.Stride)}}
	g.run(kSegmentMeanBackward, int64(dx.Len()), &a)
}

// WeightedSum implements Backend.
func (g *GPU) WeightedSum(out, x, w *Mat, b *CSR) {
	defer keepAlive(out, x, w, b)
	F := checkWeightedSum(out, x, w, b)
	a := gpArgs{P: [8]uint64{ptr(out), ptr(x), ptr(w), uint64(b.offsets.d), uint64(b.srcIdx.d)},
		N: [8]int64{int64(out.Rows), int64(out.Cols), int64(F), int64(out.Stride), int64(x.Stride), int64(w.Stride)}}
	g.run(kWeightedSum, int64(out.Len()), &a)
}

// WeightedSumBackward implements Backend.
func (g *GPU) WeightedSumBackward(dx, dout, w *Mat, b *CSR) {
	defer keepAlive(dx, dout, w, b)
	checkCSR("WeightedSumBackward", b, dout.Rows, dx.Rows)
	F := heads("WeightedSumBackward", dx.Cols, w.Cols)
	t := g.transpose(b)
	a := gpArgs{P: [8]uint64{ptr(dx), ptr(dout), ptr(w), uint64(t.start.d), uint64(t.edge.d), uint64(t.dst.d)},
		N: [8]int64{int64(dx.Rows), int64(dx.Cols), int64(F), int64(dx.Stride), int64(dout.Stride), int64(w.Stride)}}
	g.run(kWeightedSumBackward, int64(dx.Len()), &a)
}

// EdgeDot implements Backend.
func (g *GPU) EdgeDot(s, am, bm *Mat, b *CSR) {
	defer keepAlive(s, am, bm, b)
	checkCSR("EdgeDot", b, am.Rows, bm.Rows)
	H := s.Cols
	F := heads("EdgeDot", am.Cols, H)
	if s.Rows != b.NumEdges || bm.Cols != am.Cols {
		panic(fmt.Sprintf("kernels: EdgeDot of %dx%d and %dx%d into %dx%d", am.Rows, am.Cols, bm.Rows, bm.Cols, s.Rows, s.Cols))
	}
	a := gpArgs{P: [8]uint64{ptr(s), ptr(am), ptr(bm), uint64(b.offsets.d), uint64(b.srcIdx.d)},
		N: [8]int64{int64(b.NumDst), int64(H), int64(F), int64(s.Stride), int64(am.Stride), int64(bm.Stride)}}
	g.run(kEdgeDot, int64(b.NumDst)*int64(H), &a)
}

// HeadDot implements Backend.
func (g *GPU) HeadDot(out, x, v *Mat) {
	defer keepAlive(out, x, v)
	H := out.Cols
	F := heads("HeadDot", x.Cols, H)
	if out.Rows != x.Rows || v.Rows != 1 || v.Cols != x.Cols {
		panic(fmt.Sprintf("kernels: HeadDot of %dx%d with %dx%d into %dx%d", x.Rows, x.Cols, v.Rows, v.Cols, out.Rows, out.Cols))
	}
	a := gpArgs{P: [8]uint64{ptr(out), ptr(x), ptr(v)},
		N: [8]int64{int64(x.Rows), int64(H), int64(F), int64(out.Stride), int64(x.Stride)}}
	g.run(kHeadDot, int64(x.Rows)*int64(H), &a)
}

// HeadDotBackward implements Backend.
func (g *GPU) HeadDotBackward(dx, da, dout, x, v *Mat) {
	defer keepAlive(dx, da, dout, x, v)
	H := dout.Cols
	F := heads("HeadDotBackward", x.Cols, H)
	if dx != nil {
		a := gpArgs{P: [8]uint64{ptr(dx), ptr(dout), ptr(v)},
			N: [8]int64{int64(x.Rows), int64(x.Cols), int64(F), int64(dx.Stride), int64(dout.Stride)}}
		g.run(kHeadDotBackwardDx, int64(x.Len()), &a)
	}
	if da != nil {
		g.columnSums(da, x, dout, F, 1)
	}
}

// columnSums sets out (1 x C) to beta*out plus the column sums of m, each
// term weighted by w[r, c/F] when w is not nil, in the CPU's chunks.
func (g *GPU) columnSums(out, m, w *Mat, F int, beta float32) {
	defer keepAlive(out, m, w)
	chunks := reduceChunks(m.Rows)
	partial := g.takeScratch(scratchPartial, 4*chunks*m.Cols)
	defer g.releaseScratch(scratchPartial)
	a := gpArgs{P: [8]uint64{uint64(partial.ptr), ptr(m)},
		N: [8]int64{int64(m.Rows), int64(m.Cols), int64(m.Stride), 0, int64(F)}}
	if w != nil {
		a.P[2], a.N[3] = ptr(w), int64(w.Stride)
	}
	g.run(kColumnPartials, int64(chunks)*int64(m.Cols), &a)
	f := gpArgs{P: [8]uint64{ptr(out), uint64(partial.ptr)}, N: [8]int64{int64(m.Cols), int64(chunks)}, F: [8]float64{float64(beta)}}
	g.run(kAddPartials, int64(m.Cols), &f)
}

// EdgeAdd implements Backend.
func (g *GPU) EdgeAdd(s, el, er *Mat, b *CSR) {
	defer keepAlive(s, el, er, b)
	checkCSR("EdgeAdd", b, er.Rows, el.Rows)
	H := s.Cols
	if s.Rows != b.NumEdges || el.Cols != H || er.Cols != H {
		panic(fmt.Sprintf("kernels: EdgeAdd of %dx%d and %dx%d into %dx%d", el.Rows, el.Cols, er.Rows, er.Cols, s.Rows, s.Cols))
	}
	a := gpArgs{P: [8]uint64{ptr(s), ptr(el), ptr(er), uint64(b.offsets.d), uint64(b.srcIdx.d)},
		N: [8]int64{int64(b.NumDst), int64(H), int64(s.Stride), int64(el.Stride), int64(er.Stride)}}
	g.run(kEdgeAdd, int64(b.NumDst)*int64(H), &a)
}

// EdgeAddBackward implements Backend.
func (g *GPU) EdgeAddBackward(del, der, ds *Mat, b *CSR) {
	defer keepAlive(del, der, ds, b)
	H := ds.Cols
	if der != nil {
		checkCSR("EdgeAddBackward", b, der.Rows, b.NumSrc)
		a := gpArgs{P: [8]uint64{ptr(der), ptr(ds), uint64(b.offsets.d)},
			N: [8]int64{int64(b.NumDst), int64(H), int64(der.Stride), int64(ds.Stride)}}
		g.run(kEdgeAddBackwardDst, int64(b.NumDst)*int64(H), &a)
	}
	if del != nil {
		checkCSR("EdgeAddBackward", b, b.NumDst, del.Rows)
		t := g.transpose(b)
		a := gpArgs{P: [8]uint64{ptr(del), ptr(ds), uint64(t.start.d), uint64(t.edge.d)},
			N: [8]int64{int64(b.NumSrc), int64(H), int64(del.Stride), int64(ds.Stride)}}
		g.run(kEdgeAddBackwardSrc, int64(b.NumSrc)*int64(H), &a)
	}
}

// EdgeSoftmax implements Backend.
func (g *GPU) EdgeSoftmax(am, e *Mat, b *CSR) {
	defer keepAlive(am, e, b)
	sameShape("EdgeSoftmax", am, e)
	if e.Rows != b.NumEdges {
		panic(fmt.Sprintf("kernels: EdgeSoftmax of %d edge rows over a block of %d edges", e.Rows, b.NumEdges))
	}
	a := gpArgs{P: [8]uint64{ptr(am), ptr(e), uint64(b.offsets.d)},
		N: [8]int64{int64(b.NumDst), int64(e.Cols), int64(am.Stride), int64(e.Stride)}}
	g.run(kEdgeSoftmax, int64(b.NumDst)*int64(e.Cols), &a)
}

// EdgeSoftmaxBackward implements Backend.
func (g *GPU) EdgeSoftmaxBackward(de, da, am *Mat, b *CSR) {
	defer keepAlive(de, da, am, b)
	sameShape("EdgeSoftmaxBackward", de, da)
	sameShape("EdgeSoftmaxBackward", de, am)
	a := gpArgs{P: [8]uint64{ptr(de), ptr(da), ptr(am), uint64(b.offsets.d)},
		N: [8]int64{int64(b.NumDst), int64(am.Cols), int64(de.Stride), int64(da.Stride), int64(am.Stride)}}
	g.run(kEdgeSoftmaxBackward, int64(b.NumDst)*int64(am.Cols), &a)
}

// HeadMean implements Backend.
func (g *GPU) HeadMean(out, x *Mat) {
	defer keepAlive(out, x)
	if out.Rows != x.Rows || out.Cols == 0 || x.Cols%out.Cols != 0 {
		panic(fmt.Sprintf("kernels: HeadMean of %dx%d into %dx%d", x.Rows, x.Cols, out.Rows, out.Cols))
	}
	a := gpArgs{P: [8]uint64{ptr(out), ptr(x)},
		N: [8]int64{int64(x.Rows), int64(out.Cols), int64(x.Cols / out.Cols), int64(out.Stride), int64(x.Stride)}}
	g.run(kHeadMean, int64(out.Len()), &a)
}

// HeadMeanBackward implements Backend.
func (g *GPU) HeadMeanBackward(dx, dout *Mat) {
	defer keepAlive(dx, dout)
	if dout.Rows != dx.Rows || dout.Cols == 0 || dx.Cols%dout.Cols != 0 {
		panic(fmt.Sprintf("kernels: HeadMeanBackward of %dx%d into %dx%d", dout.Rows, dout.Cols, dx.Rows, dx.Cols))
	}
	a := gpArgs{P: [8]uint64{ptr(dx), ptr(dout)},
		N: [8]int64{int64(dx.Rows), int64(dout.Cols), int64(dx.Cols / dout.Cols), int64(dx.Stride), int64(dout.Stride)}}
	g.run(kHeadMeanBackward, int64(dx.Len()), &a)
}

// AddBias implements Backend.
func (g *GPU) AddBias(m, bias *Mat) {
	defer keepAlive(m, bias)
	if bias.Rows != 1 || bias.Cols != m.Cols {
		panic(fmt.Sprintf("kernels: AddBias of %dx%d to %dx%d", bias.Rows, bias.Cols, m.Rows, m.Cols))
	}
	a := gpArgs{P: [8]uint64{ptr(m), ptr(bias)}, N: [8]int64{int64(m.Rows), int64(m.Cols), int64(m.Stride)}}
	g.run(kAddBias, int64(m.Len()), &a)
}

// SumRows implements Backend.
func (g *GPU) SumRows(out, m *Mat, beta float32) {
	defer keepAlive(out, m)
	if out.Rows != 1 || out.Cols != m.Cols {
		panic(fmt.Sprintf("kernels: SumRows of %dx%d into %dx%d", m.Rows, m.Cols, out.Rows, out.Cols))
	}
	g.columnSums(out, m, nil, 1, beta)
}

// Axpy implements Backend.
func (g *GPU) Axpy(alpha float32, x, y *Mat) {
	defer keepAlive(x, y)
	sameShape("Axpy", x, y)
	a := gpArgs{P: [8]uint64{ptr(y), ptr(x)}, N: [8]int64{int64(y.Rows), int64(y.Cols), int64(y.Stride), int64(x.Stride)},
		F: [8]float64{float64(alpha)}}
	g.run(kAxpy, int64(y.Len()), &a)
}

// Scale implements Backend.
func (g *GPU) Scale(m *Mat, alpha float32) {
	defer keepAlive(m)
	if alpha == 0 {
		g.Zero(m)
		return
	}
	a := gpArgs{P: [8]uint64{ptr(m)}, N: [8]int64{int64(m.Rows), int64(m.Cols), int64(m.Stride)}, F: [8]float64{float64(alpha)}}
	g.run(kScale, int64(m.Len()), &a)
}

// actDropout launches gp_act_dropout: f, then dropout when threshold > 0.
func (g *GPU) actDropout(f Activation, y, x *Mat, p float32, seed uint64) {
	defer keepAlive(y, x)
	checkAct(f)
	th, s, scale := dropArgs(p, seed)
	a := gpArgs{P: [8]uint64{ptr(y), ptr(x)},
		N: [8]int64{int64(y.Rows), int64(y.Cols), int64(y.Stride), int64(x.Stride), int64(f.Kind), th, s},
		F: [8]float64{float64(f.Slope), scale}}
	g.run(kActDropout, int64(y.Len()), &a)
}

func checkAct(f Activation) {
	if f.Kind > ELU {
		panic("kernels: unknown activation " + f.Kind.String())
	}
}

// Act implements Backend.
func (g *GPU) Act(f Activation, y, x *Mat) {
	defer keepAlive(y, x)
	sameShape("Act", y, x)
	g.actDropout(f, y, x, 0, 0)
}

// ActBackward implements Backend.
func (g *GPU) ActBackward(f Activation, dx, dy, x, y *Mat) {
	defer keepAlive(dx, dy, x, y)
	sameShape("ActBackward", dx, dy)
	checkAct(f)
	ys := int64(0)
	yp := uint64(0)
	if y != nil {
		ys, yp = int64(y.Stride), ptr(y)
	}
	a := gpArgs{P: [8]uint64{ptr(dx), ptr(dy), ptr(x), yp},
		N: [8]int64{int64(dx.Rows), int64(dx.Cols), int64(dx.Stride), int64(dy.Stride), int64(x.Stride), ys, int64(f.Kind)},
		F: [8]float64{float64(f.Slope)}}
	g.run(kActBackward, int64(dx.Len()), &a)
}

// ActDropout implements Backend.
func (g *GPU) ActDropout(f Activation, y, x *Mat, p float32, seed uint64) {
	defer keepAlive(y, x)
	sameShape("ActDropout", y, x)
	g.actDropout(f, y, x, p, seed)
}

// ActDropoutBackward implements Backend.
func (g *GPU) ActDropoutBackward(f Activation, dx, dy, y *Mat, p float32, seed uint64) {
	defer keepAlive(dx, dy, y)
	sameShape("ActDropoutBackward", dx, dy)
	sameShape("ActDropoutBackward", dx, y)
	checkAct(f)
	th, s, scale := dropArgs(p, seed)
	a := gpArgs{P: [8]uint64{ptr(dx), ptr(dy), ptr(y)},
		N: [8]int64{int64(dx.Rows), int64(dx.Cols), int64(dx.Stride), int64(dy.Stride), int64(y.Stride), int64(f.Kind), th, s},
		F: [8]float64{float64(f.Slope), scale}}
	g.run(kActDropoutBackward, int64(dx.Len()), &a)
}

// Dropout implements Backend.
func (g *GPU) Dropout(y, x *Mat, p float32, seed uint64) {
	defer keepAlive(y, x)
	sameShape("Dropout", y, x)
	g.actDropout(Activation{Kind: Identity}, y, x, p, seed)
}

// DropoutBackward implements Backend.
func (g *GPU) DropoutBackward(dx, dy *Mat, p float32, seed uint64) {
	defer keepAlive(dx, dy)
	sameShape("Dropout", dx, dy)
	g.actDropout(Activation{Kind: Identity}, dx, dy, p, seed)
}

// SoftmaxCrossEntropy implements Backend: per-row losses and hits on the
// device, summed on the host in row order as the CPU backend sums them.
func (g *GPU) SoftmaxCrossEntropy(dlogits, logits *Mat, labels *Index, scale float32) (float64, int) {
	defer keepAlive(dlogits, logits, labels)
	if labels.N != logits.Rows {
		panic(fmt.Sprintf("kernels: SoftmaxCrossEntropy of %d rows with %d labels", logits.Rows, labels.N))
	}
	rows := logits.Rows
	if rows == 0 {
		return 0, 0
	}
	lossBuf, hitBuf := g.takeScratch(scratchLoss, 8*rows), g.takeScratch(scratchHit, 4*rows)
	defer g.releaseScratch(scratchLoss)
	defer g.releaseScratch(scratchHit)
	a := gpArgs{P: [8]uint64{0, ptr(logits), uint64(labels.d), uint64(lossBuf.ptr), uint64(hitBuf.ptr)},
		N: [8]int64{int64(rows), int64(logits.Cols), 0, int64(logits.Stride)}, F: [8]float64{float64(scale)}}
	if dlogits != nil {
		sameShape("SoftmaxCrossEntropy", dlogits, logits)
		a.P[0], a.N[2] = ptr(dlogits), int64(dlogits.Stride)
	}
	g.run(kSoftmaxXent, int64(rows), &a)
	loss := make([]float64, rows)
	hit := make([]int32, rows)
	g.dev.download(unsafe.Pointer(&loss[0]), lossBuf.ptr, 8*rows)
	g.dev.download(unsafe.Pointer(&hit[0]), hitBuf.ptr, 4*rows)
	var sum float64
	correct := 0
	for r := range rows {
		sum += loss[r]
		correct += int(hit[r])
	}
	return sum, correct
}

// Argmax implements Backend.
func (g *GPU) Argmax(dst []int32, m *Mat) {
	defer keepAlive(m)
	if len(dst) < m.Rows {
		panic(fmt.Sprintf("kernels: Argmax of %d rows into %d", m.Rows, len(dst)))
	}
	if m.Rows == 0 {
		return
	}
	out := g.takeScratch(scratchArgmax, 4*m.Rows)
	defer g.releaseScratch(scratchArgmax)
	a := gpArgs{P: [8]uint64{uint64(out.ptr), ptr(m)}, N: [8]int64{int64(m.Rows), int64(m.Cols), int64(m.Stride)}}
	g.run(kArgmax, int64(m.Rows), &a)
	g.dev.download(unsafe.Pointer(&dst[0]), out.ptr, 4*m.Rows)
}

// Adam implements Backend.
func (g *GPU) Adam(p, gr, m, v *Mat, o AdamStep) {
	defer keepAlive(p, gr, m, v)
	checkAdam(p, gr, m, v, o)
	step, bc2sqrt := adamArgs(o)
	a := gpArgs{P: [8]uint64{ptr(p), ptr(gr), ptr(m), ptr(v)},
		N: [8]int64{int64(p.Rows), int64(p.Cols), int64(p.Stride), int64(gr.Stride), int64(m.Stride), int64(v.Stride)},
		F: [8]float64{float64(step), float64(bc2sqrt), float64(o.Beta1), float64(o.Beta2), float64(o.WeightDecay), float64(o.Eps)}}
	g.run(kAdam, int64(p.Len()), &a)
}

var _ Backend = (*GPU)(nil)

// Info returns what the driver says of the GPU.
func (g *GPU) Info() GPUInfo { return g.dev.info() }

// Sync waits until the GPU has finished everything queued on it.
func (g *GPU) Sync() { g.dev.sync() }

// MeasureCopy times copies of bytes from host memory to the GPU for about
// d each way it can: from page-locked (pinned) memory, how staging buffers
// feed the GPU, and from ordinary pageable memory, which the driver
// stages through its own pinned buffer. It returns both rates in GB/s
// (decimal), the host-to-device bandwidth the TPC model's PCIe link is.
func (g *GPU) MeasureCopy(bytes int, d time.Duration) (pinnedGBps, pageableGBps float64, err error) {
	dst, err := g.dev.alloc(bytes)
	if err != nil {
		return 0, 0, fmt.Errorf("%s: %w", g.dev.name(), err)
	}
	defer g.dev.free(dst)
	pinned, err := g.dev.hostAlloc(bytes)
	if err != nil {
		return 0, 0, fmt.Errorf("%s: pinned host memory: %w", g.dev.name(), err)
	}
	defer g.dev.hostFree(pinned)
	pageable := make([]byte, bytes)
	rate := func(src unsafe.Pointer) float64 {
		g.dev.upload(dst, src, bytes) // untimed: first-touch and mapping costs
		g.dev.sync()
		n := 0
		start := time.Now()
		for n == 0 || time.Since(start) < d {
			g.dev.upload(dst, src, bytes)
			n++
		}
		g.dev.sync()
		return float64(bytes) * float64(n) / time.Since(start).Seconds() / 1e9
	}
	pinnedGBps = rate(pinned)
	pageableGBps = rate(unsafe.Pointer(&pageable[0]))
	runtime.KeepAlive(pageable)
	return pinnedGBps, pageableGBps, nil
}

// ErrNoCUDA is every CUDA entry point's error in a build without the
// cuda tag: the CUDA backend needs the driver API binding, which links
// only with -tags cuda (see `make cuda-check`).
var ErrNoCUDA = errors.New("this gnnplan was built without CUDA: build it with -tags cuda (README: GPUs)")

// DeviceError is a device's failure: no room for an allocation, a failed
// launch, copy or GEMM. The Backend interface has no error returns (a
// kernel call cannot fail on the CPU), so a GPU backend panics with one;
// the trainer recovers it and returns it. After one the device may be
// unusable.
type DeviceError struct {
	Device string // the device's name
	Op     string // what failed, e.g. "allocating 512.0 MiB of GPU memory"
	Err    error
}

func (e *DeviceError) Error() string { return e.Device + ": " + e.Op + ": " + e.Err.Error() }

func (e *DeviceError) Unwrap() error { return e.Err }

// StagingRing is a ring of device matrices that the Stagings made on it
// (NewStaging) upload into in turn. A pipeline that gathers several
// batches ahead keeps as many pinned host buffers, but the GPU holds only
// as many device copies as the ring has slots: two are enough for one
// batch the kernels read and the next one's copy. Each slot has a fence
// that Done records after the kernels reading it and the slot's next
// upload waits for on the GPU, and a token on the host: Upload takes a
// free slot, waiting until a Staging holding one calls Done, and Done
// gives it back after recording the fence, so the next upload into a slot
// is queued after the kernels that read it. A Staging that holds a slot
// and is dropped without Done keeps it from every other: whoever drops
// an uploaded batch calls Done (it is idempotent).
type StagingRing struct {
	g     *GPU
	slots chan *ringSlot // the free ones
}

// ringSlot is one device matrix of a ring and its fence: set once the
// kernels queued before the last Done that gave the slot back have run.
type ringSlot struct {
	dev  *Mat
	free int
}

// NewStagingRing returns a ring of slots (at least 1) device matrices,
// each grown as the uploads into it need.
func (g *GPU) NewStagingRing(slots int) (*StagingRing, error) {
	r := &StagingRing{g: g, slots: make(chan *ringSlot, max(slots, 1))}
	fences := make([]int, 0, cap(r.slots))
	for range cap(r.slots) {
		f, err := g.dev.newFence()
		if err != nil {
			for _, f := range fences {
				g.dev.freeFence(f)
			}
			return nil, fmt.Errorf("%s: %w", g.dev.name(), err)
		}
		fences = append(fences, f)
		r.slots <- &ringSlot{dev: &Mat{}, free: f}
	}
	dev := g.dev
	runtime.AddCleanup(r, func(fences []int) {
		for _, f := range fences {
			dev.freeFence(f)
		}
	}, fences)
	return r, nil
}

// take returns a free slot, waiting for one until ctx ends; a free slot
// is taken even when ctx has ended.
func (r *StagingRing) take(ctx context.Context) (*ringSlot, error) {
	select {
	case sl := <-r.slots:
		return sl, nil
	default:
	}
	select {
	case sl := <-r.slots:
		return sl, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("%s: waiting for a free staging slot: %w", r.g.dev.name(), context.Cause(ctx))
	}
}

// Staging is a page-locked host buffer whose contents Upload copies to a
// device matrix on the GPU's copy stream: a batch's rows gathered into
// Host are uploaded while the GPU computes the batch before, the first
// kernel that reads Mat waits for the copy (the host does not), and the
// next upload into the same device matrix waits (on the GPU) for the
// kernels queued before Done. The device matrix is a slot of the Staging's
// ring: its own (a ring of one) for a Staging from GPU.NewStaging, shared
// with the ring's other Stagings for one from StagingRing.NewStaging. A
// Staging serves one batch at a time: fill Host, Upload, use Mat, Done;
// fill Host again only once a result downloaded after Mat was used (the
// loss) shows the copy has landed.
type Staging struct {
	g      *GPU
	host   unsafe.Pointer
	floats int
	ready  int // fence: the last upload landed
	ring   *StagingRing
	// slot is the ring's slot held from Upload to Done (nil: none), and
	// mat the uploaded matrix in it.
	slot atomic.Pointer[ringSlot]
	mat  *Mat
}

// NewStaging returns a Staging of floats values with a device matrix of
// its own, freed when no longer referenced.
func (g *GPU) NewStaging(floats int) (*Staging, error) {
	r, err := g.NewStagingRing(1)
	if err != nil {
		return nil, err
	}
	return r.NewStaging(floats)
}

// NewStaging returns a Staging of floats values that uploads into r's
// slots, freed when no longer referenced.
func (r *StagingRing) NewStaging(floats int) (*Staging, error) {
	g := r.g
	floats = max(floats, 1)
	p, err := g.dev.hostAlloc(4 * floats)
	if err != nil {
		return nil, fmt.Errorf("%s: pinned staging buffer of %.1f MiB: %w", g.dev.name(), float64(4*floats)/(1<<20), err)
	}
	ready, err := g.dev.newFence()
	if err != nil {
		g.dev.hostFree(p)
		return nil, fmt.Errorf("%s: %w", g.dev.name(), err)
	}
	s := &Staging{g: g, host: p, floats: floats, ready: ready, ring: r}
	dev := g.dev
	// The host memory is C memory (or the driver's): the cleanup's
	// argument may point at it without keeping s alive.
	type res struct {
		p     unsafe.Pointer
		ready int
	}
	runtime.AddCleanup(s, func(r res) {
		dev.freeFence(r.ready)
		dev.hostFree(r.p)
	}, res{p, ready})
	return s, nil
}

// Floats is how many values Host holds.
func (s *Staging) Floats() int { return s.floats }

// Host is the page-locked buffer. It is C memory: do not keep it past
// the Staging.
func (s *Staging) Host() []float32 { return unsafe.Slice((*float32)(s.host), s.floats) }

// Upload starts copying Host's first rows x cols values into a device
// matrix (rows x cols) on the copy stream. It takes a free slot of the
// ring first (a Staging that holds one since its last Upload keeps it),
// waiting on the host until another Staging's Done gives one back; it
// returns ctx's error, holding nothing, if ctx ends first. It does not
// wait for the copy. The slot is held until Done.
func (s *Staging) Upload(ctx context.Context, rows, cols int) error {
	checkDims(rows, cols)
	if rows*cols > s.floats {
		panic(fmt.Sprintf("kernels: Staging.Upload of %dx%d from %d values", rows, cols, s.floats))
	}
	slot := s.slot.Load()
	if slot == nil {
		var err error
		if slot, err = s.ring.take(ctx); err != nil {
			return err
		}
		s.slot.Store(slot)
	}
	// A failed allocation (a full GPU) panics: the slot goes back, with
	// nothing queued that reads it.
	held := false
	defer func() {
		if !held && s.slot.CompareAndSwap(slot, nil) {
			s.ring.slots <- slot
		}
	}()
	m := slot.dev
	s.g.Resize(m, rows, cols)
	if rows*cols > 0 {
		s.g.dev.uploadAsync(m.d, s.host, 4*rows*cols, slot.free, s.ready)
	}
	// A header of its own, so that the slot's next user resizing it
	// changes nothing the caller holds.
	s.mat = &Mat{Rows: m.Rows, Cols: m.Cols, Stride: m.Stride, d: m.d, buf: m.buf}
	held = true
	runtime.KeepAlive(s)
	return nil
}

// Mat returns the device matrix of the last Upload; launches queued from
// now on wait for the copy to land. It is valid until Done: the slot's
// next user overwrites it.
func (s *Staging) Mat() *Mat {
	s.g.dev.await(s.ready)
	return s.mat
}

// Done says every kernel that reads Mat has been queued and gives the
// slot back: the next upload into it waits for those kernels on the GPU.
// Done without a slot held (twice, or without Upload) does nothing. The
// slot goes back even when recording the fence fails (the device's
// error panics, as every device call's does).
func (s *Staging) Done() {
	slot := s.slot.Swap(nil)
	if slot == nil {
		return
	}
	s.mat = nil
	defer func() { s.ring.slots <- slot }()
	s.g.dev.signal(slot.free)
}
