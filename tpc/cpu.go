package tpc

import (
	"fmt"
	"math"
)

// CPURates are a CPU machine's measured rates (gnnplan profile): what
// `recommend --this-machine` plans with.
type CPURates struct {
	Cores int `json:"cores"`
	// GEMMGFLOPS is the dense layers' rate on all cores.
	GEMMGFLOPS float64 `json:"gemm_GFLOPS"`
	// SamplerEdgesPerSPerCore is neighbour sampling on one core.
	SamplerEdgesPerSPerCore float64 `json:"sampler_edges_per_s_per_core"`
	// MemcpyGBps is memory copy bandwidth: the aggregations' scattered
	// row reads and the gather's copies run at about this rate.
	MemcpyGBps float64 `json:"memcpy_GBps"`
	// DiskRowsPerS is random feature-row reads per second from all the
	// disks together, at the row size and a deep queue.
	DiskRowsPerS float64 `json:"disk_rows_per_s"`
}

// BlockShape is one sampled block's average size: destinations, sources
// (destinations included) and edges.
type BlockShape struct {
	Dst   float64 `json:"dst"`
	Src   float64 `json:"src"`
	Edges float64 `json:"edges"`
}

// CPUBatch is one batch's predicted seconds on a CPU worker.
type CPUBatch struct {
	SampleS  float64 `json:"sample_s"`  // sampling on every core
	ComputeS float64 `json:"compute_s"` // the model's FLOPs at the GEMM rate
	MemoryS  float64 `json:"memory_s"`  // the aggregations' row reads and scatters
	DiskS    float64 `json:"disk_s"`    // rows from disk
	CopyS    float64 `json:"copy_s"`    // rows copied from the cache
	BatchS   float64 `json:"batch_s"`
	Bound    string  `json:"bound"` // "compute" or "disk"
}

// PredictCPU predicts a batch of w on CPU workers with rates r, when hit
// of the batch's rows distinct input rows come from memory. blocks are
// the batch's sampled blocks, the seeds' first (measured by pre-sampling
// the dataset, or from Workload.PerBatch's model).
//
// Sampling, the dense layers and the aggregations share the cores: their
// times add up. The gather stage's reads and copies overlap with them (a
// pipeline, GatherAhead batches deep), so a batch takes the longer of the
// two sides. Aggregation reads each sampled edge's source row, forward,
// and scatters it back in the backward pass of every layer but the
// first, at memory copy bandwidth.
func PredictCPU(w Workload, blocks []BlockShape, rows float64, r CPURates, hit float64) (CPUBatch, error) {
	switch {
	case !(hit >= 0 && hit <= 1):
		return CPUBatch{}, fmt.Errorf("predict: hit share %g (want 0 to 1)", hit)
	case r.Cores < 1 || !(r.GEMMGFLOPS > 0) || !(r.SamplerEdgesPerSPerCore > 0) || !(r.MemcpyGBps > 0):
		return CPUBatch{}, fmt.Errorf("predict: the CPU's rates are incomplete (%+v): profile the machine with gnnplan profile", r)
	case hit < 1 && !(r.DiskRowsPerS > 0):
		return CPUBatch{}, fmt.Errorf("predict: %.1f%% of the rows come from disk and no disk was profiled (gnnplan profile --ssd-dir DIR)", 100*(1-hit))
	}
	bs := make([]block, len(blocks))
	var edges, memBytes float64
	in := float64(w.FeatureDim)
	for i, b := range blocks {
		bs[i] = block{dst: b.Dst, src: b.Src, edges: b.Edges}
		edges += b.Edges
	}
	// Layer l reads the block len-1-l: the input layer the outermost.
	for l := range blocks {
		b := blocks[len(blocks)-1-l]
		passes := 2.0
		if l == 0 {
			passes = 1 // the input layer has no gradient to scatter
		}
		memBytes += passes * b.Edges * in * 4
		in = float64(w.Hidden * max(w.Heads, 1))
	}
	c := CPUBatch{
		SampleS:  edges / (r.SamplerEdgesPerSPerCore * float64(r.Cores)),
		ComputeS: 3 * w.forwardFLOPs(bs) / (r.GEMMGFLOPS * 1e9),
		MemoryS:  memBytes / (r.MemcpyGBps * 1e9),
		CopyS:    rows * hit * float64(w.FeatureRowBytes()) / (r.MemcpyGBps * 1e9),
	}
	if hit < 1 {
		c.DiskS = rows * (1 - hit) / r.DiskRowsPerS
	}
	cpu := c.SampleS + c.ComputeS + c.MemoryS
	c.BatchS = math.Max(cpu, c.DiskS+c.CopyS)
	c.Bound = "compute"
	if c.DiskS+c.CopyS > cpu {
		c.Bound = "disk"
	}
	return c, nil
}
