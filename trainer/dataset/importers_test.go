package dataset

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gnnplan/gnnplan/internal/inputerr"
	"github.com/gnnplan/gnnplan/trainer/internal/testcora"
)

// sharedDatasets is where the shared graph fixtures live (see
// SOURCES.md there for what each file holds and its verified counts).
const sharedDatasets = "../../../shared/datasets"

// needShared returns a shared fixture's path, or skips the test saying
// what is missing. Cora is also bundled (testdata/cora/cora.tgz) and
// unpacked when the shared copy is absent.
func needShared(t testing.TB, rel string) string {
	t.Helper()
	p := filepath.Join(sharedDatasets, rel)
	if _, err := os.Stat(p); err == nil {
		return p
	}
	if strings.HasPrefix(rel, "cora/") {
		if dir := testcora.Unpack(t); dir != "" {
			if _, err := os.Stat(filepath.Join(dir, rel)); err == nil {
				return filepath.Join(dir, rel)
			}
		}
	}
	t.Skipf("shared fixture %s is absent: these counts are checked only beside ../shared/datasets", p)
	return ""
}

const importTestdata = "testdata/import"

// importCase describes one import and the counts it must give.
type importCase struct {
	name   string
	format string
	src    string // relative to sharedDatasets when shared, else to the test
	shared bool
	opt    ImportOptions
	want   ImportSummary // Notes are not compared
}

func runImport(ctx context.Context, format, src, out string, opt ImportOptions) (*ImportSummary, error) {
	switch format {
	case "linqs":
		return ImportLINQS(ctx, src, out, opt)
	case "snap":
		return ImportSNAP(ctx, src, out, opt)
	case "geomgcn":
		return ImportGeomGCN(ctx, src, out, opt)
	case "planetoid":
		return ImportPlanetoid(ctx, src, out, opt)
	case "ogb":
		return ImportOGB(ctx, src, out, opt)
	}
	return nil, fmt.Errorf("no format %q", format)
}

// checkImport imports tc, compares the summary and checks that the
// written dataset loads with the same counts.
func checkImport(t *testing.T, tc importCase) *Graph {
	t.Helper()
	src := tc.src
	if tc.shared {
		src = needShared(t, tc.src)
		if tc.opt.SplitFile != "" {
			tc.opt.SplitFile = needShared(t, tc.opt.SplitFile)
		}
		if tc.opt.LabelFile != "" {
			tc.opt.LabelFile = needShared(t, tc.opt.LabelFile)
		}
	}
	out := filepath.Join(t.TempDir(), "ds")
	sum, err := runImport(context.Background(), tc.format, src, out, tc.opt)
	if err != nil {
		t.Fatal(err)
	}
	got := *sum
	got.Notes = nil
	if !reflect.DeepEqual(got, tc.want) {
		t.Errorf("summary\n got %+v\nwant %+v", got, tc.want)
	}
	g, err := LoadGraph(out)
	if err != nil {
		t.Fatalf("the import does not load: %v", err)
	}
	m := g.Meta
	if m.NumNodes != sum.Nodes || m.NumEdges != sum.Edges || m.FeatureDim != sum.Features || m.NumClasses != sum.Classes ||
		m.NumTrain != sum.Train || m.NumVal != sum.Val || m.NumTest != sum.Test {
		t.Errorf("meta %+v disagrees with the summary %+v", m, sum)
	}
	if !reflect.DeepEqual(m.Notes, sum.Notes) {
		t.Errorf("meta notes %q, summary notes %q", m.Notes, sum.Notes)
	}
	checkCSRInvariants(t, g)
	return g
}

// checkCSRInvariants: rows sorted strictly (no duplicates), no
// self-loops, and for an undirected graph every edge stored both ways.
func checkCSRInvariants(t *testing.T, g *Graph) {
	t.Helper()
	for v := int64(0); v < g.Meta.NumNodes; v++ {
		nb := g.Neighbors(v)
		for i, u := range nb {
			if int64(u) == v {
				t.Fatalf("vertex %d has a self-loop", v)
			}
			if i > 0 && nb[i-1] >= u {
				t.Fatalf("row %d not strictly sorted: %v", v, nb)
			}
			if g.Meta.Undirected {
				if _, ok := slices.BinarySearch(g.Neighbors(int64(u)), int32(v)); !ok {
					t.Fatalf("edge %d-%d stored one way only", v, u)
				}
			}
		}
	}
}

func TestImportCounts(t *testing.T) {
	cases := []importCase{
		{name: "cora with the planetoid split", format: "linqs", src: "cora", shared: true,
			opt: ImportOptions{SplitFile: "cora/planetoid_split_linqs_ids.tsv"},
			// SOURCES.md: 5429 cite lines, 5278 unique undirected edges, no
			// self-loops, every endpoint present: 151 lines repeat a pair.
			want: ImportSummary{Format: "linqs", Nodes: 2708, Edges: 10556, UndirectedEdges: 5278, Features: 1433, Classes: 7,
				Duplicates: 151, Train: 140, Val: 500, Test: 1000}},
		{name: "cora with geom-gcn split 0 by paper id", format: "linqs", src: "cora", shared: true,
			opt:  ImportOptions{SplitFile: "cora/geomgcn_splits_60_20_20.tsv"},
			want: ImportSummary{Format: "linqs", Nodes: 2708, Edges: 10556, UndirectedEdges: 5278, Features: 1433, Classes: 7, Duplicates: 151, Train: 1192, Val: 796, Test: 497}},
		{name: "cora without a split", format: "linqs", src: "cora", shared: true,
			want: ImportSummary{Format: "linqs", Nodes: 2708, Edges: 10556, UndirectedEdges: 5278, Features: 1433, Classes: 7, Duplicates: 151}},
		{name: "email-Eu-core directed keeps self-loop-only vertices", format: "snap", src: "snap-email-Eu-core/email-Eu-core.txt", shared: true,
			opt: ImportOptions{LabelFile: "snap-email-Eu-core/email-Eu-core-department-labels.txt"},
			// 25,571 lines, 642 self-loops, no repeated ordered pair; 1005
			// nodes (19 appear only in self-loops); 42 departments.
			want: ImportSummary{Format: "snap", Nodes: 1005, Edges: 24929, UndirectedEdges: 16064, Classes: 42, SelfLoops: 642}},
		{name: "email-Eu-core undirected merges reverse pairs", format: "snap", src: "snap-email-Eu-core/email-Eu-core.txt", shared: true,
			opt:  ImportOptions{Undirected: true},
			want: ImportSummary{Format: "snap", Nodes: 1005, Edges: 2 * 16064, UndirectedEdges: 16064, SelfLoops: 642, Duplicates: 24929 - 16064}},
		{name: "ego-facebook directed as listed", format: "snap", src: "snap-ego-facebook/facebook_combined.txt", shared: true,
			want: ImportSummary{Format: "snap", Nodes: 4039, Edges: 88234, UndirectedEdges: 88234}},
		{name: "ego-facebook undirected", format: "snap", src: "snap-ego-facebook/facebook_combined.txt", shared: true,
			opt:  ImportOptions{Undirected: true},
			want: ImportSummary{Format: "snap", Nodes: 4039, Edges: 2 * 88234, UndirectedEdges: 88234}},
		{name: "film with geom-gcn split 0", format: "geomgcn", src: "geomgcn-film", shared: true,
			opt: ImportOptions{SplitFile: "geomgcn-film/geomgcn_splits_60_20_20.tsv"},
			// 33,391 edge lines, 122 self-loops, 26,659 undirected: 6610 repeats.
			want: ImportSummary{Format: "geomgcn", Nodes: 7600, Edges: 2 * 26659, UndirectedEdges: 26659, Features: 932, Classes: 5,
				SelfLoops: 122, Duplicates: 33391 - 122 - 26659, Train: 3648, Val: 2432, Test: 1520}},
		{name: "film split 9", format: "geomgcn", src: "geomgcn-film", shared: true,
			opt: ImportOptions{SplitFile: "geomgcn-film/geomgcn_splits_60_20_20.tsv", SplitID: 9},
			want: ImportSummary{Format: "geomgcn", Nodes: 7600, Edges: 2 * 26659, UndirectedEdges: 26659, Features: 932, Classes: 5,
				SelfLoops: 122, Duplicates: 6610, Train: 3648, Val: 2432, Test: 1520}},
		{name: "linqs citation to a missing paper is dropped and counted", format: "linqs", src: importTestdata + "/linqs-tiny",
			opt:  ImportOptions{SplitFile: importTestdata + "/linqs-tiny-split.tsv"},
			want: ImportSummary{Format: "linqs", Nodes: 4, Edges: 4, UndirectedEdges: 2, Features: 3, Classes: 3, DroppedEdges: 1, SelfLoops: 1, Duplicates: 1, Train: 1, Val: 1, Test: 1}},
		{name: "snap directed with comments, repeats and an extra column", format: "snap", src: importTestdata + "/snap-tiny.txt",
			want: ImportSummary{Format: "snap", Nodes: 3, Edges: 3, UndirectedEdges: 2, SelfLoops: 1, Duplicates: 1}},
		{name: "snap undirected counts a reverse pair as a duplicate", format: "snap", src: importTestdata + "/snap-tiny.txt",
			opt:  ImportOptions{Undirected: true},
			want: ImportSummary{Format: "snap", Nodes: 3, Edges: 4, UndirectedEdges: 2, SelfLoops: 1, Duplicates: 2}},
		{name: "snap labels add an unseen node as isolated", format: "snap", src: importTestdata + "/snap-tiny.txt",
			opt:  ImportOptions{LabelFile: importTestdata + "/snap-tiny-labels.txt"},
			want: ImportSummary{Format: "snap", Nodes: 4, Edges: 3, UndirectedEdges: 2, Classes: 3, SelfLoops: 1, Duplicates: 1}},
		{name: "geomgcn dense features out of id order", format: "geomgcn", src: importTestdata + "/geomgcn-dense",
			opt:  ImportOptions{SplitFile: importTestdata + "/geomgcn-splits.tsv", SplitID: 1},
			want: ImportSummary{Format: "geomgcn", Nodes: 3, Edges: 4, UndirectedEdges: 2, Features: 3, Classes: 3, DroppedEdges: 1, SelfLoops: 1, Duplicates: 1, Train: 1, Val: 1, Test: 1}},
		{name: "geomgcn sparse index beyond the header's width widens", format: "geomgcn", src: importTestdata + "/geomgcn-sparse",
			want: ImportSummary{Format: "geomgcn", Nodes: 3, Edges: 4, UndirectedEdges: 2, Features: 4, Classes: 2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { checkImport(t, tc) })
	}
}

func TestImportCoraContent(t *testing.T) {
	g := checkImport(t, importCase{format: "linqs", src: "cora", shared: true,
		opt: ImportOptions{SplitFile: "cora/planetoid_split_linqs_ids.tsv"},
		want: ImportSummary{Format: "linqs", Nodes: 2708, Edges: 10556, UndirectedEdges: 5278, Features: 1433, Classes: 7,
			Duplicates: 151, Train: 140, Val: 500, Test: 1000}})
	// SOURCES.md's histogram, by class name; labels are sorted names.
	wantHist := []int{298, 418, 818, 426, 217, 180, 351} // Case_Based .. Theory
	hist := make([]int, 7)
	for _, l := range g.Labels {
		hist[l]++
	}
	if !slices.Equal(hist, wantHist) {
		t.Errorf("label histogram %v, want %v (sorted class names)", hist, wantHist)
	}
	// The Planetoid train set has exactly 20 per class.
	perClass := make([]int, 7)
	for _, v := range g.Train {
		perClass[g.Labels[v]]++
	}
	if !slices.Equal(perClass, []int{20, 20, 20, 20, 20, 20, 20}) {
		t.Errorf("train per class %v, want 20 each", perClass)
	}
	// 49,216 ones in the feature matrix; vertex 0 is the first content
	// line, paper 31336.
	fr, err := OpenFeatures(g.Dir, g.Meta)
	if err != nil {
		t.Fatal(err)
	}
	defer fr.Close()
	row := make([]float32, g.Meta.FeatureDim)
	var ones float64
	for v := int64(0); v < g.Meta.NumNodes; v++ {
		if err := fr.Row(v, row); err != nil {
			t.Fatal(err)
		}
		for _, x := range row {
			ones += float64(x)
		}
	}
	if ones != 49216 {
		t.Errorf("feature matrix holds %v ones, want 49216", ones)
	}
	first := firstContentLine(t, needShared(t, "cora/cora.content"))
	if err := fr.Row(0, row); err != nil {
		t.Fatal(err)
	}
	for i, s := range first[1 : len(first)-1] {
		if want := float32(s[0] - '0'); row[i] != want {
			t.Fatalf("vertex 0 feature %d = %v, want %v from the first content line", i, row[i], want)
		}
	}
}

func firstContentLine(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<16)
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(line)
}

func TestImportTinyContents(t *testing.T) {
	t.Run("linqs vertices in content order, labels by sorted class name", func(t *testing.T) {
		g := checkImport(t, importCase{format: "linqs", src: importTestdata + "/linqs-tiny",
			opt:  ImportOptions{SplitFile: importTestdata + "/linqs-tiny-split.tsv"},
			want: ImportSummary{Format: "linqs", Nodes: 4, Edges: 4, UndirectedEdges: 2, Features: 3, Classes: 3, DroppedEdges: 1, SelfLoops: 1, Duplicates: 1, Train: 1, Val: 1, Test: 1}})
		wantCSR(t, g, []int64{0, 2, 3, 3, 4}, []int32{1, 3, 0, 0})
		if want := []int64{2, 0, 2, 1}; !slices.Equal(g.Labels, want) { // AI=0, ML=1, Theory=2
			t.Errorf("labels %v, want %v", g.Labels, want)
		}
		if !slices.Equal(g.Train, []int64{0}) || !slices.Equal(g.Val, []int64{1}) || !slices.Equal(g.Test, []int64{3}) {
			t.Errorf("split %v/%v/%v, want [0]/[1]/[3]", g.Train, g.Val, g.Test)
		}
		wantRow(t, g, 2, []float32{1, 1, 0})
	})
	t.Run("snap ids renumbered by first appearance", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "ds")
		if _, err := ImportSNAP(context.Background(), importTestdata+"/snap-tiny.txt", out, ImportOptions{LabelFile: importTestdata + "/snap-tiny-labels.txt"}); err != nil {
			t.Fatal(err)
		}
		g, err := LoadGraph(out)
		if err != nil {
			t.Fatal(err)
		}
		// 100->0, 7->1, 42->2, and 9 (labels only) ->3.
		wantCSR(t, g, []int64{0, 1, 2, 3, 3}, []int32{1, 0, 0})
		if want := []int64{0, 1, -1, 2}; !slices.Equal(g.Labels, want) {
			t.Errorf("labels %v, want %v", g.Labels, want)
		}
		orig, err := readInt64s(filepath.Join(out, OriginalIDsFile), 4)
		if err != nil || !slices.Equal(orig, []int64{100, 7, 42, 9}) {
			t.Errorf("original ids %v (%v), want [100 7 42 9]", orig, err)
		}
		if g.Meta.FeatureDim != 0 || g.Meta.Undirected {
			t.Errorf("meta %+v: want directed, no features", g.Meta)
		}
		// A featureless dataset still opens like any other.
		fr, err := OpenFeatures(out, g.Meta)
		if err != nil {
			t.Fatalf("features.npy of a featureless import: %v", err)
		}
		fr.Close()
	})
	t.Run("geomgcn rows follow node ids, not line order", func(t *testing.T) {
		g := checkImport(t, importCase{format: "geomgcn", src: importTestdata + "/geomgcn-dense",
			opt:  ImportOptions{SplitFile: importTestdata + "/geomgcn-splits.tsv"},
			want: ImportSummary{Format: "geomgcn", Nodes: 3, Edges: 4, UndirectedEdges: 2, Features: 3, Classes: 3, DroppedEdges: 1, SelfLoops: 1, Duplicates: 1, Train: 1, Val: 1, Test: 1}})
		wantCSR(t, g, []int64{0, 1, 3, 4}, []int32{1, 0, 2, 1})
		wantRow(t, g, 2, []float32{0.5, 0, 1})
		wantRow(t, g, 0, []float32{1, 0, 0})
		if want := []int64{0, 2, 1}; !slices.Equal(g.Labels, want) {
			t.Errorf("labels %v, want %v", g.Labels, want)
		}
	})
	t.Run("geomgcn sparse index lists become 0/1 rows", func(t *testing.T) {
		g := checkImport(t, importCase{format: "geomgcn", src: importTestdata + "/geomgcn-sparse",
			want: ImportSummary{Format: "geomgcn", Nodes: 3, Edges: 4, UndirectedEdges: 2, Features: 4, Classes: 2}})
		wantRow(t, g, 1, []float32{1, 0, 0, 1})
		wantRow(t, g, 2, []float32{0, 1, 1, 0})
	})
}

func TestImportFilmFeatures(t *testing.T) {
	g := checkImport(t, importCase{format: "geomgcn", src: "geomgcn-film", shared: true,
		want: ImportSummary{Format: "geomgcn", Nodes: 7600, Edges: 2 * 26659, UndirectedEdges: 26659, Features: 932, Classes: 5,
			SelfLoops: 122, Duplicates: 6610}})
	hist := make([]int, 5)
	for _, l := range g.Labels {
		hist[l]++
	}
	if want := []int{1337, 1815, 1965, 853, 1630}; !slices.Equal(slices.Sorted(slices.Values(hist)), slices.Sorted(slices.Values(want))) {
		t.Errorf("label histogram %v, want the counts %v (SOURCES.md)", hist, want)
	}
	// The file's first node line is "4873<TAB>521,92,111,77,770<TAB>3".
	row := make([]float32, 932)
	fr, err := OpenFeatures(g.Dir, g.Meta)
	if err != nil {
		t.Fatal(err)
	}
	defer fr.Close()
	if err := fr.Row(4873, row); err != nil {
		t.Fatal(err)
	}
	var on []int
	for i, x := range row {
		if x != 0 {
			on = append(on, i)
		}
	}
	if !slices.Equal(on, []int{77, 92, 111, 521, 770}) || g.Labels[4873] != 3 {
		t.Errorf("node 4873: features on at %v label %d, want [77 92 111 521 770] label 3", on, g.Labels[4873])
	}
}

func wantCSR(t *testing.T, g *Graph, indptr []int64, indices []int32) {
	t.Helper()
	if !slices.Equal(g.Indptr, indptr) || !slices.Equal(g.Indices, indices) {
		t.Errorf("CSR %v %v, want %v %v", g.Indptr, g.Indices, indptr, indices)
	}
}

func wantRow(t *testing.T, g *Graph, v int64, want []float32) {
	t.Helper()
	fr, err := OpenFeatures(g.Dir, g.Meta)
	if err != nil {
		t.Fatal(err)
	}
	defer fr.Close()
	row := make([]float32, g.Meta.FeatureDim)
	if err := fr.Row(v, row); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(row, want) {
		t.Errorf("row %d = %v, want %v", v, row, want)
	}
}

// writeFiles makes a directory of small files for bad-input cases.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestImportBadInput(t *testing.T) {
	const content = "p1\t1\t0\tA\np2\t0\t1\tB\n"
	const nodes = "node_id\tfeature\tlabel\n0\t1,0\t0\n1\t0,1\t1\n"
	cases := []struct {
		name   string
		format string
		files  map[string]string
		src    string // file or "." for the directory
		opt    ImportOptions
		want   string // in the error: file and line
	}{
		{"content line with a missing feature column", "linqs",
			map[string]string{"x.content": content + "p3\t1\tA\n", "x.cites": "p1\tp2\n"}, ".", ImportOptions{}, "x.content:3: 1 feature columns, want 2"},
		{"content line with a word that is not a number", "linqs",
			map[string]string{"x.content": content + "p3\t1\tyes\tA\n", "x.cites": "p1\tp2\n"}, ".", ImportOptions{}, "x.content:3: paper p3: feature 2"},
		{"paper listed twice", "linqs",
			map[string]string{"x.content": content + "p1\t1\t1\tA\n", "x.cites": "p1\tp2\n"}, ".", ImportOptions{}, "x.content:3: paper p1 appears twice"},
		{"empty content file", "linqs",
			map[string]string{"x.content": "", "x.cites": "p1\tp2\n"}, ".", ImportOptions{}, "x.content: empty"},
		{"empty cites file", "linqs",
			map[string]string{"x.content": content, "x.cites": "\n"}, ".", ImportOptions{}, "x.cites: empty"},
		{"cites line with three ids", "linqs",
			map[string]string{"x.content": content, "x.cites": "p1\tp2\np1\tp2\tp1\n"}, ".", ImportOptions{}, "x.cites:2: 3 columns"},
		{"no cites file", "linqs",
			map[string]string{"x.content": content}, ".", ImportOptions{}, "no *.cites file"},
		{"split naming an unknown paper", "linqs",
			map[string]string{"x.content": content, "x.cites": "p1\tp2\n", "s.tsv": "split\tpaper_id\ntrain\tp1\ntest\tghost\n"}, ".",
			ImportOptions{SplitFile: "s.tsv"}, "s.tsv:3: paper_id ghost is not in the dataset"},
		{"split whose label disagrees", "linqs",
			map[string]string{"x.content": content, "x.cites": "p1\tp2\n", "s.tsv": "split\tpaper_id\tlabel\ntrain\tp1\tB\n"}, ".",
			ImportOptions{SplitFile: "s.tsv"}, "s.tsv:2: paper_id p1 has label B here but A"},
		{"split listing a paper twice", "linqs",
			map[string]string{"x.content": content, "x.cites": "p1\tp2\n", "s.tsv": "split\tpaper_id\ntrain\tp1\ntest\tp1\n"}, ".",
			ImportOptions{SplitFile: "s.tsv"}, "s.tsv:3: paper_id p1 is already in the split on line 2"},
		{"split without a header", "linqs",
			map[string]string{"x.content": content, "x.cites": "p1\tp2\n", "s.tsv": "train\tp1\n"}, ".",
			ImportOptions{SplitFile: "s.tsv"}, "s.tsv:1: header"},
		{"split with an unknown set", "linqs",
			map[string]string{"x.content": content, "x.cites": "p1\tp2\n", "s.tsv": "split\tpaper_id\ndev\tp1\n"}, ".",
			ImportOptions{SplitFile: "s.tsv"}, `s.tsv:2: set "dev"`},
		{"split id the file does not hold", "geomgcn",
			map[string]string{"out1_node_feature_label.txt": nodes, "out1_graph_edges.txt": "0\t1\n", "s.tsv": "split_id\tset\tnode_id\n0\ttrain\t0\n"}, ".",
			ImportOptions{SplitFile: "s.tsv", SplitID: 3}, "--split-id: 3: the file holds split ids 0"},
		{"snap id that is not a number", "snap",
			map[string]string{"e.txt": "# c\n1 2\n3 x4\n"}, "e.txt", ImportOptions{}, `e.txt:3: target vertex: "x4" is not a non-negative integer`},
		{"snap negative id", "snap",
			map[string]string{"e.txt": "-1 2\n"}, "e.txt", ImportOptions{}, `e.txt:1: source vertex`},
		{"snap line with one id", "snap",
			map[string]string{"e.txt": "1 2\n3\n"}, "e.txt", ImportOptions{}, `e.txt:2: "3": want two vertex ids`},
		{"snap file with only comments", "snap",
			map[string]string{"e.txt": "# nothing\n\n"}, "e.txt", ImportOptions{}, "e.txt: empty"},
		{"snap label that is not a number", "snap",
			map[string]string{"e.txt": "1 2\n", "l.txt": "1 sales\n"}, "e.txt", ImportOptions{LabelFile: "l.txt"}, "l.txt:1: want \"node label\""},
		{"snap node labelled twice", "snap",
			map[string]string{"e.txt": "1 2\n", "l.txt": "1 0\n1 1\n"}, "e.txt", ImportOptions{LabelFile: "l.txt"}, "l.txt:2: node 1 is labelled twice"},
		{"geomgcn node ids with a gap", "geomgcn",
			map[string]string{"out1_node_feature_label.txt": "node_id\tfeature\tlabel\n0\t1,0\t0\n2\t0,1\t1\n", "out1_graph_edges.txt": "0\t2\n"}, ".",
			ImportOptions{}, "out1_node_feature_label.txt: node ids must run densely from 0 to 2: 1 is missing"},
		{"geomgcn dense rows of different widths", "geomgcn",
			map[string]string{"out1_node_feature_label.txt": nodes + "2\t1\t0\n", "out1_graph_edges.txt": "0\t1\n"}, ".",
			ImportOptions{}, "out1_node_feature_label.txt:4: node 2 has 1 feature values, line 2 has 2"},
		{"geomgcn line with two columns", "geomgcn",
			map[string]string{"out1_node_feature_label.txt": nodes + "2\t0\n", "out1_graph_edges.txt": "0\t1\n"}, ".",
			ImportOptions{}, "out1_node_feature_label.txt:4: 2 tab-separated columns"},
		{"geomgcn empty node file", "geomgcn",
			map[string]string{"out1_node_feature_label.txt": "node_id\tfeature\tlabel\n", "out1_graph_edges.txt": "0\t1\n"}, ".",
			ImportOptions{}, "out1_node_feature_label.txt: empty"},
		{"geomgcn directory without an edge file", "geomgcn",
			map[string]string{"out1_node_feature_label.txt": nodes}, ".", ImportOptions{}, "out1_graph_edges.txt"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeFiles(t, tc.files)
			src := filepath.Join(dir, tc.src)
			opt := tc.opt
			if opt.SplitFile != "" {
				opt.SplitFile = filepath.Join(dir, opt.SplitFile)
			}
			if opt.LabelFile != "" {
				opt.LabelFile = filepath.Join(dir, opt.LabelFile)
			}
			outParent := t.TempDir()
			_, err := runImport(context.Background(), tc.format, src, filepath.Join(outParent, "ds"), opt)
			if err == nil || !inputerr.Is(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want a bad-input error containing %q", err, tc.want)
			}
			if ents, _ := os.ReadDir(outParent); len(ents) != 0 {
				t.Errorf("a failed import left %v behind", ents)
			}
		})
	}
}

func TestImportLeavesNothingOnFailure(t *testing.T) {
	t.Run("existing out is refused and kept", func(t *testing.T) {
		out := t.TempDir()
		os.WriteFile(filepath.Join(out, "keep"), []byte("x"), 0o644)
		_, err := ImportSNAP(context.Background(), importTestdata+"/snap-tiny.txt", out, ImportOptions{})
		if err == nil || !inputerr.Is(err) || !strings.Contains(err.Error(), "already exists") {
			t.Fatalf("err = %v, want a bad-input error saying --out exists", err)
		}
		if _, err := os.Stat(filepath.Join(out, "keep")); err != nil {
			t.Errorf("the existing directory was touched: %v", err)
		}
	})
	t.Run("cancelled import", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		parent := t.TempDir()
		_, err := ImportLINQS(ctx, importTestdata+"/linqs-tiny", filepath.Join(parent, "ds"), ImportOptions{})
		if err == nil || ctx.Err() == nil {
			t.Fatalf("err = %v, want cancellation", err)
		}
		if ents, _ := os.ReadDir(parent); len(ents) != 0 {
			t.Errorf("a cancelled import left %v behind", ents)
		}
	})
	t.Run("bad split found after parsing the graph", func(t *testing.T) {
		parent := t.TempDir()
		split := writeFiles(t, map[string]string{"s.tsv": "split\tpaper_id\ntrain\tnobody\n"})
		_, err := ImportLINQS(context.Background(), importTestdata+"/linqs-tiny", filepath.Join(parent, "a", "ds"), ImportOptions{SplitFile: filepath.Join(split, "s.tsv")})
		if err == nil {
			t.Fatal("bad split accepted")
		}
		if _, err := os.Stat(filepath.Join(parent, "a", "ds")); err == nil {
			t.Error("--out exists after a failed import")
		}
		if ents, _ := os.ReadDir(filepath.Join(parent, "a")); len(ents) != 0 {
			t.Errorf("a failed import left %v behind", ents)
		}
	})
}

func TestImportLinesLongCRLFAndOffsets(t *testing.T) {
	long := strings.Repeat("7 ", 3<<19) + "8" // longer than the 1 MiB reader buffer
	input := "1 2\r\n" + long + "\r\n\nlast"
	s := newImportLines(context.Background(), "mem", strings.NewReader(input))
	var lines []string
	var offs []int64
	for s.Scan() {
		lines = append(lines, string(s.line))
		offs = append(offs, s.off)
	}
	if s.Err() != nil {
		t.Fatal(s.Err())
	}
	want := []string{"1 2", long, "", "last"}
	if !slices.Equal(lines, want) {
		t.Fatalf("got %d lines, want %d (CRLF stripped, long line whole)", len(lines), len(want))
	}
	for i, off := range offs {
		if !strings.HasPrefix(input[off:], lines[i]) {
			t.Errorf("line %d: offset %d does not point at it", i+1, off)
		}
	}
}

func TestEdgeBuildMatchesBruteForce(t *testing.T) {
	// A reference built with maps on small random multigraphs.
	for seed := uint64(1); seed <= 50; seed++ {
		for _, undirected := range []bool{false, true} {
			x := seed
			rnd := func(n uint64) uint32 { x ^= x << 13; x ^= x >> 7; x ^= x << 17; return uint32(x % n) }
			n := int64(1 + rnd(12))
			el := &importEdges{undirected: undirected}
			adj := map[[2]int32]bool{}
			var selfLoops, dups int64
			for range rnd(40) {
				u, v := rnd(uint64(n)), rnd(uint64(n))
				el.add(u, v)
				if u == v {
					selfLoops++
					continue
				}
				a, b := int32(u), int32(v)
				if undirected && a > b {
					a, b = b, a
				}
				if adj[[2]int32{a, b}] {
					dups++
				}
				adj[[2]int32{a, b}] = true
			}
			g, err := el.build(context.Background(), n)
			if err != nil {
				t.Fatal(err)
			}
			want := make([][]int32, n)
			pairs := map[[2]int32]bool{}
			for e := range adj {
				want[e[0]] = append(want[e[0]], e[1])
				if undirected {
					want[e[1]] = append(want[e[1]], e[0])
				}
				pairs[[2]int32{min(e[0], e[1]), max(e[0], e[1])}] = true
			}
			for v := range want {
				slices.Sort(want[v])
				if got := g.indices[g.indptr[v]:g.indptr[v+1]]; !slices.Equal(got, want[v]) && (len(got) > 0 || len(want[v]) > 0) {
					t.Fatalf("seed %d undirected %v: row %d = %v, want %v", seed, undirected, v, got, want[v])
				}
			}
			if el.selfLoops != selfLoops || g.duplicates != dups || g.undirectedEdges != int64(len(pairs)) {
				t.Fatalf("seed %d undirected %v: self-loops %d dups %d pairs %d, want %d %d %d", seed, undirected,
					el.selfLoops, g.duplicates, g.undirectedEdges, selfLoops, dups, len(pairs))
			}
		}
	}
}

// ---- fuzz targets: no input may panic a parser ----

// fuzzSeeds returns the first lines of each of the shared fixtures and
// testdata files, so fuzzing starts from real input.
func fuzzSeeds(f *testing.F, files ...string) [][]string {
	f.Helper()
	var seeds [][]string
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			continue // an absent shared fixture only means fewer seeds
		}
		lines := strings.SplitN(string(data[:min(len(data), 1<<16)]), "\n", 5)
		seeds = append(seeds, lines[:min(len(lines), 4)])
	}
	return seeds
}

func FuzzParseSNAPLine(f *testing.F) {
	for _, s := range fuzzSeeds(f, filepath.Join(sharedDatasets, "snap-email-Eu-core/email-Eu-core.txt"),
		filepath.Join(sharedDatasets, "snap-ego-facebook/facebook_combined.txt"), importTestdata+"/snap-tiny.txt") {
		for _, l := range s {
			f.Add([]byte(l))
		}
	}
	f.Add([]byte("9223372036854775807 +0"))
	f.Add([]byte("9223372036854775808 1"))
	f.Fuzz(func(t *testing.T, line []byte) {
		u, v, _, skip, err := parseSNAPLine(line)
		if err != nil || skip {
			return
		}
		if u < 0 || v < 0 {
			t.Fatalf("%q gave negative ids %d %d", line, u, v)
		}
		// What was accepted reads back the same when written plainly.
		u2, v2, _, skip2, err := parseSNAPLine(fmt.Appendf(nil, "%d\t%d", u, v))
		if err != nil || skip2 || u2 != u || v2 != v {
			t.Fatalf("%q -> %d %d does not round-trip: %d %d %v", line, u, v, u2, v2, err)
		}
	})
}

func FuzzParseLINQSContentLine(f *testing.F) {
	for _, s := range fuzzSeeds(f, filepath.Join(sharedDatasets, "cora/cora.content"), importTestdata+"/linqs-tiny/tiny.content") {
		for _, l := range s {
			f.Add(l)
		}
	}
	f.Add("p\t1e40\tA")
	f.Add("p\tNaN\tA")
	f.Fuzz(func(t *testing.T, line string) {
		id, feats, class, err := linqsContentLine(line)
		if err != nil {
			return
		}
		if id == "" || class == "" {
			t.Fatalf("%q: empty id or class accepted", line)
		}
		_ = parseFeatureValues(feats, make([]float32, len(feats)))
	})
}

func FuzzParseGeomGCNNodeLine(f *testing.F) {
	for _, s := range fuzzSeeds(f, filepath.Join(sharedDatasets, "geomgcn-film/out1_node_feature_label.txt"),
		importTestdata+"/geomgcn-dense/out1_node_feature_label.txt", importTestdata+"/geomgcn-sparse/out1_node_feature_label.txt") {
		for _, l := range s {
			f.Add(l, true)
			f.Add(l, false)
		}
	}
	f.Fuzz(func(t *testing.T, line string, sparse bool) {
		parseGeomHeader(line)
		_, feats, _, err := parseGeomNodeLine(line)
		if err != nil {
			return
		}
		w, err := geomFeatureWidth(feats, sparse)
		if err != nil || w > 1<<16 {
			return
		}
		// A field pass 1 accepts must fill a row of the width it asked for.
		if err := fillGeomRow(feats, sparse, make([]float32, w)); err != nil {
			t.Fatalf("%q (sparse %v): width %d accepted, then filling failed: %v", feats, sparse, w, err)
		}
	})
}

func FuzzParseSplitLine(f *testing.F) {
	for _, s := range fuzzSeeds(f, filepath.Join(sharedDatasets, "cora/planetoid_split_linqs_ids.tsv"),
		filepath.Join(sharedDatasets, "cora/geomgcn_splits_60_20_20.tsv"), filepath.Join(sharedDatasets, "geomgcn-film/geomgcn_splits_60_20_20.tsv"),
		importTestdata+"/linqs-tiny-split.tsv", importTestdata+"/geomgcn-splits.tsv") {
		for _, row := range s[1:] {
			f.Add(s[0], row) // the file's header with each of its first rows
		}
	}
	f.Add("split_id\tset\tnode_id", "x\ttrain\t1")
	f.Fuzz(func(t *testing.T, header, line string) {
		h, err := parseSplitHeader(header)
		if err != nil {
			return
		}
		r, err := parseSplitRow(h, line)
		if err != nil {
			return
		}
		if r.set != "train" && r.set != "val" && r.set != "test" {
			t.Fatalf("set %q accepted", r.set)
		}
	})
}

// phaseRecorder is a Progress that records its phases and units.
type phaseRecorder struct {
	bytes.Buffer
	mu     sync.Mutex
	phases []string
	done   map[string]int64
}

func (p *phaseRecorder) Phase(name string, total int64) func(int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.phases = append(p.phases, fmt.Sprintf("%s (%d)", name, total))
	if p.done == nil {
		p.done = map[string]int64{}
	}
	return func(k int64) {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.done[name] += k
	}
}

// An import given a Progress reports a phase per input file, counting
// every byte of it each time it is read.
func TestImportReportsAPhasePerFile(t *testing.T) {
	src := needShared(t, "cora")
	var rec phaseRecorder
	out := filepath.Join(t.TempDir(), "ds")
	if _, err := ImportLINQS(context.Background(), src, out, ImportOptions{Progress: &rec}); err != nil {
		t.Fatal(err)
	}
	content, cites := filepath.Join(src, "cora.content"), filepath.Join(src, "cora.cites")
	for _, f := range []string{content, cites} {
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		name := "import: reading " + filepath.Base(f)
		// cora.content is read twice (ids first, then features).
		if !slices.Contains(rec.phases, fmt.Sprintf("%s (%d)", name, st.Size())) || rec.done[name] == 0 || rec.done[name]%st.Size() != 0 {
			t.Errorf("phases %v, %s done %d: want a phase of %d bytes, all read each time", rec.phases, name, rec.done[name], st.Size())
		}
	}
}

// TestSortKeys: the import's cancellable radix sort sorts as a library
// sort does, at sizes that take each path and with digits all keys share,
// and stops when cancelled.
func TestSortKeys(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 1000, 1 << 16, 300000} {
		for _, spread := range []uint64{1 << 20, 1 << 40, math.MaxUint64} {
			keys := make([]uint64, n)
			for i := range keys {
				keys[i] = rng.Uint64() % spread
			}
			want := slices.Sorted(slices.Values(keys))
			if err := sortKeys(context.Background(), keys); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(keys, want) {
				t.Errorf("%d keys below %d: not sorted as slices.Sort sorts them", n, spread)
			}
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := sortKeys(ctx, make([]uint64, 1<<20)); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled sort: %v", err)
	}
}
