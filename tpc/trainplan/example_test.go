package trainplan_test

import (
	"fmt"

	"github.com/gnnplan/gnnplan/tpc"
	"github.com/gnnplan/gnnplan/tpc/trainplan"
)

// A plan's workload sets the model, its widths, fanouts and batch; the
// flags the user gave win over it, and the model's paper defaults fill
// the rest.
func ExampleSettings() {
	plan := &tpc.Plan{Workload: tpc.Workload{Model: "gat", Hidden: 64, Heads: 4, Fanouts: []int{15, 10, 5}, BatchSize: 512}}
	given := map[string]bool{"batch": true, "lr": true}
	f := trainplan.Flags{Batch: 2048, LR: 0.003, Set: func(name string) bool { return given[name] }}
	to, err := trainplan.Settings(f, plan)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s: hidden %d x %d heads, fanouts %s, batch %d, lr %g, row-normalised %v\n",
		to.Model.Kind, to.Model.Hidden, to.Model.Heads, trainplan.FormatFanouts(to.Fanouts), to.BatchSize, to.LR, to.RowNormalize)

	f.Fanouts = "25,0"
	given["fanouts"] = true
	_, err = trainplan.Settings(f, plan)
	fmt.Println(err)
	// Output:
	// gat: hidden 64 x 4 heads, fanouts 15,10,5, batch 2048, lr 0.003, row-normalised false
	// --fanouts: "25,0" (valid: comma-separated counts >= 1, or -1 for every neighbour, e.g. 25,10)
}
