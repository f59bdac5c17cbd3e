package trainer_test

import (
	"context"
	"fmt"
	"log"

	"github.com/gnnplan/gnnplan/kernels"
	"github.com/gnnplan/gnnplan/trainer"
	"github.com/gnnplan/gnnplan/trainer/dataset"
	"github.com/gnnplan/gnnplan/trainer/nn"
)

// ringGraph is a graph built by hand: n vertices on a ring, each joined
// to the two beside it, of two classes (the ring's two halves), with
// 4-d features saying the class, and every fourth vertex a training,
// validation or test vertex.
func ringGraph(n int) (*dataset.Graph, []float32) {
	g := &dataset.Graph{Meta: dataset.Meta{Name: "ring", NumNodes: int64(n), NumEdges: int64(2 * n), FeatureDim: 4, NumClasses: 2}}
	features := make([]float32, 0, 4*n)
	for v := range n {
		g.Indptr = append(g.Indptr, int64(2*v))
		g.Indices = append(g.Indices, int32((v+n-1)%n), int32((v+1)%n))
		class := int64(2 * v / n)
		g.Labels = append(g.Labels, class)
		features = append(features, float32(class), float32(1-class), 1, 0.5)
		switch v % 4 {
		case 0, 1:
			g.Train = append(g.Train, int64(v))
		case 2:
			g.Val = append(g.Val, int64(v))
		default:
			g.Test = append(g.Test, int64(v))
		}
	}
	g.Indptr = append(g.Indptr, int64(2*n))
	return g, features
}

// A GraphSAGE model trained on a ring of 64 vertices in memory: each
// worker's Loader samples batches of 8 seeds (two hops of 2 neighbours)
// ahead of the step.
func ExampleTrainer_Run() {
	g, features := ringGraph(64)
	cpu, err := kernels.NewCPU(kernels.CPUOptions{Threads: 1})
	if err != nil {
		log.Fatal(err)
	}
	o := trainer.Defaults(nn.GraphSAGE)
	o.Fanouts, o.BatchSize, o.Epochs, o.Threads = []int{2, 2}, 8, 3, 1
	tr, err := trainer.New(cpu, g, features, o)
	if err != nil {
		log.Fatal(err)
	}
	res, err := tr.Run(context.Background(), nil)
	if err != nil {
		log.Fatal(err)
	}
	cfg := tr.Config()
	fmt.Printf("%s: %d layers, %d -> %d -> %d, %d parameters\n", cfg.Kind, cfg.Layers, cfg.InDim, cfg.Hidden, cfg.Classes, res.Params)
	for _, e := range res.Epochs {
		fmt.Printf("epoch %d: %d batches, evaluated: %t\n", e.Epoch, e.Batches, e.ValAcc == e.ValAcc)
	}
	fmt.Println("stopped:", res.Stop)
	// Output:
	// graphsage: 2 layers, 4 -> 16 -> 2, 210 parameters
	// epoch 1: 4 batches, evaluated: true
	// epoch 2: 4 batches, evaluated: true
	// epoch 3: 4 batches, evaluated: true
	// stopped: epochs
}
