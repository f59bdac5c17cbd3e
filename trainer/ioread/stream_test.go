package ioread

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// rowSource hands out n requests of rowBytes at pseudo-random row offsets
// of content, reusing each slice's Dst buffers as Stream allows, and checks
// the rows of a slice when it comes back (they are done by then).
type rowSource struct {
	t        *testing.T
	content  []byte
	rowBytes int
	left     int
	state    uint64
	checked  int
	mu       sync.Mutex // Stream promises one call at a time; check it
	inside   bool
}

func (s *rowSource) next(reqs []Request) int {
	if !s.mu.TryLock() || s.inside {
		s.t.Error("next called by two goroutines at once")
		return 0
	}
	s.inside = true
	defer func() { s.inside = false; s.mu.Unlock() }()
	s.check(reqs)
	n := min(len(reqs), s.left)
	s.left -= n
	rows := int64(len(s.content) / s.rowBytes)
	for i := range reqs[:n] {
		s.state = s.state*6364136223846793005 + 1442695040888963407
		off := int64(s.state>>33)%rows*int64(s.rowBytes) + int64(s.state%7) // unaligned too
		if off+int64(s.rowBytes) > int64(len(s.content)) {
			off = int64(len(s.content) - s.rowBytes)
		}
		if reqs[i].Dst == nil {
			reqs[i].Dst = make([]byte, s.rowBytes)
		}
		reqs[i].Offset, reqs[i].Length = off, s.rowBytes
	}
	for i := n; i < len(reqs); i++ {
		reqs[i].Length = 0 // checked as done below only when filled
	}
	return n
}

// check compares the rows a returned slice was filled with to the file.
func (s *rowSource) check(reqs []Request) {
	for _, q := range reqs {
		if q.Dst == nil || q.Length == 0 {
			continue
		}
		if !bytes.Equal(q.Dst[:q.Length], s.content[q.Offset:q.Offset+int64(q.Length)]) {
			s.t.Errorf("row at %d differs from the file", q.Offset)
		}
		s.checked++
	}
}

func TestStreamMatchesFile(t *testing.T) {
	dir := diskDir(t)
	p, content := writeFile(t, dir, "stream", 4<<20, 11)
	for _, eng := range []string{EngineIOUring, EnginePread} {
		for _, qd := range []int{1, 3, 32} {
			t.Run(fmt.Sprintf("%s depth %d", eng, qd), func(t *testing.T) {
				r := openT(t, []string{p}, Options{QueueDepth: qd, Direct: true, Engine: eng}, openHooks{})
				src := &rowSource{t: t, content: content, rowBytes: 700, left: 5000, state: uint64(qd)}
				st, err := r.Stream(testCtx(t), src.next)
				if err != nil {
					t.Fatal(err)
				}
				if st.Requests != 5000 || st.UsefulBytes != 5000*700 || st.DeviceReads < 5000-st.Merged {
					t.Errorf("stats %+v", st)
				}
				// Rows still in slices never handed back were checked by
				// nobody; the source saw most of them come back.
				if src.checked < 5000/2 {
					t.Errorf("only %d of 5000 rows came back to the source to check", src.checked)
				}
				checkPoolFull(t, r)
				// The reader still works for Reads afterwards.
				dst := make([]byte, 100)
				if _, err := r.Read(testCtx(t), []Request{{Offset: 12345, Length: 100, Dst: dst}}); err != nil || !bytes.Equal(dst, content[12345:12445]) {
					t.Errorf("Read after Stream: %v", err)
				}
			})
		}
	}
}

func TestStreamStopsOnError(t *testing.T) {
	dir := diskDir(t)
	p, content := writeFile(t, dir, "stream-err", 1<<20, 12)
	for _, eng := range []string{EngineIOUring, EnginePread} {
		t.Run(eng, func(t *testing.T) {
			hooks := openHooks{fault: func(file int, off int64, n, res int) int {
				if off >= 512<<10 {
					return -5 // EIO
				}
				return res
			}}
			r := openT(t, []string{p}, Options{QueueDepth: 8, Direct: true, Engine: eng}, hooks)
			src := &rowSource{t: t, content: content, rowBytes: 512, left: 1 << 30, state: 1}
			_, err := r.Stream(testCtx(t), src.next)
			var re *ReadError
			if !errors.As(err, &re) {
				t.Fatalf("err %v, want a *ReadError", err)
			}
			checkPoolFull(t, r)
		})
	}
}

// TestStreamKeepsQueueFull holds every pread until depth reads are in flight
// and then lets one return at a time: a reader that refills the queue as
// each read finishes keeps going, one that waits for a batch to drain
// leaves depth-1 reads waiting (a sequence of Reads does, which the second
// case shows, so the gate does detect draining).
func TestStreamKeepsQueueFull(t *testing.T) {
	dir := diskDir(t)
	p, content := writeFile(t, dir, "stream-full", 1<<20, 13)
	const depth, total = 8, 400
	for _, tc := range []struct {
		name       string
		stream     bool
		wantStalls bool
	}{
		{"a stream refills the queue as reads finish", true, false},
		{"a sequence of Reads drains it after each batch", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var (
				mu       sync.Mutex
				cond     = sync.NewCond(&mu)
				inFlight int
				ended    bool // the source is dry: the last reads drain
				stalls   int
			)
			hooks := openHooks{pread: func(fd int, b []byte, off int64) (int, error) {
				mu.Lock()
				inFlight++
				cond.Broadcast()
				deadline := time.Now().Add(time.Second)
				for inFlight < depth && !ended {
					if time.Now().After(deadline) {
						stalls++
						break
					}
					waitFor(cond, 20*time.Millisecond)
				}
				inFlight--
				mu.Unlock()
				return unix.Pread(fd, b, off)
			}}
			r := openT(t, []string{p}, Options{QueueDepth: depth, Direct: true, Engine: EnginePread}, hooks)
			src := &rowSource{t: t, content: content, rowBytes: 4096, left: total, state: 3}
			next := func(reqs []Request) int {
				n := src.next(reqs)
				if n == 0 {
					mu.Lock()
					ended = true
					cond.Broadcast()
					mu.Unlock()
				}
				return n
			}
			var err error
			if tc.stream {
				var st Stats
				st, err = r.Stream(testCtx(t), next)
				if err == nil && st.Requests != total {
					t.Errorf("%d requests read, want %d", st.Requests, total)
				}
			} else {
				// Two batches of depth requests, one after the other.
				for range 2 {
					reqs := make([]Request, depth)
					src.next(reqs)
					if _, err = r.Read(testCtx(t), reqs); err != nil {
						break
					}
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if got := stalls > 0; got != tc.wantStalls {
				t.Errorf("%d reads waited a second with fewer than %d in flight before the source ran dry; want stalls: %v", stalls, depth, tc.wantStalls)
			}
		})
	}
}

// waitFor waits on c (its lock held) for at most d.
func waitFor(c *sync.Cond, d time.Duration) {
	t := time.AfterFunc(d, c.Broadcast)
	c.Wait()
	t.Stop()
}

// TestPreadPoolHandsOverBatches checks the pread pool's hand-off: its
// workers live as long as the Reader, so a Read costs no goroutines,
// channels or closures, and a read costs no allocation (the plan's job is
// the one per Read), at depth 1 (the caller reads alone) and deeper.
func TestPreadPoolHandsOverBatches(t *testing.T) {
	dir := diskDir(t)
	p, content := writeFile(t, dir, "pool", 4<<20, 14)
	for _, qd := range []int{1, 32} {
		t.Run(fmt.Sprintf("depth %d", qd), func(t *testing.T) {
			r := openT(t, []string{p}, Options{QueueDepth: qd, Direct: true, Engine: EnginePread, MaxMergeBytes: 4096}, openHooks{})
			reqs := make([]Request, 256)
			dst := make([]byte, 256*512)
			for i := range reqs {
				off := int64(i) * 16384 % int64(len(content)-512)
				reqs[i] = Request{Offset: off, Length: 512, Dst: dst[i*512 : (i+1)*512]}
			}
			ctx := context.Background()
			if _, err := r.Read(ctx, reqs); err != nil { // the plan's memory grows once
				t.Fatal(err)
			}
			allocs := testing.AllocsPerRun(20, func() {
				if _, err := r.Read(ctx, reqs); err != nil {
					t.Fatal(err)
				}
			})
			// The job, and now and then a wait-queue entry the runtime
			// allocates when a worker parks on another thread's cache.
			// Starting goroutines per Read allocated dozens.
			if allocs > 4 {
				t.Errorf("%.1f allocations per Read of %d reads, want at most 4", allocs, len(reqs))
			}
			for i, q := range reqs {
				if !bytes.Equal(q.Dst, content[q.Offset:q.Offset+512]) {
					t.Fatalf("request %d: wrong bytes", i)
				}
			}
		})
	}
}
