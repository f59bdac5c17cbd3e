// Package cudac holds gnnplan's CUDA kernels, their CUDA C source
// (kernels.cu, embedded as Source: the build compiles it to PTX with
// NVRTC), and a host emulation that runs them on the CPU, so that the
// CUDA backend's host side and the kernels' arithmetic are tested on
// machines without a GPU.
//
// For the emulation the kernels are compiled as plain C (the file's host emulation branch):
// a launch runs every thread of every block in turn, each to its end,
// which is what the kernels' rules (no shared memory, barriers, atomics
// or warp functions) make equivalent to a GPU's run. Device memory is C
// heap memory, addressed by integers as device pointers are.
package cudac

/*
#cgo CFLAGS: -O2 -Wno-unused-function
#cgo LDFLAGS: -lm
// The kernels' a*b+c is never fused, on the GPU (--fmad=false) or here.
#pragma GCC optimize("fp-contract=off")
#include <stdlib.h>
#include "kernels.cu"

typedef void (*gp_fn)(GP_PARAMS);
#define GP_FN(name) name,
#define GP_NAME(name) #name,
static const gp_fn gp_fns[] = {GP_KERNEL_LIST(GP_FN)};
static const char *gp_names[] = {GP_KERNEL_LIST(GP_NAME)};

static int gp_count(void) { return (int)(sizeof(gp_fns) / sizeof(gp_fns[0])); }
static const char *gp_name(int k) { return gp_names[k]; }

static void gp_launch(int k, unsigned grid, unsigned block, const gp_args *a) {
	gridDim.x = grid;
	blockDim.x = block;
	gridDim.y = gridDim.z = blockDim.y = blockDim.z = 1;
	blockIdx.y = blockIdx.z = threadIdx.y = threadIdx.z = 0;
	for (unsigned b = 0; b < grid; b++) {
		for (unsigned t = 0; t < block; t++) {
			blockIdx.x = b;
			threadIdx.x = t;
			gp_fns[k](a->p[0], a->p[1], a->p[2], a->p[3], a->p[4], a->p[5], a->p[6], a->p[7],
				a->n[0], a->n[1], a->n[2], a->n[3], a->n[4], a->n[5], a->n[6], a->n[7],
				a->f[0], a->f[1], a->f[2], a->f[3], a->f[4], a->f[5], a->f[6], a->f[7]);
		}
	}
}

static unsigned long long gp_alloc(size_t n) { return (unsigned long long)malloc(n); }
static void gp_free(unsigned long long p) { free((void *)p); }
static void gp_upload(unsigned long long dst, const void *src, size_t n) { memcpy((void *)dst, src, n); }
static void gp_download(void *dst, unsigned long long src, size_t n) { memcpy(dst, (const void *)src, n); }
static void gp_copy_mem(unsigned long long dst, unsigned long long src, size_t n) { memcpy((void *)dst, (const void *)src, n); }

// gp_sgemm is a column-major C = alpha*op(A)*op(B) + beta*C, summing in
// double: the reference cuBLAS's results are compared with.
static void gp_sgemm(int ta, int tb, int m, int n, int k, float alpha, unsigned long long a, int lda,
	unsigned long long b, int ldb, float beta, unsigned long long c, int ldc) {
	const float *A = (const float *)a, *B = (const float *)b;
	float *C = (float *)c;
	for (int j = 0; j < n; j++) {
		for (int i = 0; i < m; i++) {
			double s = 0;
			for (int l = 0; l < k; l++) {
				double a = ta ? A[l + (long)i * lda] : A[i + (long)l * lda];
				double b = tb ? B[j + (long)l * ldb] : B[l + (long)j * ldb];
				s += a * b;
			}
			float *c = &C[i + (long)j * ldc];
			*c = beta == 0 ? (float)(alpha * s) : (float)(alpha * s + (double)beta * *c);
		}
	}
}
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// Args is gp_args: every kernel's 24 parameters.
type Args struct {
	P [8]uint64
	N [8]int64
	F [8]float64
}

// Kernels returns the names of the kernels kernels.cu defines, in its
// list's order.
func Kernels() []string {
	names := make([]string, int(C.gp_count()))
	for i := range names {
		names[i] = C.GoString(C.gp_name(C.int(i)))
	}
	return names
}

// Device runs kernels by name.
type Device struct {
	index map[string]int
}

// New returns a Device.
func New() *Device {
	d := &Device{index: map[string]int{}}
	for i, n := range Kernels() {
		d.index[n] = i
	}
	return d
}

// Launch runs the named kernel on grid x block threads.
func (d *Device) Launch(name string, grid, block uint32, a *Args) error {
	k, ok := d.index[name]
	if !ok {
		return fmt.Errorf("cudac: no kernel %q in kernels.cu", name)
	}
	if unsafe.Sizeof(*a) != unsafe.Sizeof(C.gp_args{}) {
		return fmt.Errorf("cudac: Args is %d bytes, gp_args %d", unsafe.Sizeof(*a), unsafe.Sizeof(C.gp_args{}))
	}
	ca := (*C.gp_args)(C.malloc(C.size_t(unsafe.Sizeof(C.gp_args{}))))
	defer C.free(unsafe.Pointer(ca))
	*ca = *(*C.gp_args)(unsafe.Pointer(a))
	C.gp_launch(C.int(k), C.uint(grid), C.uint(block), ca)
	return nil
}

// Alloc returns bytes of emulated device memory, at an address as a GPU
// gives one.
func Alloc(bytes int) uintptr { return uintptr(C.gp_alloc(C.size_t(max(bytes, 1)))) }

// HostAlloc returns bytes of host memory from the C heap (the emulation's
// pinned memory); HostFree releases it.
func HostAlloc(bytes int) unsafe.Pointer { return C.malloc(C.size_t(max(bytes, 1))) }

// HostFree releases a HostAlloc.
func HostFree(p unsafe.Pointer) { C.free(p) }

// Free releases an Alloc.
func Free(p uintptr) { C.gp_free(C.ulonglong(p)) }

// Upload copies n bytes from host memory at src to emulated device memory
// at dst.
func Upload(dst uintptr, src unsafe.Pointer, n int) { C.gp_upload(C.ulonglong(dst), src, C.size_t(n)) }

// Download copies n bytes from emulated device memory at src to host
// memory at dst.
func Download(dst unsafe.Pointer, src uintptr, n int) {
	C.gp_download(dst, C.ulonglong(src), C.size_t(n))
}

// Copy copies n bytes between two emulated device allocations (a peer
// copy between emulated GPUs).
func Copy(dst, src uintptr, n int) { C.gp_copy_mem(C.ulonglong(dst), C.ulonglong(src), C.size_t(n)) }

// Sgemm is a column-major reference GEMM on emulated device memory.
func Sgemm(transA, transB bool, m, n, k int, alpha float32, a uintptr, lda int, b uintptr, ldb int, beta float32, c uintptr, ldc int) {
	C.gp_sgemm(cbool(transA), cbool(transB), C.int(m), C.int(n), C.int(k), C.float(alpha),
		C.ulonglong(a), C.int(lda), C.ulonglong(b), C.int(ldb), C.float(beta), C.ulonglong(c), C.int(ldc))
}

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}
