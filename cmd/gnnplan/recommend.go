package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gnnplan/gnnplan/internal/fsutil"

	"github.com/spf13/cobra"

	"github.com/gnnplan/gnnplan/cmd/gnnplan/internal/textout"
	"github.com/gnnplan/gnnplan/maxflow"
	"github.com/gnnplan/gnnplan/profiles"
	"github.com/gnnplan/gnnplan/topology"
	"github.com/gnnplan/gnnplan/tpc"
	"github.com/gnnplan/gnnplan/tpc/validate"
	"github.com/gnnplan/gnnplan/trainer/dataset"
	"github.com/gnnplan/gnnplan/trainer/sample"
)

// recommendOptions holds the recommend command's flags.
type recommendOptions struct {
	IO        *deps
	BudgetUSD float64
	Profile   string
	Machine   string
	Workload  string
	Dataset   string
	Model     string
	GPUModels []string
	SSDModels []string
	GPUs      string
	SSDs      string
	Catalog   string
	Measured  string
	// InstalledGPU is the catalog key of the machine's GPUs where its
	// file does not name them.
	InstalledGPU string
	CPUCacheGiB  float64
	Output       string
	Save         string
	PlotPath     string
	Top          int
	// ThisMachine plans the machine recommend runs on (CPU workers, the
	// SSDDirs' disks) instead of hardware to buy.
	ThisMachine bool
	SSDDirs     []string

	Profiles func(name string) (*topology.Machine, error)
	Import   func(ctx context.Context, path string) (*topology.Machine, error)
}

const (
	defaultProfile  = "moment-b"
	defaultWorkload = "igb-hom"
)

func newRecommendCmd(d *deps, runF func(context.Context, *recommendOptions) error) *cobra.Command {
	opts := &recommendOptions{IO: d, Profiles: profiles.Machine, Import: topology.ImportContext}
	var workloads []string
	for _, w := range tpc.BuiltinWorkloads() {
		workloads = append(workloads, w.Name)
	}
	cmd := &cobra.Command{
		Use:   "recommend",
		Short: "Recommend which GPUs and SSDs to buy for a budget, where to put them, and why",
		Long: `Price every GPU model and count, SSD model and count that fits the budget and
the machine's free slots; place each with the max-flow model (every distinct
placement); predict throughput with T_batch = max(T_io, T_train) and rank by
TPC, training samples per second per dollar of 5-year TCO (Hyperion, ICDE'25,
section III-C). Prints the ranked plans, the fastest plan within budget, what
binds the best one and what the next dollar should buy, and the distributed
in-memory alternative.

With no flags it plans Moment's machine B (` + defaultProfile + `) for GraphSAGE on
IGB-HOM with a $80,000 budget. Workloads: ` + strings.Join(workloads, ", ") + `.`,
		Example: `  gnnplan recommend --budget 80000
  gnnplan recommend --budget 60000 --profile hyperion-a --gpu-model a100-80gb-pcie --save plan.json
  gnnplan recommend --budget 80000 -o json | jq .predicted_epoch_s
  gnnplan recommend --machine machine.json --workload ogbn-papers100M --model gat --plot tpc.svg`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.Profile != "" && opts.Machine != "" {
				return usageErrorf("--profile and --machine: give at most one")
			}
			if opts.Dataset != "" && cmd.Flags().Changed("workload") {
				return usageErrorf("--workload and --dataset: give at most one")
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			if opts.ThisMachine {
				return runThisMachine(cmd.Context(), opts)
			}
			return runRecommend(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.Float64Var(&opts.BudgetUSD, "budget", 80000, "budget in USD for one machine's 5-year TCO (host, GPUs, SSDs, electricity)")
	f.StringVar(&opts.Profile, "profile", "", "an embedded machine ("+strings.Join(profiles.MachineNames(), ", ")+"); default "+defaultProfile)
	f.StringVar(&opts.Machine, "machine", "", "a machine file (gnnplan JSON, NCCL or hwloc XML, nvidia-smi topo -m output) whose slots to fill")
	f.StringVar(&opts.Workload, "workload", defaultWorkload, "a built-in workload ("+strings.Join(workloads, ", ")+")")
	f.StringVar(&opts.Dataset, "dataset", "", "size the workload from a dataset directory (meta.json) instead of --workload")
	f.StringVar(&opts.Model, "model", "", "GNN model: graphsage, gcn or gat (default: the workload's)")
	f.StringSliceVar(&opts.GPUModels, "gpu-model", nil, "only these GPU models (catalog keys, comma-separated)")
	f.StringSliceVar(&opts.SSDModels, "ssd-model", nil, "only these SSD models (catalog keys, comma-separated)")
	f.StringVar(&opts.GPUs, "gpus", "", "GPU count or range, e.g. 2 or 1-4 (default: 1 to as many as the machine's slots take)")
	f.StringVar(&opts.SSDs, "ssds", "", "SSD count or range, e.g. 8 or 0-12 (default: 0 to as many as the free slots take)")
	f.StringVar(&opts.Catalog, "catalog", "", "a catalog file (JSON or YAML) whose entries override the built-in prices and rates")
	f.StringVar(&opts.Measured, "measured", "", "a profile from `gnnplan profile --save`: its measured SSD and memory rates replace catalog figures")
	f.StringVarP(&opts.Output, "output", "o", "table", "output format: table, wide, json (the best plan's JSON, as --save writes it)")
	f.StringVar(&opts.Save, "save", "", "also write the best plan to this file (plan.json, for train, place and report)")
	f.Float64Var(&opts.CPUCacheGiB, "cpu-cache-gib", 0, "fix host memory's feature cache at this many GiB instead of deciding it (0: decide)")
	f.StringVar(&opts.InstalledGPU, "installed-gpu", "", "catalog key of the installed GPUs, where the machine file does not name them")
	f.StringVar(&opts.PlotPath, "plot", "", "draw TPC and throughput against SSD count to this SVG file")
	f.IntVar(&opts.Top, "top", 10, "how many plans to list")
	f.BoolVar(&opts.ThisMachine, "this-machine", false, "plan CPU training on this machine and its disks for --dataset (rates from --measured, or measured now)")
	f.StringArrayVar(&opts.SSDDirs, "ssd-dir", nil, "with --this-machine and no --measured: a directory on a disk to measure (repeatable)")
	return cmd
}

// workloadFromMeta sizes a workload from a dataset's meta.json with the
// papers' model and sampling (GraphSAGE, hidden 256, fanouts 25,10) and a
// batch of 1024 seeds, or fewer when the training split is smaller.
func workloadFromMeta(dir string, m dataset.Meta) tpc.Workload {
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

// parseRange reads "2" or "1-4"; counts below least are refused.
func parseRange(flag, s string, least int) (lo, hi int, err error) {
	a, b, isRange := strings.Cut(strings.TrimSpace(s), "-")
	lo, err1 := strconv.Atoi(a)
	hi = lo
	var err2 error
	if isRange {
		hi, err2 = strconv.Atoi(b)
	}
	if err1 != nil || err2 != nil || lo < least || hi < lo || hi > 256 {
		return 0, 0, usageErrorf("%s: %q (want a count like 2 or a range like 1-4)", flag, s)
	}
	return lo, hi, nil
}

func (o *recommendOptions) request(ctx context.Context) (tpc.Request, error) {
	req := tpc.Request{BudgetUSD: o.BudgetUSD, GPUModels: o.GPUModels, SSDModels: o.SSDModels, InstalledGPU: o.InstalledGPU, CPUCacheGiB: o.CPUCacheGiB, Assumptions: tpc.DefaultAssumptions()}
	if math.IsNaN(o.CPUCacheGiB) || o.CPUCacheGiB < 0 || math.IsInf(o.CPUCacheGiB, 0) {
		return req, usageErrorf("--cpu-cache-gib: %v (want a size in GiB >= 0; 0 decides it)", o.CPUCacheGiB)
	}
	var err error
	if o.GPUs != "" {
		if req.MinGPUs, req.MaxGPUs, err = parseRange("--gpus", o.GPUs, 1); err != nil {
			return req, err
		}
	}
	if o.SSDs != "" {
		lo, hi, err := parseRange("--ssds", o.SSDs, 0)
		if err != nil {
			return req, err
		}
		for m := lo; m <= hi; m++ {
			req.SSDCounts = append(req.SSDCounts, m)
		}
	}
	switch {
	case o.Machine != "":
		req.Machine, err = o.Import(ctx, o.Machine)
	default:
		name := o.Profile
		if name == "" {
			name = defaultProfile
		}
		req.Machine, err = o.Profiles(name)
	}
	if err != nil {
		return req, err
	}
	if m, n := maxflow.PositionSlots(req.Machine); n > 0 {
		req.Machine = m
		fmt.Fprintf(o.IO.Err, "note: %s has no slot record for %d GPU/SSD position(s): each is taken as a slot that takes its kind again; "+
			"to let the plan add cards, describe the free slots in the machine file (slot nodes with lanes, pcie_gen, double_width)\n", m.Name, n)
	}
	if o.Dataset != "" {
		meta, err := dataset.ReadMeta(o.Dataset)
		if err != nil {
			return req, err
		}
		req.Workload = workloadFromMeta(o.Dataset, meta)
		// The access skew place measured, where it has: the power law
		// only where it has not.
		hotPath := filepath.Join(o.Dataset, sample.HotnessFile)
		if _, err := os.Stat(hotPath); err == nil {
			hot, err := sample.ReadHotness(hotPath, meta.NumNodes)
			if err != nil {
				return req, err
			}
			req.Assumptions.HotnessCurve = tpc.HotnessCurve(hot, tpc.HotnessCurvePoints)
		}
	} else if req.Workload, err = tpc.BuiltinWorkload(o.Workload); err != nil {
		return req, err
	}
	if o.Model != "" {
		if req.Workload, err = req.Workload.WithModel(o.Model); err != nil {
			return req, err
		}
	}
	req.Catalog = profiles.DefaultCatalog()
	if o.Catalog != "" {
		if req.Catalog, err = profiles.LoadCatalog(o.Catalog); err != nil {
			return req, err
		}
	}
	if o.Measured != "" {
		p, err := loadMeasured(o.Measured)
		if err != nil {
			return req, err
		}
		switch {
		case math.IsNaN(p.SSDGBps) || p.SSDGBps < 0 || math.IsInf(p.SSDGBps, 0):
			return req, &topology.InputError{Path: o.Measured, Field: "ssd_GBps", Msg: fmt.Sprintf("%v (want a measured rate above 0: gnnplan profile --ssd-dir DIR --save FILE)", p.SSDGBps)}
		case p.SSDGBps == 0:
			fmt.Fprintf(o.IO.Err, "note: --measured %s: the profile measured no SSD; the catalog's SSD rates are used\n", o.Measured)
		}
		req.MeasuredSSDGBps = p.SSDGBps
		if p.MemcpyGBps > 0 {
			req.Assumptions.HostMemGBps = p.MemcpyGBps
		}
		gpus, notes := measuredGPUs(p.GPUs, req.Catalog)
		if len(gpus) > 0 {
			req.Assumptions.MeasuredGPUs = gpus
		}
		for _, n := range notes {
			fmt.Fprintf(o.IO.Err, "note: --measured %s: %s\n", o.Measured, n)
		}
	}
	return req, nil
}

// outputs checks -o and returns where the human-readable output goes:
// stdout fitted to the terminal, or for -o json nowhere (stdout is then
// the plan's JSON alone).
func (o *recommendOptions) outputs() (*human, error) {
	if err := checkOutput(o.Output, "--save", "table", "wide", "json"); err != nil {
		return nil, err
	}
	if o.Output == "json" {
		return &human{Wrapper: textout.NewWrapper(io.Discard, 0)}, nil
	}
	return newHuman(o.IO.Out, o.Output), nil
}

// wantPlan is whether a plan is asked for: --save or -o json.
func (o *recommendOptions) wantPlan() bool { return o.Save != "" || o.Output == "json" }

// emitPlan writes p to --save's file, saying so on h, and for -o json its
// JSON to stdout.
func (o *recommendOptions) emitPlan(h io.Writer, p *tpc.Plan) error {
	if o.Save != "" {
		if err := tpc.WritePlan(o.Save, p); err != nil {
			return fmt.Errorf("--save: %w", err)
		}
	}
	if o.Output == "json" {
		return tpc.EncodePlan(o.IO.Out, p)
	}
	return nil
}

func runRecommend(ctx context.Context, o *recommendOptions) error {
	if o.Top < 1 {
		return usageErrorf("--top: %d (valid: >= 1)", o.Top)
	}
	h, err := o.outputs()
	if err != nil {
		return err
	}
	req, err := o.request(ctx)
	if err != nil {
		return err
	}
	rec, err := tpc.Recommend(ctx, req)
	var none *tpc.NothingFitsError
	if errors.As(err, &none) && !none.Budget && !o.wantPlan() {
		// A machine with no room to buy into: the review is of the
		// machine as it stands.
		w := req.Workload
		fmt.Fprintf(h, "%s %s on %s: nothing to buy fits: %s\n", w.Name, w.Model, req.Machine.Name, none.Err.Msg)
		// writeInstalled says on h why the machine could not be predicted.
		_, _ = writeInstalled(ctx, h, req)
		return h.Flush()
	}
	if err != nil {
		return err
	}
	v, err := validate.Published(ctx)
	if err != nil {
		return err
	}
	rec.ValidatedError = &v
	if err := writeRecommendation(h, o.Top, rec); err != nil {
		return err
	}
	var installed *tpc.Installed
	var installedErr error
	if rec.NothingToBuy == "" {
		installed, installedErr = writeInstalled(ctx, h, req)
	}
	if o.PlotPath != "" {
		var buf bytes.Buffer
		if err := tpc.WritePlotSVG(&buf, rec); err != nil {
			return err
		}
		if err := fsutil.WriteFileAtomic(o.PlotPath, buf.Bytes()); err != nil {
			return fmt.Errorf("--plot: %w", err)
		}
		fmt.Fprintf(h, "wrote %s\n", o.PlotPath)
	}
	if o.wantPlan() {
		plan := rec.Plan()
		plan.Installed = installed
		if installedErr != nil {
			plan.InstalledNote = installedErr.Error()
		}
		plan.CatalogSource = "the built-in catalog"
		if o.Catalog != "" {
			plan.CatalogSource = "catalog " + o.Catalog + " over the built-in one"
		}
		if err := o.emitPlan(h, plan); err != nil {
			return err
		}
		if o.Save != "" {
			fmt.Fprintf(h, "wrote %s\n", o.Save)
		}
	}
	return h.Flush()
}

// noGPULine is the machine as installed where it has no GPU.
const noGPULine = "as installed: no GPU: plans here train on GPUs; to plan CPU training, run gnnplan recommend --this-machine --dataset DIR on the machine itself"

// dramText is the memory an option buys, "+n x 64GB" or "" for none.
func dramText(hw tpc.Hardware) string {
	if hw.DIMMs == 0 {
		return ""
	}
	return fmt.Sprintf("+%d x %.0fGB", hw.DIMMs, hw.DIMM.CapacityGiB)
}

// ssdCount is "n x model", or "no SSD".
func ssdCount(n int, model string) string {
	if n == 0 {
		return "no SSD"
	}
	return fmt.Sprintf("%d x %s", n, model)
}

// writeInstalled prints the machine as it stands, beside the plans: its
// own GPUs and SSDs where they are (tpc.PredictInstalled), and returns it
// for the plan. A machine with no GPU gets no line; one that cannot be
// predicted says why.
func writeInstalled(ctx context.Context, out io.Writer, req tpc.Request) (*tpc.Installed, error) {
	if req.Machine.Count(topology.KindGPU) == 0 {
		fmt.Fprintf(out, "%s\n", noGPULine)
		return nil, nil
	}
	in, err := tpc.PredictInstalled(ctx, req)
	if err != nil {
		fmt.Fprintf(out, "as installed: not predicted: %v\n", err)
		return nil, err
	}
	p := in.Prediction
	ssd := ssdCount(in.SSDs, in.SSD)
	if in.CannotHold != "" {
		fmt.Fprintf(out, "as installed: %d x %s + %s where they are: cannot train: %s\n", in.GPUs, in.GPU, ssd, in.CannotHold)
		for _, m := range in.Matched {
			fmt.Fprintf(out, "  %s\n", m)
		}
		return in, nil
	}
	fmt.Fprintf(out, "as installed: %d x %s + %s where they are: epoch %s, %.0f samples/s, $%s 5-year TCO at catalog prices, TPC %.3f per $1k, %s-bound\n",
		in.GPUs, in.GPU, ssd, fmtSeconds(p.EpochSeconds), p.SamplesPerSec, tpc.FormatUSD(p.CostUSD), 1000*p.TPC, p.Bound)
	for _, m := range in.Matched {
		fmt.Fprintf(out, "  %s\n", m)
	}
	return in, nil
}

func writeRecommendation(h *human, top int, rec *tpc.Recommendation) error {
	out := h
	w := rec.Request.Workload
	if rec.NothingToBuy != "" {
		fmt.Fprintf(out, "%s %s on %s: nothing to buy fits: %s\nthe machine as installed:\n", w.Name, w.Model, rec.Machine.Name, rec.NothingToBuy)
	} else {
		fmt.Fprintf(out, "%s on %s, budget $%s: %d plans priced, %d distinct placements evaluated\n",
			w.Name+" "+w.Model, rec.Machine.Name, tpc.FormatUSD(rec.Request.BudgetUSD), rec.Searched, rec.Placements)
	}
	t := textout.NewTable(col("RANK"), col("GPUS"), col("SSDS"), opt(col("DRAM")), num("COST $"), num("SAMPLES/s"), num("EPOCH s"),
		num("TPC per $1k"), opt(col("BOUND")))
	for i, op := range rec.Options {
		if i >= top && op != rec.Fastest {
			continue
		}
		rank := strconv.Itoa(i + 1)
		switch {
		case rec.NothingToBuy != "":
			rank = "installed"
		case op == rec.Fastest:
			rank += " (fastest)"
		}
		t.Row(rank, fmt.Sprintf("%d x %s", op.GPUs, op.GPU.Key), ssdCount(op.SSDs, op.SSD.Key), dramText(op.Hardware),
			tpc.FormatUSD(op.CostUSD), fmt.Sprintf("%.0f", op.SamplesPerSec), fmt.Sprintf("%.1f", op.EpochSeconds),
			fmt.Sprintf("%.3f", op.TPC*1000), op.Bound)
	}
	if err := h.write(t); err != nil {
		return err
	}
	b := rec.Best
	verdict := "recommended"
	if rec.NothingToBuy != "" {
		verdict = "as installed"
	}
	dram := ""
	if b.DIMMs > 0 {
		dram = fmt.Sprintf(" + %d x %s (%.0f GiB more host memory)", b.DIMMs, b.DIMM.Name, b.AddedMemoryGiB())
	}
	fmt.Fprintf(out, "%s: %d x %s + %s%s, $%s 5-year TCO, %.0f samples/s (epoch %s: IO %s, training %s)\n",
		verdict, b.GPUs, b.GPU.Name, ssdCount(b.SSDs, b.SSD.Name), dram, tpc.FormatUSD(b.CostUSD), b.SamplesPerSec,
		fmtSeconds(b.EpochSeconds), fmtSeconds(b.EpochIOSeconds), fmtSeconds(b.EpochTrainSecs))
	ssdRate := ""
	if b.SSDs > 0 {
		ssdRate = fmt.Sprintf(" (%.2f GB/s each for feature rows)", b.SSDGBps)
		if c, ok := tpc.SSDLinkCap(rec.BestMachine, rec.BestEval, b.SSDGBps); ok {
			ssdRate = fmt.Sprintf(" (%.2f GB/s each, what their %s links carry; the drives read %.2f GB/s)", c.GBps, c.Links, b.SSDGBps)
		}
	}
	fmt.Fprintf(out, "  bytes per epoch: %.0f GB, %.0f%% from GPU memory, %.0f%% from CPU memory, %.0f%% from SSDs%s\n",
		b.Shares.EpochGB, 100*b.Shares.GPUCacheShare, 100*b.Shares.HostShare, 100*b.Shares.SSDShare, ssdRate)
	plan := rec.Plan()
	fmt.Fprintln(out, "  placement:")
	for _, id := range append(deviceIDs("gpu", b.GPUs), deviceIDs("nvme", b.SSDs)...) {
		extra := ""
		if g, ok := plan.PerGPUGBps[id]; ok {
			extra = fmt.Sprintf("  inlet %.2f GB/s", g)
		}
		fmt.Fprintf(out, "    %-7s %s%s\n", id, plan.Placement.Where[id], extra)
	}
	fmt.Fprintf(out, "  CPU cache: %.0f GiB, %s\n", b.Decisions.CPUCacheGiB, b.Decisions.Why)
	if b.GPUs > 0 {
		fmt.Fprintf(out, "  GPU memory: %s\n", b.Decisions.GPUWhy)
	}
	if b.Decisions.TopologyOnSSDShare > 0 {
		fmt.Fprintf(out, "  topology: %s\n", b.Decisions.TopologyWhy)
	}
	fmt.Fprintf(out, "  saturated: %s\n", maxflow.BottleneckSummary(rec.BestEval.Bottlenecks))
	fmt.Fprintf(out, "  power: %s\n", tpc.CheckPower(b.Hardware, rec.Request.Catalog.Host).Text)
	if v := rec.ValidatedError; v != nil {
		fmt.Fprintf(out, "  how far to trust it: the same model's predictions of published measurements had %s (gnnplan validate)\n", v)
	}
	fmt.Fprintf(out, "hint: %s\n", rec.Hint.Text)
	for _, st := range rec.Hint.Steps {
		if st.Why != "" {
			fmt.Fprintf(out, "  %s: not priced: %s\n", st.What, st.Why)
			continue
		}
		fmt.Fprintf(out, "  %s: $%s, %+.1f%% throughput, %+.1f%% TPC\n", st.What, tpc.FormatUSD(st.AddedUSD), 100*st.ThroughputGain, 100*st.TPCGain)
	}
	if f := rec.Fastest; f != b {
		fmt.Fprintf(out, "fastest within budget: %d x %s + %d x %s, $%s, %.0f samples/s (%.2fx the recommended), TPC %.3f per $1k\n",
			f.GPUs, f.GPU.Key, f.SSDs, f.SSD.Key, tpc.FormatUSD(f.CostUSD), f.SamplesPerSec, f.SamplesPerSec/b.SamplesPerSec, f.TPC*1000)
	}
	d := rec.Distributed
	fmt.Fprintf(out, "distributed in-memory alternative: %d machines, $%s, %.0f samples/s, TPC %.3f per $1k: the recommended plan is %.1fx better per dollar\n",
		d.Machines, tpc.FormatUSD(d.CostUSD), d.SamplesPerSec, d.TPC*1000, d.CostPerSample)
	fmt.Fprintf(out, "  (%s)\n", d.Assumption)
	a := rec.Request.Assumptions
	skew := fmt.Sprintf("top x of vertices get x^%.2f of accesses", a.SkewExponent)
	if len(a.HotnessCurve) > 0 {
		skew = fmt.Sprintf("access skew as place measured it (%s: the top 1%% of vertices get %.0f%%)", sample.HotnessFile, 100*tpc.HitShare(a, 0.01))
	}
	gpu := fmt.Sprintf("%g GiB of each GPU for its context", a.GPUContextGiB)
	if a.GPUReserveGiB > 0 {
		gpu = fmt.Sprintf("%g GiB of each GPU kept from its caches", a.GPUReserveGiB)
	}
	fmt.Fprintf(out, "assumptions: %s, %.0f%% of host memory kept from the cache, %s, products at %.0f%% of FP32 peak, memory-bound kernels at %.0f%% of the GPU memory's rate, %.0f ms per batch fixed\n",
		gpu, 100*a.HostReserveShare, skew, 100*a.ComputeEfficiency, 100*a.MemoryEfficiency, 1000*a.BatchOverheadS)
	return nil
}
