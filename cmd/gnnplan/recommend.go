package main

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/gnnplan/gnnplan/internal/fsutil"
	"github.com/gnnplan/gnnplan/trainer"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gnnplan/gnnplan/internal/textout"
	"github.com/gnnplan/gnnplan/maxflow/placement"
	"github.com/gnnplan/gnnplan/profiles"
	"github.com/gnnplan/gnnplan/topology"
	"github.com/gnnplan/gnnplan/topology/importer"
	"github.com/gnnplan/gnnplan/tpc"
	"github.com/gnnplan/gnnplan/tpc/report"
	"github.com/gnnplan/gnnplan/tpc/trainplan"
	"github.com/gnnplan/gnnplan/tpc/validate"
	"github.com/gnnplan/gnnplan/trainer/store"
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
	Loaders   []string
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
	opts := &recommendOptions{IO: d, Profiles: profiles.Machine, Import: importer.ImportContext}
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
	opts.addFlags(cmd.Flags(), workloads)
	return cmd
}

// addFlags binds recommend's flags to o.
func (o *recommendOptions) addFlags(f *pflag.FlagSet, workloads []string) {
	f.Float64Var(&o.BudgetUSD, "budget", 80000, "budget in USD for one machine's 5-year TCO (host, GPUs, SSDs, electricity)")
	f.StringVar(&o.Profile, "profile", "", "an embedded machine ("+strings.Join(profiles.MachineNames(), ", ")+"); default "+defaultProfile)
	f.StringVar(&o.Machine, "machine", "", "a machine file (gnnplan JSON, NCCL or hwloc XML, nvidia-smi topo -m output) whose slots to fill")
	f.StringVar(&o.Workload, "workload", defaultWorkload, "a built-in workload ("+strings.Join(workloads, ", ")+")")
	f.StringVar(&o.Dataset, "dataset", "", "size the workload from a dataset directory (meta.json) instead of --workload")
	f.StringVar(&o.Model, "model", "", "GNN model: graphsage, gcn or gat (default: the workload's)")
	f.StringSliceVar(&o.GPUModels, "gpu-model", nil, "only these GPU models (catalog keys, comma-separated)")
	f.StringSliceVar(&o.SSDModels, "ssd-model", nil, "only these SSD models (catalog keys, comma-separated)")
	f.StringSliceVar(&o.Loaders, "loaders", nil, "only these loaders: online, packed, multistage (comma-separated; default all: the plan trains with the fastest)")
	f.StringVar(&o.GPUs, "gpus", "", "GPU count or range, e.g. 2 or 1-4 (default: 1 to as many as the machine's slots take)")
	f.StringVar(&o.SSDs, "ssds", "", "SSD count or range, e.g. 8 or 0-12 (default: 0 to as many as the free slots take)")
	f.StringVar(&o.Catalog, "catalog", "", "a catalog file (JSON or YAML) whose entries override the built-in prices and rates")
	f.StringVar(&o.Measured, "measured", "", "a profile from `gnnplan profile --save`: its measured SSD and memory rates replace catalog figures")
	outputFlag(f, &o.Output, "--save", "the best plan's JSON, as --save writes it", "table", "wide", "json")
	f.StringVar(&o.Save, "save", "", "also write the best plan to this file (plan.json, for train, place and report)")
	f.Float64Var(&o.CPUCacheGiB, "cpu-cache-gib", 0, "fix host memory's feature cache at this many GiB instead of deciding it (0: decide)")
	f.StringVar(&o.InstalledGPU, "installed-gpu", "", "catalog key of the installed GPUs, where the machine file does not name them")
	f.StringVar(&o.PlotPath, "plot", "", "draw TPC and throughput against SSD count to this SVG file")
	f.IntVar(&o.Top, "top", 10, "how many plans to list")
	f.BoolVar(&o.ThisMachine, "this-machine", false, "plan CPU training on this machine and its disks for --dataset (rates from --measured, or measured now)")
	f.StringArrayVar(&o.SSDDirs, "ssd-dir", nil, "with --this-machine and no --measured: a directory on a disk to measure (repeatable)")
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
	req := tpc.Request{BudgetUSD: o.BudgetUSD, GPUModels: o.GPUModels, SSDModels: o.SSDModels, InstalledGPU: o.InstalledGPU, CPUCacheGiB: o.CPUCacheGiB,
		Loaders: o.Loaders, Assumptions: tpc.DefaultAssumptions()}
	for _, l := range o.Loaders {
		if !slices.Contains(trainer.Loaders(), l) {
			return req, usageErrorf("--loaders: %q (valid: %s)", l, strings.Join(trainer.Loaders(), ", "))
		}
	}
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
	if req.Machine, err = o.machine(ctx); err != nil {
		return req, err
	}
	if o.Dataset != "" {
		if req.Workload, req.Assumptions.HotnessCurve, err = trainplan.DatasetWorkload(o.Dataset); err != nil {
			return req, err
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
		p, err := store.ReadProfile(o.Measured, "--measured")
		if err != nil {
			return req, err
		}
		notes, err := trainplan.ApplyProfile(&req, p, o.Measured)
		if err != nil {
			return req, err
		}
		for _, n := range notes {
			fmt.Fprintf(o.IO.Err, "note: --measured %s: %s\n", o.Measured, n)
		}
	}
	return req, nil
}

// machine is the machine --machine or --profile names, its GPU and SSD
// positions without a slot record taken as slots (and a note saying so).
func (o *recommendOptions) machine(ctx context.Context) (*topology.Machine, error) {
	var m *topology.Machine
	var err error
	if o.Machine != "" {
		m, err = o.Import(ctx, o.Machine)
	} else {
		m, err = o.Profiles(cmp.Or(o.Profile, defaultProfile))
	}
	if err != nil {
		return nil, err
	}
	if p, n := placement.PositionSlots(m); n > 0 {
		m = p
		fmt.Fprintf(o.IO.Err, "note: %s has no slot record for %d GPU/SSD position(s): each is taken as a slot that takes its kind again; "+
			"to let the plan add cards, describe the free slots in the machine file (slot nodes with lanes, pcie_gen, double_width)\n", m.Name, n)
	}
	return m, nil
}

// outputs checks -o and returns where the human-readable output goes:
// stdout fitted to the terminal, or for -o json nowhere (stdout is then
// the plan's JSON alone).
func (o *recommendOptions) outputs() (*human, error) {
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
		_, _ = report.WriteInstalled(ctx, h, req)
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
	if err := report.WriteRecommendation(h, h.Width, o.Top, rec); err != nil {
		return err
	}
	var installed *tpc.Installed
	var installedErr error
	if rec.NothingToBuy == "" {
		installed, installedErr = report.WriteInstalled(ctx, h, req)
	}
	if err := o.writeOutputs(h, rec, installed, installedErr); err != nil {
		return err
	}
	return h.Flush()
}

// writeOutputs writes the files asked for: --plot's SVG, and the plan
// (--save, -o json) with the machine as installed beside it.
func (o *recommendOptions) writeOutputs(h io.Writer, rec *tpc.Recommendation, installed *tpc.Installed, installedErr error) error {
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
	return nil
}
