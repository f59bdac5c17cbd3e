package trainplan

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/gnnplan/gnnplan/internal/inputerr"
	"github.com/gnnplan/gnnplan/kernels"
	"github.com/gnnplan/gnnplan/tpc"
	"github.com/gnnplan/gnnplan/trainer"
	"github.com/gnnplan/gnnplan/trainer/dataset"
	"github.com/gnnplan/gnnplan/trainer/sample"
	"github.com/gnnplan/gnnplan/trainer/store"
)

// ComputeShapes are the shapes MeasureCompute times the step's kernel
// classes at; a zero field takes its default: a GraphSAGE layer of hidden
// 256 on 128-d features aggregating first, rows of RowBytes gathered from
// 1 GiB, and an aggregation over 10 neighbours of 8192 destinations among
// 96k rows of 1 KiB.
type ComputeShapes struct {
	// Layer is a layer's product: rows, inputs, outputs.
	Layer [3]int
	// RowBytes is a gathered row's size (default 4); TableBytes the table
	// it is gathered from; GatherRows how many rows a gather takes.
	RowBytes   int
	TableBytes int64
	GatherRows int
	// Aggregation is the mean aggregation's row width, source rows,
	// destinations and fanout.
	Aggregation [4]int
	// Dataset is the graph the sampler's rate is measured on ("": a
	// generated power-law graph).
	Dataset string
}

// WorkloadShapes are w's input layer's shapes: its products (GraphSAGE's
// stack of a row and its mean), its input rows from a table the size of
// its features, its aggregation.
func WorkloadShapes(w tpc.Workload, blocks []tpc.BlockShape, rows float64) (ComputeShapes, error) {
	in := w.FeatureDim
	if w.Model == tpc.ModelGraphSAGE {
		in *= 2
	}
	outer := blocks[len(blocks)-1]
	work, err := w.StepWork(blocks, rows)
	if err != nil {
		return ComputeShapes{}, err
	}
	rowBytes := int(w.FeatureRowBytes())
	cols, table, fanout := w.OuterAggregation(blocks, rows)
	return ComputeShapes{Layer: [3]int{max(1024, int(outer.Dst)), in, w.Hidden * max(w.Heads, 1)},
		RowBytes: rowBytes, TableBytes: int64(rowBytes) * w.Vertices, GatherRows: max(1024, int(work.RowGatherRows)),
		Aggregation: [4]int{cols, int(table), max(1024, int(outer.Dst)), fanout}}, nil
}

// MeasureCompute measures the CPU's GEMM rate at a training shape (the
// hidden layers of GraphSAGE with hidden 256), the step's kernel classes
// at s's shapes, and the sampler's rate per core with the papers'
// fanouts, on s.Dataset's graph or a generated one.
func MeasureCompute(ctx context.Context, s ComputeShapes, progress io.Writer) (*store.ComputeProfile, error) {
	be, err := kernels.NewCPU(kernels.CPUOptions{})
	if err != nil {
		return nil, err
	}
	c := &store.ComputeProfile{Cores: be.Threads(), Backend: be.Name(), GEMMShape: [3]int{8192, 256, 256}}
	fmt.Fprintf(progress, "profile: GEMM %dx%dx%d on %d threads ...\n", c.GEMMShape[0], c.GEMMShape[1], c.GEMMShape[2], c.Cores)
	c.GEMMGFLOPS = kernels.MeasureGemm(be, c.GEMMShape[0], c.GEMMShape[1], c.GEMMShape[2], time.Second)
	if err := measureKernels(ctx, s, be, c, progress); err != nil {
		return nil, err
	}
	if err := measureSampler(ctx, s.Dataset, c, progress); err != nil {
		return nil, err
	}
	return c, nil
}

// measureKernels measures the step's kernel classes on be into c, cold
// (as a step finds its operands), at s's shapes. A table is at most a
// quarter of the memory available.
func measureKernels(ctx context.Context, s ComputeShapes, be kernels.Backend, c *store.ComputeProfile, progress io.Writer) error {
	const d = 500 * time.Millisecond
	room := int64(1) << 62
	if avail, ok := trainer.MemAvailable(); ok {
		room = int64(avail / 4)
	}
	c.LayerShape = s.Layer
	if c.LayerShape == [3]int{} {
		c.LayerShape = [3]int{8192, 256, 256}
	}
	c.RowGatherBytes = max(s.RowBytes, 4)
	cols := max(1, c.RowGatherBytes/4)
	table := s.TableBytes
	if table <= 0 {
		table = 1 << 30
	}
	tableRows := max(65536, int(min(table, room)/int64(4*cols)))
	c.RowGatherTableGiB = float64(tableRows) * float64(4*cols) / (1 << 30)
	gather := s.GatherRows
	if gather <= 0 {
		gather = 65536
	}
	agg := s.Aggregation
	if agg == [4]int{} {
		agg = [4]int{256, 96_000, 8192, 10}
	}
	agg[1] = max(agg[2], min(agg[1], int(room/int64(8*agg[0])))) // the rows and their gradient
	c.AggregationCols = agg[0]
	steps := []struct {
		what string
		run  func()
	}{
		{fmt.Sprintf("a layer's products at %dx%dx%d", c.LayerShape[0], c.LayerShape[1], c.LayerShape[2]), func() {
			c.LayerGEMMGFLOPS = kernels.MeasureLayerGemm(be, c.LayerShape[0], c.LayerShape[1], c.LayerShape[2], d)
		}},
		{fmt.Sprintf("gathering %d rows of %d bytes from %.1f GiB", gather, 4*cols, c.RowGatherTableGiB), func() {
			c.RowGatherGBps = kernels.MeasureRowGather(be, cols, tableRows, gather, d)
		}},
		{fmt.Sprintf("aggregating %d rows of %d bytes among %d", agg[2]*agg[3], 4*agg[0], agg[1]), func() {
			c.AggregationGBps = kernels.MeasureAggregation(be, agg[0], agg[1], agg[2], agg[3], d)
		}},
		{"in-order passes", func() { c.StreamGBps = kernels.MeasureStream(be, 65536, 256, d) }},
	}
	for _, st := range steps {
		if err := ctx.Err(); err != nil {
			return err
		}
		fmt.Fprintf(progress, "profile: %s ...\n", st.what)
		st.run()
	}
	return nil
}

// measureSampler times the neighbour sampler on one core, on dir's graph
// or ("") a generated power-law one.
func measureSampler(ctx context.Context, dir string, c *store.ComputeProfile, progress io.Writer) error {
	if dir == "" {
		tmp, err := os.MkdirTemp("", "gnnplan-profile-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp + "/g"
		so := dataset.DefaultSynthOptions()
		so.Nodes, so.Edges, so.FeatureDim, so.TrainFraction = 500_000, 5_000_000, 1, 0.1
		fmt.Fprintf(progress, "profile: generating a power-law graph of %d vertices for the sampler ...\n", so.Nodes)
		if _, err := dataset.Synth(ctx, so, dir, io.Discard); err != nil {
			return err
		}
		c.SamplerGraph = fmt.Sprintf("a generated power-law graph of %d vertices, %d edges drawn", so.Nodes, so.Edges)
	}
	g, err := dataset.LoadGraph(dir)
	if err != nil {
		return err
	}
	defer g.Close()
	if c.SamplerGraph == "" {
		c.SamplerGraph = fmt.Sprintf("%s (%d vertices)", dir, g.Meta.NumNodes)
	}
	if len(g.Train) == 0 {
		return inputerr.Errorf("", "", "--dataset %s: no training split to draw seeds from", dir)
	}
	fmt.Fprintf(progress, "profile: sampling on one core ...\n")
	r, err := sample.MeasureRate(ctx, g, sample.SamplerOptions{Fanouts: []int{25, 10}, BatchSize: 1024, Seed: 1, Shuffle: true}, time.Second)
	if err != nil {
		return err
	}
	c.SamplerEdgesPerSPerCore = r.EdgesPerSecond
	return nil
}
