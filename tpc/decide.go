package tpc

import (
	"fmt"
	"math"

	"github.com/gnnplan/gnnplan/maxflow/placement"
	"github.com/gnnplan/gnnplan/topology"
)

// Decisions are the continuous choices a plan makes rather than assumes,
// with why (docs/tpc-nlp.md).
type Decisions struct {
	// CPUCacheFraction is the share of the vertices whose features host
	// memory caches, the hottest after the GPUs' own; CPUCacheGiB their
	// size. MaxCPUCacheFraction is what host memory could hold.
	CPUCacheFraction    float64 `json:"cpu_cache_fraction"`
	CPUCacheGiB         float64 `json:"cpu_cache_GiB"`
	MaxCPUCacheFraction float64 `json:"max_cpu_cache_fraction"`
	// Why says in a sentence why the cache is the size it is.
	Why string `json:"why"`
	// GPUTopologyShare is the share of each GPU's cache room given to
	// the topology's hottest part; GPUWhy says how a GPU's memory is
	// used and why (the figures are the prediction's shares' gpu).
	GPUTopologyShare float64 `json:"gpu_topology_share"`
	GPUWhy           string  `json:"gpu_why"`
	// TopologyOnSSDShare is the share of the topology read from the SSDs
	// rather than held in host memory; TopologyWhy says why.
	TopologyOnSSDShare float64 `json:"topology_on_ssd_share"`
	TopologyWhy        string  `json:"topology_why"`
}

// decided is a with d's choices in it: what a plan was predicted with.
func decided(a Assumptions, d Decisions) Assumptions {
	a.CPUCacheFraction = d.CPUCacheFraction
	a.GPUTopologyShare = d.GPUTopologyShare
	a.TopologyOnSSDShare = d.TopologyOnSSDShare
	return a
}

// cpuCache is the CPU cache for hw in placement p: the request's fixed
// size (CPUCacheGiB, capped at xmax) or decideCPUCache's.
func (req Request) cpuCache(m *topology.Machine, inv placement.Inventory, p placement.Placement, hw Hardware, hostGiB, xmax float64) (float64, string, error) {
	if req.CPUCacheGiB > 0 {
		x := math.Min(xmax, req.CPUCacheGiB*(1<<30)/float64(req.Workload.FeatureRowBytes())/float64(max(req.Workload.Vertices, 1)))
		return x, fmt.Sprintf("given: %g GiB (--cpu-cache-gib), %.2f%% of the vertices", req.CPUCacheGiB, 100*x), nil
	}
	return decideCPUCache(m, inv, p, req.Workload, hw, hostGiB, req.Assumptions, req.MeasuredSSDGBps, xmax)
}

// cacheSearchTol and cacheSearchRel are where the search for the CPU
// cache's size stops: a hundredth of a percent of the vertices, or 0.4%
// of the room (the IO time is piecewise linear near its least, so the
// TPC it leaves is far less).
const (
	cacheSearchTol = 1e-4
	cacheSearchRel = 4e-3
)

// decideCPUCache chooses the share of vertices host memory caches for hw
// in placement p, on the stripped machine m: the one whose epoch IO time
// (the flow's) is least, up to xmax. The flow's time is the largest of
// its cuts' loads over their capacities; each cut's load is affine in the
// host's share of the bytes and the SSDs' (which sum to a constant), so
// the time is convex in the host share, which the cache size raises
// monotonically: the time is unimodal in the cache size, and a
// golden-section search finds its least exactly to the tolerance. Where
// it still falls at xmax, xmax is the answer (the common case: memory
// outruns the SSDs).
func decideCPUCache(m *topology.Machine, inv placement.Inventory, p placement.Placement, w Workload, hw Hardware, hostGiB float64,
	a Assumptions, measuredSSDGBps, xmax float64) (float64, string, error) {
	if xmax <= 0 {
		return 0, "host memory has no room beside the topology and its reserve", nil
	}
	if hw.SSDs == 0 {
		return xmax, "no SSD: every row the GPUs do not cache comes from host memory", nil
	}
	pm, err := placement.Apply(m, inv, p)
	if err != nil {
		return 0, "", err
	}
	// One flow graph, its host and SSD shares moved for each size tried.
	share := func(x float64) (float64, placement.Tiers) {
		b := a
		b.CPUCacheFraction = x
		s, ssd := ioShares(w, hw, hostGiB, b, measuredSSDGBps)
		return s.HostShare, tiersFor(s, ssd, b)
	}
	_, top := share(xmax)
	g, err := placement.BuildGraph(pm, top)
	if err != nil {
		return 0, "", err
	}
	ioTime := func(x float64) float64 {
		h, _ := share(x)
		if err := g.SetHostShare(h); err != nil {
			return math.Inf(1)
		}
		t, err := g.LeastTime()
		if err != nil {
			return math.Inf(1)
		}
		return t
	}
	step := math.Max(cacheSearchTol, cacheSearchRel*xmax)
	tMax := ioTime(xmax)
	if tMax <= ioTime(math.Max(0, xmax-step))*(1+1e-12) {
		return xmax, fmt.Sprintf("as large as host memory allows (%.1f%% of the vertices): each more cached row still shortens the epoch's IO", 100*xmax), nil
	}
	x := goldenMin(ioTime, 0, xmax, step)
	if ioTime(x) >= tMax {
		x = xmax
	}
	return x, fmt.Sprintf("%.1f%% of the vertices, less than the %.1f%% host memory could hold: a larger cache would move more bytes through the links host memory reaches the GPUs by, which the SSDs' peer paths spare", 100*x, 100*xmax), nil
}

// splitSearchTol is where the searches for the GPU memory's split stop: a
// thousandth of the cache room.
const splitSearchTol = 1e-3

// goldenMin is the least of f on [lo, hi] for f unimodal there, to tol: a
// golden-section search.
func goldenMin(f func(float64) float64, lo, hi, tol float64) float64 {
	phi := (math.Sqrt(5) - 1) / 2
	c, d := hi-phi*(hi-lo), lo+phi*(hi-lo)
	fc, fd := f(c), f(d)
	for hi-lo > tol {
		if fc <= fd {
			hi, d, fd = d, c, fc
			c = hi - phi*(hi-lo)
			fc = f(c)
		} else {
			lo, c, fc = c, d, fd
			d = lo + phi*(hi-lo)
			fd = f(d)
		}
	}
	return (lo + hi) / 2
}

// topologyShareCap is the largest useful GPUTopologyShare for hw: the
// share of the cache room the whole topology fills.
func topologyShareCap(w Workload, hw Hardware, a Assumptions) float64 {
	room := gpuLayout(w, w.PerBatch(), hw, a).CacheRoomGiB
	_, topo := w.DatasetBytes()
	if room <= 0 || topo <= 0 {
		return 0
	}
	return math.Min(1, float64(topo)/(1<<30)/room)
}

// servedSplit is the GPUTopologyShare that serves the most of the epoch's
// bytes from the GPUs' memory, host memory and SSDs as a's: the exact
// split where every byte the GPUs do not serve crosses their own links
// (the common bound). The bytes served are a concave function of the
// share (the rows' hit share is concave in the rows cached, the
// topology's linear or concave in its bytes), so a golden-section search
// finds the best.
func servedSplit(w Workload, hw Hardware, hostGiB float64, a Assumptions) float64 {
	top := topologyShareCap(w, hw, a)
	if top <= 0 {
		return 0
	}
	served := func(s float64) float64 {
		b := a
		b.GPUTopologyShare = s
		return -shares(w, hw, hostGiB, b).GPUCacheShare
	}
	s := goldenMin(served, 0, top, splitSearchTol*top)
	// The ends, where the search's interval stops short of them.
	for _, e := range []float64{0, top} {
		if served(e) < served(s) {
			s = e
		}
	}
	return s
}

// decideGPUSplit chooses, for hw in placement p with a's CPU cache, the
// GPUTopologyShare whose epoch IO time (the flow's) is least: servedSplit
// answers for the GPUs' links; where those do not bind (the SSDs or host
// memory's links do), moving topology into the GPUs frees host links but
// pushes feature rows out to the SSDs, and only the flow weighs the two.
// The time is searched by golden section over the whole range, and the
// best of the search's answer, the ends and servedSplit's is kept.
func decideGPUSplit(m *topology.Machine, inv placement.Inventory, p placement.Placement, w Workload, hw Hardware, hostGiB float64,
	a Assumptions, measuredSSDGBps float64) (float64, error) {
	top := topologyShareCap(w, hw, a)
	start := servedSplit(w, hw, hostGiB, a)
	if top <= 0 || hw.SSDs == 0 {
		return start, nil
	}
	pm, err := placement.Apply(m, inv, p)
	if err != nil {
		return 0, err
	}
	at := func(s float64) (Shares, placement.Tiers) {
		b := a
		b.GPUTopologyShare = s
		sh, ssd := ioShares(w, hw, hostGiB, b, measuredSSDGBps)
		return sh, tiersFor(sh, ssd, b)
	}
	_, t0 := at(start)
	// The graph needs every tier it will be given bytes on.
	const eps = 1e-9
	t0.GPUCacheShare, t0.HostShare = math.Max(t0.GPUCacheShare, eps), math.Max(t0.HostShare, eps)
	if sum := t0.GPUCacheShare + t0.HostShare; sum > 1-eps {
		t0.GPUCacheShare, t0.HostShare = t0.GPUCacheShare*(1-eps)/sum, t0.HostShare*(1-eps)/sum
	}
	g, err := placement.BuildGraph(pm, t0)
	if err != nil {
		return 0, err
	}
	ioTime := func(s float64) float64 {
		sh, _ := at(s)
		if err := g.SetShares(sh.HostShare, sh.GPUCacheShare); err != nil {
			return math.Inf(1)
		}
		t, err := g.LeastTime()
		if err != nil {
			return math.Inf(1)
		}
		return t
	}
	best, tBest := start, ioTime(start)
	s := goldenMin(ioTime, 0, top, splitSearchTol*top)
	for _, c := range []float64{s, 0, top} {
		if t := ioTime(c); t < tBest*(1-1e-12) {
			best, tBest = c, t
		}
	}
	return best, nil
}

// gpuSplitWhy says in a sentence how a GPU's memory is used in s and
// why: what a GiB of topology and the last GiB of feature rows each serve
// of an epoch's reads.
func gpuSplitWhy(w Workload, s Shares, a Assumptions) string {
	l := s.GPU
	ws := fmt.Sprintf("%.1f GiB kept from the caches (fixed)", a.GPUReserveGiB)
	if t := l.WorkingSet; t.TotalGiB > 0 {
		ws = fmt.Sprintf("%.1f GiB for training (input rows %.1f, activations %.1f, parameters and Adam's moments %.2f, blocks %.2f, context %.1f)",
			t.TotalGiB, t.InputGiB, t.ActivationsGiB, t.ParamsGiB, t.BlocksGiB, t.ContextGiB)
	}
	if l.CacheRoomGiB <= 0 {
		return ws + "; nothing left to cache"
	}
	split := fmt.Sprintf("%.1f GiB cache the hottest feature rows", l.FeatureCacheGiB)
	if l.TopologyCacheGiB > 0 {
		split += fmt.Sprintf(" and %.1f GiB the topology's hottest part (%.0f%% of its reads)", l.TopologyCacheGiB, 100*l.TopologyHit)
	}
	b := w.PerBatch()
	batches := float64(w.BatchesPerEpoch())
	_, topo := w.DatasetBytes()
	V, row := float64(w.Vertices), float64(w.FeatureRowBytes())
	if topo <= 0 || V <= 0 || row <= 0 {
		return ws + "; " + split
	}
	// Reads served per GiB cached, at the margin.
	const gib = 1 << 30
	topoPerGiB := b.TopologyBytes * batches / float64(topo) * gib
	g := s.GPUCacheRows / V
	dg := math.Min(1e-3, 1-g)
	featPerGiB := 0.0
	if dg > 0 {
		featPerGiB = b.FeatureBytes * batches * (a.hitShare(g+dg) - a.hitShare(g)) / (dg * V * row) * gib
	}
	if s.GPUCacheRows >= V*(1-splitSearchTol) {
		return fmt.Sprintf("%s; %s: every feature row fits, and a GiB of topology serves %.2f GB of an epoch's reads", ws, split, topoPerGiB/1e9)
	}
	return fmt.Sprintf("%s; %s: a GiB of topology serves %.2f GB of an epoch's reads, the last GiB of feature rows %.2f GB",
		ws, split, topoPerGiB/1e9, featPerGiB/1e9)
}

// decideTopologyOnSSD chooses, for hw in placement p with a's caches, the
// share of the topology the SSDs serve: at least what host memory cannot
// hold (leastTopologyOnSSD), more where the flow's IO time says a GiB of
// host memory serves more as feature rows than as topology. A topology
// read from an SSD moves two blocks for a few hundred bytes, so past the
// least share the time usually rises at once: a step of a hundredth
// checks that, and only where the time falls does a golden-section
// search run over the rest. The epoch's bytes change with the share
// (the blocks), so each time is a graph built afresh.
func decideTopologyOnSSD(m *topology.Machine, inv placement.Inventory, p placement.Placement, w Workload, hw Hardware, hostGiB float64,
	a Assumptions, measuredSSDGBps float64) (float64, error) {
	lo := leastTopologyOnSSD(w, hw, hostGiB, a)
	if hw.SSDs == 0 || lo >= 1 {
		return lo, nil
	}
	pm, err := placement.Apply(m, inv, p)
	if err != nil {
		return 0, err
	}
	// The CPU cache keeps its size, or, where it was as large as memory
	// allowed, grows into the memory the topology frees.
	full := a.CPUCacheFraction >= maxCPUCacheFraction(w, hw, hostGiB, a)*(1-1e-9)
	ioTime := func(u float64) float64 {
		b := a
		b.TopologyOnSSDShare = u
		xmax := maxCPUCacheFraction(w, hw, hostGiB, b)
		b.CPUCacheFraction = math.Min(a.CPUCacheFraction, xmax)
		if full {
			b.CPUCacheFraction = xmax
		}
		sh, ssd := ioShares(w, hw, hostGiB, b, measuredSSDGBps)
		g, err := placement.BuildGraph(pm, tiersFor(sh, ssd, b))
		if err != nil {
			return math.Inf(1)
		}
		t, err := g.LeastTime()
		if err != nil {
			return math.Inf(1)
		}
		return t
	}
	t0 := ioTime(lo)
	if ioTime(math.Min(1, lo+0.01)) >= t0 {
		return lo, nil
	}
	u := goldenMin(ioTime, lo, 1, splitSearchTol)
	if ioTime(u) >= t0 {
		return lo, nil
	}
	return u, nil
}

// topologySplitWhy says in a sentence where the topology is and why.
func topologySplitWhy(w Workload, hw Hardware, hostGiB float64, s Shares, a Assumptions) string {
	_, topo := w.DatasetBytes()
	gib := float64(topo) / (1 << 30)
	u := a.TopologyOnSSDShare
	if hw.SSDs == 0 {
		u = 0
	}
	if u <= 0 {
		return fmt.Sprintf("host memory holds all %.0f GiB of the topology", gib)
	}
	least := leastTopologyOnSSD(w, hw, hostGiB, a)
	why := "host memory cannot hold more beside its reserve"
	if u > least+1e-9 {
		why = "host memory serves more of the epoch as feature rows than as topology"
	}
	return fmt.Sprintf("the SSDs serve the coldest %.0f%% of the %.0f GiB topology (%.0f GB of blocks an epoch): %s",
		100*u, gib, s.SSDTopologyGB, why)
}
