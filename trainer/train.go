package trainer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/gnnplan/gnnplan/internal/rng"

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
	// RowNormalize scales each feature row to sum 1 before training.
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
	Rows store.GatherStats `json:"rows"`
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

// Trainer trains one model on one in-memory dataset.
type Trainer struct {
	b kernels.Backend
	// tally times b's kernels by class; nil on a device backend, whose
	// kernels return before they run.
	tally *kernels.Tally
	g     *dataset.Graph
	o     Options
	cfg   nn.Config
	// model is the master replica, worker 0's: the optimizer updates it
	// and the other replicas copy it.
	model *nn.Model
	adam  *nn.Adam
	ws    []*worker
	// bs and feats are each worker's backend and in-memory features (one
	// matrix per backend); concurrent says the workers' backends are
	// their own, so their passes run at once.
	bs         []kernels.Backend
	feats      []*kernels.Mat
	concurrent bool
	feat       *kernels.Mat  // the in-memory features on b; nil out of core
	src        FeatureSource // out of core: where batches' rows come from
	deg        []int32
	forms      nn.BlockForms
	evals      [2]*sample.Sampler // validation, test; nil when the split is empty
	x          *kernels.Mat       // evaluation's gathered input
	// lastInputs are the input rows of the step trained last, one list per
	// worker with a batch (for Probe).
	lastInputs [][]int32

	st runState
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
	Rows                                  store.GatherStats
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
	m := g.Meta
	bad := func(field, format string, args ...any) error {
		return &inputerr.Error{Path: g.Dir, Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	switch {
	case o.Features != nil && (features != nil || o.Features.Dim() != m.FeatureDim):
		return nil, bad("features", "a feature source of %d features per row and %d values in memory for %d features per vertex (want one or the other)", o.Features.Dim(), len(features), m.FeatureDim)
	case o.Features == nil && (m.FeatureDim < 1 || int64(len(features)) != m.NumNodes*int64(m.FeatureDim)):
		return nil, bad("features", "%d values for %d vertices of %d features", len(features), m.NumNodes, m.FeatureDim)
	case m.NumClasses < 2:
		return nil, bad("num_classes", "%d: the dataset has no labels to train on (want >= 2 classes)", m.NumClasses)
	case len(g.Train) == 0:
		return nil, bad("train_idx", "the dataset has no training split")
	case len(o.Fanouts) == 0:
		return nil, bad("fanouts", "none given (want one per layer, e.g. 25,10)")
	case o.Epochs < 1:
		return nil, bad("epochs", "%d (want >= 1)", o.Epochs)
	case o.BatchSize < 0 || o.EvalBatchSize < 0:
		return nil, bad("batch", "%d (want >= 1, or 0 for full batch)", o.BatchSize)
	case !(o.LR > 0) || o.WeightDecay < 0:
		return nil, bad("lr", "learning rate %g, weight decay %g (want > 0 and >= 0)", o.LR, o.WeightDecay)
	case o.Patience < 0 || o.EvalEvery < 0:
		return nil, bad("patience", "patience %d, eval-every %d (want >= 0)", o.Patience, o.EvalEvery)
	case o.Workers < 0 || o.Workers > len(g.Train):
		return nil, bad("workers", "%d (want 1 to the %d training vertices)", o.Workers, len(g.Train))
	case o.Backends != nil && len(o.Backends) != max(o.Workers, 1):
		return nil, bad("backends", "%d backends for %d workers (want one per worker)", len(o.Backends), max(o.Workers, 1))
	case o.Backends != nil && o.Backends[0] != b:
		return nil, bad("backends", "worker 0's backend is %s, not the trainer's %s", o.Backends[0].Name(), b.Name())
	}
	for _, v := range g.Train {
		if g.Labels[v] < 0 {
			return nil, bad("labels", "training vertex %d has no label", v)
		}
	}
	cfg := o.Model
	cfg.InDim, cfg.Classes, cfg.Layers = m.FeatureDim, m.NumClasses, len(o.Fanouts)
	if cfg.Kind == nn.GAT && cfg.Slope == 0 {
		cfg.Slope = 0.2
	}
	if err := cfg.Check(); err != nil {
		return nil, &inputerr.Error{Field: "model", Msg: err.Error()}
	}
	if _, onHost := b.(*kernels.CPU); onHost {
		if err := checkHostMemory(cfg, o, m.NumNodes, m.NumEdges, len(g.Train)); err != nil {
			return nil, &inputerr.Error{Path: g.Dir, Field: "model", Msg: err.Error()}
		}
	}
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
	t := &Trainer{b: b, tally: tally, g: g, o: o, cfg: cfg, forms: nn.Forms(cfg.Kind), x: b.NewMat(0, 0)}
	t.adam = nn.NewAdam(o.LR, o.WeightDecay)
	t.bs, t.concurrent = workerBackends(b, o)
	if o.Features != nil {
		t.src = o.Features
	} else {
		t.feat = b.Wrap(int(m.NumNodes), m.FeatureDim, features)
		t.feats = make([]*kernels.Mat, len(t.bs))
		for i, wb := range t.bs {
			if j := slices.Index(t.bs, wb); j < i {
				t.feats[i] = t.feats[j]
			} else if wb == b {
				t.feats[i] = t.feat
			} else {
				t.feats[i] = wb.Wrap(int(m.NumNodes), m.FeatureDim, features)
			}
		}
	}
	if cfg.Kind == nn.GCN {
		t.deg = nn.Degrees(g.Indptr, g.Indices)
	}
	if t.ws, err = newWorkers(t.bs, t.feats, g, cfg, o); err != nil {
		return nil, err
	}
	if err := t.placeResident(); err != nil {
		return nil, err
	}
	t.model = t.ws[0].model
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
		// A fixed seed and no shuffle: every evaluation sees the same
		// neighbourhoods, so accuracies compare across epochs.
		eo := sample.SamplerOptions{Fanouts: o.Fanouts, BatchSize: eb, Seed: o.Seed ^ 0x6576616c, Workers: o.Threads, Seeds: split}
		if t.evals[i], err = sample.NewSampler(g, eo); err != nil {
			return nil, err
		}
	}
	t.st.Best = bestState{ValAcc: Metric(math.NaN()), ValLoss: Metric(math.NaN()), TestAcc: Metric(math.NaN()), MinLoss: Metric(math.NaN()), MaxAcc: Metric(math.NaN())}
	return t, nil
}

// placeResident gives each worker on a GPU one of the layout's worker
// (GPU) cache bins, in order, resident in the GPU's memory: the plan's
// GPU cache. Those rows are never gathered or copied again; the rest of
// a batch is gathered on the host and copied in (store.GatherResident).
// Workers on the CPU, and workers beyond the layout's GPU bins, gather
// every row. A bin the GPU cannot hold is an error naming it.
func (t *Trainer) placeResident() (err error) {
	rs, ok := t.src.(residentSource)
	if !ok {
		return nil
	}
	bins := rs.WorkerBins()
	dim := t.cfg.InDim
	for i, w := range t.ws {
		w.resident = -1
		if _, gpu := w.b.(*kernels.GPU); !gpu || i >= len(bins) {
			continue
		}
		data, err := rs.BinData(bins[i])
		if err != nil {
			return err
		}
		if t.o.RowNormalize {
			data = slices.Clone(data)
			RowNormalize(data, dim)
		}
		if err := uploadResident(w, data, dim); err != nil {
			return fmt.Errorf("GPU cache bin %s (%d rows, %.2f GiB) on %s: %w", rs.BinIDs()[bins[i]], len(data)/dim,
				float64(4*len(data))/(1<<30), w.b.Name(), err)
		}
		w.rs, w.resident = rs, bins[i]
	}
	return nil
}

// recoverDeviceError, deferred, turns a device's failure (a
// *kernels.DeviceError panic: the Backend interface has no errors) into
// *err; any other panic goes on.
func recoverDeviceError(err *error) {
	if p := recover(); p != nil {
		de, ok := p.(*kernels.DeviceError)
		if !ok {
			panic(p)
		}
		*err = de
	}
}

// uploadResident copies a cache bin's rows to w's device, returning a
// device's failure (no room) as an error.
func uploadResident(w *worker, data []float32, dim int) (err error) {
	defer recoverDeviceError(&err)
	m := w.b.NewMat(0, 0)
	w.b.Upload(m, len(data)/dim, dim, data)
	w.cache = m
	return nil
}

// workerBackends returns each worker's backend and whether they are
// pairwise distinct (so their passes may run at once).
func workerBackends(b kernels.Backend, o Options) ([]kernels.Backend, bool) {
	n := max(o.Workers, 1)
	if o.Backends == nil {
		bs := make([]kernels.Backend, n)
		for i := range bs {
			bs[i] = b
		}
		return bs, false
	}
	bs := slices.Clone(o.Backends)
	for i, x := range bs {
		if slices.Index(bs, x) != i {
			return bs, false
		}
	}
	return bs, n > 1
}

// worker is one data-parallel worker: its share of the seeds, sampled on
// its own, and its model replica, on its backend.
type worker struct {
	id    int
	b     kernels.Backend
	feat  *kernels.Mat // the in-memory features on b; nil out of core
	model *nn.Model
	smp   *sample.Sampler
	x, dl *kernels.Mat // the gathered input (in memory), the logits' gradient
	seed  uint64       // its sampling and dropout streams
	// pool is the worker's gather buffers, kept across epochs; on a
	// GPU, ring is the device slots (inputSlots) their uploads share.
	pool []*stageBuf
	ring *kernels.StagingRing
	// cache holds the resident worker bin's rows on the worker's device
	// (nil: none; rs serves the others, resident names the bin).
	cache    *kernels.Mat
	rs       residentSource
	resident int
	// grads are worker 0's copies of this worker's gradients when its
	// backend is another, and stage the host memory they pass through.
	grads []*kernels.Mat
	stage []float32
}

// workerSeed is worker w's seed: the run's for worker 0, so that one
// worker trains as a run without workers does.
func workerSeed(seed uint64, w int) uint64 {
	if w == 0 {
		return seed
	}
	return seed ^ rng.Mix(uint64(w)*0x776f726b+rng.Golden) // "work"
}

// newWorkers builds o's workers: replicas of one initialisation, each
// sampling every Workers-th training seed (all of them for one worker).
func newWorkers(bs []kernels.Backend, feats []*kernels.Mat, g *dataset.Graph, cfg nn.Config, o Options) ([]*worker, error) {
	n := max(o.Workers, 1)
	batch := o.BatchSize
	if batch == 0 {
		batch = (len(g.Train) + n - 1) / n
	}
	ws := make([]*worker, n)
	for w := range ws {
		b := bs[w]
		model, err := nn.New(b, cfg, o.Seed)
		if err != nil {
			return nil, &inputerr.Error{Field: "model", Msg: err.Error()}
		}
		wk := &worker{id: w, b: b, model: model, x: b.NewMat(0, 0), dl: b.NewMat(0, 0), seed: workerSeed(o.Seed, w)}
		if feats != nil {
			wk.feat = feats[w]
		}
		so := sample.SamplerOptions{Fanouts: o.Fanouts, BatchSize: batch, Seed: wk.seed, Workers: o.Threads, Shuffle: true}
		if n > 1 {
			for i := w; i < len(g.Train); i += n {
				so.Seeds = append(so.Seeds, g.Train[i])
			}
		}
		if wk.smp, err = sample.NewSampler(g, so); err != nil {
			return nil, err
		}
		ws[w] = wk
	}
	return ws, nil
}

// batches is the steps of an epoch: the most any worker has.
func (t *Trainer) batches(epoch int) int {
	nb := 0
	for _, w := range t.ws {
		nb = max(nb, w.smp.Batches(epoch))
	}
	return nb
}

// Model returns the model being trained.
func (t *Trainer) Model() *nn.Model { return t.model }

// Config returns the model's full configuration.
func (t *Trainer) Config() nn.Config { return t.cfg }

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
	res := &Result{Params: t.model.NumParams(), Backend: t.b.Name()}
	if t.concurrent {
		for _, b := range t.bs {
			res.Devices = append(res.Devices, b.Name())
		}
	}
	if t.o.Checkpoint != "" && !t.o.Resume {
		if err := CheckCheckpointDir(t.o.Checkpoint); err != nil {
			return nil, err
		}
	}
	if t.o.Checkpoint != "" {
		// One run writes a checkpoint directory at a time.
		lk, err := fslock.TryLock(t.o.Checkpoint)
		switch {
		case errors.Is(err, fslock.ErrBusy):
			return nil, &inputerr.Error{Path: t.o.Checkpoint, Field: "--checkpoint",
				Msg: "in use by another gnnplan train: wait for it to end, or give another directory"}
		case err != nil && !errors.Is(err, os.ErrNotExist): // resuming from nothing is loadCheckpoint's to say
			return nil, &inputerr.Error{Path: t.o.Checkpoint, Field: "--checkpoint", Msg: "cannot lock the directory", Err: err}
		}
		defer lk.Unlock()
	}
	if t.o.Resume {
		if err := t.loadCheckpoint(); err != nil {
			return nil, err
		}
		res.ResumedEpoch, res.ResumedBatch = t.st.Epoch, t.st.NextBatch
	}
	for t.st.Epoch < t.o.Epochs && !t.st.Best.Stopped {
		err := t.runEpoch(ctx, rep)
		if err != nil {
			if ctx.Err() == nil {
				return nil, err
			}
			t.fillResult(res, "interrupted")
			if t.o.Checkpoint != "" {
				if cerr := t.saveCheckpoint(); cerr != nil {
					return res, fmt.Errorf("%w; and the checkpoint failed: %w", ErrInterrupted, cerr)
				}
			}
			return res, fmt.Errorf("%w at epoch %d, batch %d: %w", ErrInterrupted, t.st.Epoch+1, t.st.NextBatch, ctx.Err())
		}
		if t.o.Checkpoint != "" {
			if err := t.saveCheckpoint(); err != nil {
				return nil, err
			}
		}
	}
	stop := "epochs"
	if t.st.Best.Stopped {
		stop = "early_stop"
	}
	t.fillResult(res, stop)
	return res, nil
}

func (t *Trainer) fillResult(res *Result, stop string) {
	res.Epochs = slices.Clone(t.st.History)
	res.BestEpoch, res.BestValAcc, res.TestAcc = t.st.Best.Epoch, t.st.Best.ValAcc, t.st.Best.TestAcc
	res.Stop = stop
}

// ErrDiverged is returned, wrapped, when a batch's loss is not finite:
// the step has already made the parameters NaN, so training stops
// before anything is checkpointed.
var ErrDiverged = errors.New("training diverged")

// diverged is the error for a non-finite loss at step of epoch.
func (t *Trainer) diverged(epoch, step int, loss float64) error {
	where := "no checkpoint was kept (--checkpoint)"
	if t.o.Checkpoint != "" {
		where = "no checkpoint was written yet"
		if _, err := os.Stat(filepath.Join(t.o.Checkpoint, CheckpointFile)); err == nil {
			where = "the last good checkpoint is in " + t.o.Checkpoint
		}
	}
	return fmt.Errorf("%w at epoch %d, batch %d: the loss is %v (features too large? try --row-normalize, or a lower --lr); %s",
		ErrDiverged, epoch+1, step+1, loss, where)
}

// runEpoch trains the rest of epoch t.st.Epoch, then evaluates.
func (t *Trainer) runEpoch(ctx context.Context, rep Reporter) error {
	epoch := t.st.Epoch
	nb := t.batches(epoch)
	p := &t.st.Partial
	// Batches arrive sampled, with their blocks built and (out of core)
	// their rows gathered: that work runs ahead of the step, on each
	// worker's pipeline goroutines.
	pls := make([]*pipeline, len(t.ws))
	for i, w := range t.ws {
		pls[i] = t.startPipeline(ctx, w, epoch)
	}
	// gs are the batches in the step's hands, until released after it.
	gs := make([]gathered, len(t.ws))
	stop := func() {
		for i, g := range gs {
			if g.mb != nil {
				pls[i].release(g.rows) // an error or a panic left it untrained
			}
			gs[i] = gathered{}
		}
		for _, pl := range pls {
			pl.stop()
		}
	}
	defer stop()
	start := time.Now()
	waitStart := start
	for step := t.st.NextBatch; step < nb; step++ {
		// A batch from each worker whose share of the seeds reaches this
		// step.
		for i, w := range t.ws {
			gs[i] = gathered{}
			if step >= w.smp.Batches(epoch) {
				continue
			}
			g, ok := <-pls[i].out
			if !ok {
				// The preparation ended early without an error of its own:
				// only cancellation does that.
				return fmt.Errorf("epoch %d: %w", epoch+1, context.Cause(ctx))
			}
			if g.err != nil {
				return g.err
			}
			gs[i] = g
		}
		now := time.Now()
		p.Wait += now.Sub(waitStart).Seconds()
		for _, g := range gs {
			if g.mb != nil {
				p.Stages.Sample.add(g.stats.sample)
				p.Stages.Gather.add(g.stats.gather)
				p.Rows.Add(g.stats.rows)
			}
		}
		loss, labeled, correct, samples := t.step(gs, p)
		if math.IsNaN(loss) || math.IsInf(loss, 0) {
			return t.diverged(epoch, step, loss)
		}
		t.lastInputs = t.lastInputs[:0]
		for i, g := range gs {
			if g.mb != nil {
				pls[i].release(g.rows)
				t.lastInputs = append(t.lastInputs, g.mb.Input())
			}
			gs[i] = gathered{}
		}
		p.LossSum += loss
		p.Labeled += labeled
		p.Correct += correct
		p.Samples += samples
		p.Batches++
		t.st.NextBatch = step + 1
		waitStart = time.Now()
		p.Seconds += waitStart.Sub(start).Seconds()
		start = waitStart
		if rep != nil {
			rep.Batch(BatchProgress{Epoch: epoch + 1, Epochs: t.o.Epochs, Batch: step + 1, Batches: nb, Samples: p.Samples,
				Elapsed: time.Duration(p.Seconds * float64(time.Second)), Loss: p.LossSum / float64(max(p.Labeled, 1))})
		}
		// Stop after this batch when asked: the state is that of a
		// finished batch, which a checkpoint can resume from.
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("epoch %d: %w", epoch+1, err)
		}
	}
	// The evaluation uploads into worker 0's device slots: the pipelines
	// give back any they hold first.
	stop()
	es := EpochStats{Epoch: epoch + 1, Seconds: p.Seconds, WaitSeconds: p.Wait, GatherSeconds: p.Gather,
		ComputeSeconds: p.Compute, OptimizerSeconds: p.Optim, Stages: p.Stages, Rows: p.Rows, Batches: p.Batches,
		Loss: p.LossSum / float64(max(p.Labeled, 1)), TrainAcc: float64(p.Correct) / float64(max(p.Labeled, 1)),
		ValAcc: Metric(math.NaN()), ValLoss: Metric(math.NaN()), TestAcc: Metric(math.NaN())}
	if p.Seconds > 0 {
		es.SamplesPerSecond = float64(p.Samples) / p.Seconds
	}
	if t.tally != nil {
		k := p.Kernels
		es.Kernels = &k
	}
	last := epoch+1 == t.o.Epochs
	if t.o.EvalEvery > 0 && ((epoch+1)%t.o.EvalEvery == 0 || last) {
		evalStart := time.Now()
		for i, dst := range [][2]*Metric{{&es.ValAcc, &es.ValLoss}, {&es.TestAcc, nil}} {
			if t.evals[i] == nil {
				continue
			}
			acc, loss, err := t.evaluate(ctx, t.evals[i])
			if err != nil {
				return err
			}
			*dst[0] = Metric(acc)
			if dst[1] != nil {
				*dst[1] = Metric(loss)
			}
		}
		es.EvalSeconds = time.Since(evalStart).Seconds()
		t.track(es)
	}
	t.st.History = append(t.st.History, es)
	t.st.Epoch++
	t.st.NextBatch = 0
	t.st.Partial = partialEpoch{}
	if rep != nil {
		rep.Epoch(es)
	}
	return nil
}

// track updates the best validation epoch and the patience counter.
func (t *Trainer) track(es EpochStats) {
	b := &t.st.Best
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
	if t.o.Patience > 0 && b.Since >= t.o.Patience {
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

// preparedBatch is a sampled batch with its blocks built and its seeds'
// labels read, ready for a step; err ends the stream.
type preparedBatch struct {
	mb      *sample.MiniBatch
	blocks  []*nn.Block
	labels  *kernels.Index
	labeled int
	err     error
}

// prepareBlocks builds mb's blocks on w's backend (the outermost as an
// input block when the first layer reads the features in place) and
// reads its seeds' labels.
func (t *Trainer) prepareBlocks(w *worker, mb *sample.MiniBatch, train bool) preparedBatch {
	b := w.b
	L := len(mb.Blocks)
	inPlace := w.feat != nil && w.model.ReadsFeaturesInPlace(train)
	pb := preparedBatch{mb: mb, blocks: make([]*nn.Block, L)}
	for h := range mb.Blocks {
		blk := &mb.Blocks[h]
		if h == L-1 && inPlace {
			pb.blocks[h] = nn.NewInputBlock(b, blk.Offsets, blk.SrcIdx, blk.Src, t.deg, int(t.g.Meta.NumNodes), t.forms)
			continue
		}
		pb.blocks[h] = nn.NewBlock(b, blk.Offsets, blk.SrcIdx, blk.Src, t.deg, t.forms)
	}
	labels := make([]int32, len(mb.Seeds))
	for i, v := range mb.Seeds {
		labels[i] = int32(t.g.Labels[v])
		if labels[i] >= 0 {
			pb.labeled++
		}
	}
	pb.labels = b.NewIndex(labels)
	return pb
}

// input returns w's model's input for a prepared batch: the rows the
// pipeline gathered (out of core), the whole feature matrix when the first
// layer reads it in place, else the outermost sources' rows gathered into
// x.
func (t *Trainer) input(w *worker, pb preparedBatch, rows inputRows, train bool, x *kernels.Mat) *kernels.Mat {
	b := w.b
	if t.src != nil {
		var copied *kernels.Mat
		if rows.st != nil {
			copied = rows.st.Mat() // uploaded while the batch before computed
		} else {
			copied = b.Wrap(rows.n, t.cfg.InDim, rows.buf[:rows.n*t.cfg.InDim])
		}
		if w.cache == nil {
			return copied
		}
		// The rows copied in and the rows resident on the device, in
		// the batch's order.
		b.Resize(x, len(rows.idx), t.cfg.InDim)
		b.GatherRowsTwo(x, copied, w.cache, b.NewIndex(rows.idx))
		return x
	}
	if w.model.ReadsFeaturesInPlace(train) {
		return w.feat
	}
	in := pb.mb.Input()
	b.Resize(x, len(in), t.cfg.InDim)
	b.GatherRows(x, w.feat, b.NewIndex(in))
	return x
}

// step trains on one batch per worker (gs[i].mb is nil for a worker with
// no batch left) and returns the summed loss, the number of labelled
// seeds, how many of them the model got right, and the seeds trained.
// Workers on backends of their own pass at once, the others in turn; the
// sums are taken in worker order either way.
func (t *Trainer) step(gs []gathered, p *partialEpoch) (loss float64, labeled, correct, samples int) {
	type result struct {
		loss            float64
		correct         int
		gather, compute float64
		panicked        any
	}
	rs := make([]result, len(gs))
	pass := func(i int) {
		g, w, r := gs[i], t.ws[i], &rs[i]
		b := w.b
		t0 := time.Now()
		x := t.input(w, g.preparedBatch, g.rows, true, w.x)
		t1 := time.Now()
		logits := w.model.Forward(g.blocks, x, true, stepSeed(w.seed, g.mb.Epoch, g.mb.Index))
		b.Resize(w.dl, logits.Rows, logits.Cols)
		r.loss, r.correct = b.SoftmaxCrossEntropy(w.dl, logits, g.labels, 1/float32(max(g.labeled, 1)))
		w.model.Backward(w.dl)
		if g.rows.st != nil {
			g.rows.st.Done() // every kernel reading the input is queued
		}
		t2 := time.Now()
		r.gather, r.compute = t1.Sub(t0).Seconds(), t2.Sub(t1).Seconds()
	}
	var k0 kernels.KernelTimes
	if t.tally != nil {
		k0 = t.tally.Times()
	}
	t0 := time.Now()
	if t.concurrent {
		var wg sync.WaitGroup
		for i, g := range gs {
			if g.mb == nil {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				// A device's failure panics (the Backend has no errors); it
				// is raised again on the step's goroutine, where Run turns
				// it into an error.
				defer func() { rs[i].panicked = recover() }()
				pass(i)
			}()
		}
		wg.Wait()
	} else {
		for i, g := range gs {
			if g.mb != nil {
				pass(i)
			}
		}
	}
	var gather, compute float64
	for i, g := range gs {
		if g.mb == nil {
			continue
		}
		if rs[i].panicked != nil {
			panic(rs[i].panicked)
		}
		gather += rs[i].gather
		compute += rs[i].compute
		loss += rs[i].loss
		labeled += g.labeled
		correct += rs[i].correct
		samples += len(g.mb.Seeds)
	}
	if t.concurrent {
		// The passes overlapped: the step's time is the wall clock's, in
		// the stages' proportions.
		if wall := time.Since(t0).Seconds(); gather+compute > 0 {
			gather, compute = wall*gather/(gather+compute), wall*compute/(gather+compute)
		}
	}
	t2 := time.Now()
	t.reduceGradients(gs, labeled)
	t.adam.Step(t.b, t.model.Params())
	t.st.AdamSteps = t.adam.Steps
	t.broadcast()
	t3 := time.Now()
	p.Gather += gather
	p.Compute += compute
	p.Optim += t3.Sub(t2).Seconds()
	if t.tally != nil {
		p.Kernels = p.Kernels.Add(t.tally.Times().Sub(k0))
	}
	return loss, labeled, correct, samples
}

// reduceGradients leaves in the master replica the gradient of the mean
// loss over every worker's labelled seeds: each worker's gradient (of its
// own mean) weighted by its share of the labelled seeds, summed in worker
// order. One worker's gradient is left as it is. A worker on another
// backend sends its gradients to the master's first.
func (t *Trainer) reduceGradients(gs []gathered, labeled int) {
	if len(t.ws) == 1 {
		return
	}
	b := t.b
	master := t.model.Params()
	if gs[0].mb != nil && labeled > 0 {
		for _, p := range master {
			b.Scale(p.G, float32(gs[0].labeled)/float32(labeled))
		}
	} else {
		for _, p := range master {
			b.Zero(p.G)
		}
	}
	for i := 1; i < len(gs); i++ {
		if gs[i].mb == nil || gs[i].labeled == 0 {
			continue
		}
		w := t.ws[i]
		wt := float32(gs[i].labeled) / float32(labeled)
		for j, p := range w.model.Params() {
			g := p.G
			if w.b != b {
				if w.grads == nil {
					w.grads = make([]*kernels.Mat, len(master))
				}
				if w.grads[j] == nil {
					w.grads[j] = b.NewMat(0, 0)
				}
				w.stage = kernels.Transfer(b, w.grads[j], w.b, g, w.stage)
				g = w.grads[j]
			}
			b.Axpy(wt, g, master[j].G)
		}
	}
}

// broadcast copies the master replica's parameters to the other workers.
func (t *Trainer) broadcast() {
	master := t.model.Params()
	for _, w := range t.ws[1:] {
		for j, p := range w.model.Params() {
			w.stage = kernels.Transfer(w.b, p.W, t.b, master[j].W, w.stage)
		}
	}
}

// evaluate returns accuracy and mean loss over the split s samples, with
// dropout off.
func (t *Trainer) evaluate(ctx context.Context, s *sample.Sampler) (acc, loss float64, err error) {
	var sum float64
	var labeled, correct int
	var rows inputRows
	sb := &stageBuf{}
	err = s.Epoch(ctx, 0, func(mb *sample.MiniBatch) error {
		pb := t.prepareBlocks(t.ws[0], mb, false)
		if t.src != nil {
			var err error
			if rows, _, err = t.gatherInput(ctx, t.ws[0], mb, sb); err != nil {
				return err
			}
		}
		if rows.st != nil {
			defer dropSlot(rows.st) // on a panic: the slot is the next batch's
		}
		logits := t.model.Forward(pb.blocks, t.input(t.ws[0], pb, rows, false, t.x), false, 0)
		if rows.st != nil {
			rows.st.Done()
		}
		l, c := t.b.SoftmaxCrossEntropy(nil, logits, pb.labels, 1)
		sum += l
		correct += c
		labeled += pb.labeled
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
