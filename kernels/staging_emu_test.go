//go:build cgo

package kernels

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// deadlock is how long a test waits for what should happen at once
// before it calls it stuck.
const deadlock = 10 * time.Second

// fillStaging writes batch's values into s's first rows x cols.
func fillStaging(s *Staging, rows, cols, batch int) []float32 {
	h := s.Host()[:rows*cols]
	for i := range h {
		h[i] = float32(batch*1000+i) + 0.25
	}
	return slices.Clone(h)
}

// readThrough reads m back through a kernel (m added to out, zeroed), as
// the step's first layer reads a staged batch.
func readThrough(g *GPU, m, out *Mat) []float32 {
	g.Resize(out, m.Rows, m.Cols)
	g.Zero(out)
	g.Axpy(1, m, out)
	got := make([]float32, out.Len())
	g.Download(got, out)
	return got
}

// TestStagingRingBoundsDeviceCopies runs batches through four stagings
// in the trainer's pipeline order (the next batches uploaded while one
// computes, each Done once its kernels are queued) and counts the device
// matrices they allocate: a ring's slots, however many stagings share
// it, or one per staging without a ring. Every batch must arrive intact.
func TestStagingRingBoundsDeviceCopies(t *testing.T) {
	const rows, cols, stagings, batches = 6, 5, 4, 11
	for _, tc := range []struct {
		name       string
		slots      int // the ring's; 0: each staging its own matrix
		ahead      int // batches uploaded beyond the one computing
		wantAllocs int
	}{
		{"four stagings on a ring of two hold two device matrices", 2, 1, 2},
		{"four stagings on a ring of three, two ahead, hold three", 3, 2, 3},
		{"four stagings of their own hold four", 0, 3, 4},
		{"a ring of one serves one batch at a time", 1, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, d := newEmuGPU(0)
			var ring *StagingRing
			if tc.slots > 0 {
				var err error
				if ring, err = g.NewStagingRing(tc.slots); err != nil {
					t.Fatal(err)
				}
			}
			ss := make([]*Staging, stagings)
			for i := range ss {
				var err error
				if ring != nil {
					ss[i], err = ring.NewStaging(rows * cols)
				} else {
					ss[i], err = g.NewStaging(rows * cols)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			out := g.NewMat(rows, cols)
			live, liveBytes := d.live, d.liveBytes
			want := make([][]float32, batches)
			upload := func(b int) {
				s := ss[b%stagings]
				want[b] = fillStaging(s, rows, cols, b)
				if err := s.Upload(context.Background(), rows, cols); err != nil {
					t.Fatal(err)
				}
			}
			for b := range min(tc.ahead, batches) {
				upload(b)
			}
			for b := range batches {
				if next := b + tc.ahead; next < batches {
					upload(next)
				}
				s := ss[b%stagings]
				m := s.Mat()
				got := readThrough(g, m, out)
				s.Done()
				if m.Rows != rows || m.Cols != cols || !slices.Equal(got, want[b]) {
					t.Fatalf("batch %d: %dx%d %v, want %dx%d %v", b, m.Rows, m.Cols, got, rows, cols, want[b])
				}
			}
			// Only the uploads allocated, each slot once (the batches are
			// of one size): a matrix's bytes and an eighth to grow.
			wantBytes := int64(tc.wantAllocs) * (4*rows*cols + 4*rows*cols/8)
			if n, bytes := d.live-live, d.liveBytes-liveBytes; n != tc.wantAllocs || bytes != wantBytes {
				t.Errorf("%d device matrices of %d bytes behind %d stagings, want %d of %d", n, bytes, stagings, tc.wantAllocs, wantBytes)
			}
		})
	}
}

// newRingStagings returns a ring of slots and n stagings of floats
// values on it.
func newRingStagings(t *testing.T, g *GPU, slots, n, floats int) (*StagingRing, []*Staging) {
	t.Helper()
	r, err := g.NewStagingRing(slots)
	if err != nil {
		t.Fatal(err)
	}
	ss := make([]*Staging, n)
	for i := range ss {
		if ss[i], err = r.NewStaging(floats); err != nil {
			t.Fatal(err)
		}
	}
	return r, ss
}

// ended is a context that has ended.
func ended() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// TestStagingRingUploadWaitsForASlot holds both slots of a ring of two:
// a third upload gives up at once on an ended context, holding nothing,
// and otherwise waits until a Done gives a slot back, then uploads into
// it; the batch before, read before the Done, and the new one arrive
// intact.
func TestStagingRingUploadWaitsForASlot(t *testing.T) {
	const rows, cols = 4, 3
	g, _ := newEmuGPU(0)
	_, ss := newRingStagings(t, g, 2, 3, rows*cols)
	a, b, c := ss[0], ss[1], ss[2]
	wantA := fillStaging(a, rows, cols, 1)
	fillStaging(b, rows, cols, 2)
	wantC := fillStaging(c, rows, cols, 3)
	for _, s := range []*Staging{a, b} {
		if err := s.Upload(context.Background(), rows, cols); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Upload(ended(), rows, cols); !errors.Is(err, context.Canceled) {
		t.Fatalf("an upload with both slots held and its context ended: %v, want context.Canceled", err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Upload(context.Background(), rows, cols) }()
	select {
	case err := <-done:
		t.Fatalf("an upload returned (%v) while both slots were held", err)
	default:
	}
	out := g.NewMat(0, 0)
	ma := a.Mat()
	if got := readThrough(g, ma, out); !slices.Equal(got, wantA) {
		t.Errorf("first batch %v, want %v", got, wantA)
	}
	a.Done()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(deadlock):
		t.Fatal("an upload still waits after a Done gave a slot back")
	}
	mc := c.Mat()
	if mc.d != ma.d {
		t.Errorf("the upload went to %#x, not to the slot Done gave back (%#x)", mc.d, ma.d)
	}
	if got := readThrough(g, mc, out); !slices.Equal(got, wantC) {
		t.Errorf("third batch %v, want %v", got, wantC)
	}
	b.Done()
	c.Done()
}

// TestStagingRingUploadGivesUp cancels an upload waiting for a slot: it
// returns the context's error and takes no slot, so both come back to
// later uploads once their holders are Done.
func TestStagingRingUploadGivesUp(t *testing.T) {
	g, _ := newEmuGPU(0)
	r, ss := newRingStagings(t, g, 2, 5, 8)
	for _, s := range ss[:2] {
		if err := s.Upload(context.Background(), 2, 4); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ss[2].Upload(ctx, 2, 4) }()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("a cancelled upload: %v, want context.Canceled", err)
		}
	case <-time.After(deadlock):
		t.Fatal("a cancelled upload still waits for a slot")
	}
	ss[2].Done() // holds nothing: gives nothing back
	ss[0].Done()
	ss[1].Done()
	if n := len(r.slots); n != 2 {
		t.Fatalf("%d free slots after every holder's Done, want 2", n)
	}
	for _, s := range ss[3:] {
		if err := s.Upload(ended(), 2, 4); err != nil {
			t.Errorf("an upload with a free slot: %v", err)
		}
	}
}

// TestStagingDoneGivesBackOneSlot: Done twice, or Done on a staging that
// holds no slot, gives back nothing more (a duplicate would let three
// batches share two device matrices, or block in Done on a full ring),
// and a failed upload (the GPU full) gives its slot back.
func TestStagingDoneGivesBackOneSlot(t *testing.T) {
	for _, tc := range []struct {
		name string
		use  func(t *testing.T, d *emuDevice, s *Staging)
	}{
		{"Done twice", func(t *testing.T, _ *emuDevice, s *Staging) {
			if err := s.Upload(context.Background(), 2, 4); err != nil {
				t.Fatal(err)
			}
			s.Mat()
			s.Done()
			s.Done()
		}},
		{"Done without an upload", func(_ *testing.T, _ *emuDevice, s *Staging) { s.Done() }},
		{"an upload the GPU has no room for", func(t *testing.T, d *emuDevice, s *Staging) {
			d.memory = d.liveBytes + 16 // the upload needs 36 bytes
			defer func() {
				var de *DeviceError
				if e, ok := recover().(error); !ok || !errors.As(e, &de) {
					t.Errorf("upload beyond the GPU's memory: %v, want a DeviceError", e)
				}
				d.memory = 0
				s.Done()
			}()
			_ = s.Upload(context.Background(), 2, 4)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, d := newEmuGPU(0)
			r, ss := newRingStagings(t, g, 2, 4, 8)
			used := make(chan struct{})
			go func() {
				defer close(used)
				tc.use(t, d, ss[0])
			}()
			select {
			case <-used:
			case <-time.After(deadlock):
				t.Fatal("Done is stuck giving back a slot")
			}
			if n := len(r.slots); n != 2 {
				t.Fatalf("%d free slots, want 2", n)
			}
			for _, s := range ss[1:3] {
				if err := s.Upload(ended(), 2, 4); err != nil {
					t.Fatalf("upload into a free slot: %v", err)
				}
			}
			if err := ss[3].Upload(ended(), 2, 4); err == nil {
				t.Error("a third upload found a slot: the ring gave out more than two")
			}
		})
	}
}

// fenceLog is an emulated device that numbers its fences and logs how
// they order copies and kernels, which the emulation (copying at once)
// does not need but a real GPU's streams do.
type fenceLog struct {
	*emuDevice
	fences int
	names  map[uintptr]string // device matrices by first use: A, B, ...
	log    []string
}

func (f *fenceLog) newFence() (int, error) {
	f.fences++
	return f.fences, nil
}

func (f *fenceLog) uploadAsync(dst uintptr, src unsafe.Pointer, bytes int, after, done int) {
	if f.names[dst] == "" {
		f.names[dst] = string(rune('A' + len(f.names)))
	}
	f.log = append(f.log, fmt.Sprintf("copy into %s after %d, sets %d", f.names[dst], after, done))
	f.emuDevice.uploadAsync(dst, src, bytes, after, done)
}

func (f *fenceLog) await(fence int) { f.log = append(f.log, fmt.Sprintf("kernels await %d", fence)) }

func (f *fenceLog) signal(fence int) { f.log = append(f.log, fmt.Sprintf("kernels set %d", fence)) }

// TestStagingRingFences checks the fences four stagings on a ring of two
// pass a GPU in the pipeline's order: each copy into a slot waits for the
// fence the slot's last Done set after the kernels that read it (the
// slot's own, not the staging's), and the kernels reading a batch wait
// for its copy's fence.
func TestStagingRingFences(t *testing.T) {
	_, emu := newEmuGPU(0)
	d := &fenceLog{emuDevice: emu, names: map[uintptr]string{}}
	g := newGPU(d)
	_, ss := newRingStagings(t, g, 2, 4, 6) // slots' fences 1, 2; stagings' 3 to 6
	upload := func(i int) {
		if err := ss[i].Upload(context.Background(), 2, 3); err != nil {
			t.Fatal(err)
		}
	}
	upload(0)
	upload(1)
	for i := range ss {
		ss[i].Mat()
		ss[i].Done()
		if i+2 < len(ss) {
			upload(i + 2)
		}
	}
	want := []string{
		"copy into A after 1, sets 3",
		"copy into B after 2, sets 4",
		"kernels await 3",
		"kernels set 1",
		"copy into A after 1, sets 5",
		"kernels await 4",
		"kernels set 2",
		"copy into B after 2, sets 6",
		"kernels await 5",
		"kernels set 1",
		"kernels await 6",
		"kernels set 2",
	}
	if !slices.Equal(d.log, want) {
		t.Errorf("fences:\n%s\nwant:\n%s", strings.Join(d.log, "\n"), strings.Join(want, "\n"))
	}
}
