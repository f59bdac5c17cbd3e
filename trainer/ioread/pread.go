package ioread

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// preadEngine is the fallback when io_uring is unavailable: workers-1
// goroutines started once per Reader, each owning one staging buffer, plus
// the goroutine that called Read (slot 0), all calling pread on the same
// merged spans. That is fio's psync engine with numjobs equal to the queue
// depth: one blocking read at a time per thread.
//
// A batch is handed over once (one wake-up per worker per batch, none at
// depth 1, where the caller reads alone); within it each participant claims
// the next device read with one atomic add, so a read costs no channel
// operation, lock or allocation. Claims go in index order, which keeps reads
// in (file, offset) order as planned. Each participant's run of reads is one
// long system call to the scheduler (fastReads in pread_raw.go), so the
// threads block in the kernel as fio's do, without a scheduler hand-off per
// read.
type preadEngine struct {
	workers int
	pool    *bufPool // one buffer per participant; slot 0 is the caller's
	// pread is unix.Pread or a test's stand-in; fast is false with a
	// stand-in, which the raw loop would bypass.
	pread func(fd int, p []byte, off int64) (int, error)
	fast  bool
	// wake[i] hands batches to worker i+1 (capacity 1, closed by close).
	wake   []chan *preadBatch
	exited sync.WaitGroup
	batch  preadBatch // the batch in progress, reused: Reads are serialized
}

// preadBatch is one Read (or Stream) as the participants share it.
type preadBatch struct {
	// next and stop are plain words used through sync/atomic's functions,
	// which the compiler turns into instructions even without inlining, as
	// fastReads needs.
	next int64 // next device read of j to claim
	stop int32 // not 0 after an error or cancellation: claim nothing more
	ctx  context.Context
	j    *job
	str  *preadStream // set for a Stream instead of j
	left atomic.Int32 // participants still working
	done chan struct{}

	mu    sync.Mutex
	total counters
	err   error
}

func newPreadEngine(workers, slotSize int, pread func(int, []byte, int64) (int, error)) (*preadEngine, error) {
	pool, err := newBufPool(workers, slotSize)
	if err != nil {
		return nil, err
	}
	fast := pread == nil && rawLoop
	if pread == nil {
		pread = unix.Pread
	}
	e := &preadEngine{workers: workers, pool: pool, pread: pread, fast: fast, wake: make([]chan *preadBatch, workers-1)}
	e.batch.done = make(chan struct{}, 1)
	for i := range e.wake {
		e.wake[i] = make(chan *preadBatch, 1)
		e.exited.Add(1)
		go e.worker(e.wake[i], i+1)
	}
	return e, nil
}

func (e *preadEngine) name() string { return EnginePread }

func (e *preadEngine) close() error {
	for _, w := range e.wake {
		close(w)
	}
	e.exited.Wait()
	return e.pool.release()
}

// worker lives as long as the Reader, taking part in every batch.
func (e *preadEngine) worker(wake <-chan *preadBatch, idx int) {
	defer e.exited.Done()
	for b := range wake {
		e.participate(b, idx)
	}
}

func (e *preadEngine) run(ctx context.Context, j *job) (counters, error) {
	return e.start(ctx, j, nil, len(j.reads))
}

// start runs one batch with up to want participants (the caller included)
// and waits until every one has finished.
func (e *preadEngine) start(ctx context.Context, j *job, s *preadStream, want int) (counters, error) {
	b := &e.batch
	b.ctx, b.j, b.str = ctx, j, s
	atomic.StoreInt64(&b.next, 0)
	atomic.StoreInt32(&b.stop, 0)
	b.total, b.err = counters{}, nil
	if ctx.Done() != nil {
		// The raw loop cannot look at ctx; it watches stop.
		defer context.AfterFunc(ctx, func() { atomic.StoreInt32(&b.stop, 1) })()
	}
	n := max(1, min(e.workers, want))
	b.left.Store(int32(n))
	for _, w := range e.wake[:n-1] {
		w <- b
	}
	e.participate(b, 0)
	<-b.done
	c, err := b.total, b.err
	if err == nil && atomic.LoadInt32(&b.stop) != 0 {
		// Stopped by ctx with nothing else wrong.
		err = ctx.Err()
	}
	b.ctx, b.j, b.str = nil, nil, nil
	return c, err
}

// participate is participant idx's share of batch b (staging slot idx).
func (e *preadEngine) participate(b *preadBatch, idx int) {
	var c counters
	var err error
	buf := e.pool.slot(idx)
	if b.str != nil {
		err = e.streamLoop(b, idx, buf, &c)
	} else {
		err = e.readClaimed(b.ctx, b.j, &b.next, &b.stop, buf, &c)
	}
	b.mu.Lock()
	b.total.add(c)
	if err != nil {
		atomic.StoreInt32(&b.stop, 1)
		if b.err == nil {
			b.err = err
		}
	}
	b.mu.Unlock()
	if b.left.Add(-1) == 0 {
		b.done <- struct{}{}
	}
}

// readClaimed reads the device reads of j it claims from next until none is
// left or stop is set: in the raw loop when it can, a read at a time
// otherwise (test hooks, and the rest of a read the raw loop left).
func (e *preadEngine) readClaimed(ctx context.Context, j *job, next *int64, stop *int32, buf []byte, c *counters) error {
	n := int64(len(j.reads))
	for atomic.LoadInt32(stop) == 0 {
		if e.fast && j.fault == nil {
			idx, res, direct := fastReads(j, next, n, stop, buf, c)
			var err error
			switch {
			case idx < 0:
				return nil
			case direct:
				// Its bytes went to Dst, not buf: read it again the
				// ordinary way (an error repeats; a short read settles).
				err = e.readOne(ctx, j, &j.reads[idx], buf, c)
			default:
				err = e.finishRead(ctx, j, &j.reads[idx], buf, c, res)
			}
			if err != nil {
				return err
			}
			continue
		}
		i := atomic.AddInt64(next, 1) - 1
		if i >= n {
			return nil
		}
		if err := e.readOne(ctx, j, &j.reads[i], buf, c); err != nil {
			return err
		}
	}
	return nil
}

// readOne reads device read d into buf, reissuing the remainder after short
// reads, EINTR and EAGAIN, and copies the useful bytes out.
func (e *preadEngine) readOne(ctx context.Context, j *job, d *devRead, buf []byte, c *counters) error {
	return e.readFrom(ctx, j, d, buf, c, readState{})
}

// finishRead settles res, the result of the first pread of d (counted
// already), and reads the rest of d if it needs more.
func (e *preadEngine) finishRead(ctx context.Context, j *job, d *devRead, buf []byte, c *counters, res int) error {
	var s readState
	switch out, err := j.settle(d, buf[:d.length], &s, res, c); out {
	case finished:
		return nil
	case failed:
		return err
	}
	return e.readFrom(ctx, j, d, buf, c, s)
}

// readFrom reads d from state s on, a pread at a time.
func (e *preadEngine) readFrom(ctx context.Context, j *job, d *devRead, buf []byte, c *counters, s readState) error {
	fd := j.files[d.file].fd
	buf = buf[:d.length]
	for {
		// Between reissues is the one place a participant can stop early
		// without leaving a read in flight.
		if err := ctx.Err(); err != nil {
			return err
		}
		c.deviceReads++
		n, err := e.pread(fd, buf[s.done:], d.start+int64(s.done))
		res := n
		if err != nil {
			var errno syscall.Errno
			if !errors.As(err, &errno) {
				errno = syscall.EIO
			}
			res = -int(errno)
		}
		out, err := j.settle(d, buf, &s, res, c)
		switch out {
		case finished:
			return nil
		case failed:
			return err
		}
	}
}
