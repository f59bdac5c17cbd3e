//go:build cgo

package trainer

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gnnplan/gnnplan/kernels"
	"github.com/gnnplan/gnnplan/trainer/nn"
	"github.com/gnnplan/gnnplan/trainer/sample"
)

// stuck is how long a test run may take before it counts as deadlocked:
// every run here takes seconds. Run's context ending unblocks a gather
// waiting for a device slot, so a run that would hang fails instead.
const stuck = 2 * time.Minute

// wideInputs is a dataset whose batches' input rows (512 floats each)
// dwarf the model (16 hidden units), out of core with every row on SSD:
// the GPU's memory is mostly the staged inputs.
type wideInputs struct {
	d   loaded
	src FeatureSource
}

func newWideInputs(t *testing.T) wideInputs {
	t.Helper()
	const n = 1200
	dir := synthDataset(t, n, 512)
	return wideInputs{d: load(t, dir), src: StoreSource(materializeStore(t, dir, n, storeMix{name: "all on SSD", ssds: 1, ssdShare: 1}, 5))}
}

// options trains kind on one worker for three epochs, evaluating after
// each (the evaluation uploads into the worker's slots too).
func (w wideInputs) options(kind nn.Kind) Options {
	o := gpuTestOptions(kind)
	o.Workers, o.BatchSize, o.Epochs, o.EvalEvery = 1, 64, 3, 1
	return o
}

// run trains o on an emulated GPU of memoryBytes (0: unbounded), its
// worker's uploads sharing slots device matrices (0: the trainer's
// choice), and returns the parameters' bits or Run's error.
func (w wideInputs) run(t *testing.T, o Options, memoryBytes int64, slots int) ([]uint32, error) {
	t.Helper()
	g, err := kernels.NewEmulatedGPU(0, memoryBytes)
	if err != nil {
		t.Fatal(err)
	}
	o.Features, o.Backends = w.src, []kernels.Backend{g}
	tr, err := New(g, w.d.g, nil, o)
	if err != nil {
		return nil, err
	}
	if slots > 0 {
		if tr.workers[0].input.ring, err = g.NewStagingRing(slots); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), stuck)
	defer cancel()
	if _, err := tr.Run(ctx, nil); err != nil {
		return nil, err
	}
	return params(tr), nil
}

// TestOutOfCoreGPUSharesTwoInputBuffers trains out of core on an
// emulated GPU, the gather stage four host buffers ahead of the step and
// every upload into one of two device matrices: each model runs its
// epochs through (the epochs' ends and the evaluations give the slots
// back) to the bits of the same run with its features in GPU memory, and
// with the GPU's memory too small for four input buffers, it still runs.
func TestOutOfCoreGPUSharesTwoInputBuffers(t *testing.T) {
	w := newWideInputs(t)
	for _, kind := range nn.Kinds() {
		t.Run(string(kind), func(t *testing.T) {
			o := w.options(kind)
			inMemory, _ := runOn(t, w.d, o, []kernels.Backend{emuGPU(t, 0)})
			got, err := w.run(t, o, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, inMemory) {
				t.Error("out of core on the GPU differs from the features in GPU memory")
			}
		})
	}
	// GraphSAGE's largest batch has 657 input rows, 1.4 MiB on the device
	// with room to grow. Measured (go1.26, emulated, bisecting the limit):
	// this run needs 5.2 MiB of GPU memory with two device input matrices,
	// 7.9 MiB with four, and needed 14.3 MiB before the ring (four, and
	// one more per evaluation until collected); 6.5 MiB is halfway
	// between two and four.
	const memoryBytes = 13 << 19
	for _, tc := range []struct {
		name  string
		slots int
		fits  bool
	}{
		{"two device input matrices fit", 0, true},
		{"four do not", 4, false},
	} {
		t.Run("graphsage in 6.5 MiB/"+tc.name, func(t *testing.T) {
			o := w.options(nn.GraphSAGE)
			got, err := w.run(t, o, memoryBytes, tc.slots)
			var de *kernels.DeviceError
			switch {
			case tc.fits && err != nil:
				t.Fatalf("Run: %v", err)
			case tc.fits:
				inMemory, _ := runOn(t, w.d, o, []kernels.Backend{emuGPU(t, 0)})
				if !slices.Equal(got, inMemory) {
					t.Error("out of core on a small GPU differs from the features in GPU memory")
				}
			case !errors.As(err, &de) || !strings.Contains(err.Error(), "out of memory"):
				t.Errorf("Run: %v, want the GPU's out-of-memory error", err)
			}
		})
	}
}

// freeSlots counts r's free slots: the uploads that find one at once.
func freeSlots(t *testing.T, r *kernels.StagingRing) int {
	t.Helper()
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	n := 0
	var held []*kernels.Staging
	for range inputSlots + 1 {
		s, err := r.NewStaging(1)
		if err != nil {
			t.Fatal(err)
		}
		if s.Upload(ended, 1, 1) == nil {
			n++
			held = append(held, s)
		}
	}
	for _, s := range held {
		s.Done()
	}
	return n
}

// failingBatch fails the first gather of one batch's rows, whichever
// worker's pipeline asks (they may ask at once).
type failingBatch struct {
	FeatureSource
	rows   []int32
	failed atomic.Bool
}

func (f *failingBatch) Gather(ctx context.Context, v []int32, dst []float32) (GatherStats, error) {
	if slices.Equal(v, f.rows) && f.failed.CompareAndSwap(false, true) {
		return GatherStats{}, errors.New("read nvme0 bin row 5: input/output error")
	}
	return f.FeatureSource.Gather(ctx, v, dst)
}

// TestGPUSlotsComeBackAfterAStop stops runs on emulated GPUs in their
// second epoch, with batches gathered and uploaded ahead of the step
// (each holding a device slot), or worker 0's batch taken for the step
// when worker 1's gather fails, then runs the same trainer on: it
// finishes, to the bits of a run never stopped, only if the stop gave
// every slot back.
func TestGPUSlotsComeBackAfterAStop(t *testing.T) {
	w := newWideInputs(t)
	const epoch, batch = 1, 1 // the second epoch's second batch
	// inputOf is worker's input rows in that batch of o's run.
	inputOf := func(o Options, worker int) []int32 {
		tr, err := New(o.Backends[0], w.d.g, nil, withSource(o, w.src))
		if err != nil {
			t.Fatal(err)
		}
		var rows []int32
		found := errors.New("found")
		err = tr.workers[worker].sampler.EpochFrom(t.Context(), epoch, batch, func(mb *sample.MiniBatch) error {
			rows = slices.Clone(mb.Input())
			return found
		})
		if !errors.Is(err, found) {
			t.Fatal(err)
		}
		return rows
	}
	for _, tc := range []struct {
		name      string
		workers   int
		ahead     int  // Options.GatherAhead
		interrupt bool // after the batch before; else fail worker's gather of it
		worker    int
	}{
		{"an interrupt", 1, 0, true, 0},
		// The gather stage waits to hand over a batch it uploaded.
		{"an interrupt, one batch gathered ahead", 1, 1, true, 0},
		{"a read error", 1, 0, false, 0},
		{"a read error on the second of two GPUs", 2, 0, false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := w.options(nn.GraphSAGE)
			o.Workers, o.GatherAhead = tc.workers, tc.ahead
			gpus := func() []kernels.Backend {
				var bs []kernels.Backend
				for i := range tc.workers {
					bs = append(bs, emuGPU(t, i))
				}
				return bs
			}
			whole, _ := runOn(t, w.d, withSource(o, w.src), gpus())

			o.Backends = gpus()
			src := &failingBatch{FeatureSource: w.src}
			if !tc.interrupt {
				src.rows = inputOf(o, tc.worker)
			}
			o.Features = src
			tr, err := New(o.Backends[0], w.d.g, nil, o)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), stuck)
			defer cancel()
			var rep Reporter
			want := "input/output error"
			if tc.interrupt {
				rep, want = &cancelAfter{n: epoch*tr.workers.batches(0) + batch, cancel: cancel}, "interrupted"
			}
			if _, err := tr.Run(ctx, rep); err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("the run that stops: %v, want %q", err, want)
			}
			if tr.run.Epoch != epoch || tr.run.NextBatch != batch {
				t.Fatalf("stopped before epoch %d, batch %d, want %d, %d", tr.run.Epoch+1, tr.run.NextBatch+1, epoch+1, batch+1)
			}
			for _, wk := range tr.workers {
				if n := freeSlots(t, wk.input.ring); n != inputSlots {
					t.Errorf("worker %d: %d of %d device slots free after the stop", wk.id, n, inputSlots)
				}
			}
			ctx, cancel = context.WithTimeout(context.Background(), stuck)
			defer cancel()
			if _, err := tr.Run(ctx, nil); err != nil {
				t.Fatalf("running on after the stop: %v", err)
			}
			if !slices.Equal(params(tr), whole) {
				t.Error("the run stopped and run on differs from the run never stopped")
			}
		})
	}
}
