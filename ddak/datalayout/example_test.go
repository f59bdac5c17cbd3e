package datalayout_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/gnnplan/gnnplan/ddak"
	"github.com/gnnplan/gnnplan/ddak/datalayout"
	"github.com/gnnplan/gnnplan/profiles"
	"github.com/gnnplan/gnnplan/tpc"
	"github.com/gnnplan/gnnplan/tpc/trainplan"
	"github.com/gnnplan/gnnplan/trainer/dataset"
)

// A small generated graph laid out over a plan of Moment's machine B with
// one GPU and two SSDs: the graph fits the GPU's cache, so the plan keeps
// one bin there and every vertex lands in it; the layout's three files
// are written next to the dataset.
func ExampleLay() {
	dir, err := os.MkdirTemp("", "datalayout-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	data := filepath.Join(dir, "g")
	so := dataset.DefaultSynthOptions()
	so.Nodes, so.Edges, so.FeatureDim, so.Classes = 2000, 10000, 16, 4
	if _, err := dataset.Synth(context.Background(), so, data, io.Discard); err != nil {
		fmt.Println(err)
		return
	}
	meta, err := dataset.ReadMeta(data)
	if err != nil {
		fmt.Println(err)
		return
	}
	m, err := profiles.Machine("moment-b")
	if err != nil {
		fmt.Println(err)
		return
	}
	rec, err := tpc.Recommend(context.Background(), tpc.Request{Machine: m, Workload: trainplan.WorkloadFromMeta(data, meta), BudgetUSD: 80000,
		GPUModels: []string{"l40s-48gb-pcie"}, SSDModels: []string{"980pro-1tb"}, MinGPUs: 1, MaxGPUs: 1, SSDCounts: []int{2},
		Catalog: profiles.DefaultCatalog(), Assumptions: tpc.DefaultAssumptions()})
	if err != nil {
		fmt.Println(err)
		return
	}
	r, err := datalayout.Lay(context.Background(), datalayout.Options{Plan: rec.Plan(), PlanPath: "plan.json", Dataset: data,
		Policy: ddak.PolicyDDAK, Priority: ddak.DefaultPriority, Pool: ddak.DefaultPool, Seed: 1, Fraction: 1, Epochs: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	rows := int64(0)
	for _, b := range r.Evaluation.Bins {
		rows += int64(b.Rows)
	}
	fmt.Printf("%s layout of %d vertices: %d rows placed; hash evaluated beside it: %v\n",
		r.Chosen.Policy, r.Meta.NumNodes, rows, r.Other.Policy == ddak.PolicyHash)
	for _, b := range r.Bins {
		fmt.Printf("bin %s (%s): target %.0f%% of the reads\n", b.ID, b.Kind, 100*b.TargetShare)
	}
	for _, f := range []string{"layout_bin.npy", "layout_row.npy", "layout.json"} {
		_, err := os.Stat(filepath.Join(data, f))
		fmt.Println(f, err == nil)
	}
	// Output:
	// ddak layout of 2000 vertices: 2000 rows placed; hash evaluated beside it: true
	// bin gpu0 (gpu_memory): target 100% of the reads
	// layout_bin.npy true
	// layout_row.npy true
	// layout.json true
}
