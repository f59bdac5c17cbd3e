package ddak

import (
	"fmt"
	"math"
	"sort"

	"github.com/gnnplan/gnnplan/ddak/layout"

	"github.com/gnnplan/gnnplan/maxflow/placement"
	"github.com/gnnplan/gnnplan/profiles"
	"github.com/gnnplan/gnnplan/topology"
	"github.com/gnnplan/gnnplan/tpc"
)

// Bin is one place feature rows can live (package layout).
type Bin = layout.Bin

// tierRank orders the hierarchy GPU > CPU > SSD; unknown kinds get -1.
func tierRank(k placement.StorageKind) int {
	switch k {
	case placement.StorageGPUMem:
		return 0
	case placement.StorageHostMem:
		return 1
	case placement.StorageSSD:
		return 2
	}
	return -1
}

// validateBins checks bins and that together they hold rows rows.
func validateBins(bins []Bin, rows int64) error {
	if len(bins) == 0 {
		return &topology.InputError{Field: "bins", Msg: "no bins to place rows in"}
	}
	if len(bins) > layout.MaxBins {
		return &topology.InputError{Field: "bins", Msg: fmt.Sprintf("%d bins, at most %d (bin ids are one byte per vertex)", len(bins), layout.MaxBins)}
	}
	var hold int64
	for i, b := range bins {
		field := fmt.Sprintf("bins[%d]", i)
		switch {
		case tierRank(b.Kind) < 0:
			return &topology.InputError{Field: field + ".kind", Msg: fmt.Sprintf("%q (valid: %s, %s, %s)", b.Kind, placement.StorageGPUMem, placement.StorageHostMem, placement.StorageSSD)}
		case b.CapacityRows < 0:
			return &topology.InputError{Field: field + ".capacity_rows", Msg: fmt.Sprintf("%d (valid: 0 or more)", b.CapacityRows)}
		case math.IsNaN(b.TargetShare) || math.IsInf(b.TargetShare, 0) || b.TargetShare < 0:
			return &topology.InputError{Field: field + ".target_share", Msg: fmt.Sprintf("%v (valid: a share, 0 or more)", b.TargetShare)}
		}
		hold += usableRows(b)
		if hold < 0 { // overflow: certainly enough
			hold = math.MaxInt64
		}
	}
	if hold < rows {
		h, r := countsPair(hold, rows)
		return &topology.InputError{Field: "bins", Msg: fmt.Sprintf("bins hold %s rows, dataset has %s", h, r)}
	}
	return nil
}

// usableRows is the capacity a layout can use: rows within a bin are
// numbered with 32 bits (4 bytes per vertex), so a bin takes at most 2^32
// rows; a larger SSD simply keeps the rest free.
func usableRows(b Bin) int64 { return min(b.CapacityRows, math.MaxUint32+1) }

// countsPair formats two row counts for a message: "1.2 B" and "2.0 B",
// exact when they are small or would print the same.
func countsPair(a, b int64) (string, string) {
	sa, sb := humanCount(a), humanCount(b)
	if sa == sb {
		return fmt.Sprint(a), fmt.Sprint(b)
	}
	return sa, sb
}

func humanCount(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.1f B", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.1f M", float64(n)/1e6)
	}
	return fmt.Sprint(n)
}

// BinOptions are what BinsFromPlan needs beyond the plan.
type BinOptions struct {
	// GPUReserveGiB is GPU memory kept for the model and the sampler; 0
	// takes the plan's assumption (tpc.Assumptions.GPUReserveGiB).
	GPUReserveGiB float64
	// CPUCacheRows is the CPU cache over all sockets, in rows; 0 takes the
	// plan's (tpc.Shares.CPUCacheRows, scaled from the plan's workload to
	// the dataset's row count).
	CPUCacheRows int64
	// SSDCapacityGB is one SSD's capacity (decimal GB); 0 takes the
	// catalog's capacity of the plan's SSD model, or 3840 (the P5510 3.84
	// TB that Moment and Hyperion use) when the model is not in the
	// catalog.
	SSDCapacityGB float64
	// Catalog resolves the plan's GPU and SSD models when the machine's
	// nodes lack memory sizes; nil means profiles.DefaultCatalog().
	Catalog *profiles.Catalog
}

// DefaultSSDCapacityGB is the SSD capacity assumed when neither the options
// nor the catalog give one.
const DefaultSSDCapacityGB = 3840

// BinsFromPlan makes the bins of a plan for a dataset of rows feature rows
// of rowBytes bytes each: one GPU cache per GPU, one CPU cache per socket,
// one bin per SSD, in that order (natural id order within a kind). Only the
// plan's storage nodes (its storage_traffic) become bins.
//
// Capacities: a GPU holds (memory - reserve) / rowBytes rows; the CPU cache
// rows are split evenly over the sockets (the first sockets take the
// remainder); an SSD holds its capacity / rowBytes rows.
//
// Targets. The flow's host-memory traffic includes the graph topology the
// GPUs sample over PCIe (docs/architecture.md section 4), which no feature row serves.
// The topology's share of the epoch is TopologyBytes / (FeatureBytes +
// TopologyBytes) of the plan's per-batch estimate; maxflow/placement splits host
// traffic evenly over the sockets, so each socket's CPU cache target is its
// host traffic minus its even part of the topology bytes. Every target is
// then a share of the feature bytes (all traffic minus topology), which is
// what hotness counts and what a placement can move.
//
// The plan's tpc model replicates the hottest rows into every GPU
// (tpc.Shares), while a layout gives each vertex one bin, so GPU bins hold
// distinct rows: with several GPUs the GPU tier then serves more than its
// target, and the SSD tier less. Both DDAK and the hash baseline fill the GPU
// tier the same way, so comparisons between them are unaffected.
//
// Bins that cannot hold rows return a *topology.InputError ("bins hold 1.2
// B rows, dataset has 2.0 B").
func BinsFromPlan(p *tpc.Plan, rows int64, rowBytes int64, opt BinOptions) ([]Bin, error) {
	if p == nil || p.Machine == nil {
		return nil, &topology.InputError{Field: "plan", Msg: "no plan or no machine in it"}
	}
	if rows < 1 || rowBytes < 1 {
		return nil, &topology.InputError{Field: "dataset", Msg: fmt.Sprintf("%d rows of %d bytes (valid: at least 1 of at least 1 byte)", rows, rowBytes)}
	}
	if len(p.StorageTraffic) == 0 {
		return nil, &topology.InputError{Field: "storage_traffic", Msg: "empty: the plan names no storage node to serve the epoch (write it with `gnnplan recommend --save`)"}
	}
	cat := opt.Catalog
	if cat == nil {
		cat = profiles.DefaultCatalog()
	}
	s, err := planTraffic(p)
	if err != nil {
		return nil, err
	}
	s.splitTopology(p)
	s.capacities(p, rows, opt, cat)
	bins := s.bins(p, rowBytes, cat)
	sort.SliceStable(bins, func(i, j int) bool {
		if ri, rj := tierRank(bins[i].Kind), tierRank(bins[j].Kind); ri != rj {
			return ri < rj
		}
		return topology.NaturalLess(bins[i].ID, bins[j].ID)
	})
	if err := validateBins(bins, rows); err != nil {
		return nil, err
	}
	return bins, nil
}

// binSizing is what BinsFromPlan works out from a plan before it makes
// the bins: the traffic's split into topology and features, and each
// tier's capacity.
type binSizing struct {
	totalGB, featGB                  float64 // all the storage traffic, and its feature rows' part
	gpuTopoGB, hostTopoGB, ssdTopoGB float64 // the topology's reads per tier
	gpus, hosts, ssds                int     // storage nodes per tier
	reserveGiB                       float64 // GPU memory kept from the feature cache (0: the plan's cache)
	cpuRows                          int64   // CPU cache over all sockets
	ssdGB                            float64 // one SSD's capacity
}

// planTraffic checks the plan's storage traffic and sums it, counting the
// host-memory nodes.
func planTraffic(p *tpc.Plan) (*binSizing, error) {
	s := &binSizing{}
	for i, t := range p.StorageTraffic {
		if math.IsNaN(t.GB) || math.IsInf(t.GB, 0) || t.GB < 0 {
			return nil, &topology.InputError{Field: fmt.Sprintf("storage_traffic[%d].GB", i), Msg: fmt.Sprintf("%v (valid: 0 or more)", t.GB)}
		}
		if tierRank(t.Kind) < 0 {
			return nil, &topology.InputError{Field: fmt.Sprintf("storage_traffic[%d].kind", i), Msg: fmt.Sprintf("%q (valid: %s, %s, %s)", t.Kind, placement.StorageGPUMem, placement.StorageHostMem, placement.StorageSSD)}
		}
		if p.Machine.Node(t.ID) == nil {
			return nil, &topology.InputError{Field: fmt.Sprintf("storage_traffic[%d].id", i), Msg: fmt.Sprintf("%q is not a node of the plan's machine", t.ID)}
		}
		s.totalGB += t.GB
		if t.Kind == placement.StorageHostMem {
			s.hosts++
		}
	}
	return s, nil
}

// splitTopology splits the topology's reads over the tiers and leaves the
// rest of the traffic to feature rows.
func (s *binSizing) splitTopology(p *tpc.Plan) {
	est := p.Workload.PerBatch()
	topoFrac := 0.0
	if d := est.FeatureBytes + est.TopologyBytes; d > 0 {
		topoFrac = est.TopologyBytes / d
	}
	topoGB := topoFrac * s.totalGB
	// The GPUs' caches serve the hottest part of the topology's reads,
	// host memory the next, the SSDs the rest in whole blocks (the
	// plan's shares, scaled to the traffic's total); a plan without them
	// has the topology in host memory.
	s.gpuTopoGB, s.hostTopoGB, s.ssdTopoGB = 0.0, topoGB, 0.0
	if sh := p.Prediction.Shares; sh.EpochGB > 0 && sh.GPUTopologyGB+sh.HostTopologyGB+sh.SSDTopologyGB > 0 {
		scale := s.totalGB / sh.EpochGB
		s.gpuTopoGB, s.hostTopoGB, s.ssdTopoGB = sh.GPUTopologyGB*scale, sh.HostTopologyGB*scale, sh.SSDTopologyGB*scale
	}
	for _, t := range p.StorageTraffic {
		switch t.Kind {
		case placement.StorageGPUMem:
			s.gpus++
		case placement.StorageSSD:
			s.ssds++
		}
	}
	if s.gpus == 0 {
		s.gpuTopoGB = 0
	}
	if s.ssds == 0 {
		s.ssdTopoGB = 0
	}
	s.featGB = s.totalGB - s.gpuTopoGB - s.hostTopoGB - s.ssdTopoGB
}

// clampRows turns a capacity in rows into an int64 that cannot wrap: a
// plan's 1e15 GiB is 2^53 rows, not a negative count. Capacities stay what
// the hardware holds, above the dataset's rows included; nothing is
// allocated by them.
func clampRows(x float64) int64 {
	if !(x > 0) {
		return 0
	}
	return int64(min(x, 1<<53))
}

// capacities takes the GPU reserve, the CPU cache and the SSD size from
// the options, else from the plan and the catalog.
func (s *binSizing) capacities(p *tpc.Plan, rows int64, opt BinOptions, cat *profiles.Catalog) {
	// Each GPU's feature cache: what the options keep from it, what the
	// plan's assumptions kept, or what the plan decided.
	s.reserveGiB = opt.GPUReserveGiB
	if s.reserveGiB == 0 {
		s.reserveGiB = p.Assumptions.GPUReserveGiB
	}
	s.cpuRows = opt.CPUCacheRows
	if s.cpuRows == 0 && p.Workload.Vertices > 0 {
		s.cpuRows = clampRows(p.Prediction.Shares.CPUCacheRows / float64(p.Workload.Vertices) * float64(rows))
	}
	s.ssdGB = opt.SSDCapacityGB
	if s.ssdGB <= 0 {
		s.ssdGB = DefaultSSDCapacityGB
		if m, err := cat.SSD(p.Hardware.SSDModel); err == nil && m.CapacityGB > 0 {
			s.ssdGB = m.CapacityGB
		}
	}
}

// bins makes a bin of each storage node that holds feature rows, in the
// plan's order.
func (s *binSizing) bins(p *tpc.Plan, rowBytes int64, cat *profiles.Catalog) []Bin {
	var bins []Bin
	hostSeen := 0
	for _, t := range p.StorageTraffic {
		b := Bin{ID: t.ID, Kind: t.Kind, Socket: socketOf(p.Machine, t.ID)}
		gb := t.GB
		switch t.Kind {
		case placement.StorageGPUMem:
			mem := p.Machine.Node(t.ID).MemoryGiB
			if mem <= 0 {
				if g, err := cat.GPU(p.Hardware.GPUModel); err == nil {
					mem = g.MemoryGiB
				}
			}
			cacheGiB := p.Prediction.Shares.GPU.FeatureCacheGiB
			if s.reserveGiB > 0 {
				cacheGiB = mem - s.reserveGiB
			}
			b.CapacityRows = clampRows(cacheGiB * (1 << 30) / float64(rowBytes))
			gb = math.Max(0, gb-s.gpuTopoGB/float64(s.gpus))
		case placement.StorageHostMem:
			b.CapacityRows = s.cpuRows / int64(s.hosts)
			if int64(hostSeen) < s.cpuRows%int64(s.hosts) {
				b.CapacityRows++
			}
			hostSeen++
			gb -= s.hostTopoGB / float64(s.hosts)
			// What the flow sends a host beyond its topology, less
			// rounding: a residue of a billionth of the epoch is none.
			if gb <= 1e-9*s.totalGB {
				gb = 0
			}
		case placement.StorageSSD:
			b.CapacityRows = clampRows(s.ssdGB * 1e9 / float64(rowBytes))
			gb = math.Max(0, gb-s.ssdTopoGB/float64(s.ssds))
		}
		if s.featGB > 0 {
			b.TargetShare = gb / s.featGB
		}
		if b.CapacityRows == 0 && b.TargetShare == 0 {
			continue // a storage node that serves only topology
		}
		bins = append(bins, b)
	}
	return bins
}

// socketOf is the NUMA id of the socket above node id, -1 when unknown.
func socketOf(m *topology.Machine, id string) int {
	s := m.Socket(id)
	if s == nil || s.NUMANode == nil {
		return -1
	}
	return *s.NUMANode
}

// GPUSockets returns the NUMA id of the socket above each GPU of the plan
// (gpu0, gpu1, ... in natural order), the compute nodes Evaluate splits
// each vertex's reads over. A plan without GPUs trains on its sockets, so
// their own ids are returned.
func GPUSockets(p *tpc.Plan) []int {
	if p == nil || p.Machine == nil {
		return nil
	}
	ids := p.Machine.SortedKind(topology.KindGPU)
	if len(ids) == 0 {
		ids = p.Machine.SortedKind(topology.KindSocket)
	}
	out := make([]int, len(ids))
	for i, id := range ids {
		out[i] = socketOf(p.Machine, id)
	}
	return out
}
