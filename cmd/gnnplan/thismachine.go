package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gnnplan/gnnplan/cmd/gnnplan/internal/textout"
	"github.com/gnnplan/gnnplan/kernels"
	"github.com/gnnplan/gnnplan/topology"
	"github.com/gnnplan/gnnplan/tpc"
	"github.com/gnnplan/gnnplan/tpc/presample"
	"github.com/gnnplan/gnnplan/tpc/validate"
	"github.com/gnnplan/gnnplan/trainer"
	"github.com/gnnplan/gnnplan/trainer/dataset"
	"github.com/gnnplan/gnnplan/trainer/sample"
	"github.com/gnnplan/gnnplan/trainer/store"
)

// thisMachineBatches is how many batches --this-machine pre-samples to
// size a batch (its distinct input rows and blocks).
const thisMachineBatches = 8

// runThisMachine plans the machine recommend runs on: CPU workers and the
// disks profiled, for the dataset, at several cache sizes, with rates
// from --measured or measured now.
func runThisMachine(ctx context.Context, o *recommendOptions) error {
	h, err := o.outputs()
	if err != nil {
		return err
	}
	switch {
	case o.Dataset == "":
		return usageErrorf("--this-machine plans a dataset on this machine: give --dataset DIR")
	case o.PlotPath != "":
		return usageErrorf("--this-machine prints this machine's predictions at each cache size; --plot draws plans of machines to buy")
	}
	meta, err := dataset.ReadMeta(o.Dataset)
	if err != nil {
		return err
	}
	w := workloadFromMeta(o.Dataset, meta)
	if o.Model != "" {
		if w, err = w.WithModel(o.Model); err != nil {
			return err
		}
	}
	g, err := dataset.LoadGraph(o.Dataset)
	if err != nil {
		return err
	}
	defer g.Close()
	blocks, rows, err := presample.Shapes(g, w, thisMachineBatches)
	if err != nil {
		return err
	}
	prof, err := thisMachineProfile(ctx, o, w, blocks, rows)
	if err != nil {
		return err
	}
	rates := cpuRates(prof)
	rates.DiskRowsPerS, rates.DiskCPURowS = profiledDisks(prof)
	profiled := rates
	rates, probeNote, err := probeStepRates(ctx, o, g, w, rates)
	if err != nil {
		return err
	}
	_, topoBytes := w.DatasetBytes()
	fits := 1.0
	if avail, ok := trainer.MemAvailable(); ok {
		// Keep the topology (mapped), a tenth and 2 GiB of working room.
		room := float64(avail) - float64(avail)/10 - float64(topoBytes) - 2*(1<<30)
		fits = min(1, max(0, room/(float64(w.FeatureRowBytes())*float64(w.Vertices))))
	}
	var oocNote string
	if rates.OutOfCore, oocNote, err = probeOutOfCore(ctx, o, g, w, fits); err != nil {
		return err
	}
	hit, hitSource := thisMachineHits(o.Dataset, meta.NumNodes, w)
	out := h
	fmt.Fprintf(out, "%s %s on this machine: %d CPU cores, %d disk(s) %.0f rows/s\n",
		w.Name, w.Model, rates.Cores, len(prof.Disks), rates.DiskRowsPerS)
	if err := printStepRates(out, profiled, rates, probeNote); err != nil {
		return err
	}
	fmt.Fprintf(out, "out of core: %s\n", oocNote)
	fmt.Fprintf(out, "a batch of %d seeds reads %.0f distinct rows of %d bytes (pre-sampled: %d batches); rows from memory: %s\n",
		w.BatchSize, rows, w.FeatureRowBytes(), thisMachineBatches, hitSource)
	batches := float64(w.BatchesPerEpoch())
	fracs := []float64{0, 0.1, 0.5, 1}
	if !slices.Contains(fracs, fits) {
		fracs = append(fracs, fits)
		slices.Sort(fracs)
	}
	t := textout.NewTable(textout.Column{Name: "CACHE", Elastic: true, Wrap: true}, num("FROM MEMORY"), num("SAMPLE ms"), num("PRODUCTS ms"), num("MEMORY ms"), num("DISK ms"),
		num("BATCH ms"), num("EPOCH s"), opt(num("SAMPLES/s")), opt(col("BOUND")), opt(col("FITS IN MEMORY")))
	var planned tpc.CPUBatch // at the cache memory holds
	skipped := 0
	for _, f := range fracs {
		hf := hit(f)
		if hf < 1 && !(rates.DiskRowsPerS > 0) {
			skipped++ // rows from disk, and no disk measured
			continue
		}
		b, err := tpc.PredictCPU(w, blocks, rows, rates, hf)
		if err != nil {
			return err
		}
		if f == fits {
			planned = b
		}
		fit := "yes"
		if f > fits {
			fit = "no"
		}
		name := fmt.Sprintf("%.0f%%", 100*f)
		if f == fits {
			name += " (what memory holds)"
		}
		epoch := b.BatchS * batches
		t.Row(name, fmt.Sprintf("%.1f%%", 100*hf), ms(b.SampleS), ms(b.ComputeS), ms(b.MemoryS), ms(b.DiskS+b.CopyS), ms(b.BatchS),
			fmt.Sprintf("%.1f", epoch), fmt.Sprintf("%.0f", float64(w.BatchSize)*batches/epoch), b.Bound, fit)
	}
	if err := h.write(t); err != nil {
		return err
	}
	if skipped > 0 {
		fmt.Fprintf(out, "%d smaller cache(s) left out: they read rows from disk, and no disk was measured (--ssd-dir DIR, or --measured with a profile of the disks)\n", skipped)
	}
	if o.wantPlan() {
		if hit(fits) < 1 && !(rates.DiskRowsPerS > 0) {
			return usageErrorf("--save %s: memory holds %.0f%% of %s's rows, so training reads the rest from disk, and no disk was measured: give --ssd-dir DIR on the disk that will hold them", o.Save, 100*fits, o.Dataset)
		}
		m := &topology.Machine{SchemaVersion: 1, Name: "this machine", Source: "recommend --this-machine",
			Nodes: []topology.Node{{ID: "socket0", Kind: topology.KindSocket, Cores: rates.Cores}}}
		p, err := tpc.CPUPlan(w, m, rates, tpc.CPUShape{Blocks: blocks, InputRows: rows}, tpc.PlanCache{Fraction: fits, HitShare: hit(fits), HitSource: hitSource}, planned)
		if err != nil {
			return err
		}
		rep, err := validate.Run(ctx)
		if err != nil {
			return err
		}
		p.ValidatedError = &rep.Here.ValidatedError
		if err := o.emitPlan(out, p); err != nil {
			return err
		}
		name := o.Save
		if name == "" {
			name = "plan.json"
		} else {
			fmt.Fprintf(out, "wrote %s: ", name)
		}
		fmt.Fprintf(out, "%s at cache %.0f%%, predicted %s an epoch; train it:\n  gnnplan train --plan %s --dataset %s\n",
			w.Model, 100*fits, fmtSeconds(p.PredictedEpochS), name, o.Dataset)
		fmt.Fprintf(out, "how far to trust it: CPU plans made this way missed the epochs train --plan measured by %s, on %s (gnnplan validate)\n",
			p.ValidatedError, rep.HereMachine)
		return h.Flush()
	}
	fmt.Fprintf(out, "train it (out of core: place and materialize a layout first, then --cache-fraction F instead of --features memory sets the cache):\n  gnnplan train --dataset %s %s --features memory\n",
		o.Dataset, strings.Join(w.TrainFlags(), " "))
	return h.Flush()
}

// thisMachineProbeBatches is how many steps the probe of the workload
// times for its rates, after probeWarmupBatches untimed.
const thisMachineProbeBatches = 40

// probeWarmupBatches is how many batches a probe runs untimed first, here
// and in train's prediction: the first batches of a trainer pay for its
// buffers' first pages and the caches' first touches (out of core, a
// 20-batch probe without them timed the store's copies at 0.83 us a row,
// one of 60 at 0.55).
const probeWarmupBatches = 10

// probeStepRates times thisMachineProbeBatches real steps of w on g, in
// memory, and returns r with the step's rates as the probe measured them
// (tpc.StepRates): the rates the plan is made with. Where the features
// do not fit in memory it returns r as profiled, and says so.
func probeStepRates(ctx context.Context, o *recommendOptions, g *dataset.Graph, w tpc.Workload, r tpc.CPURates) (tpc.CPURates, string, error) {
	if err := trainer.CheckFits(o.Dataset, g.Meta); err != nil {
		return r, fmt.Sprintf("no probe: %v; the kernels' rates alone price the step", err), nil
	}
	fmt.Fprintf(o.IO.Err, "recommend: timing %d steps of %s in memory ...\n", thisMachineProbeBatches, w.Model)
	feats, err := trainer.LoadFeatures(o.Dataset, g.Meta)
	if err != nil {
		return r, "", err
	}
	tr, be, err := warmProbeTrainer(ctx, g, w, feats, nil)
	if err != nil {
		return r, "", err
	}
	pr, err := tr.Probe(ctx, thisMachineProbeBatches)
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
	src := fmt.Sprintf("a probe of %d steps of this workload in memory, after %d to warm up (%s)", pr.Batches, probeWarmupBatches, be.Name())
	return tpc.StepRates(r, work, k.ProductsS, k.AggregationS, k.RowGatherS, k.ElementwiseS, k.OptimizerS, overhead, src),
		fmt.Sprintf("rates in the step: %s; the profile's are each kernel timed alone, cold", src), nil
}

// probeOutOfCore times the workload's pipeline through the dataset's
// feature store, every row served from memory (the gather stage copying
// them beside the step, at the cache memory holds), as train's own
// prediction does, with the products' thread count train would pick: the
// plan's rates out of core. No store, no probe: nil and why.
func probeOutOfCore(ctx context.Context, o *recommendOptions, g *dataset.Graph, w tpc.Workload, fraction float64) (*tpc.OutOfCoreRates, string, error) {
	if _, err := os.Stat(filepath.Join(o.Dataset, store.ManifestFile)); err != nil {
		return nil, fmt.Sprintf("no feature store in %s (gnnplan place --materialize writes one): the store's copies are priced at the step's row-gather rate", o.Dataset), nil
	}
	opt := store.Options{}
	if hot, err := sample.ReadHotness(filepath.Join(o.Dataset, sample.HotnessFile), g.Meta.NumNodes); err == nil {
		opt.Cache = &store.CacheOverride{Fraction: fraction, Hotness: hot}
	}
	src, err := store.Open(o.Dataset, opt)
	if err != nil {
		return nil, "", err
	}
	defer src.Close()
	fmt.Fprintf(o.IO.Err, "recommend: timing %d batches of %s through the feature store, every row copied from memory ...\n", thisMachineProbeBatches, w.Model)
	tr, be, err := warmProbeTrainer(ctx, g, w, nil, src)
	if err != nil {
		return nil, "", err
	}
	probe := func(ctx context.Context) (trainer.Probe, error) { return tr.Probe(ctx, thisMachineProbeBatches) }
	first, err := probe(ctx)
	if err != nil {
		return nil, "", err
	}
	pr, ch, err := chooseBLASThreads(ctx, o.IO.Err, probe, be, first, 1)
	if err != nil {
		return nil, "", err
	}
	if !(pr.InputRows > 0) || !(pr.BatchSeconds > 0) {
		return nil, "the probe through the store read no rows", nil
	}
	r := &tpc.OutOfCoreRates{ComputeS: pr.BatchSeconds, CopyRowS: copyRowSeconds(pr), InputRows: pr.InputRows,
		Source: fmt.Sprintf("a probe of %d batches through the feature store at cache %.0f%%, every row copied from memory", pr.Batches, 100*src.CachedFraction())}
	threads := be.BLASThreads()
	if ch != nil {
		r.BLASThreads, threads = ch.Threads, ch.Threads
	}
	return r, fmt.Sprintf("%s: %s a batch with the gather stage copying every row (%.2f us a row), products on %s",
		r.Source, ms(r.ComputeS)+" ms", 1e6*r.CopyRowS, threadsName(threads)), nil
}

// warmProbeTrainer builds a trainer of w on g, as train --plan would train
// it, on the CPU backend, with the features in memory or from src, and
// runs a first, shorter probe that warms it up (the features' pages, the
// step's buffers growing) and is dropped.
func warmProbeTrainer(ctx context.Context, g *dataset.Graph, w tpc.Workload, feats []float32, src *store.Store) (*trainer.Trainer, *kernels.CPU, error) {
	to, err := trainSettings(&trainOptions{Set: func(string) bool { return false }}, &tpc.Plan{Workload: w})
	if err != nil {
		return nil, nil, err
	}
	to.Epochs, to.EvalEvery = 1, 0
	if src != nil {
		to.Features = src
	}
	be, err := kernels.NewCPU(kernels.CPUOptions{})
	if err != nil {
		return nil, nil, err
	}
	tr, err := trainer.New(be, g, feats, to)
	if err != nil {
		return nil, nil, err
	}
	if _, err := tr.Probe(ctx, probeWarmupBatches); err != nil {
		return nil, nil, err
	}
	return tr, be, nil
}

// printStepRates shows each class's rate timed alone (the profile) and
// in real steps (the probe), which the plan uses.
func printStepRates(w *human, profiled, used tpc.CPURates, note string) error {
	t := textout.NewTable(col("KERNELS"), num("TIMED ALONE"), num("IN THE STEP (PLANNED WITH)"))
	rows := [][3]string{
		{"products", fmt.Sprintf("%.1f GFLOP/s", profiled.GEMMGFLOPS), fmt.Sprintf("%.1f GFLOP/s", used.GEMMGFLOPS)},
		{"aggregation", fmt.Sprintf("%.1f GB/s", profiled.Rate(profiled.AggregationGBps)), fmt.Sprintf("%.1f GB/s", used.Rate(used.AggregationGBps))},
		{"row gather", fmt.Sprintf("%.1f GB/s", profiled.Rate(profiled.RowGatherGBps)), fmt.Sprintf("%.1f GB/s", used.Rate(used.RowGatherGBps))},
		{"in-order passes", fmt.Sprintf("%.1f GB/s", profiled.Rate(profiled.StreamGBps)), fmt.Sprintf("%.1f GB/s", used.Rate(used.StreamGBps))},
		{"step overhead", "-", ms(used.StepOverheadS) + " ms"},
	}
	for _, r := range rows {
		t.Row(r[0], r[1], r[2])
	}
	if err := w.write(t); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, note)
	return err
}

func ms(s float64) string { return fmt.Sprintf("%.1f", 1000*s) }

// thisMachineProfile reads --measured, or measures this machine now: the
// compute rates, and the --ssd-dir disks at the row size.
func thisMachineProfile(ctx context.Context, o *recommendOptions, w tpc.Workload, blocks []tpc.BlockShape, rows float64) (*store.MachineProfile, error) {
	rowBytes := int(w.FeatureRowBytes())
	if o.Measured != "" {
		p, err := loadMeasured(o.Measured)
		if err != nil {
			return nil, err
		}
		if p.Compute == nil {
			return nil, usageErrorf("--measured %s: no compute rates in it (profiled by an older gnnplan): run gnnplan profile --save again", o.Measured)
		}
		if len(p.Disks) > 0 && p.FeatureBytes != rowBytes {
			return nil, usageErrorf("--measured %s: profiled at %d-byte reads, the dataset's rows are %d bytes (gnnplan profile --feature-bytes %d)", o.Measured, p.FeatureBytes, rowBytes, rowBytes)
		}
		return p, nil
	}
	fmt.Fprintln(o.IO.Err, "recommend: no --measured profile: measuring this machine (gnnplan profile --save keeps one)")
	p, err := store.Profile(ctx, store.ProfileOptions{Dirs: o.SSDDirs, FeatureBytes: rowBytes, Depths: []int{store.DefaultQueueDepth},
		Duration: 2 * time.Second, FileBytes: 1 << 30, Engine: "auto"}, o.IO.Err)
	if err != nil {
		return nil, err
	}
	// The kernels at this workload's shapes, those of its input layer: its
	// products (GraphSAGE's stack of a row and its mean), its input rows
	// from a table the size of its features, its aggregation.
	in := w.FeatureDim
	if w.Model == tpc.ModelGraphSAGE {
		in *= 2
	}
	outer := blocks[len(blocks)-1]
	work, err := w.StepWork(blocks, rows)
	if err != nil {
		return nil, err
	}
	cols, table, fanout := w.OuterAggregation(blocks, rows)
	po := &profileOptions{IO: o.IO, Dataset: o.Dataset, Layer: [3]int{max(1024, int(outer.Dst)), in, w.Hidden * max(w.Heads, 1)},
		RowBytes: rowBytes, TableBytes: int64(rowBytes) * w.Vertices, GatherRows: max(1024, int(work.RowGatherRows)),
		Aggregation: [4]int{cols, int(table), max(1024, int(outer.Dst)), fanout}}
	if p.Compute, err = profileCompute(ctx, po); err != nil {
		return nil, err
	}
	return p, nil
}

// cpuRates are a profile's CPU rates for the epoch-time model: the
// layer's product mix where it was measured, else the one GEMM's rate.
func cpuRates(p *store.MachineProfile) tpc.CPURates {
	c := p.Compute
	r := tpc.CPURates{Cores: c.Cores, GEMMGFLOPS: c.GEMMGFLOPS, SamplerEdgesPerSPerCore: c.SamplerEdgesPerSPerCore, MemcpyGBps: p.MemcpyGBps,
		AggregationGBps: c.AggregationGBps, RowGatherGBps: c.RowGatherGBps, StreamGBps: c.StreamGBps}
	if c.LayerGEMMGFLOPS > 0 {
		r.GEMMGFLOPS = c.LayerGEMMGFLOPS
	}
	return r
}

// thisMachineHits returns the share of row reads served from memory when
// the hottest fraction f of the rows is cached: from place's measured
// hotness when the dataset has it, else the power law of the model's
// assumptions.
func thisMachineHits(dir string, n int64, w tpc.Workload) (func(f float64) float64, string) {
	hot, err := sample.ReadHotness(filepath.Join(dir, sample.HotnessFile), n)
	if err != nil {
		a := tpc.DefaultAssumptions()
		return func(f float64) float64 { return tpc.HitShare(a, f) }, fmt.Sprintf("the power law x^%.2f (no %s: run gnnplan place to measure it)", a.SkewExponent, sample.HotnessFile)
	}
	a := tpc.DefaultAssumptions()
	a.HotnessCurve = tpc.HotnessCurve(hot, tpc.HotnessCurvePoints)
	if a.HotnessCurve == nil { // no access counted: every row alike
		a.HotnessCurve = []float64{0, 1}
	}
	return func(f float64) float64 {
		return tpc.HitShare(a, f)
	}, "the hottest rows by place's measured hotness (" + sample.HotnessFile + ")"
}
