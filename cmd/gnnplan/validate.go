package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/gnnplan/gnnplan/tpc/validate"
)

type validateOptions struct {
	IO     *deps
	Output string
	Source string
}

func newValidateCmd(d *deps, runF func(context.Context, *validateOptions) error) *cobra.Command {
	opts := &validateOptions{IO: d}
	cmd := &cobra.Command{
		Use:   "validate",
		Short: "Compare the planning model's predictions with every published measurement it can model",
		Long: `Predict every measurement the papers gnnplan comes from publish with enough
detail to model (Moment's epoch times for its placements, Hyperion's epoch
times, throughput against SSD count, and out of core against in memory),
and the trainings measured on the machine that made docs/benchmarks.md,
with the same model and constants recommend plans with. Prints each case
beside its prediction and error, whether each source's order of its
configurations is kept, and the median and worst error: how far to trust
a plan.`,
		Example: `  gnnplan validate
  gnnplan validate --source moment -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runValidate(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	outputFlag(f, &opts.Output, "", "", "table", "wide", "json")
	f.StringVar(&opts.Source, "source", "", "only the cases of sources whose name contains this (e.g. moment, hyperion, \"this machine\")")
	return cmd
}

func runValidate(ctx context.Context, o *validateOptions) error {
	rep, err := validate.Run(ctx)
	if err != nil {
		return err
	}
	if o.Source != "" {
		if rep, err = rep.Only(o.Source); err != nil {
			return &usageError{msg: "--source: " + err.Error()}
		}
	}
	if o.Output == "json" {
		return writeJSON(o.IO.Out, rep)
	}
	out := newHuman(o.IO.Out, o.Output)
	if err := rep.WriteText(out, out.Width); err != nil {
		return err
	}
	return out.Flush()
}
