package tpc

import (
	"fmt"
	"math"

	"github.com/gnnplan/gnnplan/maxflow"
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
}

// decided is a with d's choices in it: what a plan was predicted with.
func decided(a Assumptions, d Decisions) Assumptions {
	a.CPUCacheFraction = d.CPUCacheFraction
	return a
}

// cpuCache is the CPU cache for hw in placement p: the request's fixed
// size (CPUCacheGiB, capped at xmax) or decideCPUCache's.
func (req Request) cpuCache(m *topology.Machine, inv maxflow.Inventory, p maxflow.Placement, hw Hardware, hostGiB, xmax float64) (float64, string, error) {
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
func decideCPUCache(m *topology.Machine, inv maxflow.Inventory, p maxflow.Placement, w Workload, hw Hardware, hostGiB float64,
	a Assumptions, measuredSSDGBps, xmax float64) (float64, string, error) {
	if xmax <= 0 {
		return 0, "host memory has no room beside the topology and its reserve", nil
	}
	if hw.SSDs == 0 {
		return xmax, "no SSD: every row the GPUs do not cache comes from host memory", nil
	}
	pm, err := maxflow.Apply(m, inv, p)
	if err != nil {
		return 0, "", err
	}
	// One flow graph, its host and SSD shares moved for each size tried.
	share := func(x float64) (float64, maxflow.Tiers) {
		b := a
		b.CPUCacheFraction = x
		s, ssd := ioShares(w, hw, hostGiB, b, measuredSSDGBps)
		return s.HostShare, tiersFor(s, ssd, b)
	}
	_, top := share(xmax)
	g, err := maxflow.BuildGraph(pm, top)
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
	// Golden-section search on [0, xmax].
	phi := (math.Sqrt(5) - 1) / 2
	lo, hi := 0.0, xmax
	c, d := hi-phi*(hi-lo), lo+phi*(hi-lo)
	fc, fd := ioTime(c), ioTime(d)
	for hi-lo > step {
		if fc <= fd {
			hi, d, fd = d, c, fc
			c = hi - phi*(hi-lo)
			fc = ioTime(c)
		} else {
			lo, c, fc = c, d, fd
			d = lo + phi*(hi-lo)
			fd = ioTime(d)
		}
	}
	x := (lo + hi) / 2
	if ioTime(x) >= tMax {
		x = xmax
	}
	return x, fmt.Sprintf("%.1f%% of the vertices, less than the %.1f%% host memory could hold: a larger cache would move more bytes through the links host memory reaches the GPUs by, which the SSDs' peer paths spare", 100*x, 100*xmax), nil
}
