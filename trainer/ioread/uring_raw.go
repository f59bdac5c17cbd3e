//go:build !race

package ioread

import (
	"fmt"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// At queue depth 1 the io_uring engine reads through a ring of its own in
// one long system call, as the pread pool's raw loop does (pread_raw.go).
// Read one at a time through giouring, every read blocked in
// io_uring_enter inside an ordinary system call, the reading thread slept
// about as often per read as fio's, but the rest of the Go runtime added
// as many sleeps again: sysmon polled every 20 us to 10 ms while the P sat
// in the system call, and an idle M was woken and went back to sleep
// (docs/benchmarks.md, "sleeps per read"). That cost 7-9 us of CPU per
// read, 1.2-1.8x fio's in all. Between one entersyscallblock and one
// exitsyscall the P is handed off once, every P is idle, and sysmon sleeps.
//
// Code in that region may not call ordinary Go functions (their stack
// checks may not grow the stack there) nor write pointers, so it cannot use
// giouring, whose ring pointers are unexported: rawRing is the few words of
// a ring it needs, set up with io_uring_setup and mmap, with no registered
// files or buffers (as fio's default). Anything but a read that returns its
// whole span leaves the loop and is read again the ordinary way.

// rawURing says whether the raw depth-1 loop is built in (not under the
// race detector, whose instrumentation calls into Go code).
const rawURing = true

// io_uring ABI (include/uapi/linux/io_uring.h).
const (
	ioringOffSQRing      = 0
	ioringOffSQEs        = 0x10000000
	ioringFeatSingleMmap = 1 << 0
	ioringEnterGetEvents = 1 << 0
	ioringOpRead         = 22
	sqeSize              = 64
	cqeSize              = 16
)

// uringParams is struct io_uring_params.
type uringParams struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFD uint32
	resv                                                                   [3]uint32
	sqOff                                                                  struct {
		head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
		userAddr                                                        uint64
	}
	cqOff struct {
		head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
		userAddr                                                        uint64
	}
}

// rawRing is a one-entry io_uring driven without giouring. Its pointers
// point into the kernel's shared mappings, not Go memory.
type rawRing struct {
	fd      int
	ring    []byte // SQ and CQ rings, one mapping (FEAT_SINGLE_MMAP)
	sqes    []byte
	sqHead  *uint32
	sqTail  *uint32
	sqMask  uint32
	sqArray unsafe.Pointer
	cqHead  *uint32
	cqTail  *uint32
	cqMask  uint32
	cqes    unsafe.Pointer
	sqe     unsafe.Pointer // sqes[0]
	tail    uint32         // our copy of *sqTail
}

// newRawRing sets up a one-entry ring. Kernels without FEAT_SINGLE_MMAP
// (before 5.4) are refused; the caller then reads through giouring.
func newRawRing() (*rawRing, error) {
	var p uringParams
	fd, _, errno := syscall.Syscall(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&p)), 0)
	if errno != 0 {
		return nil, fmt.Errorf("io_uring_setup: %w", errno)
	}
	r := &rawRing{fd: int(fd)}
	if p.features&ioringFeatSingleMmap == 0 {
		r.close()
		return nil, fmt.Errorf("io_uring: kernel maps the rings separately")
	}
	size := max(p.sqOff.array+p.sqEntries*4, p.cqOff.cqes+p.cqEntries*cqeSize)
	ring, err := unix.Mmap(r.fd, ioringOffSQRing, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		r.close()
		return nil, fmt.Errorf("io_uring rings: mmap: %w", err)
	}
	r.ring = ring
	sqes, err := unix.Mmap(r.fd, ioringOffSQEs, int(p.sqEntries*sqeSize), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		r.close()
		return nil, fmt.Errorf("io_uring SQEs: mmap: %w", err)
	}
	r.sqes = sqes
	at := func(off uint32) unsafe.Pointer { return unsafe.Pointer(&ring[off]) }
	r.sqHead, r.sqTail = (*uint32)(at(p.sqOff.head)), (*uint32)(at(p.sqOff.tail))
	r.sqMask, r.sqArray = *(*uint32)(at(p.sqOff.ringMask)), at(p.sqOff.array)
	r.cqHead, r.cqTail = (*uint32)(at(p.cqOff.head)), (*uint32)(at(p.cqOff.tail))
	r.cqMask, r.cqes = *(*uint32)(at(p.cqOff.ringMask)), at(p.cqOff.cqes)
	r.sqe = unsafe.Pointer(&sqes[0])
	r.tail = atomic.LoadUint32(r.sqTail)
	return r, nil
}

func (r *rawRing) close() {
	if r.sqes != nil {
		unix.Munmap(r.sqes)
	}
	if r.ring != nil {
		unix.Munmap(r.ring)
	}
	syscall.Close(r.fd)
}

// read submits one read of n bytes at file offset off of fd into addr and
// waits for it, returning the CQE's result (bytes, or -errno). ok is false
// when io_uring_enter itself failed with something other than EINTR,
// EAGAIN or EBUSY: the ring can no longer be trusted (res is then -errno).
//
//go:nosplit
//go:norace
func (r *rawRing) read(fd int, addr uintptr, n int, off int64) (res int, ok bool) {
	// Only one read is ever in flight, so the one SQE slot is free.
	sqe := r.sqe
	*(*uint8)(sqe) = ioringOpRead
	*(*uint8)(unsafe.Add(sqe, 1)) = 0 // flags
	*(*uint16)(unsafe.Add(sqe, 2)) = 0
	*(*int32)(unsafe.Add(sqe, 4)) = int32(fd)
	*(*uint64)(unsafe.Add(sqe, 8)) = uint64(off)
	*(*uint64)(unsafe.Add(sqe, 16)) = uint64(addr)
	*(*uint32)(unsafe.Add(sqe, 24)) = uint32(n)
	*(*uint32)(unsafe.Add(sqe, 28)) = 0 // rw_flags
	*(*uint64)(unsafe.Add(sqe, 32)) = 0 // user_data
	*(*uint64)(unsafe.Add(sqe, 40)) = 0 // buf_index, personality, splice_fd_in
	*(*uint64)(unsafe.Add(sqe, 48)) = 0
	*(*uint64)(unsafe.Add(sqe, 56)) = 0
	*(*uint32)(unsafe.Add(r.sqArray, 4*uintptr(r.tail&r.sqMask))) = 0
	r.tail++
	atomic.StoreUint32(r.sqTail, r.tail)
	for {
		toSubmit := r.tail - atomic.LoadUint32(r.sqHead)
		_, _, errno := syscall.RawSyscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(toSubmit), 1, ioringEnterGetEvents, 0, 0)
		head := *r.cqHead
		if head != atomic.LoadUint32(r.cqTail) {
			cqe := unsafe.Add(r.cqes, cqeSize*uintptr(head&r.cqMask))
			res = int(*(*int32)(unsafe.Add(cqe, 8)))
			atomic.StoreUint32(r.cqHead, head+1)
			return res, true
		}
		if errno != 0 && errno != syscall.EINTR && errno != syscall.EAGAIN && errno != syscall.EBUSY {
			return -int(errno), false
		}
	}
}

// fastURingReads reads j's device reads from *next up to n, one at a time
// through r, inside one long system call (see above), until they are done
// or one does not return its whole span. That one is returned for the
// ordinary path to settle: its index (-1 when there is none), the result,
// whether it went straight to Dst (else its bytes are in buf), and whether
// the ring failed. Reads that are one request's whole aligned span go
// straight into Dst; others into buf, whose rows are then copied out. It
// counts in c as settle does.
//
//go:nosplit
//go:norace
func fastURingReads(r *rawRing, j *job, next *int64, n int64, buf []byte, c *counters) (idx int64, res int, direct, broken bool) {
	idx = -1
	base := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	entersyscallblock()
	for *next < n {
		i := *next
		*next = i + 1
		d := &j.reads[i]
		to := base
		a, dir := j.directAddr(d)
		if dir {
			to = a
		}
		got, ok := r.read(j.files[d.file].fd, to, d.length, d.start)
		c.deviceReads++
		if !ok || got != d.length {
			idx, res, direct, broken = i, got, dir, !ok
			break
		}
		c.deviceBytes += int64(got)
		if !dir {
			deliverRaw(j, d, buf)
		}
	}
	exitsyscall()
	return idx, res, direct, broken
}
