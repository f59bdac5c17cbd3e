package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gnnplan/gnnplan/internal/textout"
	"github.com/gnnplan/gnnplan/trainer/dataset"
)

// datasetImportOptions holds `dataset import`'s flags and the importers,
// so tests can swap them.
type datasetImportOptions struct {
	IO         *deps
	Format     string
	From       string
	Out        string
	Split      string
	SplitID    int
	Labels     string
	Undirected bool
	Header     bool
	NoHeader   bool
	Name       string

	Importers map[string]dataset.Importer
}

// datasetInfoOptions holds `dataset info`'s arguments.
type datasetInfoOptions struct {
	IO     *deps
	Dir    string
	Output string

	Info func(dir string) (*dataset.Info, error)
}

// newDatasetCmd returns the `dataset` parent command: import and info
// here; synth registers itself on the same parent.
func newDatasetCmd(d *deps) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dataset",
		Short: "Import, generate and describe graph datasets",
		Long: `A dataset is a directory of meta.json and NumPy .npy arrays: CSR indptr and
indices, float32 features, labels and train/val/test vertex ids (docs/architecture.md
section 8). "import" converts public text formats into it; "info" prints a
dataset's sizes, degree statistics and skew.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newDatasetImportCmd(d, nil), newDatasetInfoCmd(d, nil))
	addSynthCmd(cmd, d)
	return cmd
}

const datasetImportLong = `Convert a public graph dataset into a dataset directory, streaming the input.

  linqs    --from a directory holding NAME.content and NAME.cites (Cora,
           CiteSeer). Vertices in content-file order; labels are the class
           names in sorted order; undirected. --split reads
           planetoid_split_linqs_ids.tsv (or a Geom-GCN splits tsv).
  snap     --from an edge list file ("u v" lines, # comments). Ids are
           renumbered densely in order of first appearance; directed unless
           --undirected; no features. --labels reads "node label" lines.
           A first line "N M" that matches the file's vertex and edge counts
           is read as a count header, not an edge; --header and --no-header
           decide instead. The summary says which reading was taken.
  geomgcn  --from a Geom-GCN new_data/NAME directory (out1_node_feature_label.txt,
           out1_graph_edges.txt); undirected. --split reads a splits tsv,
           --split-id picks one of its splits; split ids absent from the
           graph are skipped and counted.
  planetoid --from a directory holding Planetoid's Python pickles
           ind.NAME.{x,y,tx,ty,allx,ally,graph,test.index} (Kipf's GCN and
           PyG's Planetoid input), or DIR/ind.NAME to pick one of several.
           Vertex ids are Planetoid's; undirected; the standard split
           (train = y's rows, val = the next 500, test = test.index).
  ogb      --from an OGB node-property dataset directory (raw/edge.csv.gz,
           num-node-list.csv.gz, node-feat.csv.gz, node-label.csv.gz, or
           raw/data.npz and node-label.npz; split/NAME/{train,valid,test}.csv.gz).
           Directed unless --undirected (OGB's add_inverse_edge). --split
           names the split directory when there are several.

Text inputs may be gzip-compressed (*.gz) in every format.

Self-loops are dropped and duplicate edges merged; edges naming unknown
vertices are dropped. Each is counted in the summary. The directory appears
under --out only when complete.`

func newDatasetImportCmd(d *deps, runF func(context.Context, *datasetImportOptions) error) *cobra.Command {
	opts := &datasetImportOptions{IO: d, Importers: dataset.Importers()}
	cmd := &cobra.Command{
		Use:   "import --format linqs|snap|geomgcn|planetoid|ogb --from SRC --out DIR",
		Short: "Convert a LINQS, SNAP, Geom-GCN, Planetoid or OGB dataset into a dataset directory",
		Long:  datasetImportLong,
		Example: `  gnnplan dataset import --format linqs --from cora --out data/cora \
    --split cora/planetoid_split_linqs_ids.tsv
  gnnplan dataset import --format snap --from email-Eu-core.txt --out data/email \
    --labels email-Eu-core-department-labels.txt
  gnnplan dataset import --format geomgcn --from new_data/film --out data/film \
    --split geomgcn_splits_60_20_20.tsv --split-id 0
  gnnplan dataset import --format planetoid --from planetoid/data/ind.citeseer --out data/citeseer
  gnnplan dataset import --format ogb --from dataset/ogbn_arxiv --out data/arxiv --undirected`,
		Args: datasetNoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.validate(cmd); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runDatasetImport(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Format, "format", "", "input format: "+strings.Join(dataset.ImportFormats(), ", "))
	f.StringVar(&opts.From, "from", "", "the input: a directory (linqs, geomgcn, planetoid, ogb) or an edge list file (snap)")
	f.StringVar(&opts.Out, "out", "", "the dataset directory to create (must not exist)")
	f.StringVar(&opts.Split, "split", "", "a train/val/test split file (linqs, geomgcn) or split directory name (ogb)")
	f.IntVar(&opts.SplitID, "split-id", 0, "which split of a file holding several (Geom-GCN's split_id column)")
	f.StringVar(&opts.Labels, "labels", "", `vertex labels for snap: "node label" lines`)
	f.BoolVar(&opts.Undirected, "undirected", false, "store every snap or ogb edge both ways (linqs, geomgcn and planetoid always are)")
	f.BoolVar(&opts.Header, "header", false, `snap: the first line is an "N M" count header, not an edge`)
	f.BoolVar(&opts.NoHeader, "no-header", false, "snap: the first line is an edge, even if it looks like a count header")
	f.StringVar(&opts.Name, "name", "", "the dataset's name in meta.json (default: from the input's name)")
	return cmd
}

func (o *datasetImportOptions) validate(cmd *cobra.Command) error {
	switch {
	case o.Format == "":
		return usageErrorf("--format: required (valid: %s)", strings.Join(dataset.ImportFormats(), ", "))
	case o.Importers[o.Format] == nil:
		return usageErrorf("--format: %q is not a format (valid: %s)", o.Format, strings.Join(dataset.ImportFormats(), ", "))
	case o.From == "":
		return usageErrorf("--from: required (the input to import)")
	case o.Out == "":
		return usageErrorf("--out: required (the dataset directory to create)")
	case o.SplitID < 0:
		return usageErrorf("--split-id: %d (want >= 0)", o.SplitID)
	}
	given := map[string]bool{"header": o.Header, "no-header": o.NoHeader, "split": o.Split != "", "labels": o.Labels != "",
		"split-id": cmd.Flags().Changed("split-id"), "undirected": cmd.Flags().Changed("undirected")}
	if err := dataset.CheckImportFlags(o.Format, func(f string) bool { return given[f] }); err != nil {
		return usageErrorf("%v", err)
	}
	return nil
}

func runDatasetImport(ctx context.Context, o *datasetImportOptions) error {
	opt := dataset.ImportOptions{
		Undirected: o.Undirected, SplitFile: o.Split, SplitID: o.SplitID, LabelFile: o.Labels, Name: o.Name,
		Header: headerMode(o.Header, o.NoHeader),
	}
	// A bar per input file on a terminal; elsewhere the summary on stdout
	// is the record, and stderr stays for errors.
	if textout.IsTerminal(o.IO.Err) {
		prog := textout.NewProgress(o.IO.Err)
		defer prog.Close()
		opt.Progress = prog
	}
	sum, err := o.Importers[o.Format](ctx, o.From, o.Out, opt)
	if err != nil {
		return err
	}
	return sum.WriteText(o.IO.Out, o.Out)
}

// headerMode maps --header and --no-header (validated as exclusive).
func headerMode(header, noHeader bool) dataset.HeaderMode {
	switch {
	case header:
		return dataset.HeaderYes
	case noHeader:
		return dataset.HeaderNo
	}
	return dataset.HeaderAuto
}

func newDatasetInfoCmd(d *deps, runF func(context.Context, *datasetInfoOptions) error) *cobra.Command {
	opts := &datasetInfoOptions{IO: d, Info: dataset.InfoOf}
	cmd := &cobra.Command{
		Use:   "info DIR",
		Short: "Print a dataset's sizes, splits, degree statistics and skew",
		Long: `Print a dataset directory's sizes (vertices, CSR entries, feature width,
classes, bytes on disk), its train/val/test split, degree statistics (min,
max, mean, percentiles 10 to 99.9, isolated vertices and their share) and skew: the share of
edges held by the 1%, 5% and 10% highest-degree vertices. Directed graphs
also get in-degree statistics. Reads the structure only, not the features.`,
		Example: `  gnnplan dataset info data/cora
  gnnplan dataset info data/cora -o json`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("dataset info: want one dataset directory, got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Dir = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runDatasetInfo(opts)
		},
	}
	outputFlag(cmd.Flags(), &opts.Output, "", "", "table", "wide", "json")
	return cmd
}

func datasetNoArgs(_ *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageErrorf("unexpected arguments %q (this command takes flags only)", args)
	}
	return nil
}

func runDatasetInfo(o *datasetInfoOptions) error {
	info, err := o.Info(o.Dir)
	if err != nil {
		return err
	}
	if o.Output == "json" {
		return writeJSON(o.IO.Out, info)
	}
	out := newHuman(o.IO.Out, o.Output)
	t := textout.NewTable(textout.Left("PROPERTY"), textout.Column{Name: "VALUE", Elastic: true, Wrap: true})
	rows := info.Rows()
	for _, r := range rows {
		t.Row(r[0], r[1])
	}
	if err := out.write(t); err != nil {
		return err
	}
	for _, n := range info.Notes {
		if _, err := fmt.Fprintf(out, "note: %s\n", n); err != nil {
			return err
		}
	}
	return out.Flush()
}
