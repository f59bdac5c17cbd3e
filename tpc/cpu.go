package tpc

import "fmt"

// CPURates are a CPU machine's measured rates (gnnplan profile, or a
// probe of the trainer's step): what `recommend --this-machine` and
// train's prediction price a step's work (StepWork) with.
type CPURates struct {
	Cores int `json:"cores"`
	// GEMMGFLOPS is the dense layers' rate on all cores: the mix of a
	// layer's forward, weight-gradient and input-gradient products.
	GEMMGFLOPS float64 `json:"gemm_GFLOPS"`
	// SamplerEdgesPerSPerCore is neighbour sampling on one core.
	SamplerEdgesPerSPerCore float64 `json:"sampler_edges_per_s_per_core"`
	// MemcpyGBps is memory copy bandwidth: what the memory-bound classes
	// below run at when they were not measured (a profile from before
	// they were).
	MemcpyGBps float64 `json:"memcpy_GBps"`
	// AggregationGBps is the aggregations' source-row reads over a
	// block's edges, RowGatherGBps rows gathered by index from a matrix
	// the size of the features, StreamGBps the in-order passes' bytes
	// read and written; all on every core.
	AggregationGBps float64 `json:"aggregation_GBps,omitempty"`
	RowGatherGBps   float64 `json:"row_gather_GBps,omitempty"`
	StreamGBps      float64 `json:"stream_GBps,omitempty"`
	// OptimizerGBps is the optimizer's parameter bytes (Adam reads and
	// writes seven arrays) per second; StreamGBps where not measured.
	OptimizerGBps float64 `json:"optimizer_GBps,omitempty"`
	// StepOverheadS is a step's time beyond its kernels (the loss, the
	// step's own bookkeeping, waiting for a batch the pipeline had not
	// ready): measured by a probe of real steps, 0 from a profile.
	StepOverheadS float64 `json:"step_overhead_s,omitempty"`
	// Source says where the rates come from.
	Source string `json:"source,omitempty"`
	// DiskRowsPerS is random feature-row reads per second from all the
	// disks together, at the row size and a deep queue; DiskCPURowS the
	// CPU time one such read takes (submission, completion, the row's
	// checksum), which the reader takes from the step's cores.
	DiskRowsPerS float64 `json:"disk_rows_per_s"`
	DiskCPURowS  float64 `json:"disk_cpu_row_s,omitempty"`
	// OutOfCore is the pipeline out of core, measured through the
	// dataset's feature store; nil where none was (the step's in-memory
	// rates then price the store's copies).
	OutOfCore *OutOfCoreRates `json:"out_of_core,omitempty"`
}

// OutOfCoreRates are the trainer's pipeline out of core, from a probe
// through a feature store with every row served from memory (the gather
// stage copying each batch's rows beside the step, as train's own
// prediction probes it): what the step and the copies cost when they
// share the cores.
type OutOfCoreRates struct {
	// ComputeS is a batch's wall time in that probe: the step, the
	// sampling and the gather stage's copies overlapped.
	ComputeS float64 `json:"compute_s"`
	// CopyRowS is the gather stage's time per row copied from memory.
	CopyRowS float64 `json:"copy_row_s"`
	// InputRows is the probe's distinct rows per batch.
	InputRows float64 `json:"input_rows"`
	// BLASThreads is the products' thread count training out of core
	// uses (train picks it as the probe did); 0 when not chosen.
	BLASThreads int    `json:"blas_threads,omitempty"`
	Source      string `json:"source,omitempty"`
}

// Rate is gbps, one of r's memory-bound rates, where it was measured,
// else the copy bandwidth.
func (r CPURates) Rate(gbps float64) float64 {
	if gbps > 0 {
		return gbps
	}
	return r.MemcpyGBps
}

// BlockShape is one sampled block's average size: destinations, sources
// (destinations included) and edges.
type BlockShape struct {
	Dst   float64 `json:"dst"`
	Src   float64 `json:"src"`
	Edges float64 `json:"edges"`
}

// CPUBatch is one batch's predicted seconds on a CPU worker, by the
// kernel classes the trainer times (its epochs' "kernels").
type CPUBatch struct {
	SampleS float64 `json:"sample_s"` // sampling a batch on every core, beside the step
	// ComputeS is the products' time (ProductsS), MemoryS the
	// memory-bound kernels' in the step: aggregation, in-order passes,
	// the optimizer, and the input rows' gather when it runs in the step.
	ComputeS     float64 `json:"compute_s"`
	MemoryS      float64 `json:"memory_s"`
	ProductsS    float64 `json:"products_s"`
	AggregationS float64 `json:"aggregation_s"`
	RowGatherS   float64 `json:"row_gather_s"`
	ElementwiseS float64 `json:"elementwise_s"`
	OptimizerS   float64 `json:"optimizer_s"`
	OverheadS    float64 `json:"overhead_s"` // the step's time beyond its kernels
	DiskS        float64 `json:"disk_s"`     // rows from disk
	CopyS        float64 `json:"copy_s"`     // rows copied from a store's caches
	// StolenS is the disk reads' CPU time, which the step's cores lose.
	StolenS float64 `json:"stolen_s,omitempty"`
	BatchS  float64 `json:"batch_s"`
	Bound   string  `json:"bound"` // "compute" or "disk"
	// Work is the step's kernel work the times price.
	Work StepWork `json:"work"`
}

// PredictCPU predicts a batch of w on CPU workers with rates r, when hit
// of the batch's rows distinct input rows come from memory. blocks are
// the batch's sampled blocks, the seeds' first (measured by pre-sampling
// the dataset, or from Workload.PerBatch's model).
//
// Out of core (hit < 1) the disks' reads take their CPU time from the
// step's cores (DiskCPURowS), and where r.OutOfCore was measured its
// batch through the store stands for the step and its copy rate for the
// gather stage's copies.
//
// The trainer is a pipeline: sampling runs ahead of the step on its own
// workers, one a core, and out of core (hit < 1) a store's gather stage reads the
// rows from disk and copies the cached ones ahead of it too, so a batch
// takes the longest of the three. With every row in memory (hit 1) the
// features are trained in memory: the step gathers its input rows
// itself. The step is its kernels, each class its work (StepWork) at its
// rate, and its overhead.
func PredictCPU(w Workload, blocks []BlockShape, rows float64, r CPURates, hit float64) (CPUBatch, error) {
	switch {
	case !(hit >= 0 && hit <= 1):
		return CPUBatch{}, fmt.Errorf("predict: hit share %g (want 0 to 1)", hit)
	case r.Cores < 1 || !(r.GEMMGFLOPS > 0) || !(r.SamplerEdgesPerSPerCore > 0) || !(r.MemcpyGBps > 0):
		return CPUBatch{}, fmt.Errorf("predict: the CPU's rates are incomplete (%+v): profile the machine with gnnplan profile", r)
	case hit < 1 && !(r.DiskRowsPerS > 0):
		return CPUBatch{}, fmt.Errorf("predict: %.1f%% of the rows come from disk and no disk was profiled (gnnplan profile --ssd-dir DIR)", 100*(1-hit))
	}
	inStep := 0.0
	if hit == 1 {
		inStep = rows
	}
	work, err := w.StepWork(blocks, inStep)
	if err != nil {
		return CPUBatch{}, err
	}
	var edges float64
	for _, b := range blocks {
		edges += b.Edges
	}
	opt := r.OptimizerGBps
	if !(opt > 0) {
		opt = r.Rate(r.StreamGBps)
	}
	c := CPUBatch{
		SampleS:      edges / (r.SamplerEdgesPerSPerCore * float64(r.Cores)),
		ProductsS:    work.ProductGFLOP / r.GEMMGFLOPS,
		AggregationS: work.AggregationGB / r.Rate(r.AggregationGBps),
		RowGatherS:   work.RowGatherGB / r.Rate(r.RowGatherGBps),
		ElementwiseS: work.ElementwiseGB / r.Rate(r.StreamGBps),
		OptimizerS:   work.OptimizerGB / opt,
		OverheadS:    r.StepOverheadS,
		Work:         work,
	}
	c.ComputeS = c.ProductsS
	c.MemoryS = c.AggregationS + c.RowGatherS + c.ElementwiseS + c.OptimizerS
	step := c.ComputeS + c.MemoryS + c.OverheadS
	if hit < 1 {
		// The pipeline's batch as train's prediction prices it
		// (BatchCosts.batch): the step, or the probe's batch through the
		// store where one was timed, beside the store's copies and reads.
		bc := BatchCosts{ComputeS: step, InputRows: rows, DiskRowsPerS: r.DiskRowsPerS, DiskCPURowS: r.DiskCPURowS,
			CopyRowS: float64(w.FeatureRowBytes()) / 1e9 / r.Rate(r.RowGatherGBps)}
		if o := r.OutOfCore; o != nil && o.ComputeS > 0 {
			bc.ComputeS, bc.CopyRowS = o.ComputeS, o.CopyRowS
			if o.InputRows > 0 {
				bc.ComputeS *= rows / o.InputRows
			}
		}
		pb := bc.batch(hit)
		c.CopyS, c.DiskS, c.StolenS, step = pb.copyS, pb.diskS, pb.stolenS, pb.computeS
	}
	c.BatchS = max(step, c.SampleS, c.DiskS+c.CopyS)
	switch c.BatchS {
	case step:
		c.Bound = "compute"
	case c.SampleS:
		c.Bound = "sampling"
	default:
		c.Bound = "disk"
	}
	return c, nil
}

// StepRates are the rates a probe of real steps measured, each class's
// work over its time (kernels.Tally's counts): the step's kernels as they
// run in training, interleaved and sharing the cores with the pipeline,
// which a kernel timed alone does not see. overheadS is the step's time
// per batch beyond its kernels. Classes that did no work keep r's rates.
func StepRates(r CPURates, work StepWork, productsS, aggregationS, rowGatherS, elementwiseS, optimizerS, overheadS float64, source string) CPURates {
	set := func(dst *float64, amount, secs float64) {
		if amount > 0 && secs > 0 {
			*dst = amount / secs
		}
	}
	set(&r.GEMMGFLOPS, work.ProductGFLOP, productsS)
	set(&r.AggregationGBps, work.AggregationGB, aggregationS)
	set(&r.RowGatherGBps, work.RowGatherGB, rowGatherS)
	set(&r.StreamGBps, work.ElementwiseGB, elementwiseS)
	set(&r.OptimizerGBps, work.OptimizerGB, optimizerS)
	r.StepOverheadS = max(0, overheadS)
	r.Source = source
	return r
}
