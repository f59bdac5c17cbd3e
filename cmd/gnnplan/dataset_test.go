package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gnnplan/gnnplan/topology"
	"github.com/gnnplan/gnnplan/trainer/dataset"
)

// runDatasetCLI runs `gnnplan dataset ARGS` in-process (the dataset
// command is built directly, as root registers it separately) and returns
// the exit code run would give, stdout and stderr.
func runDatasetCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := newDatasetCmd(&deps{In: strings.NewReader(""), Out: &out, Err: &errOut})
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.ExecuteContext(context.Background())
	switch {
	case err == nil:
		return exitOK, out.String(), errOut.String()
	case topology.IsBadInput(err) || isUsageError(err):
		fmt.Fprintf(&errOut, "gnnplan: %s\n", oneLine(err.Error()))
		return exitBadInput, out.String(), errOut.String()
	}
	fmt.Fprintf(&errOut, "gnnplan: %s\n", oneLine(err.Error()))
	return exitFailure, out.String(), errOut.String()
}

const sharedDatasets = "../../../shared/datasets"

func needSharedDataset(t *testing.T, rel string) string {
	t.Helper()
	p := filepath.Join(sharedDatasets, rel)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("shared fixture %s is absent (%v): the import is checked only beside ../shared/datasets", p, err)
	}
	return p
}

func TestDatasetImportFlags(t *testing.T) {
	cases := []struct {
		name    string
		args    []string
		want    datasetImportOptions
		wantErr string
	}{
		{"linqs with a planetoid split", []string{"--format", "linqs", "--from", "cora", "--out", "d", "--split", "s.tsv"},
			datasetImportOptions{Format: "linqs", From: "cora", Out: "d", Split: "s.tsv"}, ""},
		{"snap undirected with labels", []string{"--format", "snap", "--from", "e.txt", "--out", "d", "--undirected", "--labels", "l.txt", "--name", "email"},
			datasetImportOptions{Format: "snap", From: "e.txt", Out: "d", Undirected: true, Labels: "l.txt", Name: "email"}, ""},
		{"geomgcn picks one of ten splits", []string{"--format", "geomgcn", "--from", "film", "--out", "d", "--split", "s.tsv", "--split-id", "3"},
			datasetImportOptions{Format: "geomgcn", From: "film", Out: "d", Split: "s.tsv", SplitID: 3}, ""},
		{"format is required", []string{"--from", "x", "--out", "d"}, datasetImportOptions{}, "--format: required (valid: linqs, snap, geomgcn, planetoid, ogb)"},
		{"unknown format refused", []string{"--format", "metis", "--from", "x", "--out", "d"}, datasetImportOptions{}, `"metis" is not a format`},
		{"snap count header forced", []string{"--format", "snap", "--from", "e.txt", "--out", "d", "--header"},
			datasetImportOptions{Format: "snap", From: "e.txt", Out: "d", Header: true}, ""},
		{"snap first line forced to be an edge", []string{"--format", "snap", "--from", "e.txt", "--out", "d", "--no-header"},
			datasetImportOptions{Format: "snap", From: "e.txt", Out: "d", NoHeader: true}, ""},
		{"header and no-header exclude each other", []string{"--format", "snap", "--from", "e.txt", "--out", "d", "--header", "--no-header"}, datasetImportOptions{}, "give one"},
		{"header only for snap", []string{"--format", "linqs", "--from", "x", "--out", "d", "--header"}, datasetImportOptions{}, "only for --format snap"},
		{"planetoid", []string{"--format", "planetoid", "--from", "data/ind.citeseer", "--out", "d"},
			datasetImportOptions{Format: "planetoid", From: "data/ind.citeseer", Out: "d"}, ""},
		{"planetoid split is implied", []string{"--format", "planetoid", "--from", "x", "--out", "d", "--split", "s.tsv"}, datasetImportOptions{}, "imply their split"},
		{"ogb undirected with a named split", []string{"--format", "ogb", "--from", "ogbn_arxiv", "--out", "d", "--undirected", "--split", "time"},
			datasetImportOptions{Format: "ogb", From: "ogbn_arxiv", Out: "d", Undirected: true, Split: "time"}, ""},
		{"ogb splits are named, not numbered", []string{"--format", "ogb", "--from", "x", "--out", "d", "--split", "time", "--split-id", "1"}, datasetImportOptions{}, "chosen by name"},
		{"out is required", []string{"--format", "snap", "--from", "x"}, datasetImportOptions{}, "--out: required"},
		{"labels only for snap", []string{"--format", "linqs", "--from", "x", "--out", "d", "--labels", "l"}, datasetImportOptions{}, "--labels: only for --format snap"},
		{"linqs is always undirected", []string{"--format", "linqs", "--from", "x", "--out", "d", "--undirected"}, datasetImportOptions{}, "always undirected"},
		{"snap has no split", []string{"--format", "snap", "--from", "x", "--out", "d", "--split", "s"}, datasetImportOptions{}, "no split"},
		{"split id needs a split", []string{"--format", "geomgcn", "--from", "x", "--out", "d", "--split-id", "2"}, datasetImportOptions{}, "--split-id: needs --split"},
		{"positional arguments refused", []string{"cora", "--format", "linqs", "--from", "x", "--out", "d"}, datasetImportOptions{}, "unexpected arguments"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got *datasetImportOptions
			cmd := newDatasetImportCmd(&deps{}, func(_ context.Context, o *datasetImportOptions) error { got = o; return nil })
			cmd.SetArgs(tc.args)
			cmd.SetOut(&bytes.Buffer{})
			cmd.SetErr(&bytes.Buffer{})
			err := cmd.Execute()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !isUsageError(err) {
					t.Fatalf("err = %v, want a usage error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			g := *got
			if g.IO == nil || len(g.Importers) != len(dataset.ImportFormats()) {
				t.Fatal("streams or importers not wired")
			}
			g.IO, g.Importers = nil, nil
			if !reflect.DeepEqual(g, tc.want) {
				t.Errorf("options = %+v, want %+v", g, tc.want)
			}
		})
	}
}

func TestDatasetInfoFlags(t *testing.T) {
	cases := []struct {
		name    string
		args    []string
		want    datasetInfoOptions
		wantErr string
	}{
		{"table by default", []string{"data/cora"}, datasetInfoOptions{Dir: "data/cora", Output: "table"}, ""},
		{"json", []string{"data/cora", "-o", "json"}, datasetInfoOptions{Dir: "data/cora", Output: "json"}, ""},
		{"a directory is required", nil, datasetInfoOptions{}, "want one dataset directory, got 0"},
		{"unknown format refused", []string{"d", "-o", "yaml"}, datasetInfoOptions{}, "valid: table, wide, json"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got *datasetInfoOptions
			cmd := newDatasetInfoCmd(&deps{}, func(_ context.Context, o *datasetInfoOptions) error { got = o; return nil })
			cmd.SetFlagErrorFunc(flagUsageError)
			cmd.SetArgs(tc.args)
			cmd.SetOut(&bytes.Buffer{})
			cmd.SetErr(&bytes.Buffer{})
			err := cmd.Execute()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !isUsageError(err) {
					t.Fatalf("err = %v, want a usage error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			g := *got
			if g.IO == nil || g.Info == nil {
				t.Fatal("streams or Info not wired")
			}
			g.IO, g.Info = nil, nil
			if !reflect.DeepEqual(g, tc.want) {
				t.Errorf("options = %+v, want %+v", g, tc.want)
			}
		})
	}
}

func TestDatasetImportAndInfoCora(t *testing.T) {
	cora := needSharedDataset(t, "cora")
	out := filepath.Join(t.TempDir(), "cora")
	code, stdout, stderr := runDatasetCLI(t, "import", "--format", "linqs", "--from", cora, "--out", out,
		"--split", filepath.Join(cora, "planetoid_split_linqs_ids.tsv"))
	if code != 0 {
		t.Fatalf("import: exit %d: %s", code, stderr)
	}
	for _, want := range []string{"format: linqs\n", "out: " + out + "\n", "nodes: 2708\n", "edges (CSR entries): 10556\n", "undirected edges: 5278\n",
		"features: 1433\n", "classes: 7\n", "dropped edges (unknown vertex): 0\n", "self-loops dropped: 0\n", "duplicate edges merged: 151\n",
		"train: 140\n", "val: 500\n", "test: 1000\n", "note: labels (class names in sorted order): 0=Case_Based,"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("import summary lacks %q:\n%s", want, stdout)
		}
	}

	code, stdout, stderr = runDatasetCLI(t, "info", out, "-o", "json")
	if code != 0 {
		t.Fatalf("info -o json: exit %d: %s", code, stderr)
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(stdout), &obj); err != nil {
		t.Fatalf("info -o json is not JSON: %v\n%s", err, stdout)
	}
	for key, want := range map[string]float64{"num_nodes": 2708, "num_edges": 10556, "num_classes": 7, "feature_dim": 1433} {
		if obj[key] != want {
			t.Errorf("%s = %v, want %v", key, obj[key], want)
		}
	}

	code, stdout, stderr = runDatasetCLI(t, "info", out)
	if code != 0 {
		t.Fatalf("info: exit %d: %s", code, stderr)
	}
	for _, want := range []string{"PROPERTY", "nodes", "2708", "train / val / test", "140 / 500 / 1000", "degree min / max", "skew: top 1% / 5% / 10% hold", "feature bytes"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("info table lacks %q:\n%s", want, stdout)
		}
	}
}

func TestDatasetImportSNAPUndirected(t *testing.T) {
	src := needSharedDataset(t, "snap-email-Eu-core/email-Eu-core.txt")
	out := filepath.Join(t.TempDir(), "email")
	code, stdout, stderr := runDatasetCLI(t, "import", "--format", "snap", "--from", src, "--out", out, "--undirected",
		"--labels", needSharedDataset(t, "snap-email-Eu-core/email-Eu-core-department-labels.txt"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"nodes: 1005\n", "edges (CSR entries): 32128\n", "undirected edges: 16064\n", "self-loops dropped: 642\n", "classes: 42\n"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, stdout)
		}
	}
}

func TestDatasetBadInputExitsTwo(t *testing.T) {
	dir := t.TempDir()
	edges := filepath.Join(dir, "edges.txt")
	if err := os.WriteFile(edges, []byte("1 2\n3 four\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(dir, "good.txt")
	if err := os.WriteFile(good, []byte("1 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	existing := t.TempDir()
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"non-numeric snap id names file and line", []string{"import", "--format", "snap", "--from", edges, "--out", filepath.Join(dir, "out")}, "edges.txt:2: target vertex"},
		{"missing input", []string{"import", "--format", "linqs", "--from", filepath.Join(dir, "nope"), "--out", filepath.Join(dir, "out")}, "--from"},
		{"existing out", []string{"import", "--format", "snap", "--from", edges, "--out", existing}, "already exists"},
		{"info on a directory that is no dataset", []string{"info", dir}, "meta.json"},
		{"usage error", []string{"import", "--format", "nope"}, "--format"},
		{"snap edge list that is a directory", []string{"import", "--format", "snap", "--from", dir, "--out", filepath.Join(dir, "out")}, dir + ": --from: is a directory (want a file)"},
		{"snap labels that are a directory", []string{"import", "--format", "snap", "--from", good, "--labels", dir, "--out", filepath.Join(dir, "out")}, dir + ": --labels: is a directory (want a file)"},
		{"linqs input that is a file", []string{"import", "--format", "linqs", "--from", edges, "--out", filepath.Join(dir, "out")}, edges + ": --from: is a file (want a directory"},
		{"planetoid directory without its files", []string{"import", "--format", "planetoid", "--from", existing, "--out", filepath.Join(dir, "out")}, "no ind.NAME.graph file"},
		{"ogb directory without raw/", []string{"import", "--format", "ogb", "--from", existing, "--out", filepath.Join(dir, "out")}, "no raw/ directory"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runDatasetCLI(t, tc.args...)
			if code != exitBadInput || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q: want exit 2 mentioning %q", code, stderr, tc.want)
			}
			if i := slices.Index(tc.args, "--from"); i >= 0 && (strings.Count(stderr, "\n") != 1 || strings.Count(stderr, tc.args[i+1]) > 1) {
				t.Errorf("stderr %q: want one line naming %s once", stderr, tc.args[i+1])
			}
			if _, err := os.Stat(filepath.Join(dir, "out")); err == nil {
				t.Fatal("a failed import left --out behind")
			}
		})
	}
}

func TestDatasetImportSaysHowTheFirstLineWasRead(t *testing.T) {
	dir := t.TempDir()
	edges := filepath.Join(dir, "edges.txt")
	if err := os.WriteFile(edges, []byte("4 3\n0 1\n1 2\n2 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		flags []string
		want  []string
	}{
		{"detected", nil, []string{"nodes: 4\n", "edges (CSR entries): 3\n", `note: first line "4 3" read as a count header`}},
		{"forced off", []string{"--no-header"}, []string{"nodes: 5\n", "edges (CSR entries): 4\n", `note: first line "4 3" read as an edge (--no-header)`}},
		{"forced on", []string{"--header"}, []string{"nodes: 4\n", `note: first line "4 3" skipped as a count header (--header)`}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"import", "--format", "snap", "--from", edges, "--out", filepath.Join(dir, fmt.Sprint("out", i))}, tc.flags...)
			code, stdout, stderr := runDatasetCLI(t, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stdout, w) {
					t.Errorf("output lacks %q:\n%s", w, stdout)
				}
			}
		})
	}
}

func TestDatasetImportPlanetoidAndOGB(t *testing.T) {
	testdata := filepath.Join("..", "..", "trainer", "dataset", "testdata", "import")
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"planetoid", []string{"--format", "planetoid", "--from", filepath.Join(testdata, "planetoid-tiny")},
			[]string{"format: planetoid\n", "nodes: 507\n", "train: 2\n", "val: 500\n", "test: 3\n", "note: 1 ids between 503 and 506 are not in test.index"}},
		{"ogb npz undirected", []string{"--format", "ogb", "--from", filepath.Join(testdata, "ogb-tiny-npz"), "--undirected", "--split", "time"},
			[]string{"format: ogb\n", "nodes: 5\n", "edges (CSR entries): 8\n", "features: 2\n", "test: 2\n"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "ds")
			code, stdout, stderr := runDatasetCLI(t, append(append([]string{"import"}, tc.args...), "--out", out)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stdout, w) {
					t.Errorf("output lacks %q:\n%s", w, stdout)
				}
			}
		})
	}
}
