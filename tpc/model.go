package tpc

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/gnnplan/gnnplan/maxflow/placement"
	"github.com/gnnplan/gnnplan/profiles"
	"github.com/gnnplan/gnnplan/topology"
)

// Assumptions are the figures the model needs that neither the machine,
// the catalog nor the workload gives. Every one is printed with a plan.
type Assumptions struct {
	// GPUReserveGiB, when above 0, is what each GPU keeps from its caches,
	// fixed: a measured setup's (validate) or a case study's. 0, the
	// default, computes it from the workload (Workload.GPUWorkingSet).
	GPUReserveGiB float64 `json:"gpu_reserve_GiB,omitempty"`
	// GPUContextGiB is what a GPU loses before training allocates
	// anything: the CUDA context, cuBLAS's workspace and the allocator's
	// slack (an estimate: about 0.5 GiB of context on an H100).
	GPUContextGiB float64 `json:"gpu_context_GiB"`
	// GPUTopologyShare is the share of each GPU's cache room that caches
	// the hottest part of the topology (Hyperion's unified cache), the
	// rest caching feature rows: an input where a setup gives it,
	// decided by recommend for each option (Decisions).
	GPUTopologyShare float64 `json:"gpu_topology_share"`
	// TopologyOnSSDShare is the share of the topology's bytes (the
	// coldest) read from the SSDs rather than held in host memory: 0
	// where host memory holds it whole. An input where a setup gives it,
	// decided by recommend (Decisions): at least what host memory cannot
	// hold.
	TopologyOnSSDShare float64 `json:"topology_on_ssd_share"`
	// CPUCacheFraction is the share of vertices whose features a setup
	// caches in host memory (Moment caches 1%), capped by host memory:
	// an input where a measurement's setup gives it (PredictSetup,
	// validate). Recommend decides it for each option instead (Decisions).
	CPUCacheFraction float64 `json:"cpu_cache_fraction"`
	// HostReserveShare is the share of host memory kept from the feature
	// cache for the operating system, the samplers' working set and the
	// pinned staging buffers (recommend --this-machine keeps a tenth).
	HostReserveShare float64 `json:"host_reserve_share"`
	// HotnessCurve, when set, is the measured access skew (place's
	// hotness.npy): entry i is the share of accesses the hottest i/(n-1)
	// of the vertices receive, n its length. It replaces SkewExponent.
	HotnessCurve []float64 `json:"hotness_curve,omitempty"`
	// SkewExponent a models access skew when no hotness is measured: the
	// hottest fraction x of vertices receives x^a of the accesses. 0.26
	// gives the top 1% 30% of the accesses, mid-range of DiskGNN's table
	// (14-56%).
	SkewExponent float64 `json:"skew_exponent"`
	// ComputeEfficiency is the share of the GPU's FP32 datasheet peak
	// GNN training reaches (an estimate: dense layers dominate the FLOPs,
	// sparse aggregation runs far below peak).
	ComputeEfficiency float64 `json:"compute_efficiency"`
	// MemoryEfficiency is the share of the GPU memory's datasheet rate
	// the step's memory-bound kernels reach (aggregating rows over a
	// block's edges, gathering input rows, element-wise passes, the
	// optimizer): an estimate, as ComputeEfficiency.
	MemoryEfficiency float64 `json:"memory_efficiency"`
	// HostMemGBps is one socket's DRAM read rate.
	HostMemGBps float64 `json:"host_mem_GBps"`
	// SSDBlockBytes is the SSD read unit the random-read IOPS are quoted
	// at (4 KiB); a feature row is read in whole blocks.
	SSDBlockBytes int `json:"ssd_block_bytes"`
	// GPUSampleEdgesPerS is a GPU's neighbour-sampling rate in sampled
	// edges per second (an estimate: GPU samplers over UVA, as DGL's and
	// Moment's, draw a few hundred million edges per second).
	GPUSampleEdgesPerS float64 `json:"gpu_sample_edges_per_s"`
	// BatchOverheadS is each batch's fixed cost on a GPU: kernel launches
	// (about a hundred per forward and backward, a few microseconds each),
	// host synchronisation and the framework's per-step work.
	BatchOverheadS float64 `json:"batch_overhead_s"`
	// MeasuredGPUs replaces catalog figures with a GPU's measured ones
	// (gnnplan profile on a machine with it), by catalog key.
	MeasuredGPUs map[string]MeasuredGPU `json:"measured_gpus,omitempty"`
}

// MeasuredGPU is what `gnnplan profile` measured on a GPU: GEMM at a
// training shape stands for its compute rate (instead of the FP32 peak
// times ComputeEfficiency) and host-to-device copies from pinned memory
// for its PCIe link (the gradient all-reduce's rate).
type MeasuredGPU struct {
	Name       string  `json:"name"` // as the driver names it
	GEMMTFLOPS float64 `json:"gemm_TFLOPS"`
	H2DGBps    float64 `json:"h2d_GBps"`
}

// DefaultAssumptions returns the assumptions the papers' setups imply.
func DefaultAssumptions() Assumptions {
	return Assumptions{GPUContextGiB: 1, CPUCacheFraction: 0.01, HostReserveShare: 0.1, SkewExponent: 0.26, ComputeEfficiency: 0.9, MemoryEfficiency: 0.25,
		HostMemGBps: 100, SSDBlockBytes: 4096, GPUSampleEdgesPerS: 300e6, BatchOverheadS: 0.010}
}

// hitShare is the share of accesses the hottest fraction x of vertices
// gets: the measured curve where there is one (interpolated linearly),
// else the power law x^SkewExponent.
func (a Assumptions) hitShare(x float64) float64 {
	if x <= 0 {
		return 0
	}
	if x >= 1 {
		return 1
	}
	if c := a.HotnessCurve; len(c) >= 2 {
		f := x * float64(len(c)-1)
		i := min(int(f), len(c)-2)
		return c[i] + (f-float64(i))*(c[i+1]-c[i])
	}
	return math.Pow(x, a.SkewExponent)
}

// HotnessCurvePoints is how many points HotnessCurve keeps.
const HotnessCurvePoints = 1025

// HotnessCurve turns per-vertex access counts (place's hotness.npy) into
// Assumptions.HotnessCurve: the share of accesses the hottest i/(points-1)
// of the vertices receive. Counts that are all zero give nil (no skew
// measured).
func HotnessCurve(counts []uint32, points int) []float64 {
	if len(counts) == 0 || points < 2 {
		return nil
	}
	sorted := slices.Clone(counts)
	slices.SortFunc(sorted, func(a, b uint32) int { return cmp.Compare(b, a) })
	total := 0.0
	for _, c := range sorted {
		total += float64(c)
	}
	if total == 0 {
		return nil
	}
	curve := make([]float64, points)
	cum, k := 0.0, 0
	n := float64(len(sorted))
	for i := range curve {
		// The hottest round(i/(points-1) x n) vertices' share.
		upto := int(math.Round(float64(i) / float64(points-1) * n))
		for ; k < upto; k++ {
			cum += float64(sorted[k])
		}
		curve[i] = cum / total
	}
	return curve
}

// Hardware is one thing to buy: GPUs and SSDs of one model each, and
// memory modules for the host's free DIMM slots.
type Hardware struct {
	GPU  profiles.GPUModel `json:"gpu"`
	GPUs int               `json:"gpus"`
	SSD  profiles.SSDModel `json:"ssd"`
	SSDs int               `json:"ssds"`
	// DIMMs modules of DIMM are added to the host (0: none).
	DIMM  profiles.DIMMModel `json:"dimm"`
	DIMMs int                `json:"dimms"`
}

// TCOUSD is the 5-year TCO of one machine with this hardware (Hyperion
// eq. 5, with the memory bought as part of the host).
func (h Hardware) TCOUSD(host profiles.HostCost) float64 {
	return host.TCOUSD(h.GPU.PriceUSD, h.GPUs, h.SSD.PriceUSD, h.SSDs) + float64(h.DIMMs)*h.DIMM.PriceUSD
}

// AddedMemoryGiB is the host memory the hardware's DIMMs add.
func (h Hardware) AddedMemoryGiB() float64 { return float64(h.DIMMs) * h.DIMM.CapacityGiB }

// Shares says where an epoch's bytes come from.
type Shares struct {
	EpochGB       float64 `json:"epoch_GB"`        // all bytes the GPUs read per epoch
	GPUCacheShare float64 `json:"gpu_cache_share"` // served from GPU memory
	HostShare     float64 `json:"host_share"`      // topology plus CPU-cached features
	SSDShare      float64 `json:"ssd_share"`
	GPUCacheRows  float64 `json:"gpu_cache_rows"` // per GPU
	CPUCacheRows  float64 `json:"cpu_cache_rows"`
	// GPU is how each GPU's memory is used.
	GPU GPULayout `json:"gpu"`
	// GPUTopologyGB and HostTopologyGB are the topology's bytes an epoch
	// the GPUs' caches and host memory serve; SSDTopologyGB the blocks
	// the SSDs read for the topology host memory does not hold.
	GPUTopologyGB  float64 `json:"gpu_topology_GB"`
	HostTopologyGB float64 `json:"host_topology_GB"`
	SSDTopologyGB  float64 `json:"ssd_topology_GB"`
}

// GPULayout is one GPU's memory in a plan: what training holds, and how
// the rest (the cache room) is split between feature rows and the
// hottest part of the topology.
type GPULayout struct {
	WorkingSet      WorkingSet `json:"working_set"`
	CacheRoomGiB    float64    `json:"cache_room_GiB"`
	FeatureCacheGiB float64    `json:"feature_cache_GiB"`
	// TopologyCacheGiB caches the topology's hottest part; TopologyHit is
	// the share of the epoch's topology reads it serves.
	TopologyCacheGiB float64 `json:"topology_cache_GiB"`
	TopologyHit      float64 `json:"topology_hit"`
}

// gpuLayout splits one GPU's memory for w on hw: the working set (or the
// fixed GPUReserveGiB), then the room left, GPUTopologyShare of it to the
// topology (at most all of it), the rest to feature rows. b is
// w.PerBatch(), passed in because callers have it.
func gpuLayout(w Workload, b BatchEstimate, hw Hardware, a Assumptions) GPULayout {
	if hw.GPUs == 0 {
		return GPULayout{}
	}
	var l GPULayout
	reserve := a.GPUReserveGiB
	if reserve <= 0 {
		ws, err := w.GPUWorkingSet(b.Blocks, b.UniqueVertices, true, a)
		if err != nil {
			ws = WorkingSet{TotalGiB: math.Inf(1)} // Validate refuses such a workload
		}
		l.WorkingSet, reserve = ws, ws.TotalGiB
	}
	l.CacheRoomGiB = math.Max(0, hw.GPU.MemoryGiB-reserve)
	_, topo := w.DatasetBytes()
	topoGiB := float64(topo) / (1 << 30)
	l.TopologyCacheGiB = math.Min(topoGiB, math.Max(0, math.Min(1, a.GPUTopologyShare))*l.CacheRoomGiB)
	l.FeatureCacheGiB = l.CacheRoomGiB - l.TopologyCacheGiB
	if topoGiB > 0 {
		l.TopologyHit = a.topologyHit(w, l.TopologyCacheGiB/topoGiB)
	}
	return l
}

// topologyHit is the share of an epoch's topology reads that the hottest
// fraction f of the topology's bytes serves. Sampling reads a frontier
// vertex's index pair and a fanout of its neighbours whatever its degree,
// and under heavy-tailed degrees a vertex is reached about as often as
// its degree, as its list's size grows: reads per cached byte are then
// flat, and the share is f. With degrees near the average every list is
// the same size and the share follows the vertices' access skew.
func (a Assumptions) topologyHit(w Workload, f float64) float64 {
	if w.Degrees == DegreesUniform {
		return a.hitShare(f)
	}
	return math.Max(0, math.Min(1, f))
}

// topologyAmplification is how many bytes an SSD moves per byte of
// topology sampling reads: each frontier vertex's index pair and its
// sampled neighbours' slice of the index array are two random reads of
// a block each, for the few hundred bytes sampling uses.
func topologyAmplification(b BatchEstimate, a Assumptions) float64 {
	blk := float64(a.SSDBlockBytes)
	if blk <= 0 {
		blk = 4096
	}
	frontier := 0.0
	for k := 0; k+1 < len(b.Hops); k++ {
		frontier += b.Hops[k]
	}
	if b.TopologyBytes <= 0 {
		return 1
	}
	return math.Max(1, 2*blk*frontier/b.TopologyBytes)
}

// shares splits an epoch's bytes over the tiers: the GPU caches hold the
// hottest rows and the hottest topology (gpuLayout), host memory the
// topology but its coldest TopologyOnSSDShare, then the next
// CPUCacheFraction of rows, the SSDs the rest (Hyperion's hierarchy GPU >
// CPU > SSD). Topology read from the SSDs counts the whole blocks they
// move (topologyAmplification). Every GPU caches the same hottest rows
// (data parallel, no sharding).
func shares(w Workload, hw Hardware, hostMemGiB float64, a Assumptions) Shares {
	b := w.PerBatch()
	batches := float64(w.BatchesPerEpoch())
	row := float64(w.FeatureRowBytes())
	feat := b.FeatureBytes * batches
	topo := b.TopologyBytes * batches
	V := float64(w.Vertices)
	gl := gpuLayout(w, b, hw, a)
	gpuRows := math.Min(V, gl.FeatureCacheGiB*(1<<30)/row)
	_, topoBytes := w.DatasetBytes()
	onSSD := math.Max(0, math.Min(1, a.TopologyOnSSDShare))
	if hw.SSDs == 0 {
		onSSD = 0
	}
	// Host memory holds its share of the topology first; the feature
	// cache gets what is left, up to the configured share of vertices.
	cpuRows := math.Min(a.CPUCacheFraction*V, math.Max(0, hostMemGiB*(1<<30)-float64(topoBytes)*(1-onSSD))/row)
	cpuRows = math.Max(0, math.Min(cpuRows, V-gpuRows))
	gpuHit := a.hitShare(gpuRows / V)
	cpuHit := a.hitShare((gpuRows+cpuRows)/V) - gpuHit
	// The topology's reads: the GPUs' cache, host memory's share beyond
	// it, the SSDs' the rest, amplified to the blocks they move.
	gpuT := gl.TopologyHit
	hostT := math.Max(0, a.topologyHit(w, 1-onSSD)-gpuT)
	ssdT := math.Max(0, 1-gpuT-hostT)
	ssdTopo := ssdT * topo * topologyAmplification(b, a)
	total := feat + (gpuT+hostT)*topo + ssdTopo
	s := Shares{EpochGB: total / 1e9, GPUCacheRows: gpuRows, CPUCacheRows: cpuRows, GPU: gl,
		GPUTopologyGB: gpuT * topo / 1e9, HostTopologyGB: hostT * topo / 1e9, SSDTopologyGB: ssdTopo / 1e9}
	if total > 0 {
		s.GPUCacheShare = (gpuHit*feat + gpuT*topo) / total
		s.HostShare = (cpuHit*feat + hostT*topo) / total
		s.HostShare = math.Min(s.HostShare, 1-s.GPUCacheShare) // rounding
		s.SSDShare = math.Max(0, 1-s.GPUCacheShare-s.HostShare)
	}
	return s
}

// maxCPUCacheFraction is the largest share of the vertices whose features
// host memory can cache for hw: its memory less the topology and the
// reserve (HostReserveShare), and not the rows the GPUs already cache.
func maxCPUCacheFraction(w Workload, hw Hardware, hostGiB float64, a Assumptions) float64 {
	V := float64(w.Vertices)
	if V <= 0 {
		return 0
	}
	_, topo := w.DatasetBytes()
	onSSD := math.Max(0, math.Min(1, a.TopologyOnSSDShare))
	if hw.SSDs == 0 {
		onSSD = 0
	}
	room := hostGiB*(1<<30)*(1-a.HostReserveShare) - float64(topo)*(1-onSSD)
	gpuRows := math.Min(V, gpuLayout(w, w.PerBatch(), hw, a).FeatureCacheGiB*(1<<30)/float64(w.FeatureRowBytes()))
	rows := math.Min(math.Max(0, room)/float64(w.FeatureRowBytes()), V-gpuRows)
	return math.Max(0, rows/V)
}

// ssdGBps is one SSD's useful read rate for feature rows: random reads of
// whole blocks at the quoted IOPS, or the sequential rate, whichever is
// lower, counting only the row's own bytes.
func ssdGBps(ssd profiles.SSDModel, rowBytes int64, a Assumptions) float64 {
	blk := int64(a.SSDBlockBytes)
	if blk <= 0 {
		blk = 4096
	}
	blocks := (rowBytes + blk - 1) / blk
	device := ssd.ReadGBps
	if ssd.RandReadIOPS > 0 {
		device = math.Min(device, ssd.RandReadIOPS*float64(blk)/1e9)
	}
	return device * float64(rowBytes) / float64(blocks*blk)
}

// Prediction is what one plan is expected to do.
type Prediction struct {
	Shares          Shares  `json:"shares"`
	EpochIOSeconds  float64 `json:"epoch_io_s"`
	EpochTrainSecs  float64 `json:"epoch_train_s"`
	EpochSeconds    float64 `json:"epoch_s"`
	BatchSeconds    float64 `json:"batch_s"` // T_batch = max(T_io, T_train) per batch, per GPU
	SamplesPerSec   float64 `json:"samples_per_s"`
	CostUSD         float64 `json:"cost_USD"`
	TPC             float64 `json:"tpc"` // samples per second per USD (Hyperion eq. 3)
	Bound           string  `json:"bound"`
	SSDGBps         float64 `json:"ssd_GBps"`
	TrainTimeSource string  `json:"train_time_source"`
	// BatchTrain is T_train's parts, per batch on one GPU.
	BatchTrain BatchTrainCosts `json:"batch_train"`
	// Loader is the loader the epoch was priced with and why, beside the
	// others (nil: online, not compared).
	Loader *LoaderChoice `json:"loader,omitempty"`
}

// Tiers turns shares into the flow model's storage tiers.
func tiersFor(s Shares, ssd float64, a Assumptions) placement.Tiers {
	return placement.Tiers{DemandGB: math.Max(s.EpochGB, 1e-9), HostShare: s.HostShare, GPUCacheShare: s.GPUCacheShare,
		HostMemGBps: a.HostMemGBps, GPUMemGBps: 1500, SSDReadGBps: math.Max(ssd, 1e-9)}
}

// BatchTrainCosts are a GPU's seconds per batch besides IO: sampling,
// the step's products and its memory-bound kernels (StepWork), the fixed
// per-batch cost and the gradient all-reduce.
type BatchTrainCosts struct {
	SampleS    float64 `json:"sample_s"`
	ComputeS   float64 `json:"compute_s"`
	MemoryS    float64 `json:"memory_s"`
	OverheadS  float64 `json:"overhead_s"`
	AllReduceS float64 `json:"allreduce_s"`
}

// Total is the batch's training time: the GPU samples, computes and
// reduces in turn.
func (c BatchTrainCosts) Total() float64 {
	return c.SampleS + c.ComputeS + c.MemoryS + c.OverheadS + c.AllReduceS
}

// trainCosts is one GPU's per-batch training time. The all-reduce is a
// ring over the GPUs' PCIe links (the catalog's GPUs have no NVLink):
// each GPU sends and receives 2(N-1)/N of the gradient.
func trainCosts(w Workload, hw Hardware, a Assumptions) BatchTrainCosts {
	b := w.PerBatch()
	var edges float64
	for _, e := range b.SampledEdges {
		edges += e
	}
	rate := hw.GPU.FP32TFLOPS * 1e12 * a.ComputeEfficiency
	link := topology.PCIeGBps(hw.GPU.PCIeGen, hw.GPU.Lanes)
	if m, ok := a.MeasuredGPUs[hw.GPU.Key]; ok {
		if m.GEMMTFLOPS > 0 {
			rate = m.GEMMTFLOPS * 1e12
		}
		if m.H2DGBps > 0 {
			link = m.H2DGBps
		}
	}
	c := BatchTrainCosts{ComputeS: b.FLOPs / rate, OverheadS: a.BatchOverheadS}
	if mem := hw.GPU.MemGBps * a.MemoryEfficiency; mem > 0 {
		k := b.Work
		c.MemoryS = (k.AggregationGB + k.RowGatherGB + k.ElementwiseGB + k.OptimizerGB) / mem
	}
	if a.GPUSampleEdgesPerS > 0 {
		c.SampleS = edges / a.GPUSampleEdgesPerS
	}
	if n := hw.GPUs; n > 1 {
		if link > 0 {
			c.AllReduceS = 2 * float64(n-1) / float64(n) * float64(4*w.Params()) / (link * 1e9)
		}
	}
	return c
}

// predict combines the flow model's epoch IO time with the training time:
// stages overlap in the pipeline, so the epoch takes the longer of the two
// (Hyperion eq. 4, T_batch = max(T_ssd, T_pcie, T_train), with the flow
// model standing for T_ssd and T_pcie across many GPUs). T_train is what a
// GPU does per batch: sample, compute, its fixed cost and the all-reduce.
func predict(w Workload, hw Hardware, host profiles.HostCost, ioSecs float64, s Shares, a Assumptions, ssd float64) Prediction {
	batches := float64(w.BatchesPerEpoch())
	p := Prediction{Shares: s, EpochIOSeconds: ioSecs, CostUSD: hw.TCOUSD(host), SSDGBps: ssd}
	p.BatchTrain = trainCosts(w, hw, a)
	memory := fmt.Sprintf("the step's memory-bound kernels at %g x the catalog's %g GB/s", a.MemoryEfficiency, hw.GPU.MemGBps)
	p.TrainTimeSource = fmt.Sprintf("catalog FP32 peak (%g TFLOPS) x efficiency %g x the step's product FLOPs, %s, plus sampling at %.0f M edges/s, %.1f ms per batch fixed and the gradient all-reduce over PCIe",
		hw.GPU.FP32TFLOPS, a.ComputeEfficiency, memory, a.GPUSampleEdgesPerS/1e6, 1000*a.BatchOverheadS)
	if m, ok := a.MeasuredGPUs[hw.GPU.Key]; ok {
		p.TrainTimeSource = fmt.Sprintf("measured on a %s: GEMM %.1f TFLOPS x the step's product FLOPs, %s, plus sampling at %.0f M edges/s, %.1f ms per batch fixed and the gradient all-reduce at the measured %.1f GB/s host-to-device",
			m.Name, m.GEMMTFLOPS, memory, a.GPUSampleEdgesPerS/1e6, 1000*a.BatchOverheadS, m.H2DGBps)
	}
	// Each GPU trains its share of the batches, whole: one batch keeps one
	// GPU busy however many there are.
	p.EpochTrainSecs = p.BatchTrain.Total() * math.Ceil(batches/float64(max(hw.GPUs, 1)))
	p.EpochSeconds = math.Max(p.EpochIOSeconds, p.EpochTrainSecs)
	p.Bound = "io"
	if p.EpochTrainSecs >= p.EpochIOSeconds {
		p.Bound = "compute"
	}
	p.BatchSeconds = p.EpochSeconds / batches * float64(max(hw.GPUs, 1))
	seeds := float64(w.trainVertices())
	p.SamplesPerSec = seeds / p.EpochSeconds
	p.TPC = p.SamplesPerSec / p.CostUSD
	return p
}

// hostMemoryGiB sums the sockets' memory of a machine, or the catalog's
// host memory when the machine does not say.
func hostMemoryGiB(m *topology.Machine, host profiles.HostCost) float64 {
	if s := m.Summarize(); s.MemoryGiB > 0 {
		return s.MemoryGiB
	}
	return host.MemoryGiB
}

// HitShare is the share of accesses the hottest fraction x of the
// vertices receives under a's power law (x^SkewExponent).
func HitShare(a Assumptions, x float64) float64 { return a.hitShare(x) }

// PowerCheck is a plan's power draw against the host's supplies: the
// host's base draw and each device's maximum (catalog power_W).
type PowerCheck struct {
	DrawW, SupplyW float64
	Known, Fits    bool
	Text           string // one line for a review
}

// CheckPower adds the host's base draw and hw's devices at their maximum
// and compares the sum with the host's supplies. Where the catalog lacks
// a figure it says which and checks nothing.
func CheckPower(hw Hardware, h profiles.HostCost) PowerCheck {
	var missing []string
	if h.BasePowerW <= 0 || h.PSUW <= 0 {
		missing = append(missing, "the host's base_power_W and psu_W")
	}
	if hw.GPUs > 0 && hw.GPU.PowerW <= 0 {
		missing = append(missing, hw.GPU.Key+"'s power_W")
	}
	if hw.SSDs > 0 && hw.SSD.PowerW <= 0 {
		missing = append(missing, hw.SSD.Key+"'s power_W")
	}
	if len(missing) > 0 {
		return PowerCheck{Text: "not checked: the catalog lacks " + strings.Join(missing, " and ") + " (add them with --catalog)"}
	}
	draw := h.BasePowerW + float64(hw.GPUs)*hw.GPU.PowerW + float64(hw.SSDs)*hw.SSD.PowerW
	c := PowerCheck{DrawW: draw, SupplyW: h.PSUW, Known: true, Fits: draw <= h.PSUW}
	verdict := "within"
	if !c.Fits {
		verdict = "MORE than"
	}
	parts := fmt.Sprintf("%.0f W host", h.BasePowerW)
	if hw.GPUs > 0 {
		parts += fmt.Sprintf(" + %d x %.0f W GPUs", hw.GPUs, hw.GPU.PowerW)
	}
	if hw.SSDs > 0 {
		parts += fmt.Sprintf(" + %d x %g W SSDs", hw.SSDs, hw.SSD.PowerW)
	}
	c.Text = fmt.Sprintf("%s = %.0f W at most, %s the host's %.0f W of supplies (catalog figures; the host's are estimates)", parts, draw, verdict, h.PSUW)
	return c
}
