package trainer

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/gnnplan/gnnplan/kernels"
	"github.com/gnnplan/gnnplan/trainer/internal/stall"
	"github.com/gnnplan/gnnplan/trainer/nn"
)

// Probe is what a few training batches cost on this machine with every
// feature row in memory: Hyperion's TPC profiler, which times a few
// iterations before the analytical model scales them up (Hyperion
// III-C). Times are per batch, over the batches after the first (which
// warms the caches and the pools).
type Probe struct {
	// Batches is how many batches were timed.
	Batches int `json:"batches"`
	// BatchSeconds is the wall time per batch at the step: the pipeline's
	// steady rate when no row waits for a disk.
	BatchSeconds float64 `json:"batch_s"`
	// SampleSeconds is the sampling stage's busy time per batch (sampling
	// and block building, on its own goroutine).
	SampleSeconds float64 `json:"sample_s"`
	// StepSeconds is the step's time per batch: gathering in the step (in
	// memory), forward, backward and the optimizer.
	StepSeconds float64 `json:"step_s"`
	// GatherCPUSeconds is the gather stage's own CPU time per batch: its
	// copies without the waits for a core the step held (0 where the
	// thread's CPU time is not measured).
	GatherCPUSeconds float64 `json:"gather_cpu_s,omitempty"`
	// GatherSeconds is the gather stage's busy time per batch (out of
	// core), every row copied from memory.
	GatherSeconds float64 `json:"gather_s"`
	// FirstWaitSeconds is how long the first step waited for its batch:
	// the pipeline filling (the sampler starting, the first batch sampled,
	// its blocks built and rows gathered), which no step hides.
	FirstWaitSeconds float64 `json:"first_wait_s"`
	// FirstWaitWarm says FirstWaitSeconds is the median over epochs after
	// the first; false: the first epoch's alone, whose buffers, pools and
	// sampler start cold, an upper bound on a later epoch's fill.
	FirstWaitWarm bool `json:"first_wait_warm"`
	// Kernels is the step's kernel time per batch by class (on the CPU
	// backend; nil on a device).
	Kernels *kernels.KernelTimes `json:"kernels,omitempty"`
	// InputRows is the mean number of distinct feature rows a step reads
	// (summed over the workers).
	InputRows float64 `json:"input_rows"`
	// Seeds is the mean number of training seeds per batch.
	Seeds float64 `json:"seeds"`
	// SlowBatches is how many timed batches BatchSeconds and StepSeconds
	// leave out: stalls no batch of the run repeats (package stall:
	// over 1.5 times the median); the other times are the means of every
	// timed batch.
	SlowBatches int `json:"slow_batches,omitempty"`
	// Vertices lists the input rows of the timed batches, one list per
	// worker and step, for a caller that wants to know how many of them a
	// store holds in memory.
	Vertices [][]int32 `json:"-"`
}

// probeSalt keeps the probe's seeds apart from the run's.
const probeSalt = 0x70726f6265 // "probe"

// Probe times up to batches training batches on a sibling of t: the same
// graph, model shape, sampling and loading, with its own parameters and
// a different seed, so the run that follows is not changed. Out of core
// the sibling's rows all come from memory, from a store's MemoryView (so
// its copies range over the caches' footprint) or else a pool: the probe
// measures computing, the disk is measured on its own. It drops each
// epoch's first batch, so an epoch of fewer batches than asked is repeated
// (at most maxProbeEpochs times) until enough are timed; with epochs of
// one batch, the first epoch warms up and the next ones' batches are
// timed as they are. The fill (FirstWaitSeconds) is the median over the
// epochs after the first where there are several.
func (t *Trainer) Probe(ctx context.Context, batches int) (_ Probe, err error) {
	defer recoverDeviceError(&err)
	if batches < 1 {
		return Probe{}, fmt.Errorf("probe: %d batches (want >= 1)", batches)
	}
	s, err := t.probeSibling()
	if err != nil {
		return Probe{}, err
	}
	defer s.returnBuffers(t)
	nb := s.workers.batches(0)
	// An epoch of fewer batches than asked (a small graph) is timed over
	// several epochs, each without its first batch, as the run's epochs
	// repeat. With one batch per epoch, the first epoch warms up untimed
	// (its batch is the sibling's first ever: cold caches, buffers
	// growing) and the next ones' batches are timed as they are.
	epochs := 1
	switch {
	case nb == 1:
		epochs = min(batches+1, maxProbeEpochs)
	case nb > 1 && nb-1 < batches:
		epochs = min((batches+nb-2)/(nb-1), maxProbeEpochs)
	}
	s.opts.Epochs = epochs
	var (
		p      Probe
		sum    partialEpoch // the timed batches' totals
		each   []batchTimes // and each one's times
		inputs [][]int32
		fills  []float64 // each epoch's wait for its first batch
	)
	for e := range epochs {
		total := min(batches-p.Batches+1, nb)
		ectx, cancel := context.WithCancel(ctx)
		stopAt := total
		if total >= nb {
			stopAt = nb + 1 // the whole epoch: let it end, so the next one starts afresh
		}
		rec := &probeRecorder{t: s, stopAt: stopAt, cancel: cancel}
		err = s.runEpoch(ectx, rec)
		cancel()
		if err != nil && !(errors.Is(err, context.Canceled) && rec.done && ctx.Err() == nil) {
			return Probe{}, fmt.Errorf("probe: %w", err)
		}
		end := rec.last
		fills = append(fills, rec.skip.Wait)
		if rec.skip.Batches == end.Batches { // one batch only: time it
			if e == 0 && epochs > 1 {
				continue // the warm-up
			}
			rec.skip, rec.skipLists, rec.skipTimes = partialEpoch{}, 0, 0
		}
		sum.addBetween(rec.skip, end)
		each = append(each, rec.times[rec.skipTimes:]...)
		inputs = append(inputs, rec.inputs[rec.skipLists:]...)
		p.Batches = sum.Batches
		if p.Batches >= batches || (rec.skip.Batches == 0 && nb > 1) {
			break
		}
	}
	// The pipeline's fill: the first epoch's is cold (the sampler's pools
	// and the first buffers are new); later epochs', as the run's later
	// epochs see it, where there are any.
	p.FirstWaitSeconds = fills[0]
	if len(fills) > 1 {
		p.FirstWaitSeconds, p.FirstWaitWarm = median(fills[1:]), true
	}
	p.perBatch(sum, inputs, t.tally != nil)
	p.withoutStalls(each)
	return p, nil
}

// addBetween adds to sum what an epoch measured from snapshot skip to
// snapshot end: the timed batches.
func (sum *partialEpoch) addBetween(skip, end partialEpoch) {
	sum.Batches += end.Batches - skip.Batches
	sum.Seconds += end.Seconds - skip.Seconds
	sum.Stages.Sample.BusySeconds += end.Stages.Sample.BusySeconds - skip.Stages.Sample.BusySeconds
	sum.Stages.Gather.BusySeconds += end.Stages.Gather.BusySeconds - skip.Stages.Gather.BusySeconds
	sum.Stages.Gather.CPUSeconds += end.Stages.Gather.CPUSeconds - skip.Stages.Gather.CPUSeconds
	sum.Gather += end.Gather - skip.Gather
	sum.Compute += end.Compute - skip.Compute
	sum.Optim += end.Optim - skip.Optim
	sum.Kernels = sum.Kernels.Add(end.Kernels.Sub(skip.Kernels))
	sum.Samples += end.Samples - skip.Samples
}

// perBatch fills p's times per batch from the timed batches' totals and
// their input rows; the kernels' times where they were tallied.
func (p *Probe) perBatch(sum partialEpoch, inputs [][]int32, tallied bool) {
	n := float64(sum.Batches)
	p.BatchSeconds = sum.Seconds / n
	p.SampleSeconds = sum.Stages.Sample.BusySeconds / n
	p.StepSeconds = (sum.Gather + sum.Compute + sum.Optim) / n
	p.GatherSeconds = sum.Stages.Gather.BusySeconds / n
	p.GatherCPUSeconds = sum.Stages.Gather.CPUSeconds / n
	if tallied {
		k := sum.Kernels.Scale(1 / n)
		p.Kernels = &k
	}
	p.Seeds = float64(sum.Samples) / n
	p.Vertices = inputs
	var rows int
	for _, in := range p.Vertices {
		rows += len(in)
	}
	p.InputRows = float64(rows) / n
}

// batchTimes is one probed batch's wall time and step time.
type batchTimes struct{ wall, step float64 }

// withoutStalls sets BatchSeconds and StepSeconds to the means of the
// batches in each whose wall time is not a stall (package stall), counting
// the others in SlowBatches.
func (p *Probe) withoutStalls(each []batchTimes) {
	walls := make([]float64, len(each))
	for i, b := range each {
		walls[i] = b.wall
	}
	limit := stall.Limit(walls)
	var wall, step float64
	kept := 0
	for _, b := range each {
		if b.wall <= limit {
			wall, step = wall+b.wall, step+b.step
			kept++
		}
	}
	if kept == 0 || kept == len(each) {
		return
	}
	p.BatchSeconds, p.StepSeconds = wall/float64(kept), step/float64(kept)
	p.SlowBatches = len(each) - kept
}

// probeSibling is t's sibling for Probe: the same graph, model shape,
// sampling and loading, with its own parameters and seed, reading every
// row from memory.
func (t *Trainer) probeSibling() (*Trainer, error) {
	o := t.opts
	o.Seed ^= probeSalt
	o.Checkpoint, o.Resume, o.EvalEvery, o.Epochs = "", false, 0, 1
	// Packed batches are online's batches read another way: the probe
	// times their computing, the disk is measured on its own.
	o.Packed = nil
	if o.Loader == LoaderPacked {
		o.Loader = LoaderOnline
	}
	if o.Multistage != nil {
		// The second stage's sampling, every row from memory.
		ms := *o.Multistage
		ms.Pieces = nil
		o.Multistage = &ms
	}
	if t.source != nil {
		// Every row from memory: a store's own caches (their footprint,
		// so their cache misses), else a pool.
		if ss, ok := t.source.(storeSource); ok {
			o.Features = memoryViewSource{ss.MemoryView()}
		} else {
			o.Features = newPoolSource(t.source.Dim(), o.Seed)
		}
	}
	s := &Trainer{backend: t.backend, tally: t.tally, graph: t.graph, opts: o, config: t.config, source: o.Features,
		blocks: t.blocks, evalInput: t.backend.NewMat(0, 0), concurrent: t.concurrent}
	backends := make([]kernels.Backend, len(t.workers))
	var inMemory []*kernels.Mat
	for i, w := range t.workers {
		backends[i] = w.backend
		if w.input.inMemory != nil {
			inMemory = append(inMemory, w.input.inMemory)
		}
	}
	var err error
	if s.workers, err = newWorkers(backends, inMemory, t.blocks, t.config, o); err != nil {
		return nil, err
	}
	s.model = s.workers[0].model
	s.adam = nn.NewAdam(o.LR, o.WeightDecay)
	// The sibling gathers into t's buffers: memory touched for the first
	// time costs a page fault a page (tens of microseconds on a virtual
	// machine), which the run's later epochs do not pay and the probe
	// should not time; and the run starts with its buffers warm.
	for i, w := range s.workers {
		w.input.pool, w.input.ring = t.workers[i].input.pool, t.workers[i].input.ring
	}
	return s, nil
}

// returnBuffers hands the sibling's gather buffers, grown or added to,
// back to t's workers.
func (s *Trainer) returnBuffers(t *Trainer) {
	for i, w := range s.workers {
		t.workers[i].input.pool, t.workers[i].input.ring = w.input.pool, w.input.ring
	}
}

// maxProbeEpochs bounds the epochs a probe runs to time its batches.
const maxProbeEpochs = 50

// probeRecorder snapshots the sibling's epoch after its first batch and
// cancels it after the last one to time.
type probeRecorder struct {
	t          *Trainer
	stopAt     int
	cancel     func()
	skip, last partialEpoch
	inputs     [][]int32    // every worker's input rows, step by step
	skipLists  int          // the first step's lists in inputs
	times      []batchTimes // each batch's, from the snapshots
	skipTimes  int          // the first batch's in times
	done       bool
}

func (r *probeRecorder) Batch(p BatchProgress) {
	prev := r.last
	r.last = r.t.run.Partial
	if p.Batch == 1 {
		prev = partialEpoch{}
	}
	r.times = append(r.times, batchTimes{wall: r.last.Seconds - prev.Seconds,
		step: (r.last.Gather + r.last.Compute + r.last.Optim) - (prev.Gather + prev.Compute + prev.Optim)})
	r.inputs = append(r.inputs, r.t.lastInputs...)
	if p.Batch == 1 {
		r.skip, r.skipLists, r.skipTimes = r.t.run.Partial, len(r.inputs), len(r.times)
	}
	if p.Batch >= r.stopAt {
		r.done = true
		r.cancel()
	}
}

// Epoch marks the epoch done; its totals are the last batch's snapshot
// (the epoch's own are reset by then).
func (r *probeRecorder) Epoch(EpochStats) { r.done = true }

// poolSource serves every vertex a row of a random pool of 256 MiB: rows
// copied from memory, as a cache hit is, for a probe that must not touch
// the disk.
type poolSource struct {
	dim  int
	rows int
	pool []float32
}

func newPoolSource(dim int, seed uint64) *poolSource {
	// Far larger than a last-level cache, as a cache of many rows is:
	// each copy misses.
	rows := max(4096, (256<<20)/(4*dim))
	p := &poolSource{dim: dim, rows: rows, pool: make([]float32, rows*dim)}
	r := rand.New(rand.NewPCG(seed, probeSalt))
	for i := range p.pool {
		p.pool[i] = r.Float32()
	}
	return p
}

func (p *poolSource) Dim() int { return p.dim }

func (p *poolSource) Gather(ctx context.Context, vertices []int32, dst []float32) (GatherStats, error) {
	start := time.Now()
	d := p.dim
	for i, v := range vertices {
		r := int(uint32(v)*2654435761) % p.rows
		copy(dst[i*d:(i+1)*d], p.pool[r*d:(r+1)*d])
	}
	n := len(vertices)
	return GatherStats{Rows: n, SocketCacheHits: n, Bytes: int64(n * d * 4), Seconds: time.Since(start).Seconds()}, nil
}

// median is xs's median (0 for none; xs is not changed).
func median(xs []float64) float64 {
	xs = slices.Clone(xs)
	slices.Sort(xs)
	n := len(xs)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}
