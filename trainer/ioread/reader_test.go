package ioread

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// testTimeout bounds every Read in the tests, so a hang fails instead of
// stalling the run. It is a hang's bound, not a speed test: a shared disk
// that serves a few hundred reads a second for a while (CI's, beside other
// jobs) takes tens of seconds over a test's 5,000 reads at depth 1.
const testTimeout = 2 * time.Minute

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// diskDir returns a directory whose filesystem accepts O_DIRECT: t.TempDir()
// when it does (here /tmp is on the disk), else a temp dir under /var/tmp,
// which is on the disk on most machines where /tmp is tmpfs.
func diskDir(t *testing.T) string {
	t.Helper()
	dirs := []string{t.TempDir()}
	if d, err := os.MkdirTemp("/var/tmp", "ioread-test-"); err == nil {
		t.Cleanup(func() { os.RemoveAll(d) })
		dirs = append(dirs, d)
	}
	for _, d := range dirs {
		p := filepath.Join(d, "probe")
		if err := os.WriteFile(p, make([]byte, 4096), 0o644); err != nil {
			continue
		}
		fd, err := unix.Open(p, unix.O_RDONLY|unix.O_DIRECT, 0)
		os.Remove(p)
		if err == nil {
			unix.Close(fd)
			return d
		}
	}
	t.Skipf("no directory among %v accepts O_DIRECT", dirs)
	return ""
}

// writeFile writes size pseudo-random bytes (seeded, so failures repeat) to
// dir/name and returns the path and the bytes.
func writeFile(t testing.TB, dir, name string, size int, seed uint64) (string, []byte) {
	t.Helper()
	b := make([]byte, size)
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p, b
}

// openT opens a Reader for a test. opt.Engine may name a variant of the
// io_uring engine: "io_uring-split" and "io_uring-inline" force the split
// submission/completion sides or the single-goroutine loop whatever the
// queue depth; "io_uring-plain" is io_uring without registered files and
// buffers, as when the kernel or RLIMIT_MEMLOCK refuses to register them;
// "io_uring-giouring" reads through giouring in the mode the depth picks;
// plain io_uring uses the raw loop (uring_raw.go), the split and inline
// variants giouring.
func openT(t *testing.T, paths []string, opt Options, hooks openHooks) *Reader {
	t.Helper()
	if hooks.openFD == nil {
		hooks.openFD = unix.Open
	}
	if hooks.newUring == nil {
		hooks.newUring = newUringEngine
	}
	variant := ""
	if v, ok := strings.CutPrefix(opt.Engine, EngineIOUring+"-"); ok {
		variant, opt.Engine = v, EngineIOUring
	}
	r, err := open(paths, opt, hooks)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	if variant != "" {
		u, ok := r.eng.(*uringEngine)
		if !ok {
			t.Fatalf("engine %q, want io_uring for variant %q (notes: %s)", r.Engine(), variant, r.Notes())
		}
		switch variant {
		case "split":
			u.inline = false
			dropRaw(u)
		case "inline":
			u.inline = true
			dropRaw(u)
		case "plain":
			u.fixedFiles, u.fixedBufs = false, false
		case "giouring": // the reader's own choice of mode, without the raw loop
			dropRaw(u)
		default:
			t.Fatalf("unknown io_uring variant %q", variant)
		}
	}
	return r
}

// dropRaw makes u read through giouring, as where the raw loop is not
// built in or could not be set up.
func dropRaw(u *uringEngine) {
	if u.raw != nil {
		u.raw.close()
		u.raw = nil
	}
}

// engineName is the name Reader.Engine returns for a test's engine variant.
func engineName(variant string) string {
	if strings.HasPrefix(variant, EngineIOUring) {
		return EngineIOUring
	}
	return variant
}

// checkPoolFull says whether every staging buffer is back in the pool, as it
// must be between Reads.
func checkPoolFull(t *testing.T, r *Reader) {
	t.Helper()
	if u, ok := r.eng.(*uringEngine); ok && len(u.free) != u.pool.n {
		t.Errorf("after Read %d of %d staging buffers are free", len(u.free), u.pool.n)
	}
}

// engines are the engine variants every behaviour test runs with.
var engines = []string{EngineIOUring, "io_uring-split", "io_uring-inline", EnginePread}

func TestReadMatchesFile(t *testing.T) {
	dir := diskDir(t)
	// Sizes off any alignment, so requests end inside a partial last block.
	sizes := []int{3<<20 + 1234, 777, 256 << 10}
	var paths []string
	var content [][]byte
	for i, n := range sizes {
		p, b := writeFile(t, dir, fmt.Sprintf("f%d", i), n, uint64(i))
		paths, content = append(paths, p), append(content, b)
	}
	// io_uring at depth 1 runs inline, at 8 and 64 split; io_uring-plain
	// is without registered files and buffers.
	for _, eng := range []string{EngineIOUring, "io_uring-inline", "io_uring-split", "io_uring-plain", "io_uring-giouring", EnginePread} {
		for _, qd := range []int{1, 8, 64} {
			for _, direct := range []bool{true, false} {
				t.Run(fmt.Sprintf("%s/qd=%d/direct=%v", eng, qd, direct), func(t *testing.T) {
					opt := Options{QueueDepth: qd, Direct: direct, Engine: eng}
					r := openT(t, paths, opt, openHooks{})
					if r.Engine() != engineName(eng) {
						t.Fatalf("Engine() = %q, want %q (notes: %s)", r.Engine(), engineName(eng), r.Notes())
					}
					for i, f := range r.files {
						if f.direct != direct {
							t.Errorf("file %d opened direct=%v, want %v", i, f.direct, direct)
						}
					}
					rng := rand.New(rand.NewPCG(uint64(qd), 7))
					for round := range 5 {
						reqs := randomRequests(rng, r, content, 300)
						st, err := r.Read(testCtx(t), reqs)
						if err != nil {
							t.Fatalf("round %d: %v", round, err)
						}
						checkRequests(t, reqs, content)
						checkPoolFull(t, r)
						if st.Requests != len(reqs) || st.DeviceReads < 1 || st.DeviceBytes < 1 {
							t.Errorf("round %d: implausible stats %+v", round, st)
						}
					}
				})
			}
		}
	}
}

// randomRequests draws n requests: random files, offsets and lengths (up to
// 300 KiB, so some exceed a staging buffer), rows straddling blocks, rows
// ending exactly at end of file, zero-length rows, and duplicates.
func randomRequests(rng *rand.Rand, r *Reader, content [][]byte, n int) []Request {
	var reqs []Request
	for len(reqs) < n {
		f := rng.IntN(len(content))
		size := len(content[f])
		var off, l int
		switch rng.IntN(6) {
		case 0: // straddles an alignment boundary
			a := r.Alignment(f)
			b := rng.IntN(size/a+1) * a
			off = max(0, b-1-rng.IntN(64))
			l = min(size-off, 1+rng.IntN(3*a))
		case 1: // ends exactly at end of file
			l = 1 + rng.IntN(min(size, 10000))
			off = size - l
		case 2: // large
			off = rng.IntN(size)
			l = min(size-off, rng.IntN(300<<10))
		case 3: // zero length
			off = rng.IntN(size)
		case 4: // duplicate of an earlier request
			if len(reqs) > 0 {
				q := reqs[rng.IntN(len(reqs))]
				reqs = append(reqs, Request{File: q.File, Offset: q.Offset, Length: q.Length, Dst: make([]byte, q.Length), Tag: uint64(len(reqs))})
				continue
			}
			fallthrough
		default: // a feature row
			off = rng.IntN(size)
			l = min(size-off, 1+rng.IntN(2048))
		}
		// Dst larger than Length: the bytes past Length must stay untouched.
		dst := bytes.Repeat([]byte{0xA5}, l+rng.IntN(3))
		reqs = append(reqs, Request{File: f, Offset: int64(off), Length: l, Dst: dst, Tag: uint64(len(reqs))})
	}
	return reqs
}

func checkRequests(t *testing.T, reqs []Request, content [][]byte) {
	t.Helper()
	bad := 0
	for i, q := range reqs {
		want := content[q.File][q.Offset : q.Offset+int64(q.Length)]
		if !bytes.Equal(q.Dst[:q.Length], want) {
			if bad++; bad <= 5 {
				t.Errorf("request %d (file %d, offset %d, length %d): bytes differ from the file", i, q.File, q.Offset, q.Length)
			}
		}
		for _, b := range q.Dst[q.Length:] {
			if b != 0xA5 {
				t.Errorf("request %d: Dst written past Length", i)
				break
			}
		}
	}
}

func TestPlan(t *testing.T) {
	files := []fileInfo{{path: "a", align: 4096}, {path: "b", align: 512}}
	row := func(file int, off int64, n int) Request {
		return Request{File: file, Offset: off, Length: n, Dst: make([]byte, n)}
	}
	type span struct {
		file   int
		start  int64
		length int
	}
	tests := []struct {
		name     string
		reqs     []Request
		maxMerge int
		want     []span
	}{
		{"rows in one block share a read", []Request{row(0, 0, 512), row(0, 512, 512), row(0, 4000, 96)}, 128 << 10,
			[]span{{0, 0, 4096}}},
		{"row straddling blocks reads both", []Request{row(0, 4000, 200)}, 128 << 10,
			[]span{{0, 0, 8192}}},
		{"adjacent blocks merge", []Request{row(0, 8192, 10), row(0, 0, 10), row(0, 4096, 10)}, 128 << 10,
			[]span{{0, 0, 12288}}},
		{"a gap splits reads", []Request{row(0, 0, 10), row(0, 3*4096, 10)}, 128 << 10,
			[]span{{0, 0, 4096}, {0, 3 * 4096, 4096}}},
		{"merging stops at the cap", []Request{row(0, 0, 10), row(0, 4096, 10), row(0, 8192, 10)}, 8192,
			[]span{{0, 0, 8192}, {0, 8192, 4096}}},
		{"cap below alignment still shares a block", []Request{row(0, 0, 10), row(0, 100, 10), row(0, 4096, 10)}, 1,
			[]span{{0, 0, 4096}, {0, 4096, 4096}}},
		{"duplicates read once", []Request{row(1, 700, 100), row(1, 700, 100)}, 128 << 10,
			[]span{{1, 512, 512}}},
		{"files never merge", []Request{row(1, 0, 10), row(0, 0, 10)}, 128 << 10,
			[]span{{0, 0, 4096}, {1, 0, 512}}},
		{"request larger than a buffer is split", []Request{row(1, 100, 20000)}, 8192,
			[]span{{1, 0, 8192}, {1, 8192, 8192}, {1, 16384, 4096}}},
		{"zero length reads nothing", []Request{row(0, 100, 0)}, 128 << 10, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			slot := int(alignUp(int64(max(tc.maxMerge, 4096)), 4096))
			j, err := plan(files, tc.reqs, slot, tc.maxMerge, nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []span
			for _, d := range j.reads {
				got = append(got, span{d.file, d.start, d.length})
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("reads = %v, want %v", got, tc.want)
			}
			covered := 0
			for _, p := range j.pieces {
				covered += p.n
			}
			useful := 0
			for _, q := range tc.reqs {
				useful += q.Length
			}
			if covered != useful {
				t.Errorf("pieces cover %d bytes, requests ask for %d", covered, useful)
			}
		})
	}
}

func TestPlanRejectsBadRequests(t *testing.T) {
	files := []fileInfo{{path: "a", align: 4096}}
	tests := []struct {
		name string
		req  Request
		want string
	}{
		{"file index out of range", Request{File: 1, Length: 1, Dst: make([]byte, 1)}, "file 1"},
		{"negative offset", Request{Offset: -1, Length: 1, Dst: make([]byte, 1)}, "negative offset"},
		{"negative length", Request{Length: -1}, "negative length"},
		{"Dst too small", Request{Length: 10, Dst: make([]byte, 9)}, "Dst holds 9 bytes"},
		{"offset overflows", Request{Offset: math.MaxInt64 - 5, Length: 10, Dst: make([]byte, 10)}, "overflows"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := plan(files, []Request{tc.req}, 4096, 4096, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

func TestMergingReducesDeviceReads(t *testing.T) {
	dir := diskDir(t)
	p, content := writeFile(t, dir, "rows", 1<<20, 3)
	for _, eng := range engines {
		t.Run(eng, func(t *testing.T) {
			r := openT(t, []string{p}, Options{QueueDepth: 8, Direct: true, Engine: eng}, openHooks{})
			a := r.Alignment(0)
			// 512-byte rows packed into 4 aligned blocks, in shuffled order.
			var reqs []Request
			for off := 0; off < 4*a; off += 512 {
				reqs = append(reqs, Request{Offset: int64(off), Length: 512, Dst: make([]byte, 512)})
			}
			rand.New(rand.NewPCG(1, 2)).Shuffle(len(reqs), func(i, k int) { reqs[i], reqs[k] = reqs[k], reqs[i] })
			st, err := r.Read(testCtx(t), reqs)
			if err != nil {
				t.Fatal(err)
			}
			checkRequests(t, reqs, [][]byte{content})
			if st.DeviceReads != 1 || st.Merged != len(reqs)-1 || st.DeviceBytes != int64(4*a) {
				t.Errorf("4 adjacent blocks: stats %+v, want 1 device read of %d bytes", st, 4*a)
			}

			// With merging of neighbours off, rows still share their block.
			r2 := openT(t, []string{p}, Options{QueueDepth: 8, Direct: true, Engine: eng, MaxMergeBytes: a}, openHooks{})
			st2, err := r2.Read(testCtx(t), reqs)
			if err != nil {
				t.Fatal(err)
			}
			if st2.DeviceReads != 4 || st2.DeviceBytes != int64(4*a) {
				t.Errorf("merge cap = one block: stats %+v, want 4 device reads", st2)
			}
			if amp := float64(st2.DeviceBytes) / float64(st2.UsefulBytes); amp != 1 {
				t.Errorf("read amplification %.2f, want 1 for rows tiling whole blocks", amp)
			}
		})
	}
}

func TestShortFile(t *testing.T) {
	dir := diskDir(t)
	// Depth 1 inline is the raw loop (uring_raw.go), which hands a short
	// read to the ordinary path.
	for _, eng := range engines {
		for _, qd := range []int{1, 4} {
			for _, direct := range []bool{true, false} {
				t.Run(fmt.Sprintf("%s/qd=%d/direct=%v", eng, qd, direct), func(t *testing.T) {
					p, content := writeFile(t, dir, fmt.Sprintf("short%d", qd), 10000, 4)
					r := openT(t, []string{p}, Options{QueueDepth: qd, Direct: direct, Engine: eng}, openHooks{})
					tests := []struct {
						name string
						off  int64
						n    int
					}{
						{"row runs past the end", 9000, 2000},
						{"row starts past the end", 20000, 10},
						{"row starts in the last partial block", 9999, 2},
					}
					for _, tc := range tests {
						reqs := []Request{
							{Offset: 0, Length: 100, Dst: make([]byte, 100)},
							{Offset: tc.off, Length: tc.n, Dst: make([]byte, tc.n)},
						}
						_, err := r.Read(testCtx(t), reqs)
						var re *ReadError
						if !errors.As(err, &re) || !errors.Is(err, ErrShortFile) {
							t.Fatalf("%s: err = %v, want a *ReadError wrapping ErrShortFile", tc.name, err)
						}
						if re.Path != p || re.Offset != tc.off || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), fmt.Sprint(tc.off)) {
							t.Errorf("%s: error %q should name %s and offset %d", tc.name, err, p, tc.off)
						}
						checkPoolFull(t, r)
					}
					// The reader stays usable, and a row ending exactly at EOF is fine.
					reqs := []Request{{Offset: 9000, Length: 1000, Dst: make([]byte, 1000)}}
					if _, err := r.Read(testCtx(t), reqs); err != nil {
						t.Fatalf("read to exactly EOF: %v", err)
					}
					checkRequests(t, reqs, [][]byte{content})

					// Truncated under an open reader: the error comes from the
					// read itself, not from a size checked at Open.
					if err := os.Truncate(p, 5000); err != nil {
						t.Fatal(err)
					}
					_, err := r.Read(testCtx(t), []Request{{Offset: 4900, Length: 200, Dst: make([]byte, 200)}})
					if !errors.Is(err, ErrShortFile) || !strings.Contains(err.Error(), "offset 4900") {
						t.Errorf("after truncate: err = %v, want a short-file error at offset 4900", err)
					}
				})
			}
		}
	}
}

func TestRemovedAndClosed(t *testing.T) {
	dir := diskDir(t)
	for _, eng := range engines {
		t.Run(eng, func(t *testing.T) {
			p, content := writeFile(t, dir, "gone", 64<<10, 5)
			r := openT(t, []string{p}, Options{QueueDepth: 4, Direct: true, Engine: eng}, openHooks{})
			// Unlinking keeps the inode while it is open: reads still work.
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			reqs := []Request{{Offset: 123, Length: 5000, Dst: make([]byte, 5000)}}
			if _, err := r.Read(testCtx(t), reqs); err != nil {
				t.Fatalf("read of a removed (still open) file: %v", err)
			}
			checkRequests(t, reqs, [][]byte{content})
			if err := r.Close(); err != nil {
				t.Fatalf("close: %v", err)
			}
			if _, err := r.Read(testCtx(t), reqs); !errors.Is(err, ErrClosed) {
				t.Errorf("read after Close: err = %v, want ErrClosed", err)
			}
			if err := r.Close(); err != nil {
				t.Errorf("second Close: %v", err)
			}
		})
	}
	t.Run("missing file fails at Open", func(t *testing.T) {
		_, err := Open([]string{filepath.Join(dir, "nope")}, DefaultOptions())
		if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "nope") {
			t.Errorf("err = %v, want not-exist naming the file", err)
		}
	})
	t.Run("directory fails at Open", func(t *testing.T) {
		_, err := Open([]string{dir}, DefaultOptions())
		if !errors.Is(err, syscall.EISDIR) {
			t.Errorf("err = %v, want EISDIR", err)
		}
	})
	t.Run("descriptor closed under the pread pool", func(t *testing.T) {
		p, _ := writeFile(t, dir, "badfd", 8192, 6)
		r := openT(t, []string{p}, Options{QueueDepth: 2, Direct: true, Engine: EnginePread}, openHooks{})
		unix.Close(r.files[0].fd)
		_, err := r.Read(testCtx(t), []Request{{Offset: 4096, Length: 10, Dst: make([]byte, 10)}})
		var re *ReadError
		if !errors.As(err, &re) || !errors.Is(err, syscall.EBADF) || re.Path != p || re.Offset != 4096 {
			t.Errorf("err = %v, want a *ReadError for %s at offset 4096 wrapping EBADF", err, p)
		}
		r.files[0].fd = -1 // already closed; keep Close from closing a reused number
	})
}

// TestInjectedFaults drives the retry and error paths through the fault hook:
// the kernel rarely returns short reads, EINTR or EAGAIN on demand.
func TestInjectedFaults(t *testing.T) {
	dir := diskDir(t)
	p, content := writeFile(t, dir, "faults", 1<<20, 7)
	type hookState struct {
		mu    sync.Mutex
		calls map[int64]int
	}
	tests := []struct {
		name    string
		fault   func(s *hookState, off int64, n, res int) int
		wantErr error
		retries bool
	}{
		{"short reads are resumed", func(s *hookState, off int64, n, res int) int {
			// Return one block at a time: aligned, like a real direct read.
			if res > 4096 {
				return 4096
			}
			return res
		}, nil, true},
		{"EINTR and EAGAIN are retried", func(s *hookState, off int64, n, res int) int {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.calls[off]++
			switch s.calls[off] {
			case 1:
				return -int(syscall.EINTR)
			case 2:
				return -int(syscall.EAGAIN)
			}
			return res
		}, nil, true},
		{"EIO names file and offset", func(s *hookState, off int64, n, res int) int {
			if off >= 512<<10 {
				return -int(syscall.EIO)
			}
			return res
		}, syscall.EIO, false},
		{"endless EAGAIN gives up", func(s *hookState, off int64, n, res int) int {
			return -int(syscall.EAGAIN)
		}, syscall.EAGAIN, false},
	}
	for _, eng := range engines {
		for _, tc := range tests {
			t.Run(eng+"/"+tc.name, func(t *testing.T) {
				s := &hookState{calls: map[int64]int{}}
				hooks := openHooks{fault: func(file int, off int64, n, res int) int { return tc.fault(s, off, n, res) }}
				r := openT(t, []string{p}, Options{QueueDepth: 8, Direct: true, Engine: eng}, hooks)
				var reqs []Request
				for off := int64(100); off < 1<<20-70000; off += 65536 {
					reqs = append(reqs, Request{Offset: off, Length: 70000, Dst: make([]byte, 70000)})
				}
				st, err := r.Read(testCtx(t), reqs)
				checkPoolFull(t, r)
				if tc.wantErr == nil {
					if err != nil {
						t.Fatal(err)
					}
					checkRequests(t, reqs, [][]byte{content})
					if tc.retries && st.Retries == 0 {
						t.Errorf("stats %+v: want retries counted", st)
					}
					return
				}
				var re *ReadError
				if !errors.As(err, &re) || !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), p) {
					t.Fatalf("err = %v, want a *ReadError naming %s wrapping %v", err, p, tc.wantErr)
				}
				if !strings.Contains(err.Error(), fmt.Sprintf("offset %d", re.Offset)) {
					t.Errorf("error %q does not name the offset", err)
				}
			})
		}
	}
}

func TestCancel(t *testing.T) {
	dir := diskDir(t)
	p, content := writeFile(t, dir, "big", 32<<20, 8)
	for _, eng := range engines {
		t.Run(eng, func(t *testing.T) {
			// Slow every read down so the batch is surely in flight when
			// the context is cancelled, whatever the disk's speed.
			hooks := openHooks{fault: func(file int, off int64, n, res int) int {
				time.Sleep(time.Millisecond)
				return res
			}}
			// One block per device read, so the batch is thousands of reads.
			r := openT(t, []string{p}, Options{QueueDepth: 8, Direct: true, Engine: eng, MaxMergeBytes: 1}, hooks)
			rng := rand.New(rand.NewPCG(9, 9))
			var reqs []Request
			for range 20000 {
				off := rng.Int64N(32<<20 - 4096)
				reqs = append(reqs, Request{Offset: off, Length: 4096, Dst: make([]byte, 4096)})
			}
			ctx, cancel := context.WithCancel(testCtx(t))
			time.AfterFunc(50*time.Millisecond, cancel)
			start := time.Now()
			st, err := r.Read(ctx, reqs)
			took := time.Since(start)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want context.Canceled (stats %+v)", err, st)
			}
			if took > 2*time.Second {
				t.Errorf("Read took %v to return after cancel at 50ms", took)
			}
			checkPoolFull(t, r)
			// The reader is usable after a cancelled Read.
			reqs = reqs[:50]
			if _, err := r.Read(testCtx(t), reqs); err != nil {
				t.Fatal(err)
			}
			checkRequests(t, reqs, [][]byte{content})
			// An already-cancelled context reads nothing.
			if _, err := r.Read(ctx, reqs); !errors.Is(err, context.Canceled) {
				t.Errorf("pre-cancelled: err = %v", err)
			}
		})
	}
}

func TestEngineSelection(t *testing.T) {
	dir := diskDir(t)
	p, content := writeFile(t, dir, "eng", 200<<10, 10)
	noUring := func([]fileInfo, int, int) (*uringEngine, []string, error) {
		return nil, nil, fmt.Errorf("io_uring_setup: %w", syscall.ENOSYS)
	}
	t.Run("auto uses io_uring when it works", func(t *testing.T) {
		r := openT(t, []string{p}, DefaultOptions(), openHooks{})
		if r.Engine() != EngineIOUring {
			t.Errorf("Engine() = %q (notes: %s)", r.Engine(), r.Notes())
		}
		t.Logf("notes: %q, alignment %d", r.Notes(), r.Alignment(0))
	})
	t.Run("auto falls back to pread and says so", func(t *testing.T) {
		r := openT(t, []string{p}, DefaultOptions(), openHooks{newUring: noUring})
		if r.Engine() != EnginePread || !strings.Contains(r.Notes(), "io_uring unavailable") || !strings.Contains(r.Notes(), "ENOSYS") &&
			!strings.Contains(r.Notes(), "not implemented") {
			t.Errorf("Engine() = %q, notes %q", r.Engine(), r.Notes())
		}
	})
	t.Run("io_uring asked explicitly fails without it", func(t *testing.T) {
		_, err := open([]string{p}, Options{Engine: EngineIOUring}, openHooks{openFD: unix.Open, newUring: noUring})
		if !errors.Is(err, syscall.ENOSYS) {
			t.Errorf("err = %v, want ENOSYS", err)
		}
	})
	t.Run("unknown engine", func(t *testing.T) {
		if _, err := Open([]string{p}, Options{Engine: "aio"}); err == nil || !strings.Contains(err.Error(), `"aio"`) {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("pread gives the same bytes as io_uring", func(t *testing.T) {
		rng := rand.New(rand.NewPCG(11, 11))
		ru := openT(t, []string{p}, DefaultOptions(), openHooks{})
		opt := DefaultOptions()
		opt.Engine = EnginePread
		rp := openT(t, []string{p}, opt, openHooks{})
		if rp.Engine() != EnginePread {
			t.Fatalf("Engine() = %q", rp.Engine())
		}
		a := randomRequests(rng, ru, [][]byte{content}, 200)
		b := make([]Request, len(a))
		for i, q := range a {
			b[i] = q
			b[i].Dst = bytes.Repeat([]byte{0xA5}, len(q.Dst))
		}
		sa, err := ru.Read(testCtx(t), a)
		if err != nil {
			t.Fatal(err)
		}
		sb, err := rp.Read(testCtx(t), b)
		if err != nil {
			t.Fatal(err)
		}
		for i := range a {
			if !bytes.Equal(a[i].Dst[:a[i].Length], b[i].Dst[:b[i].Length]) {
				t.Fatalf("request %d differs between engines", i)
			}
		}
		checkRequests(t, b, [][]byte{content})
		if sa != sb {
			t.Errorf("stats differ: io_uring %+v, pread %+v", sa, sb)
		}
	})
	t.Run("pread pool smaller than the queue depth", func(t *testing.T) {
		r := openT(t, []string{p}, Options{QueueDepth: 16, Workers: 3, Direct: true, Engine: EnginePread}, openHooks{})
		if pe := r.eng.(*preadEngine); pe.workers != 3 || pe.pool.n != 3 {
			t.Errorf("workers %d, buffers %d; want 3 and 3", pe.workers, pe.pool.n)
		}
		reqs := randomRequests(rand.New(rand.NewPCG(13, 13)), r, [][]byte{content}, 100)
		if _, err := r.Read(testCtx(t), reqs); err != nil {
			t.Fatal(err)
		}
		checkRequests(t, reqs, [][]byte{content})
	})
	t.Run("O_DIRECT refused falls back to buffered with a note", func(t *testing.T) {
		refuse := func(path string, flags int, mode uint32) (int, error) {
			if flags&unix.O_DIRECT != 0 {
				return -1, unix.EINVAL
			}
			return unix.Open(path, flags, mode)
		}
		r := openT(t, []string{p}, DefaultOptions(), openHooks{openFD: refuse})
		if r.files[0].direct || !strings.Contains(r.Notes(), "O_DIRECT refused") {
			t.Errorf("direct=%v notes=%q", r.files[0].direct, r.Notes())
		}
		reqs := randomRequests(rand.New(rand.NewPCG(12, 12)), r, [][]byte{content}, 50)
		if _, err := r.Read(testCtx(t), reqs); err != nil {
			t.Fatal(err)
		}
		checkRequests(t, reqs, [][]byte{content})
	})
}

func TestAlignment(t *testing.T) {
	dirs := []string{diskDir(t)}
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		dirs = append(dirs, "/dev/shm")
	}
	for _, d := range dirs {
		f, err := os.CreateTemp(d, "align-")
		if err != nil {
			t.Logf("%s: %v", d, err)
			continue
		}
		f.Close()
		defer os.Remove(f.Name())
		r, err := Open([]string{f.Name()}, DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		a := r.Alignment(0)
		if a < 512 || a&(a-1) != 0 {
			t.Errorf("%s: alignment %d, want a power of two >= 512", d, a)
		}
		if r.Alignment(1) != 0 || r.Alignment(-1) != 0 {
			t.Errorf("Alignment of a bad index should be 0")
		}
		t.Logf("%s: alignment %d bytes, direct=%v, notes %q", d, a, r.files[0].direct, r.Notes())
		r.Close()
	}
}

func TestConcurrentReads(t *testing.T) {
	dir := diskDir(t)
	p, content := writeFile(t, dir, "conc", 2<<20, 13)
	for _, eng := range engines {
		t.Run(eng, func(t *testing.T) {
			r := openT(t, []string{p}, Options{QueueDepth: 16, Direct: true, Engine: eng}, openHooks{})
			var wg sync.WaitGroup
			for g := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rng := rand.New(rand.NewPCG(uint64(g), 14))
					for range 5 {
						reqs := randomRequests(rng, r, [][]byte{content}, 100)
						if _, err := r.Read(testCtx(t), reqs); err != nil {
							t.Error(err)
							return
						}
						checkRequests(t, reqs, [][]byte{content})
					}
				}()
			}
			wg.Wait()
			checkPoolFull(t, r)
		})
	}
}

func TestOpenOptions(t *testing.T) {
	p, _ := writeFile(t, t.TempDir(), "opt", 100, 15)
	tests := []struct {
		name string
		opt  Options
		want string
	}{
		{"negative queue depth", Options{QueueDepth: -1}, "queue depth"},
		{"queue depth too large", Options{QueueDepth: maxQueueDepth + 1}, "queue depth"},
		{"negative workers", Options{Workers: -1}, "workers"},
		{"negative merge cap", Options{MaxMergeBytes: -1}, "max merge"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Open([]string{p}, tc.opt); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
	if _, err := Open(nil, DefaultOptions()); err == nil {
		t.Error("Open with no files should fail")
	}
}

// readOrHang runs r.Read and fails the test if it has not returned within
// testTimeout: a reader stuck waiting on a full queue must show up as a
// failure, not as a test binary killed by go test's timeout.
func readOrHang(t *testing.T, r *Reader, ctx context.Context, reqs []Request) (Stats, error) {
	t.Helper()
	type result struct {
		st  Stats
		err error
	}
	done := make(chan result, 1)
	go func() {
		st, err := r.Read(ctx, reqs)
		done <- result{st, err}
	}()
	select {
	case res := <-done:
		return res.st, res.err
	case <-time.After(testTimeout):
		t.Fatalf("Read did not return within %v", testTimeout)
		return Stats{}, nil
	}
}

// TestFullQueue runs batches many times the queue depth on a ring with
// fewer entries than the reads it keeps in flight: the submission queue
// fills up (GetSQE finds no free entry and the reader must submit first) and
// the completion queue overflows into the kernel's backlog (a submit may
// fail with EBUSY until completions are reaped). The pread pool is full
// whenever a batch has more reads than workers. Each case must give the
// right bytes, or the right error, without hanging or losing a buffer.
func TestFullQueue(t *testing.T) {
	dir := diskDir(t)
	p, content := writeFile(t, dir, "full", 8<<20, 11)
	// Depth 32: the split submission side prepares qd/8 = 4 SQEs before it
	// submits, more than the ring holds.
	const qd = 32
	smallRing := openHooks{newUring: func(files []fileInfo, qd, slotSize int) (*uringEngine, []string, error) {
		return newUringEngineSized(files, qd, 2, slotSize) // SQ 2 entries, CQ 4
	}}
	// One block per device read: thousands of reads, each queue full all
	// the time.
	var reqs []Request
	rng := rand.New(rand.NewPCG(11, 11))
	// The last 128 KiB are kept out of these requests: the EIO case
	// fails reads there.
	badFrom := int64(len(content)) - 64<<10
	for range 3000 {
		off := rng.Int64N(int64(len(content)) - 128<<10)
		reqs = append(reqs, Request{Offset: off, Length: 512, Dst: make([]byte, 512)})
	}
	for _, eng := range engines {
		t.Run(eng, func(t *testing.T) {
			hooks := smallRing
			opt := Options{QueueDepth: qd, Workers: 3, Direct: true, Engine: eng, MaxMergeBytes: 1}
			r := openT(t, []string{p}, opt, hooks)
			u, isUring := r.eng.(*uringEngine)
			if isUring {
				if n := int(u.ring.SQSpaceLeft()); n >= qd {
					t.Fatalf("ring has %d SQ entries, want fewer than the depth %d", n, qd)
				}
			}
			for round := range 3 {
				for i := range reqs {
					clear(reqs[i].Dst)
				}
				st, err := readOrHang(t, r, testCtx(t), reqs)
				if err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
				checkRequests(t, reqs, [][]byte{content})
				checkPoolFull(t, r)
				if st.DeviceReads < 1000 {
					t.Errorf("round %d: %d device reads, want one per distinct block (>1000)", round, st.DeviceReads)
				}
				if isUring && u.lastSQFull == 0 {
					t.Errorf("round %d: the submission queue was never full; the test does not test what it says", round)
				}
			}
		})
		t.Run(eng+"/EIO while full", func(t *testing.T) {
			hooks := smallRing
			hooks.fault = func(file int, off int64, n, res int) int {
				if off+int64(n) > badFrom {
					return -int(syscall.EIO)
				}
				return res
			}
			r := openT(t, []string{p}, Options{QueueDepth: qd, Workers: 3, Direct: true, Engine: eng, MaxMergeBytes: 1}, hooks)
			bad := append(slices.Clone(reqs), Request{Offset: badFrom + 100, Length: 512, Dst: make([]byte, 512)})
			_, err := readOrHang(t, r, testCtx(t), bad)
			var re *ReadError
			if !errors.As(err, &re) || !errors.Is(err, syscall.EIO) || re.Path != p {
				t.Fatalf("err = %v, want a *ReadError for %s wrapping EIO", err, p)
			}
			checkPoolFull(t, r)
			// The reader still works once the bad range is not asked for.
			good := reqs[:500]
			if _, err := readOrHang(t, r, testCtx(t), good); err != nil {
				t.Fatalf("after EIO: %v", err)
			}
			checkRequests(t, good, [][]byte{content})
		})
		t.Run(eng+"/cancel while full", func(t *testing.T) {
			hooks := smallRing
			hooks.fault = func(file int, off int64, n, res int) int {
				time.Sleep(200 * time.Microsecond)
				return res
			}
			r := openT(t, []string{p}, Options{QueueDepth: qd, Workers: 3, Direct: true, Engine: eng, MaxMergeBytes: 1}, hooks)
			ctx, cancel := context.WithCancel(testCtx(t))
			time.AfterFunc(20*time.Millisecond, cancel)
			if _, err := readOrHang(t, r, ctx, reqs); !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want context.Canceled", err)
			}
			checkPoolFull(t, r)
		})
	}
}

// stagingPool is the staging memory of r's engine.
func stagingPool(r *Reader) *bufPool {
	switch e := r.eng.(type) {
	case *uringEngine:
		return e.pool
	case *preadEngine:
		return e.pool
	}
	return nil
}

// TestDirectIntoDst checks reads that are one request's whole aligned span
// with an aligned Dst: they go straight into Dst, leaving the staging
// buffers untouched, through short reads and retries, in Read and Stream
// alike (the pread pool: when no retry is needed); a Dst off the alignment
// goes through staging and still gets its bytes.
func TestDirectIntoDst(t *testing.T) {
	dir := diskDir(t)
	const size = 1 << 20
	p, content := writeFile(t, dir, "direct", size, 11)
	arena := make([]byte, 64<<10+4096)
	base := int((4096 - uintptr(unsafe.Pointer(&arena[0]))%4096) % 4096) // first 4096-aligned byte
	faults := []struct {
		name  string
		fault func(calls map[int64]int, off int64, res int) int
	}{
		{"whole reads", nil},
		{"short then EINTR", func(calls map[int64]int, off int64, res int) int {
			calls[off]++
			switch {
			case calls[off] == 1 && res > 512:
				return 512 // a direct read returns whole sectors
			case calls[off] == 2:
				return -int(syscall.EINTR)
			}
			return res
		}},
	}
	for _, eng := range engines {
		for _, qd := range []int{1, 8} {
			for _, f := range faults {
				for _, misalign := range []int{0, 8} {
					name := fmt.Sprintf("%s/qd=%d/%s/misalign=%d", eng, qd, f.name, misalign)
					t.Run(name, func(t *testing.T) {
						var mu sync.Mutex
						calls := map[int64]int{}
						var hooks openHooks
						if f.fault != nil {
							hooks.fault = func(file int, off int64, n, res int) int {
								mu.Lock()
								defer mu.Unlock()
								return f.fault(calls, off, res)
							}
						}
						r := openT(t, []string{p}, Options{QueueDepth: qd, Direct: true, Engine: eng}, hooks)
						pool := stagingPool(r)
						for i := range pool.mem {
							pool.mem[i] = 0x5A
						}
						// 16 aligned 4 KiB rows far apart (no merging).
						var reqs []Request
						for k := range 16 {
							d := arena[base+misalign+k*4096:]
							d = d[:4096:4096]
							for i := range d {
								d[i] = 0xA5
							}
							reqs = append(reqs, Request{Offset: int64(k) * 64 << 10, Length: 4096, Dst: d})
						}
						for _, stream := range []bool{false, true} {
							var err error
							if stream {
								done := false
								_, err = r.Stream(testCtx(t), func(out []Request) int {
									if done {
										return 0
									}
									done = true
									return copy(out, reqs)
								})
							} else {
								_, err = r.Read(testCtx(t), reqs)
							}
							if err != nil {
								t.Fatalf("stream %v: %v", stream, err)
							}
							checkRequests(t, reqs, [][]byte{content})
							untouched := !slices.ContainsFunc(pool.mem, func(b byte) bool { return b != 0x5A })
							// The pread pool reads straight into Dst only in its
							// raw loop, which leaves retries to the ordinary path
							// and is not built under the race detector.
							want := misalign == 0 && (eng != EnginePread || rawLoop && f.fault == nil)
							if untouched != want {
								t.Errorf("stream %v: staging buffers untouched = %v, want %v", stream, untouched, want)
							}
							if f.fault != nil && len(calls) == 0 {
								t.Errorf("the fault hook never ran")
							}
						}
					})
				}
			}
		}
	}
}

// TestRawLoop: io_uring reads in the raw loop, which returns the same
// bytes and counts the same device reads as reading through giouring, at
// depth 1 and with many reads in flight, whether reads go straight into Dst
// or through staging buffers; a cancelled context stops it before it reads.
func TestRawLoop(t *testing.T) {
	dir := diskDir(t)
	p, b := writeFile(t, dir, "raw", 2<<20+333, 11)
	content := [][]byte{b}
	for _, c := range []struct {
		qd     int
		direct bool
	}{{1, true}, {1, false}, {8, true}, {8, false}, {64, true}} {
		qd, direct := c.qd, c.direct
		raw := openT(t, []string{p}, Options{QueueDepth: qd, Direct: direct, Engine: EngineIOUring}, openHooks{})
		plain := openT(t, []string{p}, Options{QueueDepth: qd, Direct: direct, Engine: "io_uring-giouring"}, openHooks{})
		if u := raw.eng.(*uringEngine); rawURing && u.raw == nil {
			t.Fatalf("qd=%d direct=%v: io_uring has no raw ring (notes: %s)", qd, direct, raw.Notes())
		}
		rng := rand.New(rand.NewPCG(5, 6))
		for round := range 4 {
			reqs := randomRequests(rng, raw, content, 200)
			twin := make([]Request, len(reqs))
			for i, q := range reqs {
				twin[i] = Request{File: q.File, Offset: q.Offset, Length: q.Length, Dst: bytes.Repeat([]byte{0xA5}, len(q.Dst)), Tag: q.Tag}
			}
			st1, err := raw.Read(testCtx(t), reqs)
			if err != nil {
				t.Fatalf("qd=%d direct=%v round %d: raw loop: %v", qd, direct, round, err)
			}
			st2, err := plain.Read(testCtx(t), twin)
			if err != nil {
				t.Fatalf("qd=%d direct=%v round %d: giouring: %v", qd, direct, round, err)
			}
			checkRequests(t, reqs, content)
			checkRequests(t, twin, content)
			if st1.DeviceReads != st2.DeviceReads || st1.DeviceBytes != st2.DeviceBytes {
				t.Errorf("qd=%d direct=%v round %d: raw loop read %d spans, %d bytes; giouring %d, %d", qd, direct, round, st1.DeviceReads, st1.DeviceBytes, st2.DeviceReads, st2.DeviceBytes)
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := raw.Read(ctx, randomRequests(rng, raw, content, 10)); !errors.Is(err, context.Canceled) {
			t.Errorf("qd=%d direct=%v: cancelled Read: %v", qd, direct, err)
		}
		// Cancelled while reads are in flight: the Read stops (or has
		// finished), every staging buffer comes back, and the next Read
		// is right.
		many := make([]Request, 0, 4000)
		for i := range cap(many) {
			off := int64(rng.IntN(len(b)/4096)) * 4096
			many = append(many, Request{Offset: off, Length: 4096, Dst: bytes.Repeat([]byte{0xA5}, 4096), Tag: uint64(i)})
		}
		ctx, cancel = context.WithCancel(context.Background())
		time.AfterFunc(time.Millisecond, cancel)
		if _, err := raw.Read(ctx, many); err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("qd=%d direct=%v: Read cancelled in flight: %v", qd, direct, err)
		}
		cancel()
		checkPoolFull(t, raw)
		if u := raw.eng.(*uringEngine); rawURing && u.raw.nfree != len(u.raw.free) {
			t.Errorf("qd=%d direct=%v: after a cancelled Read the raw loop holds %d of %d staging buffers", qd, direct, len(u.raw.free)-u.raw.nfree, len(u.raw.free))
		}
		after := randomRequests(rng, raw, content, 50)
		if _, err := raw.Read(testCtx(t), after); err != nil {
			t.Fatalf("qd=%d direct=%v: Read after a cancelled one: %v", qd, direct, err)
		}
		checkRequests(t, after, content)
	}
}
