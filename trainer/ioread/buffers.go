package ioread

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// bufPool is the staging memory: n slots of slotSize bytes in one anonymous
// mapping. The mapping is page aligned, as O_DIRECT needs (make([]byte) is
// not), lives outside the Go heap so the kernel may write into it while no
// Go pointer refers to it, and is allocated once, so a reader's memory is
// bounded by QueueDepth x MaxMergeBytes (GNNDrive's bounded staging buffer).
type bufPool struct {
	mem      []byte
	slotSize int // bytes, a multiple of the page size and of every alignment
	n        int
}

func newBufPool(n, slotSize int) (*bufPool, error) {
	// MAP_POPULATE faults the pages in now rather than on the first read of
	// each slot, which would otherwise land inside the measured IO path.
	mem, err := unix.Mmap(-1, 0, n*slotSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
	if err != nil {
		return nil, fmt.Errorf("ioread: mmap %d staging buffers of %d bytes: %w", n, slotSize, err)
	}
	return &bufPool{mem: mem, slotSize: slotSize, n: n}, nil
}

// slot returns staging buffer i, capacity-limited so appends cannot spill
// into the next slot.
func (p *bufPool) slot(i int) []byte {
	lo := i * p.slotSize
	return p.mem[lo : lo+p.slotSize : lo+p.slotSize]
}

// addr is the address of byte off of slot i, for SQEs.
func (p *bufPool) addr(i, off int) uintptr {
	return uintptr(unsafe.Pointer(&p.mem[i*p.slotSize+off]))
}

func (p *bufPool) release() error {
	if p.mem == nil {
		return nil
	}
	err := unix.Munmap(p.mem)
	p.mem = nil
	if err != nil {
		return fmt.Errorf("ioread: munmap staging buffers: %w", err)
	}
	return nil
}
