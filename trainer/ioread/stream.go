package ioread

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
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

// uringStream is stream's state: the source and the two chunks reads are
// taken from.
type uringStream struct {
	ringLoop // retries' idx carries chunkBit
	src      *streamSrc
	chunks   [2]uringChunk
	cur      int  // the chunk reads are issued from
	ended    bool // the source returned 0 (or failed)
}

// stream runs a Stream in one goroutine, the inline loop's way (runInline):
// fill the queue, submit and wait in one io_uring_enter, reap, resubmit
// before copying rows out. Reads come from two alternating chunks of about
// 4 x qd requests. As in runInline, the per-read loops (issue, settle) are
// each kept whole in one function, called once a round.
func (e *uringEngine) stream(ctx context.Context, src *streamSrc) (counters, error) {
	s := uringStream{ringLoop: e.newRingLoop(ctx), src: src}
	for i := range s.chunks {
		s.chunks[i].reqs = make([]Request, max(4*e.qd, 64))
	}
	for {
		s.watch(ctx)
		s.issue()
		if s.pending+s.inKernel == 0 && s.ngot == 0 && (s.stopped || !s.chunks[0].live() && !s.chunks[1].live() && s.ended) {
			return s.done()
		}
		if s.ngot > 0 {
			if err := submitPending(s.ring, &s.pending, &s.inKernel); err != nil {
				return s.fail(err, s.chunks[0].j, s.chunks[1].j)
			}
			s.settle(s.got[:s.ngot])
			s.ngot = 0
			continue
		}
		if s.pending+s.inKernel == 0 {
			// Nothing in flight and nothing to issue, yet a chunk is live:
			// reissues wait for buffers, which cannot happen with none in
			// flight. Defensive: stop rather than spin.
			return s.fail(fmt.Errorf("ioread: stream stalled with %d retries and %d free buffers", len(s.retries), len(e.free)), s.chunks[0].j, s.chunks[1].j)
		}
		if err := s.enter(); err != nil {
			return s.fail(err, s.chunks[0].j, s.chunks[1].j)
		}
	}
}

// issue fills the queue up to the depth: reissues first, they hold buffers
// already; then new reads of the current chunk.
func (s *uringStream) issue() {
	e := s.e
	for !s.stopped && s.pending+s.inKernel < e.qd {
		var m retryMsg
		nr, nf := len(s.retries), len(e.free)
		ki := -1
		switch {
		case nr > 0:
			m = s.retries[nr-1]
		case nf > 0:
			if ki = s.issuable(); ki >= 0 {
				m = retryMsg{idx: s.chunks[ki].next, slot: e.free[nf-1]}
			}
		}
		if nr == 0 && ki < 0 {
			break
		}
		sqe := s.ring.GetSQE()
		if sqe == nil {
			s.c.sqFull++
			break
		}
		k := &s.chunks[m.idx>>31&1]
		if nr > 0 {
			s.retries = s.retries[:nr-1]
		} else {
			k = &s.chunks[ki]
			e.free = e.free[:nf-1]
			k.next++
			k.open++
			if ki == 1 {
				m.idx |= chunkBit
			}
		}
		e.prepare(sqe, k.j, retryMsg{idx: m.idx &^ chunkBit, slot: m.slot, done: m.done}, &s.c)
		sqe.UserData = userData(m.idx, m.slot)
		s.pending++
	}
}

// issuable returns the chunk to take the next new read from, refilling
// one from the source when both are used up; -1 when there is none.
func (s *uringStream) issuable() int {
	for range 2 {
		k := &s.chunks[s.cur]
		if k.j != nil && k.next < len(k.j.reads) {
			return s.cur
		}
		other := &s.chunks[1-s.cur]
		// A chunk of zero-length requests plans no reads: take another.
		for !other.live() && !s.ended {
			j, err := s.src.fill(other.reqs, &other.sc)
			switch {
			case err != nil:
				s.ended = true
				s.halt(err)
				return -1
			case j == nil:
				s.ended = true
				return -1
			}
			other.j, other.next, other.open = j, 0, 0
			other.states = grow(other.states, len(j.reads))
			clear(other.states)
		}
		if other.j == nil || other.next >= len(other.j.reads) {
			return -1
		}
		s.cur = 1 - s.cur
	}
	return -1
}

// settle copies the rows of finished reads out, queues the rest of short
// ones, and frees their buffers; each CQE's read index says its chunk.
func (s *uringStream) settle(got []cqeCopy) {
	e := s.e
	for _, cq := range got {
		idx := int(cq.ud >> 32)
		k := &s.chunks[0]
		if idx&chunkBit != 0 {
			k = &s.chunks[1]
		}
		if s.stopped {
			e.free = append(e.free, cq.slot())
			k.open--
			continue
		}
		m, reissue, err := e.settleCQE(k.j, k.states, cqeCopy{ud: userData(idx&^chunkBit, cq.slot()), res: cq.res}, &s.c)
		if reissue {
			m.idx = idx
			s.retries = append(s.retries, m)
			continue
		}
		k.open--
		e.free = append(e.free, m.slot)
		if err != nil {
			s.halt(err)
		}
	}
}
