package ioread

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/pawelgaczynski/giouring"
)

// preadChunk is how many requests one pread participant takes from a stream
// at a time: enough to amortize the lock around the source, few enough that
// the participants share the work evenly.
const preadChunk = 16

// streamSrc is the request source of one Stream, shared by the engine's
// participants: it calls next under a lock and plans what it returns.
type streamSrc struct {
	files    []fileInfo
	slotSize int
	maxMerge int
	fault    faultFunc
	next     func(reqs []Request) int

	mu    sync.Mutex
	ended bool
	st    Stats // Requests, UsefulBytes and Merged so far
}

// fill asks next for up to len(reqs) requests and plans them with sc's
// memory. It returns a nil job when the stream has ended.
func (s *streamSrc) fill(reqs []Request, sc *planScratch) (*job, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return nil, nil
	}
	n := min(s.next(reqs), len(reqs))
	if n <= 0 {
		s.ended = true
		return nil, nil
	}
	j, err := plan(s.files, reqs[:n], s.slotSize, s.maxMerge, sc)
	if err != nil {
		s.ended = true
		return nil, err
	}
	j.fault = s.fault
	s.st.Requests += n
	s.st.Merged += len(j.pieces) - len(j.reads)
	for _, q := range reqs[:n] {
		s.st.UsefulBytes += int64(q.Length)
	}
	return j, nil
}

// Stream reads the requests next hands out until it returns 0, keeping
// QueueDepth device reads in flight the whole time. A sequence of Reads
// drains the queue at the end of each batch and waits for the next to be
// planned; a Stream plans the next requests while earlier ones are still on
// the disk, so the queue stays full until the source runs dry (what
// `gnnplan profile` measures).
//
// next fills reqs (up to its length) and returns how many it filled. It is
// called from one goroutine at a time, not necessarily the caller's. The
// slice passed to next is the same one an earlier call filled once all of
// that call's requests are done, so their Dst buffers may be reused. Requests
// from one call are planned together (merged as in Read); requests from
// different calls are read independently, in any order.
//
// Stream returns when the source has ended and every read is settled, on
// the first error, or with ctx.Err() when ctx is done (after the reads in
// flight drain). The Stats cover the whole stream.
func (r *Reader) Stream(ctx context.Context, next func(reqs []Request) int) (Stats, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.usable(ctx); err != nil {
		return Stats{}, err
	}
	s := &streamSrc{files: r.files, slotSize: r.slotSize, maxMerge: r.maxMerge, fault: r.fault, next: next}
	c, err := r.eng.stream(ctx, s)
	st := s.st
	st.DeviceReads, st.DeviceBytes, st.Retries = c.deviceReads, c.deviceBytes, c.retries
	if c.broken != nil {
		r.broken = c.broken
	}
	return st, err
}

// preadStream is one participant's part of a Stream on the pread pool.
type preadStream struct {
	src   *streamSrc
	parts []streamPart // per participant, indexed like the staging slots
}

// streamPart is a participant's own requests and planning memory, so that
// planning needs no lock beyond the source's.
type streamPart struct {
	reqs []Request
	sc   planScratch
	next int64 // next read of the current chunk, used atomically (readClaimed)
}

func (e *preadEngine) stream(ctx context.Context, src *streamSrc) (counters, error) {
	s := &preadStream{src: src, parts: make([]streamPart, e.workers)}
	for i := range s.parts {
		s.parts[i].reqs = make([]Request, preadChunk)
	}
	return e.start(ctx, nil, s, e.workers)
}

// streamLoop is participant idx's loop in a Stream: take a few requests,
// read them, repeat. Each participant keeps one read in flight except while
// it takes the next requests, so the pool keeps workers reads in flight.
func (e *preadEngine) streamLoop(b *preadBatch, idx int, buf []byte, c *counters) error {
	p := &b.str.parts[idx]
	for atomic.LoadInt32(&b.stop) == 0 {
		j, err := b.str.src.fill(p.reqs, &p.sc)
		if err != nil || j == nil {
			return err
		}
		// The chunk is this participant's alone: it claims from its own
		// counter.
		atomic.StoreInt64(&p.next, 0)
		if err := e.readClaimed(b.ctx, j, &p.next, &b.stop, buf, c); err != nil {
			return err
		}
	}
	return nil
}

// uringChunk is one planned set of a Stream's requests on the ring. Two
// alternate: while the reads of one are finishing, the other is planned and
// issued, so the queue never waits for a plan.
type uringChunk struct {
	reqs   []Request
	sc     planScratch
	j      *job
	states []readState
	next   int // first read not yet issued
	open   int // reads issued, not yet settled
}

// live says whether the chunk holds reads not yet settled; only a chunk that
// is not live may be refilled (its requests' Dst may be in use until then).
func (k *uringChunk) live() bool { return k.j != nil && (k.next < len(k.j.reads) || k.open > 0) }

// chunkBit marks a read of the second chunk in an SQE's read index.
const chunkBit = 1 << 31

// stream runs a Stream in one goroutine, the inline loop's way (runInline):
// fill the queue, submit and wait in one io_uring_enter, reap, resubmit
// before copying rows out. Reads come from two alternating chunks of about
// 4 x qd requests.
func (e *uringEngine) stream(ctx context.Context, src *streamSrc) (counters, error) {
	var (
		c        counters
		firstErr error
		stopped  bool
		ended    bool // the source returned 0 (or failed)
		ring     = e.ring
		chunks   [2]uringChunk
		cur      int        // the chunk reads are issued from
		retries  []retryMsg // reissues; idx carries chunkBit; they own their buffers
		pending  int
		inKernel int
		soft     int
		cqes     = make([]*giouring.CompletionQueueEvent, e.qd)
		got      = make([]cqeCopy, e.qd)
		ngot     int
		ctxDone  = ctx.Done()
	)
	for i := range chunks {
		chunks[i].reqs = make([]Request, max(4*e.qd, 64))
	}
	halt := func(err error) {
		if firstErr == nil {
			firstErr = err
		}
		stopped = true
	}
	broken := func(err error) (counters, error) {
		c.broken = err
		for _, k := range chunks {
			if k.j != nil {
				e.lost = append(e.lost, k.j)
			}
		}
		if firstErr == nil {
			firstErr = err
		}
		return c, firstErr
	}
	// issuable returns the chunk to take the next new read from, refilling
	// one from the source when both are used up; -1 when there is none.
	issuable := func() int {
		for range 2 {
			k := &chunks[cur]
			if k.j != nil && k.next < len(k.j.reads) {
				return cur
			}
			other := &chunks[1-cur]
			// A chunk of zero-length requests plans no reads: take another.
			for !other.live() && !ended {
				j, err := src.fill(other.reqs, &other.sc)
				switch {
				case err != nil:
					ended = true
					halt(err)
					return -1
				case j == nil:
					ended = true
					return -1
				}
				other.j, other.next, other.open = j, 0, 0
				other.states = grow(other.states, len(j.reads))
				clear(other.states)
			}
			if other.j == nil || other.next >= len(other.j.reads) {
				return -1
			}
			cur = 1 - cur
		}
		return -1
	}
	settle := func(got []cqeCopy) {
		for _, cq := range got {
			idx := int(cq.ud >> 32)
			k := &chunks[0]
			if idx&chunkBit != 0 {
				k = &chunks[1]
			}
			if stopped {
				e.free = append(e.free, cq.slot())
				k.open--
				continue
			}
			m, reissue, err := e.settleCQE(k.j, k.states, cqeCopy{ud: userData(idx&^chunkBit, cq.slot()), res: cq.res}, &c)
			if reissue {
				m.idx = idx
				retries = append(retries, m)
				continue
			}
			k.open--
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
		for !stopped && pending+inKernel < e.qd {
			var m retryMsg
			nr, nf := len(retries), len(e.free)
			ki := -1
			switch {
			case nr > 0:
				m = retries[nr-1]
			case nf > 0:
				if ki = issuable(); ki >= 0 {
					m = retryMsg{idx: chunks[ki].next, slot: e.free[nf-1]}
				}
			}
			if nr == 0 && ki < 0 {
				break
			}
			sqe := ring.GetSQE()
			if sqe == nil {
				c.sqFull++
				break
			}
			k := &chunks[m.idx>>31&1]
			if nr > 0 {
				retries = retries[:nr-1]
			} else {
				k = &chunks[ki]
				e.free = e.free[:nf-1]
				k.next++
				k.open++
				if ki == 1 {
					m.idx |= chunkBit
				}
			}
			e.prepare(sqe, k.j, retryMsg{idx: m.idx &^ chunkBit, slot: m.slot, done: m.done}, &c)
			sqe.UserData = userData(m.idx, m.slot)
			pending++
		}
		if pending+inKernel == 0 && ngot == 0 && (stopped || !chunks[0].live() && !chunks[1].live() && ended) {
			for _, m := range retries {
				e.free = append(e.free, m.slot)
			}
			return c, firstErr
		}
		if ngot > 0 {
			if err := submitPending(ring, &pending, &inKernel); err != nil {
				return broken(err)
			}
			settle(got[:ngot])
			ngot = 0
			continue
		}
		var err error
		switch {
		case pending > 0:
			var n uint
			n, err = ring.SubmitAndWait(1)
			pending -= int(n)
			inKernel += int(n)
		case inKernel > 0 && ring.CQReady() == 0:
			_, err = ring.WaitCQE()
		case inKernel == 0:
			// Nothing in flight and nothing to issue, yet a chunk is live:
			// reissues wait for buffers, which cannot happen with none in
			// flight. Defensive: stop rather than spin.
			return broken(fmt.Errorf("ioread: stream stalled with %d retries and %d free buffers", len(retries), len(e.free)))
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
