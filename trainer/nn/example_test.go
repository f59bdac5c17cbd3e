package nn_test

import (
	"fmt"
	"log"

	"github.com/gnnplan/gnnplan/kernels"
	"github.com/gnnplan/gnnplan/trainer/nn"
)

// A two-layer GraphSAGE model's parameters, and its forward pass over a
// hand-made batch: two seeds, each aggregating itself and one neighbour
// at each hop, the logits one row per seed.
func ExampleModel_Forward() {
	cpu, err := kernels.NewCPU(kernels.CPUOptions{Threads: 1})
	if err != nil {
		log.Fatal(err)
	}
	cfg := nn.Config{Kind: nn.GraphSAGE, InDim: 4, Hidden: 8, Classes: 3, Layers: 2}
	m, err := nn.New(cpu, cfg, 1)
	if err != nil {
		log.Fatal(err)
	}
	for _, p := range m.Params() {
		fmt.Printf("%s %dx%d\n", p.Name, p.W.Rows, p.W.Cols)
	}
	fmt.Println("parameters:", m.NumParams())
	forms := nn.Forms(cfg.Kind)
	// Blocks seeds first, outermost hop last: hop 1 has destinations
	// {0, 1} and sources {0, 1, 2}; hop 2 destinations {0, 1, 2} and
	// sources {0, 1, 2, 3}. Offsets and SrcIdx are the CSR over local ids.
	hop1 := nn.NewBlock(cpu, []int32{0, 1, 2}, []int32{2, 2}, []int32{0, 1, 2}, nil, forms)
	hop2 := nn.NewBlock(cpu, []int32{0, 1, 2, 3}, []int32{1, 0, 3}, []int32{0, 1, 2, 3}, nil, forms)
	x := cpu.Wrap(4, cfg.InDim, make([]float32, 4*cfg.InDim))
	logits := m.Forward([]*nn.Block{hop1, hop2}, x, false, 0)
	fmt.Printf("logits %dx%d\n", logits.Rows, logits.Cols)
	// Output:
	// layers.0.weight 8x8
	// layers.0.bias 1x8
	// layers.1.weight 16x3
	// layers.1.bias 1x3
	// parameters: 123
	// logits 2x3
}
