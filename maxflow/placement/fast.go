package placement

import (
	"github.com/gnnplan/gnnplan/maxflow"
	"github.com/gnnplan/gnnplan/topology"
)

// fastEvaluator predicts the epoch IO time of many placements of one
// inventory on one machine without rebuilding anything per placement. It
// builds a single "universal" capacity graph in which every free slot holds
// both a GPU and an SSD; a placement only switches devices on (their
// storage and sink edges get capacity) or off (zero), which leaves the max
// flow of the placed machine unchanged: a switched-off device is a dead end.
// The times equal Evaluate's on the machine Apply builds (a test checks).
type fastEvaluator struct {
	net        *maxflow.Network
	src, sink  int
	tiers      Tiers
	nGPU, nSSD int
	base       []float64 // rates as built
	baseVol    []float64
	slot       map[string]*slotEdges
}

// slotEdges are the edges a placement switches for one slot.
type slotEdges struct {
	gpuSink, gpuCache int    // GPU -> sink (volume D/n), source -> GPU memory (-1 if no cache share)
	gpuLink           int    // slot -> GPU
	ssdRead           int    // SSD pool -> SSD (rate)
	ssdLinks          [2]int // slot <-> SSD
	slotUp            [2]int // parent <-> slot
}

const fastUnbounded = 1e6 // GB/s: "never binds" for fabric headroom

func newFastEvaluator(m *topology.Machine, inv Inventory, groups []slotGroup, tiers Tiers) (*fastEvaluator, error) {
	u := &topology.Machine{SchemaVersion: m.SchemaVersion, Name: m.Name, Source: m.Source,
		Nodes: append([]topology.Node(nil), m.Nodes...), Links: append([]topology.Link(nil), m.Links...)}
	gpuOf, ssdOf := map[string]string{}, map[string]string{}
	byID := m.NodesByID()
	for _, g := range groups {
		for _, s := range g.slots {
			slot := byID[s]
			for _, dev := range []struct {
				tmpl  topology.Node
				stem  string
				takes bool
				into  map[string]string
			}{{inv.GPU, "u-gpu-", g.takesGPU, gpuOf}, {inv.SSD, "u-ssd-", g.takesSSD, ssdOf}} {
				if !dev.takes {
					continue
				}
				n := dev.tmpl
				n.ID, n.Parent = dev.stem+s, s
				gen, lanes := topology.MinKnown(n.PCIeGen, slot.PCIeGen), topology.MinKnown(n.Lanes, slot.Lanes)
				gbps := topology.PCIeGBps(gen, lanes)
				if gbps == 0 {
					gbps = topology.PCIeGBps(3, 16)
				}
				u.Nodes = append(u.Nodes, n)
				u.Links = append(u.Links, topology.Link{From: s, To: n.ID, Kind: topology.LinkPCIe, GBps: gbps, PCIeGen: gen, Lanes: lanes})
				dev.into[s] = n.ID
			}
		}
	}
	// Build with one GPU's share per GPU: BuildGraph divides the demand by
	// the GPUs it sees, so give the sink and cache volumes their real
	// values afterwards.
	g, err := BuildGraph(u, tiers)
	if err != nil {
		return nil, err
	}
	f := &fastEvaluator{net: g.Net, src: g.Source, sink: g.Sink, tiers: tiers, nGPU: inv.GPUs, nSSD: inv.SSDs,
		slot: map[string]*slotEdges{}}
	// The first link edge from each node to each other, found once: a
	// scan per lookup made this quadratic in the slots (seconds at 10k).
	linkEdge := map[[2]int]int{}
	for e := 0; e < g.Net.Edges(); e++ {
		k := [2]int{g.Net.From(e), g.Net.To(e)}
		if _, seen := linkEdge[k]; !seen && g.Link[e] >= 0 {
			linkEdge[k] = e
		}
	}
	edgeBetween := func(a, b string) int { return edgeIn(linkEdge, [2]int{g.Node[a], g.Node[b]}) }
	// Each device's sink and storage edges, by id and kind.
	sinkOf := make(map[string]int, len(g.Compute))
	for _, c := range g.Compute {
		sinkOf[c.ID] = c.Edge
	}
	type store struct {
		id   string
		kind StorageKind
	}
	storeOf := make(map[store]int, len(g.Storage))
	for _, st := range g.Storage {
		storeOf[store{st.ID, st.Kind}] = st.Edge
	}
	for _, gr := range groups {
		for _, s := range gr.slots {
			se := &slotEdges{gpuSink: -1, gpuCache: -1, gpuLink: -1, ssdRead: -1, ssdLinks: [2]int{-1, -1}, slotUp: [2]int{-1, -1}}
			parent := byID[s].Parent
			se.slotUp = [2]int{edgeBetween(parent, s), edgeBetween(s, parent)}
			if id, ok := gpuOf[s]; ok {
				se.gpuLink = edgeBetween(s, id)
				se.gpuSink = edgeIn(sinkOf, id)
				se.gpuCache = edgeIn(storeOf, store{id, StorageGPUMem})
			}
			if id, ok := ssdOf[s]; ok {
				se.ssdRead = edgeIn(storeOf, store{id, StorageSSD})
				se.ssdLinks = [2]int{edgeBetween(s, id), edgeBetween(id, s)}
			}
			f.slot[s] = se
		}
	}
	f.base = g.Net.Rates()
	f.baseVol = g.Net.Volumes()
	return f, nil
}

// set switches on the devices of placement p and off all others.
func (f *fastEvaluator) set(p Placement) {
	n := f.net
	D := f.tiers.DemandGB
	n.SetRates(f.base)
	n.SetVolumes(f.baseVol)
	for e := len(f.base); e < n.Edges(); e++ {
		n.SetRate(e, 0) // edges a placement search added for its bounds
	}
	for _, se := range f.slot {
		if se.gpuSink >= 0 {
			n.SetVolume(se.gpuSink, 0)
		}
		if se.gpuCache >= 0 {
			n.SetVolume(se.gpuCache, 0)
		}
		if se.ssdRead >= 0 {
			n.SetRate(se.ssdRead, 0)
		}
	}
	for _, s := range p.GPUSlots {
		se := f.slot[s]
		n.SetVolume(se.gpuSink, D/float64(len(p.GPUSlots)))
		if se.gpuCache >= 0 {
			n.SetVolume(se.gpuCache, f.tiers.GPUCacheShare*D/float64(len(p.GPUSlots)))
		}
	}
	for _, s := range p.SSDSlots {
		// No read edge when the tiers leave the SSDs nothing to serve.
		if se := f.slot[s]; se.ssdRead >= 0 {
			n.SetRate(se.ssdRead, f.base[se.ssdRead])
		}
	}
}

// times returns the least epoch IO time of placement p and, when fabric is
// set, the time with the SSDs unbounded (fabric headroom; else 0).
func (f *fastEvaluator) times(p Placement, fabric bool) (secs, fabricSecs float64, err error) {
	n := f.net
	D := f.tiers.DemandGB
	f.set(p)
	secs, err = n.LeastTime(f.src, f.sink, D)
	if err != nil || !fabric {
		return secs, 0, err
	}
	// Fabric headroom: the SSDs read at once over links of their own.
	f.unboundSSDs(p)
	fabricSecs, err = n.LeastTime(f.src, f.sink, D)
	if err != nil {
		return 0, 0, err
	}
	return secs, fabricSecs, nil
}

// unboundSSDs lifts the rates of p's SSDs and their private links (set
// must have run for p).
func (f *fastEvaluator) unboundSSDs(p Placement) {
	for _, s := range p.SSDSlots {
		se := f.slot[s]
		for _, e := range [...]int{se.ssdRead, se.ssdLinks[0], se.ssdLinks[1], se.slotUp[0], se.slotUp[1]} {
			if e >= 0 {
				f.net.SetRate(e, fastUnbounded)
			}
		}
	}
}

// edgeIn is the edge m holds for k, -1 when none.
func edgeIn[K comparable](m map[K]int, k K) int {
	if e, ok := m[k]; ok {
		return e
	}
	return -1
}
