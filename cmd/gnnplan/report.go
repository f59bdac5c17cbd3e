package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gnnplan/gnnplan/profiles"
	"github.com/gnnplan/gnnplan/topology"
	"github.com/gnnplan/gnnplan/topology/importer"
	"github.com/gnnplan/gnnplan/tpc"
	"github.com/gnnplan/gnnplan/tpc/report"
)

// reportOptions holds the report command's flags.
type reportOptions struct {
	IO      *deps
	Plan    string
	Machine string
	Catalog string
	Output  string
	Out     string

	Import func(ctx context.Context, path string) (*topology.Machine, error)
}

func newReportCmd(d *deps, runF func(context.Context, *reportOptions) error) *cobra.Command {
	opts := &reportOptions{IO: d, Import: importer.ImportContext}
	cmd := &cobra.Command{
		Use:   "report",
		Short: "Write a capacity review of a plan: one HTML file to share, or Markdown for a wiki",
		Long: `Write a capacity review of a plan from gnnplan recommend --save plan.json: the
machine drawn with the recommended placement and the saturated links marked,
the options ranked by TPC, TPC and throughput against SSD and GPU counts, the
bottleneck and what the next dollar buys, the distributed in-memory
alternative, and every assumption with where each figure came from
(catalog, measured, assumed).

The review prices the plan's search again (same machine, workload, budget,
models and counts), so the tables show every option. -o html (the default)
is one self-contained file (figures inline, opens without network access),
written to --out or to stdout; -o md is Markdown with the figures as SVG
files beside --out's file (review-topology.svg, review-ssds.svg,
review-gpus.svg). Without -o, --out's extension picks the format.`,
		Example: `  gnnplan recommend --budget 80000 --save plan.json && gnnplan report --plan plan.json --out review.html
  gnnplan report --plan plan.json --out review.md
  gnnplan report --plan plan.json --machine other-chassis.xml > review.html`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.Plan == "" {
				return usageErrorf("--plan: required (a plan.json from gnnplan recommend --save)")
			}
			if err := opts.checkFormat(cmd.Flags().Changed("output")); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runReport(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Plan, "plan", "", "the plan to review (plan.json from gnnplan recommend --save)")
	f.StringVar(&opts.Machine, "machine", "", "price the plan's search on this machine file's slots instead of the plan's")
	f.StringVar(&opts.Catalog, "catalog", "", "a catalog file whose entries override the built-in prices and rates (as recommend --catalog)")
	outputFlag(f, &opts.Output, "--out", "html: one self-contained file; md: Markdown with SVG figures beside --out's file", "html", "md")
	f.StringVar(&opts.Out, "out", "", "write the review to this file (default for html: stdout); without -o, a .md file asks for Markdown")
	return cmd
}

// checkFormat settles -o against --out: an unset -o takes --out's
// extension, a set one must agree with it, and Markdown needs a file for
// its figures to sit beside.
func (o *reportOptions) checkFormat(set bool) error {
	ext := strings.ToLower(filepath.Ext(o.Out))
	fromExt := map[string]string{".html": "html", ".htm": "html", ".md": "md"}[ext]
	switch {
	case o.Out != "" && fromExt == "":
		return usageErrorf("--out %s: want a .html or .md file", o.Out)
	case !set && fromExt != "":
		o.Output = fromExt
	case fromExt != "" && fromExt != o.Output:
		return usageErrorf("-o %s and --out %s: the file's extension says %s; give one or make them agree", o.Output, o.Out, fromExt)
	}
	if o.Output == "md" && o.Out == "" {
		return usageErrorf("-o md: give --out review.md; the figures are written beside it as SVG files")
	}
	return nil
}

func runReport(ctx context.Context, o *reportOptions) error {
	plan, err := tpc.LoadPlan(o.Plan)
	if err != nil {
		return err
	}
	if plan.Cache != nil {
		return usageErrorf("--plan %s: a plan of CPU training on this machine (recommend --this-machine) buys nothing to review: report reviews plans of machines to buy (gnnplan recommend --save plan.json)", o.Plan)
	}
	opt := report.Options{Version: versionString()}
	if o.Catalog != "" {
		if opt.Catalog, err = profiles.LoadCatalog(o.Catalog); err != nil {
			return err
		}
		opt.CatalogName = "catalog " + o.Catalog
	}
	if o.Machine != "" {
		if opt.Machine, err = o.Import(ctx, o.Machine); err != nil {
			return err
		}
	}
	r, err := report.Build(ctx, plan, opt)
	if err != nil {
		return err
	}
	if o.Out == "" {
		return r.WriteHTML(o.IO.Out)
	}
	if err := r.WriteFile(o.Out, o.Output == "md"); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	verdict := "recommended"
	if r.Rec.NothingToBuy != "" {
		verdict = "nothing to buy fits; reviewed as installed"
	}
	b := r.Rec.Best
	fmt.Fprintf(o.IO.Out, "wrote %s (%d options priced; %s: %d x %s + %s)\n", o.Out, r.Rec.Searched, verdict, b.GPUs, b.GPU.Key, report.SSDCount(b.SSDs, b.SSD.Key))
	return nil
}
