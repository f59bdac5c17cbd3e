//go:build !race

package ioread

import (
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The pread pool's inner loop runs as one long system call in the Go
// scheduler's eyes: entersyscallblock before the first pread of a run and
// exitsyscall after the last. A goroutine blocked in an ordinary system call
// keeps its P until sysmon takes it away (every 20 us to 10 ms), so with more
// blocking reads than GOMAXPROCS the pool queued behind sysmon, about 28k
// reads/s here, and each read paid the scheduler's hand-offs on the way out
// of and back into the kernel (twice fio's CPU per read with the P handed
// off on every call). Between the two calls the code below only claims reads
// with atomic adds, calls pread and copies rows out: nosplit functions
// without allocation, pointer writes or calls into ordinary Go code, which
// is what code in a system call may do (syscall.Syscall does the same around
// RawSyscall). Anything else (a short read, an error, a retry) leaves the
// loop and is settled by the ordinary path.
//
// Both functions are the runtime's, exported by linkname for exactly this
// use ("widely used packages access it using linkname", go.dev/issue/67401);
// giouring already needs -ldflags=-checklinkname=0 (doc.go).
//
// Under the race detector atomics and memory accesses call into the race
// runtime, which code in a system call may not; there the pool reads a pread
// at a time (pread_race.go).

// rawLoop says whether fastReads is built in.
const rawLoop = true

//go:linkname entersyscallblock runtime.entersyscallblock
func entersyscallblock()

//go:linkname exitsyscall runtime.exitsyscall
func exitsyscall()

// fastReads claims reads of j from next (below n) and reads each whole
// span with pread, until none is left, stop is set, or a read does not
// return its whole span. A read that is one request's whole span, with an
// aligned Dst, goes straight into Dst, as fio's reads go into its buffer;
// others go into buf and their rows are copied out. The read that did not
// return its whole span is returned to be settled the ordinary way: its
// index, the pread result (bytes, or -errno) and whether it went to Dst
// (then buf does not hold its bytes, and it is read again); idx is -1 when
// there is none. It counts in c as settle does.
//
//go:nosplit
//go:norace
func fastReads(j *job, next *int64, n int64, stop *int32, buf []byte, c *counters) (idx int64, res int, direct bool) {
	idx = -1
	base := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	entersyscallblock()
	for atomic.LoadInt32(stop) == 0 {
		i := atomic.AddInt64(next, 1) - 1
		if i >= n {
			break
		}
		d := &j.reads[i]
		fi := &j.files[d.file]
		to := base
		a, direct := j.directAddr(d)
		if direct {
			to = a
		}
		r, _, e := syscall.RawSyscall6(unix.SYS_PREAD64, uintptr(fi.fd), to, uintptr(d.length), uintptr(d.start), 0, 0)
		c.deviceReads++
		if e != 0 {
			idx, res = i, -int(e)
			break
		}
		if int(r) != d.length {
			idx, res = i, int(r)
			break
		}
		c.deviceBytes += int64(r)
		if !direct {
			deliverRaw(j, d, buf)
		}
	}
	exitsyscall()
	return idx, res, direct
}

// deliverRaw is job.deliver for fastReads: nosplit, so it may run inside the
// long system call (copy is a memmove, itself nosplit).
//
//go:nosplit
//go:norace
func deliverRaw(j *job, d *devRead, buf []byte) {
	for k := d.first; k < d.first+d.count; k++ {
		p := &j.pieces[k]
		lo := p.off - d.start
		copy(j.reqs[p.req].Dst[p.dst:p.dst+p.n], buf[lo:lo+int64(p.n)])
	}
}
