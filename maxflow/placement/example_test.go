package placement_test

import (
	"context"
	"fmt"

	"github.com/gnnplan/gnnplan/maxflow/placement"
	"github.com/gnnplan/gnnplan/profiles"
)

// The capacity graph of an embedded machine: Moment's machine B with its
// 4 GPUs and 8 SSDs where the paper put them.
func ExampleEvaluate() {
	m, err := profiles.Machine("moment-b")
	if err != nil {
		fmt.Println(err)
		return
	}
	ev, err := placement.Evaluate(m, placement.DefaultTiers())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d GPUs, epoch IO %.2f s\n", len(ev.PerGPU), ev.EpochIOSeconds)
	// Output: 4 GPUs, epoch IO 1.46 s
}

// The best places for Moment's machine B's 4 GPUs and 8 SSDs: take the
// devices out, search their placements in the free slots up to symmetry,
// and compare the best with Moment's four classic layouts.
func ExampleSearch() {
	m, err := profiles.Machine("moment-b")
	if err != nil {
		fmt.Println(err)
		return
	}
	empty, inv := placement.Strip(m)
	res, err := placement.SearchWith(context.Background(), empty, inv, placement.DefaultTiers(), placement.SearchOptions{Top: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	best := res.Candidates[0]
	gpus, ssds := res.Summary(best)
	fmt.Printf("best: %.2f s (GPUs %s; SSDs %s)\n", best.Seconds, gpus, ssds)
	for _, name := range placement.ClassicNames {
		fmt.Printf("classic %s: %.2f s (%s)\n", name, res.Classic[name].Seconds, placement.ClassicAbout(name))
	}
	// Output:
	// best: 1.46 s (GPUs rp0 1, rp1 1, sw0 2; SSDs rp1 2, sw0 2, sw1 4)
	// classic a: 4.17 s (SSDs front board first, GPUs spread across switches)
	// classic b: 4.17 s (SSDs front board first, GPUs together on one switch)
	// classic c: 1.85 s (SSDs spread across switches, GPUs spread across switches)
	// classic d: 2.08 s (SSDs spread across switches, GPUs together on one switch)
}
