package trainplan

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"

	"github.com/gnnplan/gnnplan/internal/inputerr"
	"github.com/gnnplan/gnnplan/kernels"
	"github.com/gnnplan/gnnplan/tpc"
	"github.com/gnnplan/gnnplan/trainer"
	"github.com/gnnplan/gnnplan/trainer/dataset"
	"github.com/gnnplan/gnnplan/trainer/store"
)

// RunFlags are a training run's flags: its settings (Flags) and where it
// runs, where its rows come from and how it is predicted.
type RunFlags struct {
	Flags
	LoaderFlags
	// Dataset is the dataset directory ("": generate SynthNodes vertices).
	Dataset    string
	SynthNodes int64
	// Device is where the kernels run (kernels.Open); GPUs which GPUs get
	// a worker each; BLAS the GEMM library; BLASThreads the products'
	// threads (0: auto); CopyThreads the goroutines copying each batch's
	// rows out of core (0: auto).
	Device, GPUs, BLAS       string
	BLASThreads, CopyThreads int
	// Features is where feature rows come from: auto, memory or store;
	// CacheFraction overrides the store's caches (< 0: the layout's) and
	// CacheOrder picks its rows: hottest or random.
	Features      string
	CacheFraction float64
	CacheOrder    string
	// ProbeBatches is how many batches the prediction times (0: none;
	// the default, not set, times at least MinProbeSeconds of them);
	// Measured a profile whose disk rates it uses instead of reading the
	// SSD bins for MeasureSeconds.
	ProbeBatches   int
	Measured       string
	MeasureSeconds float64
	// Workers is the data-parallel workers (0: one per compute device).
	Workers int
	// cacheFromPlan says Features and CacheFraction came from the plan's
	// cache (a plan of this machine), not from flags.
	cacheFromPlan bool
}

// Open sets a run up: it reads the plan and the dataset (or generates a
// small graph), merges the settings, opens the backends and the feature
// store or loads the features. The plan's cache, for a plan of this
// machine, sets o's Features and CacheFraction unless flags did.
func Open(ctx context.Context, o *RunFlags) (*Session, error) {
	r := &Session{}
	if err := r.load(ctx, o); err != nil {
		r.Close()
		return nil, err
	}
	if err := r.setUp(o); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// openFeatureStore opens the dataset's feature store when the run trains
// out of core; nil when it trains in memory.
func openFeatureStore(o *RunFlags, dir string, m dataset.Meta, copyThreads int, rowNormalize bool) (*store.Store, error) {
	return OpenStore(dir, m, StoreFlags{Features: o.Features, CacheFraction: o.CacheFraction, CacheOrder: o.CacheOrder,
		FromPlan: o.cacheFromPlan, PlanPath: o.Plan, Dataset: o.Dataset, Seed: o.Seed, Set: o.Set, RowNormalize: rowNormalize}, copyThreads)
}

// storeCopyThreads is how many goroutines copy and scale each batch's
// rows out of core: on the CPU one, beside the products that want every core;
// with GPUs, whose steps leave the cores to the pipelines, half the cores
// shared among the GPUs' pipelines (the other half to their samplers).
func storeCopyThreads(o *RunFlags, gpus int) int {
	if o.CopyThreads > 0 {
		return o.CopyThreads
	}
	if o.Device == kernels.DeviceCPU {
		return 1
	}
	return max(1, runtime.GOMAXPROCS(0)/(2*max(1, gpus)))
}

// Session is a training run set up from its flags, before training: the
// plan, the graph, the trainer's settings and backends, and the feature
// store out of core. Close releases what it holds.
type Session struct {
	Plan     *tpc.Plan // nil: trained without one
	Dir      string    // the dataset's directory
	Graph    *dataset.Graph
	Options  trainer.Options
	Backends []kernels.Backend
	Store    *store.Store // nil: every row in memory (Features)
	Features []float32
	// Packing is what packing the batches cost, when this run packed
	// them (PrepareLoader).
	Packing *store.PackManifest
	// Notes are what the user should know about the run.
	Notes []string
	// cleanup releases what the run holds (the store, the graph, a
	// generated dataset).
	cleanup []func()
}

// Close releases the store, the graph and a generated dataset.
func (r *Session) Close() {
	for i := len(r.cleanup) - 1; i >= 0; i-- {
		r.cleanup[i]()
	}
}

// load reads the plan and the dataset (or generates a small one).
func (r *Session) load(ctx context.Context, o *RunFlags) error {
	if o.Plan != "" {
		p, err := tpc.LoadPlan(o.Plan)
		if err != nil {
			return err
		}
		r.Plan = p
		planCache(o, p)
		if p.Loader != "" && o.Set != nil && !o.Set("loader") {
			// The loader the plan was priced with.
			o.Loader = p.Loader
		}
	}
	r.Dir = o.Dataset
	if r.Dir == "" {
		tmp, err := os.MkdirTemp("", "gnnplan-train-")
		if err != nil {
			return err
		}
		r.cleanup = append(r.cleanup, func() { os.RemoveAll(tmp) })
		r.Dir = tmp + "/synth"
		so := SynthOptions(o.SynthNodes, r.Plan)
		if _, err := dataset.Synth(ctx, so, r.Dir, io.Discard); err != nil {
			return err
		}
		r.Notes = append(r.Notes, fmt.Sprintf("no --dataset: trained on a synthetic graph of %d vertices, %d features, %d classes", so.Nodes, so.FeatureDim, so.Classes))
	}
	g, err := dataset.LoadGraph(r.Dir)
	if err != nil {
		return err
	}
	r.Graph = g
	r.cleanup = append(r.cleanup, func() { g.Close() })
	if r.Plan != nil && o.Dataset != "" {
		return CheckMatches(r.Plan, g.Meta, o.Plan)
	}
	return nil
}

// setUp merges the settings, picks the backends and opens the features.
func (r *Session) setUp(o *RunFlags) error {
	var err error
	if r.Options, err = Settings(o.Flags, r.Plan); err != nil {
		return err
	}
	if err := checkComputeDevices(o, r.Plan); err != nil {
		return err
	}
	r.Options.Workers = max(o.Workers, 1)
	m := r.Graph.Meta
	if m.NumClasses < 2 || len(r.Graph.Train) == 0 {
		return inputerr.Errorf("", "", "--dataset %s: it has no labels or no training split to train on (num_classes %d, %d training vertices)", r.Dir, m.NumClasses, len(r.Graph.Train))
	}
	if len(r.Options.Fanouts) > 0 && m.FeatureDim == 0 {
		return inputerr.Errorf("", "", "--dataset %s: it has no features to train on", r.Dir)
	}
	ko := kernels.OpenOptions{Device: o.Device, GPUs: o.GPUs, Threads: o.Threads, BLAS: o.BLAS, BLASThreads: o.BLASThreads}
	if r.Plan != nil {
		ko.PlannedGPUs = r.Plan.Hardware.GPUs
	}
	bs, devNotes, err := kernels.Open(ko)
	if err != nil {
		return err
	}
	r.Backends, r.Notes = bs, append(r.Notes, devNotes...)
	// Out of core the gather stage's copies and scaling run on this many
	// goroutines.
	r.Options.GatherThreads = storeCopyThreads(o, len(bs))
	if r.Store, err = openFeatureStore(o, r.Dir, m, r.Options.GatherThreads, r.Options.RowNormalize); err != nil {
		return err
	}
	if r.Store != nil {
		r.cleanup = append(r.cleanup, func() { r.Store.Close() })
		r.Options.Features = trainer.StoreSource(r.Store)
		if n := r.Store.Notes(); n != "" {
			r.Notes = append(r.Notes, n)
		}
	} else {
		if err := trainer.CheckFits(r.Dir, m); err != nil {
			return err
		}
		if r.Features, err = trainer.LoadFeatures(r.Dir, m); err != nil {
			return err
		}
	}
	if len(bs) > 1 { // one worker per GPU
		if o.Set("workers") && o.Workers != len(bs) {
			return inputerr.Errorf("", "", "--workers %d: --device %s runs one worker per GPU, and --gpus gives %d", o.Workers, o.Device, len(bs))
		}
		r.Options.Workers, r.Options.Backends = len(bs), bs
	}
	return nil
}

// Describe prints what is about to train, and on what.
func (r *Session) Describe(w io.Writer, tr *trainer.Trainer) {
	cfg, m := tr.Config(), r.Graph.Meta
	fmt.Fprintf(w, "training %s on %s (%d vertices, %d training): %d layers, hidden %d, %d parameters, fanouts %s, batch %s; %s\n",
		cfg.Kind, m.Name, m.NumNodes, len(r.Graph.Train), cfg.Layers, cfg.Hidden, tr.Model().NumParams(),
		FormatFanouts(r.Options.Fanouts), batchName(r.Options.BatchSize), kernels.DescribeBackends(r.Backends))
	if r.Store != nil {
		fmt.Fprintf(w, "features out of core: %s\n", r.Store.Describe())
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
}

// Predict probes tr, the session's trainer, to predict its epochs (nil:
// not asked, a resumed run, or interrupted while probing, when the run
// stops at once and writes its checkpoint as any interrupted run does).
func (r *Session) Predict(ctx context.Context, o *RunFlags, tr *trainer.Trainer, progress io.Writer) (*Prediction, error) {
	if o.ProbeBatches == 0 || o.Resume { // a resumed run was predicted when it started
		return nil, nil
	}
	in := PredictInput{ProbeBatches: o.ProbeBatches, MinProbeSeconds: MinProbeSeconds, BLASThreads: o.BLASThreads, Store: r.Store, Dir: r.Dir, Nodes: r.Graph.Meta.NumNodes,
		Seeds: len(r.Graph.Train), Batch: r.Options.BatchSize, Workers: r.Options.Workers, MeasuredPath: o.Measured, MeasureSeconds: o.MeasureSeconds, Progress: progress}
	if o.Set != nil && o.Set("probe-batches") {
		in.MinProbeSeconds = 0 // exactly as many as asked
	}
	in.CPU, _ = r.Backends[0].(*kernels.CPU)
	in.Loader = r.Options.Loader
	switch ms := r.Options.Multistage; {
	case r.Options.Packed != nil:
		in.Sequential = r.Options.Packed
	case ms != nil && ms.Pieces != nil:
		in.Sequential = ms.Pieces
		in.Macros = (ms.Parts + max(ms.MacroParts, 1) - 1) / max(ms.MacroParts, 1)
		in.MacroRows = float64(ms.Pieces.Manifest().Rows) / float64(in.Macros)
	}
	if o.Measured != "" && r.Store != nil {
		var err error
		if in.Measured, err = store.ReadProfile(o.Measured, "--measured"); err != nil {
			return nil, err
		}
	}
	pred, err := Predict(ctx, tr, in)
	switch {
	case err != nil && ctx.Err() != nil:
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("predict: %w", err)
	}
	return pred, nil
}

// batchName is a batch size as train prints it: "full" for 0.
func batchName(b int) string {
	if b == 0 {
		return "full"
	}
	return strconv.Itoa(b)
}

// checkComputeDevices refuses a plan that trains on GPUs when this build
// has no GPU backend, unless --workers runs its layout on CPU workers.
func checkComputeDevices(o *RunFlags, plan *tpc.Plan) error {
	if o.Workers < 0 {
		return inputerr.Errorf("", "", "--workers: %d (valid: >= 1)", o.Workers)
	}
	if plan == nil || plan.Hardware.GPUs == 0 || o.Set("workers") || o.Device != kernels.DeviceCPU {
		return nil
	}
	h := plan.Hardware
	return inputerr.Errorf("", "", "--plan %s: the plan trains on %d x %s GPU and this build has no GPU backend (this machine: %d CPU cores, %s); to run its layout on CPU workers instead, add --workers %d",
		o.Plan, h.GPUs, h.GPUModel, runtime.NumCPU(), kernels.DescribeLocalGPUs(), h.GPUs)
}

// planCache makes a plan of CPU training (recommend --this-machine) hold
// the cache it was predicted with, unless --features or --cache-fraction
// say otherwise: every row in memory, or the hottest share of them with
// the rest read from the dataset's store.
func planCache(o *RunFlags, plan *tpc.Plan) {
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
