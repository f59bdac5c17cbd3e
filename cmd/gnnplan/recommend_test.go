package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gnnplan/gnnplan/trainer/dataset"
)

func TestRecommendDefaultRun(t *testing.T) {
	dir := t.TempDir()
	plan, plot := filepath.Join(dir, "plan.json"), filepath.Join(dir, "tpc.svg")
	code, out, errOut := runCLI(t, "recommend", "-o", plan, "--plot", plot, "--top", "3")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"igb-hom graphsage on moment-b, budget $80,000", "recommended:", "placement:", "hint:", "distributed in-memory alternative", "wrote " + plan} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	data, err := os.ReadFile(plan)
	if err != nil {
		t.Fatal(err)
	}
	var top map[string]any
	if err := json.Unmarshal(data, &top); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"schema_version", "budget_usd", "cost_usd", "predicted_epoch_s", "samples_per_s", "tpc", "machine", "placement", "storage_traffic", "assumptions"} {
		if _, ok := top[k]; !ok {
			t.Errorf("plan.json lacks %q", k)
		}
	}
	if top["cost_usd"].(float64) > top["budget_usd"].(float64) {
		t.Errorf("plan costs more than the budget")
	}
	if svg, err := os.ReadFile(plot); err != nil || !bytes.Contains(svg, []byte("<svg")) {
		t.Errorf("plot missing or not SVG (%v)", err)
	}
}

func TestRecommendFlags(t *testing.T) {
	var got *recommendOptions
	cmd := newRecommendCmd(&deps{}, func(_ context.Context, o *recommendOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"--budget", "60000", "--profile", "hyperion-a", "--gpu-model", "a100-80gb-pcie,h100-80gb-pcie", "--ssds", "4-12", "--model", "gat", "-o", "p.json"})
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.BudgetUSD != 60000 || got.Profile != "hyperion-a" || !reflect.DeepEqual(got.GPUModels, []string{"a100-80gb-pcie", "h100-80gb-pcie"}) ||
		got.SSDs != "4-12" || got.Model != "gat" || got.PlanPath != "p.json" || got.GPUs != "1-4" || got.Workload != "igb-hom" {
		t.Errorf("options %+v", *got)
	}
	req, err := got.request(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(req.SSDCounts) != 9 || req.SSDCounts[0] != 4 || req.Workload.Model != "gat" || req.Workload.Heads != 8 || req.MaxGPUs != 4 {
		t.Errorf("request %+v", req)
	}
}

func TestRecommendBadInputExitsTwo(t *testing.T) {
	dir := t.TempDir()
	cat := filepath.Join(dir, "catalog.yaml")
	os.WriteFile(cat, []byte("schema_version: 1\ngpus:\n  - key: my-gpu\n    name: My GPU\n    memory_GiB: 24\n    pcie_gen: 4\n    lanes: 16\n    fp32_TFLOPS: 40\n    mem_GBps: 900\n"), 0o644)
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"budget below the cheapest plan", []string{"recommend", "--budget", "40000", "--gpu-model", "a100-80gb-pcie"}, "cheapest plan"},
		{"unknown GPU model", []string{"recommend", "--gpu-model", "rtx9090"}, "a100-40gb-pcie"},
		{"unknown SSD model", []string{"recommend", "--ssd-model", "floppy"}, "p5510-3.84tb"},
		{"catalog entry without a price", []string{"recommend", "--catalog", cat}, "price_USD"},
		{"unknown workload", []string{"recommend", "--workload", "reddit"}, "igb-hom"},
		{"unknown model", []string{"recommend", "--model", "gin"}, "graphsage"},
		{"bad GPU range", []string{"recommend", "--gpus", "4-1"}, "--gpus"},
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

func TestRecommendFromDatasetMeta(t *testing.T) {
	dir := t.TempDir()
	meta := dataset.Meta{Name: "small-graph", NumNodes: 1_000_000, NumEdges: 20_000_000, Undirected: true, FeatureDim: 128,
		FeatureDType: "float32", IndexDType: "int32", NumClasses: 10, NumTrain: 10_000}
	if err := dataset.WriteMeta(dir, meta); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "recommend", "--dataset", dir, "--top", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "small-graph graphsage on moment-b") {
		t.Errorf("output does not plan the dataset's workload:\n%s", out)
	}
	code, _, errOut = runCLI(t, "recommend", "--dataset", filepath.Join(dir, "missing"))
	if code != 2 || !strings.Contains(errOut, "meta.json") {
		t.Errorf("missing dataset: exit %d, %q", code, errOut)
	}
}
