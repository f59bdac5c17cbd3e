package ioread

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/pawelgaczynski/giouring"
)

// uringEngine reads with io_uring. The ring lives as long as the Reader; one
// Read at a time uses it, with its submission side in one goroutine and its
// completion side in another (Hyperion III-A).
//
// It has 2 x qd staging buffers but lets only qd reads be in flight: while
// the completion side copies rows out of the buffers of finished reads, the
// submission side has spare buffers to refill the queue with at once. With
// qd buffers the disk would sit idle during every copy-out. A read that is
// one request's whole aligned span goes straight into its Dst instead
// (job.directAddr) and leaves its staging buffer unused.
type uringEngine struct {
	ring       *giouring.Ring
	pool       *bufPool
	qd         int  // reads in flight at most
	fixedFiles bool // files registered: SQEs name them by index, sparing an fget/fput per read
	fixedBufs  bool // staging buffers registered: the kernel skips pinning their pages per read
	// inline runs a Read in one goroutine (runInline) instead of split
	// submission and completion sides; set for queue depths up to
	// inlineMaxDepth.
	inline bool
	// lastSQFull is how often the last Read found the submission queue
	// full (tests check that they reach that path).
	lastSQFull int
	// free lists the staging buffers no read owns; all of them between
	// Reads. During a Read it is guarded by uringRun.mu.
	free []int
	// lost keeps the jobs of a Read or Stream that broke with reads still
	// in the kernel: those reads may yet write to their requests' Dst
	// (directAddr), so that memory must stay allocated for the ring's life.
	lost []*job
	// raw is the ring of the loop that runs as one long system call
	// (uring_raw.go); nil under the race detector, where it could not be
	// set up, or after it broke (then rawLost keeps it to close).
	raw     *rawRing
	rawLost []*rawRing
}

// newUringEngine sets up a ring with room for qd reads in flight, allocates
// its staging buffers and registers them and the files when the kernel lets
// it. A failure to set up the ring is returned (the caller may fall back to
// pread); a failure to register only costs speed and is reported as a note.
func newUringEngine(files []fileInfo, qd, slotSize int) (*uringEngine, []string, error) {
	return newUringEngineSized(files, qd, qd, slotSize)
}

// newUringEngineSized is newUringEngine with a ring of the given number of
// SQ entries (the kernel rounds it up to a power of two; the CQ gets twice
// as many). Fewer entries than qd make the submission queue fill up and the
// completion queue overflow, which tests use.
func newUringEngineSized(files []fileInfo, qd, entries, slotSize int) (*uringEngine, []string, error) {
	ring := giouring.NewRing()
	// SUBMIT_ALL (5.18+) keeps submitting after an SQE fails to prepare, so
	// every prepared SQE ends as a CQE; older kernels refuse the flag.
	err := ring.QueueInit(uint32(entries), giouring.SetupSubmitAll)
	if errors.Is(err, syscall.EINVAL) {
		ring = giouring.NewRing()
		err = ring.QueueInit(uint32(entries), 0)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("io_uring_setup: %w", err)
	}
	pool, err := newBufPool(2*qd, slotSize)
	if err != nil {
		ring.QueueExit()
		return nil, nil, err
	}
	e := &uringEngine{ring: ring, pool: pool, qd: qd, inline: qd <= inlineMaxDepth, free: make([]int, pool.n)}
	if rawURing && entries >= qd {
		// Best effort: without it Read goes through giouring, as it does
		// on a ring sized below the depth (tests of a full queue).
		if raw, err := newRawRing(qd, pool.n); err == nil {
			e.raw = raw
		}
	}
	for i := range e.free {
		e.free[i] = i
	}
	var notes []string

	fds := make([]int32, len(files))
	for i, f := range files {
		fds[i] = int32(f.fd)
	}
	// Register through the raw call: giouring's RegisterFiles passes a []int
	// where the kernel reads __s32 and drops the errno.
	if _, errno := ring.Register(ring.RingFd(), giouring.RegisterFiles, unsafe.Pointer(&fds[0]), uint32(len(fds))); errno == 0 {
		e.fixedFiles = true
	} else {
		notes = append(notes, fmt.Sprintf("io_uring: registering files failed (%v), using plain file descriptors", errno))
	}
	runtime.KeepAlive(fds)

	iov := make([]syscall.Iovec, pool.n)
	for i := range iov {
		iov[i].Base = &pool.slot(i)[0]
		iov[i].SetLen(pool.slotSize)
	}
	// Pinning counts against RLIMIT_MEMLOCK for unprivileged users; when it
	// does not fit, plain reads work the same, a little slower.
	if _, err := ring.RegisterBuffers(iov); err == nil {
		e.fixedBufs = true
	} else {
		notes = append(notes, fmt.Sprintf("io_uring: registering %d staging buffers failed (%v), using plain reads", pool.n, err))
	}
	return e, notes, nil
}

func (e *uringEngine) name() string { return EngineIOUring }

func (e *uringEngine) close() error {
	// Closing the ring releases the registered files and buffers with it.
	e.ring.QueueExit()
	if e.raw != nil {
		e.raw.close()
	}
	for _, r := range e.rawLost {
		r.close()
	}
	return e.pool.release()
}

// retryMsg is a device read for the submission side to issue into staging
// buffer slot from span byte done: a new read (done 0) or the rest of a
// short or interrupted one, which keeps its buffer.
type retryMsg struct {
	idx, slot, done int
}

// uringRun is one Read on the ring.
//
// The two sides share only the hand-off state under mu: credits (reads that
// may go in flight; the completion side returns one per CQE), free buffers
// and reads to reissue. Each side takes or gives everything available in one
// critical section per batch, so the per-read cost of the hand-off is a few
// nanoseconds, not a channel operation. The submission side parks on wake
// when it has nothing to do; the completion side parks in io_uring_enter.
type uringRun struct {
	e *uringEngine
	j *job

	mu      sync.Mutex
	credits int        // reads that may go in flight now
	retries []retryMsg // reads to reissue; they own their buffers
	parked  bool       // the submission side waits on wake
	moreNew bool       // some reads have not been issued yet

	wake      chan struct{} // capacity 1: the hand-off state changed while parked
	stop      chan struct{} // closed when every read is settled, or on error or cancel
	notify    chan struct{} // capacity 1: more SQEs reached the kernel
	subDone   chan struct{} // closed when the submission side will submit nothing more
	submitted atomic.Int64  // SQEs the kernel has consumed

	// Owned by the submission side until subDone is closed.
	subCounters counters
	subErr      error
}

// cqeCopy is what the completion side keeps of a CQE after returning its
// slot in the completion queue to the kernel.
type cqeCopy struct {
	ud  uint64
	res int32
}

// userData packs a device read's index and its staging buffer into an SQE's
// user_data, so the completion side learns the buffer from the CQE alone and
// shares no per-read state with the submission side.
func userData(idx, slot int) uint64 { return uint64(idx)<<32 | uint64(uint32(slot)) }

// slot is the staging buffer of the read cq completes.
func (cq cqeCopy) slot() int { return int(uint32(cq.ud)) }

// settleCQE applies completion cq to its device read, as both modes do: m is
// the read with its buffer; reissue says to submit m again for the rest of a
// short or interrupted read (it keeps the buffer); otherwise m.slot is free
// and err, if not nil, says why the read failed.
func (e *uringEngine) settleCQE(j *job, states []readState, cq cqeCopy, c *counters) (m retryMsg, reissue bool, err error) {
	idx := int(cq.ud >> 32)
	m = retryMsg{idx: idx, slot: cq.slot()}
	d := &j.reads[idx]
	var buf []byte // nil: the bytes went straight to the request's Dst
	if _, direct := j.directAddr(d); !direct {
		buf = e.pool.slot(m.slot)[:d.length]
	}
	out, err := j.settle(d, buf, &states[idx], int(cq.res), c)
	if out == readAgain {
		m.done = states[idx].done
		return m, true, nil
	}
	return m, false, err
}

func (e *uringEngine) run(ctx context.Context, j *job) (counters, error) {
	if e.raw != nil && j.fault == nil {
		return e.runRaw(ctx, j)
	}
	if e.inline {
		c, err := e.runInline(ctx, j, 0, nil)
		e.lastSQFull = c.sqFull
		return c, err
	}
	u := &uringRun{
		e: e, j: j,
		credits: e.qd,
		wake:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
		notify:  make(chan struct{}, 1),
		subDone: make(chan struct{}),
	}
	go u.submitLoop()
	c, err := u.reapLoop(ctx)
	c.add(u.subCounters) // subDone is closed: the submission side has finished writing it
	e.lastSQFull = c.sqFull
	if u.subErr != nil {
		// SQEs left in the submission queue hold staging buffers.
		if c.broken == nil {
			c.broken = u.subErr
			e.lost = append(e.lost, j)
		}
		if err == nil {
			err = u.subErr
		}
	}
	return c, err
}

// runRaw reads j in the raw loop (uring_raw.go). A read that does not
// return its whole span (a short read that needs the rest, an error) stops
// the loop, which waits for the reads in flight; those reads, and the ones
// not yet submitted, are then read through giouring (runInline), which
// settles short reads, retries and errors. Cancellation is seen by a
// goroutine that sets the loop's stop word. If io_uring_enter itself fails,
// reads may still be in the kernel: the raw ring is set aside for good and
// the job kept, as a broken Read's are.
func (e *uringEngine) runRaw(ctx context.Context, j *job) (counters, error) {
	var c counters
	if err := ctx.Err(); err != nil {
		return c, err
	}
	stop := new(int32) // the watcher may set it after runRaw returns
	if done := ctx.Done(); done != nil {
		finished := make(chan struct{})
		defer close(finished)
		go func() {
			select {
			case <-done:
				atomic.StoreInt32(stop, 1)
			case <-finished:
			}
		}()
	}
	var next int64
	if errno := fastURingReads(e.raw, j, &next, stop, e.pool.mem, e.pool.slotSize, &c); errno != 0 {
		err := fmt.Errorf("ioread: io_uring_enter: %w", errno)
		c.broken = err
		e.lost = append(e.lost, j)
		e.rawLost, e.raw = append(e.rawLost, e.raw), nil
		return c, err
	}
	if err := ctx.Err(); err != nil && atomic.LoadInt32(stop) != 0 {
		return c, err
	}
	e.lastSQFull = 0 // the raw loop never finds its queue full
	if e.raw.nfailed == 0 && next == int64(len(j.reads)) {
		return c, nil
	}
	again := make([]int, e.raw.nfailed)
	for k, i := range e.raw.failed[:e.raw.nfailed] {
		again[k] = int(i)
	}
	rest, err := e.runInline(ctx, j, int(next), again)
	c.add(rest)
	e.lastSQFull = rest.sqFull
	return c, err
}

// give hands credits, freed buffers and reads to reissue to the submission
// side. It wakes the submission side only if it is parked and now has
// something to issue: a spurious wake-up would cost a thread wake-up (an
// inter-processor interrupt, a VM exit on a virtual machine) per batch. It
// reports whether it woke it.
func (u *uringRun) give(credits int, freed []int, again []retryMsg) bool {
	u.mu.Lock()
	u.credits += credits
	u.e.free = append(u.e.free, freed...)
	u.retries = append(u.retries, again...)
	woke := u.parked && u.credits > 0 && (len(u.retries) > 0 || u.moreNew && len(u.e.free) > 0)
	if woke {
		u.parked = false
	}
	u.mu.Unlock()
	if woke {
		select {
		case u.wake <- struct{}{}:
		default:
		}
	}
	return woke
}

// submitLoop is the submission side: while a read may go in flight and
// there is a read to issue with a buffer to put it in, it prepares SQEs; it
// hands what it prepared to the kernel before it would wait, and it waits
// only for the hand-off state to change, never for a completion itself.
func (u *uringRun) submitLoop() {
	defer close(u.subDone)
	ring := u.e.ring
	reads := u.j.reads
	next := 0    // first read not yet issued
	pending := 0 // SQEs prepared but not yet consumed by the kernel
	batch := make([]retryMsg, 0, u.e.qd)
	// Submit in chunks of an eighth of the queue depth rather than all that
	// is ready at once: completions arrive in bursts (a virtio disk answers
	// a whole queue with one interrupt), and the disk can start on the first
	// reads of a refill while the rest are still being prepared. One
	// io_uring_enter per read would cost more CPU for no more IOPS; one per
	// burst left the disk idle for the whole refill (about 10% of the IOPS
	// at depth 32 here).
	chunk := max(1, u.e.qd/8)

	for {
		select {
		case <-u.stop:
			goto out
		default:
		}
		// Take everything that can go in flight now.
		batch = batch[:0]
		u.mu.Lock()
		for ; u.credits > 0; u.credits-- {
			if n := len(u.retries); n > 0 {
				batch = append(batch, u.retries[n-1])
				u.retries = u.retries[:n-1]
			} else if n := len(u.e.free); next < len(reads) && n > 0 {
				batch = append(batch, retryMsg{idx: next, slot: u.e.free[n-1]})
				u.e.free = u.e.free[:n-1]
				next++
			} else {
				break
			}
		}
		u.moreNew = next < len(reads)
		if len(batch) == 0 && pending == 0 {
			u.parked = true
		}
		u.mu.Unlock()

		if len(batch) == 0 {
			if pending > 0 {
				// Give the kernel what is prepared before waiting, so the
				// disk works meanwhile; then look again.
				if !u.flush(&pending) {
					goto out
				}
				continue
			}
			select {
			case <-u.wake:
			case <-u.stop:
				goto out
			}
			continue
		}
		for i, m := range batch {
			sqe := ring.GetSQE()
			if sqe == nil {
				// The SQ has fewer entries than reads may be in flight (the
				// kernel caps entries, or a test asked so): submit first.
				u.subCounters.sqFull++
				if !u.flush(&pending) {
					u.abandon(batch[i:])
					goto out
				}
				sqe = ring.GetSQE()
			}
			u.e.prepare(sqe, u.j, m, &u.subCounters)
			pending++
			if pending >= chunk && !u.flush(&pending) {
				u.abandon(batch[i+1:])
				goto out
			}
		}
	}
out:
	// SQEs already prepared own staging buffers: they must reach the kernel
	// so their completions return the buffers.
	if pending > 0 {
		u.flush(&pending)
	}
	// Reads sent back before stop still hold buffers; the completion side
	// sends none after closing stop.
	u.mu.Lock()
	for _, m := range u.retries {
		u.e.free = append(u.e.free, m.slot)
	}
	u.retries = nil
	u.mu.Unlock()
}

// abandon returns the buffers of reads taken for issue that will never reach
// the ring, because submitting failed.
func (u *uringRun) abandon(ms []retryMsg) {
	slots := make([]int, len(ms))
	for i, m := range ms {
		slots[i] = m.slot
	}
	u.give(len(ms), slots, nil)
}

// prepare fills sqe with device read m of j and counts it in c.
func (e *uringEngine) prepare(sqe *giouring.SubmissionQueueEntry, j *job, m retryMsg, c *counters) {
	d := &j.reads[m.idx]
	n := uint32(d.length - m.done)
	off := uint64(d.start + int64(m.done))
	fd := j.files[d.file].fd
	if e.fixedFiles {
		fd = d.file
	}
	// A read that is one request's whole aligned span goes straight into
	// its Dst (the staging slot m.slot stays reserved for it, unused).
	if dst, direct := j.directAddr(d); direct {
		sqe.PrepareRead(fd, dst+uintptr(m.done), n, off)
	} else if addr := e.pool.addr(m.slot, m.done); e.fixedBufs {
		sqe.PrepareReadFixed(fd, addr, n, off, m.slot)
	} else {
		sqe.PrepareRead(fd, addr, n, off)
	}
	sqe.OpcodeFlags = 0 // rw_flags: prepareRW leaves the previous SQE's value
	if e.fixedFiles {
		sqe.Flags |= giouring.SqeFixedFile
	}
	sqe.UserData = userData(m.idx, m.slot)
	c.deviceReads++
}

// flush submits the prepared SQEs. It returns false if the ring failed; the
// SQEs it could not submit then hold their buffers for good, and the Reader
// is marked broken.
func (u *uringRun) flush(pending *int) bool {
	for busy := 0; *pending > 0; {
		n, err := u.e.ring.Submit()
		switch {
		case err == nil && n > 0:
			*pending -= int(n)
			u.submitted.Add(int64(n))
			select {
			case u.notify <- struct{}{}:
			default:
			}
			continue
		case errors.Is(err, syscall.EINTR):
			continue
		case err == nil || errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EBUSY):
			// The kernel is short of memory or the CQ is backed up; the
			// completion side drains it. Back off briefly, but not forever.
			if busy++; busy < maxSoftFailures {
				time.Sleep(10 * time.Microsecond)
				continue
			}
		}
		if err == nil {
			err = syscall.EAGAIN
		}
		u.subErr = fmt.Errorf("ioread: io_uring_enter (submit %d reads): %w", *pending, err)
		return false
	}
	return true
}

// reapLoop is the completion side: it reaps CQEs, returns their credits so
// the submission side can refill the queue, then settles each device read
// (copying rows out, or sending it back for the rest of a short read) and
// returns the staging buffers. It decides when the Read is over: all reads
// settled, the first error, or ctx done; then it closes stop and keeps
// reaping until every SQE the kernel took has completed.
func (u *uringRun) reapLoop(ctx context.Context) (counters, error) {
	var (
		c        counters
		firstErr error
		stopped  bool
		subDone  bool
		reaped   int64
		settled  int
		states   = make([]readState, len(u.j.reads))
		cqes     = make([]*giouring.CompletionQueueEvent, u.e.qd)
		got      = make([]cqeCopy, u.e.qd)
		freed    = make([]int, 0, u.e.qd)
		again    = make([]retryMsg, 0, u.e.qd)
		ring     = u.e.ring
		ctxDone  = ctx.Done()
	)
	halt := func(err error) {
		if firstErr == nil {
			firstErr = err
		}
		if !stopped {
			stopped = true
			close(u.stop)
		}
	}
	for {
		if !stopped && settled == len(u.j.reads) {
			halt(nil)
		}
		if !subDone {
			select {
			case <-u.subDone:
				subDone = true
			default:
			}
		}
		// Load after checking subDone: once it is closed the count is final.
		sub := u.submitted.Load()
		if subDone && reaped == sub {
			return c, firstErr
		}
		n := int(ring.PeekBatchCQE(cqes))
		if n == 0 {
			// Wait in the kernel only while a read the kernel took has not
			// completed: then a CQE is sure to come. reaped can run ahead of
			// sub, since a read may complete (a page-cache hit, inline)
			// before Submit returns and the submission side counts it;
			// waiting on the ring then would never return.
			if reaped >= sub {
				select {
				case <-u.notify:
				case <-u.subDone:
					subDone = true
				case <-ctxDone:
					ctxDone = nil
					halt(ctx.Err())
				}
				continue
			}
			if _, err := ring.WaitCQE(); err != nil && !softEnterError(err) {
				// The ring is unusable and reads are in flight: their buffers
				// cannot be reused. Stop the submission side and give up.
				err = fmt.Errorf("ioread: io_uring_enter (wait): %w", err)
				halt(err)
				<-u.subDone
				c.broken = err
				u.e.lost = append(u.e.lost, u.j)
				return c, firstErr
			}
			continue
		}
		for i, cqe := range cqes[:n] {
			got[i] = cqeCopy{ud: cqe.UserData, res: cqe.Res}
		}
		ring.CQAdvance(uint32(n))
		reaped += int64(n)

		// These reads have left the disk: let new ones go in flight before
		// copying rows out, so the disk works during the copy. Yielding runs
		// the woken submission side on this thread at once; left runnable,
		// it would wait for another thread while this one copies and then
		// blocks in io_uring_enter, and at low depth the disk would idle.
		if u.give(n, nil, nil) && !stopped {
			runtime.Gosched()
		}

		freed, again = freed[:0], again[:0]
		for _, cq := range got[:n] {
			if stopped {
				// Cancelled or failed: drain, do not deliver or reissue.
				freed = append(freed, cq.slot())
				continue
			}
			m, reissue, err := u.e.settleCQE(u.j, states, cq, &c)
			if reissue {
				again = append(again, m)
				continue
			}
			freed = append(freed, m.slot)
			settled++
			if err != nil {
				halt(err)
			}
		}
		if u.give(0, freed, again) && len(again) > 0 && !stopped {
			runtime.Gosched()
		}
		if ctxDone != nil {
			select {
			case <-ctxDone:
				ctxDone = nil
				halt(ctx.Err())
			default:
			}
		}
	}
}
