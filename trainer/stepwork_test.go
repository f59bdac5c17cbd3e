package trainer

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"github.com/gnnplan/gnnplan/tpc"
	"github.com/gnnplan/gnnplan/tpc/presample"
	"github.com/gnnplan/gnnplan/trainer/dataset"
	"github.com/gnnplan/gnnplan/trainer/nn"
)

// TestStepWorkMatchesTheKernels holds the epoch-time model's account of a
// step (tpc.Workload.StepWork on pre-sampled block shapes) to the work the
// trainer's kernels did, as the CPU backend's tally counted it, class by
// class, for each model and for both orders of a layer (aggregate first,
// transform first) and a first layer reading the features in place.
func TestStepWorkMatchesTheKernels(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "g")
	so := dataset.DefaultSynthOptions()
	so.Nodes, so.Edges, so.FeatureDim, so.Classes, so.TrainFraction = 20_000, 200_000, 100, 7, 0.2
	if _, err := dataset.Synth(context.Background(), so, dir, nil); err != nil {
		t.Fatal(err)
	}
	d := load(t, dir)
	defer d.g.Close()
	for _, c := range []struct {
		name   string
		kind   nn.Kind
		hidden int
		heads  int
	}{
		{"graphsage narrowing", nn.GraphSAGE, 64, 1},
		{"graphsage widening (features in place)", nn.GraphSAGE, 256, 1},
		{"gcn narrowing", nn.GCN, 64, 1},
		{"gcn widening (features in place)", nn.GCN, 256, 1},
		{"gat", nn.GAT, 16, 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := Defaults(c.kind)
			o.Fanouts, o.BatchSize, o.Epochs, o.EvalEvery = []int{10, 5}, 256, 1, 0
			o.Model.Hidden, o.Model.InputDropout = c.hidden, 0
			if c.kind == nn.GAT {
				o.Model.Heads = c.heads
			}
			res, err := newTrainer(t, d, o, 2).Run(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			e := res.Epochs[0]
			if e.Kernels == nil {
				t.Fatal("an epoch on the CPU backend reports no kernel times")
			}
			n := float64(e.Batches)
			got := e.Kernels.Work
			if e.Kernels.ProductsS <= 0 || e.Kernels.AggregationS <= 0 || e.Kernels.ElementwiseS <= 0 {
				t.Errorf("kernel times %+v: a class that ran took no time", *e.Kernels)
			}
			w := tpc.Workload{FeatureDim: so.FeatureDim, Classes: so.Classes, Model: map[nn.Kind]string{nn.GraphSAGE: tpc.ModelGraphSAGE, nn.GCN: tpc.ModelGCN, nn.GAT: tpc.ModelGAT}[c.kind],
				Hidden: c.hidden, Heads: c.heads, Fanouts: o.Fanouts, BatchSize: o.BatchSize}
			blocks, rows, err := presample.Shapes(d.g, w, 1000)
			if err != nil {
				t.Fatal(err)
			}
			want, err := w.StepWork(blocks, rows)
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range []struct {
				name      string
				got, want float64
			}{
				{"product GFLOP", got.ProductGFLOP / n, want.ProductGFLOP},
				{"aggregation GB", got.AggregationGB / n, want.AggregationGB},
				{"row gather GB", got.RowGatherGB / n, want.RowGatherGB},
				{"row gather rows", got.RowGatherRows / n, want.RowGatherRows},
				{"elementwise GB", got.ElementwiseGB / n, want.ElementwiseGB},
				{"optimizer GB", got.OptimizerGB / n, want.OptimizerGB},
			} {
				if math.Abs(k.got-k.want) > 0.05*math.Max(k.got, k.want) {
					t.Errorf("%s a batch: the kernels did %.4g, the model counts %.4g", k.name, k.got, k.want)
				}
			}
		})
	}
}
