package main

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gnnplan/gnnplan/trainer/dataset"
	"github.com/gnnplan/gnnplan/trainer/sample"
)

// writeDataset writes a random graph of n vertices with dim features.
func writeDataset(t *testing.T, dir string, n, deg, dim int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(5, 6))
	indptr := make([]int64, n+1)
	var indices []int32
	for v := 0; v < n; v++ {
		for k := 0; k < deg; k++ {
			// Skewed endpoints: low ids are hubs.
			u := int32(float64(n) * rng.Float64() * rng.Float64())
			indices = append(indices, u)
		}
		indptr[v+1] = int64(len(indices))
	}
	feats := make([]float32, n*dim)
	labels := make([]int64, n)
	var train []int64
	for v := range labels {
		labels[v] = int64(v % 3)
		if v%10 == 0 {
			train = append(train, int64(v))
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(dataset.WriteArray(filepath.Join(dir, dataset.IndptrFile), "<i8", indptr, int64(n+1)))
	must(dataset.WriteArray(filepath.Join(dir, dataset.IndicesFile), "<i4", indices, int64(len(indices))))
	must(dataset.WriteArray(filepath.Join(dir, dataset.FeaturesFile), "<f4", feats, int64(n), int64(dim)))
	must(dataset.WriteArray(filepath.Join(dir, dataset.LabelsFile), "<i8", labels, int64(n)))
	must(dataset.WriteArray(filepath.Join(dir, dataset.TrainFile), "<i8", train, int64(len(train))))
	must(dataset.WriteArray(filepath.Join(dir, dataset.ValFile), "<i8", []int64{}, 0))
	must(dataset.WriteArray(filepath.Join(dir, dataset.TestFile), "<i8", []int64{}, 0))
	must(dataset.WriteMeta(dir, dataset.Meta{Name: "skewed", NumNodes: int64(n), NumEdges: int64(len(indices)), FeatureDim: dim,
		FeatureDType: "float32", IndexDType: "int32", NumClasses: 3, NumTrain: int64(len(train))}))
}

func TestPlaceEndToEnd(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	os.Mkdir(data, 0o755)
	writeDataset(t, data, 3000, 8, 16)
	plan := filepath.Join(dir, "plan.json")
	if code, _, errOut := runCLI(t, "recommend", "--dataset", data, "--ssds", "2-4", "--gpus", "2", "--save", plan); code != 0 {
		t.Fatalf("recommend: %s", errOut)
	}
	code, out, errOut := runCLI(t, "place", "--plan", plan, "--dataset", data)
	if code != 0 {
		t.Fatalf("place: exit %d: %s", code, errOut)
	}
	for _, want := range []string{"skewed: 3000 vertices", "hotness from ", "% are topology (neighbour lists)", "ddak  distance from targets", "hash  distance from targets", "unified cache", "wrote "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, f := range []string{"layout_bin.npy", "layout_row.npy", "layout.json", sample.HotnessFile} {
		if _, err := os.Stat(filepath.Join(data, f)); err != nil {
			t.Errorf("%s not written: %v", f, err)
		}
	}
	// Again from the saved hotness, as JSON, with the hash policy.
	code, out, errOut = runCLI(t, "place", "--plan", plan, "--dataset", data, "--hotness", filepath.Join(data, sample.HotnessFile), "--policy", "hash", "-o", "json")
	if code != 0 {
		t.Fatalf("place -o json: %s", errOut)
	}
	var rep placeReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Policy != "hash" || len(rep.Evaluation.Bins) == 0 || len(rep.Other) != 1 || rep.Sampling != nil {
		t.Fatalf("json report %+v (%v)", rep, err)
	}
	// The hash layout replaced the DDAK one: place says so (issue 34,
	// finding 7), and keeps stdout the JSON report.
	if !strings.Contains(errOut, "held a ddak layout: replaced by this hash one (place again with --policy ddak") {
		t.Errorf("place --policy hash over a DDAK layout said nothing on stderr: %q", errOut)
	}
	// A fixed number of epochs, reported with the topology share.
	code, out, errOut = runCLI(t, "place", "--plan", plan, "--dataset", data, "--epochs", "3", "-o", "json")
	if code != 0 {
		t.Fatalf("place --epochs 3: %s", errOut)
	}
	rep = placeReport{}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Sampling == nil || rep.Sampling.Epochs != 3 ||
		!(rep.Sampling.TopologyShare > 0 && rep.Sampling.TopologyShare < 1) {
		t.Fatalf("json report sampling %+v (%v), want 3 epochs and a topology share in (0, 1)", rep.Sampling, err)
	}
}

func TestPlaceBadInputExitsTwo(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	os.Mkdir(data, 0o755)
	writeDataset(t, data, 500, 4, 8)
	plan := filepath.Join(dir, "plan.json")
	if code, _, errOut := runCLI(t, "recommend", "--dataset", data, "--gpus", "1", "--save", plan); code != 0 {
		t.Fatalf("recommend: %s", errOut)
	}
	other := filepath.Join(dir, "other")
	os.Mkdir(other, 0o755)
	writeDataset(t, other, 400, 4, 8)
	short := filepath.Join(dir, "short.npy")
	sample.WriteHotness(short, make([]uint32, 10))
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"missing plan", []string{"place", "--plan", filepath.Join(dir, "none.json"), "--dataset", data}, "none.json"},
		{"not a dataset", []string{"place", "--plan", plan, "--dataset", dir}, "meta.json"},
		{"hotness of another dataset", []string{"place", "--plan", plan, "--dataset", data, "--hotness", short}, "short.npy"},
		{"unknown policy", []string{"place", "--plan", plan, "--dataset", data, "--policy", "random"}, "--policy"},
		{"flags missing", []string{"place", "--plan", plan}, "--dataset"},
		{"negative epochs", []string{"place", "--plan", plan, "--dataset", data, "--epochs", "-1"}, "--epochs: -1"},
		{"another dataset's plan", []string{"place", "--plan", plan, "--dataset", other}, "vertices"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := runCLI(t, tc.args...)
			if code != 2 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr %q: want exit 2 and one line mentioning %q", code, errOut, tc.want)
			}
		})
	}
}

// TestPlaceHugePlanFanoutIsAllNeighbours: a plan whose fanouts ask for a
// billion neighbours measures hotness taking every neighbour, instead of
// reserving a billion per seed (1.1 TB once).
func TestPlaceHugePlanFanoutIsAllNeighbours(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	os.Mkdir(data, 0o755)
	writeDataset(t, data, 2000, 8, 16)
	plan := filepath.Join(dir, "plan.json")
	if code, _, errOut := runCLI(t, "recommend", "--dataset", data, "--gpus", "1", "--ssds", "1", "--save", plan); code != 0 {
		t.Fatalf("recommend: %s", errOut)
	}
	raw, err := os.ReadFile(plan)
	if err != nil {
		t.Fatal(err)
	}
	var p map[string]any
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatal(err)
	}
	p["workload"].(map[string]any)["fanouts"] = []int{1000000000, 10}
	raw, _ = json.Marshal(p)
	os.WriteFile(plan, raw, 0o644)
	if code, _, errOut := runCLI(t, "place", "--plan", plan, "--dataset", data); code != 0 {
		t.Fatalf("place with fanouts of a billion: exit %d: %s", code, errOut)
	}
}
