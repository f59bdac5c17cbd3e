package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gnnplan/gnnplan/profiles"
	"github.com/gnnplan/gnnplan/topology"
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

	Import func(ctx context.Context, path string) (*topology.Machine, error)
}

func newReportCmd(d *deps, runF func(context.Context, *reportOptions) error) *cobra.Command {
	opts := &reportOptions{IO: d, Import: topology.ImportContext}
	cmd := &cobra.Command{
		Use:   "report",
		Short: "Write a capacity review of a plan: one HTML file to share, or Markdown for a wiki",
		Long: `Write a capacity review of a plan from gnnplan recommend -o plan.json: the
machine drawn with the recommended placement and the saturated links marked,
the options ranked by TPC, TPC and throughput against SSD and GPU counts, the
bottleneck and what the next dollar buys, the distributed in-memory
alternative, and every assumption with where each figure came from
(catalog, measured, assumed).

The review prices the plan's search again (same machine, workload, budget,
models and counts), so the tables show every option. -o review.html writes one
self-contained file (figures inline, opens without network access);
-o review.md writes Markdown with the figures as SVG files beside it
(review-topology.svg, review-ssds.svg, review-gpus.svg).`,
		Example: `  gnnplan recommend --budget 80000 -o plan.json && gnnplan report --plan plan.json -o review.html
  gnnplan report --plan plan.json -o review.md
  gnnplan report --plan plan.json --machine other-chassis.xml -o review.html`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.Plan == "" {
				return usageErrorf("--plan: required (a plan.json from gnnplan recommend -o)")
			}
			switch strings.ToLower(filepath.Ext(opts.Output)) {
			case ".html", ".htm", ".md":
			case "":
				return usageErrorf("-o/--output: required (review.html, or review.md for a wiki)")
			default:
				return usageErrorf("-o/--output: %q: want a .html or .md file", opts.Output)
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runReport(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Plan, "plan", "", "the plan to review (plan.json from gnnplan recommend -o)")
	f.StringVar(&opts.Machine, "machine", "", "price the plan's search on this machine's slots instead of the plan's (gnnplan JSON, NCCL or hwloc XML, nvidia-smi topo -m or lspci output)")
	f.StringVar(&opts.Catalog, "catalog", "", "a catalog file whose entries override the built-in prices and rates (as recommend --catalog)")
	f.StringVarP(&opts.Output, "output", "o", "", "write the review here: .html (one self-contained file) or .md (with SVG figures beside it)")
	return cmd
}

func runReport(ctx context.Context, o *reportOptions) error {
	plan, err := tpc.LoadPlan(o.Plan)
	if err != nil {
		return err
	}
	if plan.Cache != nil {
		return usageErrorf("--plan %s: a plan of CPU training on this machine (recommend --this-machine) buys nothing to review: report reviews plans of machines to buy (gnnplan recommend -o plan.json)", o.Plan)
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
	var buf bytes.Buffer
	if strings.ToLower(filepath.Ext(o.Output)) == ".md" {
		stem := strings.TrimSuffix(o.Output, filepath.Ext(o.Output))
		if err := r.WriteMarkdown(&buf, stem); err != nil {
			return err
		}
		topo, ssds, gpus := report.Figures(stem)
		for _, fig := range []struct {
			path string
			svg  []byte
		}{{topo, r.TopologySVG}, {ssds, r.SSDPlotSVG}, {gpus, r.GPUPlotSVG}} {
			if err := topology.WriteFileAtomic(fig.path, fig.svg); err != nil {
				return fmt.Errorf("-o: %w", err)
			}
		}
	} else if err := r.WriteHTML(&buf); err != nil {
		return err
	}
	if err := topology.WriteFileAtomic(o.Output, buf.Bytes()); err != nil {
		return fmt.Errorf("-o: %w", err)
	}
	fmt.Fprintf(o.IO.Out, "wrote %s (%d options priced; recommended %d x %s + %d x %s)\n", o.Output, r.Rec.Searched,
		r.Rec.Best.GPUs, r.Rec.Best.GPU.Key, r.Rec.Best.SSDs, r.Rec.Best.SSD.Key)
	return nil
}
