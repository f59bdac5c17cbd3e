package dataset_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"

	"github.com/gnnplan/gnnplan/trainer/dataset"
)

// A small synthetic power-law graph written as a dataset directory and
// read back: the CSR arrays, labels and splits memory-mapped, the
// features read row by row.
func ExampleSynth() {
	tmp, err := os.MkdirTemp("", "synth")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	dir := filepath.Join(tmp, "tiny")
	opt := dataset.DefaultSynthOptions()
	opt.Name, opt.Nodes, opt.Edges, opt.FeatureDim, opt.Classes = "tiny", 200, 800, 8, 4
	opt.TrainFraction, opt.ValFraction, opt.TestFraction = 0.5, 0.25, 0.25
	if _, err := dataset.Synth(context.Background(), opt, dir, io.Discard); err != nil {
		log.Fatal(err)
	}
	g, err := dataset.LoadGraph(dir)
	if err != nil {
		log.Fatal(err)
	}
	defer g.Close()
	m := g.Meta
	fmt.Printf("%s: %d vertices, %d features, %d classes, undirected %t\n", m.Name, m.NumNodes, m.FeatureDim, m.NumClasses, m.Undirected)
	fmt.Printf("CSR: %d offsets, %d neighbours (num_edges %d)\n", len(g.Indptr), len(g.Indices), m.NumEdges)
	fmt.Printf("splits: %d train, %d val, %d test\n", len(g.Train), len(g.Val), len(g.Test))
	fr, err := dataset.OpenFeatures(dir, m)
	if err != nil {
		log.Fatal(err)
	}
	defer fr.Close()
	row := make([]float32, m.FeatureDim)
	if err := fr.Row(g.Train[0], row); err != nil {
		log.Fatal(err)
	}
	fmt.Println("one feature row:", len(row), "floats")
	// Output:
	// tiny: 200 vertices, 8 features, 4 classes, undirected true
	// CSR: 201 offsets, 1366 neighbours (num_edges 1366)
	// splits: 100 train, 50 val, 50 test
	// one feature row: 8 floats
}
