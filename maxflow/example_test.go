package maxflow_test

import (
	"fmt"

	"github.com/gnnplan/gnnplan/maxflow"
)

// A flow network with a volume-capped source: a cache that holds 40 GB
// of a 100 GB epoch beside an SSD at 6 GB/s, both behind a 24 GB/s link.
func ExampleNetwork_MinTime() {
	n := maxflow.NewNetwork(5, 4)
	src, cache, ssd, gpu, sink := n.AddNode("source"), n.AddNode("cache"), n.AddNode("ssd"), n.AddNode("gpu"), n.AddNode("sink")
	n.AddCappedEdge(src, cache, 100, 40) // fast, but holds 40 GB
	n.AddEdge(src, ssd, 6)
	n.AddEdge(cache, gpu, 24)
	n.AddEdge(ssd, gpu, 24)
	n.AddEdge(gpu, sink, 24)
	sol, err := n.MinTime(src, sink, 100)
	if err != nil {
		fmt.Println(err)
		return
	}
	// The SSD's 60 GB at 6 GB/s set the time.
	fmt.Printf("%.1f s\n", sol.Seconds)
	// Output: 10.0 s
}
