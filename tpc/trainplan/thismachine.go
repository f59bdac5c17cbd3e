package trainplan

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/gnnplan/gnnplan/internal/inputerr"
	"github.com/gnnplan/gnnplan/kernels"
	"github.com/gnnplan/gnnplan/profiles"
	"github.com/gnnplan/gnnplan/topology"
	"github.com/gnnplan/gnnplan/tpc"
	"github.com/gnnplan/gnnplan/tpc/presample"
	"github.com/gnnplan/gnnplan/tpc/validate"
	"github.com/gnnplan/gnnplan/trainer"
	"github.com/gnnplan/gnnplan/trainer/dataset"
	"github.com/gnnplan/gnnplan/trainer/sample"
	"github.com/gnnplan/gnnplan/trainer/store"
)

const (
	// PresampleBatches is how many batches ThisMachine pre-samples to size
	// a batch (its distinct input rows and blocks).
	PresampleBatches = 8
	// StepProbeBatches is how many steps its probes time for their rates,
	// after ProbeWarmupBatches untimed.
	StepProbeBatches = 40
)

// MachineInput is what ThisMachine plans: a dataset, a model, and where
// the rates come from.
type MachineInput struct {
	// Dataset is the dataset's directory; Model overrides its workload's
	// model ("": GraphSAGE).
	Dataset string
	Model   string
	// Measured is a profile of this machine (nil: measure it now, the
	// disks under SSDDirs); MeasuredPath names it in messages.
	Measured     *store.MachineProfile
	MeasuredPath string
	SSDDirs      []string
	// Progress receives a line per phase.
	Progress io.Writer
}

// CacheRow is the epoch predicted with the hottest Fraction of the rows
// in memory.
type CacheRow struct {
	Fraction float64
	// HitShare is the share of row reads the cache serves.
	HitShare float64
	Batch    tpc.CPUBatch
	EpochS   float64
	// SamplesPerS is the epoch's training seeds per second.
	SamplesPerS float64
	// Fits says memory holds the cache.
	Fits bool
}

// Estimate is this machine's CPU training of a dataset, predicted at
// several cache sizes.
type Estimate struct {
	Workload tpc.Workload
	Blocks   []tpc.BlockShape
	// InputRows is the distinct rows a batch reads (pre-sampled).
	InputRows float64
	// Profiled are the rates each kernel class ran at alone; Rates those
	// the plan uses, from real steps where the probe ran (ProbeNote says).
	Profiled, Rates tpc.CPURates
	ProbeNote       string
	Disks           int
	// OutOfCoreNote says how the store's copies are priced.
	OutOfCoreNote string
	// FitsFraction is the share of the rows memory holds.
	FitsFraction float64
	HitSource    string
	Rows         []CacheRow
	// Skipped counts the smaller caches left out: they read from disk
	// and no disk was measured.
	Skipped int
	hit     func(float64) float64
	planned tpc.CPUBatch
}

// ThisMachine measures (or reads) this machine's rates, probes in's
// workload on it, and predicts an epoch at caches of 0, 10, 50 and 100%
// of the rows and at the share memory holds.
func ThisMachine(ctx context.Context, in MachineInput) (*Estimate, error) {
	meta, err := dataset.ReadMeta(in.Dataset)
	if err != nil {
		return nil, err
	}
	w := WorkloadFromMeta(in.Dataset, meta)
	if in.Model != "" {
		if w, err = w.WithModel(in.Model); err != nil {
			return nil, err
		}
	}
	g, err := dataset.LoadGraph(in.Dataset)
	if err != nil {
		return nil, err
	}
	defer g.Close()
	e := &Estimate{Workload: w}
	if e.Blocks, e.InputRows, err = presample.Shapes(g, w, PresampleBatches); err != nil {
		return nil, err
	}
	prof, err := machineProfile(ctx, in, w, e.Blocks, e.InputRows)
	if err != nil {
		return nil, err
	}
	e.Disks = len(prof.Disks)
	e.Profiled = CPURates(prof)
	e.Profiled.DiskRowsPerS, e.Profiled.DiskCPURowS = ProfiledDisks(prof)
	if e.Rates, e.ProbeNote, err = probeStepRates(ctx, in, g, w, e.Profiled); err != nil {
		return nil, err
	}
	e.FitsFraction = memoryHolds(w)
	if e.Rates.OutOfCore, e.OutOfCoreNote, err = probeOutOfCore(ctx, in, g, w, e.FitsFraction); err != nil {
		return nil, err
	}
	e.hit, e.HitSource = Hits(in.Dataset, meta.NumNodes, w)
	return e, e.predictCaches()
}

// memoryHolds is the share of w's feature rows memory holds, keeping the
// topology (mapped), a tenth and 2 GiB of working room.
func memoryHolds(w tpc.Workload) float64 {
	avail, ok := trainer.MemAvailable()
	if !ok {
		return 1
	}
	_, topoBytes := w.DatasetBytes()
	room := float64(avail) - float64(avail)/10 - float64(topoBytes) - 2*(1<<30)
	return min(1, max(0, room/(float64(w.FeatureRowBytes())*float64(w.Vertices))))
}

// predictCaches fills e.Rows.
func (e *Estimate) predictCaches() error {
	batches := float64(e.Workload.BatchesPerEpoch())
	fracs := []float64{0, 0.1, 0.5, 1}
	if !slices.Contains(fracs, e.FitsFraction) {
		fracs = append(fracs, e.FitsFraction)
		slices.Sort(fracs)
	}
	for _, f := range fracs {
		hf := e.hit(f)
		if hf < 1 && !(e.Rates.DiskRowsPerS > 0) {
			e.Skipped++ // rows from disk, and no disk measured
			continue
		}
		b, err := tpc.PredictCPU(e.Workload, e.Blocks, e.InputRows, e.Rates, hf)
		if err != nil {
			return err
		}
		if f == e.FitsFraction {
			e.planned = b
		}
		epoch := b.BatchS * batches
		e.Rows = append(e.Rows, CacheRow{Fraction: f, HitShare: hf, Batch: b, EpochS: epoch,
			SamplesPerS: float64(e.Workload.BatchSize) * batches / epoch, Fits: f <= e.FitsFraction})
	}
	return nil
}

// CanPlan says whether a plan at the cache memory holds can be made: it
// must read no row from disk, or the disks must have been measured.
func (e *Estimate) CanPlan() bool {
	return e.hit(e.FitsFraction) >= 1 || e.Rates.DiskRowsPerS > 0
}

// Plan is the CPU plan at the cache memory holds, with how far such plans
// missed the epochs they predicted (validate.Run) and where that was
// measured.
func (e *Estimate) Plan(ctx context.Context) (*tpc.Plan, string, error) {
	m := &topology.Machine{SchemaVersion: 1, Name: "this machine", Source: "recommend --this-machine",
		Nodes: []topology.Node{{ID: "socket0", Kind: topology.KindSocket, Cores: e.Rates.Cores}}}
	cache := tpc.PlanCache{Fraction: e.FitsFraction, HitShare: e.hit(e.FitsFraction), HitSource: e.HitSource}
	p, err := tpc.CPUPlan(e.Workload, m, e.Rates, tpc.CPUShape{Blocks: e.Blocks, InputRows: e.InputRows}, cache, e.planned)
	if err != nil {
		return nil, "", err
	}
	rep, err := validate.Run(ctx)
	if err != nil {
		return nil, "", err
	}
	p.ValidatedError = &rep.Here.ValidatedError
	return p, rep.HereMachine, nil
}

// probeStepRates times StepProbeBatches real steps of w on g, in memory,
// and returns r with the step's rates as the probe measured them
// (tpc.StepRates): the rates the plan is made with. Where the features
// do not fit in memory it returns r as profiled, and says so.
func probeStepRates(ctx context.Context, in MachineInput, g *dataset.Graph, w tpc.Workload, r tpc.CPURates) (tpc.CPURates, string, error) {
	if err := trainer.CheckFits(in.Dataset, g.Meta); err != nil {
		return r, fmt.Sprintf("no probe: %v; the kernels' rates alone price the step", err), nil
	}
	fmt.Fprintf(in.Progress, "recommend: timing %d steps of %s in memory ...\n", StepProbeBatches, w.Model)
	feats, err := trainer.LoadFeatures(in.Dataset, g.Meta)
	if err != nil {
		return r, "", err
	}
	tr, be, err := warmProbeTrainer(ctx, g, w, feats, nil)
	if err != nil {
		return r, "", err
	}
	pr, err := tr.Probe(ctx, StepProbeBatches)
	if err != nil {
		return r, "", err
	}
	k := pr.Kernels
	if k == nil {
		return r, "no probe: the backend does not time its kernels", nil
	}
	work := tpc.StepWork{ProductGFLOP: k.Work.ProductGFLOP, AggregationGB: k.Work.AggregationGB, RowGatherGB: k.Work.RowGatherGB,
		RowGatherRows: k.Work.RowGatherRows, ElementwiseGB: k.Work.ElementwiseGB, OptimizerGB: k.Work.OptimizerGB}
	overhead := pr.BatchSeconds - (k.TotalS() - k.LossS)
	src := fmt.Sprintf("a probe of %d steps of this workload in memory, after %d to warm up (%s)", pr.Batches, ProbeWarmupBatches, be.Name())
	return tpc.StepRates(r, work, k.ProductsS, k.AggregationS, k.RowGatherS, k.ElementwiseS, k.OptimizerS, overhead, src),
		fmt.Sprintf("rates in the step: %s; the profile's are each kernel timed alone, cold", src), nil
}

// probeOutOfCore times the workload's pipeline through the dataset's
// feature store, every row served from memory (the gather stage copying
// them beside the step, at the cache memory holds), as a run's own
// prediction does, with the products' thread count it would pick: the
// plan's rates out of core. No store, no probe: nil and why.
func probeOutOfCore(ctx context.Context, in MachineInput, g *dataset.Graph, w tpc.Workload, fraction float64) (*tpc.OutOfCoreRates, string, error) {
	if _, err := os.Stat(filepath.Join(in.Dataset, store.ManifestFile)); err != nil {
		return nil, fmt.Sprintf("no feature store in %s (gnnplan place --materialize writes one): the store's copies are priced at the step's row-gather rate", in.Dataset), nil
	}
	opt := store.Options{}
	if hot, err := sample.ReadHotness(filepath.Join(in.Dataset, sample.HotnessFile), g.Meta.NumNodes); err == nil {
		opt.Cache = &store.CacheOverride{Fraction: fraction, Hotness: hot}
	}
	src, err := store.Open(in.Dataset, opt)
	if err != nil {
		return nil, "", err
	}
	defer src.Close()
	fmt.Fprintf(in.Progress, "recommend: timing %d batches of %s through the feature store, every row copied from memory ...\n", StepProbeBatches, w.Model)
	tr, be, err := warmProbeTrainer(ctx, g, w, nil, src)
	if err != nil {
		return nil, "", err
	}
	probe := func(ctx context.Context) (trainer.Probe, error) { return tr.Probe(ctx, StepProbeBatches) }
	first, err := probe(ctx)
	if err != nil {
		return nil, "", err
	}
	pr, ch, err := ChooseBLASThreads(ctx, in.Progress, probe, be, first, 1)
	if err != nil {
		return nil, "", err
	}
	if !(pr.InputRows > 0) || !(pr.BatchSeconds > 0) {
		return nil, "the probe through the store read no rows", nil
	}
	r := &tpc.OutOfCoreRates{ComputeS: pr.BatchSeconds, CopyRowS: CopyRowSeconds(pr), InputRows: pr.InputRows,
		Source: fmt.Sprintf("a probe of %d batches through the feature store at cache %.0f%%, every row copied from memory", pr.Batches, 100*src.CachedFraction())}
	threads := be.BLASThreads()
	if ch != nil {
		r.BLASThreads, threads = ch.Threads, ch.Threads
	}
	return r, fmt.Sprintf("%s: %.1f ms a batch with the gather stage copying every row (%.2f us a row), products on %s",
		r.Source, 1000*r.ComputeS, 1e6*r.CopyRowS, ThreadsName(threads)), nil
}

// warmProbeTrainer builds a trainer of w on g, as train --plan would train
// it, on the CPU backend, with the features in memory or from src, and
// runs a first, shorter probe that warms it up (the features' pages, the
// step's buffers growing) and is dropped.
func warmProbeTrainer(ctx context.Context, g *dataset.Graph, w tpc.Workload, feats []float32, src *store.Store) (*trainer.Trainer, *kernels.CPU, error) {
	to, err := Settings(Flags{}, &tpc.Plan{Workload: w})
	if err != nil {
		return nil, nil, err
	}
	to.Epochs, to.EvalEvery = 1, 0
	if src != nil {
		to.Features = trainer.StoreSource(src)
	}
	be, err := kernels.NewCPU(kernels.CPUOptions{})
	if err != nil {
		return nil, nil, err
	}
	tr, err := trainer.New(be, g, feats, to)
	if err != nil {
		return nil, nil, err
	}
	if _, err := tr.Probe(ctx, ProbeWarmupBatches); err != nil {
		return nil, nil, err
	}
	return tr, be, nil
}

// machineProfile is in.Measured, checked against w, or this machine
// measured now: the compute rates at w's shapes, and the SSDDirs' disks
// at its row size.
func machineProfile(ctx context.Context, in MachineInput, w tpc.Workload, blocks []tpc.BlockShape, rows float64) (*store.MachineProfile, error) {
	rowBytes := int(w.FeatureRowBytes())
	if p := in.Measured; p != nil {
		if p.Compute == nil {
			return nil, inputerr.Errorf("", "", "--measured %s: no compute rates in it (profiled by an older gnnplan): run gnnplan profile --save again", in.MeasuredPath)
		}
		if len(p.Disks) > 0 && p.FeatureBytes != rowBytes {
			return nil, inputerr.Errorf("", "", "--measured %s: profiled at %d-byte reads, the dataset's rows are %d bytes (gnnplan profile --feature-bytes %d)", in.MeasuredPath, p.FeatureBytes, rowBytes, rowBytes)
		}
		return p, nil
	}
	fmt.Fprintln(in.Progress, "recommend: no --measured profile: measuring this machine (gnnplan profile --save keeps one)")
	p, err := store.Profile(ctx, store.ProfileOptions{Dirs: in.SSDDirs, FeatureBytes: rowBytes, Depths: []int{store.DefaultQueueDepth},
		Duration: 2 * time.Second, FileBytes: 1 << 30, Engine: "auto"}, in.Progress)
	if err != nil {
		return nil, err
	}
	shapes, err := WorkloadShapes(w, blocks, rows)
	if err != nil {
		return nil, err
	}
	shapes.Dataset = in.Dataset
	if p.Compute, err = MeasureCompute(ctx, shapes, in.Progress); err != nil {
		return nil, err
	}
	return p, nil
}

// CPURates are a profile's CPU rates for the epoch-time model: the
// layer's product mix where it was measured, else the one GEMM's rate.
func CPURates(p *store.MachineProfile) tpc.CPURates {
	c := p.Compute
	r := tpc.CPURates{Cores: c.Cores, GEMMGFLOPS: c.GEMMGFLOPS, SamplerEdgesPerSPerCore: c.SamplerEdgesPerSPerCore, MemcpyGBps: p.MemcpyGBps,
		AggregationGBps: c.AggregationGBps, RowGatherGBps: c.RowGatherGBps, StreamGBps: c.StreamGBps}
	if c.LayerGEMMGFLOPS > 0 {
		r.GEMMGFLOPS = c.LayerGEMMGFLOPS
	}
	return r
}

// Hits returns the share of row reads served from memory when the
// hottest fraction f of the rows is cached: from place's measured
// hotness when the dataset has it, else the power law of the model's
// assumptions; and where that came from.
func Hits(dir string, n int64, w tpc.Workload) (func(f float64) float64, string) {
	a := tpc.DefaultAssumptions()
	hot, err := sample.ReadHotness(filepath.Join(dir, sample.HotnessFile), n)
	if err != nil {
		return func(f float64) float64 { return tpc.HitShare(a, f) }, fmt.Sprintf("the power law x^%.2f (no %s: run gnnplan place to measure it)", a.SkewExponent, sample.HotnessFile)
	}
	a.HotnessCurve = tpc.HotnessCurve(hot, tpc.HotnessCurvePoints)
	if a.HotnessCurve == nil { // no access counted: every row alike
		a.HotnessCurve = []float64{0, 1}
	}
	return func(f float64) float64 { return tpc.HitShare(a, f) }, "the hottest rows by place's measured hotness (" + sample.HotnessFile + ")"
}

// WorkloadFromMeta sizes a workload from a dataset's meta.json with the
// papers' GraphSAGE settings: hidden 256, fanouts 25,10, batches of 1024
// seeds (fewer when the training split is smaller).
func WorkloadFromMeta(dir string, m dataset.Meta) tpc.Workload {
	w := tpc.Workload{Name: m.Name, Vertices: m.NumNodes, Edges: m.NumEdges, FeatureDim: m.FeatureDim, FeatureBytes: 4,
		Classes: max(m.NumClasses, 1), Model: tpc.ModelGraphSAGE, Hidden: 256, Heads: 1, Fanouts: []int{25, 10}, BatchSize: 1024,
		Source: "dataset " + dir}
	if w.Name == "" {
		w.Name = dir
	}
	w.TrainFraction = 0.01
	if m.NumTrain > 0 {
		w.TrainFraction = float64(m.NumTrain) / float64(m.NumNodes)
		w.BatchSize = int(min(int64(1024), m.NumTrain))
	}
	return w
}

// ApplyProfile puts a profile of this machine (gnnplan profile --save,
// read from path) into a request for hardware to buy: its SSDs' measured
// rate in place of the catalog's, its memory copy rate, and its GPUs'
// measured rates by catalog model. It returns notes for the user.
func ApplyProfile(req *tpc.Request, p *store.MachineProfile, path string) ([]string, error) {
	var notes []string
	switch {
	case math.IsNaN(p.SSDGBps) || p.SSDGBps < 0 || math.IsInf(p.SSDGBps, 0):
		return nil, &inputerr.Error{Path: path, Field: "ssd_GBps", Msg: fmt.Sprintf("%v (want a measured rate above 0: gnnplan profile --ssd-dir DIR --save FILE)", p.SSDGBps)}
	case p.SSDGBps == 0:
		notes = append(notes, "the profile measured no SSD; the catalog's SSD rates are used")
	}
	req.MeasuredSSDGBps = p.SSDGBps
	if p.MemcpyGBps > 0 {
		req.Assumptions.HostMemGBps = p.MemcpyGBps
	}
	gpus, gpuNotes := measuredGPUs(p.GPUs, req.Catalog)
	if len(gpus) > 0 {
		req.Assumptions.MeasuredGPUs = gpus
	}
	return append(notes, gpuNotes...), nil
}

// measuredGPUs turns a profile's GPUs into the TPC model's measured
// figures by catalog model (the mean over the GPUs of one model), and
// notes the GPUs no catalog model describes.
func measuredGPUs(ps []store.GPUProfile, c *profiles.Catalog) (map[string]tpc.MeasuredGPU, []string) {
	out := map[string]tpc.MeasuredGPU{}
	count := map[string]int{}
	var notes []string
	for _, p := range ps {
		g, ok := c.GPUForDriverName(p.Name, p.MemoryGiB)
		if !ok {
			notes = append(notes, fmt.Sprintf("GPU %d (%s, %.1f GiB) matches no catalog GPU: its rates are not used (add its model with --catalog)", p.Ordinal, p.Name, p.MemoryGiB))
			continue
		}
		m := out[g.Key]
		m.Name = p.Name
		m.GEMMTFLOPS += p.GEMMGFLOPS / 1000
		m.H2DGBps += p.H2DPinnedGBps
		out[g.Key] = m
		count[g.Key]++
	}
	for k, m := range out {
		n := float64(count[k])
		m.GEMMTFLOPS /= n
		m.H2DGBps /= n
		out[k] = m
	}
	return out, notes
}

// DatasetWorkload is the workload of the dataset in dir (WorkloadFromMeta)
// and the access skew place measured there (tpc.HotnessCurve; nil where
// place has not run, leaving the model's power law).
func DatasetWorkload(dir string) (tpc.Workload, []float64, error) {
	meta, err := dataset.ReadMeta(dir)
	if err != nil {
		return tpc.Workload{}, nil, err
	}
	w := WorkloadFromMeta(dir, meta)
	hotPath := filepath.Join(dir, sample.HotnessFile)
	if _, err := os.Stat(hotPath); err != nil {
		return w, nil, nil
	}
	hot, err := sample.ReadHotness(hotPath, meta.NumNodes)
	if err != nil {
		return w, nil, err
	}
	return w, tpc.HotnessCurve(hot, tpc.HotnessCurvePoints), nil
}
