package dataset

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gnnplan/gnnplan/internal/inputerr"
)

// Tests of the Planetoid and OGB importers, gzip inputs and SNAP count
// headers. Fixtures: testdata/import, written by gen_fixtures.py there.

func TestImportNewFormatCounts(t *testing.T) {
	cases := []importCase{
		{name: "planetoid with a citeseer-like test.index gap", format: "planetoid", src: importTestdata + "/planetoid-tiny",
			want: ImportSummary{Format: "planetoid", Nodes: 507, Edges: 10, UndirectedEdges: 5, Features: 3, Classes: 3, SelfLoops: 1, Duplicates: 1, Train: 2, Val: 500, Test: 3}},
		{name: "planetoid picked by its ind.NAME prefix", format: "planetoid", src: importTestdata + "/planetoid-tiny/ind.tiny",
			want: ImportSummary{Format: "planetoid", Nodes: 507, Edges: 10, UndirectedEdges: 5, Features: 3, Classes: 3, SelfLoops: 1, Duplicates: 1, Train: 2, Val: 500, Test: 3}},
		{name: "planetoid cora", format: "planetoid", src: "cora/planetoid", shared: true,
			want: ImportSummary{Format: "planetoid", Nodes: 2708, Edges: 10556, UndirectedEdges: 5278, Features: 1433, Classes: 7, Duplicates: 302, Train: 140, Val: 500, Test: 1000}},
		{name: "ogb csv directed", format: "ogb", src: importTestdata + "/ogb-tiny",
			want: ImportSummary{Format: "ogb", Nodes: 5, Edges: 4, UndirectedEdges: 4, Features: 2, Classes: 3, SelfLoops: 1, Duplicates: 1, Train: 2, Val: 1, Test: 2}},
		{name: "ogb csv undirected with the split named", format: "ogb", src: importTestdata + "/ogb-tiny", opt: ImportOptions{Undirected: true, SplitFile: "time"},
			want: ImportSummary{Format: "ogb", Nodes: 5, Edges: 8, UndirectedEdges: 4, Features: 2, Classes: 3, SelfLoops: 1, Duplicates: 1, Train: 2, Val: 1, Test: 2}},
		{name: "ogb npz", format: "ogb", src: importTestdata + "/ogb-tiny-npz",
			want: ImportSummary{Format: "ogb", Nodes: 5, Edges: 4, UndirectedEdges: 4, Features: 2, Classes: 3, SelfLoops: 1, Duplicates: 1, Train: 2, Val: 1, Test: 2}},
		{name: "linqs gzip", format: "linqs", src: importTestdata + "/linqs-tiny-gz", opt: ImportOptions{SplitFile: importTestdata + "/linqs-tiny-split.tsv"},
			want: ImportSummary{Format: "linqs", Nodes: 4, Edges: 4, UndirectedEdges: 2, Features: 3, Classes: 3, DroppedEdges: 1, SelfLoops: 1, Duplicates: 1, Train: 1, Val: 1, Test: 1}},
		{name: "snap gzip", format: "snap", src: importTestdata + "/snap-tiny.txt.gz",
			want: ImportSummary{Format: "snap", Nodes: 3, Edges: 3, UndirectedEdges: 2, SelfLoops: 1, Duplicates: 1}},
		{name: "geomgcn gzip", format: "geomgcn", src: importTestdata + "/geomgcn-dense-gz", opt: ImportOptions{SplitFile: importTestdata + "/geomgcn-splits.tsv"},
			want: ImportSummary{Format: "geomgcn", Nodes: 3, Edges: 4, UndirectedEdges: 2, Features: 3, Classes: 3, DroppedEdges: 1, SelfLoops: 1, Duplicates: 1, Train: 1, Val: 1, Test: 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { checkImport(t, tc) })
	}
}

// importAll imports src and loads it back with its features.
func importAll(t *testing.T, format, src string, opt ImportOptions) (*ImportSummary, *Graph, [][]float32) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "ds")
	sum, err := runImport(context.Background(), format, src, out, opt)
	if err != nil {
		t.Fatal(err)
	}
	g, err := LoadGraph(out)
	if err != nil {
		t.Fatal(err)
	}
	return sum, g, readFeatures(t, g)
}

func TestImportGzipMatchesPlain(t *testing.T) {
	cases := []struct {
		name, format, plain, gz string
		opt                     ImportOptions
	}{
		{"linqs content and cites", "linqs", "/linqs-tiny", "/linqs-tiny-gz", ImportOptions{SplitFile: importTestdata + "/linqs-tiny-split.tsv"}},
		{"snap edge list", "snap", "/snap-tiny.txt", "/snap-tiny.txt.gz", ImportOptions{}},
		{"geomgcn nodes read twice, the second time by offset", "geomgcn", "/geomgcn-dense", "/geomgcn-dense-gz", ImportOptions{SplitFile: importTestdata + "/geomgcn-splits.tsv", SplitID: 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s1, g1, f1 := importAll(t, tc.format, importTestdata+tc.plain, tc.opt)
			s2, g2, f2 := importAll(t, tc.format, importTestdata+tc.gz, tc.opt)
			s1.Notes, s2.Notes = nil, nil
			if !reflect.DeepEqual(s1, s2) {
				t.Errorf("summaries differ:\nplain %+v\ngzip  %+v", s1, s2)
			}
			if !slices.Equal(g1.Indptr, g2.Indptr) || !slices.Equal(g1.Indices, g2.Indices) || !slices.Equal(g1.Labels, g2.Labels) ||
				!slices.Equal(g1.Train, g2.Train) || !slices.Equal(g1.Val, g2.Val) || !slices.Equal(g1.Test, g2.Test) {
				t.Errorf("graphs differ")
			}
			if !slices.EqualFunc(f1, f2, slices.Equal) {
				t.Errorf("features differ: %v vs %v", f1, f2)
			}
		})
	}
}

func TestImportSNAPCountHeader(t *testing.T) {
	cases := []struct {
		name     string
		body     string
		mode     HeaderMode
		nodes    int64
		orig     []int64 // original_ids.npy
		indptr   []int64
		indices  []int32
		wantNote string
	}{
		{"header matching vertex and edge counts is skipped", "4 3\n0 1\n1 2\n2 3\n", HeaderAuto, 4,
			[]int64{0, 1, 2, 3}, []int64{0, 1, 2, 3, 3}, []int32{1, 2, 3}, `first line "4 3" read as a count header`},
		{"header after comments, ids 1 to N", "# graph\n3 2\n1 2\n2 3\n", HeaderAuto, 3,
			[]int64{1, 2, 3}, []int64{0, 1, 2, 2}, []int32{1, 2}, "read as a count header"},
		{"header with isolated vertices beyond every id", "100 3\n0 1\n1 2\n2 0\n", HeaderAuto, 3,
			[]int64{0, 1, 2}, []int64{0, 1, 2, 3}, []int32{1, 2, 0}, "read as a count header"},
		{"header whose numbers are also vertices renumbers them where they first appear", "3 2\n2 0\n0 1\n", HeaderAuto, 3,
			[]int64{2, 0, 1}, []int64{0, 1, 2, 2}, []int32{1, 2}, "read as a count header"},
		{"a real first edge 3 5 is kept", "3 5\n0 1\n1 2\n2 3\n3 4\n4 5\n", HeaderAuto, 6,
			[]int64{3, 5, 0, 1, 2, 4}, []int64{0, 2, 2, 3, 4, 5, 6}, []int32{1, 5, 3, 4, 0, 1}, ""},
		{"a first edge that only might be a header is kept", "5 2\n0 1\n1 2\n", HeaderAuto, 4,
			[]int64{5, 2, 0, 1}, []int64{0, 1, 1, 2, 3}, []int32{1, 3, 1}, "if it is a count header, pass --header"},
		{"a first edge with fewer vertices than the rest has says nothing", "0 1\n1 2\n", HeaderAuto, 3,
			[]int64{0, 1, 2}, []int64{0, 1, 2, 2}, []int32{1, 2}, ""},
		{"--header skips the first line even when it does not match", "5 2\n0 1\n1 2\n", HeaderYes, 3,
			[]int64{0, 1, 2}, []int64{0, 1, 2, 2}, []int32{1, 2}, `first line "5 2" skipped as a count header (--header)`},
		{"--no-header keeps a matching first line as an edge", "4 3\n0 1\n1 2\n2 3\n", HeaderNo, 5,
			[]int64{4, 3, 0, 1, 2}, []int64{0, 1, 1, 2, 3, 4}, []int32{1, 3, 4, 1}, "read as an edge (--no-header)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeFiles(t, map[string]string{"e.txt": tc.body})
			out := filepath.Join(dir, "ds")
			sum, err := ImportSNAP(context.Background(), filepath.Join(dir, "e.txt"), out, ImportOptions{Header: tc.mode})
			if err != nil {
				t.Fatal(err)
			}
			g, err := LoadGraph(out)
			if err != nil {
				t.Fatal(err)
			}
			if sum.Nodes != tc.nodes {
				t.Errorf("nodes %d, want %d", sum.Nodes, tc.nodes)
			}
			wantCSR(t, g, tc.indptr, tc.indices)
			orig, err := readInt64s(filepath.Join(out, OriginalIDsFile), g.Meta.NumNodes)
			if err != nil || !slices.Equal(orig, tc.orig) {
				t.Errorf("original ids %v (%v), want %v", orig, err, tc.orig)
			}
			notes := strings.Join(sum.Notes, "\n")
			if tc.wantNote == "" {
				if strings.Contains(notes, "first line") {
					t.Errorf("notes mention the first line:\n%s", notes)
				}
			} else if !strings.Contains(notes, tc.wantNote) {
				t.Errorf("notes lack %q:\n%s", tc.wantNote, notes)
			}
		})
	}
}

func TestImportPlanetoidTinyContents(t *testing.T) {
	_, g, rows := importAll(t, "planetoid", importTestdata+"/planetoid-tiny", ImportOptions{})
	// tx's rows belong to test.index's ids in file order: 506, 503, 505.
	for v, want := range map[int][]float32{0: {1, 0, 0}, 4: {0, 5, 0}, 10: {0, 0, 0}, 506: {10, 0, 0}, 503: {0, 11, 0}, 505: {0, 0, 12}, 504: {0, 0, 0}} {
		if !slices.Equal(rows[v], want) {
			t.Errorf("row %d = %v, want %v", v, rows[v], want)
		}
	}
	for v, want := range map[int]int64{0: 0, 1: 1, 502: 1, 506: 1, 503: 2, 505: 0, 504: -1} {
		if g.Labels[v] != want {
			t.Errorf("label of %d = %d, want %d", v, g.Labels[v], want)
		}
	}
	if !slices.Equal(g.Train, []int64{0, 1}) || len(g.Val) != 500 || g.Val[0] != 2 || g.Val[499] != 501 || !slices.Equal(g.Test, []int64{503, 505, 506}) {
		t.Errorf("split %v / %d from %d / %v", g.Train, len(g.Val), g.Val[0], g.Test)
	}
	if !slices.Equal(g.Neighbors(0), []int32{1, 2, 3}) || !slices.Equal(g.Neighbors(3), []int32{0}) || len(g.Neighbors(504)) != 0 {
		t.Errorf("adjacency: 0 -> %v, 3 -> %v, 504 -> %v", g.Neighbors(0), g.Neighbors(3), g.Neighbors(504))
	}
	notes := strings.Join(g.Meta.Notes, "\n")
	for _, want := range []string{"1 ids between 503 and 506 are not in test.index", "1 of 5 edges are listed from one end only"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
}

func TestImportOGBCSVMatchesNPZ(t *testing.T) {
	_, csv, fc := importAll(t, "ogb", importTestdata+"/ogb-tiny", ImportOptions{})
	_, npz, fn := importAll(t, "ogb", importTestdata+"/ogb-tiny-npz", ImportOptions{})
	wantCSR(t, csv, []int64{0, 1, 2, 3, 4, 4}, []int32{1, 2, 0, 4})
	wantCSR(t, npz, csv.Indptr, csv.Indices)
	want := [][]float32{{0.5, -1}, {1.5, 2}, {0, 0.25}, {3, 4}, {-2.5, 1}}
	if !slices.EqualFunc(fc, want, slices.Equal) || !slices.EqualFunc(fn, want, slices.Equal) {
		t.Errorf("features csv %v npz %v, want %v", fc, fn, want)
	}
	if !slices.Equal(csv.Labels, []int64{0, 1, 2, 1, 0}) || !slices.Equal(npz.Labels, []int64{0, 1, 2, 1, -1}) {
		t.Errorf("labels csv %v npz %v (npz's node 4 is NaN: -1)", csv.Labels, npz.Labels)
	}
	for _, g := range []*Graph{csv, npz} {
		if !slices.Equal(g.Train, []int64{0, 1}) || !slices.Equal(g.Val, []int64{2}) || !slices.Equal(g.Test, []int64{3, 4}) {
			t.Errorf("split %v/%v/%v", g.Train, g.Val, g.Test)
		}
	}
}

// copyDir copies a fixture directory so a case can spoil one file.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func TestImportNewFormatsBadInput(t *testing.T) {
	planetoid := importTestdata + "/planetoid-tiny"
	ogb := importTestdata + "/ogb-tiny"
	x, err := os.ReadFile(filepath.Join(planetoid, "ind.tiny.x"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		format string
		base   string            // fixture directory copied first ("" for an empty one)
		files  map[string]string // written over the copy; "" removes
		src    string            // relative to the copy
		opt    ImportOptions
		want   string
	}{
		{"planetoid pickle naming another class", "planetoid", planetoid,
			map[string]string{"ind.tiny.graph": "\x80\x02cos\nsystem\nU\x02ls\x85R."}, ".", ImportOptions{}, "ind.tiny.graph: not a Planetoid pickle: pickle names os.system"},
		{"planetoid pickle cut short", "planetoid", planetoid,
			map[string]string{"ind.tiny.x": string(x[:len(x)/2])}, ".", ImportOptions{}, "ind.tiny.x: not a Planetoid pickle"},
		{"planetoid without allx (as the shared pubmed copy)", "planetoid", planetoid,
			map[string]string{"ind.tiny.allx": ""}, ".", ImportOptions{}, "ind.tiny.allx: --from: missing: a Planetoid dataset needs ind.tiny.{x, y, tx, ty, allx, ally, graph, test.index}"},
		{"planetoid without test.index", "planetoid", planetoid,
			map[string]string{"ind.tiny.test.index": ""}, ".", ImportOptions{}, "ind.tiny.test.index: --from: missing"},
		{"planetoid directory holding two datasets", "planetoid", planetoid,
			map[string]string{"ind.other.graph": "x"}, ".", ImportOptions{}, "holds 2 Planetoid datasets (other, tiny): pass"},
		{"planetoid test id inside allx", "planetoid", planetoid,
			map[string]string{"ind.tiny.test.index": "506\n3\n505\n"}, ".", ImportOptions{}, "ind.tiny.test.index:2: test vertex 3 is one of allx's 503 rows"},
		{"planetoid test ids fewer than tx rows", "planetoid", planetoid,
			map[string]string{"ind.tiny.test.index": "506\n503\n"}, ".", ImportOptions{}, "2 test ids for tx's 3 rows"},
		{"planetoid labels not one-hot", "planetoid", planetoid,
			map[string]string{"ind.tiny.y": "\x80\x02" + "cnumpy.core.multiarray\n_reconstruct\ncnumpy\nndarray\nJ\x00\x00\x00\x00\x85U\x01b\x87R(J\x01\x00\x00\x00(J\x02\x00\x00\x00J\x03\x00\x00\x00tcnumpy\ndtype\nU\x02i4J\x00\x00\x00\x00J\x01\x00\x00\x00\x87R(J\x03\x00\x00\x00U\x01<NNNJ\xff\xff\xff\xffJ\xff\xff\xff\xffJ\x00\x00\x00\x00tb\x89T\x18\x00\x00\x00" + "\x01\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00" + "tb."},
			".", ImportOptions{}, "ind.tiny.y: row 0 is not one-hot"},
		{"planetoid with a split file", "planetoid", planetoid, nil, ".", ImportOptions{SplitFile: "s.tsv"}, "--split: Planetoid files imply their split"},
		{"ogb without raw/", "ogb", "", map[string]string{"x.txt": "1"}, ".", ImportOptions{}, "no raw/ directory (want an OGB node-property directory"},
		{"ogb without edge.csv.gz", "ogb", ogb, map[string]string{"raw/edge.csv.gz": ""}, ".", ImportOptions{}, "raw/edge.csv: --from: missing"},
		{"ogb edge naming a vertex beyond num-node-list", "ogb", ogb, map[string]string{"raw/edge.csv.gz": "", "raw/edge.csv": "0,1\n1,5\n1,2\n2,0\n3,4\n0,1\n"}, ".", ImportOptions{},
			"raw/edge.csv:2: vertex 5: num-node-list.csv.gz says ids run from 0 to 4"},
		{"ogb edge count disagreeing with num-edge-list", "ogb", ogb, map[string]string{"raw/edge.csv.gz": "", "raw/edge.csv": "0,1\n"}, ".", ImportOptions{},
			"raw/edge.csv: 1 edges, num-edge-list.csv.gz says 6"},
		{"ogb multi-task labels", "ogb", ogb, map[string]string{"raw/node-label.csv.gz": "", "raw/node-label.csv": "0,1\n1,0\n0,0\n1,1\n0,1\n"}, ".", ImportOptions{},
			"raw/node-label.csv:1: 2 label columns: only single-task labels are imported"},
		{"ogb feature row of another width", "ogb", ogb, map[string]string{"raw/node-feat.csv.gz": "", "raw/node-feat.csv": "1,2\n3\n4,5\n6,7\n8,9\n"}, ".", ImportOptions{},
			"raw/node-feat.csv:2: 1 features, want 2"},
		{"ogb feature that is NaN", "ogb", ogb, map[string]string{"raw/node-feat.csv.gz": "", "raw/node-feat.csv": "1,2\n3,nan\n4,5\n6,7\n8,9\n"}, ".", ImportOptions{},
			`raw/node-feat.csv:2: feature 2: "nan" is not a finite number`},
		{"ogb split naming a vertex beyond the graph", "ogb", ogb, map[string]string{"split/time/test.csv.gz": "", "split/time/test.csv": "4\n9\n"}, ".", ImportOptions{},
			"split/time/test.csv:2: vertex 9: the graph has vertices 0 to 4"},
		{"ogb two splits and none chosen", "ogb", ogb, map[string]string{"split/random/train.csv": "0\n"}, ".", ImportOptions{},
			"split: --split: holds 2 splits (random, time): pick one with --split"},
		{"ogb split name that is not there", "ogb", ogb, nil, ".", ImportOptions{SplitFile: "species"}, "split/species: --split: not a split directory"},
		{"ogb given a file", "ogb", ogb, nil, "raw/edge.csv.gz", ImportOptions{}, "edge.csv.gz: --from: is a file (want an OGB node-property directory"},
		{"geomgcn split naming only absent ids", "geomgcn", importTestdata + "/geomgcn-dense",
			map[string]string{"s.tsv": "split_id\tset\tnode_id\n0\ttrain\t7\n0\ttest\t9\n"}, ".", ImportOptions{SplitFile: "s.tsv"},
			"s.tsv: --split: none of the 2 ids of split 0 is in the dataset (e.g. 7, 9)"},
		{"truncated gzip edge list", "snap", importTestdata, nil, "snap-truncated.txt.gz", ImportOptions{}, "snap-truncated.txt.gz: corrupt or truncated gzip data"},
		{"snap given a directory", "snap", "", map[string]string{"d/x": ""}, "d", ImportOptions{}, "d: --from: is a directory (want a file)"},
		{"snap labels given a directory", "snap", importTestdata, map[string]string{"d/x": ""}, "snap-tiny.txt", ImportOptions{LabelFile: "d"}, "d: --labels: is a directory (want a file)"},
		{"geomgcn split given a directory", "geomgcn", importTestdata + "/geomgcn-dense", map[string]string{"d/x": ""}, ".", ImportOptions{SplitFile: "d"}, "d: --split: is a directory (want a file)"},
		{"linqs given a file", "linqs", importTestdata + "/linqs-tiny", nil, "tiny.content", ImportOptions{}, "tiny.content: --from: is a file (want a directory holding NAME.content and NAME.cites)"},
		{"geomgcn given a file", "geomgcn", importTestdata + "/geomgcn-dense", nil, "out1_graph_edges.txt", ImportOptions{}, "out1_graph_edges.txt: --from: is a file (want a Geom-GCN directory"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.base != "" {
				dir = copyDir(t, tc.base)
			}
			for name, body := range tc.files {
				p := filepath.Join(dir, name)
				if body == "" && !strings.HasPrefix(name, "d/") {
					if err := os.Remove(p); err != nil {
						t.Fatal(err)
					}
					continue
				}
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			opt := tc.opt
			if opt.SplitFile != "" && tc.format != "ogb" {
				opt.SplitFile = filepath.Join(dir, opt.SplitFile)
			}
			if opt.LabelFile != "" {
				opt.LabelFile = filepath.Join(dir, opt.LabelFile)
			}
			outParent := t.TempDir()
			_, err := runImport(context.Background(), tc.format, filepath.Join(dir, tc.src), filepath.Join(outParent, "ds"), opt)
			if err == nil || !inputerr.Is(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want a bad-input error containing %q", err, tc.want)
			}
			if msg := err.Error(); strings.Count(msg, filepath.Join(dir, tc.src)) > 1 {
				t.Errorf("the path is named more than once: %s", msg)
			}
			if ents, _ := os.ReadDir(outParent); len(ents) != 0 {
				t.Errorf("a failed import left %v behind", ents)
			}
		})
	}
}

func TestGeomGCNSplitSkipsAbsentIDs(t *testing.T) {
	dir := writeFiles(t, map[string]string{"s.tsv": "split_id\tset\tnode_id\n0\ttrain\t0\n0\tval\t1\n0\ttest\t2\n0\ttest\t7\n0\ttrain\t9\n1\ttrain\t8\n"})
	sum, g, _ := importAll(t, "geomgcn", importTestdata+"/geomgcn-dense", ImportOptions{SplitFile: filepath.Join(dir, "s.tsv")})
	if !slices.Equal(g.Train, []int64{0}) || !slices.Equal(g.Val, []int64{1}) || !slices.Equal(g.Test, []int64{2}) {
		t.Errorf("split %v/%v/%v, want [0]/[1]/[2]", g.Train, g.Val, g.Test)
	}
	if notes := strings.Join(sum.Notes, "\n"); !strings.Contains(notes, "skipped 2 split rows naming ids absent from the graph (e.g. 7, 9)") {
		t.Errorf("notes do not count the skipped ids:\n%s", notes)
	}
}

// TestImportPlanetoidCoraMatchesLINQS checks the Planetoid pickles of Cora
// against the LINQS files and the derived split (SOURCES.md): the same
// graph up to relabelling, the same labels and the same split.
func TestImportPlanetoidCoraMatchesLINQS(t *testing.T) {
	planetoidDir := needShared(t, "cora/planetoid")
	linqsDir := needShared(t, "cora")
	splitPath := needShared(t, "cora/planetoid_split_linqs_ids.tsv")
	_, gP, fP := importAll(t, "planetoid", planetoidDir, ImportOptions{})
	_, gL, fL := importAll(t, "linqs", linqsDir, ImportOptions{SplitFile: splitPath})
	if gP.Meta.NumNodes != gL.Meta.NumNodes || gP.Meta.NumEdges != gL.Meta.NumEdges || gP.Meta.FeatureDim != gL.Meta.FeatureDim {
		t.Fatalf("planetoid %+v, linqs %+v: sizes differ", gP.Meta, gL.Meta)
	}

	// LINQS vertex ids follow cora.content's lines; its labels are class
	// names in sorted order, listed in meta.json's first note.
	f, err := os.Open(filepath.Join(linqsDir, "cora.content"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	linqsID := map[string]int64{}
	var className []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		linqsID[fields[0]] = int64(len(linqsID))
		className = append(className, fields[len(fields)-1])
	}

	// The split file maps Planetoid indices to papers, and names labels.
	sf, err := os.ReadFile(splitPath)
	if err != nil {
		t.Fatal(err)
	}
	toLINQS := map[int64]int64{}
	pClass := map[int64]string{} // Planetoid class index -> name
	for _, line := range strings.Split(strings.TrimSpace(string(sf)), "\n")[1:] {
		c := strings.Split(line, "\t") // split, paper_id, label, planetoid_index
		var p int64
		for _, ch := range c[3] {
			p = 10*p + int64(ch-'0')
		}
		l, ok := linqsID[c[1]]
		if !ok {
			t.Fatalf("split paper %s is not in cora.content", c[1])
		}
		toLINQS[p] = l
		if prev, ok := pClass[gP.Labels[p]]; ok && prev != c[2] {
			t.Fatalf("planetoid class %d is both %s and %s", gP.Labels[p], prev, c[2])
		}
		pClass[gP.Labels[p]] = c[2]
		if className[l] != c[2] {
			t.Errorf("paper %s: LINQS class %s, split file %s", c[1], className[l], c[2])
		}
		if !slices.Equal(fP[p], fL[l]) || gP.Degree(p) != gL.Degree(l) {
			t.Errorf("planetoid %d / paper %s: features or degree differ (%d vs %d)", p, c[1], gP.Degree(p), gL.Degree(l))
		}
	}
	if len(pClass) != 7 {
		t.Fatalf("the split names %d planetoid classes, want 7", len(pClass))
	}
	mapSet := func(ids []int64) []int64 {
		out := make([]int64, len(ids))
		for i, p := range ids {
			l, ok := toLINQS[p]
			if !ok {
				t.Fatalf("planetoid split vertex %d is not in the split file", p)
			}
			out[i] = l
		}
		slices.Sort(out)
		return out
	}
	for _, s := range []struct {
		name string
		p, l []int64
	}{{"train", gP.Train, gL.Train}, {"val", gP.Val, gL.Val}, {"test", gP.Test, gL.Test}} {
		if got := mapSet(s.p); !slices.Equal(got, s.l) {
			t.Errorf("%s: %d planetoid vertices map to a set other than LINQS's %d", s.name, len(s.p), len(s.l))
		}
	}

	// The whole graph up to relabelling: every vertex gets a key from its
	// features, class name and degree; the multisets of vertex keys and of
	// edge key pairs must agree. (Cora's exact twins share a key, as they
	// are interchangeable.)
	keys := func(g *Graph, rows [][]float32, class func(int64) string) []uint64 {
		out := make([]uint64, g.Meta.NumNodes)
		var b [8]byte
		for v := range out {
			h := fnv.New64a()
			for _, x := range rows[v] {
				binary.LittleEndian.PutUint32(b[:4], math.Float32bits(x))
				h.Write(b[:4])
			}
			h.Write([]byte(class(int64(v))))
			binary.LittleEndian.PutUint64(b[:], uint64(g.Degree(int64(v))))
			h.Write(b[:])
			out[v] = h.Sum64()
		}
		return out
	}
	kP := keys(gP, fP, func(v int64) string { return pClass[gP.Labels[v]] })
	kL := keys(gL, fL, func(v int64) string { return className[v] })
	if !slices.Equal(slices.Sorted(slices.Values(kP)), slices.Sorted(slices.Values(kL))) {
		t.Error("the vertices (features, class, degree) differ as multisets")
	}
	edgeKeys := func(g *Graph, k []uint64) [][2]uint64 {
		var out [][2]uint64
		for u := range g.Meta.NumNodes {
			for _, v := range g.Neighbors(u) {
				if int64(v) > u {
					a, b := k[u], k[v]
					out = append(out, [2]uint64{min(a, b), max(a, b)})
				}
			}
		}
		slices.SortFunc(out, func(x, y [2]uint64) int {
			return cmp.Or(cmp.Compare(x[0], y[0]), cmp.Compare(x[1], y[1]))
		})
		return out
	}
	if !slices.Equal(edgeKeys(gP, kP), edgeKeys(gL, kL)) {
		t.Error("the edges, as pairs of vertex keys, differ")
	}
}

// ---- fuzz targets ----

// FuzzLoadPickle: no pickle may panic the decoder or the checks that
// follow it; seeded with the Planetoid fixtures.
func FuzzLoadPickle(f *testing.F) {
	for _, dir := range []string{importTestdata + "/planetoid-tiny", filepath.Join(sharedDatasets, "cora/planetoid")} {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if data, err := os.ReadFile(filepath.Join(dir, e.Name())); err == nil && len(data) < 1<<16 {
				f.Add(data)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// gopickle allocates the length a string opcode claims before it
		// reads (up to 4 GiB for BINSTRING/BINUNICODE); inputs whose 4-byte
		// length fields could claim more than the input holds are left out,
		// so the fuzzer looks for panics rather than that known cost.
		for i := 0; i+5 <= len(data); i++ {
			switch c := data[i]; {
			case (c == 'T' || c == 'X' || c == 'B' || c == 0x8b) && int(binary.LittleEndian.Uint32(data[i+1:])) > len(data):
				return
			case (c == 0x8d || c == 0x8e || c == 0x95 || c == 0x96) && (i+9 > len(data) || binary.LittleEndian.Uint64(data[i+1:]) > uint64(len(data))):
				return
			}
		}
		v, err := loadPickle(bytes.NewReader(data))
		if err != nil {
			return
		}
		// No directory is read: the files only name inputs in errors
		// (a temporary directory per input would slow the fuzzer tenfold).
		files := planetoidFiles{dir: "fuzz-input", name: "f"}
		if m, err := planetoidMatrix(files, "x", v); err == nil {
			rows, cols := m.dims()
			if rows > 0 && cols > 0 && cols < 1<<16 {
				m.row(rows-1, make([]float32, cols))
			}
		}
		planetoidLabels(files, "y", v)
	})
}

func FuzzParseOGBLabel(f *testing.F) {
	for _, s := range []string{"0", "39", "3.0", "nan", "NaN", "", "-1", "1e3", "2.5", "inf"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, ok, err := parseOGBLabel(s)
		if err != nil {
			return
		}
		if ok != (l >= 0) || l > math.MaxInt32 || l < -1 {
			t.Fatalf("%q gave label %d ok %v", s, l, ok)
		}
	})
}

func FuzzSNAPFirstLine(f *testing.F) {
	f.Add(int64(4), int64(3), []byte{0, 1, 1, 2, 2, 3})
	f.Add(int64(3), int64(5), []byte{0, 1, 1, 2, 2, 3, 3, 4, 4, 5})
	f.Fuzz(func(t *testing.T, a, b int64, rest []byte) {
		if a < 0 || b < 0 || len(rest) < 2 {
			return
		}
		// Build the file, import it both ways, and check that a header
		// reading drops exactly the first line.
		var sb strings.Builder
		fmt.Fprintf(&sb, "%d %d\n", a, b)
		for i := 0; i+1 < len(rest); i += 2 {
			fmt.Fprintf(&sb, "%d %d\n", rest[i], rest[i+1])
		}
		dir := t.TempDir()
		src := filepath.Join(dir, "e.txt")
		if err := os.WriteFile(src, []byte(sb.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		auto, err := ImportSNAP(context.Background(), src, filepath.Join(dir, "auto"), ImportOptions{})
		if err != nil {
			t.Fatal(err)
		}
		yes, err := ImportSNAP(context.Background(), src, filepath.Join(dir, "yes"), ImportOptions{Header: HeaderYes})
		if err != nil {
			t.Fatal(err)
		}
		no, err := ImportSNAP(context.Background(), src, filepath.Join(dir, "no"), ImportOptions{Header: HeaderNo})
		if err != nil {
			t.Fatal(err)
		}
		if auto.Nodes != yes.Nodes && auto.Nodes != no.Nodes {
			t.Fatalf("auto %d vertices, header %d, edge %d", auto.Nodes, yes.Nodes, no.Nodes)
		}
		for _, name := range []string{"auto", "yes", "no"} {
			g, err := LoadGraph(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := readInt64s(filepath.Join(dir, name, OriginalIDsFile), g.Meta.NumNodes); err != nil {
				t.Fatal(err)
			}
		}
	})
}
