package trainer

import (
	"context"
	"io"
	"runtime"
	"sync"
	"time"

	"github.com/gnnplan/gnnplan/trainer/sample"
)

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

// prefetchLoader is the default Loader: it runs an epoch's batches
// through sampling and block building (one goroutine, reading the
// sampler, which works ahead on its own workers) and, with a
// FeatureSource, gathering (a second goroutine), joined by bounded queues:
// at most two sampled batches wait for the gather stage and ahead gathered
// ones for the step, and the gathered batches' buffers come from a pool
// of ahead+2, so memory is bounded by the queue depth times the batch
// whatever the dataset's size; on a GPU their uploads share the worker's
// inputSlots device matrices, so the device holds two batches' rows
// whatever the depth.
type prefetchLoader struct {
	source batchSource
	blocks blockBuilder
	input  *workerInput
	// inPlace says the first layer reads the in-memory features in place
	// in training: the outermost block is an input block.
	inPlace bool
	ahead   int // gathered batches that may wait for the step
	// epochOf maps an epoch to the one whose batches it trains (nil:
	// itself): the packed loader reuses its packed epochs past the last.
	epochOf func(int) int
	// rows fetches a batch's rows (nil: from input's source; see
	// workerInput.gather).
	rows rowFetcher
}

// loadedBatch is a batch on its way through the loader's queues; err ends
// them.
type loadedBatch struct {
	Batch
	err error
}

// prefetchEpoch is an epoch of a prefetchLoader's batches. out closes
// after the last batch, after an error (sent as the last item) or when
// ctx ends.
type prefetchEpoch struct {
	out  <-chan loadedBatch
	free chan *stageBuf // gathered batches' buffers, returned by Release
	stop func()         // idempotent
}

// sampledEpoch is the epoch whose batches epoch trains on.
func (l *prefetchLoader) sampledEpoch(epoch int) int {
	if l.epochOf != nil {
		return l.epochOf(epoch)
	}
	return epoch
}

// Batches is how many batches epoch has.
func (l *prefetchLoader) Batches(epoch int) int { return l.source.Batches(l.sampledEpoch(epoch)) }

// Epoch starts the loader's goroutines for epoch at batch first.
func (l *prefetchLoader) Epoch(ctx context.Context, epoch, first int) Batches {
	ctx, cancel := context.WithCancel(ctx)
	var done []chan struct{}
	run := func(f func()) {
		d := make(chan struct{})
		done = append(done, d)
		go func() {
			defer close(d)
			f()
		}()
	}
	sampled := make(chan loadedBatch, 2)
	run(func() { l.sampleStage(ctx, epoch, first, sampled) })
	p := &prefetchEpoch{out: sampled}
	if l.input.source != nil {
		out := make(chan loadedBatch, l.ahead)
		p.out = out
		bufs := l.input.buffers(l.ahead + 2)
		p.free = make(chan *stageBuf, len(bufs))
		for _, sb := range bufs {
			p.free <- sb
		}
		run(func() { l.gatherStage(ctx, sampled, out, p) })
	}
	var once sync.Once
	p.stop = func() {
		once.Do(func() {
			cancel()
			// The batches gathered and never trained hold device slots
			// the next epoch's (or the evaluation's) uploads wait for.
			for b := range p.out {
				p.Release(b.Batch)
			}
			for _, d := range done {
				<-d
			}
		})
	}
	return p
}

// sampleStage samples epoch's batches from first and builds their blocks
// into out, closing it at the end.
func (l *prefetchLoader) sampleStage(ctx context.Context, epoch, first int, out chan<- loadedBatch) {
	defer close(out)
	last := time.Now()
	var waitedOut float64 // the previous batch's wait for room
	sampled := l.sampledEpoch(epoch)
	first = min(first, l.source.Batches(sampled))
	err := l.source.EpochFrom(ctx, sampled, first, func(mb *sample.MiniBatch) error {
		// A reused epoch's batches train as this epoch's (dropout).
		mb.Epoch = epoch
		start := time.Now()
		b, err := l.blocks.buildOnDevice(l.input.backend, mb, l.inPlace)
		if err != nil {
			return err
		}
		sent := time.Now()
		// A batch's wait for room is known only once it is sent: it
		// rides with the next batch.
		b.Stats.Sample = StageStats{BusySeconds: sent.Sub(start).Seconds(), WaitInSeconds: start.Sub(last).Seconds(), WaitOutSeconds: waitedOut}
		select {
		case out <- loadedBatch{Batch: b}:
		case <-ctx.Done():
			return ctx.Err()
		}
		last = time.Now()
		waitedOut = last.Sub(sent).Seconds()
		return nil
	})
	if err != nil && ctx.Err() == nil {
		// The gather stage may have stopped on an error of its own and
		// no longer read: only the stop's cancel ends this send then.
		select {
		case out <- loadedBatch{err: err}:
		case <-ctx.Done():
		}
	}
}

// gatherStage gathers the sampled batches' rows into buffers from p's
// pool, passing them to out, which it closes at the end.
func (l *prefetchLoader) gatherStage(ctx context.Context, sampled <-chan loadedBatch, out chan<- loadedBatch, p *prefetchEpoch) {
	defer close(out)
	// On a thread of its own, so that the thread's CPU time is the
	// gather's.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	last := time.Now()
	var waitedOut float64
	for b := range sampled {
		got := time.Now()
		if b.err == nil {
			// Waiting for a free buffer is waiting for room too: every
			// buffer is queued or in the step's hands.
			var buf *stageBuf
			select {
			case buf = <-p.free:
			case <-ctx.Done():
				return
			}
			start := time.Now()
			cpu0, cpuOK := threadCPUSeconds()
			b.rows, b.Stats.Rows, b.err = l.input.gather(ctx, b.MiniBatch, buf, l.rows)
			b.Stats.Gather = StageStats{BusySeconds: time.Since(start).Seconds(), WaitInSeconds: got.Sub(last).Seconds(),
				WaitOutSeconds: waitedOut + start.Sub(got).Seconds()}
			if cpu1, ok := threadCPUSeconds(); ok && cpuOK {
				b.Stats.Gather.CPUSeconds = max(0, cpu1-cpu0)
			}
		}
		sent := time.Now()
		select {
		case out <- b:
		case <-ctx.Done():
			p.Release(b.Batch)
			return
		}
		last = time.Now()
		waitedOut = last.Sub(sent).Seconds()
		if b.err != nil {
			return
		}
	}
}

// Next returns the next batch, the loading's error, or io.EOF where the
// loading ended without one.
func (p *prefetchEpoch) Next() (Batch, error) {
	b, ok := <-p.out
	if !ok {
		return Batch{}, io.EOF
	}
	return b.Batch, b.err
}

// Release gives back a batch's rows: its device slot (nothing once the
// step called Done) and its buffer, to the pool. Each batch is released
// once: its buffer goes to another batch after.
func (p *prefetchEpoch) Release(b Batch) {
	r := b.rows
	if r.staging != nil {
		dropSlot(r.staging)
	}
	if p.free != nil && r.sb != nil {
		select {
		case p.free <- r.sb:
		default:
		}
	}
}

// Finish waits for the loading to end on its own, giving back any batch
// past the epoch's last (none is expected).
func (p *prefetchEpoch) Finish() error {
	for b := range p.out {
		if b.err != nil {
			return b.err
		}
		p.Release(b.Batch)
	}
	return nil
}

// Stop ends the epoch's goroutines and waits for them, giving back the
// device slots of the batches never trained.
func (p *prefetchEpoch) Stop() { p.stop() }
