package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/gnnplan/gnnplan/ddak"
	"github.com/gnnplan/gnnplan/ddak/datalayout"
	"github.com/gnnplan/gnnplan/internal/textout"
	"github.com/gnnplan/gnnplan/tpc"
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
	enumFlag(f, &opts.Policy, "policy", string(ddak.PolicyDDAK), "placement policy: ddak or hash", string(ddak.PolicyDDAK), string(ddak.PolicyHash))
	enumFlag(f, &opts.Priority, "priority", string(ddak.DefaultPriority), "DDAK bin priority: need (traffic a bin lacks per free row), sum (Moment's code) or product (its paper)", priorityNames()...)
	f.IntVar(&opts.Pool, "pool", ddak.DefaultPool, "vertices per DDAK decision")
	f.StringVar(&opts.Hotness, "hotness", "", "per-vertex access counts (a 1-d .npy of integers, e.g. numpy.bincount's int64, one per vertex) instead of pre-sampling")
	f.Float64Var(&opts.Fraction, "fraction", 1, "share of an epoch's batches to pre-sample for hotness")
	f.IntVar(&opts.Epochs, "epochs", 0, fmt.Sprintf("epochs to pre-sample for hotness (0: until the top 1/5/10%% shares move under %.1f points, at most %d)", 100*datalayout.Stable, sample.DefaultMaxHotnessEpochs))
	f.Uint64Var(&opts.Seed, "seed", 1, "seed for pre-sampling and the hash baseline")
	outputFlag(f, &opts.Output, "", "", "table", "wide", "json")
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
	lo := datalayout.Options{Plan: plan, PlanPath: o.Plan, Dataset: o.Dataset, Policy: ddak.Policy(o.Policy), Priority: ddak.Priority(o.Priority),
		Pool: o.Pool, Seed: o.Seed, Hotness: o.Hotness, Fraction: o.Fraction, Epochs: o.Epochs}
	var prog *textout.Progress
	if o.Hotness == "" {
		prog = textout.NewProgress(o.IO.Err)
		lo.Progress = prog
	}
	r, err := datalayout.Lay(ctx, lo)
	if prog != nil {
		prog.Close()
	}
	if err != nil {
		return err
	}
	if r.Replaced != "" {
		fmt.Fprintf(o.IO.Err, "note: %s held a %s layout: replaced by this %s one (place again with --policy %s to restore it)\n",
			o.Dataset, r.Replaced, r.Chosen.Policy, r.Replaced)
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
		return writeJSON(o.IO.Out, placeReport{SchemaVersion: 1, Policy: r.Chosen.Policy, Skew: sample.SkewOf(r.Hotness), Sampling: r.Sampling, Evaluation: r.Evaluation,
			Other: map[string]ddak.Evaluation{string(r.Other.Policy): r.OtherEval}, Layout: o.Dataset})
	}
	h := newHuman(o.IO.Out, o.Output)
	if err := r.WriteText(h, h.Width); err != nil {
		return err
	}
	return h.Flush()
}

// priorityNames are DDAK's bin priorities, as --priority takes them.
func priorityNames() []string {
	var out []string
	for _, p := range ddak.Priorities() {
		out = append(out, string(p))
	}
	return out
}
