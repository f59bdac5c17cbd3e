package trainer

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/gnnplan/gnnplan/kernels"
	"github.com/gnnplan/gnnplan/trainer/sample"
	"github.com/gnnplan/gnnplan/trainer/store"
)

// FeatureSource serves a batch's feature rows when the features are not
// held in memory as one matrix: a store.Store reading its caches and SSD
// bins. Gather writes row i of the row-major len(vertices) x Dim matrix
// dst for vertices[i]; it may be called from another goroutine than the
// training loop, one call at a time.
type FeatureSource interface {
	Dim() int
	Gather(ctx context.Context, vertices []int32, dst []float32) (store.GatherStats, error)
}

// DefaultGatherAhead is how many batches the pipeline gathers ahead of
// the training step when Options leave it 0: one in the step's hands, two
// with their reads in flight or done, so a slow read is hidden behind the
// next step instead of stalling it.
const DefaultGatherAhead = 2

// StageStats is one pipeline stage's wall time over an epoch: Busy doing
// its work, WaitIn waiting for its input (the stage before it, or the
// sampler), WaitOut waiting for room in the bounded queue after it (the
// stages after it are slower).
type StageStats struct {
	BusySeconds    float64 `json:"busy_s"`
	WaitInSeconds  float64 `json:"wait_in_s"`
	WaitOutSeconds float64 `json:"wait_out_s"`
	// CPUSeconds is the CPU time the stage's own thread used while busy
	// (the gather stage; 0 where not measured): its work without the
	// time it waited for a core the step held. The goroutines a store
	// with several copy threads (store.Options.CopyThreads) starts are
	// not counted.
	CPUSeconds float64 `json:"cpu_s,omitempty"`
}

func (s *StageStats) add(o StageStats) {
	s.BusySeconds += o.BusySeconds
	s.CPUSeconds += o.CPUSeconds
	s.WaitInSeconds += o.WaitInSeconds
	s.WaitOutSeconds += o.WaitOutSeconds
}

// pipeStats is what the pipeline's goroutines measured for one batch; it
// travels with the batch, so the training loop adds it up without locks.
type pipeStats struct {
	sample, gather StageStats
	rows           store.GatherStats
}

// gathered is a prepared batch with its input rows (none when the
// first layer reads the in-memory matrix, or the in-memory path gathers
// in the step).
type gathered struct {
	preparedBatch
	rows  inputRows
	stats pipeStats
}

// pipeline runs an epoch's batches through sampling and block building
// (one goroutine, reading the sampler, which works ahead on its own
// workers) and, with a FeatureSource, gathering (a second goroutine),
// joined by bounded queues: at most two prepared batches wait for the
// gather stage and GatherAhead gathered ones for the step, and the
// gathered batches' buffers come from a pool of GatherAhead+2, so memory
// is bounded by the queue depth times the batch whatever the dataset's
// size; on a GPU their uploads share the worker's inputSlots device
// matrices, so the device holds two batches' rows whatever the depth.
// out closes after the last batch, after an error (sent as the last
// item) or when ctx ends; stop ends both goroutines and waits for them,
// giving back the device slots of the batches never trained.
type pipeline struct {
	out  <-chan gathered
	free chan *stageBuf // gathered batches' buffers, returned by the step
	stop func()         // idempotent
}

// startPipeline starts worker w's pipeline for epoch at the run's next
// batch.
func (t *Trainer) startPipeline(ctx context.Context, w *worker, epoch int) *pipeline {
	ctx, cancel := context.WithCancel(ctx)
	prepared := make(chan gathered, 2)
	var done []chan struct{}
	run := func(f func()) {
		d := make(chan struct{})
		done = append(done, d)
		go func() {
			defer close(d)
			f()
		}()
	}
	run(func() {
		defer close(prepared)
		last := time.Now()
		var waitedOut float64 // the previous batch's wait for room
		first := min(t.st.NextBatch, w.smp.Batches(epoch))
		err := w.smp.EpochFrom(ctx, epoch, first, func(mb *sample.MiniBatch) error {
			start := time.Now()
			pb, err := t.prepareOnPipeline(w, mb)
			if err != nil {
				return err
			}
			g := gathered{preparedBatch: pb}
			sent := time.Now()
			// A batch's wait for room is known only once it is sent: it
			// rides with the next batch.
			g.stats.sample = StageStats{BusySeconds: sent.Sub(start).Seconds(), WaitInSeconds: start.Sub(last).Seconds(), WaitOutSeconds: waitedOut}
			select {
			case prepared <- g:
			case <-ctx.Done():
				return ctx.Err()
			}
			last = time.Now()
			waitedOut = last.Sub(sent).Seconds()
			return nil
		})
		if err != nil && ctx.Err() == nil {
			// The gather stage may have stopped on an error of its own and
			// no longer read: only stop's cancel ends this send then.
			select {
			case prepared <- gathered{preparedBatch: preparedBatch{err: err}}:
			case <-ctx.Done():
			}
		}
	})
	p := &pipeline{out: prepared}
	if t.src != nil {
		ahead := t.o.GatherAhead
		if ahead <= 0 {
			ahead = DefaultGatherAhead
		}
		out := make(chan gathered, ahead)
		p.out = out
		// The worker's buffers outlive the epoch: a GPU worker's are
		// pinned, and pinning memory is slow.
		for len(w.pool) < ahead+2 {
			w.pool = append(w.pool, &stageBuf{})
		}
		p.free = make(chan *stageBuf, len(w.pool))
		for _, sb := range w.pool {
			p.free <- sb
		}
		run(func() {
			defer close(out)
			// On a thread of its own, so that the thread's CPU time is
			// the gather's.
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			last := time.Now()
			var waitedOut float64
			for g := range prepared {
				got := time.Now()
				if g.err == nil {
					// Waiting for a free buffer is waiting for room too:
					// every buffer is queued or in the step's hands.
					var buf *stageBuf
					select {
					case buf = <-p.free:
					case <-ctx.Done():
						return
					}
					start := time.Now()
					cpu0, cpuOK := threadCPUSeconds()
					g.rows, g.stats.rows, g.err = t.gatherInput(ctx, w, g.mb, buf)
					g.stats.gather = StageStats{BusySeconds: time.Since(start).Seconds(), WaitInSeconds: got.Sub(last).Seconds(),
						WaitOutSeconds: waitedOut + start.Sub(got).Seconds()}
					if cpu1, ok := threadCPUSeconds(); ok && cpuOK {
						g.stats.gather.CPUSeconds = max(0, cpu1-cpu0)
					}
				}
				sent := time.Now()
				select {
				case out <- g:
				case <-ctx.Done():
					p.release(g.rows)
					return
				}
				last = time.Now()
				waitedOut = last.Sub(sent).Seconds()
				if g.err != nil {
					return
				}
			}
		})
	}
	var once sync.Once
	p.stop = func() {
		once.Do(func() {
			cancel()
			// The batches gathered and never trained hold device slots
			// the next epoch's (or the evaluation's) uploads wait for.
			for g := range p.out {
				p.release(g.rows)
			}
			for _, d := range done {
				<-d
			}
		})
	}
	return p
}

// release gives back a gathered batch's rows: its device slot (nothing
// once the step called Done) and its buffer, to the pool. Each batch is
// released once: its buffer goes to another batch after.
func (p *pipeline) release(r inputRows) {
	if r.st != nil {
		dropSlot(r.st)
	}
	if p.free != nil && r.sb != nil {
		select {
		case p.free <- r.sb:
		default:
		}
	}
}

// dropSlot gives back the device slot s holds, if any, on a path that
// drops a batch (an error, a cancel, the pipeline's stop). A failed
// device panics again in recording the slot's fence: its first failure
// is already on its way to Run, and the slot is back either way, so that
// panic alone is dropped (deferred during another panic, dropSlot does
// not recover that one).
func dropSlot(s *kernels.Staging) {
	defer func() {
		if e := recover(); e != nil {
			if _, ok := e.(*kernels.DeviceError); !ok {
				panic(e)
			}
		}
	}()
	s.Done()
}

// stageBuf is where a batch's rows are gathered: host memory, or for a
// worker on a GPU a pinned staging buffer copied on the GPU's copy
// stream, into one of the worker's device slots, while the batch before
// computes.
type stageBuf struct {
	host []float32
	st   *kernels.Staging
	idx  []int32 // where each row is, for a worker holding a bin resident
}

// prepareOnPipeline is prepareBlocks on the pipeline's goroutine, where a
// device's failure (the blocks go to the worker's GPU) is returned rather
// than left to crash the process.
func (t *Trainer) prepareOnPipeline(w *worker, mb *sample.MiniBatch) (pb preparedBatch, err error) {
	defer recoverDeviceError(&err)
	return t.prepareBlocks(w, mb, true), nil
}

// inputRows is a batch's gathered input: every row of mb.Input() in
// buf, or, for a worker holding a cache bin on its device, the n rows it
// does not hold packed in buf and idx saying where each row is (see
// store.GatherResident). st, on a GPU, is buf's staging, its upload
// started into one of the worker's device slots, held until st.Done; sb
// is the buffer to return.
type inputRows struct {
	buf []float32
	idx []int32
	n   int
	st  *kernels.Staging
	sb  *stageBuf
}

// gatherInput reads the feature rows of mb's outermost sources from the
// feature source into sb (grown as needed), row-normalised as the
// in-memory matrix would be; the rows of w's resident bin stay on its
// device. On a GPU it starts copying them there; a failure of the GPU's
// is returned, since the gather runs on the pipeline's goroutine.
func (t *Trainer) gatherInput(ctx context.Context, w *worker, mb *sample.MiniBatch, sb *stageBuf) (r inputRows, st store.GatherStats, err error) {
	r.sb = sb
	defer recoverDeviceError(&err)
	in := mb.Input()
	dim := t.cfg.InDim
	n := len(in) * dim
	if gpu, ok := w.b.(*kernels.GPU); ok {
		if w.ring == nil {
			if w.ring, err = gpu.NewStagingRing(inputSlots); err != nil {
				return r, st, fmt.Errorf("epoch %d, batch %d: %w", mb.Epoch+1, mb.Index+1, err)
			}
		}
		if sb.st == nil || sb.st.Floats() < n {
			staging, err := w.ring.NewStaging(n + n/4)
			if err != nil {
				return r, st, fmt.Errorf("epoch %d, batch %d: %w", mb.Epoch+1, mb.Index+1, err)
			}
			sb.st, sb.host = staging, staging.Host()
		}
	} else if cap(sb.host) < n {
		sb.host = make([]float32, n)
	}
	r = inputRows{buf: sb.host[:n], n: len(in), st: sb.st, sb: sb}
	if w.cache != nil {
		if cap(sb.idx) < len(in) {
			sb.idx = make([]int32, len(in))
		}
		r.idx = sb.idx[:len(in)]
		r.n, st, err = w.rs.GatherResident(ctx, in, r.buf, w.resident, r.idx)
	} else {
		st, err = t.src.Gather(ctx, in, r.buf)
	}
	if err != nil {
		return r, st, fmt.Errorf("epoch %d, batch %d: %w", mb.Epoch+1, mb.Index+1, err)
	}
	if t.o.RowNormalize {
		rowNormalizeOn(t.o.GatherThreads, r.buf[:r.n*dim], dim)
	}
	if r.st != nil {
		// Waits for a free device slot: the step's Done of the batch
		// before last gives one back.
		if err := r.st.Upload(ctx, r.n, dim); err != nil {
			return r, st, fmt.Errorf("epoch %d, batch %d: %w", mb.Epoch+1, mb.Index+1, err)
		}
	}
	return r, st, nil
}

// inputSlots is how many device matrices a worker on a GPU uploads
// batches' rows into, whatever the number of host buffers gathered ahead:
// the one the step reads and the next batch's, copied in meanwhile.
const inputSlots = 2

// residentSource is a FeatureSource whose worker (GPU) cache bins a
// worker on a device can hold in the device's memory: a *store.Store.
type residentSource interface {
	WorkerBins() []int
	BinIDs() []string
	BinData(bin int) ([]float32, error)
	GatherResident(ctx context.Context, vertices []int32, dst []float32, resident int, idx []int32) (int, store.GatherStats, error)
}
