package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gnnplan/gnnplan/internal/textout"
	"github.com/gnnplan/gnnplan/trainer/dataset"
)

// synthOptions holds the dataset synth command's flags.
type synthOptions struct {
	IO   *deps
	Out  string
	Opts dataset.SynthOptions
}

// addSynthCmd adds `dataset synth` to the dataset command.
func addSynthCmd(parent *cobra.Command, d *deps) {
	parent.AddCommand(newSynthCmd(d, nil))
}

func newSynthCmd(d *deps, runF func(context.Context, *synthOptions) error) *cobra.Command {
	o := &synthOptions{IO: d, Opts: dataset.DefaultSynthOptions()}
	cmd := &cobra.Command{
		Use:   "synth --out DIR [--nodes N --edges M ...]",
		Short: "Generate a power-law graph with class-correlated features, streaming to disk",
		Long: `Generate a power-law graph (Chung-Lu, or Graph500's R-MAT with --model rmat),
undirected, with homophilous classes and
features drawn around a centroid per class, so a GNN can learn it. Every byte
is a function of the options and --seed. Edges stream through sorted
temporary files, so the graph can be larger than memory; the dataset appears
under --out only when complete.`,
		Example: `  gnnplan dataset synth --out data/synth-1m --nodes 1000000 --edges 10000000 --feature-dim 128
  gnnplan dataset synth --out data/synth-10m --nodes 10000000 --edges 100000000 --feature-dim 16`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Out == "" {
				return usageErrorf("--out is required")
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runSynth(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	s := &o.Opts
	f.StringVar(&o.Out, "out", "", "dataset directory to create (must not exist)")
	f.StringVar(&s.Name, "name", s.Name, "dataset name in meta.json")
	f.Int64Var(&s.Nodes, "nodes", s.Nodes, "vertices")
	f.Int64Var(&s.Edges, "edges", s.Edges, "undirected edges to draw (the CSR holds about twice as many entries, minus self-loops and duplicates)")
	f.IntVar(&s.FeatureDim, "feature-dim", s.FeatureDim, "float32 features per vertex")
	f.IntVar(&s.Classes, "classes", s.Classes, "vertex classes")
	f.Float64Var(&s.TrainFraction, "train-fraction", s.TrainFraction, "share of vertices in the training split")
	f.Float64Var(&s.ValFraction, "val-fraction", s.ValFraction, "share of vertices in the validation split")
	f.Float64Var(&s.TestFraction, "test-fraction", s.TestFraction, "share of vertices in the test split")
	f.Uint64Var(&s.Seed, "seed", s.Seed, "seed")
	f.StringVar(&s.Model, "model", s.Model, "edge model: powerlaw (Chung-Lu, few isolated vertices) or rmat (Graph500)")
	f.Float64Var(&s.Exponent, "exponent", s.Exponent, "power-law exponent gamma of the degree distribution (powerlaw model; above 2, at most 4)")
	f.Float64Var(&s.A, "rmat-a", s.A, "R-MAT quadrant probability a")
	f.Float64Var(&s.B, "rmat-b", s.B, "R-MAT quadrant probability b")
	f.Float64Var(&s.C, "rmat-c", s.C, "R-MAT quadrant probability c")
	f.Float64Var(&s.Homophily, "homophily", s.Homophily, "probability an edge stays within its source's community (by default its class)")
	f.IntVar(&s.Communities, "communities", s.Communities, "communities in all, a multiple of --classes, each class split into communities/classes of them (0: one a class)")
	f.Float64Var(&s.Separation, "separation", s.Separation, "distance of the class centroids from the origin")
	f.Float64Var(&s.NoiseSigma, "noise-sigma", s.NoiseSigma, "feature noise per dimension")
	f.Int64Var(&s.SortBufferBytes, "sort-buffer-bytes", s.SortBufferBytes, "memory for sorting edges (bytes)")
	return cmd
}

func runSynth(ctx context.Context, o *synthOptions) error {
	prog := textout.NewProgress(o.IO.Err)
	sum, err := dataset.Synth(ctx, o.Opts, o.Out, prog)
	prog.Close()
	if err != nil {
		return err
	}
	out := o.IO.Out
	fmt.Fprintf(out, "wrote %s: %d vertices, %d CSR entries (%d self-loops and %d duplicate entries dropped)\n",
		o.Out, sum.Nodes, sum.Edges, sum.SelfLoopsDropped, sum.DuplicatesDropped)
	fmt.Fprintf(out, "%.1f s, %.1f MiB peak heap, %.1f MiB on disk\n", sum.Seconds, float64(sum.PeakHeapBytes)/(1<<20), float64(sum.DiskBytes)/(1<<20))
	return nil
}
