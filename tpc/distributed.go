package tpc

import (
	"fmt"
	"math"
)

// Distributed is the alternative people compare against: distributed
// in-memory training (DistDGL-style) on enough one-GPU machines that their
// memory holds the dataset with the framework's overhead.
type Distributed struct {
	Machines      int     `json:"machines"`
	MemoryGiB     float64 `json:"memory_GiB_per_machine"`
	Overhead      float64 `json:"memory_overhead"`
	GPU           string  `json:"gpu"`
	CostUSD       float64 `json:"cost_USD"`
	SamplesPerSec float64 `json:"samples_per_s"`
	TPC           float64 `json:"tpc"`
	NetworkGBps   float64 `json:"network_GBps"`
	Bound         string  `json:"bound"`      // "network" or "compute"
	CostPerSample float64 `json:"cost_ratio"` // this plan's TPC over the cluster's: how many times cheaper per unit of throughput
	Assumption    string  `json:"assumption"`
}

// Cluster figures from the papers: Hyperion's cluster C nodes have 256 GB
// and one A100 80GB over 100 Gb/s, where DistDGL peaked at 20 Gb/s of
// network traffic; DistDGL needs ~5x the dataset in memory (Moment,
// Hyperion).
const (
	clusterMemoryGiB   = 256
	clusterOverhead    = 5
	clusterNetworkGBps = 20.0 / 8 // 20 Gb/s achieved
	clusterGPUKey      = "a100-80gb-pcie"
)

// distributedAlternative prices and predicts the in-memory cluster for the
// request's workload and compares it with plan best.
func distributedAlternative(req Request, best *Option) Distributed {
	w := req.Workload
	a := req.Assumptions
	feat, topo := w.DatasetBytes()
	need := clusterOverhead * float64(feat+topo)
	n := int(math.Max(1, math.Ceil(need/(clusterMemoryGiB*(1<<30)))))
	gpu, err := req.Catalog.GPU(clusterGPUKey)
	if err != nil {
		gpu = best.GPU
	}
	host := req.Catalog.Host
	d := Distributed{Machines: n, MemoryGiB: clusterMemoryGiB, Overhead: clusterOverhead, GPU: gpu.Key,
		CostUSD: float64(n) * host.TCOUSD(gpu.PriceUSD, 1, 0, 0), NetworkGBps: clusterNetworkGBps}
	b := w.PerBatch()
	// A batch's features are spread over n machines: (n-1)/n of them come
	// over the network; training runs at the GPU's rate. Per machine the
	// slower of the two sets the pace.
	remote := b.FeatureBytes * float64(n-1) / float64(n)
	netSecs := remote / (clusterNetworkGBps * 1e9)
	// Training: the GPU's per-batch costs (sampling, FLOPs, fixed) plus
	// the gradient all-reduce over the network.
	trainSecs := trainCosts(w, Hardware{GPU: gpu, GPUs: 1}, a).Total()
	if n > 1 {
		trainSecs += 2 * float64(n-1) / float64(n) * float64(4*w.Params()) / (clusterNetworkGBps * 1e9)
	}
	perBatch := math.Max(netSecs, trainSecs)
	d.Bound = "network"
	if trainSecs >= netSecs {
		d.Bound = "compute"
	}
	seedsPerBatch := math.Min(float64(w.BatchSize), float64(w.trainVertices()))
	d.SamplesPerSec = float64(n) * seedsPerBatch / perBatch
	d.TPC = d.SamplesPerSec / d.CostUSD
	if d.TPC > 0 {
		d.CostPerSample = best.TPC / d.TPC
	}
	d.Assumption = fmt.Sprintf("%d x (host + 1 %s + electricity) with %d GiB each holding %gx the dataset; remote features over %.1f GB/s (DistDGL's measured peak); %s-bound",
		n, gpu.Key, clusterMemoryGiB, float64(clusterOverhead), clusterNetworkGBps, d.Bound)
	return d
}
