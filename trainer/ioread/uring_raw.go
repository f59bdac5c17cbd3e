//go:build !race

package ioread

import (
	"fmt"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The io_uring engine reads through a ring of its own in one long system
// call, as the pread pool's raw loop does (pread_raw.go), and as fio does
// in one thread. Through giouring, every wait blocked in io_uring_enter
// inside an ordinary system call: at depth 1 the reading thread slept
// about as often per read as fio's, but the rest of the Go runtime added
// as many sleeps again: sysmon polled every 20 us to 10 ms while the P sat
// in the system call, and an idle M was woken and went back to sleep
// (docs/benchmarks.md, "sleeps per read"). That cost 7-9 us of CPU per
// read, 1.2-1.8x fio's in all; at depth 32 the split submission and
// completion goroutines cost 1.1-1.35x. Between one entersyscallblock and
// one exitsyscall the P is handed off once, every P is idle, and sysmon
// sleeps.
//
// Code in that region may not call ordinary Go functions (their stack
// checks may not grow the stack there) nor write pointers, so it cannot use
// giouring, whose ring pointers are unexported: rawRing is the few words of
// a ring it needs, set up with io_uring_setup and mmap, with no registered
// files or buffers (as fio's default). A read that does not return its
// whole span stops the loop and is read again the ordinary way.

// rawURing says whether the raw loop is built in (not under the race
// detector, whose instrumentation calls into Go code).
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

// uringParams is struct io_uring_params, 120 bytes.
type uringParams struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFD uint32
	resv                                                                   [3]uint32
	sqOff                                                                  sqringOffsets
	cqOff                                                                  cqringOffsets
}

// sqringOffsets is struct io_sqring_offsets: where the SQ ring's words are
// in its mapping.
type sqringOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

// cqringOffsets is struct io_cqring_offsets.
type cqringOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

// The kernel reads and writes exactly 120 bytes of params: a layout off by
// a word fails to compile.
const (
	_ = uint(unsafe.Sizeof(uringParams{}) - 120)
	_ = uint(120 - unsafe.Sizeof(uringParams{}))
)

// rawRing is an io_uring driven without giouring, with room for qd reads
// in flight. Its pointers point into the kernel's shared mappings, not Go
// memory.
type rawRing struct {
	fd      int
	qd      int
	ring    []byte // SQ and CQ rings, one mapping (FEAT_SINGLE_MMAP)
	sqeMem  []byte
	sqHead  *uint32
	sqTail  *uint32
	sqMask  uint32
	sqArray unsafe.Pointer
	cqHead  *uint32
	cqTail  *uint32
	cqMask  uint32
	cqes    unsafe.Pointer
	sqes    unsafe.Pointer
	tail    uint32 // our copy of *sqTail
	// free is a stack of the staging slots no read in flight uses (the
	// slots of the engine's bufPool); it is full between loops.
	free  []int32
	nfree int
	// failed lists the reads of the last loop that did not return their
	// whole span, for the ordinary path to read again.
	failed  []int64
	nfailed int
}

// newRawRing sets up a ring for qd reads in flight over slots staging
// buffers. Kernels without FEAT_SINGLE_MMAP (before 5.4) are refused; the
// caller then reads through giouring.
func newRawRing(qd, slots int) (*rawRing, error) {
	var p uringParams
	fd, _, errno := syscall.Syscall(unix.SYS_IO_URING_SETUP, uintptr(qd), uintptr(unsafe.Pointer(&p)), 0)
	if errno != 0 {
		return nil, fmt.Errorf("io_uring_setup: %w", errno)
	}
	r := &rawRing{fd: int(fd), qd: qd, free: make([]int32, slots), nfree: slots, failed: make([]int64, qd)}
	for i := range r.free {
		r.free[i] = int32(i)
	}
	if p.features&ioringFeatSingleMmap == 0 || int(p.sqEntries) < qd || int(p.cqEntries) < qd {
		r.close()
		return nil, fmt.Errorf("io_uring: kernel maps the rings separately or gave %d entries for %d", p.sqEntries, qd)
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
	r.sqeMem = sqes
	at := func(off uint32) unsafe.Pointer { return unsafe.Pointer(&ring[off]) }
	r.sqHead, r.sqTail = (*uint32)(at(p.sqOff.head)), (*uint32)(at(p.sqOff.tail))
	r.sqMask, r.sqArray = *(*uint32)(at(p.sqOff.ringMask)), at(p.sqOff.array)
	r.cqHead, r.cqTail = (*uint32)(at(p.cqOff.head)), (*uint32)(at(p.cqOff.tail))
	r.cqMask, r.cqes = *(*uint32)(at(p.cqOff.ringMask)), at(p.cqOff.cqes)
	r.sqes = unsafe.Pointer(&sqes[0])
	r.tail = atomic.LoadUint32(r.sqTail)
	return r, nil
}

func (r *rawRing) close() {
	if r.sqeMem != nil {
		unix.Munmap(r.sqeMem)
	}
	if r.ring != nil {
		unix.Munmap(r.ring)
	}
	syscall.Close(r.fd)
}

// push queues a read of n bytes at file offset off of fd into addr, tagged
// ud. The caller keeps at most qd reads in flight, so a slot is free.
//
//go:nosplit
//go:norace
func (r *rawRing) push(fd int, addr uintptr, n int, off int64, ud uint64) {
	k := r.tail & r.sqMask
	sqe := unsafe.Add(r.sqes, sqeSize*uintptr(k))
	*(*uint8)(sqe) = ioringOpRead
	*(*uint8)(unsafe.Add(sqe, 1)) = 0  // flags
	*(*uint16)(unsafe.Add(sqe, 2)) = 0 // ioprio
	*(*int32)(unsafe.Add(sqe, 4)) = int32(fd)
	*(*uint64)(unsafe.Add(sqe, 8)) = uint64(off)
	*(*uint64)(unsafe.Add(sqe, 16)) = uint64(addr)
	*(*uint32)(unsafe.Add(sqe, 24)) = uint32(n)
	*(*uint32)(unsafe.Add(sqe, 28)) = 0 // rw_flags
	*(*uint64)(unsafe.Add(sqe, 32)) = ud
	*(*uint64)(unsafe.Add(sqe, 40)) = 0 // buf_index, personality, splice_fd_in
	*(*uint64)(unsafe.Add(sqe, 48)) = 0
	*(*uint64)(unsafe.Add(sqe, 56)) = 0
	*(*uint32)(unsafe.Add(r.sqArray, 4*uintptr(k))) = k
	r.tail++
}

// enter hands the queued reads to the kernel and waits for at least one
// completion. It returns 0, or the errno of an io_uring_enter failure other
// than EINTR, EAGAIN and EBUSY (or of maxSoftFailures of those in a row
// with nothing completing, as the giouring loops give up), after which the
// ring is not to be trusted.
//
//go:nosplit
//go:norace
func (r *rawRing) enter() syscall.Errno {
	atomic.StoreUint32(r.sqTail, r.tail)
	for soft := 0; ; soft++ {
		toSubmit := r.tail - atomic.LoadUint32(r.sqHead)
		_, _, errno := syscall.RawSyscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(toSubmit), 1, ioringEnterGetEvents, 0, 0)
		if *r.cqHead != atomic.LoadUint32(r.cqTail) {
			return 0
		}
		if errno != 0 && (soft >= maxSoftFailures || errno != syscall.EINTR && errno != syscall.EAGAIN && errno != syscall.EBUSY) {
			return errno
		}
	}
}

// fastURingReads reads j's device reads from *next on through r, keeping
// r.qd of them in flight, inside one long system call (see above): fio's
// loop of filling the queue, waiting for a completion and reaping what has
// completed. Reads that are one request's whole aligned span go straight
// into Dst; others into a staging slot of mem (slotSize bytes each), whose
// rows are copied out as the read completes. It stops submitting at the
// first read that does not return its whole span, or when *stop is set,
// waits for the reads in flight, and returns: the reads that failed are in
// r.failed, and *next is the first read not submitted. A failed
// io_uring_enter is returned as its errno, with reads maybe still in the
// kernel. It counts in c as settle does.
//
//go:nosplit
//go:norace
func fastURingReads(r *rawRing, j *job, next *int64, stop *int32, mem []byte, slotSize int, c *counters) syscall.Errno {
	n := int64(len(j.reads))
	base := uintptr(unsafe.Pointer(unsafe.SliceData(mem)))
	r.nfailed = 0
	inflight := 0
	entersyscallblock()
	for {
		for inflight < r.qd && *next < n && r.nfailed == 0 && atomic.LoadInt32(stop) == 0 {
			i := *next
			d := &j.reads[i]
			slot := int32(-1)
			to, direct := j.directAddr(d)
			if !direct {
				if r.nfree == 0 {
					break
				}
				r.nfree--
				slot = r.free[r.nfree]
				to = base + uintptr(slot)*uintptr(slotSize)
			}
			*next = i + 1
			r.push(j.files[d.file].fd, to, d.length, d.start, uint64(i)<<32|uint64(uint32(slot)))
			c.deviceReads++
			inflight++
		}
		if inflight == 0 {
			break
		}
		if errno := r.enter(); errno != 0 {
			exitsyscall()
			return errno
		}
		head, tail := *r.cqHead, atomic.LoadUint32(r.cqTail)
		for ; head != tail; head++ {
			cqe := unsafe.Add(r.cqes, cqeSize*uintptr(head&r.cqMask))
			ud := *(*uint64)(cqe)
			res := int(*(*int32)(unsafe.Add(cqe, 8)))
			i, slot := int64(ud>>32), int32(uint32(ud))
			d := &j.reads[i]
			// A span that ends past the end of the file returns short
			// and is whole when it holds the last useful byte (settle).
			if res >= 0 && d.start+int64(res) >= d.needEnd {
				c.deviceBytes += int64(res)
				if slot >= 0 {
					lo := int(slot) * slotSize
					deliverRaw(j, d, mem[lo:lo+slotSize])
				}
			} else {
				r.failed[r.nfailed] = i
				r.nfailed++
			}
			if slot >= 0 {
				r.free[r.nfree] = slot
				r.nfree++
			}
			inflight--
		}
		atomic.StoreUint32(r.cqHead, head)
	}
	exitsyscall()
	return 0
}
