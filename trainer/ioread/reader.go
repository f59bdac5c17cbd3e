package ioread

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Engine names accepted by Options.Engine and returned by Reader.Engine.
const (
	EngineAuto    = "auto"
	EngineIOUring = "io_uring"
	EnginePread   = "pread"
)

// Defaults for Options fields left zero.
const (
	DefaultQueueDepth    = 64
	DefaultMaxMergeBytes = 128 << 10
	// maxQueueDepth keeps the ring within the kernel's limit on SQ entries
	// (IORING_MAX_ENTRIES, 32768) and the staging buffers within reason.
	maxQueueDepth = 4096
)

// ErrClosed is returned by Read on a closed Reader.
var ErrClosed = errors.New("ioread: reader is closed")

// ErrShortFile says a file ended before the last byte a request asked for.
var ErrShortFile = errors.New("file is shorter than the request")

// Request asks for Length bytes at Offset of file File (an index into the
// paths given to Open). Offset and Length need not be aligned. The bytes are
// written to Dst[:Length]. A request whose Offset, Length and Dst address are
// all aligned for the file (the sector size with O_DIRECT) is read by the
// device straight into Dst, with no staging copy; others are read into a
// staging buffer and copied. Tag is the caller's label; the reader ignores it.
type Request struct {
	File   int
	Offset int64
	Length int
	Dst    []byte
	Tag    uint64
}

// Options configure a Reader. Start from DefaultOptions: the zero Options
// reads through the page cache, because Direct is false.
type Options struct {
	// QueueDepth is the number of device reads in flight; 0 means
	// DefaultQueueDepth. Staging memory is bounded by it: the io_uring
	// engine has 2 x QueueDepth buffers of MaxMergeBytes (QueueDepth in
	// flight while up to QueueDepth more are copied out), the pread pool one
	// per worker.
	QueueDepth int
	// Direct opens the files with O_DIRECT, bypassing the page cache. A file
	// whose filesystem refuses O_DIRECT (EINVAL) is read buffered, with a note.
	Direct bool
	// Engine is "auto" (or ""), "io_uring" or "pread". Auto uses io_uring and
	// falls back to the pread pool when io_uring cannot be set up; asking for
	// "io_uring" explicitly makes that an error instead.
	Engine string
	// Workers is the size of the pread pool; 0 means QueueDepth. At most
	// QueueDepth workers run, one staging buffer each.
	Workers int
	// MaxMergeBytes caps one device read (and so the staging buffer size);
	// 0 means DefaultMaxMergeBytes. Setting it to the alignment turns merging
	// of neighbouring blocks off while still sharing a block between requests.
	MaxMergeBytes int
}

// DefaultOptions returns the options the feature store uses: O_DIRECT,
// queue depth 64, io_uring with a pread fallback, 128 KiB merged reads.
func DefaultOptions() Options {
	return Options{QueueDepth: DefaultQueueDepth, Direct: true, Engine: EngineAuto, MaxMergeBytes: DefaultMaxMergeBytes}
}

// Stats describe one Read. Read amplification is DeviceBytes/UsefulBytes.
type Stats struct {
	Requests    int   // requests in the batch, zero-length ones included
	DeviceReads int   // read operations issued to the kernel, retries included
	UsefulBytes int64 // sum of request lengths
	DeviceBytes int64 // bytes the kernel returned for those reads
	Merged      int   // request pieces that joined another piece's device read
	Retries     int   // reads reissued after a short read, EINTR or EAGAIN
}

// Add accumulates o into s.
func (s *Stats) Add(o Stats) {
	s.Requests += o.Requests
	s.DeviceReads += o.DeviceReads
	s.UsefulBytes += o.UsefulBytes
	s.DeviceBytes += o.DeviceBytes
	s.Merged += o.Merged
	s.Retries += o.Retries
}

// ReadError names the file and byte range a failed read was for.
type ReadError struct {
	Path   string
	Offset int64 // bytes
	Length int   // bytes
	Err    error
}

func (e *ReadError) Error() string {
	return fmt.Sprintf("ioread: read %s at offset %d (%d bytes): %v", e.Path, e.Offset, e.Length, e.Err)
}

func (e *ReadError) Unwrap() error { return e.Err }

// fileInfo is one opened file.
type fileInfo struct {
	path   string
	fd     int
	direct bool // opened with O_DIRECT: reads must be aligned
	align  int  // bytes; spans are widened to multiples of it
}

// engine runs one planned batch with its own staging buffers. run must not
// return while the kernel still owns one of them, unless it reports broken.
type engine interface {
	name() string
	run(ctx context.Context, j *job) (counters, error)
	stream(ctx context.Context, s *streamSrc) (counters, error)
	close() error
}

// faultFunc lets tests change a read's result (bytes, or -errno) before the
// reader sees it, to exercise short reads, EINTR, EAGAIN and EIO.
type faultFunc func(file int, off int64, n int, res int) int

// openHooks are the seams tests use; Open passes the real ones.
type openHooks struct {
	openFD   func(path string, flags int, mode uint32) (int, error)
	newUring func(files []fileInfo, qd, slotSize int) (*uringEngine, []string, error)
	fault    faultFunc
	// pread stands in for unix.Pread in the pread pool.
	pread func(fd int, p []byte, off int64) (int, error)
}

// Reader reads requests from a fixed set of files. Read and Close may be
// called from several goroutines; Reads are serialized, because one ring has
// one submission side. Use one Reader per worker for parallel batches.
// Besides its staging buffers a Reader keeps the planning memory of its
// largest batch, about 160 bytes a request, to reuse for the next.
type Reader struct {
	mu       sync.Mutex
	files    []fileInfo
	eng      engine
	slotSize int // bytes per staging buffer: the largest device read
	maxMerge int
	notes    []string
	fault    faultFunc
	closed   bool
	broken   error // set when the engine lost track of a buffer; Read refuses
	scratch  planScratch
}

// Open opens paths for reading with the given options. See Options for the
// defaults and the engine choice; Notes says what was chosen and why.
func Open(paths []string, opt Options) (*Reader, error) {
	return open(paths, opt, openHooks{openFD: unix.Open, newUring: newUringEngine})
}

func open(paths []string, opt Options, hooks openHooks) (_ *Reader, err error) {
	if len(paths) == 0 {
		return nil, errors.New("ioread: open: no files")
	}
	switch {
	case opt.QueueDepth < 0 || opt.QueueDepth > maxQueueDepth:
		return nil, fmt.Errorf("ioread: open: queue depth %d: want 1..%d (0 for %d)", opt.QueueDepth, maxQueueDepth, DefaultQueueDepth)
	case opt.Workers < 0:
		return nil, fmt.Errorf("ioread: open: workers %d: want >= 0", opt.Workers)
	case opt.MaxMergeBytes < 0:
		return nil, fmt.Errorf("ioread: open: max merge bytes %d: want >= 0", opt.MaxMergeBytes)
	}
	if opt.QueueDepth == 0 {
		opt.QueueDepth = DefaultQueueDepth
	}
	if opt.Workers == 0 {
		opt.Workers = opt.QueueDepth
	}
	if opt.MaxMergeBytes == 0 {
		opt.MaxMergeBytes = DefaultMaxMergeBytes
	}
	switch opt.Engine {
	case "":
		opt.Engine = EngineAuto
	case EngineAuto, EngineIOUring, EnginePread:
	default:
		return nil, fmt.Errorf("ioread: open: engine %q: want %q, %q or %q", opt.Engine, EngineAuto, EngineIOUring, EnginePread)
	}

	r := &Reader{maxMerge: opt.MaxMergeBytes, fault: hooks.fault}
	defer func() {
		if err != nil {
			_ = r.release()
		}
	}()
	maxAlign := 1
	for _, p := range paths {
		fi, note, err := openFile(p, opt.Direct, hooks.openFD)
		if err != nil {
			return nil, err
		}
		r.files = append(r.files, fi)
		if note != "" {
			r.notes = append(r.notes, note)
		}
		maxAlign = max(maxAlign, fi.align)
	}

	// Staging buffers are page aligned and a whole number of pages and of
	// alignments, so a read into any slot at any aligned progress is aligned.
	unit := max(unix.Getpagesize(), maxAlign)
	r.slotSize = int(alignUp(int64(max(opt.MaxMergeBytes, maxAlign)), unit))

	if opt.Engine != EnginePread {
		u, notes, uerr := hooks.newUring(r.files, opt.QueueDepth, r.slotSize)
		r.notes = append(r.notes, notes...)
		switch {
		case uerr == nil:
			r.eng = u
		case opt.Engine == EngineIOUring:
			return nil, fmt.Errorf("ioread: open: %w", uerr)
		default:
			r.notes = append(r.notes, fmt.Sprintf("io_uring unavailable (%v): using a pread pool of %d workers", uerr, min(opt.Workers, opt.QueueDepth)))
		}
	}
	if r.eng == nil {
		p, err := newPreadEngine(min(opt.Workers, opt.QueueDepth), r.slotSize, hooks.pread)
		if err != nil {
			return nil, err
		}
		r.eng = p
	}
	return r, nil
}

// Engine returns the engine in use: "io_uring" or "pread".
func (r *Reader) Engine() string { return r.eng.name() }

// Notes says, once, what the reader chose and why: a fallback to the pread
// pool, files read without O_DIRECT, registration that did not work.
// It is empty when everything went as asked.
func (r *Reader) Notes() string { return strings.Join(r.notes, "; ") }

// Alignment returns the read alignment of file in bytes (0 for a bad index).
func (r *Reader) Alignment(file int) int {
	if file < 0 || file >= len(r.files) {
		return 0
	}
	return r.files[file].align
}

// usable says why the reader cannot start a Read or Stream: closed, broken
// by an earlier failure, or ctx already done. r.mu is held.
func (r *Reader) usable(ctx context.Context) error {
	if r.closed {
		return ErrClosed
	}
	if r.broken != nil {
		return fmt.Errorf("ioread: reader unusable after an earlier failure: %w", r.broken)
	}
	return ctx.Err()
}

// Read fills every reqs[i].Dst[:Length] with exactly the requested bytes. It
// returns when all are read, on the first error (a *ReadError naming the file
// and offset), or, after the reads in flight drain, with ctx.Err() when ctx is
// done. On error the contents of the Dst buffers are unspecified.
func (r *Reader) Read(ctx context.Context, reqs []Request) (Stats, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.usable(ctx); err != nil {
		return Stats{}, err
	}
	j, err := plan(r.files, reqs, r.slotSize, r.maxMerge, &r.scratch)
	if err != nil {
		return Stats{}, err
	}
	j.fault = r.fault
	st := Stats{Requests: len(reqs), Merged: len(j.pieces) - len(j.reads)}
	for _, q := range reqs {
		st.UsefulBytes += int64(q.Length)
	}
	if len(j.reads) == 0 {
		return st, nil
	}
	c, err := r.eng.run(ctx, j)
	st.DeviceReads, st.DeviceBytes, st.Retries = c.deviceReads, c.deviceBytes, c.retries
	if c.broken != nil {
		r.broken = c.broken
	}
	return st, err
}

// Close releases the ring, the staging buffers and the files. It waits for a
// Read in progress to finish.
func (r *Reader) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	return r.release()
}

func (r *Reader) release() error {
	var errs []error
	if r.eng != nil {
		errs = append(errs, r.eng.close())
	}
	for _, f := range r.files {
		if f.fd < 0 {
			continue
		}
		if err := unix.Close(f.fd); err != nil {
			errs = append(errs, fmt.Errorf("ioread: close %s: %w", f.path, err))
		}
	}
	return errors.Join(errs...)
}
