package placement

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/gnnplan/gnnplan/topology"
)

// ReportSchemaVersion versions the placement report JSON.
const ReportSchemaVersion = 1

// Report is the machine-readable result of a placement search
// (`gnnplan placements -o json`).
type Report struct {
	SchemaVersion int    `json:"schema_version"`
	Machine       string `json:"machine"`
	GPUs          int    `json:"gpus"`
	SSDs          int    `json:"ssds"`
	GPUModel      string `json:"gpu_model"`
	SSDModel      string `json:"ssd_model"`
	Tiers         struct {
		DemandGB      float64 `json:"demand_GB"`
		HostShare     float64 `json:"host_share"`
		GPUCacheShare float64 `json:"gpu_cache_share"`
		HostMemGBps   float64 `json:"host_mem_GBps"`
		SSDReadGBps   float64 `json:"ssd_read_GBps"`
	} `json:"tiers"`
	RawCandidates      float64 `json:"raw_candidates"`
	DistinctCandidates int     `json:"distinct_candidates"`
	// Candidates are best first.
	Candidates []ReportCandidate `json:"candidates"`
	// Classic maps "a".."d" to the rank of Moment's classic placements.
	Classic map[string]int `json:"classic,omitempty"`
	// InstalledRank is the rank of the placement the machine was built
	// with (0: not among the kept ones); absent when it was not evaluated.
	InstalledRank *int   `json:"installed_rank,omitempty"`
	ClassicNote   string `json:"classic_note,omitempty"`
}

// ReportCandidate is one ranked placement.
type ReportCandidate struct {
	Rank    int    `json:"rank"`
	Classic string `json:"classic,omitempty"`
	// Installed marks the placement the machine was built with.
	Installed bool `json:"installed,omitempty"`
	// Devices maps each device id (gpu0.., nvme0..) to its slot id.
	Devices map[string]string `json:"devices"`
	// Where maps each device id to a readable location: the slot's label
	// and the switch or root complex it hangs under.
	Where         map[string]string  `json:"where"`
	PerGPUGBps    map[string]float64 `json:"per_gpu_GBps"`
	AggregateGBps float64            `json:"aggregate_GBps"`
	FabricGBps    float64            `json:"fabric_GBps"`
	EpochIOSecs   float64            `json:"epoch_io_s"`
	// VsBest is the epoch IO time over the best placement's (1 for the best).
	VsBest      float64          `json:"vs_best"`
	Traffic     []StorageTraffic `json:"storage_traffic"`
	Bottlenecks []Bottleneck     `json:"bottlenecks"`
}

// Report builds the report of the top n candidates (all when n <= 0),
// always including the classic placements.
func (r *SearchResult) Report(n int) (*Report, error) {
	// Devices the search did not move (not in a slot) are in the machine too.
	rep := &Report{SchemaVersion: ReportSchemaVersion, Machine: r.Machine.Name,
		GPUs: r.Inventory.GPUs + r.Machine.Count(topology.KindGPU), SSDs: r.Inventory.SSDs + r.Machine.Count(topology.KindNVMe),
		GPUModel: deviceLabel(r.Inventory.GPU), SSDModel: deviceLabel(r.Inventory.SSD),
		RawCandidates: r.Raw, DistinctCandidates: r.Distinct, ClassicNote: r.ClassicNote}
	t := r.Tiers
	rep.Tiers.DemandGB, rep.Tiers.HostShare, rep.Tiers.GPUCacheShare = t.DemandGB, t.HostShare, t.GPUCacheShare
	rep.Tiers.HostMemGBps, rep.Tiers.SSDReadGBps = t.HostMemGBps, t.SSDReadGBps
	if len(r.Classic) > 0 {
		rep.Classic = map[string]int{}
		for name, c := range r.Classic {
			rep.Classic[name] = c.Rank
		}
	}
	if r.Installed != nil {
		rank := r.Installed.Rank
		rep.InstalledRank = &rank
	}
	for _, c := range r.Listed(n) {
		rc, err := r.reportCandidate(c)
		if err != nil {
			return nil, err
		}
		rep.Candidates = append(rep.Candidates, rc)
	}
	return rep, nil
}

// Listed returns the top n candidates (all kept when n <= 0), then the
// classic placements ranked below them or not kept (Rank 0), in name order,
// then the installed placement when none of those is it.
func (r *SearchResult) Listed(n int) []*Candidate {
	var out []*Candidate
	for _, c := range r.Candidates {
		if n <= 0 || c.Rank <= n || c.Classic != "" || c == r.Installed {
			out = append(out, c)
		}
	}
	for _, name := range ClassicNames {
		if c := r.Classic[name]; c != nil && c.Rank == 0 {
			out = append(out, c)
		}
	}
	if c := r.Installed; c != nil && c.Rank == 0 && c.Classic == "" {
		out = append(out, c)
	}
	return out
}

// VsBest is c's epoch IO time over the best placement's: how much longer
// an epoch's reads take than they would in the best placement found.
func (r *SearchResult) VsBest(c *Candidate) float64 {
	if len(r.Candidates) == 0 || r.Candidates[0].Seconds <= 0 {
		return math.NaN()
	}
	return c.Seconds / r.Candidates[0].Seconds
}

func deviceLabel(n topology.Node) string {
	if n.Model != "" {
		return n.Model
	}
	return n.Name
}

func (r *SearchResult) reportCandidate(c *Candidate) (ReportCandidate, error) {
	if _, err := r.Detail(c); err != nil {
		return ReportCandidate{}, err
	}
	rc := ReportCandidate{Rank: c.Rank, Classic: c.Classic, Devices: map[string]string{}, Where: map[string]string{},
		PerGPUGBps: map[string]float64{}, AggregateGBps: round6(c.Eval.AggregateGBps), FabricGBps: round6(c.FabricGBps), EpochIOSecs: round6(c.Eval.EpochIOSeconds),
		Bottlenecks: c.Eval.Bottlenecks, Installed: c == r.Installed}
	if v := r.VsBest(c); !math.IsNaN(v) {
		rc.VsBest = round6(v)
	}
	for i, s := range c.Placement.GPUSlots {
		id := fmt.Sprintf("gpu%d", i)
		rc.Devices[id], rc.Where[id] = s, SlotLocation(r.Machine, s)
	}
	for i, s := range c.Placement.SSDSlots {
		id := fmt.Sprintf("nvme%d", i)
		rc.Devices[id], rc.Where[id] = s, SlotLocation(r.Machine, s)
	}
	for _, g := range c.Eval.PerGPU {
		rc.PerGPUGBps[g.ID] = round6(g.GBps)
	}
	for _, tr := range c.Eval.Traffic {
		tr.GB, tr.GBps = round6(tr.GB), round6(tr.GBps)
		rc.Traffic = append(rc.Traffic, tr)
	}
	return rc, nil
}

func round6(v float64) float64 { return math.Round(v*1e6) / 1e6 }

// SlotLocation names a slot for people: "SW1 slot 2 (PCIe switch 1)".
func SlotLocation(m *topology.Machine, slotID string) string {
	s := m.Node(slotID)
	if s == nil {
		return slotID
	}
	label := s.Label
	if label == "" {
		label = slotID
	}
	if p := m.Node(s.Parent); p != nil {
		name := p.Name
		if name == "" {
			name = p.ID
		}
		return label + " (" + name + ")"
	}
	return label
}

// Summary describes where a candidate puts its devices, counting them per
// switch or root complex: "GPUs: sw0 2, sw1 2; SSDs: sw0 2, sw1 3, rp1 3".
func (r *SearchResult) Summary(c *Candidate) (gpus, ssds string) {
	return r.countByParent(c.Placement.GPUSlots), r.countByParent(c.Placement.SSDSlots)
}

func (r *SearchResult) countByParent(slots []string) string {
	counts := map[string]int{}
	for _, s := range slots {
		if n := r.Machine.Node(s); n != nil {
			counts[n.Parent]++
		}
	}
	var parents []string
	for p := range counts {
		parents = append(parents, p)
	}
	sort.Slice(parents, func(i, j int) bool { return topology.NaturalLess(parents[i], parents[j]) })
	var parts []string
	for _, p := range parents {
		parts = append(parts, fmt.Sprintf("%s %d", p, counts[p]))
	}
	return strings.Join(parts, ", ")
}

// BottleneckSummary shortens a bottleneck list for a table cell: links
// with labels by label, SSD uplinks and read rates counted.
func BottleneckSummary(bs []Bottleneck) string {
	var parts []string
	ssdLinks, ssdReads := 0, 0
	for _, b := range bs {
		switch {
		case b.Kind == "ssd_read":
			ssdReads++
		case b.FromKind == topology.KindNVMe:
			ssdLinks++
		case b.Label != "":
			parts = append(parts, fmt.Sprintf("%s->%s (%s, %g GB/s)", b.From, b.To, b.Label, b.GBps))
		default:
			parts = append(parts, fmt.Sprintf("%s->%s (%g GB/s)", b.From, b.To, b.GBps))
		}
	}
	if ssdLinks > 0 {
		parts = append(parts, fmt.Sprintf("%d SSD link(s)", ssdLinks))
	}
	if ssdReads > 0 {
		parts = append(parts, fmt.Sprintf("%d SSD read rate(s)", ssdReads))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, "; ")
}
