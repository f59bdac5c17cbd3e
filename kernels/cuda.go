//go:build cuda

package kernels

/*
#cgo LDFLAGS: -ldl -lcuda
#include <cuda.h>
#include <dlfcn.h>
#include <stdlib.h>

// Page-locked host memory: gorgonia.org/cu frees it but cannot allocate it.
static int gp_mem_alloc_host(void **p, size_t n) { return (int)cuMemAllocHost(p, n); }
static int gp_mem_free_host(void *p) { return (int)cuMemFreeHost(p); }

// cuBLAS is opened with dlopen: its soname changes with every CUDA major
// version, and a missing one must be a clear message, not a link error.
typedef int (*gp_cublas_create_fn)(void **handle);
typedef int (*gp_cublas_sgemm_fn)(void *handle, int transa, int transb, int m, int n, int k,
	const float *alpha, const float *A, int lda, const float *B, int ldb,
	const float *beta, float *C, int ldc);

static void *gp_dlopen(const char *name) { return dlopen(name, RTLD_NOW | RTLD_LOCAL); }
static const char *gp_dlerror(void) { return dlerror(); }
static void *gp_dlsym(void *h, const char *name) { return dlsym(h, name); }
static int gp_cublas_create(void *f, void **handle) { return ((gp_cublas_create_fn)f)(handle); }
static int gp_cublas_sgemm(void *f, void *handle, int ta, int tb, int m, int n, int k, float alpha,
	unsigned long long a, int lda, unsigned long long b, int ldb, float beta, unsigned long long c, int ldc) {
	return ((gp_cublas_sgemm_fn)f)(handle, ta, tb, m, n, k, &alpha, (const float *)a, lda,
		(const float *)b, ldb, &beta, (float *)c, ldc);
}
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"unsafe"

	"gorgonia.org/cu"
)

// cublasSonames are the cuBLAS libraries tried, newest first.
var cublasSonames = []string{"libcublas.so.13", "libcublas.so.12", "libcublas.so.11", "libcublas.so"}

// cudaDevice is a device on one GPU through the driver API
// (gorgonia.org/cu): one context, made current on one locked OS thread
// that runs every driver call in order, so callers may be on any
// goroutine (the garbage collector's cleanups free memory from theirs).
type cudaDevice struct {
	label   string
	gpu     GPUInfo
	ordinal int
	dev     cu.Device
	ctx     cu.CUContext
	calls   chan func()
	fns     [numKernels]cu.Function
	// failed is the first launch or GEMM that failed: they are queued
	// without waiting, so the next call that waits reports it.
	failed atomic.Pointer[DeviceError]
	// copies is the copy stream (not blocking with the default stream,
	// where the kernels run); events are the fences, by number. Both are
	// used only on the context's thread.
	copies    cu.Stream
	events    map[int]cu.Event
	nextFence int
	// cublas and sgemmFn are cuBLAS's handle and cublasSgemm_v2.
	cublas, sgemmFn unsafe.Pointer
}

// NewCUDA returns a backend on GPU ordinal (0 is the first), with the
// kernels' PTX loaded and cuBLAS opened. It fails with a message naming
// what is missing: the GPU, the driver's support for the PTX, or cuBLAS.
func NewCUDA(ordinal int) (*GPU, error) {
	d := &cudaDevice{ordinal: ordinal, calls: make(chan func(), queuedCalls)}
	ready := make(chan error)
	go d.serve(ordinal, ready)
	if err := <-ready; err != nil {
		return nil, err
	}
	return newGPU(d), nil
}

// serve owns the context: it makes it current on its locked thread, loads
// the module and cuBLAS, then runs calls until the process ends.
func (d *cudaDevice) serve(ordinal int, ready chan<- error) {
	runtime.LockOSThread()
	err := d.init(ordinal)
	ready <- err
	if err != nil {
		return
	}
	for f := range d.calls {
		f()
	}
}

func (d *cudaDevice) init(ordinal int) error {
	n, err := cu.NumDevices()
	if err != nil {
		return fmt.Errorf("cuda: %w", err)
	}
	if ordinal < 0 || ordinal >= n {
		return fmt.Errorf("cuda: GPU %d: this machine has %d (0 to %d)", ordinal, n, n-1)
	}
	dev, err := cu.GetDevice(ordinal)
	if err != nil {
		return fmt.Errorf("cuda: GPU %d: %w", ordinal, err)
	}
	name, err := dev.Name()
	if err != nil {
		return fmt.Errorf("cuda: GPU %d: %w", ordinal, err)
	}
	major, minor, err := dev.ComputeCapability()
	if err != nil {
		return fmt.Errorf("cuda: GPU %d: %w", ordinal, err)
	}
	mem, err := dev.TotalMem()
	if err != nil {
		return fmt.Errorf("cuda: GPU %d: %w", ordinal, err)
	}
	d.label = fmt.Sprintf("%s (GPU %d, sm_%d%d, %.1f GiB)", name, ordinal, major, minor, float64(mem)/(1<<30))
	d.gpu = GPUInfo{Ordinal: ordinal, Name: name, MemoryBytes: mem, ComputeCapability: fmt.Sprintf("%d.%d", major, minor)}
	if bus, err := pciBusID(dev); err == nil {
		d.gpu.PCIBusID = bus
	}
	if major < 7 {
		return fmt.Errorf("cuda: %s: compute capability %d.%d, the kernels' PTX needs 7.0 or later", d.label, major, minor)
	}
	if d.ctx, err = dev.MakeContext(cu.SchedAuto); err != nil {
		return fmt.Errorf("cuda: %s: context: %w", d.label, err)
	}
	d.dev = dev
	if d.copies, err = cu.MakeStream(cu.NonBlocking); err != nil {
		return fmt.Errorf("cuda: %s: copy stream: %w", d.label, err)
	}
	d.events = map[int]cu.Event{}
	mod, err := cu.LoadData(cudaPTX)
	if err != nil {
		return fmt.Errorf("cuda: %s: loading the kernels' PTX (the driver must support PTX ISA 7.8, CUDA 11.8 or later): %w", d.label, err)
	}
	for k := range numKernels {
		f, err := mod.Function(kernelNames[k])
		if err != nil {
			return fmt.Errorf("cuda: kernel %s: %w", kernelNames[k], err)
		}
		d.fns[k] = f
	}
	return d.openCublas()
}

func (d *cudaDevice) openCublas() error {
	var tried []string
	for _, name := range cublasSonames {
		cs := C.CString(name)
		h := C.gp_dlopen(cs)
		C.free(unsafe.Pointer(cs))
		if h == nil {
			tried = append(tried, C.GoString(C.gp_dlerror()))
			continue
		}
		sym := func(s string) unsafe.Pointer {
			cs := C.CString(s)
			defer C.free(unsafe.Pointer(cs))
			return C.gp_dlsym(h, cs)
		}
		create, sgemm := sym("cublasCreate_v2"), sym("cublasSgemm_v2")
		if create == nil || sgemm == nil {
			tried = append(tried, name+": no cublasCreate_v2 or cublasSgemm_v2")
			continue
		}
		var handle unsafe.Pointer
		if r := C.gp_cublas_create(create, &handle); r != 0 {
			return fmt.Errorf("cuda: %s: cublasCreate_v2 failed with status %d", name, int(r))
		}
		d.cublas, d.sgemmFn = handle, sgemm
		d.label += ", GEMM on " + name
		return nil
	}
	return errors.New("cuda: cuBLAS not found (GEMM runs on it): " + strings.Join(tried, "; ") +
		" (install the CUDA toolkit's cuBLAS, or put its directory on LD_LIBRARY_PATH)")
}

// NewCUDAs returns a backend on each GPU of ordinals, each with its own
// context, and enables peer access between every pair whose topology
// allows it (NVLink, or PCIe under one root complex), so Transfer between
// them is a direct copy; between the others the driver stages peer copies
// through host memory. Each backend's name lists the GPUs it reaches
// directly.
func NewCUDAs(ordinals []int) ([]*GPU, error) {
	gs := make([]*GPU, len(ordinals))
	for i, o := range ordinals {
		if slices.Contains(ordinals[:i], o) {
			return nil, fmt.Errorf("cuda: GPU %d listed twice", o)
		}
		g, err := NewCUDA(o)
		if err != nil {
			return nil, err
		}
		gs[i] = g
	}
	for _, g := range gs {
		d := g.dev.(*cudaDevice)
		var direct []string
		for _, h := range gs {
			p := h.dev.(*cudaDevice)
			if p == d {
				continue
			}
			can, err := d.dev.CanAccessPeer(p.dev)
			if err != nil || can == 0 {
				continue
			}
			d.do(func() { err = p.ctx.EnablePeerAccess(0) })
			if err != nil && !strings.Contains(err.Error(), "PeerAccessAlreadyEnabled") {
				return nil, fmt.Errorf("cuda: %s: enabling peer access to GPU %d: %w", d.label, p.ordinal, err)
			}
			direct = append(direct, strconv.Itoa(p.ordinal))
		}
		if len(direct) > 0 {
			d.label += ", peer access to GPU " + strings.Join(direct, ", ")
		}
	}
	return gs, nil
}

// CUDAGPUs describes every GPU the driver lists, without making a
// context on any.
func CUDAGPUs() ([]GPUInfo, error) {
	n, err := cu.NumDevices()
	if err != nil {
		return nil, fmt.Errorf("cuda: %w", err)
	}
	out := make([]GPUInfo, 0, n)
	for i := range n {
		dev, err := cu.GetDevice(i)
		if err != nil {
			return nil, fmt.Errorf("cuda: GPU %d: %w", i, err)
		}
		info := GPUInfo{Ordinal: i}
		if info.Name, err = dev.Name(); err != nil {
			return nil, fmt.Errorf("cuda: GPU %d: %w", i, err)
		}
		if info.MemoryBytes, err = dev.TotalMem(); err != nil {
			return nil, fmt.Errorf("cuda: GPU %d: %w", i, err)
		}
		if major, minor, err := dev.ComputeCapability(); err == nil {
			info.ComputeCapability = fmt.Sprintf("%d.%d", major, minor)
		}
		if bus, err := pciBusID(dev); err == nil {
			info.PCIBusID = bus
		}
		out = append(out, info)
	}
	return out, nil
}

// CUDACount returns the number of GPUs the driver lists.
func CUDACount() (int, error) {
	n, err := cu.NumDevices()
	if err != nil {
		return 0, fmt.Errorf("cuda: %w", err)
	}
	return n, nil
}

// peerCopy copies from another GPU's memory with cuMemcpyPeer, ordered
// after the work queued on both contexts.
func (d *cudaDevice) peerCopy(dst uintptr, src device, srcPtr uintptr, bytes int) bool {
	s, ok := src.(*cudaDevice)
	if !ok {
		return false
	}
	var err error
	d.do(func() { err = cu.MemcpyPeer(cu.DevicePtr(dst), d.ctx, cu.DevicePtr(srcPtr), s.ctx, int64(bytes)) })
	d.must("peer copy from GPU "+strconv.Itoa(s.ordinal), err)
	return true
}

// do runs f on the context's thread and waits for it.
//
// It panics with the first failure of a launch or GEMM queued before it
// (see queue).
func (d *cudaDevice) do(f func()) {
	d.wait(f)
	if e := d.failed.Load(); e != nil {
		panic(e)
	}
}

// wait runs f on the context's thread and waits for it, reporting
// nothing: what frees memory from cleanups uses it.
func (d *cudaDevice) wait(f func()) {
	done := make(chan struct{})
	d.calls <- func() { f(); close(done) }
	<-done
}

// queuedCalls is how many calls the context's thread may have waiting:
// launches and GEMMs are queued without waiting for the driver to take
// each (the thesis's launch grouping: the host prepares the next while the
// thread issues the last), so a step's hundreds of launches do not each
// cost the host a round trip.
const queuedCalls = 256

// queue runs f on the context's thread in order with every other call,
// without waiting; f returns the failure to report (nil for none), which
// the next call that waits raises. After a failure nothing more is
// issued: the context is unusable.
func (d *cudaDevice) queue(f func() *DeviceError) {
	d.calls <- func() {
		if d.failed.Load() != nil {
			return
		}
		if e := f(); e != nil {
			d.failed.CompareAndSwap(nil, e)
		}
	}
}

// must panics with a driver error: after a failed launch or copy the
// context is unusable, and the Backend interface has no error returns
// (the trainer recovers and reports it).
func (d *cudaDevice) must(what string, err error) {
	if err != nil {
		panic(&DeviceError{Device: "cuda: " + d.label, Op: what, Err: err})
	}
}

func (d *cudaDevice) name() string { return d.label }

func (d *cudaDevice) alloc(bytes int) (uintptr, error) {
	var p cu.DevicePtr
	var err error
	d.do(func() { p, err = cu.MemAlloc(int64(bytes)) })
	if err != nil {
		return 0, fmt.Errorf("GPU memory: %w", err)
	}
	return uintptr(p), nil
}

func (d *cudaDevice) free(p uintptr) {
	// Freed on the context's thread, never waited for: cleanups must not
	// block on a busy GPU.
	go d.wait(func() { _ = cu.MemFree(cu.DevicePtr(p)) })
}

func (d *cudaDevice) upload(dst uintptr, src unsafe.Pointer, bytes int) {
	var err error
	d.do(func() { err = cu.MemcpyHtoD(cu.DevicePtr(dst), src, int64(bytes)) })
	d.must("copy to the GPU", err)
}

func (d *cudaDevice) download(dst unsafe.Pointer, src uintptr, bytes int) {
	var err error
	d.do(func() { err = cu.MemcpyDtoH(dst, cu.DevicePtr(src), int64(bytes)) })
	d.must("copy from the GPU", err)
}

// launch queues the kernel (see queue): the arguments are copied, and the
// operands' memory outlives the launch because a cleanup's free is queued
// behind it.
func (d *cudaDevice) launch(k kernelID, grid, block uint32, a *gpArgs) {
	args := *a
	d.queue(func() *DeviceError {
		params := make([]unsafe.Pointer, 0, gpArgsFields)
		for i := range args.P {
			params = append(params, unsafe.Pointer(&args.P[i]))
		}
		for i := range args.N {
			params = append(params, unsafe.Pointer(&args.N[i]))
		}
		for i := range args.F {
			params = append(params, unsafe.Pointer(&args.F[i]))
		}
		if err := d.fns[k].Launch(int(grid), 1, 1, int(block), 1, 1, 0, cu.Stream{}, params); err != nil {
			return &DeviceError{Device: "cuda: " + d.label, Op: "launching " + k.String(), Err: err}
		}
		return nil
	})
}

// sgemm queues the product (see queue).
func (d *cudaDevice) sgemm(g cublasGemm, alpha float32, a, b uintptr, beta float32, c uintptr) {
	d.queue(func() *DeviceError {
		r := C.gp_cublas_sgemm(d.sgemmFn, d.cublas, cublasOp(g.TransA), cublasOp(g.TransB), C.int(g.M), C.int(g.N), C.int(g.K),
			C.float(alpha), C.ulonglong(a), C.int(g.LDA), C.ulonglong(b), C.int(g.LDB), C.float(beta), C.ulonglong(c), C.int(g.LDC))
		if r != 0 {
			return &DeviceError{Device: "cuda: " + d.label, Op: fmt.Sprintf("cublasSgemm_v2 %dx%dx%d", g.M, g.N, g.K), Err: fmt.Errorf("status %d", int(r))}
		}
		return nil
	})
}

// cublasOp is CUBLAS_OP_T (1) for a transposed operand, else CUBLAS_OP_N.
func cublasOp(t bool) C.int {
	if t {
		return 1
	}
	return 0
}

// pciBusID is dev's PCI address as sysfs writes it, "0000:65:00.0".
func pciBusID(dev cu.Device) (string, error) {
	var id [3]int
	for i, a := range []cu.DeviceAttribute{cu.PciDomainID, cu.PciBusID, cu.PciDeviceID} {
		v, err := dev.Attribute(a)
		if err != nil {
			return "", err
		}
		id[i] = v
	}
	return fmt.Sprintf("%04x:%02x:%02x.0", id[0], id[1], id[2]), nil
}

func (d *cudaDevice) info() GPUInfo { return d.gpu }

func (d *cudaDevice) hostAlloc(bytes int) (unsafe.Pointer, error) {
	var p unsafe.Pointer
	var r C.int
	d.do(func() { r = C.gp_mem_alloc_host(&p, C.size_t(bytes)) })
	if r != 0 {
		return nil, fmt.Errorf("cuMemAllocHost of %.1f MiB failed with CUDA error %d", float64(bytes)/(1<<20), int(r))
	}
	return p, nil
}

// hostFree is queued, not waited for: cleanups call it.
func (d *cudaDevice) hostFree(p unsafe.Pointer) {
	go d.wait(func() { C.gp_mem_free_host(p) })
}

func (d *cudaDevice) newFence() (int, error) {
	var f int
	var err error
	d.do(func() {
		var ev cu.Event
		if ev, err = cu.MakeEvent(cu.DisableTiming); err == nil {
			d.nextFence++
			f = d.nextFence
			d.events[f] = ev
		}
	})
	if err != nil {
		return 0, fmt.Errorf("cuda event: %w", err)
	}
	return f, nil
}

func (d *cudaDevice) freeFence(f int) {
	go d.wait(func() {
		if ev, ok := d.events[f]; ok {
			_ = cu.DestroyEvent(&ev)
			delete(d.events, f)
		}
	})
}

func (d *cudaDevice) uploadAsync(dst uintptr, src unsafe.Pointer, bytes int, after, done int) {
	var err error
	d.do(func() {
		if ev, ok := d.events[after]; ok {
			// An event never recorded is complete: the first copy
			// waits for nothing.
			err = d.copies.Wait(ev, 0)
		}
		if err == nil {
			err = cu.MemcpyHtoDAsync(cu.DevicePtr(dst), src, int64(bytes), d.copies)
		}
		if err == nil {
			err = d.events[done].Record(d.copies)
		}
	})
	d.must("copy to the GPU on the copy stream", err)
}

// signal records f on the default stream, after the kernels queued so far.
func (d *cudaDevice) signal(f int) {
	var err error
	d.do(func() { err = d.events[f].Record(cu.Stream{}) })
	d.must("recording the kernels' progress", err)
}

// await makes the default stream, where the kernels run, wait for f.
func (d *cudaDevice) await(f int) {
	var err error
	d.do(func() { err = cu.Stream{}.Wait(d.events[f], 0) })
	d.must("ordering kernels after a copy", err)
}

func (d *cudaDevice) sync() {
	var err error
	d.do(func() { err = cu.Synchronize() })
	d.must("synchronising", err)
}
