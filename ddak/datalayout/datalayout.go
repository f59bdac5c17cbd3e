// Package datalayout lays a dataset's feature rows out over a plan's bins
// and writes the layout next to the dataset: hotness pre-sampled with the
// plan's fanouts and batch size (or read from a file), both policies
// (DDAK and hash) placed and evaluated against the bins' targets, and
// Hyperion's unified cache sized from the same counts.
package datalayout

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/gnnplan/gnnplan/ddak"
	"github.com/gnnplan/gnnplan/ddak/layout"
	"github.com/gnnplan/gnnplan/internal/inputerr"
	"github.com/gnnplan/gnnplan/internal/textout"
	"github.com/gnnplan/gnnplan/internal/tier"
	"github.com/gnnplan/gnnplan/tpc"
	"github.com/gnnplan/gnnplan/tpc/trainplan"
	"github.com/gnnplan/gnnplan/trainer/dataset"
	"github.com/gnnplan/gnnplan/trainer/sample"
)

// Stable is the move of the top access shares below which pre-sampling
// stops when Options.Epochs is 0.
const Stable = 0.005

// Options say what to lay out and how.
type Options struct {
	// Plan is the plan whose bins the rows go to; PlanPath names it in
	// messages. Dataset is the dataset's directory.
	Plan     *tpc.Plan
	PlanPath string
	Dataset  string
	// Policy is the layout written (the other is evaluated beside it);
	// Priority and Pool steer DDAK; Seed the hash baseline and sampling.
	Policy   ddak.Policy
	Priority ddak.Priority
	Pool     int
	Seed     uint64
	// Hotness is a file of per-vertex access counts ("": pre-sample
	// Fraction of each epoch's batches, for Epochs epochs, 0: until
	// stable, and save the counts next to the dataset).
	Hotness  string
	Fraction float64
	Epochs   int
	// Progress receives pre-sampling's progress.
	Progress io.Writer
}

// Result is a layout written and how it serves the plan.
type Result struct {
	Meta dataset.Meta
	Bins []ddak.Bin
	// Hotness is each vertex's access count; Sampling how it was
	// measured (nil when read from Options.Hotness).
	Hotness  []uint32
	Sampling *sample.HotnessReport
	// Chosen is the layout written, Other the other policy's.
	Chosen, Other         *ddak.Layout
	Evaluation, OtherEval ddak.Evaluation
	// Split is Hyperion's unified cache at the bins' memory (nil when the
	// topology could not be sized).
	Split *ddak.Split
	// Replaced is the policy of a layout this one replaced ("": none or
	// the same).
	Replaced ddak.Policy

	dir         string
	epochsAsked int
}

// Lay lays o.Dataset out over o.Plan's bins and writes the layout.
func Lay(ctx context.Context, o Options) (*Result, error) {
	if o.Plan.Cache != nil {
		return nil, &inputerr.Error{Msg: fmt.Sprintf("--plan %s: a plan of CPU training on this machine (recommend --this-machine) names no GPUs or SSDs to lay the features over: train it with gnnplan train --plan %s; to train out of core, place a plan of this machine's disks (gnnplan recommend --dataset DIR --save plan.json)", o.PlanPath, o.PlanPath)}
	}
	g, err := dataset.LoadGraph(o.Dataset)
	if err != nil {
		return nil, err
	}
	defer g.Close()
	if g.Meta.FeatureDim == 0 {
		return nil, &inputerr.Error{Msg: fmt.Sprintf("--dataset %s: it has no features to place", o.Dataset)}
	}
	if err := trainplan.CheckMatches(o.Plan, g.Meta, o.PlanPath); err != nil {
		return nil, err
	}
	r := &Result{Meta: g.Meta, dir: o.Dataset, epochsAsked: o.Epochs}
	rowBytes := int64(g.Meta.FeatureDim) * 4
	if r.Hotness, r.Sampling, err = hotness(ctx, o, g); err != nil {
		return nil, err
	}
	if r.Bins, err = ddak.BinsFromPlan(o.Plan, g.Meta.NumNodes, rowBytes, ddak.BinOptions{}); err != nil {
		return nil, err
	}
	if err := r.place(ctx, o); err != nil {
		return nil, err
	}
	prev, had := layout.PolicyOf(o.Dataset)
	if err := layout.Write(o.Dataset, r.Chosen, r.Bins); err != nil {
		return nil, err
	}
	if had && prev != r.Chosen.Policy {
		r.Replaced = prev
	}
	if split, err := cacheSplit(g, r.Hotness, r.Bins, rowBytes); err == nil {
		r.Split = split
	}
	return r, nil
}

// place places both policies and evaluates them.
func (r *Result) place(ctx context.Context, o Options) error {
	dk, err := ddak.PlaceContext(ctx, r.Hotness, r.Bins, ddak.Options{Priority: o.Priority, Pool: o.Pool})
	if err != nil {
		return err
	}
	hash, err := ddak.PlaceHashContext(ctx, r.Hotness, r.Bins, o.Seed)
	if err != nil {
		return err
	}
	r.Chosen, r.Other = dk, hash
	if o.Policy == ddak.PolicyHash {
		r.Chosen, r.Other = hash, dk
	}
	sockets := ddak.GPUSockets(o.Plan)
	r.Evaluation = ddak.Evaluate(r.Chosen, r.Hotness, r.Bins, sockets)
	r.OtherEval = ddak.Evaluate(r.Other, r.Hotness, r.Bins, sockets)
	return nil
}

// cacheSplit sizes Hyperion's unified cache with one GPU bin's and all
// CPU bins' memory.
func cacheSplit(g *dataset.Graph, hot []uint32, bins []ddak.Bin, rowBytes int64) (*ddak.Split, error) {
	var gpu, cpu int64
	for _, b := range bins {
		switch b.Kind {
		case tier.GPUMem:
			gpu = max(gpu, b.CapacityRows*rowBytes)
		case tier.HostMem:
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

// hotness reads o.Hotness, or pre-samples the dataset with the plan's
// fanouts and batch size and saves the counts next to the dataset.
func hotness(ctx context.Context, o Options, g *dataset.Graph) ([]uint32, *sample.HotnessReport, error) {
	if o.Hotness != "" {
		hot, err := sample.ReadHotness(o.Hotness, g.Meta.NumNodes)
		return hot, nil, err
	}
	so := sample.DefaultSamplerOptions()
	if w := o.Plan.Workload; len(w.Fanouts) > 0 {
		so.Fanouts = w.Fanouts
	}
	if w := o.Plan.Workload; w.BatchSize > 0 {
		so.BatchSize = w.BatchSize
	}
	so.Seed = o.Seed
	ho := sample.HotnessOptions{Sampler: so, Fraction: o.Fraction, Epochs: o.Epochs}
	if o.Epochs == 0 {
		ho.Stable = Stable
	}
	hot, rep, err := sample.MeasureHotness(ctx, g, ho, o.Progress)
	if err != nil {
		return nil, nil, err
	}
	if err := sample.WriteHotness(filepath.Join(o.Dataset, sample.HotnessFile), hot); err != nil {
		return nil, nil, err
	}
	return hot, rep, nil
}

// WriteText prints the layout's bins against their targets and both
// policies' distance from them; the table fits width columns (0: any).
func (r *Result) WriteText(out io.Writer, width int) error {
	sk := sample.SkewOf(r.Hotness)
	fmt.Fprintf(out, "%s: %d vertices, %d bins; hotness: top 1%% of vertices get %.1f%% of accesses, top 5%% %.1f%%, top 10%% %.1f%%\n",
		r.Meta.Name, r.Meta.NumNodes, len(r.Bins), 100*sk.Top1, 100*sk.Top5, 100*sk.Top10)
	if h := r.Sampling; h != nil {
		stable := fmt.Sprintf("stable: the last epoch moved the top shares %.2f points", 100*h.LastChange)
		if r.epochsAsked == 0 && !h.Stable {
			stable = fmt.Sprintf("not stable after %d epochs: the last moved the top shares %.2f points", h.Epochs, 100*h.LastChange)
		} else if r.epochsAsked > 0 {
			stable = "as --epochs asked"
		}
		fmt.Fprintf(out, "hotness from %d epoch(s) x %d batches (%s); of the bytes sampling and feature reads touch, %.1f%% are topology (neighbour lists), %.1f%% features\n",
			h.Epochs, h.BatchesPerEpoch, stable, 100*h.TopologyShare, 100*(1-h.TopologyShare))
	}
	t := textout.NewTable(textout.Column{Name: "BIN"}, textout.Column{Name: "KIND"}, textout.Column{Right: true, Name: "SOCKET"}, textout.Column{Right: true, Name: "ROWS"},
		textout.Column{Right: true, Name: "TARGET %"}, textout.Column{Right: true, Name: "ACHIEVED %"}, textout.Column{Right: true, Name: "ACHIEVED/TARGET"})
	for _, b := range r.Evaluation.Bins {
		t.Row(b.ID, string(b.Kind), fmt.Sprint(b.Socket), fmt.Sprint(b.Rows), fmt.Sprintf("%.2f", 100*b.TargetShare),
			fmt.Sprintf("%.2f", 100*b.Share), fmt.Sprintf("%.3f", b.Ratio))
	}
	if err := t.Write(out, width); err != nil {
		return err
	}
	line := func(name string, e ddak.Evaluation) {
		fmt.Fprintf(out, "%-5s distance from targets %.4f, SSD imbalance max %.3f mean %.3f, traffic across the socket link %.2f%%\n",
			name, e.TargetDistance, e.SSDMaxImbalance, e.SSDMeanImbalance, 100*e.CrossSocketShare)
	}
	line(string(r.Chosen.Policy), r.Evaluation)
	line(string(r.Other.Policy), r.OtherEval)
	if split := r.Split; split != nil {
		gib := func(b int64) float64 { return float64(b) / (1 << 30) }
		saved := 0.0
		if split.TxAllSSD > 0 {
			saved = 1 - split.Tx/split.TxAllSSD
		}
		fmt.Fprintf(out, "unified cache (Hyperion III-B2): GPU %.2f GiB topology + %.2f GiB features, CPU %.2f GiB topology + %.2f GiB features; %.1f%% fewer PCIe transactions than reading everything from SSD\n",
			gib(split.GPUTopologyBytes), gib(split.GPUFeatureBytes), gib(split.CPUTopologyBytes), gib(split.CPUFeatureBytes), 100*saved)
	}
	fmt.Fprintf(out, "wrote %s, %s and %s\n", filepath.Join(r.dir, "layout_bin.npy"), filepath.Join(r.dir, "layout_row.npy"), filepath.Join(r.dir, "layout.json"))
	return nil
}
