package tpc_test

import (
	"context"
	"fmt"

	"github.com/gnnplan/gnnplan/profiles"
	"github.com/gnnplan/gnnplan/tpc"
)

// What `gnnplan recommend --budget 80000` answers: GraphSAGE on IGB-HOM in
// Moment's machine B, the embedded default.
func ExampleRecommend() {
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
	rec, err := tpc.Recommend(context.Background(), tpc.Request{Machine: m, Workload: w, BudgetUSD: 80000,
		Catalog: profiles.DefaultCatalog(), Assumptions: tpc.DefaultAssumptions()})
	if err != nil {
		fmt.Println(err)
		return
	}
	b := rec.Best
	fmt.Printf("%d x %s + %d x %s, $%.0f, %.0f samples/s, TPC %.0f per $1k, %s-bound, %s loader\n",
		b.GPUs, b.GPU.Key, b.SSDs, b.SSD.Key, b.CostUSD, b.SamplesPerSec, 1000*b.TPC, b.Bound, b.Loader.Name)
	// Output:
	// 6 x l40s-48gb-pcie + 9 x 980pro-1tb, $79998, 1125956 samples/s, TPC 14075 per $1k, io-bound, packed loader
}
