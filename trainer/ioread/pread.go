package ioread

import (
	"context"
	"errors"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// preadEngine is the fallback when io_uring is unavailable: a pool of
// goroutines, each owning one staging buffer, calling pread on the same
// merged aligned spans. Blocking reads make QueueDepth threads wait in the
// kernel, so it costs more CPU per read than io_uring; the bytes are the same.
type preadEngine struct {
	workers int
	pool    *bufPool // one buffer per worker
}

func newPreadEngine(workers, slotSize int) (*preadEngine, error) {
	pool, err := newBufPool(workers, slotSize)
	if err != nil {
		return nil, err
	}
	return &preadEngine{workers: workers, pool: pool}, nil
}

func (e *preadEngine) name() string { return EnginePread }
func (e *preadEngine) close() error { return e.pool.release() }

func (e *preadEngine) run(ctx context.Context, j *job) (counters, error) {
	var (
		mu       sync.Mutex
		total    counters
		firstErr error
		stopOnce sync.Once
		stop     = make(chan struct{})
		wg       sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
		stopOnce.Do(func() { close(stop) })
	}
	stopped := func() bool {
		select {
		case <-stop:
			return true
		default:
			return false
		}
	}

	// Unbuffered: a device read is handed out only when a worker (and so a
	// staging buffer) is free, which keeps reads in (file, offset) order.
	work := make(chan int)
	nw := min(e.workers, len(j.reads))
	for w := range nw {
		wg.Add(1)
		go func(buf []byte) {
			defer wg.Done()
			var c counters
			for i := range work {
				if stopped() {
					continue
				}
				if err := e.readOne(ctx, j, &j.reads[i], buf, &c); err != nil {
					fail(err)
				}
			}
			mu.Lock()
			total.add(c)
			mu.Unlock()
		}(e.pool.slot(w))
	}

	done := ctx.Done()
dispatch:
	for i := range j.reads {
		select {
		case work <- i:
		case <-stop:
			break dispatch
		case <-done:
			fail(ctx.Err())
			break dispatch
		}
	}
	close(work)
	wg.Wait()
	return total, firstErr
}

// readOne reads device read d into buf, reissuing the remainder after short
// reads, EINTR and EAGAIN, and copies the useful bytes out.
func (e *preadEngine) readOne(ctx context.Context, j *job, d *devRead, buf []byte, c *counters) error {
	fd := j.files[d.file].fd
	buf = buf[:d.length]
	var s readState
	for {
		// Between reissues is the one place a worker can stop early without
		// leaving a read in flight.
		if err := ctx.Err(); err != nil {
			return err
		}
		c.deviceReads++
		n, err := unix.Pread(fd, buf[s.done:], d.start+int64(s.done))
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
