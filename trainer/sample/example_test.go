package sample_test

import (
	"fmt"
	"log"

	"github.com/gnnplan/gnnplan/trainer/dataset"
	"github.com/gnnplan/gnnplan/trainer/sample"
)

// ring is a graph built by hand: n vertices on a ring, each joined to the
// two beside it.
func ring(n int) *dataset.Graph {
	g := &dataset.Graph{Meta: dataset.Meta{NumNodes: int64(n), NumEdges: int64(2 * n)}}
	for v := range n {
		g.Indptr = append(g.Indptr, int64(2*v))
		g.Indices = append(g.Indices, int32((v+n-1)%n), int32((v+1)%n))
		g.Labels = append(g.Labels, int64(v%2))
	}
	g.Indptr = append(g.Indptr, int64(2*n))
	return g
}

// A mini-batch of two seeds on a ring of 10 vertices, every neighbour
// taken at both hops: each hop's block lists its destinations first
// among its sources, and the outermost block's sources are the rows the
// batch reads.
func ExampleSampler_Sample() {
	s, err := sample.NewSampler(ring(10), sample.SamplerOptions{
		Fanouts: []int{sample.AllNeighbors, sample.AllNeighbors}, BatchSize: 2, Seeds: []int64{0, 5}})
	if err != nil {
		log.Fatal(err)
	}
	mb := s.Sample(0, 0)
	fmt.Println("seeds:", mb.Seeds)
	for h, b := range mb.Blocks {
		fmt.Printf("hop %d: dst %v, src %v, %d edges\n", h+1, b.Dst, b.Src, b.NumEdges())
	}
	fmt.Println("input rows:", len(mb.Input()))
	// Output:
	// seeds: [0 5]
	// hop 1: dst [0 5], src [0 5 9 1 4 6], 4 edges
	// hop 2: dst [0 5 9 1 4 6], src [0 5 9 1 4 6 8 2 3 7], 12 edges
	// input rows: 10
}
