package trainer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/gnnplan/gnnplan/internal/rng"
	"github.com/gnnplan/gnnplan/kernels"
	"github.com/gnnplan/gnnplan/trainer/sample"
)

// ErrDiverged is returned, wrapped, when a batch's loss is not finite:
// the step has already made the parameters NaN, so training stops
// before anything is checkpointed.
var ErrDiverged = errors.New("training diverged")

// divergedError is the error for a non-finite loss at step of epoch, saying
// where the last good checkpoint is, if any.
func divergedError(checkpoint string, epoch, step int, loss float64) error {
	where := "no checkpoint was kept (--checkpoint)"
	if checkpoint != "" {
		where = "no checkpoint was written yet"
		if _, err := os.Stat(filepath.Join(checkpoint, CheckpointFile)); err == nil {
			where = "the last good checkpoint is in " + checkpoint
		}
	}
	return fmt.Errorf("%w at epoch %d, batch %d: the loss is %v (features too large? try --row-normalize, or a lower --lr); %s",
		ErrDiverged, epoch+1, step+1, loss, where)
}

// runEpoch trains the rest of epoch t.run.Epoch, then evaluates.
func (t *Trainer) runEpoch(ctx context.Context, rep Reporter) error {
	epoch := t.run.Epoch
	nb := t.workers.batches(epoch)
	p := &t.run.Partial
	// Batches arrive sampled, with their blocks built and (out of core)
	// their rows gathered: each worker's Loader works ahead of the step.
	loads := make([]Batches, len(t.workers))
	for i, w := range t.workers {
		loads[i] = w.loader.Epoch(ctx, epoch, t.run.NextBatch)
	}
	// held are the batches in the step's hands, until released after it.
	held := make([]Batch, len(t.workers))
	release := func() {
		for i, b := range held {
			if b.MiniBatch != nil {
				loads[i].Release(b)
			}
			held[i] = Batch{}
		}
	}
	stop := func() {
		release() // an error or a panic left them untrained
		for _, l := range loads {
			l.Stop()
		}
	}
	defer stop()
	start := time.Now()
	waitStart := start
	for step := t.run.NextBatch; step < nb; step++ {
		if err := t.workers.take(ctx, loads, held, epoch, step); err != nil {
			return err
		}
		p.Wait += time.Since(waitStart).Seconds()
		p.addLoads(held)
		loss, labeled, correct, samples := t.step(held, p)
		if math.IsNaN(loss) || math.IsInf(loss, 0) {
			return divergedError(t.opts.Checkpoint, epoch, step, loss)
		}
		t.lastInputs = t.lastInputs[:0]
		for _, b := range held {
			if b.MiniBatch != nil {
				t.lastInputs = append(t.lastInputs, b.MiniBatch.Input())
			}
		}
		release()
		p.LossSum += loss
		p.Labeled += labeled
		p.Correct += correct
		p.Samples += samples
		p.Batches++
		t.run.NextBatch = step + 1
		waitStart = time.Now()
		p.Seconds += waitStart.Sub(start).Seconds()
		start = waitStart
		if rep != nil {
			rep.Batch(BatchProgress{Epoch: epoch + 1, Epochs: t.opts.Epochs, Batch: step + 1, Batches: nb, Samples: p.Samples,
				Elapsed: time.Duration(p.Seconds * float64(time.Second)), Loss: p.LossSum / float64(max(p.Labeled, 1))})
		}
		// Stop after this batch when asked: the state is that of a
		// finished batch, which a checkpoint can resume from.
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("epoch %d: %w", epoch+1, err)
		}
	}
	// The loaders end on their own (the multistage loader's read ahead
	// for the next epoch is kept, not cancelled): the wait is the
	// epoch's, as each macro-batch's read is.
	for _, l := range loads {
		if err := l.Finish(); err != nil {
			return fmt.Errorf("epoch %d: %w", epoch+1, err)
		}
	}
	w := time.Since(waitStart).Seconds()
	p.Wait += w
	p.Seconds += w
	// The evaluation uploads into worker 0's device slots: the loaders
	// give back any they hold first.
	stop()
	return t.finishEpoch(ctx, rep)
}

// take fills held with a batch from each worker whose share of the seeds
// reaches step (a zero Batch for the others).
func (ws workerSet) take(ctx context.Context, loads []Batches, held []Batch, epoch, step int) error {
	for i, w := range ws {
		held[i] = Batch{}
		if step >= w.loader.Batches(epoch) {
			continue
		}
		b, err := loads[i].Next()
		if err == io.EOF {
			// The loading ended early without an error of its own: only
			// cancellation does that.
			return fmt.Errorf("epoch %d: %w", epoch+1, context.Cause(ctx))
		}
		if err != nil {
			return err
		}
		held[i] = b
	}
	return nil
}

// addLoads adds up what loading the step's batches measured.
func (p *partialEpoch) addLoads(held []Batch) {
	reads := 0.0
	for _, b := range held {
		if b.MiniBatch != nil {
			p.Stages.Sample.add(b.Stats.Sample)
			p.Stages.Gather.add(b.Stats.Gather)
			p.Rows.Add(b.Stats.Rows)
			reads = max(reads, b.Stats.Rows.ReadSeconds)
		}
	}
	p.Reads = append(p.Reads, reads)
}

// finishEpoch evaluates the epoch t.run.Epoch just trained (when due),
// records its stats and moves the run to the next epoch.
func (t *Trainer) finishEpoch(ctx context.Context, rep Reporter) error {
	epoch := t.run.Epoch
	es := t.run.Partial.stats(epoch, t.tally != nil)
	last := epoch+1 == t.opts.Epochs
	if t.opts.EvalEvery > 0 && ((epoch+1)%t.opts.EvalEvery == 0 || last) {
		evalStart := time.Now()
		for i, dst := range [][2]*Metric{{&es.ValAcc, &es.ValLoss}, {&es.TestAcc, nil}} {
			if t.evalSamplers[i] == nil {
				continue
			}
			acc, loss, err := t.evaluate(ctx, t.evalSamplers[i])
			if err != nil {
				return err
			}
			*dst[0] = Metric(acc)
			if dst[1] != nil {
				*dst[1] = Metric(loss)
			}
		}
		es.EvalSeconds = time.Since(evalStart).Seconds()
		t.run.Best.track(es, t.opts.Patience)
	}
	t.run.History = append(t.run.History, es)
	t.run.Epoch++
	t.run.NextBatch = 0
	t.run.Partial = partialEpoch{}
	if rep != nil {
		rep.Epoch(es)
	}
	return nil
}

// stats is epoch's EpochStats from its batches' totals, not evaluated
// (NaN accuracies), with the kernels' times where they were tallied.
func (p *partialEpoch) stats(epoch int, tallied bool) EpochStats {
	es := EpochStats{Epoch: epoch + 1, Seconds: p.Seconds, WaitSeconds: p.Wait, GatherSeconds: p.Gather,
		ComputeSeconds: p.Compute, OptimizerSeconds: p.Optim, Stages: p.Stages, Rows: p.Rows, Batches: p.Batches,
		DiskReadS: readsIfAny(p.Reads),
		Loss:      p.LossSum / float64(max(p.Labeled, 1)), TrainAcc: float64(p.Correct) / float64(max(p.Labeled, 1)),
		ValAcc: Metric(math.NaN()), ValLoss: Metric(math.NaN()), TestAcc: Metric(math.NaN())}
	if p.Seconds > 0 {
		es.SamplesPerSecond = float64(p.Samples) / p.Seconds
	}
	if tallied {
		k := p.Kernels
		es.Kernels = &k
	}
	return es
}

// readsIfAny is a copy of reads where one is above 0, else nil.
func readsIfAny(reads []float64) []float64 {
	if slices.ContainsFunc(reads, func(r float64) bool { return r > 0 }) {
		return slices.Clone(reads)
	}
	return nil
}

// track updates the best validation epoch and the patience counter.
func (b *bestState) track(es EpochStats, patience int) {
	if math.IsNaN(float64(es.ValAcc)) {
		return
	}
	first := b.Epoch == 0
	if first || es.ValAcc > b.ValAcc || (es.ValAcc == b.ValAcc && es.ValLoss < b.ValLoss) {
		b.Epoch, b.ValAcc, b.ValLoss, b.TestAcc = es.Epoch, es.ValAcc, es.ValLoss, es.TestAcc
	}
	// GAT's rule: progress is a new highest accuracy or lowest loss.
	if first || es.ValAcc > b.MaxAcc || es.ValLoss < b.MinLoss {
		if first || es.ValAcc > b.MaxAcc {
			b.MaxAcc = es.ValAcc
		}
		if first || es.ValLoss < b.MinLoss {
			b.MinLoss = es.ValLoss
		}
		b.Since = 0
	} else {
		b.Since++
	}
	if patience > 0 && b.Since >= patience {
		b.Stopped = true
	}
}

// stepSeed is the dropout seed of one training step: a function of the
// run's seed and the step's coordinates, so a resumed run draws the same
// masks.
func stepSeed(seed uint64, epoch, batch int) uint64 {
	z := seed ^ 0x64726f70 // "drop"
	for _, x := range []uint64{uint64(epoch), uint64(batch)} {
		z = rng.Mix(z ^ (x+1)*rng.Golden)
	}
	return z
}

// passResult is one worker's forward and backward pass over its batch:
// the loss summed over its labelled seeds, how many it got right, the
// time it took gathering (in memory) and computing, and a panic of the
// pass's (a device's failure), raised again on the step's goroutine.
type passResult struct {
	loss            float64
	correct         int
	gather, compute float64
	panicked        any
}

// pass runs w's forward and backward pass over b.
func (w *worker) pass(b Batch) (r passResult) {
	be := w.backend
	t0 := time.Now()
	x := w.input.modelInput(b, w.model.ReadsFeaturesInPlace(true), w.gathered)
	t1 := time.Now()
	logits := w.model.Forward(b.Blocks, x, true, stepSeed(w.seed, b.MiniBatch.Epoch, b.MiniBatch.Index))
	be.Resize(w.logitGrad, logits.Rows, logits.Cols)
	r.loss, r.correct = be.SoftmaxCrossEntropy(w.logitGrad, logits, b.Labels, 1/float32(max(b.Labeled, 1)))
	w.model.Backward(w.logitGrad)
	if b.rows.staging != nil {
		b.rows.staging.Done() // every kernel reading the input is queued
	}
	r.gather, r.compute = t1.Sub(t0).Seconds(), time.Since(t1).Seconds()
	return r
}

// passes runs every worker's pass over its batch (held[i].MiniBatch is
// nil for a worker with no batch left): at once when concurrent, else in
// turn.
func (ws workerSet) passes(held []Batch, concurrent bool) []passResult {
	rs := make([]passResult, len(held))
	if !concurrent {
		for i, b := range held {
			if b.MiniBatch != nil {
				rs[i] = ws[i].pass(b)
			}
		}
		return rs
	}
	var wg sync.WaitGroup
	for i, b := range held {
		if b.MiniBatch == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A device's failure panics (the Backend has no errors); it
			// is raised again on the step's goroutine, where Run turns
			// it into an error.
			defer func() {
				if p := recover(); p != nil {
					rs[i].panicked = p
				}
			}()
			rs[i] = ws[i].pass(b)
		}()
	}
	wg.Wait()
	return rs
}

// step trains on one batch per worker and returns the summed loss, the
// number of labelled seeds, how many of them the model got right, and the
// seeds trained. Workers on backends of their own pass at once, the
// others in turn; the sums are taken in worker order either way.
func (t *Trainer) step(held []Batch, p *partialEpoch) (loss float64, labeled, correct, samples int) {
	var k0 kernels.KernelTimes
	if t.tally != nil {
		k0 = t.tally.Times()
	}
	t0 := time.Now()
	rs := t.workers.passes(held, t.concurrent)
	var gather, compute float64
	for i, b := range held {
		if b.MiniBatch == nil {
			continue
		}
		if rs[i].panicked != nil {
			panic(rs[i].panicked)
		}
		gather += rs[i].gather
		compute += rs[i].compute
		loss += rs[i].loss
		labeled += b.Labeled
		correct += rs[i].correct
		samples += len(b.MiniBatch.Seeds)
	}
	if t.concurrent {
		// The passes overlapped: the step's time is the wall clock's, in
		// the stages' proportions.
		if wall := time.Since(t0).Seconds(); gather+compute > 0 {
			gather, compute = wall*gather/(gather+compute), wall*compute/(gather+compute)
		}
	}
	t2 := time.Now()
	t.workers.reduceGradients(held, labeled)
	t.adam.Step(t.backend, t.model.Params())
	t.run.AdamSteps = t.adam.Steps
	t.workers.broadcast()
	p.Gather += gather
	p.Compute += compute
	p.Optim += time.Since(t2).Seconds()
	if t.tally != nil {
		p.Kernels = p.Kernels.Add(t.tally.Times().Sub(k0))
	}
	return loss, labeled, correct, samples
}

// evaluate returns accuracy and mean loss over the split s samples, with
// dropout off, on worker 0.
func (t *Trainer) evaluate(ctx context.Context, s *sample.Sampler) (acc, loss float64, err error) {
	w := t.workers[0]
	inPlace := w.input.inMemory != nil && w.model.ReadsFeaturesInPlace(false)
	var sum float64
	var labeled, correct int
	var rows inputRows
	sb := &stageBuf{}
	err = s.Epoch(ctx, 0, func(mb *sample.MiniBatch) error {
		b := t.blocks.build(w.backend, mb, inPlace)
		if t.source != nil {
			var err error
			if rows, _, err = w.input.gather(ctx, mb, sb, nil); err != nil {
				return err
			}
		}
		b.rows = rows
		if rows.staging != nil {
			defer dropSlot(rows.staging) // on a panic: the slot is the next batch's
		}
		logits := t.model.Forward(b.Blocks, w.input.modelInput(b, inPlace, t.evalInput), false, 0)
		if rows.staging != nil {
			rows.staging.Done()
		}
		l, c := t.backend.SoftmaxCrossEntropy(nil, logits, b.Labels, 1)
		sum += l
		correct += c
		labeled += b.Labeled
		return nil
	})
	if err != nil {
		return 0, 0, err
	}
	if labeled == 0 {
		return math.NaN(), math.NaN(), nil
	}
	return float64(correct) / float64(labeled), sum / float64(labeled), nil
}
