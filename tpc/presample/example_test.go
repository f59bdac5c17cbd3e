package presample_test

import (
	"fmt"

	"github.com/gnnplan/gnnplan/tpc"
	"github.com/gnnplan/gnnplan/tpc/presample"
	"github.com/gnnplan/gnnplan/trainer/dataset"
)

// A ring of 12 vertices, each linked to the one before and the one after,
// trained on vertices 0-3 in one batch of four with two hops of fanout 2:
// every neighbour is sampled, so the shapes are exact. Each hop's sources
// are its destinations and their neighbours (vertices 11-4, then 10-5),
// and the batch reads the features of the outer hop's sources.
func ExampleShapes() {
	const n = 12
	g := &dataset.Graph{Meta: dataset.Meta{Name: "ring", NumNodes: n, NumEdges: 2 * n, Undirected: true}}
	g.Indptr = make([]int64, n+1)
	for v := range int64(n) {
		g.Indices = append(g.Indices, int32((v+n-1)%n), int32((v+1)%n))
		g.Indptr[v+1] = int64(len(g.Indices))
	}
	g.Train = []int64{0, 1, 2, 3}

	w := tpc.Workload{Fanouts: []int{2, 2}, BatchSize: 4}
	blocks, rows, err := presample.Shapes(g, w, 10)
	if err != nil {
		fmt.Println(err)
		return
	}
	for h, b := range blocks {
		fmt.Printf("hop %d: %.0f dst, %.0f src, %.0f edges\n", h+1, b.Dst, b.Src, b.Edges)
	}
	fmt.Printf("%.0f input rows\n", rows)
	// Output:
	// hop 1: 4 dst, 6 src, 8 edges
	// hop 2: 6 dst, 8 src, 12 edges
	// 8 input rows
}
