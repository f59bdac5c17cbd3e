package placement

import (
	"fmt"
	"math"
	"sort"

	"github.com/gnnplan/gnnplan/internal/tier"
	"github.com/gnnplan/gnnplan/maxflow"
	"github.com/gnnplan/gnnplan/topology"
)

// Tiers says where an epoch's bytes come from and how fast each storage
// tier reads. Shares are fractions of DemandGB (0-1); what the host and GPU
// caches do not serve comes from the SSDs.
type Tiers struct {
	// DemandGB is the bytes all compute nodes read per epoch (GB). The
	// rates this package reports do not depend on it; times scale with it.
	DemandGB float64 `json:"demand_GB"`
	// HostShare is the fraction served from CPU memory: the graph
	// topology the GPUs sample over PCIe plus the features cached in host
	// memory (docs/architecture.md section 4). It is split evenly over the sockets.
	HostShare float64 `json:"host_share"`
	// GPUCacheShare is the fraction served from the GPUs' own memory,
	// split evenly over the GPUs.
	GPUCacheShare float64 `json:"gpu_cache_share"`
	// HostMemGBps is one socket's DRAM read rate.
	HostMemGBps float64 `json:"host_mem_GBps"`
	// GPUMemGBps is one GPU's memory read rate.
	GPUMemGBps float64 `json:"gpu_mem_GBps"`
	// SSDReadGBps is an SSD's read rate when its node does not give one.
	SSDReadGBps float64 `json:"ssd_read_GBps"`
}

// DefaultTiers is Moment's setup on its machines (section 4.1): the graph
// topology in host memory and 1% of the vertices' features cached there,
// which puts ~30% of an epoch's bytes on host memory for GraphSAGE on IGB
// (docs/architecture.md section 4 gives 20-60%); no GPU cache; P5510 SSDs reading
// 6.4 GB/s each (Moment measures 48 GiB/s for 8). DRAM and HBM rates are
// estimates far above any PCIe link, so they never bind by accident.
func DefaultTiers() Tiers {
	return Tiers{DemandGB: 100, HostShare: 0.3, GPUCacheShare: 0, HostMemGBps: 100, GPUMemGBps: 1500, SSDReadGBps: 6.4}
}

// Validate reports a tier setting that makes no sense, naming its field.
func (t Tiers) Validate() error {
	check := func(name string, v, lo, hi float64) error {
		if math.IsNaN(v) || v < lo || v > hi {
			return &topology.InputError{Field: name, Msg: fmt.Sprintf("%v (valid: %g to %g)", v, lo, hi)}
		}
		return nil
	}
	for _, c := range []struct {
		name      string
		v, lo, hi float64
	}{
		{"demand_GB", t.DemandGB, 1e-9, 1e15},
		{"host_share", t.HostShare, 0, 1},
		{"gpu_cache_share", t.GPUCacheShare, 0, 1},
		{"host_mem_GBps", t.HostMemGBps, 1e-9, 1e6},
		{"gpu_mem_GBps", t.GPUMemGBps, 1e-9, 1e6},
		{"ssd_read_GBps", t.SSDReadGBps, 1e-9, 1e6},
	} {
		if err := check(c.name, c.v, c.lo, c.hi); err != nil {
			return err
		}
	}
	if t.HostShare+t.GPUCacheShare > 1+1e-12 {
		return &topology.InputError{Field: "host_share + gpu_cache_share", Msg: fmt.Sprintf("%v (valid: at most 1)", t.HostShare+t.GPUCacheShare)}
	}
	return nil
}

// StorageKind is the tier of a storage node of the capacity graph.
type StorageKind = tier.Kind

// Storage tiers.
const (
	StorageGPUMem  = tier.GPUMem
	StorageHostMem = tier.HostMem
	StorageSSD     = tier.SSD
)

// Graph is the capacity graph of a machine (Moment section 3.2): source ->
// storage (GPU memory, CPU memory per socket, each SSD at its read rate) ->
// links (each direction its own edge) -> compute nodes (GPUs; the sockets
// on a machine without GPUs) -> sink.
type Graph struct {
	Net          *maxflow.Network
	Source, Sink int
	Tiers        Tiers
	// Node maps a machine node id to its network node.
	Node map[string]int
	// Link maps a network edge to the machine link it models (index into
	// Machine.Links), or -1 for the virtual edges.
	Link []int
	// Storage lists the storage nodes: the edge from the source into each.
	Storage []StorageEdge
	// Compute lists the compute nodes: the edge from each to the sink.
	Compute []ComputeEdge
	// pool is the edge from the source into the SSD pool, -1 for none.
	pool int
}

// StorageEdge is one storage node and the edge that feeds it.
type StorageEdge struct {
	ID   string // machine node it sits on (GPU, socket or NVMe id)
	Kind StorageKind
	Edge int // source -> storage; its rate is the read rate
}

// ComputeEdge is one compute node and its edge to the sink.
type ComputeEdge struct {
	ID   string
	Edge int
}

// BuildGraph makes the capacity graph of m with the given tiers. Node kinds
// decide roles, never names. Every link becomes two edges, one per
// direction, each with the link's per-direction capacity.
func BuildGraph(m *topology.Machine, tiers Tiers) (*Graph, error) {
	if err := tiers.Validate(); err != nil {
		return nil, err
	}
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("machine %s: %w", m.Name, err)
	}
	net := maxflow.NewNetwork(len(m.Nodes)+8, 2*len(m.Links)+len(m.Nodes)+8)
	g := &Graph{Net: net, Tiers: tiers, Node: map[string]int{}, pool: -1}
	g.Source = net.AddNode("source")
	g.Sink = net.AddNode("sink")
	for _, n := range m.Nodes {
		g.Node[n.ID] = net.AddNode(n.ID)
	}
	g.Link = make([]int, 0, 2*len(m.Links)+len(m.Nodes)+8)
	virtual := func(int) { g.Link = append(g.Link, -1) }
	for i, l := range m.Links {
		net.AddEdge(g.Node[l.From], g.Node[l.To], l.GBps)
		net.AddEdge(g.Node[l.To], g.Node[l.From], l.GBps)
		g.Link = append(g.Link, i, i)
	}
	D := tiers.DemandGB
	gpus := m.SortedKind(topology.KindGPU)
	sockets := m.SortedKind(topology.KindSocket)
	ssds := m.SortedKind(topology.KindNVMe)
	compute := gpus
	if len(compute) == 0 {
		compute = sockets
	}
	if len(compute) == 0 {
		return nil, &topology.InputError{Field: m.Name, Msg: "the machine has no GPU and no socket to train on"}
	}
	if len(sockets) > 0 && tiers.HostShare > 0 {
		for _, id := range sockets {
			mem := net.AddNode("mem:" + id)
			e := net.AddCappedEdge(g.Source, mem, tiers.HostMemGBps, tiers.HostShare*D/float64(len(sockets)))
			virtual(e)
			virtual(net.AddEdge(mem, g.Node[id], math.Inf(1)))
			g.Storage = append(g.Storage, StorageEdge{ID: id, Kind: StorageHostMem, Edge: e})
		}
	}
	if len(gpus) > 0 && tiers.GPUCacheShare > 0 {
		for _, id := range gpus {
			mem := net.AddNode("mem:" + id)
			e := net.AddCappedEdge(g.Source, mem, tiers.GPUMemGBps, tiers.GPUCacheShare*D/float64(len(gpus)))
			virtual(e)
			virtual(net.AddEdge(mem, g.Node[id], math.Inf(1)))
			g.Storage = append(g.Storage, StorageEdge{ID: id, Kind: StorageGPUMem, Edge: e})
		}
	}
	ssdShare := 1 - tiers.HostShare - tiers.GPUCacheShare
	if len(gpus) == 0 {
		ssdShare = 1 - tiers.HostShare
	}
	if len(ssds) == 0 && ssdShare > 1e-12 {
		return nil, &topology.InputError{Field: m.Name, Msg: fmt.Sprintf(
			"cannot serve the epoch: %.0f%% of it is to come from SSDs and the machine has none (place some SSDs, or raise the memory shares to 100%%)", 100*ssdShare)}
	}
	if len(ssds) > 0 && ssdShare > 1e-12 {
		// The SSDs together hold what the caches do not: one pool node
		// caps their sum, each SSD reads at its own rate.
		pool := net.AddNode("ssd-pool")
		g.pool = net.AddCappedEdge(g.Source, pool, math.Inf(1), ssdShare*D)
		virtual(g.pool)
		byID := m.NodesByID()
		for _, id := range ssds {
			rate := byID[id].ReadGBps
			if rate <= 0 {
				rate = tiers.SSDReadGBps
			}
			e := net.AddEdge(pool, g.Node[id], rate)
			virtual(e)
			g.Storage = append(g.Storage, StorageEdge{ID: id, Kind: StorageSSD, Edge: e})
		}
	}
	for _, id := range compute {
		e := net.AddCappedEdge(g.Node[id], g.Sink, math.Inf(1), D/float64(len(compute)))
		virtual(e)
		g.Compute = append(g.Compute, ComputeEdge{ID: id, Edge: e})
	}
	return g, nil
}

// SetHostShare moves the epoch's bytes between host memory and the SSDs:
// host memory serves share h of them, the SSDs what neither memory
// serves, the GPUs' caches as before. It needs the graph built with both
// tiers present (shares > 0), as a search over the host's share does.
func (g *Graph) SetHostShare(h float64) error {
	return g.SetShares(h, g.Tiers.GPUCacheShare)
}

// SetShares is SetHostShare that moves the GPUs' caches' share too, to
// gpu: the graph must have been built with each tier it gives bytes to
// (a GPU cache tier where gpu > 0).
func (g *Graph) SetShares(h, gpu float64) error {
	var host, cache []int
	for _, s := range g.Storage {
		switch s.Kind {
		case StorageHostMem:
			host = append(host, s.Edge)
		case StorageGPUMem:
			cache = append(cache, s.Edge)
		}
	}
	ssd := 1 - h - gpu
	if len(host) == 0 || g.pool < 0 || h < 0 || gpu < 0 || ssd < -1e-12 || math.IsNaN(h) || math.IsNaN(gpu) || (gpu > 0 && len(cache) == 0) {
		return fmt.Errorf("shares host %v, GPU caches %v: the graph was built without host memory, GPU cache or SSD tiers, or the shares leave none to the SSDs", h, gpu)
	}
	D := g.Tiers.DemandGB
	for _, e := range host {
		g.Net.SetVolume(e, h*D/float64(len(host)))
	}
	for _, e := range cache {
		g.Net.SetVolume(e, gpu*D/float64(len(cache)))
	}
	g.Net.SetVolume(g.pool, math.Max(0, ssd)*D)
	g.Tiers.HostShare, g.Tiers.GPUCacheShare = h, gpu
	return nil
}

// LeastTime is the least time the graph's machine needs to move the
// epoch's bytes: Evaluate's EpochIOSeconds without the detail.
func (g *Graph) LeastTime() (float64, error) {
	sol, err := g.Net.MinTime(g.Source, g.Sink, g.Tiers.DemandGB)
	if err != nil {
		return 0, err
	}
	return sol.Seconds, nil
}

// Evaluation is what the flow model predicts for one machine and placement.
type Evaluation struct {
	// EpochIOSeconds is the least time the machine needs to move
	// Tiers.DemandGB to its compute nodes.
	EpochIOSeconds float64 `json:"epoch_io_s"`
	// AggregateGBps is DemandGB / EpochIOSeconds.
	AggregateGBps float64 `json:"aggregate_GBps"`
	// PerGPU is each compute node's inlet: what reaches it from outside
	// (PCIe, NVLink, its socket), averaged over the epoch, in GB/s.
	PerGPU []Inlet `json:"per_gpu"`
	// Traffic is each storage node's share of the epoch: the target
	// traffic data placement (DDAK) later matches.
	Traffic []StorageTraffic `json:"storage_traffic"`
	// Bottlenecks are the links (and device read rates) that bind: the
	// minimum cut just short of the least time.
	Bottlenecks []Bottleneck `json:"bottlenecks"`
}

// Inlet is one compute node's predicted average inlet bandwidth.
type Inlet struct {
	ID   string  `json:"id"`
	GBps float64 `json:"GBps"`
}

// StorageTraffic is the bytes one storage node serves per epoch.
type StorageTraffic struct {
	ID   string      `json:"id"`
	Kind StorageKind `json:"kind"`
	GB   float64     `json:"GB"`
	GBps float64     `json:"GBps"`
}

// Bottleneck is a saturated link or device read rate.
type Bottleneck struct {
	From     string        `json:"from"`
	To       string        `json:"to"`
	FromKind topology.Kind `json:"from_kind"`
	ToKind   topology.Kind `json:"to_kind"`
	Kind     string        `json:"kind"` // a topology link kind, or "ssd_read", "memory_read"
	GBps     float64       `json:"GBps"`
	Label    string        `json:"label,omitempty"`
}

// Evaluate solves the capacity graph of m for the least epoch IO time and
// reports inlets, per-storage traffic and bottlenecks.
func Evaluate(m *topology.Machine, tiers Tiers) (*Evaluation, error) {
	g, err := BuildGraph(m, tiers)
	if err != nil {
		return nil, err
	}
	return g.Evaluate(m)
}

// Evaluate solves g (built from m).
func (g *Graph) Evaluate(m *topology.Machine) (*Evaluation, error) {
	sol, err := g.Net.MinTime(g.Source, g.Sink, g.Tiers.DemandGB)
	if err != nil {
		if de, ok := err.(*maxflow.DemandError); ok {
			return nil, &topology.InputError{Field: m.Name, Msg: "the placement cannot serve the epoch: " + de.Error()}
		}
		return nil, err
	}
	T := sol.Seconds
	ev := &Evaluation{EpochIOSeconds: T, AggregateGBps: g.Tiers.DemandGB / T}
	net := g.Net
	for _, c := range g.Compute {
		v := g.Node[c.ID]
		in := 0.0
		for e := 0; e < net.Edges(); e++ {
			if net.To(e) == v && g.Link[e] >= 0 {
				in += sol.Flow[e]
			}
		}
		// Flow that only passes through (forwarded to a peer) is not inlet.
		for e := 0; e < net.Edges(); e++ {
			if net.From(e) == v && g.Link[e] >= 0 {
				in -= sol.Flow[e]
			}
		}
		ev.PerGPU = append(ev.PerGPU, Inlet{ID: c.ID, GBps: math.Max(in, 0) / T})
	}
	for _, s := range g.Storage {
		ev.Traffic = append(ev.Traffic, StorageTraffic{ID: s.ID, Kind: s.Kind, GB: sol.Flow[s.Edge], GBps: sol.Flow[s.Edge] / T})
	}
	ev.Bottlenecks = g.bottlenecks(m, sol)
	return ev, nil
}

// bottlenecks finds what binds: the minimum cut of the network given a
// little less than the least time. Volume caps are never the answer at
// that time (the demand would be met otherwise), so the cut names rates.
func (g *Graph) bottlenecks(m *topology.Machine, at *maxflow.TimedSolution) []Bottleneck {
	sol := at.Solution
	if short, err := g.Net.MaxFlowWithin(g.Source, g.Sink, at.Seconds*(1-1e-6)); err == nil {
		sol = short
	}
	var out []Bottleneck
	seen := map[int]bool{}
	for _, e := range sol.Cut {
		_, _, rate, vol := g.Net.Edge(e)
		if li := g.Link[e]; li >= 0 {
			if seen[li] {
				continue
			}
			seen[li] = true
			l := m.Links[li]
			from, to := g.Net.Name(g.Net.From(e)), g.Net.Name(g.Net.To(e))
			out = append(out, Bottleneck{From: from, To: to, FromKind: m.Node(from).Kind, ToKind: m.Node(to).Kind,
				Kind: string(l.Kind), GBps: l.GBps, Label: l.Label})
			continue
		}
		if math.IsInf(rate, 1) || !math.IsInf(vol, 1) && rate*at.Seconds >= vol {
			continue // a volume, not a rate
		}
		kind := "memory_read"
		for _, s := range g.Storage {
			if s.Edge == e && s.Kind == StorageSSD {
				kind = "ssd_read"
			}
		}
		to := g.Net.Name(g.Net.To(e))
		var toKind topology.Kind
		if n := m.Node(to); n != nil {
			toKind = n.Kind
		}
		out = append(out, Bottleneck{From: g.Net.Name(g.Net.From(e)), To: to, ToKind: toKind, Kind: kind, GBps: rate})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Kind < out[j].Kind })
	return out
}
