package ioread

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/pawelgaczynski/giouring"
)

// inlineMaxDepth is the largest queue depth at which a Read runs in one
// goroutine. With a few reads in flight the disk answers in about the time a
// wake-up between two goroutines takes (about a microsecond here, several
// on a virtual machine), so handing each completion to a submission side
// delays the next read by that much: at depth 1 the split sides reached
// 0.90-0.95 of fio's IOPS, the inline loop reaches fio (docs/benchmarks.md).
// With deeper queues the disk has other reads to work on meanwhile, and the
// split sides keep it fed while rows are copied out.
const inlineMaxDepth = 4

// maxSoftFailures bounds how often in a row io_uring_enter may fail with
// EAGAIN or EBUSY (kernel short of memory, completion queue backed up) with
// nothing completing, before the ring is given up on.
const maxSoftFailures = 10000

// softEnterError says whether err from io_uring_enter means "try again".
func softEnterError(err error) bool {
	return errors.Is(err, syscall.EINTR) || errors.Is(err, syscall.EAGAIN) ||
		errors.Is(err, syscall.EBUSY) || errors.Is(err, syscall.ETIME)
}

// ringLoop is the state the single-goroutine loops on the ring (runInline,
// stream) share. A read is pending from prepare until the kernel consumes
// its SQE, then in the kernel until its CQE is reaped; a ring failure with
// reads pending or in the kernel leaves their buffers owned by the kernel.
type ringLoop struct {
	e        *uringEngine
	ring     *giouring.Ring
	c        counters
	firstErr error
	stopped  bool
	retries  []retryMsg // reissues; they own their buffers
	pending  int        // SQEs prepared, not yet consumed by the kernel
	inKernel int        // SQEs consumed, CQEs not yet reaped
	soft     int        // soft io_uring_enter failures in a row
	cqes     []*giouring.CompletionQueueEvent
	got      []cqeCopy
	ngot     int // got[:ngot] are reaped, not yet settled
	ctxDone  <-chan struct{}
}

// newRingLoop is a loop on e's ring with nothing issued yet.
func (e *uringEngine) newRingLoop(ctx context.Context) ringLoop {
	return ringLoop{
		e:       e,
		ring:    e.ring,
		cqes:    make([]*giouring.CompletionQueueEvent, e.qd),
		got:     make([]cqeCopy, e.qd),
		ctxDone: ctx.Done(),
	}
}

// halt stops issuing and delivering reads, keeping the first error.
func (l *ringLoop) halt(err error) {
	if l.firstErr == nil {
		l.firstErr = err
	}
	l.stopped = true
}

// watch halts the loop once ctx is done (checked once a round).
func (l *ringLoop) watch(ctx context.Context) {
	if l.ctxDone != nil {
		select {
		case <-l.ctxDone:
			l.ctxDone = nil
			l.halt(ctx.Err())
		default:
		}
	}
}

// fail gives the ring up after err: the jobs lost (nil ones skipped) keep
// buffers the kernel may still own, and the Reader is marked broken.
func (l *ringLoop) fail(err error, lost ...*job) (counters, error) {
	l.c.broken = err
	for _, j := range lost {
		if j != nil {
			l.e.lost = append(l.e.lost, j)
		}
	}
	if l.firstErr == nil {
		l.firstErr = err
	}
	return l.c, l.firstErr
}

// done ends a loop with nothing in the kernel: the reissues left (the loop
// stopped) give their buffers back.
func (l *ringLoop) done() (counters, error) {
	for _, m := range l.retries {
		l.e.free = append(l.e.free, m.slot)
	}
	return l.c, l.firstErr
}

// enter submits and waits for a completion in one system call, then reaps
// what completed into got. The kernel waits only when it consumed every
// SQE, so a partial submit (the kernel short of memory, the CQ backed up)
// returns at once. The caller makes sure a read is pending or in the
// kernel; an error means the ring is lost.
func (l *ringLoop) enter() error {
	var err error
	if l.pending > 0 {
		var n uint
		n, err = l.ring.SubmitAndWait(1)
		l.pending -= int(n)
		l.inKernel += int(n)
	} else if l.ring.CQReady() == 0 {
		_, err = l.ring.WaitCQE()
	}
	if err != nil && !softEnterError(err) {
		return fmt.Errorf("ioread: io_uring_enter (%d reads to submit, %d in flight): %w", l.pending, l.inKernel, err)
	}
	n, err := reapCQEs(l.ring, err, l.cqes, l.got, &l.soft, l.pending, l.inKernel)
	if err != nil {
		return err
	}
	if n > 0 {
		l.inKernel -= n
		l.ngot = n
	}
	return nil
}

// inlineRun is runInline's state: one job's reads.
type inlineRun struct {
	ringLoop
	j      *job
	states []readState
	next   int // first read not yet issued
}

// runInline is the single-goroutine mode for low queue depths, the loop fio
// runs: fill the queue up to the depth, submit and wait for the first
// completion in one io_uring_enter, reap what has completed, settle it
// (copying rows out or queueing the rest of a short read), and go round.
//
// It reads the device reads listed in again, then those from from on (the
// raw loop hands it what it left; a whole job is from 0, again nil).
// Its bookkeeping is the split mode's (ringLoop); a ring failure marks the
// Reader broken.
//
// The per-read loops (issue, settle) are each kept whole in one function,
// called once a round; a round makes at least one system call.
func (e *uringEngine) runInline(ctx context.Context, j *job, from int, again []int) (counters, error) {
	states := make([]readState, len(j.reads))
	r := inlineRun{ringLoop: e.newRingLoop(ctx), j: j, states: states, next: from}
	for _, i := range again { // each takes a staging buffer, as a reissue owns one
		nf := len(e.free)
		r.retries = append(r.retries, retryMsg{idx: i, slot: e.free[nf-1]})
		e.free = e.free[:nf-1]
	}
	for {
		r.watch(ctx)
		r.issue()
		if r.pending+r.inKernel == 0 && r.ngot == 0 {
			// Every read is settled, or the Read stopped and the kernel
			// holds no buffer any more.
			return r.done()
		}
		if r.ngot > 0 {
			// Completions were reaped last time round, and issue prepared
			// new reads in spare buffers for their credits: hand those to
			// the kernel before copying rows out, so the disk works during
			// the copy. That costs a second io_uring_enter per round (fio
			// makes two as well), but at low depth the copy would otherwise
			// sit between one read and the next.
			if err := submitPending(r.ring, &r.pending, &r.inKernel); err != nil {
				return r.fail(err, j)
			}
			r.settle(r.got[:r.ngot])
			r.ngot = 0
			continue
		}
		if err := r.enter(); err != nil {
			return r.fail(err, j)
		}
	}
}

// issue fills the queue up to the depth: reissues first, they hold buffers
// already.
func (r *inlineRun) issue() {
	e, j := r.e, r.j
	for !r.stopped && r.pending+r.inKernel < e.qd {
		var m retryMsg
		nr, nf := len(r.retries), len(e.free)
		switch {
		case nr > 0:
			m = r.retries[nr-1]
		case r.next < len(j.reads) && nf > 0:
			m = retryMsg{idx: r.next, slot: e.free[nf-1]}
		default:
			nf = -1
		}
		if nf < 0 {
			break
		}
		sqe := r.ring.GetSQE()
		if sqe == nil {
			r.c.sqFull++
			break // the submission queue is full: submit what is in it first
		}
		if nr > 0 {
			r.retries = r.retries[:nr-1]
		} else {
			e.free = e.free[:nf-1]
			r.next++
		}
		e.prepare(sqe, j, m, &r.c)
		r.pending++
	}
}

// settle copies the rows of finished reads out, queues the rest of short
// ones, and frees their buffers.
func (r *inlineRun) settle(got []cqeCopy) {
	e := r.e
	for _, cq := range got {
		if r.stopped {
			// Cancelled or failed: drain, do not deliver or reissue.
			e.free = append(e.free, cq.slot())
			continue
		}
		m, reissue, err := e.settleCQE(r.j, r.states, cq, &r.c)
		if reissue {
			r.retries = append(r.retries, m)
			continue
		}
		e.free = append(e.free, m.slot)
		if err != nil {
			r.halt(err)
		}
	}
}

// reapCQEs follows an io_uring_enter that returned err (nil, or a soft
// failure the caller let through): it copies the ready completions into
// got, advances the CQ and returns how many. With none ready after a soft
// failure it backs off briefly and counts the failure in soft, returning
// an error once maxSoftFailures come in a row; pending and inKernel only
// describe the state in that error.
func reapCQEs(ring *giouring.Ring, err error, cqes []*giouring.CompletionQueueEvent, got []cqeCopy, soft *int, pending, inKernel int) (int, error) {
	n := int(ring.PeekBatchCQE(cqes))
	if n == 0 {
		if err != nil {
			// Nothing went in and nothing came out: back off, then try
			// again, but not forever.
			if *soft++; *soft >= maxSoftFailures {
				return 0, fmt.Errorf("ioread: io_uring_enter (%d reads to submit, %d in flight): gave up after %d tries: %w",
					pending, inKernel, *soft, err)
			}
			time.Sleep(10 * time.Microsecond)
		}
		return 0, nil
	}
	*soft = 0
	for i, cqe := range cqes[:n] {
		got[i] = cqeCopy{ud: cqe.UserData, res: cqe.Res}
	}
	ring.CQAdvance(uint32(n))
	return n, nil
}

// submitPending hands the prepared SQEs to the kernel without waiting,
// moving what it took from pending to inKernel; a soft failure leaves the
// rest pending for the next round.
func submitPending(ring *giouring.Ring, pending, inKernel *int) error {
	if *pending == 0 {
		return nil
	}
	n, err := ring.Submit()
	*pending -= int(n)
	*inKernel += int(n)
	if err != nil && !softEnterError(err) {
		return fmt.Errorf("ioread: io_uring_enter (submit %d reads, %d in flight): %w", *pending, *inKernel, err)
	}
	return nil
}
