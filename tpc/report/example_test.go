package report_test

import (
	"bufio"
	"context"
	"fmt"
	"strings"

	"github.com/gnnplan/gnnplan/profiles"
	"github.com/gnnplan/gnnplan/tpc"
	"github.com/gnnplan/gnnplan/tpc/report"
)

// The review of a small plan: up to two L40S and four 980 PRO on Moment's
// machine B, for $40,000. Build prices the plan's search again at other
// budgets; WriteMarkdown names the three SVG figures Figures gives.
func ExampleBuild() {
	m, err := profiles.Machine("moment-b")
	if err != nil {
		fmt.Println(err)
		return
	}
	w, err := tpc.BuiltinWorkload("igb-hom")
	if err != nil {
		fmt.Println(err)
		return
	}
	rec, err := tpc.Recommend(context.Background(), tpc.Request{Machine: m, Workload: w, BudgetUSD: 40000,
		GPUModels: []string{"l40s-48gb-pcie"}, SSDModels: []string{"980pro-1tb"}, MaxGPUs: 2, SSDCounts: []int{0, 2, 4},
		Catalog: profiles.DefaultCatalog(), Assumptions: tpc.DefaultAssumptions()})
	if err != nil {
		fmt.Println(err)
		return
	}
	r, err := report.Build(context.Background(), rec.Plan(), report.Options{Version: "example"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d options priced again\n", len(r.Rec.Options))
	for _, b := range r.Budgets {
		if b.Best == nil {
			fmt.Printf("$%.0f: nothing fits\n", b.BudgetUSD)
			continue
		}
		fmt.Printf("$%.0f: %d x %s + %d x %s\n", b.BudgetUSD, b.Best.GPUs, b.Best.GPU.Key, b.Best.SSDs, b.Best.SSD.Key)
	}
	for _, f := range r.Feasibility {
		fmt.Println("check:", f[0])
	}

	var md strings.Builder
	if err := r.WriteMarkdown(&md, "bin/review"); err != nil {
		fmt.Println(err)
		return
	}
	topo, ssds, gpus := report.Figures("review")
	s := bufio.NewScanner(strings.NewReader(md.String()))
	for s.Scan() {
		line := s.Text()
		if strings.HasPrefix(line, "## ") {
			fmt.Println(line)
		}
		for _, f := range []string{topo, ssds, gpus} {
			if strings.Contains(line, "("+f+")") {
				fmt.Println("  figure", f)
			}
		}
	}
	// Output:
	// 2 options priced again
	// $20000: nothing fits
	// $30000: nothing fits
	// $40000: 1 x l40s-48gb-pcie + 2 x 980pro-1tb
	// $50000: 2 x l40s-48gb-pcie + 4 x 980pro-1tb
	// $60000: 2 x l40s-48gb-pcie + 4 x 980pro-1tb
	// $80000: 2 x l40s-48gb-pcie + 4 x 980pro-1tb
	// check: GPU slots
	// check: SSD adapters
	// check: SSD capacity
	// check: Power
	// ## Recommendation
	// ## The workload
	// ## What it costs
	// ## Building it
	// ## How the plan moves with the budget and the assumptions
	// ## The machine and the placement
	//   figure review-topology.svg
	// ## Options ranked by TPC
	// ## TPC and throughput against SSD and GPU counts
	//   figure review-ssds.svg
	//   figure review-gpus.svg
	// ## Assumptions and where each figure came from
}
