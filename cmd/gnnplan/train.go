package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/gnnplan/gnnplan/cmd/gnnplan/internal/textout"
	"github.com/gnnplan/gnnplan/kernels"
	"github.com/gnnplan/gnnplan/tpc"
	"github.com/gnnplan/gnnplan/trainer"
	"github.com/gnnplan/gnnplan/trainer/dataset"
	"github.com/gnnplan/gnnplan/trainer/nn"
	"github.com/gnnplan/gnnplan/trainer/sample"
	"github.com/gnnplan/gnnplan/trainer/store"
)

// trainOptions holds the train command's flags.
type trainOptions struct {
	IO      *deps
	Dataset string
	Plan    string
	Model   string
	Fanouts string
	Output  string
	BLAS    string
	// GPUs is --gpus: which GPUs get a worker each.
	GPUs string
	// Device is where the kernels run: "cpu", "cuda" (a build with the
	// cuda tag) or "cuda-emulated".
	Device string
	// Set records which flags were given, so the plan's workload and the
	// model's defaults fill only the others.
	Set func(name string) bool

	Epochs, Batch, Hidden, Heads, Patience, EvalEvery, Threads int
	Layers                                                     int
	// BLASThreads is --blas-threads: the dense products' threads (0: auto).
	BLASThreads int
	// CopyThreads is --copy-threads: goroutines copying and scaling each
	// batch's rows out of core (0: auto, storeCopyThreads).
	CopyThreads int

	LR, WeightDecay, Dropout, InputDropout float64
	Seed                                   uint64
	RowNormalize                           bool
	Checkpoint                             string
	Resume                                 bool
	// SynthNodes sizes the synthetic graph trained on without --dataset.
	SynthNodes int64
	// Features is where feature rows come from: auto, memory or store.
	Features string
	// CacheFraction overrides the store's caches (< 0: the layout's);
	// CacheOrder picks its rows: hottest or random.
	CacheFraction float64
	CacheOrder    string
	// cacheFromPlan says Features and CacheFraction came from the plan's
	// cache (a plan of this machine), not from flags.
	cacheFromPlan bool
	// ProbeBatches is how many batches the prediction times (0: none).
	ProbeBatches int
	// Measured is a profile whose disk rates the prediction uses instead
	// of reading the SSD bins for MeasureSeconds.
	Measured       string
	MeasureSeconds float64
	// Workers is the data-parallel workers (0: one per compute device of
	// the plan this build can run).
	Workers int
}

func newTrainCmd(d *deps, runF func(context.Context, *trainOptions) error) *cobra.Command {
	opts := &trainOptions{IO: d}
	cmd := &cobra.Command{
		Use:   "train",
		Short: "Train GraphSAGE, GCN or GAT on a dataset, in memory or from the SSD feature store, on the CPU or on GPUs",
		Long: `Train a GNN on a dataset's training split and report, per epoch, the time,
samples/s, the time per stage (sampling, feature gather, forward+backward,
optimizer), the loss and the train/validation/test accuracy; at the end, the
test accuracy at the epoch of the best validation accuracy.

Without --plan each model starts from its paper's settings on the citation
graphs (row-normalised features; GCN: hidden 16, dropout 0.5, lr 0.01, weight
decay 5e-4, 200 epochs; GAT: 8 heads x 8 hidden, 1 output head, dropout 0.6
on inputs and attention, lr 0.005, weight decay 5e-4, early stopping with
patience 100; GraphSAGE-mean: as GCN, DGL's example), with fanouts 25,10 and
batches of 1024 seeds. Fanout -1 takes every neighbour, so
  gnnplan train --dataset DIR --model gcn --fanouts -1,-1
trains full-batch as the papers did. With --plan, the plan's workload sets
the model, fanouts, batch size and widths; flags override either.

Out of core: when the dataset has a feature store (gnnplan place --plan P
--materialize --ssd-dir DIR wrote one), train runs the plan's layout: rows
in the layout's caches come from memory, the rest from the SSD bins, read
with io_uring and O_DIRECT while the previous batch trains (a bounded
pipeline: sampling, gathering, then the step); --cache-fraction F holds the
hottest share F of the rows in memory instead, for experiments. The loss
curve is bitwise the one training in memory gives. --features memory reads
features.npy whole instead.

GPUs: a binary built with make build-cuda trains with --device cuda, one
data-parallel worker per GPU (--gpus: all, a count, or ordinals; default the
plan's GPU count), gradients averaged by peer copies; out of core each GPU
holds one of the layout's GPU cache bins in its memory and the other rows
are copied in through pinned buffers while the batch before computes.
--device cuda-emulated runs the same path on the CPU, slowly, for checking.

Without --dataset it generates a small synthetic graph and trains on it.
Ctrl-C stops after the current batch, writes the checkpoint when
--checkpoint is set, and exits 130; --resume continues from it and ends with
the parameters an uninterrupted run would have.`,
		Example: `  gnnplan train
  gnnplan train --dataset data/cora --model gcn --fanouts -1,-1
  gnnplan train --dataset data/cora --model gat --fanouts -1,-1 -o json
  gnnplan train --plan plan.json --dataset data/synth --epochs 3 --checkpoint ckpt
  gnnplan train --plan plan.json --dataset data/synth --epochs 3 --checkpoint ckpt --resume
  gnnplan train --plan plan.json --dataset data/synth --epochs 1 --cache-fraction 0.1
  gnnplan-cuda train --plan plan.json --dataset data/synth --device cuda --gpus all`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Set = func(name string) bool { return cmd.Flags().Changed(name) }
			if err := checkOutput(opts.Output, "", "table", "wide", "json"); err != nil {
				return err
			}
			if opts.Set("model") {
				if _, err := nn.ParseKind(opts.Model); err != nil {
					return usageErrorf("--model: %q (valid: graphsage, gcn, gat)", opts.Model)
				}
			}
			if opts.Resume && opts.Checkpoint == "" {
				return usageErrorf("--resume needs --checkpoint DIR (where the checkpoint is)")
			}
			if opts.Checkpoint != "" && !opts.Resume {
				// Before any data is read: a run should not find out
				// at the end of its first epoch.
				if err := trainer.CheckCheckpointDir(opts.Checkpoint); err != nil {
					return usageErrorf("--checkpoint: %v", err)
				}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runTrain(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Dataset, "dataset", "", "the dataset directory (default: a small synthetic graph)")
	f.StringVar(&opts.Plan, "plan", "", "plan.json from gnnplan recommend: its workload sets model, fanouts, batch and widths")
	f.StringVar(&opts.Model, "model", "graphsage", "graphsage, gcn or gat")
	f.StringVar(&opts.Fanouts, "fanouts", "25,10", "neighbours sampled per hop, seeds' hop first; -1 takes every neighbour; one layer per hop")
	f.IntVar(&opts.Layers, "layers", 2, "graph layers; must equal the number of fanouts (one hop per layer)")
	f.IntVar(&opts.Epochs, "epochs", 200, "epochs to train (GAT: at most this many, with early stopping)")
	f.IntVar(&opts.Batch, "batch", 1024, "training seeds per step (0: the whole training split in one batch)")
	f.IntVar(&opts.Hidden, "hidden", 16, "hidden width (per head for GAT; GAT's default is 8)")
	f.IntVar(&opts.Heads, "heads", 8, "GAT: attention heads on hidden layers")
	f.Float64Var(&opts.LR, "lr", 0.01, "Adam's learning rate (GAT's default is 0.005)")
	f.Float64Var(&opts.WeightDecay, "weight-decay", 5e-4, "L2 weight decay added to the gradient, as PyTorch's Adam")
	f.Float64Var(&opts.Dropout, "dropout", 0.5, "dropout on each layer's input, features included (GAT's default is 0.6, also on attention)")
	f.Float64Var(&opts.InputDropout, "input-dropout", 0.5, "dropout on the features (default: --dropout; 0 with --plan)")
	f.IntVar(&opts.Patience, "patience", 0, "stop after this many epochs without validation progress (0: never; GAT's default is 100)")
	f.IntVar(&opts.EvalEvery, "eval-every", 1, "evaluate on the validation and test splits every N epochs (0: never)")
	f.BoolVar(&opts.RowNormalize, "row-normalize", true, "scale each feature row to unit L1 norm, the papers' preprocessing (off by default with --plan)")
	f.Uint64Var(&opts.Seed, "seed", 1, "seed for initialisation, shuffling, sampling and dropout")
	f.IntVar(&opts.Threads, "threads", 0, "threads for kernels and sampling (0: one per core)")
	f.StringVar(&opts.Device, "device", deviceCPU, "where the kernels run: cpu, cuda (a worker per GPU; make build-cuda) or cuda-emulated (slow, on the CPU)")
	f.StringVar(&opts.GPUs, "gpus", "", "with --device cuda: all, a count N or ordinals such as 0,2 (default: the plan's count, else all)")
	// --blas-spin steered OpenBLAS's own worker threads, which gnnplan no
	// longer uses; kept so scripts that pass it still run.
	f.Bool("blas-spin", false, "no effect")
	_ = f.MarkDeprecated("blas-spin", "products run on gnnplan's own threads, which sleep between products; the flag does nothing")
	f.IntVar(&opts.CopyThreads, "copy-threads", 0, "out of core, goroutines copying each batch's rows (0: auto); the bits are the same on any count")
	f.IntVar(&opts.BLASThreads, "blas-threads", 0, "threads each dense product runs on (0: auto); the bits are the same on any count")
	f.StringVar(&opts.BLAS, "blas", "", "GEMM library: openblas, gonum, or a path to a libopenblas.so (default: OpenBLAS when it loads)")
	f.StringVar(&opts.Checkpoint, "checkpoint", "", "directory to checkpoint into after every epoch and on Ctrl-C")
	f.BoolVar(&opts.Resume, "resume", false, "continue from the checkpoint in --checkpoint")
	f.StringVarP(&opts.Output, "output", "o", "table", "output format: table, wide, json")
	f.Int64Var(&opts.SynthNodes, "synthetic-nodes", 20_000, "without --dataset: vertices of the generated graph")
	f.StringVar(&opts.Features, "features", "auto", "where feature rows come from: store (materialize's bins), memory (features.npy) or auto (store if any)")
	f.Float64Var(&opts.CacheFraction, "cache-fraction", -1, "out of core: cache the hottest share of the rows (0 to 1) instead of the layout's caches")
	f.StringVar(&opts.CacheOrder, "cache-order", "hottest", "with --cache-fraction: which rows the cache holds: hottest (by hotness.npy) or random (the baseline, drawn with --seed)")
	f.IntVar(&opts.Workers, "workers", 0, "data-parallel CPU workers, gradients averaged every step (default 1)")
	f.IntVar(&opts.ProbeBatches, "probe-batches", 20, "batches timed before training to predict the epoch and compare each epoch with it (0: none)")
	f.StringVar(&opts.Measured, "measured", "", "out of core: the disks' read rate from this profile (gnnplan profile --save) instead of measuring")
	f.Float64Var(&opts.MeasureSeconds, "measure-seconds", 5, "out of core: seconds to read random rows from the SSD bins for the prediction's disk rate")
	return cmd
}

// parseFanouts reads "25,10" or "-1,-1".
func parseFanouts(s string) ([]int, error) {
	var out []int
	for _, p := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || v == 0 || v < -1 {
			return nil, usageErrorf("--fanouts: %q (valid: comma-separated counts >= 1, or -1 for every neighbour, e.g. 25,10)", s)
		}
		out = append(out, v)
	}
	return out, nil
}

// trainReport is train's JSON output.
type trainReport struct {
	SchemaVersion  int                  `json:"schema_version"`
	Dataset        string               `json:"dataset"`
	Model          nn.Config            `json:"model"`
	Params         int                  `json:"params"`
	Backend        string               `json:"backend"`
	Devices        []string             `json:"devices,omitempty"`
	Fanouts        []int                `json:"fanouts"`
	BatchSize      int                  `json:"batch_size"`
	LR             float32              `json:"lr"`
	WeightDecay    float32              `json:"weight_decay"`
	Seed           uint64               `json:"seed"`
	Epochs         []trainer.EpochStats `json:"epochs"`
	BestEpoch      int                  `json:"best_epoch"`
	BestValAcc     trainer.Metric       `json:"best_val_acc"`
	TestAcc        trainer.Metric       `json:"test_acc"`
	Stop           string               `json:"stop"`
	ResumedEpoch   int                  `json:"resumed_from_epoch,omitempty"`
	TrainSeconds   float64              `json:"train_s"`
	SamplesPerSec  float64              `json:"samples_per_s"`
	CheckpointPath string               `json:"checkpoint,omitempty"`
	Notes          []string             `json:"notes,omitempty"`
	// Features is where rows came from: "memory" or "store".
	Features string            `json:"features"`
	Store    *trainStoreReport `json:"store,omitempty"`
	// PredictedEpochS is the predicted time of a whole epoch and
	// MeasuredEpochS the median of the whole epochs trained (0 when
	// none); PredictionErrorPct is how far the measurement was from the
	// prediction, in percent of it.
	PredictedEpochS    float64 `json:"predicted_epoch_s"`
	MeasuredEpochS     float64 `json:"measured_epoch_s"`
	PredictionErrorPct float64 `json:"prediction_error_pct"`
	// PlanPredictedEpochS is the epoch the plan (--plan) predicted for its
	// hardware, PlanHardware that hardware: beside the probe's prediction
	// and the measurement, they say how far the plan was off.
	PlanPredictedEpochS float64 `json:"plan_predicted_epoch_s,omitempty"`
	PlanHardware        string  `json:"plan_hardware,omitempty"`
	// PlanErrorPct is how far the median epoch was from the plan's
	// prediction, in percent of it; PlanStep is the plan's step, class by
	// class, beside the kernel times the epochs measured (a plan of this
	// machine's CPU).
	PlanErrorPct *float64       `json:"plan_prediction_error_pct,omitempty"`
	PlanStep     []planStepTerm `json:"plan_step,omitempty"`
	// PlanWithEpochDiskS is the plan's model run again at the share of
	// rows the epochs found in memory and the disk rate they read at (out
	// of core), PlanWithEpochDiskErrorPct the median epoch's distance from
	// it: how far the model was off with the disk's moving rate taken out.
	PlanWithEpochDiskS        float64  `json:"plan_predicted_with_epoch_disk_s,omitempty"`
	PlanWithEpochDiskErrorPct *float64 `json:"plan_with_epoch_disk_error_pct,omitempty"`
	// WithEpochDiskS is the epoch predicted again at the median disk rate
	// the epochs read at (EpochDiskRowsPerS); 0 when none read from disk.
	WithEpochDiskS    float64          `json:"predicted_with_epoch_disk_s,omitempty"`
	EpochDiskRowsPerS float64          `json:"epoch_disk_rows_per_s,omitempty"`
	Prediction        *trainPrediction `json:"prediction,omitempty"`
	Checks            []epochCheck     `json:"epoch_checks,omitempty"`
}

// StoreRows is where the run's rows came from, summed over its epochs
// (zero in memory).
func (r trainReport) StoreRows() store.GatherStats {
	if r.Store == nil {
		return store.GatherStats{}
	}
	return r.Store.Rows
}

// trainStoreReport describes an out-of-core run's feature store.
type trainStoreReport struct {
	Engine            string            `json:"engine,omitempty"` // the SSD reader's; "" when no row is on SSD
	CachedFraction    float64           `json:"cached_fraction"`  // share of the rows held in memory
	Rows              store.GatherStats `json:"rows"`             // summed over the epochs trained
	ReadAmplification float64           `json:"read_amplification"`
	// Bins is each bin's share of the rows gathered: the traffic the
	// layout (or the cache override) sent it, to compare with place's
	// targets.
	Bins []trainBinReport `json:"bins"`
}

// trainBinReport is one bin's measured traffic.
type trainBinReport struct {
	ID    string  `json:"id"`
	Rows  int     `json:"rows"`
	Share float64 `json:"share"`
}

// openFeatureStore opens the dataset's feature store when the run trains
// out of core (--features store, or auto with a store present), with the
// cache override of --cache-fraction; nil when it trains in memory.
func openFeatureStore(o *trainOptions, dir string, m dataset.Meta, copyThreads int) (*store.Store, error) {
	_, err := os.Stat(filepath.Join(dir, store.ManifestFile))
	have := err == nil
	var use bool
	switch o.Features {
	case "auto":
		use = have && o.Dataset != ""
	case "memory":
	case "store":
		if !have && o.cacheFromPlan {
			return nil, usageErrorf("--plan %s trains at cache %.0f%%, reading the other rows from the dataset's feature store, and %s has none: lay the dataset out over this machine's disks first (gnnplan recommend --dataset %s --gpus 1 --save layout.json; gnnplan place --plan layout.json --dataset %s --materialize --ssd-dir DIR), or train in memory with --features memory",
				o.Plan, 100*o.CacheFraction, dir, dir, dir)
		}
		if !have {
			return nil, usageErrorf("--features store: %s has no feature store (%s); lay it out and write the SSD bins first: gnnplan place --plan plan.json --dataset %s --materialize --ssd-dir DIR", dir, store.ManifestFile, dir)
		}
		use = true
	default:
		return nil, usageErrorf("--features %q (valid: auto, memory, store)", o.Features)
	}
	override := o.Set != nil && o.Set("cache-fraction")
	if o.CacheOrder != "hottest" && o.CacheOrder != "random" {
		return nil, usageErrorf("--cache-order %q (valid: hottest, random)", o.CacheOrder)
	}
	if o.Set != nil && o.Set("cache-order") && !override {
		return nil, usageErrorf("--cache-order picks the rows of --cache-fraction's cache: give --cache-fraction too")
	}
	if override && !use {
		return nil, usageErrorf("--cache-fraction applies to training out of core, and %s has no feature store in use (--features %s); materialize one with gnnplan place --materialize", dir, o.Features)
	}
	if !use {
		return nil, nil
	}
	opt := store.Options{CopyThreads: copyThreads}
	if override {
		f := o.CacheFraction
		if math.IsNaN(f) || f < 0 || f > 1 {
			return nil, usageErrorf("--cache-fraction %g (want a share of the rows from 0 to 1)", f)
		}
		hot, err := sample.ReadHotness(filepath.Join(dir, sample.HotnessFile), m.NumNodes)
		if err != nil {
			return nil, fmt.Errorf("--cache-fraction ranks rows by the hotness gnnplan place measured: %w", err)
		}
		opt.Cache = &store.CacheOverride{Fraction: f, Hotness: hot, Random: o.CacheOrder == "random", Seed: o.Seed}
	}
	return store.Open(dir, opt)
}

// storeCopyThreads is how many goroutines copy and scale each batch's
// rows out of core: on the CPU one, beside the products that want every core;
// with GPUs, whose steps leave the cores to the pipelines, half the cores
// shared among the GPUs' pipelines (the other half to their samplers).
func storeCopyThreads(o *trainOptions, gpus int) int {
	if o.CopyThreads > 0 {
		return o.CopyThreads
	}
	if o.Device == deviceCPU {
		return 1
	}
	return max(1, runtime.GOMAXPROCS(0)/(2*max(1, gpus)))
}

// describeStore is a line on where an out-of-core run's rows come from.
func describeStore(s *store.Store) string {
	d := fmt.Sprintf("%.1f%% of the rows in memory", 100*s.CachedFraction())
	if e := s.Engine(); e != "" {
		d += ", the rest read from SSD bins with " + e
	}
	return d
}

func runTrain(ctx context.Context, o *trainOptions) error {
	if err := checkTrainFlags(o); err != nil {
		return err
	}
	if o.Output != "json" {
		h := newHuman(o.IO.Out, o.Output)
		defer h.Flush()
		o.IO = &deps{In: o.IO.In, Out: h, Err: o.IO.Err}
	}
	var plan *tpc.Plan
	if o.Plan != "" {
		p, err := tpc.LoadPlan(o.Plan)
		if err != nil {
			return err
		}
		plan = p
		planCache(o, plan)
	}
	var notes []string
	dir := o.Dataset
	if dir == "" {
		tmp, err := os.MkdirTemp("", "gnnplan-train-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp + "/synth"
		so := trainSynthOptions(o.SynthNodes, plan)
		if _, err := dataset.Synth(ctx, so, dir, io.Discard); err != nil {
			return err
		}
		notes = append(notes, fmt.Sprintf("no --dataset: trained on a synthetic graph of %d vertices, %d features, %d classes", so.Nodes, so.FeatureDim, so.Classes))
	}
	g, err := dataset.LoadGraph(dir)
	if err != nil {
		return err
	}
	defer g.Close()
	if plan != nil && o.Dataset != "" {
		if err := checkPlanMatches(plan, g.Meta, o.Plan); err != nil {
			return err
		}
	}
	to, err := trainSettings(o, plan)
	if err != nil {
		return err
	}
	if err := checkComputeDevices(o, plan); err != nil {
		return err
	}
	to.Workers = max(o.Workers, 1)
	if g.Meta.NumClasses < 2 || len(g.Train) == 0 {
		return usageErrorf("--dataset %s: it has no labels or no training split to train on (num_classes %d, %d training vertices)", dir, g.Meta.NumClasses, len(g.Train))
	}
	if len(to.Fanouts) > 0 && g.Meta.FeatureDim == 0 {
		return usageErrorf("--dataset %s: it has no features to train on", dir)
	}
	bs, devNotes, err := trainBackends(o, plan)
	if err != nil {
		return err
	}
	notes = append(notes, devNotes...)
	// Out of core the gather stage's copies and scaling run on this many
	// goroutines.
	to.GatherThreads = storeCopyThreads(o, len(bs))
	src, err := openFeatureStore(o, dir, g.Meta, to.GatherThreads)
	if err != nil {
		return err
	}
	var feats []float32
	if src != nil {
		defer src.Close()
		to.Features = src
		if n := src.Notes(); n != "" {
			notes = append(notes, n)
		}
	} else {
		if err := trainer.CheckFits(dir, g.Meta); err != nil {
			return err
		}
		if feats, err = trainer.LoadFeatures(dir, g.Meta); err != nil {
			return err
		}
	}
	be := bs[0]
	if len(bs) > 1 {
		// One worker per GPU.
		if o.Set("workers") && o.Workers != len(bs) {
			return usageErrorf("--workers %d: --device %s runs one worker per GPU, and --gpus gives %d", o.Workers, o.Device, len(bs))
		}
		to.Workers, to.Backends = len(bs), bs
	}
	tr, err := trainer.New(be, g, feats, to)
	if err != nil {
		return err
	}
	cfg := tr.Config()
	if o.Output != "json" {
		fmt.Fprintf(o.IO.Out, "training %s on %s (%d vertices, %d training): %d layers, hidden %d, %d parameters, fanouts %s, batch %s; %s\n",
			cfg.Kind, g.Meta.Name, g.Meta.NumNodes, len(g.Train), cfg.Layers, cfg.Hidden, tr.Model().NumParams(),
			strings.Trim(strings.Join(strings.Fields(fmt.Sprint(to.Fanouts)), ","), "[]"), batchName(to.BatchSize), describeBackends(bs))
		if src != nil {
			fmt.Fprintf(o.IO.Out, "features out of core: %s\n", describeStore(src))
		}
		for _, n := range notes {
			fmt.Fprintf(o.IO.Out, "note: %s\n", n)
		}
	}
	var pred *trainPrediction
	if o.ProbeBatches > 0 && !o.Resume { // a resumed run was predicted when it started
		cpu, _ := be.(*kernels.CPU)
		pred, err = predictTraining(ctx, o, tr, cpu, src, dir, g.Meta.NumNodes, len(g.Train), to.BatchSize, to.Workers)
		switch {
		case err != nil && ctx.Err() != nil:
			// Interrupted while predicting: the run below stops at once,
			// writing its checkpoint as any interrupted run does.
			pred = nil
		case err != nil:
			return fmt.Errorf("predict: %w", err)
		case o.Output != "json":
			fmt.Fprintln(o.IO.Out, describePrediction(pred))
		}
	}
	rep := newTrainReporter(o.IO, o.Output != "json", o.Output == "wide")
	rep.pred, rep.outOfCore = pred, src != nil
	start := time.Now()
	res, runErr := tr.Run(ctx, rep)
	rep.finish()
	if runErr != nil && !errors.Is(runErr, trainer.ErrInterrupted) {
		return runErr
	}
	wall := time.Since(start).Seconds()
	var samples, secs float64
	for _, e := range res.Epochs {
		samples += e.SamplesPerSecond * e.Seconds
		secs += e.Seconds
	}
	r := trainReport{SchemaVersion: 1, Dataset: g.Meta.Name, Model: cfg, Params: res.Params, Backend: res.Backend, Devices: res.Devices,
		Fanouts: to.Fanouts, BatchSize: to.BatchSize, LR: to.LR, WeightDecay: to.WeightDecay, Seed: to.Seed,
		Epochs: res.Epochs, BestEpoch: res.BestEpoch, BestValAcc: res.BestValAcc, TestAcc: res.TestAcc,
		Stop: res.Stop, ResumedEpoch: res.ResumedEpoch, TrainSeconds: wall, Notes: notes, Features: "memory"}
	if src != nil {
		r.Features = "store"
		r.Store = &trainStoreReport{Engine: src.Engine(), CachedFraction: src.CachedFraction()}
		for _, e := range res.Epochs {
			r.Store.Rows.Add(e.Rows)
		}
		r.Store.ReadAmplification = r.Store.Rows.ReadAmplification()
		for i, id := range src.BinIDs() {
			b := trainBinReport{ID: id}
			if i < len(r.Store.Rows.BinRows) {
				b.Rows = r.Store.Rows.BinRows[i]
			}
			if r.Store.Rows.Rows > 0 {
				b.Share = float64(b.Rows) / float64(r.Store.Rows.Rows)
			}
			r.Store.Bins = append(r.Store.Bins, b)
		}
	}
	if secs > 0 {
		r.SamplesPerSec = samples / secs
	}
	if plan != nil {
		r.PlanPredictedEpochS = plan.PredictedEpochS
		h := plan.Hardware
		r.PlanHardware = fmt.Sprintf("%d x %s, %d x %s", h.GPUs, h.GPUModel, h.SSDs, h.SSDModel)
		if h.GPUs == 0 {
			r.PlanHardware = fmt.Sprintf("CPU workers on %d cores", h.CPUCores)
			r.PlanStep = planStep(plan.CPUBatch, res.Epochs)
		}
	}
	if pred != nil {
		r.Prediction = pred
		r.PredictedEpochS = pred.Epoch.EpochS
		for _, e := range res.Epochs {
			if c, ok := pred.check(e); ok {
				r.Checks = append(r.Checks, c)
			}
		}
		if r.MeasuredEpochS = medianEpochSeconds(pred, res.Epochs); r.MeasuredEpochS > 0 {
			r.PredictionErrorPct = tpc.ErrorPct(r.MeasuredEpochS, r.PredictedEpochS)
			r.WithEpochDiskS, r.EpochDiskRowsPerS = withEpochDisk(pred, r.Checks)
			if r.PlanPredictedEpochS > 0 {
				e := tpc.ErrorPct(r.MeasuredEpochS, r.PlanPredictedEpochS)
				r.PlanErrorPct = &e
			}
			if rows := r.StoreRows(); plan != nil && rows.Rows > 0 && r.EpochDiskRowsPerS > 0 {
				hit := 1 - float64(rows.SSDRows)/float64(rows.Rows)
				if again, ok := plan.PredictAgain(hit, r.EpochDiskRowsPerS); ok {
					e := tpc.ErrorPct(r.MeasuredEpochS, again)
					r.PlanWithEpochDiskS, r.PlanWithEpochDiskErrorPct = again, &e
				}
			}
		}
	}
	if o.Checkpoint != "" {
		r.CheckpointPath = o.Checkpoint + "/" + trainer.CheckpointFile
	}
	if o.Output == "json" {
		enc := json.NewEncoder(o.IO.Out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			return err
		}
	} else {
		printTrainSummary(o.IO.Out, r)
	}
	return runErr
}

// exampleFanouts suggests fanouts for n layers (the papers' 25,10, then 5s).
func exampleFanouts(n int) string {
	f := []string{"25", "10"}
	for len(f) < n {
		f = append(f, "5")
	}
	return strings.Join(f[:max(n, 1)], ",")
}

func batchName(b int) string {
	if b == 0 {
		return "full"
	}
	return strconv.Itoa(b)
}

// trainSettings merges the model's paper defaults, the plan's workload and
// the flags, in that order of precedence (flags win).
func trainSettings(o *trainOptions, plan *tpc.Plan) (trainer.Options, error) {
	kind := nn.GraphSAGE
	if plan != nil && plan.Workload.Model != "" {
		k, err := nn.ParseKind(plan.Workload.Model)
		if err != nil {
			return trainer.Options{}, usageErrorf("--plan %s: workload.model %q (valid: graphsage, gcn, gat)", o.Plan, plan.Workload.Model)
		}
		kind = k
	}
	if o.Set("model") {
		k, _ := nn.ParseKind(o.Model)
		kind = k
	}
	to := trainer.Defaults(kind)
	if plan != nil {
		w := plan.Workload
		if len(w.Fanouts) > 0 {
			to.Fanouts = append([]int(nil), w.Fanouts...)
		}
		if w.BatchSize > 0 {
			to.BatchSize = w.BatchSize
		}
		if w.Hidden > 0 {
			to.Model.Hidden = w.Hidden
		}
		if kind == nn.GAT && w.Heads > 0 {
			to.Model.Heads = w.Heads
		}
		// A plan describes a workload at scale: features as stored, and
		// dropout between layers only (DGL's mini-batch GraphSAGE).
		to.RowNormalize = false
		to.Model.InputDropout = 0
	}
	if o.Set("fanouts") {
		f, err := parseFanouts(o.Fanouts)
		if err != nil {
			return trainer.Options{}, err
		}
		to.Fanouts = f
	}
	if o.Set("layers") && o.Layers != len(to.Fanouts) {
		return trainer.Options{}, usageErrorf("--layers %d but %d fanouts (%s): give one fanout per layer, e.g. --fanouts %s",
			o.Layers, len(to.Fanouts), strings.Trim(strings.Join(strings.Fields(fmt.Sprint(to.Fanouts)), ","), "[]"), exampleFanouts(o.Layers))
	}
	ints := []struct {
		flag string
		val  int
		dst  *int
		min  int
	}{
		{"epochs", o.Epochs, &to.Epochs, 1}, {"batch", o.Batch, &to.BatchSize, 0}, {"hidden", o.Hidden, &to.Model.Hidden, 1},
		{"heads", o.Heads, &to.Model.Heads, 1}, {"patience", o.Patience, &to.Patience, 0}, {"eval-every", o.EvalEvery, &to.EvalEvery, 0},
	}
	for _, f := range ints {
		if !o.Set(f.flag) {
			continue
		}
		if f.val < f.min {
			return trainer.Options{}, usageErrorf("--%s: %d (valid: >= %d)", f.flag, f.val, f.min)
		}
		*f.dst = f.val
	}
	if o.Set("heads") && kind != nn.GAT {
		return trainer.Options{}, usageErrorf("--heads: only GAT has attention heads (--model gat)")
	}
	floats := []struct {
		flag     string
		val      float64
		dst      *float32
		min, max float64
		valid    string
	}{
		{"lr", o.LR, &to.LR, math.SmallestNonzeroFloat32, 10, "above 0, at most 10"},
		{"weight-decay", o.WeightDecay, &to.WeightDecay, 0, 1, "0 to 1"},
		{"dropout", o.Dropout, &to.Model.Dropout, 0, 0.999, "0 to 0.999"},
		{"input-dropout", o.InputDropout, &to.Model.InputDropout, 0, 0.999, "0 to 0.999"},
	}
	for _, f := range floats {
		if !o.Set(f.flag) {
			continue
		}
		if !(f.val >= f.min && f.val <= f.max) {
			return trainer.Options{}, usageErrorf("--%s: %v (valid: %s)", f.flag, f.val, f.valid)
		}
		*f.dst = float32(f.val)
	}
	if o.Set("dropout") && !o.Set("input-dropout") {
		to.Model.InputDropout = to.Model.Dropout
	}
	if o.Set("dropout") && kind == nn.GAT {
		to.Model.AttnDropout = to.Model.Dropout
	}
	if o.Set("row-normalize") {
		to.RowNormalize = o.RowNormalize
	}
	if o.Set("seed") {
		to.Seed = o.Seed
	}
	if o.Threads < 0 {
		return trainer.Options{}, usageErrorf("--threads: %d (valid: >= 1, or 0 for one per core)", o.Threads)
	}
	to.Threads = o.Threads
	to.Checkpoint, to.Resume = o.Checkpoint, o.Resume
	return to, nil
}

// maxThreads is the most threads a flag may ask for: four per core, and
// at least 64, beyond which threads only queue for the cores (and a
// mistyped count would start them all before failing).
func maxThreads() int { return max(64, 4*runtime.NumCPU()) }

// checkTrainFlags refuses counts and durations no run can use, before
// anything is read or allocated.
func checkTrainFlags(o *trainOptions) error {
	set := func(name string) bool { return o.Set != nil && o.Set(name) }
	limit := maxThreads()
	switch {
	case o.Threads < 0 || o.Threads > limit:
		return usageErrorf("--threads: %d (valid: 1 to %d, or 0 for one per core)", o.Threads, limit)
	case o.BLASThreads > limit:
		return usageErrorf("--blas-threads: %d (valid: 1 to %d, or 0 for auto)", o.BLASThreads, limit)
	case o.CopyThreads < 0 || o.CopyThreads > limit:
		return usageErrorf("--copy-threads: %d (valid: 1 to %d, or 0 for auto)", o.CopyThreads, limit)
	case set("workers") && o.Workers == 0:
		return usageErrorf("--workers: 0 (valid: >= 1)")
	case o.ProbeBatches < 0:
		return usageErrorf("--probe-batches: %d (valid: >= 1, or 0 for no prediction)", o.ProbeBatches)
	case !(o.MeasureSeconds > 0 && o.MeasureSeconds <= 3600):
		return usageErrorf("--measure-seconds: %v (valid: above 0, at most 3600)", o.MeasureSeconds)
	}
	return nil
}

// checkComputeDevices refuses a plan that trains on GPUs when this build
// has no GPU backend, unless --workers runs its layout on CPU workers.
func checkComputeDevices(o *trainOptions, plan *tpc.Plan) error {
	if o.Workers < 0 {
		return usageErrorf("--workers: %d (valid: >= 1)", o.Workers)
	}
	if plan == nil || plan.Hardware.GPUs == 0 || o.Set("workers") || o.Device != deviceCPU {
		return nil
	}
	h := plan.Hardware
	return usageErrorf("--plan %s: the plan trains on %d x %s GPU and this build has no GPU backend (this machine: %d CPU cores, %s); to run its layout on CPU workers instead, add --workers %d",
		o.Plan, h.GPUs, h.GPUModel, runtime.NumCPU(), describeLocalGPUs(), h.GPUs)
}

// planCache makes a plan of CPU training (recommend --this-machine) hold
// the cache it was predicted with, unless --features or --cache-fraction
// say otherwise: every row in memory, or the hottest share of them with
// the rest read from the dataset's store.
func planCache(o *trainOptions, plan *tpc.Plan) {
	c := plan.Cache
	if c == nil || o.Set == nil || o.Set("features") || o.Set("cache-fraction") {
		return
	}
	if c.Fraction >= 1 {
		o.Features = "memory"
		return
	}
	o.Features, o.CacheFraction, o.cacheFromPlan = "store", c.Fraction, true
	set := o.Set
	o.Set = func(name string) bool { return name == "cache-fraction" || set(name) }
}

// describeLocalGPUs says how many NVIDIA GPUs the driver lists here.
func describeLocalGPUs() string {
	entries, err := os.ReadDir("/proc/driver/nvidia/gpus")
	if err != nil || len(entries) == 0 {
		return "no NVIDIA GPU"
	}
	return fmt.Sprintf("%d NVIDIA GPUs the driver lists", len(entries))
}

// checkPlanMatches refuses a plan made for another dataset: its workload's
// vertex count, feature width and classes must be the dataset's.
func checkPlanMatches(p *tpc.Plan, m dataset.Meta, path string) error {
	w := p.Workload
	switch {
	case w.Vertices != m.NumNodes:
		return usageErrorf("--plan %s: workload %q has %d vertices, dataset %s has %d (make the plan with recommend --dataset)", path, w.Name, w.Vertices, m.Name, m.NumNodes)
	case w.FeatureDim != m.FeatureDim:
		return usageErrorf("--plan %s: workload %q has %d features per vertex, dataset %s has %d", path, w.Name, w.FeatureDim, m.Name, m.FeatureDim)
	case w.Classes > 1 && w.Classes != m.NumClasses:
		return usageErrorf("--plan %s: workload %q has %d classes, dataset %s has %d", path, w.Name, w.Classes, m.Name, m.NumClasses)
	}
	return nil
}

// trainSynthOptions is the graph train generates without --dataset: the
// generator's defaults scaled down, with the plan's feature width and
// classes when a plan is given.
func trainSynthOptions(nodes int64, plan *tpc.Plan) dataset.SynthOptions {
	so := dataset.DefaultSynthOptions()
	so.Name = "synthetic"
	so.Nodes = max(nodes, 100)
	so.Edges = 10 * so.Nodes
	so.FeatureDim = 64
	so.Classes = 8
	so.TrainFraction, so.ValFraction, so.TestFraction = 0.1, 0.05, 0.1
	if plan != nil {
		if plan.Workload.FeatureDim > 0 {
			so.FeatureDim = plan.Workload.FeatureDim
		}
		if plan.Workload.Classes > 1 {
			so.Classes = plan.Workload.Classes
		}
	}
	return so
}

func fmtMetric(m trainer.Metric) string {
	if math.IsNaN(float64(m)) {
		return "-"
	}
	return fmt.Sprintf("%.4f", float64(m))
}

// trainReporter prints a progress bar per epoch on a terminal and a line
// per epoch on stdout.
type trainReporter struct {
	d         *deps
	pred      *trainPrediction // nil: nothing to compare with
	outOfCore bool
	lines     bool
	wide      bool // each epoch's stage times too
	tty       bool
	bar       *progressbar.ProgressBar
	epoch     int
}

func newTrainReporter(d *deps, lines, wide bool) *trainReporter {
	return &trainReporter{d: d, lines: lines, wide: wide, tty: isTerminal(d.Err)}
}

func (r *trainReporter) Batch(p trainer.BatchProgress) {
	if !r.tty {
		return
	}
	if r.bar == nil || r.epoch != p.Epoch {
		r.finish()
		r.epoch = p.Epoch
		r.bar = progressbar.NewOptions(p.Batches, progressbar.OptionSetWriter(r.d.Err),
			progressbar.OptionSetDescription(fmt.Sprintf("epoch %d/%d", p.Epoch, p.Epochs)),
			progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(true), progressbar.OptionClearOnFinish(),
			// The description grows to "epoch 10/10  loss 0.1234  1234567 samples/s".
			progressbar.OptionSetWidth(barWidth(textout.Columns(r.d.Err), 44)), progressbar.OptionThrottle(100*time.Millisecond))
	}
	rate := 0.0
	if p.Elapsed > 0 {
		rate = float64(p.Samples) / p.Elapsed.Seconds()
	}
	r.bar.Describe(fmt.Sprintf("epoch %d/%d  loss %.4f  %.0f samples/s", p.Epoch, p.Epochs, p.Loss, rate))
	r.bar.Set(p.Batch)
}

func (r *trainReporter) Epoch(e trainer.EpochStats) {
	r.finish()
	if !r.lines {
		if !r.tty {
			fmt.Fprintf(r.d.Err, "epoch %d: %.3f s, loss %.4f, val %s\n", e.Epoch, e.Seconds, e.Loss, fmtMetric(e.ValAcc))
		}
		return
	}
	stages := "" // -o wide: the seconds each stage took
	if r.wide {
		stages = fmt.Sprintf("  wait %.3f  sample %.3f  gather %.3f  fwd+bwd %.3f  optim %.3f s", e.WaitSeconds,
			e.Stages.Sample.BusySeconds+e.Stages.Sample.WaitInSeconds, e.GatherSeconds+e.Stages.Gather.BusySeconds, e.ComputeSeconds, e.OptimizerSeconds)
	}
	fmt.Fprintf(r.d.Out, "epoch %4d  %8.3f s  %10.0f samples/s%s  loss %.4f  train %.4f  val %s  test %s\n",
		e.Epoch, e.Seconds, e.SamplesPerSecond, stages, e.Loss, e.TrainAcc, fmtMetric(e.ValAcc), fmtMetric(e.TestAcc))
	if c, ok := r.pred.check(e); ok {
		fmt.Fprintln(r.d.Out, c.line(r.outOfCore))
	}
}

func (r *trainReporter) finish() {
	if r.bar != nil {
		r.bar.Finish()
		r.bar = nil
	}
}

func printTrainSummary(w io.Writer, r trainReport) {
	how := map[string]string{"epochs": "trained", "early_stop": "stopped early after", "interrupted": "interrupted after"}[r.Stop]
	fmt.Fprintf(w, "%s %d epochs in %.1f s (%.0f samples/s)", how, len(r.Epochs), r.TrainSeconds, r.SamplesPerSec)
	if r.BestEpoch > 0 {
		fmt.Fprintf(w, "; best validation accuracy %s at epoch %d: test accuracy %s", fmtMetric(r.BestValAcc), r.BestEpoch, fmtMetric(r.TestAcc))
	}
	fmt.Fprintln(w)
	if st := r.Store; st != nil && st.Rows.Rows > 0 {
		fmt.Fprintf(w, "feature rows: %d gathered, %.1f%% from memory, %.1f%% from SSD (%d reads, %.1f MB read, read amplification %.2f, every row checked against its CRC-32C, %s waited for the checks)\n",
			st.Rows.Rows, 100*float64(st.Rows.WorkerCacheHits+st.Rows.SocketCacheHits)/float64(st.Rows.Rows),
			100*float64(st.Rows.SSDRows)/float64(st.Rows.Rows), st.Rows.DeviceReads, float64(st.Rows.DeviceBytes)/1e6, st.ReadAmplification, fmtSeconds(st.Rows.CheckWaitSeconds))
		if st.Rows.ResidentHits > 0 {
			fmt.Fprintf(w, "feature rows resident in GPU memory (the layout's GPU cache bins, never copied): %.1f%%\n", 100*float64(st.Rows.ResidentHits)/float64(st.Rows.Rows))
		}
	}
	printPredictionSummary(w, r)
	if r.CheckpointPath != "" {
		fmt.Fprintf(w, "checkpoint: %s\n", r.CheckpointPath)
	}
}
