package validate_test

import (
	"context"
	"fmt"

	"github.com/gnnplan/gnnplan/tpc/validate"
)

// What `gnnplan validate` runs: every published case and every case this
// project measured, each predicted by the planning model, grouped as their
// sources compared them. The errors themselves are in docs/epoch-model.md.
func ExampleRun() {
	rep, err := validate.Run(context.Background())
	if err != nil {
		fmt.Println(err)
		return
	}
	cases, groups := map[string]int{}, map[string]int{}
	var sources []string
	for _, r := range rep.Results {
		if cases[r.Source] == 0 {
			sources = append(sources, r.Source)
		}
		cases[r.Source]++
	}
	for _, o := range rep.Orders {
		groups[o.Source]++
	}
	for _, s := range sources {
		fmt.Printf("%s: %d cases in %d groups\n", s, cases[s], groups[s])
	}
	fmt.Printf("published: %d cases from %v\n", rep.Published.Cases, rep.Published.Sources)
	// Output:
	// Moment (SC'25): 11 cases in 3 groups
	// Hyperion (ICDE'25): 28 cases in 9 groups
	// this machine: 12 cases in 2 groups
	// published: 39 cases from [Moment (SC'25) Hyperion (ICDE'25)]
}
