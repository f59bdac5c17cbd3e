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

// runInline is the single-goroutine mode for low queue depths, the loop fio
// runs: fill the queue up to the depth, submit and wait for the first
// completion in one io_uring_enter, reap what has completed, settle it
// (copying rows out or queueing the rest of a short read), and go round.
//
// It reads the device reads listed in again, then those from from on (the
// raw loop hands it what it left; a whole job is from 0, again nil).
// Its bookkeeping is the split mode's: a read is pending from prepare until
// the kernel consumes its SQE, then in the kernel until its CQE is reaped;
// a ring failure with reads pending or in the kernel leaves their buffers
// owned by the kernel, and the Reader is marked broken.
func (e *uringEngine) runInline(ctx context.Context, j *job, from int, again []int) (counters, error) {
	var (
		c        counters
		firstErr error
		stopped  bool
		ring     = e.ring
		states   = make([]readState, len(j.reads))
		retries  []retryMsg // reissues; they own their buffers
		next     = from     // first read not yet issued
		pending  int        // SQEs prepared, not yet consumed by the kernel
		inKernel int        // SQEs consumed, CQEs not yet reaped
		soft     int        // soft io_uring_enter failures in a row
		cqes     = make([]*giouring.CompletionQueueEvent, e.qd)
		got      = make([]cqeCopy, e.qd)
		ngot     int // got[:ngot] are reaped, not yet settled
		ctxDone  = ctx.Done()
	)
	for _, i := range again { // each takes a staging buffer, as a reissue owns one
		nf := len(e.free)
		retries = append(retries, retryMsg{idx: i, slot: e.free[nf-1]})
		e.free = e.free[:nf-1]
	}
	halt := func(err error) {
		if firstErr == nil {
			firstErr = err
		}
		stopped = true
	}
	broken := func(err error) (counters, error) {
		c.broken = err
		e.lost = append(e.lost, j)
		if firstErr == nil {
			firstErr = err
		}
		return c, firstErr
	}
	// settle copies the rows of finished reads out, queues the rest of
	// short ones, and frees their buffers.
	settle := func(got []cqeCopy) {
		for _, cq := range got {
			if stopped {
				// Cancelled or failed: drain, do not deliver or reissue.
				e.free = append(e.free, cq.slot())
				continue
			}
			m, reissue, err := e.settleCQE(j, states, cq, &c)
			if reissue {
				retries = append(retries, m)
				continue
			}
			e.free = append(e.free, m.slot)
			if err != nil {
				halt(err)
			}
		}
	}
	for {
		if ctxDone != nil {
			select {
			case <-ctxDone:
				ctxDone = nil
				halt(ctx.Err())
			default:
			}
		}
		// Fill the queue: reissues first, they hold buffers already.
		for !stopped && pending+inKernel < e.qd {
			var m retryMsg
			nr, nf := len(retries), len(e.free)
			switch {
			case nr > 0:
				m = retries[nr-1]
			case next < len(j.reads) && nf > 0:
				m = retryMsg{idx: next, slot: e.free[nf-1]}
			default:
				nf = -1
			}
			if nf < 0 {
				break
			}
			sqe := ring.GetSQE()
			if sqe == nil {
				c.sqFull++
				break // the submission queue is full: submit what is in it first
			}
			if nr > 0 {
				retries = retries[:nr-1]
			} else {
				e.free = e.free[:nf-1]
				next++
			}
			e.prepare(sqe, j, m, &c)
			pending++
		}
		if pending+inKernel == 0 && ngot == 0 {
			// Every read is settled, or the Read stopped and the kernel
			// holds no buffer any more.
			for _, m := range retries {
				e.free = append(e.free, m.slot)
			}
			return c, firstErr
		}

		if ngot > 0 {
			// Completions were reaped last time round, and the loop above
			// prepared new reads in spare buffers for their credits: hand
			// those to the kernel before copying rows out, so the disk
			// works during the copy. That costs a second io_uring_enter per
			// round (fio makes two as well), but at low depth the copy would
			// otherwise sit between one read and the next.
			if err := submitPending(ring, &pending, &inKernel); err != nil {
				return broken(err)
			}
			settle(got[:ngot])
			ngot = 0
			continue
		}

		// Submit and wait for a completion in one system call. The kernel
		// waits only when it consumed every SQE, so a partial submit (the
		// kernel short of memory, the CQ backed up) returns at once.
		var err error
		if pending > 0 {
			var n uint
			n, err = ring.SubmitAndWait(1)
			pending -= int(n)
			inKernel += int(n)
		} else if ring.CQReady() == 0 {
			_, err = ring.WaitCQE()
		}
		if err != nil && !softEnterError(err) {
			return broken(fmt.Errorf("ioread: io_uring_enter (%d reads to submit, %d in flight): %w", pending, inKernel, err))
		}

		n, err := reapCQEs(ring, err, cqes, got, &soft, pending, inKernel)
		if err != nil {
			return broken(err)
		}
		if n == 0 {
			continue
		}
		inKernel -= n
		ngot = n
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
