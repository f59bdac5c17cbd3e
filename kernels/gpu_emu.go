//go:build cgo

package kernels

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/gnnplan/gnnplan/kernels/internal/cudac"
)

// emuDevice is a device on host memory that runs the CUDA kernels' C
// source on the CPU (kernels/internal/cudac), one thread of one block at
// a time, and GEMM on a column-major reference, so the GPU backend's host
// side, the launch geometry, the kernels' arithmetic and the trainer's
// multi-GPU code are tested without a GPU.
type emuDevice struct {
	label   string
	ordinal int
	emu     *cudac.Device
	mu      sync.Mutex
	// live counts allocations and liveBytes their bytes (memory, when
	// not 0, caps them); launches counts launches by kernel, peer counts
	// peer copies into this device.
	live      int
	liveBytes int64
	memory    int64
	sizes     map[uintptr]int
	launches  map[kernelID]int
	peer      int
}

// NewEmulatedGPU returns a GPU backend whose device is emulated on the
// CPU: the CUDA kernels compiled as C, run one thread at a time, device
// memory in the C heap. It is slow, and exists to check the GPU backend,
// and code that runs several GPUs, on machines without one; ordinal only
// names it. memoryBytes, when not 0, is the device memory it has: an
// allocation beyond it fails as a full GPU's does. It fails only in a
// build without cgo.
func NewEmulatedGPU(ordinal int, memoryBytes int64) (*GPU, error) {
	g, d := newEmuGPU(ordinal)
	d.memory = memoryBytes
	return g, nil
}

func newEmuGPU(ordinal int) (*GPU, *emuDevice) {
	d := &emuDevice{ordinal: ordinal, label: fmt.Sprintf("GPU %d emulated on the CPU (kernels/internal/cudac)", ordinal), emu: cudac.New(),
		launches: map[kernelID]int{}, sizes: map[uintptr]int{}}
	return newGPU(d), d
}

func (d *emuDevice) name() string { return d.label }

func (d *emuDevice) alloc(bytes int) (uintptr, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.memory > 0 && d.liveBytes+int64(bytes) > d.memory {
		return 0, fmt.Errorf("out of memory: %d bytes asked, %d of %d in use", bytes, d.liveBytes, d.memory)
	}
	p := cudac.Alloc(bytes)
	d.live++
	d.liveBytes += int64(bytes)
	d.sizes[p] = bytes
	return p, nil
}

func (d *emuDevice) free(p uintptr) {
	d.mu.Lock()
	d.live--
	d.liveBytes -= int64(d.sizes[p])
	delete(d.sizes, p)
	d.mu.Unlock()
	cudac.Free(p)
}

func (d *emuDevice) upload(dst uintptr, src unsafe.Pointer, bytes int) {
	cudac.Upload(dst, src, bytes)
}

func (d *emuDevice) download(dst unsafe.Pointer, src uintptr, bytes int) {
	cudac.Download(dst, src, bytes)
}

// peerCopy copies from another emulated device: both are host memory.
func (d *emuDevice) peerCopy(dst uintptr, src device, srcPtr uintptr, bytes int) bool {
	if _, ok := src.(*emuDevice); !ok {
		return false
	}
	d.mu.Lock()
	d.peer++
	d.mu.Unlock()
	cudac.Copy(dst, srcPtr, bytes)
	return true
}

func (d *emuDevice) launch(k kernelID, grid, block uint32, a *gpArgs) {
	if grid == 0 || grid > launchMaxGrid || block != launchBlock {
		panic(fmt.Sprintf("launch of %s on %d x %d threads", k, grid, block))
	}
	d.mu.Lock()
	d.launches[k]++
	d.mu.Unlock()
	if err := d.emu.Launch(k.String(), grid, block, (*cudac.Args)(a)); err != nil {
		panic(err)
	}
}

func (d *emuDevice) sgemm(g cublasGemm, alpha float32, a, b uintptr, beta float32, c uintptr) {
	cudac.Sgemm(g.TransA, g.TransB, g.M, g.N, g.K, alpha, a, g.LDA, b, g.LDB, beta, c, g.LDC)
}

func (d *emuDevice) hostAlloc(bytes int) (unsafe.Pointer, error) { return cudac.HostAlloc(bytes), nil }

func (d *emuDevice) hostFree(p unsafe.Pointer) { cudac.HostFree(p) }

// sync has nothing to wait for: every emulated call finishes before it
// returns.
func (d *emuDevice) sync() {}

func (d *emuDevice) info() GPUInfo {
	return GPUInfo{Ordinal: d.ordinal, Name: "emulated on the CPU (kernels/internal/cudac)", MemoryBytes: d.memory}
}

// The emulation copies at once: fences have nothing to order.
func (d *emuDevice) newFence() (int, error) { return 0, nil }

func (d *emuDevice) freeFence(int) {}

func (d *emuDevice) uploadAsync(dst uintptr, src unsafe.Pointer, bytes int, _, _ int) {
	cudac.Upload(dst, src, bytes)
}

func (d *emuDevice) await(int) {}

func (d *emuDevice) signal(int) {}
