package trainer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"time"

	"github.com/gnnplan/gnnplan/internal/inputerr"
	"github.com/gnnplan/gnnplan/kernels"
	"github.com/gnnplan/gnnplan/trainer/dataset"
	"github.com/gnnplan/gnnplan/trainer/internal/fslock"
	"github.com/gnnplan/gnnplan/trainer/nn"
	"github.com/gnnplan/gnnplan/trainer/sample"
	"github.com/gnnplan/gnnplan/trainer/store"
)

// Options configure a training run.
type Options struct {
	// Model gives the kind, widths and regularisation; InDim, Classes
	// and Layers are filled from the dataset and Fanouts.
	Model nn.Config
	// Fanouts per hop, seeds' hop first (-1: every neighbour); one graph
	// layer per hop.
	Fanouts []int
	// BatchSize is the number of seeds per step; 0 puts every training
	// vertex in one batch (full-batch training, as the citation papers).
	BatchSize int
	// EvalBatchSize is the number of seeds per evaluation batch; 0 means
	// BatchSize, or all of a split when BatchSize is 0.
	EvalBatchSize int
	Epochs        int
	LR            float32
	WeightDecay   float32
	// Patience stops training when validation accuracy has not risen and
	// validation loss has not fallen for this many epochs (GAT's rule);
	// 0 trains every epoch.
	Patience int
	// EvalEvery evaluates on the validation and test splits every this
	// many epochs (and after the last); 0 never evaluates.
	EvalEvery int
	Seed      uint64
	// RowNormalize scales each feature row to unit L1 norm before
	// training: the in-memory matrix once, a Features source's rows as
	// they are gathered unless it serves them scaled (a store opened
	// with store.Options.RowNormalize, which needs this set).
	RowNormalize bool
	// Threads bounds the kernels' and sampler's threads; 0: one per core.
	Threads int
	// Checkpoint is a directory to write a checkpoint to after every
	// epoch and when interrupted; "" writes none.
	Checkpoint string
	// Resume continues from the checkpoint in Checkpoint.
	Resume bool
	// Features, when set, serves each batch's feature rows (out of core:
	// a store's caches and SSD bins), gathered GatherAhead batches ahead
	// of the step while it trains; New then takes no feature matrix.
	Features FeatureSource
	// GatherAhead is how many gathered batches may wait for the step; 0
	// means DefaultGatherAhead.
	GatherAhead int
	// GatherThreads is how many goroutines the gather stage scales a
	// batch's rows on (RowNormalize), each at least 4096 rows; 0 or 1:
	// the stage's own. The bits are the same on any count. The store's
	// copies have their own count (store.Options.CopyThreads).
	GatherThreads int
	// Workers is the number of data-parallel workers (0 or 1: one). Each
	// has its own share of the training seeds (every Workers-th), its own
	// sampler, pipeline and model replica, and trains BatchSize seeds per
	// step; the step averages the workers' gradients, weighted by their
	// labelled seeds (so it equals one worker given all their seeds), and
	// every replica takes the same optimizer step. On the CPU backend the
	// workers' forward and backward passes take turns on the cores, while
	// their sampling and gathering run at once.
	Workers int
	// Backends, when set, has one backend per worker: worker i's model
	// replica, blocks and kernels live on Backends[i] (one GPU each, say),
	// and Backends[0] is New's backend, where the optimizer and evaluation
	// run. Workers on backends of their own run their forward and backward
	// passes at once; the step moves each replica's gradients to worker 0
	// and its parameters back with kernels.Transfer (peer copies between
	// GPUs). Nil: every worker on New's backend.
	Backends []kernels.Backend
	// Loader is how batches reach the step: LoaderOnline (or ""),
	// LoaderPacked or LoaderMultistage (docs/loaders.md).
	Loader string
	// Packed is the packed batches LoaderPacked trains from out of
	// core, opened by the caller for Sampling(g, o) (see Pack): the rows
	// Features (a StoreSource) holds in memory come from there, the
	// others from the batches' pieces. Nil in memory.
	Packed *store.Packed
	// Multistage is LoaderMultistage's partition, macro-batches, hubs
	// and (out of core) packed parts.
	Multistage *Multistage
}

// Defaults returns the settings of kind's paper on the citation graphs
// (Kipf and Welling 2017; Velickovic et al. 2018; GraphSAGE-mean as DGL's
// full-graph example), with the papers' workload fanouts (25, 10) and
// batches of 1024 seeds: the citation graphs' training splits fit in one
// batch, so with fanouts -1,-1 this is the papers' full-batch training.
func Defaults(kind nn.Kind) Options {
	o := Options{
		Model:     nn.Config{Kind: kind, Hidden: 16, InputDropout: 0.5, Dropout: 0.5},
		Fanouts:   []int{25, 10},
		BatchSize: sample.DefaultBatchSize, Epochs: 200, LR: 0.01, WeightDecay: 5e-4,
		EvalEvery: 1, Seed: 1, RowNormalize: true,
	}
	if kind == nn.GAT {
		o.Model = nn.Config{Kind: kind, Hidden: 8, Heads: 8, OutHeads: 1, InputDropout: 0.6, Dropout: 0.6, AttnDropout: 0.6, Slope: 0.2}
		o.LR, o.Epochs, o.Patience = 0.005, 1000, 100
	}
	return o
}

// EpochStats is one epoch's measurements. Times are wall-clock seconds
// the training loop spent in each stage: waiting for the next batch
// (sampled and its blocks built on other goroutines, ahead of the step),
// gathering features in the step (in memory; 0 when the first layer reads
// them in place), forward and backward passes, the optimizer. Stages has
// the pipeline's own measurements: what sampling and (out of core)
// gathering spent working and waiting on their goroutines.
type EpochStats struct {
	Epoch            int     `json:"epoch"` // from 1
	Seconds          float64 `json:"seconds"`
	SamplesPerSecond float64 `json:"samples_per_s"`
	// WaitSeconds is the step waiting for its next batch: the time the
	// pipeline did not hide.
	WaitSeconds      float64 `json:"wait_s"`
	GatherSeconds    float64 `json:"gather_s"`
	ComputeSeconds   float64 `json:"forward_backward_s"`
	OptimizerSeconds float64 `json:"optimizer_s"`
	EvalSeconds      float64 `json:"eval_s"`
	Stages           Stages  `json:"stages"`
	// Rows is where the batches' feature rows came from (out of core).
	Rows GatherStats `json:"rows"`
	// DiskReadS is each step's disk reads in seconds, in order (the
	// slowest worker's; a multistage macro-batch's on its first batch),
	// where any step read from disk: how the disk's rate moved inside the
	// epoch.
	DiskReadS []float64 `json:"disk_read_s,omitempty"`
	// Kernels is the steps' kernel time by class (on the CPU backend;
	// null on a device): the gather, forward, backward and optimizer
	// stages taken apart.
	Kernels *kernels.KernelTimes `json:"kernels,omitempty"`
	Batches int                  `json:"batches"`
	Loss    float64              `json:"loss"`
	// TrainAcc is measured on the training batches as they trained
	// (dropout on); ValAcc and TestAcc in evaluation mode, NaN (null in
	// JSON) when the epoch was not evaluated.
	TrainAcc float64 `json:"train_acc"`
	ValAcc   Metric  `json:"val_acc"`
	ValLoss  Metric  `json:"val_loss"`
	TestAcc  Metric  `json:"test_acc"`
}

// Stages are the pipeline stages' times over an epoch (Gather is zero in
// memory, where the step gathers).
type Stages struct {
	Sample StageStats `json:"sample"`
	Gather StageStats `json:"gather"`
}

// Metric is a measurement that may be missing: NaN, written as null in
// JSON.
type Metric float64

// MarshalJSON writes NaN and infinities as null.
func (m Metric) MarshalJSON() ([]byte, error) {
	if math.IsNaN(float64(m)) || math.IsInf(float64(m), 0) {
		return []byte("null"), nil
	}
	return json.Marshal(float64(m))
}

// UnmarshalJSON reads null as NaN.
func (m *Metric) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*m = Metric(math.NaN())
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	*m = Metric(f)
	return nil
}

// Result is a whole run's outcome.
type Result struct {
	Epochs []EpochStats
	// BestEpoch is the epoch of the highest validation accuracy (ties:
	// the lower validation loss, then the earlier), 0 when never
	// evaluated; TestAcc is the test accuracy at it.
	BestEpoch  int
	BestValAcc Metric
	TestAcc    Metric
	// Stop says why training ended: "epochs", "early_stop" or
	// "interrupted".
	Stop string
	// Resumed is the epoch and batch the run resumed from (0, 0 for a
	// fresh run).
	ResumedEpoch, ResumedBatch int
	Params                     int
	// Backend names worker 0's backend, Devices every worker's when they
	// run on backends of their own (one GPU each).
	Backend string
	Devices []string
}

// Reporter receives progress; both methods are called from the training
// goroutine.
type Reporter interface {
	// Batch is called after every training step.
	Batch(p BatchProgress)
	// Epoch is called after every epoch.
	Epoch(e EpochStats)
}

// BatchProgress is the state of an epoch after a step.
type BatchProgress struct {
	Epoch, Epochs, Batch, Batches int
	Samples                       int // seeds trained this epoch
	Elapsed                       time.Duration
	Loss                          float64 // mean over the epoch so far
}

// Trainer trains one model on one dataset, its features in memory or
// served by a FeatureSource. Each worker's Loader delivers its batches;
// the Trainer steps on them, averages the workers' gradients, evaluates
// and checkpoints.
type Trainer struct {
	// backend is worker 0's, where the optimizer and evaluation run.
	backend kernels.Backend
	// tally times backend's kernels by class; nil on a device backend,
	// whose kernels return before they run.
	tally  *kernels.Tally
	graph  *dataset.Graph
	opts   Options
	config nn.Config
	// model is the master replica, worker 0's: the optimizer updates it
	// and the other replicas copy it.
	model   *nn.Model
	adam    *nn.Adam
	workers workerSet
	// concurrent says the workers' backends are their own, so their
	// passes run at once.
	concurrent bool
	source     FeatureSource // out of core: where batches' rows come from
	blocks     blockBuilder
	// evalSamplers sample the validation and test splits; nil when the
	// split is empty. evalInput is evaluation's gathered input.
	evalSamplers [2]*sample.Sampler
	evalInput    *kernels.Mat
	// lastInputs are the input rows of the step trained last, one list per
	// worker with a batch (for Probe).
	lastInputs [][]int32

	run runState
}

// runState is what a checkpoint holds besides the parameters: where the
// run is and what it has measured so far.
type runState struct {
	Epoch     int          `json:"epoch"`      // the epoch in progress, from 0
	NextBatch int          `json:"next_batch"` // its first batch not yet trained
	Partial   partialEpoch `json:"partial"`
	History   []EpochStats `json:"history"`
	Best      bestState    `json:"best"`
	AdamSteps int          `json:"adam_steps"`
}

// partialEpoch accumulates an epoch's measurements over its batches.
type partialEpoch struct {
	Seconds, Wait, Gather, Compute, Optim float64
	Kernels                               kernels.KernelTimes
	LossSum                               float64
	Labeled, Correct, Samples, Batches    int
	Stages                                Stages
	Rows                                  GatherStats
	// Reads is each step's disk reads, seconds (its slowest worker's).
	Reads []float64
}

// bestState tracks the best validation epoch (0: none evaluated yet).
type bestState struct {
	Epoch   int    `json:"epoch"`
	ValAcc  Metric `json:"val_acc"`
	ValLoss Metric `json:"val_loss"`
	TestAcc Metric `json:"test_acc"`
	// Since counts evaluations without progress (GAT's patience):
	// progress is a validation accuracy above MaxAcc or a loss below
	// MinLoss.
	Since   int    `json:"since"`
	MinLoss Metric `json:"min_val_loss"`
	MaxAcc  Metric `json:"max_val_acc"`
	Stopped bool   `json:"stopped"`
}

// New prepares training of o.Model on g with features (num_nodes x
// feature_dim, row-major; row-normalised in place when o.RowNormalize).
func New(b kernels.Backend, g *dataset.Graph, features []float32, o Options) (_ *Trainer, err error) {
	defer recoverDeviceError(&err) // a GPU without room for the model or the features
	if err := checkOptions(b, g, features, o); err != nil {
		return nil, err
	}
	cfg, err := modelConfig(b, g, o)
	if err != nil {
		return nil, err
	}
	m := g.Meta
	if o.RowNormalize && features != nil {
		RowNormalize(features, m.FeatureDim)
	}
	var tally *kernels.Tally
	if _, onHost := b.(*kernels.CPU); onHost && o.Backends == nil {
		// Every kernel timed by class: what the step is made of, beside
		// what a plan predicts for each part.
		tally = kernels.NewTally(b)
		b = tally
	}
	t := &Trainer{backend: b, tally: tally, graph: g, opts: o, config: cfg, source: o.Features,
		blocks: blockBuilder{graph: g, forms: nn.Forms(cfg.Kind)}, evalInput: b.NewMat(0, 0)}
	t.adam = nn.NewAdam(o.LR, o.WeightDecay)
	backends, concurrent := workerBackends(b, o)
	t.concurrent = concurrent
	var inMemory []*kernels.Mat
	if o.Features == nil {
		inMemory = wrapFeatures(backends, int(m.NumNodes), m.FeatureDim, features)
	}
	if cfg.Kind == nn.GCN {
		t.blocks.degrees = nn.Degrees(g.Indptr, g.Indices)
	}
	if t.workers, err = newWorkers(backends, inMemory, t.blocks, cfg, o); err != nil {
		return nil, err
	}
	if err := t.workers.placeResident(o.Features, scalesGathered(o)); err != nil {
		return nil, err
	}
	t.model = t.workers[0].model
	if t.evalSamplers, err = newEvalSamplers(g, o); err != nil {
		return nil, err
	}
	t.run.Best = bestState{ValAcc: Metric(math.NaN()), ValLoss: Metric(math.NaN()), TestAcc: Metric(math.NaN()), MinLoss: Metric(math.NaN()), MaxAcc: Metric(math.NaN())}
	return t, nil
}

// checkOptions refuses, as bad input naming the field, options and data
// New cannot train.
func checkOptions(b kernels.Backend, g *dataset.Graph, features []float32, o Options) error {
	m := g.Meta
	bad := func(field, format string, args ...any) error {
		return &inputerr.Error{Path: g.Dir, Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	switch {
	case o.Features != nil && (features != nil || o.Features.Dim() != m.FeatureDim):
		return bad("features", "a feature source of %d features per row and %d values in memory for %d features per vertex (want one or the other)", o.Features.Dim(), len(features), m.FeatureDim)
	case o.Features == nil && (m.FeatureDim < 1 || int64(len(features)) != m.NumNodes*int64(m.FeatureDim)):
		return bad("features", "%d values for %d vertices of %d features", len(features), m.NumNodes, m.FeatureDim)
	case m.NumClasses < 2:
		return bad("num_classes", "%d: the dataset has no labels to train on (want >= 2 classes)", m.NumClasses)
	case len(g.Train) == 0:
		return bad("train_idx", "the dataset has no training split")
	case len(o.Fanouts) == 0:
		return bad("fanouts", "none given (want one per layer, e.g. 25,10)")
	case o.Epochs < 1:
		return bad("epochs", "%d (want >= 1)", o.Epochs)
	case o.BatchSize < 0 || o.EvalBatchSize < 0:
		return bad("batch", "%d (want >= 1, or 0 for full batch)", o.BatchSize)
	case !(o.LR > 0) || o.WeightDecay < 0:
		return bad("lr", "learning rate %g, weight decay %g (want > 0 and >= 0)", o.LR, o.WeightDecay)
	case o.Patience < 0 || o.EvalEvery < 0:
		return bad("patience", "patience %d, eval-every %d (want >= 0)", o.Patience, o.EvalEvery)
	case o.Workers < 0 || o.Workers > len(g.Train):
		return bad("workers", "%d (want 1 to the %d training vertices)", o.Workers, len(g.Train))
	case o.Backends != nil && len(o.Backends) != max(o.Workers, 1):
		return bad("backends", "%d backends for %d workers (want one per worker)", len(o.Backends), max(o.Workers, 1))
	case o.Packed != nil && (o.Loader != LoaderPacked || o.Features == nil):
		return bad("loader", "packed batches given to the %q loader, features %s (want loader %q, out of core)", o.Loader, map[bool]string{true: "in memory", false: "out of core"}[o.Features == nil], LoaderPacked)
	case o.Packed != nil && o.Packed.Manifest().Sampling != Sampling(g, o):
		return bad("loader", "packed batches of another sampling (%s; this run: %s): pack again", o.Packed.Manifest().Sampling, Sampling(g, o))
	case o.Backends != nil && o.Backends[0] != b:
		return bad("backends", "worker 0's backend is %s, not the trainer's %s", o.Backends[0].Name(), b.Name())
	case scaledBySource(o.Features) && !o.RowNormalize:
		return bad("row-normalize", "off, but the feature source serves its rows scaled (open the store without RowNormalize)")
	}
	for _, v := range g.Train {
		if g.Labels[v] < 0 {
			return bad("labels", "training vertex %d has no label", v)
		}
	}
	return checkMultistage(g, o)
}

// modelConfig is o.Model completed from g and o.Fanouts, refused (bad
// input) when invalid or, on the CPU backend, too large for this
// machine's memory.
func modelConfig(b kernels.Backend, g *dataset.Graph, o Options) (nn.Config, error) {
	m := g.Meta
	cfg := o.Model
	cfg.InDim, cfg.Classes, cfg.Layers = m.FeatureDim, m.NumClasses, len(o.Fanouts)
	if cfg.Kind == nn.GAT && cfg.Slope == 0 {
		cfg.Slope = 0.2
	}
	if err := cfg.Check(); err != nil {
		return cfg, &inputerr.Error{Field: "model", Msg: err.Error()}
	}
	if _, onHost := b.(*kernels.CPU); onHost {
		if err := checkHostMemory(cfg, o, m.NumNodes, m.NumEdges, len(g.Train)); err != nil {
			return cfg, &inputerr.Error{Path: g.Dir, Field: "model", Msg: err.Error()}
		}
	}
	return cfg, nil
}

// wrapFeatures puts the in-memory features on each worker's backend, one
// matrix per distinct backend.
func wrapFeatures(backends []kernels.Backend, rows, dim int, features []float32) []*kernels.Mat {
	mats := make([]*kernels.Mat, len(backends))
	for i, be := range backends {
		if j := slices.Index(backends, be); j < i {
			mats[i] = mats[j]
		} else {
			mats[i] = be.Wrap(rows, dim, features)
		}
	}
	return mats
}

// newEvalSamplers samples the validation and test splits (nil for an
// empty split, or both when o never evaluates) with a fixed seed and no
// shuffle: every evaluation sees the same neighbourhoods, so accuracies
// compare across epochs.
func newEvalSamplers(g *dataset.Graph, o Options) (s [2]*sample.Sampler, err error) {
	for i, split := range [][]int64{g.Val, g.Test} {
		if len(split) == 0 || o.EvalEvery == 0 {
			continue
		}
		eb := o.EvalBatchSize
		if eb == 0 {
			eb = o.BatchSize
		}
		if eb == 0 {
			eb = len(split)
		}
		eo := sample.SamplerOptions{Fanouts: o.Fanouts, BatchSize: eb, Seed: o.Seed ^ 0x6576616c, Workers: o.Threads, Seeds: split}
		if s[i], err = sample.NewSampler(g, eo); err != nil {
			return s, err
		}
	}
	return s, nil
}

// Model returns the model being trained.
func (t *Trainer) Model() *nn.Model { return t.model }

// Config returns the model's full configuration.
func (t *Trainer) Config() nn.Config { return t.config }

// EpochBatches is how many steps epoch (from 0) trains: the multistage
// loader's epochs end each macro-batch with a short batch, so they have
// more than the seeds over the batch size.
func (t *Trainer) EpochBatches(epoch int) int { return t.workers.batches(epoch) }

// ErrInterrupted marks a run stopped by its context after a finished
// batch; the Result and any checkpoint describe the state at that batch.
var ErrInterrupted = errors.New("training interrupted")

// Run trains until the last epoch, early stopping, or ctx's end, which
// stops it after the batch in progress (checkpointing when a checkpoint
// directory is set) and returns ErrInterrupted wrapped with ctx's error.
//
// A device's failure (a GPU out of memory, a failed launch or copy) ends
// the run with a *kernels.DeviceError.
func (t *Trainer) Run(ctx context.Context, rep Reporter) (_ *Result, err error) {
	defer recoverDeviceError(&err)
	res := &Result{Params: t.model.NumParams(), Backend: t.backend.Name()}
	if t.concurrent {
		for _, w := range t.workers {
			res.Devices = append(res.Devices, w.backend.Name())
		}
	}
	unlock, err := lockCheckpoint(t.opts)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if t.opts.Resume {
		if err := t.loadCheckpoint(); err != nil {
			return nil, err
		}
		res.ResumedEpoch, res.ResumedBatch = t.run.Epoch, t.run.NextBatch
	}
	for t.run.Epoch < t.opts.Epochs && !t.run.Best.Stopped {
		err := t.runEpoch(ctx, rep)
		if err != nil {
			if ctx.Err() == nil {
				return nil, err
			}
			t.run.fillResult(res, "interrupted")
			if t.opts.Checkpoint != "" {
				if cerr := t.saveCheckpoint(); cerr != nil {
					return res, fmt.Errorf("%w; and the checkpoint failed: %w", ErrInterrupted, cerr)
				}
			}
			return res, fmt.Errorf("%w at epoch %d, batch %d: %w", ErrInterrupted, t.run.Epoch+1, t.run.NextBatch, ctx.Err())
		}
		if t.opts.Checkpoint != "" {
			if err := t.saveCheckpoint(); err != nil {
				return nil, err
			}
		}
	}
	stop := "epochs"
	if t.run.Best.Stopped {
		stop = "early_stop"
	}
	t.run.fillResult(res, stop)
	return res, nil
}

// lockCheckpoint checks o's checkpoint directory (for a fresh run) and
// locks it: one run writes a checkpoint directory at a time. unlock is a
// no-op without a directory.
func lockCheckpoint(o Options) (unlock func(), err error) {
	unlock = func() {}
	if o.Checkpoint == "" {
		return unlock, nil
	}
	if !o.Resume {
		if err := CheckCheckpointDir(o.Checkpoint); err != nil {
			return unlock, err
		}
	}
	lk, err := fslock.TryLock(o.Checkpoint)
	switch {
	case errors.Is(err, fslock.ErrBusy):
		return unlock, &inputerr.Error{Path: o.Checkpoint, Field: "--checkpoint",
			Msg: "in use by another gnnplan train: wait for it to end, or give another directory"}
	case err != nil && !errors.Is(err, os.ErrNotExist): // resuming from nothing is loadCheckpoint's to say
		return unlock, &inputerr.Error{Path: o.Checkpoint, Field: "--checkpoint", Msg: "cannot lock the directory", Err: err}
	}
	return func() { lk.Unlock() }, nil
}

// fillResult copies the run's history and best epoch into res.
func (st *runState) fillResult(res *Result, stop string) {
	res.Epochs = slices.Clone(st.History)
	res.BestEpoch, res.BestValAcc, res.TestAcc = st.Best.Epoch, st.Best.ValAcc, st.Best.TestAcc
	res.Stop = stop
}
