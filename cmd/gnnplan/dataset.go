package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gnnplan/gnnplan/cmd/gnnplan/internal/textout"
	"github.com/gnnplan/gnnplan/trainer/dataset"
)

// datasetImporter is the signature shared by package dataset's importers.
type datasetImporter func(ctx context.Context, src, out string, opt dataset.ImportOptions) (*dataset.ImportSummary, error)

// importFormats lists the --format values, in the order help shows them.
func importFormats() []string { return []string{"linqs", "snap", "geomgcn", "planetoid", "ogb"} }

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

	Importers map[string]datasetImporter
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

func newDatasetImportCmd(d *deps, runF func(context.Context, *datasetImportOptions) error) *cobra.Command {
	opts := &datasetImportOptions{IO: d, Importers: map[string]datasetImporter{
		"linqs":     dataset.ImportLINQS,
		"snap":      dataset.ImportSNAP,
		"geomgcn":   dataset.ImportGeomGCN,
		"planetoid": dataset.ImportPlanetoid,
		"ogb":       dataset.ImportOGB,
	}}
	cmd := &cobra.Command{
		Use:   "import --format linqs|snap|geomgcn|planetoid|ogb --from SRC --out DIR",
		Short: "Convert a LINQS, SNAP, Geom-GCN, Planetoid or OGB dataset into a dataset directory",
		Long: `Convert a public graph dataset into a dataset directory, streaming the input.

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
under --out only when complete.`,
		Example: `  gnnplan dataset import --format linqs --from shared/datasets/cora --out data/cora \
    --split shared/datasets/cora/planetoid_split_linqs_ids.tsv
  gnnplan dataset import --format snap --from email-Eu-core.txt --out data/email \
    --labels email-Eu-core-department-labels.txt
  gnnplan dataset import --format geomgcn --from shared/datasets/geomgcn-film --out data/film \
    --split shared/datasets/geomgcn-film/geomgcn_splits_60_20_20.tsv --split-id 0
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
	f.StringVar(&opts.Format, "format", "", "input format: "+strings.Join(importFormats(), ", "))
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
		return usageErrorf("--format: required (valid: %s)", strings.Join(importFormats(), ", "))
	case o.Importers[o.Format] == nil:
		return usageErrorf("--format: %q is not a format (valid: %s)", o.Format, strings.Join(importFormats(), ", "))
	case o.From == "":
		return usageErrorf("--from: required (the input to import)")
	case o.Out == "":
		return usageErrorf("--out: required (the dataset directory to create)")
	case o.SplitID < 0:
		return usageErrorf("--split-id: %d (want >= 0)", o.SplitID)
	}
	if o.Header && o.NoHeader {
		return usageErrorf("--header and --no-header: give one")
	}
	if (o.Header || o.NoHeader) && o.Format != "snap" {
		return usageErrorf("--header/--no-header: only for --format snap (edge lists)")
	}
	if o.Format == "snap" {
		if o.Split != "" {
			return usageErrorf("--split: SNAP edge lists have no split")
		}
		if cmd.Flags().Changed("split-id") {
			return usageErrorf("--split-id: SNAP edge lists have no split")
		}
		return nil
	}
	if o.Labels != "" {
		return usageErrorf("--labels: only for --format snap (%s files carry their labels)", o.Format)
	}
	if cmd.Flags().Changed("undirected") && o.Format != "ogb" {
		return usageErrorf("--undirected: only for --format snap or ogb (%s graphs are always undirected)", o.Format)
	}
	if o.Format == "planetoid" && (o.Split != "" || cmd.Flags().Changed("split-id")) {
		return usageErrorf("--split: planetoid files imply their split (train = y's rows, val = the next 500, test = test.index)")
	}
	if o.Format == "ogb" && cmd.Flags().Changed("split-id") {
		return usageErrorf("--split-id: OGB splits are chosen by name with --split")
	}
	if cmd.Flags().Changed("split-id") && o.Split == "" {
		return usageErrorf("--split-id: needs --split")
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
	if isTerminal(o.IO.Err) {
		prog := newPhaseProgress(o.IO.Err)
		defer prog.Close()
		opt.Progress = prog
	}
	sum, err := o.Importers[o.Format](ctx, o.From, o.Out, opt)
	if err != nil {
		return err
	}
	return writeImportSummary(o.IO.Out, o.Out, sum)
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

// writeImportSummary prints one "key: value" line per fact, stable for
// scripts and readable for people.
func writeImportSummary(w io.Writer, out string, s *dataset.ImportSummary) error {
	lines := []struct {
		key string
		val any
	}{
		{"format", s.Format},
		{"out", out},
		{"nodes", s.Nodes},
		{"edges (CSR entries)", s.Edges},
		{"undirected edges", s.UndirectedEdges},
		{"features", s.Features},
		{"classes", s.Classes},
		{"dropped edges (unknown vertex)", s.DroppedEdges},
		{"self-loops dropped", s.SelfLoops},
		{"duplicate edges merged", s.Duplicates},
		{"train", s.Train},
		{"val", s.Val},
		{"test", s.Test},
	}
	for _, l := range lines {
		if _, err := fmt.Fprintf(w, "%s: %v\n", l.key, l.val); err != nil {
			return err
		}
	}
	for _, n := range s.Notes {
		if _, err := fmt.Fprintf(w, "note: %s\n", n); err != nil {
			return err
		}
	}
	return nil
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
			if err := checkOutput(opts.Output, "", "table", "wide", "json"); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runDatasetInfo(opts)
		},
	}
	cmd.Flags().StringVarP(&opts.Output, "output", "o", "table", "output format: table, wide, json")
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
		enc := json.NewEncoder(o.IO.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(info)
	}
	out := newHuman(o.IO.Out, o.Output)
	t := textout.NewTable(col("PROPERTY"), textout.Column{Name: "VALUE", Elastic: true, Wrap: true})
	rows := [][]string{
		{"name", info.Name},
		{"source", info.Source},
		{"nodes", fmt.Sprint(info.NumNodes)},
		{"edges (CSR entries)", fmt.Sprint(info.NumEdges)},
		{"undirected", fmt.Sprint(info.Undirected)},
		{"feature dim", fmt.Sprint(info.FeatureDim)},
		{"classes", fmt.Sprint(info.NumClasses)},
		{"labeled nodes", fmt.Sprint(info.NumLabeled)},
		{"train / val / test", fmt.Sprintf("%d / %d / %d", info.NumTrain, info.NumVal, info.NumTest)},
	}
	rows = append(rows, []string{"isolated vertices", fmt.Sprintf("%d (%.2f%%)", info.IsolatedVertices, 100*info.IsolatedShare)})
	if info.InDegree == nil {
		rows = append(rows, datasetDegreeRows("degree", info.Degree)...)
	} else {
		rows = append(rows, datasetDegreeRows("out-degree", info.Degree)...)
		rows = append(rows, datasetDegreeRows("in-degree", *info.InDegree)...)
	}
	rows = append(rows,
		[]string{"feature bytes", datasetBytes(info.FeatureBytes)},
		[]string{"topology bytes", datasetBytes(info.TopologyBytes)})
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

func datasetDegreeRows(what string, s dataset.DegreeStats) [][]string {
	return [][]string{
		{what + " min / max", fmt.Sprintf("%d / %d", s.Min, s.Max)},
		{what + " mean", fmt.Sprintf("%.2f", s.Mean)},
		{what + " p10 / p25 / median / p75 / p90", fmt.Sprintf("%.1f / %.1f / %.1f / %.1f / %.1f", s.P10, s.P25, s.Median, s.P75, s.P90)},
		{what + " p99 / p99.9", fmt.Sprintf("%.1f / %.1f", s.P99, s.P999)},
		{what + " 0 (vertices)", fmt.Sprint(s.Zero)},
		{what + " skew: top 1% / 5% / 10% hold", fmt.Sprintf("%.1f%% / %.1f%% / %.1f%% of edges", 100*s.Top1PctShare, 100*s.Top5PctShare, 100*s.Top10PctShare)},
	}
}

// datasetBytes gives exact bytes and a binary-prefixed size.
func datasetBytes(n int64) string {
	units := []string{"KiB", "MiB", "GiB", "TiB"}
	v, u := float64(n), ""
	for _, name := range units {
		if v < 1024 {
			break
		}
		v, u = v/1024, name
	}
	if u == "" {
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%d B (%.1f %s)", n, v, u)
}
