package tpc

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/gnnplan/gnnplan/profiles"
	"github.com/gnnplan/gnnplan/topology"
)

// TestDecidedCacheMatchesAGrid is issue 35's first line for the CPU
// cache: for the embedded machines and workloads, the TPC of recommend's
// plan is within 0.5% of the best a grid over the cache size finds (each
// grid point with its own best placement, PredictSetup), over the three
// hardware choices recommend ranks first.
func TestDecidedCacheMatchesAGrid(t *testing.T) {
	if testing.Short() {
		t.Skip("a grid of placement searches")
	}
	const points, splits = 24, 4
	for _, machine := range []string{"moment-a", "moment-b", "hyperion-a"} {
		for _, workload := range []string{"igb-hom", "ogbn-papers100M", "uk-2014"} {
			t.Run(machine+"/"+workload, func(t *testing.T) {
				req := request(t, machine, workload, 80000)
				rec := recommend(t, req)
				grid, at := 0.0, ""
				for _, o := range rec.Options[:min(2, len(rec.Options))] {
					hw := o.Hardware
					top := topologyShareCap(req.Workload, hw, req.Assumptions)
					for j := 0; j <= splits; j++ {
						a := req.Assumptions
						a.GPUTopologyShare = top * float64(j) / splits
						xmax := maxCPUCacheFraction(req.Workload, hw, hostMemoryGiB(req.Machine, req.Catalog.Host)+hw.AddedMemoryGiB(), a)
						for i := 0; i <= points; i++ {
							a.CPUCacheFraction = xmax * float64(i) / points
							p, err := PredictSetup(context.Background(), Setup{Machine: req.Machine, Catalog: req.Catalog, Workload: req.Workload,
								GPU: o.GPU.Key, SSD: o.SSD.Key, GPUs: o.GPUs, SSDs: o.SSDs, DIMM: o.DIMM.Key, DIMMs: o.DIMMs, Layout: LayoutBest, Assumptions: a})
							if err != nil {
								t.Fatal(err)
							}
							if p.TPC > grid {
								grid, at = p.TPC, fmt.Sprintf("%s at cache %.3f, GPU topology share %.3f", o.label(), a.CPUCacheFraction, a.GPUTopologyShare)
							}
						}
					}
				}
				if rec.Best.TPC < 0.995*grid {
					t.Errorf("recommend's TPC %.4g (%s at cache %.3f, GPU topology share %.3f) is below the grid's %.4g (%s) by more than 0.5%%",
						rec.Best.TPC, rec.Best.label(), rec.Best.Decisions.CPUCacheFraction, rec.Best.Decisions.GPUTopologyShare, grid, at)
				}
				t.Logf("recommend %.5g (topology share %.3f), grid %.5g (%s)", rec.Best.TPC, rec.Best.Decisions.GPUTopologyShare, grid, at)
			})
		}
	}
}

// TestDRAMIsBoughtWhenItPays is issue 35's second line: host memory is a
// tier a plan may buy. On hyperion-a (16 DDR4 slots a socket, 12 used)
// with one SSD, which binds the epoch, DIMMs at a dollar each are bought
// and serve more of the epoch from memory; at $20,000 each none are; the
// hint names memory when it is the best next dollar.
func TestDRAMIsBoughtWhenItPays(t *testing.T) {
	run := func(price float64) *Recommendation {
		req := request(t, "hyperion-a", "igb-hom", 80000)
		req.GPUModels, req.SSDModels = []string{"a100-80gb-pcie"}, []string{"p5510-3.84tb"}
		req.MinGPUs, req.MaxGPUs = 1, 1
		req.SSDCounts = []int{1}
		// Online reads keep the one SSD the bound, where memory pays;
		// packed batches read at the drive's sequential rate and leave
		// the GPU the bound.
		req.Loaders = []string{LoaderOnline}
		for i := range req.Catalog.DIMMs {
			req.Catalog.DIMMs[i].PriceUSD = price
		}
		return recommend(t, req)
	}
	cheap := run(1)
	if cheap.Best.DIMMs == 0 || cheap.Best.DIMM.Type != "ddr4" {
		t.Fatalf("DIMMs at $1: best %s with %d DIMMs, want memory bought", cheap.Best.label(), cheap.Best.DIMMs)
	}
	dear := run(20000)
	if dear.Best.DIMMs != 0 || dear.Best.SSDs == 0 {
		t.Errorf("DIMMs at $20,000: best %s with %d DIMMs, want none and SSDs", dear.Best.label(), dear.Best.DIMMs)
	}
	if cheap.Best.TPC <= dear.Best.TPC || cheap.Best.Shares.HostShare <= dear.Best.Shares.HostShare {
		t.Errorf("cheap memory: TPC %.4g, host share %.2f; dear: %.4g, %.2f; want more of both", cheap.Best.TPC, cheap.Best.Shares.HostShare, dear.Best.TPC, dear.Best.Shares.HostShare)
	}
	// Where the budget stops short of memory and an SSD costs more than
	// what it adds, the next dollar is memory, and the hint says so.
	req := request(t, "hyperion-a", "igb-hom", 0)
	req.GPUModels, req.SSDModels = []string{"a100-80gb-pcie"}, []string{"p5510-3.84tb"}
	req.MinGPUs, req.MaxGPUs = 1, 1
	req.SSDCounts = []int{1}
	req.Loaders = []string{LoaderOnline}
	for i := range req.Catalog.DIMMs {
		req.Catalog.DIMMs[i].PriceUSD = 1
	}
	for i := range req.Catalog.SSDs {
		req.Catalog.SSDs[i].PriceUSD = 20000
	}
	req.BudgetUSD = dear.Best.CostUSD - 308 + 20000 + 0.5 // one $20,000 SSD, no memory
	short := recommend(t, req)
	if short.Best.DIMMs != 0 || !strings.Contains(short.Hint.Next, "DDR4") || !(short.Hint.TPCGain > 0) {
		t.Errorf("budget short of memory: best %s with %d DIMMs, hint %q (TPC %+.1f%%); want no memory bought and the hint naming DDR4 DIMMs",
			short.Best.label(), short.Best.DIMMs, short.Hint.Next, 100*short.Hint.TPCGain)
	}
	t.Logf("$1 DIMMs: %s, %d x %s, TPC %.4g, host share %.2f; $20,000: %s, TPC %.4g, host share %.2f; hints %q / %q",
		cheap.Best.label(), cheap.Best.DIMMs, cheap.Best.DIMM.Key, 1000*cheap.Best.TPC, cheap.Best.Shares.HostShare,
		dear.Best.label(), 1000*dear.Best.TPC, dear.Best.Shares.HostShare, cheap.Hint.Next, dear.Hint.Next)
}

// TestMeasuredHotnessReplacesThePowerLaw is issue 35's skew line: with
// place's hotness counts, the shares come from them, not x^a. A hotness
// where a tenth of the vertices get every access caches every access in
// a tenth; a uniform one gives a cache of a tenth a tenth of them.
func TestMeasuredHotnessReplacesThePowerLaw(t *testing.T) {
	const n = 10000
	skewed, uniform := make([]uint32, n), make([]uint32, n)
	for v := range n {
		uniform[v] = 7
		if v%10 == 3 {
			skewed[v] = 50
		}
	}
	for _, tc := range []struct {
		name   string
		counts []uint32
		x      float64
		want   float64
	}{
		{"skewed, the hot tenth", skewed, 0.1, 1},
		{"skewed, half the hot tenth", skewed, 0.05, 0.5},
		{"uniform, a tenth", uniform, 0.1, 0.1},
		{"uniform, all", uniform, 1, 1},
		{"uniform, none", uniform, 0, 0},
	} {
		a := DefaultAssumptions()
		a.HotnessCurve = HotnessCurve(tc.counts, HotnessCurvePoints)
		if got := a.hitShare(tc.x); math.Abs(got-tc.want) > 5e-3 { // the curve keeps 1,025 points
			t.Errorf("%s: hit share at %.2f = %.4f, want %.4f", tc.name, tc.x, got, tc.want)
		}
	}
	if HotnessCurve(make([]uint32, 5), HotnessCurvePoints) != nil {
		t.Error("no access counted gave a curve")
	}
	// In a plan: the uniform hotness leaves more to the SSDs than x^0.26,
	// on the same hardware and caches.
	req := request(t, "moment-b", "igb-hom", 80000)
	req.GPUModels, req.SSDModels = []string{"l40s-48gb-pcie"}, []string{"980pro-1tb"}
	req.MinGPUs, req.MaxGPUs, req.SSDCounts, req.CPUCacheGiB = 4, 4, []int{8}, 100
	law := recommend(t, req)
	big := make([]uint32, req.Workload.Vertices/1000)
	for i := range big {
		big[i] = 1
	}
	req.Assumptions.HotnessCurve = HotnessCurve(big, HotnessCurvePoints)
	flat := recommend(t, req)
	if !(flat.Best.Shares.SSDShare > law.Best.Shares.SSDShare) {
		t.Errorf("SSD share %.2f with a uniform hotness, %.2f with x^0.26: want more from the SSDs without skew", flat.Best.Shares.SSDShare, law.Best.Shares.SSDShare)
	}
}

// TestHintPricesEachNextPurchase: the hint prices one more SSD, the next
// memory purchase and one more GPU beside the best plan, each with what
// it adds, so a review answers "more RAM, more SSDs or another GPU?".
func TestHintPricesEachNextPurchase(t *testing.T) {
	rec := recommend(t, request(t, "moment-b", "igb-hom", 80000))
	if len(rec.Hint.Steps) != 3 {
		t.Fatalf("%d next steps, want 3: %+v", len(rec.Hint.Steps), rec.Hint.Steps)
	}
	want := []string{"one more " + rec.Best.SSD.Key, "DDR5", "one more " + rec.Best.GPU.Key}
	for i, st := range rec.Hint.Steps {
		if !strings.Contains(st.What, want[i]) {
			t.Errorf("step %d is %q, want %q", i, st.What, want[i])
		}
		if st.Why == "" && !(st.AddedUSD > 0) {
			t.Errorf("step %q adds $%v, want its price", st.What, st.AddedUSD)
		}
	}
	// Moment-b's default plan is bound by the GPUs' links: one more SSD
	// adds no throughput (the refined placement, not a worse one).
	if g := rec.Hint.Steps[0].ThroughputGain; math.Abs(g) > 0.01 {
		t.Errorf("one more SSD: %+.1f%% throughput, want about none on a GPU-link-bound plan", 100*g)
	}
}

// TestGPUCachesTopologyWhenItServesMore: the GPUs' memory caches the
// topology's hottest part where a cached byte of it serves more of the
// epoch than the last feature row would: a graph of narrow (16-byte)
// rows, whose rows fill less than the GPUs' room, and a large topology.
// igb-hom's 4 KiB rows keep every GPU byte for rows. The split decided is
// within 0.5% of a grid over the split, with the CPU cache as decided.
func TestGPUCachesTopologyWhenItServesMore(t *testing.T) {
	narrow := Workload{Name: "narrow", Vertices: 1_500_000_000, Edges: 15_000_000_000, FeatureDim: 4, FeatureBytes: 4, Classes: 10,
		TrainFraction: 0.01, Model: ModelGraphSAGE, Hidden: 64, Heads: 1, Fanouts: []int{25, 10}, BatchSize: 1000}
	// Degree 2 and 24 GB of rows: a cached byte of topology serves more
	// than the last rows that fit would.
	sparse := narrow
	sparse.Name, sparse.Vertices, sparse.Edges = "sparse", 6_000_000_000, 12_000_000_000
	wide, err := BuiltinWorkload("igb-hom")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		w        Workload
		topology bool
		interior bool // rows and topology both partly cached
	}{{narrow, true, false}, {sparse, true, true}, {wide, false, false}} {
		t.Run(c.w.Name, func(t *testing.T) {
			req := request(t, "moment-b", "igb-hom", 1e6)
			req.Workload = c.w
			req.GPUModels, req.SSDModels = []string{"l40s-48gb-pcie"}, []string{"p5510-3.84tb"}
			req.MinGPUs, req.MaxGPUs, req.SSDCounts = 2, 2, []int{4}
			rec := recommend(t, req)
			o := rec.Best
			gl := o.Shares.GPU
			if got := gl.TopologyCacheGiB > 0; got != c.topology {
				t.Fatalf("topology cached %.1f GiB of %.1f GiB room (share %.3f): want cached %v; %s",
					gl.TopologyCacheGiB, gl.CacheRoomGiB, o.Decisions.GPUTopologyShare, c.topology, o.Decisions.GPUWhy)
			}
			feat, _ := c.w.DatasetBytes()
			if c.interior && !(gl.FeatureCacheGiB < float64(feat)/(1<<30) && gl.TopologyHit < 1) {
				t.Errorf("rows %.1f GiB of %.1f, topology hit %.2f: want both partly cached", gl.FeatureCacheGiB, float64(feat)/(1<<30), gl.TopologyHit)
			}
			if gl.WorkingSet.TotalGiB <= gl.WorkingSet.ContextGiB || gl.CacheRoomGiB+gl.WorkingSet.TotalGiB > o.GPU.MemoryGiB+1e-9 {
				t.Errorf("GPU layout %+v does not add up to the %.0f GiB GPU", gl, o.GPU.MemoryGiB)
			}
			top := topologyShareCap(req.Workload, o.Hardware, req.Assumptions)
			grid, at := 0.0, 0.0
			for j := 0; j <= 40; j++ {
				a := req.Assumptions
				a.CPUCacheFraction = o.Decisions.CPUCacheFraction
				a.GPUTopologyShare = top * float64(j) / 40
				p, err := PredictSetup(context.Background(), Setup{Machine: req.Machine, Catalog: req.Catalog, Workload: req.Workload,
					GPU: o.GPU.Key, SSD: o.SSD.Key, GPUs: o.GPUs, SSDs: o.SSDs, Layout: LayoutBest, Assumptions: a})
				if err != nil {
					t.Fatal(err)
				}
				if p.TPC > grid {
					grid, at = p.TPC, a.GPUTopologyShare
				}
			}
			if o.TPC < 0.995*grid {
				t.Errorf("TPC %.5g at topology share %.3f, the grid's %.5g at %.3f", o.TPC, o.Decisions.GPUTopologyShare, grid, at)
			}
			t.Logf("%s: %s", c.w.Name, o.Decisions.GPUWhy)
		})
	}
}

// TestDRAMChoicesKeepChannelsBalanced: memory to buy fills every channel
// of every socket to the same number of modules, never past the CPU's
// maximum, and is offered only where the machine describes its slots.
func TestDRAMChoicesKeepChannelsBalanced(t *testing.T) {
	cat := profiles.DefaultCatalog()
	socket := func(slots, channels, installed int, typ string, memGiB, maxGiB float64) topology.Node {
		return topology.Node{Kind: topology.KindSocket, DIMMSlots: slots, MemoryChannels: channels, DIMMs: installed,
			MemoryType: typ, MemoryGiB: memGiB, MaxMemoryGiB: maxGiB}
	}
	for _, c := range []struct {
		name    string
		sockets []topology.Node
		want    []int // modules added per socket, over the catalog's DIMMs of the type
		maxGiB  float64
	}{
		{"two DIMMs a channel from 12 of 16", []topology.Node{socket(16, 8, 12, "ddr4", 384, 0), socket(16, 8, 12, "ddr4", 384, 0)}, []int{4}, 0},
		{"one a channel from empty", []topology.Node{socket(12, 12, 0, "ddr5", 0, 0)}, []int{12}, 0},
		{"from one a channel", []topology.Node{socket(16, 8, 8, "ddr5", 256, 0), socket(16, 8, 8, "ddr5", 256, 0)}, []int{8}, 0},
		{"channels unknown: half or all the free slots", []topology.Node{socket(16, 0, 10, "ddr4", 320, 0)}, []int{3, 6}, 0},
		{"capped by the CPU's maximum", []topology.Node{socket(16, 8, 8, "ddr5", 256, 1024)}, []int{8}, 1024},
		{"sockets populated differently", []topology.Node{socket(16, 8, 8, "ddr5", 256, 0), socket(16, 8, 12, "ddr5", 384, 0)}, nil, 0},
		{"no slots described", []topology.Node{{Kind: topology.KindSocket, MemoryGiB: 256}}, nil, 0},
		{"full", []topology.Node{socket(16, 8, 16, "ddr4", 512, 0)}, nil, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := &topology.Machine{Name: c.name, Nodes: c.sockets}
			for i := range m.Nodes {
				m.Nodes[i].ID = fmt.Sprintf("socket%d", i)
			}
			got := dramChoices(m, cat)
			typ := c.sockets[0].MemoryType
			var want []string
			for _, d := range cat.DIMMs {
				for _, per := range c.want {
					if d.Type != typ || c.maxGiB > 0 && c.sockets[0].MemoryGiB+float64(per)*d.CapacityGiB > c.maxGiB {
						continue
					}
					want = append(want, fmt.Sprintf("%d x %s", per*len(c.sockets), d.Key))
				}
			}
			var have []string
			for _, h := range got {
				have = append(have, fmt.Sprintf("%d x %s", h.DIMMs, h.DIMM.Key))
			}
			if strings.Join(have, ", ") != strings.Join(want, ", ") {
				t.Errorf("choices %q, want %q", have, want)
			}
			if c.maxGiB > 0 && len(have) == len(cat.DIMMs) {
				t.Errorf("the CPU's maximum left out no choice")
			}
		})
	}
}

// TestTopologySpillsToTheSSDs: a topology larger than host memory is read
// from the SSDs in part, whole blocks at a time, instead of being assumed
// in memory; the share is at least what memory cannot hold and within
// 0.5% of a grid over it. Where the topology fits, memory holds it all.
func TestTopologySpillsToTheSSDs(t *testing.T) {
	big := Workload{Name: "big-topology", Vertices: 4_000_000_000, Edges: 80_000_000_000, FeatureDim: 128, FeatureBytes: 4, Classes: 10,
		TrainFraction: 0.01, Model: ModelGraphSAGE, Hidden: 256, Heads: 1, Fanouts: []int{25, 10}, BatchSize: 8000}
	small, err := BuiltinWorkload("igb-hom")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		w     Workload
		spill bool
	}{{big, true}, {small, false}} {
		t.Run(c.w.Name, func(t *testing.T) {
			req := request(t, "moment-b", "igb-hom", 1e6)
			req.Workload = c.w
			req.GPUModels, req.SSDModels = []string{"l40s-48gb-pcie"}, []string{"pm1743-3.84tb"}
			req.MinGPUs, req.MaxGPUs, req.SSDCounts = 4, 4, []int{8}
			req.Catalog.DIMMs = nil // the memory as installed
			rec := recommend(t, req)
			o := rec.Best
			host := hostMemoryGiB(req.Machine, req.Catalog.Host)
			least := leastTopologyOnSSD(c.w, o.Hardware, host, req.Assumptions)
			u := o.Decisions.TopologyOnSSDShare
			if (u > 0) != c.spill || u < least-1e-9 || (o.Shares.SSDTopologyGB > 0) != c.spill {
				t.Fatalf("topology on the SSDs %.3f (least %.3f), %.0f GB of blocks: want a spill %v; %s",
					u, least, o.Shares.SSDTopologyGB, c.spill, o.Decisions.TopologyWhy)
			}
			if !c.spill {
				return
			}
			grid, at := 0.0, 0.0
			for j := 0; j <= 20; j++ {
				a := req.Assumptions
				a.GPUTopologyShare = o.Decisions.GPUTopologyShare
				a.TopologyOnSSDShare = least + (1-least)*float64(j)/20
				hw := Hardware{GPU: o.GPU, GPUs: o.GPUs, SSD: o.SSD, SSDs: o.SSDs}
				a.CPUCacheFraction = maxCPUCacheFraction(c.w, hw, host, a)
				p, err := PredictSetup(context.Background(), Setup{Machine: req.Machine, Catalog: req.Catalog, Workload: c.w,
					GPU: o.GPU.Key, SSD: o.SSD.Key, GPUs: o.GPUs, SSDs: o.SSDs, Layout: LayoutBest, Assumptions: a})
				if err != nil {
					t.Fatal(err)
				}
				if p.TPC > grid {
					grid, at = p.TPC, a.TopologyOnSSDShare
				}
			}
			if o.TPC < 0.995*grid {
				t.Errorf("TPC %.5g with %.3f of the topology on the SSDs, the grid's %.5g at %.3f", o.TPC, u, grid, at)
			}
			t.Logf("%s", o.Decisions.TopologyWhy)
		})
	}
}
