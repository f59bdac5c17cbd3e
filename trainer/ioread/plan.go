package ioread

import (
	"fmt"
	"math"
	"syscall"
	"unsafe"
)

// maxAttempts bounds how often one device read is reissued without making
// progress (EINTR, EAGAIN), so a device that keeps saying "try again" gives
// an error instead of a hang.
const maxAttempts = 100

// job is one Read call planned into device reads.
type job struct {
	files  []fileInfo
	reqs   []Request
	reads  []devRead // sorted by (file, start)
	pieces []piece   // grouped by device read
	fault  faultFunc
}

// devRead is one aligned span of one file, read into one staging buffer.
// Its fields do not change once planned, so the submission and completion
// sides may both read them without synchronizing.
type devRead struct {
	file    int
	start   int64 // file offset of the span, aligned
	length  int   // bytes, aligned; <= the staging buffer size
	needEnd int64 // file offset just past the last useful byte
	first   int   // pieces[first : first+count] are served by this read
	count   int
}

// piece is the part of a request that one device read serves: a request
// larger than a staging buffer is split into several.
type piece struct {
	req int
	off int64 // file offset of the piece's first byte
	n   int   // bytes
	dst int   // offset of the piece in reqs[req].Dst
}

// counters are what an engine measured; Read turns them into Stats.
type counters struct {
	deviceReads int
	deviceBytes int64
	retries     int
	sqFull      int // times an SQE was wanted and the submission queue had none free
	// broken is set when the engine can no longer account for its staging
	// buffers (the ring failed while reads were in flight); the Reader then
	// refuses further reads.
	broken error
}

func (c *counters) add(o counters) {
	c.deviceReads += o.deviceReads
	c.deviceBytes += o.deviceBytes
	c.retries += o.retries
	c.sqFull += o.sqFull
}

func alignDown(x int64, a int) int64 { return x - x%int64(a) }
func alignUp(x int64, a int) int64   { return alignDown(x+int64(a)-1, a) }

// plan validates reqs and turns them into merged device reads. Each request
// is widened to the aligned span around it and cut into pieces of at most
// slotSize bytes of span; pieces are sorted by (file, span) and a piece joins
// the previous device read when its span overlaps or touches it and the
// merged span stays within maxMerge bytes (never below the file's alignment,
// so requests in the same block always share a read).
//
// sc, when not nil, lends plan its memory from the previous batch; the job
// returned uses it until the next call with the same sc.
func plan(files []fileInfo, reqs []Request, slotSize, maxMerge int, sc *planScratch) (*job, error) {
	if sc == nil {
		sc = &planScratch{}
	}
	ks := sc.ks[:0]
	for i, q := range reqs {
		switch {
		case q.File < 0 || q.File >= len(files):
			return nil, fmt.Errorf("ioread: request %d: file %d: have %d files", i, q.File, len(files))
		case q.Offset < 0:
			return nil, fmt.Errorf("ioread: request %d (%s): negative offset %d", i, files[q.File].path, q.Offset)
		case q.Length < 0:
			return nil, fmt.Errorf("ioread: request %d (%s): negative length %d", i, files[q.File].path, q.Length)
		case q.Offset > math.MaxInt64-int64(q.Length)-int64(slotSize):
			return nil, fmt.Errorf("ioread: request %d (%s): offset %d + length %d overflows", i, files[q.File].path, q.Offset, q.Length)
		case len(q.Dst) < q.Length:
			return nil, fmt.Errorf("ioread: request %d (%s at offset %d): Dst holds %d bytes, want %d", i, files[q.File].path, q.Offset, len(q.Dst), q.Length)
		case q.Length == 0:
			continue
		}
		a := files[q.File].align
		end := q.Offset + int64(q.Length)
		spanEnd := alignUp(end, a)
		for cs := alignDown(q.Offset, a); cs < spanEnd; cs += int64(slotSize) {
			lo, hi := max(q.Offset, cs), min(end, cs+int64(slotSize))
			ks = append(ks, keyed{
				file: q.File, start: alignDown(lo, a), end: alignUp(hi, a),
				p: piece{req: i, off: lo, n: int(hi - lo), dst: int(lo - q.Offset)},
			})
		}
	}
	sc.ks = ks
	order := sc.sortOrder(ks, len(files))
	// At most one device read per piece: sized once, not grown.
	sc.pieces = grow(sc.pieces, len(ks))
	sc.reads = grow(sc.reads, len(ks))
	j := &job{files: files, reqs: reqs, pieces: sc.pieces, reads: sc.reads[:0]}
	for i, o := range order {
		k := &ks[o]
		j.pieces[i] = k.p
		limit := int64(max(maxMerge, files[k.file].align))
		if n := len(j.reads); n > 0 {
			d := &j.reads[n-1]
			curEnd := d.start + int64(d.length)
			if d.file == k.file && k.start <= curEnd && max(curEnd, k.end)-d.start <= limit {
				d.length = int(max(curEnd, k.end) - d.start)
				d.needEnd = max(d.needEnd, k.p.off+int64(k.p.n))
				d.count++
				continue
			}
		}
		j.reads = append(j.reads, devRead{
			file: k.file, start: k.start, length: int(k.end - k.start),
			needEnd: k.p.off + int64(k.p.n), first: i, count: 1,
		})
	}
	return j, nil
}

// outcome is what a read's result means for its device read.
type outcome int

const (
	finished  outcome = iota // all useful bytes are in the buffer and copied out
	readAgain                // reissue for span bytes [done, length)
	failed                   // the error says why
)

// readState is the progress of one device read.
type readState struct {
	done     int // span bytes already in the buffer
	attempts int // reissues so far
}

// settle applies the result res of reading span bytes [s.done, d.length) of
// d into buf (res is a byte count, or -errno as in a CQE; buf is nil when
// the read went straight into its request's Dst, see directAddr). It updates s and
// says what to do next; on finished it has copied the useful bytes to the
// requests. Both engines use it, so they agree on short reads, retries and
// errors.
func (j *job) settle(d *devRead, buf []byte, s *readState, res int, c *counters) (outcome, error) {
	fi := &j.files[d.file]
	if j.fault != nil {
		res = j.fault(d.file, d.start+int64(s.done), d.length-s.done, res)
	}
	if res < 0 {
		errno := syscall.Errno(-res)
		if errno != syscall.EINTR && errno != syscall.EAGAIN {
			return failed, &ReadError{Path: fi.path, Offset: d.start + int64(s.done), Length: d.length - s.done, Err: errno}
		}
		// Only these reissues make no progress, so only they are bounded.
		s.attempts++
		if s.attempts > maxAttempts {
			return failed, &ReadError{Path: fi.path, Offset: d.start + int64(s.done), Length: d.length - s.done,
				Err: fmt.Errorf("gave up after %d reissues: %w", maxAttempts, errno)}
		}
		c.retries++
		return readAgain, nil
	}
	c.deviceBytes += int64(res)
	s.done += res
	if d.start+int64(s.done) >= d.needEnd {
		if buf != nil {
			j.deliver(d, buf)
		}
		return finished, nil
	}
	// Short of the last useful byte. A read that returned nothing is at end
	// of file; with O_DIRECT a read that stops off an alignment boundary is
	// too, since direct reads return whole blocks except at the end.
	if res == 0 || (fi.direct && s.done%fi.align != 0) {
		return failed, j.shortFile(d, d.start+int64(s.done))
	}
	c.retries++
	return readAgain, nil
}

// directAddr returns the address to read device read d straight into, and
// true, when d is the whole aligned span of a single request whose Dst is
// aligned for the file: then the read needs no staging buffer and no copy,
// as fio reads into its own buffer. Go heap memory does not move, and the
// job references the Dst until the read is settled.
//
//go:nosplit
//go:norace
func (j *job) directAddr(d *devRead) (uintptr, bool) {
	if d.count != 1 {
		return 0, false
	}
	p := &j.pieces[d.first]
	dst := j.reqs[p.req].Dst
	if p.off != d.start || p.n != d.length || p.dst+p.n > len(dst) {
		return 0, false
	}
	a := uintptr(unsafe.Pointer(unsafe.SliceData(dst))) + uintptr(p.dst)
	if a%uintptr(j.files[d.file].align) != 0 {
		return 0, false
	}
	return a, true
}

// deliver copies the useful bytes of a finished device read to the requests.
func (j *job) deliver(d *devRead, buf []byte) {
	for _, p := range j.pieces[d.first : d.first+d.count] {
		src := buf[p.off-d.start : p.off-d.start+int64(p.n)]
		copy(j.reqs[p.req].Dst[p.dst:p.dst+p.n], src)
	}
}

// shortFile names the first request of d that reaches past fileEnd.
func (j *job) shortFile(d *devRead, fileEnd int64) error {
	fi := &j.files[d.file]
	for _, p := range j.pieces[d.first : d.first+d.count] {
		if p.off+int64(p.n) > fileEnd {
			q := j.reqs[p.req]
			return &ReadError{Path: fi.path, Offset: q.Offset, Length: q.Length, Err: fmt.Errorf("%w (it ends at byte %d)", ErrShortFile, fileEnd)}
		}
	}
	// Unreachable: fileEnd < d.needEnd, and needEnd is some piece's end.
	return &ReadError{Path: fi.path, Offset: d.start, Length: d.length, Err: fmt.Errorf("%w (it ends at byte %d)", ErrShortFile, fileEnd)}
}
