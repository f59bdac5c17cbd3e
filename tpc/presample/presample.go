// Package presample measures a graph's mini-batches for the epoch-time
// model: it samples some of a workload's batches with the trainer's
// sampler and returns their mean block shapes, which tpc prices a batch
// of this graph by in place of its uniform model's estimate. It joins the
// planner (tpc) to the trainer's sampler, so that neither imports the
// other.
package presample

import (
	"github.com/gnnplan/gnnplan/tpc"
	"github.com/gnnplan/gnnplan/trainer/dataset"
	"github.com/gnnplan/gnnplan/trainer/sample"
)

// Shapes samples up to batches of w's mini-batches on g (its fanouts,
// batch size and a fixed seed) and returns their mean block shapes, the
// seeds' block first, and mean distinct input rows: what tpc.PredictCPU,
// tpc.Workload.StepWork and tpc.Workload.GPUWorkingSet take.
func Shapes(g *dataset.Graph, w tpc.Workload, batches int) ([]tpc.BlockShape, float64, error) {
	s, err := sample.NewSampler(g, sample.SamplerOptions{Fanouts: w.Fanouts, BatchSize: w.BatchSize, Seed: 0x7072, Shuffle: true})
	if err != nil {
		return nil, 0, err
	}
	n := max(1, min(batches, s.Batches(0)))
	blocks := make([]tpc.BlockShape, len(w.Fanouts))
	var rows float64
	for i := range n {
		mb := s.Sample(0, i)
		for h, b := range mb.Blocks {
			blocks[h].Dst += float64(len(b.Dst)) / float64(n)
			blocks[h].Src += float64(len(b.Src)) / float64(n)
			blocks[h].Edges += float64(b.NumEdges()) / float64(n)
		}
		rows += float64(len(mb.Input())) / float64(n)
	}
	return blocks, rows, nil
}
