package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gnnplan/gnnplan/cmd/gnnplan/internal/textout"
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
			if err := checkOutput(opts.Output, "", "table", "wide", "json"); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runValidate(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&opts.Output, "output", "o", "table", "output format: table, wide, json")
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
		enc := json.NewEncoder(o.IO.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return writeValidateTable(o, rep)
}

func writeValidateTable(o *validateOptions, rep *validate.Report) error {
	out := newHuman(o.IO.Out, o.Output)
	tbl := textout.NewTable(text("SOURCE"), text("CASE"), opt(text("WHERE")), num("MEASURED"), num("PREDICTED"), num("ERROR"), opt(col("BOUND")))
	for _, r := range rep.Results {
		where := r.Where
		if r.Reading != "" {
			where += " (" + r.Reading + ")"
		}
		tbl.Row(r.Source, r.Label, where, formatMetric(r.Metric, r.Measured), formatMetric(r.Metric, r.Predicted),
			fmt.Sprintf("%+.1f%%", r.ErrorPct), r.Bound)
	}
	if err := out.write(tbl); err != nil {
		return err
	}
	fmt.Fprintln(out, "ERROR: (predicted - measured) / measured; each source's measured device rates and cache sizes are inputs (gnnplan validate -o json lists them per case)")
	for _, g := range rep.Orders {
		mark := "kept"
		if !g.Kept {
			mark = "NOT kept: " + g.Wrong
		}
		fmt.Fprintf(out, "order, %s: %s\n", g.Group, mark)
	}
	for _, s := range []struct {
		what string
		sum  validate.Summary
	}{{"published", rep.Published}, {"this machine", rep.Here}} {
		if s.sum.Cases == 0 {
			continue
		}
		fmt.Fprintf(out, "%s: %d cases from %s: median |error| %.1f%%, worst %.1f%% (%s); %d of %d orders kept\n",
			s.what, s.sum.Cases, strings.Join(s.sum.Sources, ", "), s.sum.MedianPct, s.sum.WorstPct, s.sum.WorstCase, s.sum.OrdersKept, s.sum.Orders)
	}
	if rep.Here.Cases > 0 {
		fmt.Fprintf(out, "this machine: %s\n", rep.HereMachine)
	}
	return out.Flush()
}

func formatMetric(metric string, v float64) string {
	switch metric {
	case validate.SamplesPerS:
		return fmt.Sprintf("%.0f samples/s", v)
	case validate.InletGBps:
		return fmt.Sprintf("%.3g GB/s per GPU", v)
	}
	return fmt.Sprintf("%.3g s", v)
}
