package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/gnnplan/gnnplan/ddak/layout"

	"github.com/spf13/cobra"

	"github.com/gnnplan/gnnplan/cmd/gnnplan/internal/textout"
	"github.com/gnnplan/gnnplan/ddak"
	"github.com/gnnplan/gnnplan/maxflow"
	"github.com/gnnplan/gnnplan/tpc"
	"github.com/gnnplan/gnnplan/trainer/dataset"
	"github.com/gnnplan/gnnplan/trainer/sample"
	"github.com/gnnplan/gnnplan/trainer/store"
)

// placeOptions holds the place command's flags.
type placeOptions struct {
	IO       *deps
	Plan     string
	Dataset  string
	Policy   string
	Priority string
	Pool     int
	Hotness  string
	Fraction float64
	Epochs   int
	Seed     uint64
	Output   string
	// Materialize writes the SSD bins as files after the layout (see
	// materialize.go), one per SSDDirs entry.
	Materialize bool
	SSDDirs     []string
}

func newPlaceCmd(d *deps, runF func(context.Context, *placeOptions) error) *cobra.Command {
	opts := &placeOptions{IO: d}
	cmd := &cobra.Command{
		Use:   "place",
		Short: "Place every vertex's features across GPU memory, CPU memory and SSDs (DDAK)",
		Long: `Place each vertex's feature row in one bin of the plan: a GPU cache, a CPU cache
per socket, or an SSD, so that each bin serves the share of the traffic the
plan's max-flow model gave it (Moment's data-distribution-aware knapsack,
section 3.3). Hotness comes from pre-sampling the dataset with the plan's
fanouts and batch size (written to DIR/hotness.npy), epoch after epoch until
the estimate is stable (or --epochs), or from --hotness. The report says how
many epochs were sampled and which share of the bytes read is topology
(neighbour lists) rather than features.

Writes the layout next to the dataset: layout_bin.npy (the bin of each
vertex), layout_row.npy (its row within the bin, hottest first) and
layout.json, and prints each bin's achieved traffic against its target, the
imbalance and the share of traffic crossing the socket link, for the chosen
policy and the other one.`,
		Example: `  gnnplan place --plan plan.json --dataset data/cora
  gnnplan place --plan plan.json --dataset data/synth --policy hash --hotness data/synth/hotness.npy`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.Plan == "" || opts.Dataset == "" {
				return usageErrorf("--plan and --dataset are required")
			}
			if opts.Policy != string(ddak.PolicyDDAK) && opts.Policy != string(ddak.PolicyHash) {
				return usageErrorf("--policy: %q (valid: ddak, hash)", opts.Policy)
			}
			if !slices.Contains(ddak.Priorities(), ddak.Priority(opts.Priority)) {
				return usageErrorf("--priority: %q (valid: %v)", opts.Priority, ddak.Priorities())
			}
			if err := checkOutput(opts.Output, "", "table", "wide", "json"); err != nil {
				return err
			}
			if opts.Epochs < 0 {
				return usageErrorf("--epochs: %d (valid: 0 to sample until the hotness estimate is stable, or a count of epochs)", opts.Epochs)
			}
			if opts.Fraction <= 0 || opts.Fraction > 1 {
				return usageErrorf("--fraction: %v (valid: more than 0, at most 1)", opts.Fraction)
			}
			if len(opts.SSDDirs) > 0 && !opts.Materialize {
				return usageErrorf("--ssd-dir: only with --materialize")
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runPlace(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Plan, "plan", "", "the plan (plan.json from gnnplan recommend --save)")
	f.StringVar(&opts.Dataset, "dataset", "", "the dataset directory")
	f.StringVar(&opts.Policy, "policy", string(ddak.PolicyDDAK), "placement policy: ddak or hash")
	f.StringVar(&opts.Priority, "priority", string(ddak.DefaultPriority), "DDAK bin priority: need (traffic a bin lacks per free row), sum (Moment's code) or product (its paper)")
	f.IntVar(&opts.Pool, "pool", ddak.DefaultPool, "vertices per DDAK decision")
	f.StringVar(&opts.Hotness, "hotness", "", "per-vertex access counts (a 1-d .npy of integers, e.g. numpy.bincount's int64, one per vertex) instead of pre-sampling")
	f.Float64Var(&opts.Fraction, "fraction", 1, "share of an epoch's batches to pre-sample for hotness")
	f.IntVar(&opts.Epochs, "epochs", 0, fmt.Sprintf("epochs to pre-sample for hotness (0: until the top 1/5/10%% shares move under %.1f points, at most %d)", 100*placeStable, sample.DefaultMaxHotnessEpochs))
	f.Uint64Var(&opts.Seed, "seed", 1, "seed for pre-sampling and the hash baseline")
	f.StringVarP(&opts.Output, "output", "o", "table", "output format: table, wide, json")
	f.BoolVar(&opts.Materialize, "materialize", false, "then write the SSD bins as files for the feature store (as gnnplan materialize)")
	f.StringArrayVar(&opts.SSDDirs, "ssd-dir", nil, "with --materialize: a directory on one SSD for its bin file (repeat for each SSD)")
	return cmd
}

// placeReport is place's JSON output.
type placeReport struct {
	SchemaVersion int                        `json:"schema_version"`
	Policy        ddak.Policy                `json:"policy"`
	Skew          sample.Skew                `json:"hotness_skew"`
	Sampling      *sample.HotnessReport      `json:"hotness_sampling,omitempty"` // absent with --hotness
	Evaluation    ddak.Evaluation            `json:"evaluation"`
	Other         map[string]ddak.Evaluation `json:"other_policy"`
	Layout        string                     `json:"layout_dir"`
}

func runPlace(ctx context.Context, o *placeOptions) error {
	plan, err := tpc.LoadPlan(o.Plan)
	if err != nil {
		return err
	}
	if plan.Cache != nil {
		return usageErrorf("--plan %s: a plan of CPU training on this machine (recommend --this-machine) names no GPUs or SSDs to lay the features over: train it with gnnplan train --plan %s; to train out of core, place a plan of this machine's disks (gnnplan recommend --dataset DIR --save plan.json)", o.Plan, o.Plan)
	}
	g, err := dataset.LoadGraph(o.Dataset)
	if err != nil {
		return err
	}
	defer g.Close()
	if g.Meta.FeatureDim == 0 {
		return usageErrorf("--dataset %s: it has no features to place", o.Dataset)
	}
	if err := checkPlanMatches(plan, g.Meta, o.Plan); err != nil {
		return err
	}
	rowBytes := int64(g.Meta.FeatureDim) * 4
	hot, hotRep, err := placeHotness(ctx, o, plan, g)
	if err != nil {
		return err
	}
	bins, err := ddak.BinsFromPlan(plan, g.Meta.NumNodes, rowBytes, ddak.BinOptions{})
	if err != nil {
		return err
	}
	gpuSockets := ddak.GPUSockets(plan)
	ddakLayout, err := ddak.PlaceContext(ctx, hot, bins, ddak.Options{Priority: ddak.Priority(o.Priority), Pool: o.Pool})
	if err != nil {
		return err
	}
	hashLayout, err := ddak.PlaceHashContext(ctx, hot, bins, o.Seed)
	if err != nil {
		return err
	}
	chosen, other := ddakLayout, hashLayout
	if o.Policy == string(ddak.PolicyHash) {
		chosen, other = hashLayout, ddakLayout
	}
	ev := ddak.Evaluate(chosen, hot, bins, gpuSockets)
	evOther := ddak.Evaluate(other, hot, bins, gpuSockets)
	prev, hadLayout := layout.PolicyOf(o.Dataset)
	if err := layout.Write(o.Dataset, chosen, bins); err != nil {
		return err
	}
	if hadLayout && prev != chosen.Policy {
		fmt.Fprintf(o.IO.Err, "note: %s held a %s layout: replaced by this %s one (place again with --policy %s to restore it)\n",
			o.Dataset, prev, chosen.Policy, prev)
	}
	if _, err := os.Stat(filepath.Join(o.Dataset, store.ManifestFile)); err == nil && !o.Materialize {
		fmt.Fprintf(o.IO.Err, "note: %s's feature store was cut from the layout before: write it again from this one (gnnplan materialize --dataset %s --ssd-dir DIR) before training out of core\n",
			o.Dataset, o.Dataset)
	}
	if o.Materialize {
		if err := materializeLayout(ctx, o.IO, o.Dataset, o.SSDDirs); err != nil {
			return err
		}
	}
	if o.Output == "json" {
		enc := json.NewEncoder(o.IO.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(placeReport{SchemaVersion: 1, Policy: chosen.Policy, Skew: sample.SkewOf(hot), Sampling: hotRep, Evaluation: ev,
			Other: map[string]ddak.Evaluation{string(other.Policy): evOther}, Layout: o.Dataset})
	}
	out := newHuman(o.IO.Out, o.Output)
	sk := sample.SkewOf(hot)
	fmt.Fprintf(out, "%s: %d vertices, %d bins; hotness: top 1%% of vertices get %.1f%% of accesses, top 5%% %.1f%%, top 10%% %.1f%%\n",
		g.Meta.Name, g.Meta.NumNodes, len(bins), 100*sk.Top1, 100*sk.Top5, 100*sk.Top10)
	if r := hotRep; r != nil {
		stable := fmt.Sprintf("stable: the last epoch moved the top shares %.2f points", 100*r.LastChange)
		if o.Epochs == 0 && !r.Stable {
			stable = fmt.Sprintf("not stable after %d epochs: the last moved the top shares %.2f points", r.Epochs, 100*r.LastChange)
		} else if o.Epochs > 0 {
			stable = "as --epochs asked"
		}
		fmt.Fprintf(out, "hotness from %d epoch(s) x %d batches (%s); of the bytes sampling and feature reads touch, %.1f%% are topology (neighbour lists), %.1f%% features\n",
			r.Epochs, r.BatchesPerEpoch, stable, 100*r.TopologyShare, 100*(1-r.TopologyShare))
	}
	t := textout.NewTable(col("BIN"), col("KIND"), num("SOCKET"), num("ROWS"), num("TARGET %"), num("ACHIEVED %"), num("ACHIEVED/TARGET"))
	for _, b := range ev.Bins {
		t.Row(b.ID, string(b.Kind), fmt.Sprint(b.Socket), fmt.Sprint(b.Rows), fmt.Sprintf("%.2f", 100*b.TargetShare),
			fmt.Sprintf("%.2f", 100*b.Share), fmt.Sprintf("%.3f", b.Ratio))
	}
	if err := out.write(t); err != nil {
		return err
	}
	line := func(name string, e ddak.Evaluation) {
		fmt.Fprintf(out, "%-5s distance from targets %.4f, SSD imbalance max %.3f mean %.3f, traffic across the socket link %.2f%%\n",
			name, e.TargetDistance, e.SSDMaxImbalance, e.SSDMeanImbalance, 100*e.CrossSocketShare)
	}
	line(string(chosen.Policy), ev)
	line(string(other.Policy), evOther)
	if split, err := placeCacheSplit(g, hot, bins, rowBytes); err == nil {
		gib := func(b int64) float64 { return float64(b) / (1 << 30) }
		saved := 0.0
		if split.TxAllSSD > 0 {
			saved = 1 - split.Tx/split.TxAllSSD
		}
		fmt.Fprintf(out, "unified cache (Hyperion III-B2): GPU %.2f GiB topology + %.2f GiB features, CPU %.2f GiB topology + %.2f GiB features; %.1f%% fewer PCIe transactions than reading everything from SSD\n",
			gib(split.GPUTopologyBytes), gib(split.GPUFeatureBytes), gib(split.CPUTopologyBytes), gib(split.CPUFeatureBytes), 100*saved)
	}
	fmt.Fprintf(out, "wrote %s, %s and %s\n", filepath.Join(o.Dataset, "layout_bin.npy"), filepath.Join(o.Dataset, "layout_row.npy"), filepath.Join(o.Dataset, "layout.json"))
	return out.Flush()
}

// placeCacheSplit sizes Hyperion's unified cache with one GPU bin's and all
// CPU bins' memory.
func placeCacheSplit(g *dataset.Graph, hot []uint32, bins []ddak.Bin, rowBytes int64) (*ddak.Split, error) {
	var gpu, cpu int64
	for _, b := range bins {
		switch b.Kind {
		case maxflow.StorageGPUMem:
			gpu = max(gpu, b.CapacityRows*rowBytes)
		case maxflow.StorageHostMem:
			cpu += b.CapacityRows * rowBytes
		}
	}
	idx := 4
	if g.Meta.IndexDType == "int64" {
		idx = 8
	}
	topo, err := ddak.TopologyRowBytes(g.Indptr, idx)
	if err != nil {
		return nil, err
	}
	return ddak.CacheSplit(hot, topo, ddak.CacheOptions{GPUBytes: gpu, CPUBytes: cpu, FeatureRowBytes: rowBytes})
}

// placeStable is the move of the top access shares below which place
// stops pre-sampling epochs.
const placeStable = 0.005

// placeHotness reads --hotness, or pre-samples the dataset with the plan's
// fanouts and batch size and saves the counts next to the dataset.
func placeHotness(ctx context.Context, o *placeOptions, plan *tpc.Plan, g *dataset.Graph) ([]uint32, *sample.HotnessReport, error) {
	if o.Hotness != "" {
		hot, err := sample.ReadHotness(o.Hotness, g.Meta.NumNodes)
		return hot, nil, err
	}
	so := sample.DefaultSamplerOptions()
	if len(plan.Workload.Fanouts) > 0 {
		so.Fanouts = plan.Workload.Fanouts
	}
	if plan.Workload.BatchSize > 0 {
		so.BatchSize = plan.Workload.BatchSize
	}
	so.Seed = o.Seed
	ho := sample.HotnessOptions{Sampler: so, Fraction: o.Fraction, Epochs: o.Epochs}
	if o.Epochs == 0 {
		ho.Stable = placeStable
	}
	prog := newPhaseProgress(o.IO.Err)
	hot, rep, err := sample.MeasureHotness(ctx, g, ho, prog)
	prog.Close()
	if err != nil {
		return nil, nil, err
	}
	if err := sample.WriteHotness(filepath.Join(o.Dataset, sample.HotnessFile), hot); err != nil {
		return nil, nil, err
	}
	return hot, rep, nil
}
