package tpc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gnnplan/gnnplan/profiles"
	"github.com/gnnplan/gnnplan/topology"
	"github.com/gnnplan/gnnplan/topology/importer"
)

func request(t testing.TB, machine, workload string, budget float64) Request {
	t.Helper()
	m, err := profiles.Machine(machine)
	if err != nil {
		t.Fatal(err)
	}
	w, err := BuiltinWorkload(workload)
	if err != nil {
		t.Fatal(err)
	}
	return Request{Machine: m, Workload: w, BudgetUSD: budget, Catalog: profiles.DefaultCatalog(), Assumptions: DefaultAssumptions()}
}

func recommend(t testing.TB, req Request) *Recommendation {
	t.Helper()
	rec, err := Recommend(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// TestTCOMatchesThePapers prices the papers' machines with the catalog
// (Hyperion Table I, Moment section 4).
func TestTCOMatchesThePapers(t *testing.T) {
	c := profiles.DefaultCatalog()
	gpu := func(k string) profiles.GPUModel { g, _ := c.GPU(k); return g }
	ssd := func(k string) profiles.SSDModel { s, _ := c.SSD(k); return s }
	cases := []struct {
		name string
		hw   Hardware
		want float64
	}{
		{"Hyperion machine A: A100 80GB + 12 P5510", Hardware{GPU: gpu("a100-80gb-pcie"), GPUs: 1, SSD: ssd("p5510-3.84tb"), SSDs: 12}, 48971},
		{"Hyperion machine B: H800 + 12 P5510", Hardware{GPU: gpu("h800-80gb-pcie"), GPUs: 1, SSD: ssd("p5510-3.84tb"), SSDs: 12}, 78794},
		{"one node of Hyperion's cluster C: host + A100 + electricity", Hardware{GPU: gpu("a100-80gb-pcie"), GPUs: 1, SSD: ssd("p5510-3.84tb"), SSDs: 0}, 45275},
		{"Moment's machines: 4 A100 40GB + 8 P5510", Hardware{GPU: gpu("a100-40gb-pcie"), GPUs: 4, SSD: ssd("p5510-3.84tb"), SSDs: 8}, 90270},
	}
	for _, tc := range cases {
		if got := tc.hw.TCOUSD(c.Host); math.Abs(got-tc.want) > 0.5 {
			t.Errorf("%s: $%.0f, want $%.0f", tc.name, got, tc.want)
		}
	}
}

// TestHyperionASaturatesTheGPULink: on hyperion-a with GraphSAGE on
// IGB-HOM and the case study's caches (section IV-E: GPU and CPU caches
// fixed at 40 GB and 20 GB), throughput stops growing with the SSD count
// once the A100's PCIe 4.0 x16 link saturates (Hyperion: between 6 and 12
// P5510 the IO throughput is almost the same), and the recommended SSD
// count is where TPC peaks.
// hyperionCaseStudy is Hyperion's section IV-E setup: one A100 with 40 GB
// of GPU cache and 20 GB of CPU cache, 1 to 12 P5510s, IGB-HOM.
func hyperionCaseStudy(t *testing.T) Request {
	req := request(t, "hyperion-a", "igb-hom", 1e6)
	req.CPUCacheGiB = 20e9 / (1 << 30)
	req.Assumptions.GPUReserveGiB = 80 - 40e9/(1<<30)
	req.GPUModels, req.SSDModels = []string{"a100-80gb-pcie"}, []string{"p5510-3.84tb"}
	req.MinGPUs, req.MaxGPUs = 1, 1
	req.SSDCounts = []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	return req
}

func TestHyperionASaturatesTheGPULink(t *testing.T) {
	req := hyperionCaseStudy(t)
	// Hyperion reads each row on its own (online); packed batches read
	// sequentially saturate the link with fewer SSDs
	// (TestPackedSaturatesWithFewerSSDs).
	req.Loaders = []string{LoaderOnline}
	rec := recommend(t, req)
	curve := rec.SSDCurve()
	if len(curve.Points) != 12 {
		t.Fatalf("curve has %d points, want 12", len(curve.Points))
	}
	at := func(n int) *Option { return curve.Points[n-1] }
	sat := 0 // the first count whose throughput is within 0.5% of 12 SSDs'
	for n := 1; n <= 12; n++ {
		if at(n).SamplesPerSec >= at(12).SamplesPerSec*0.995 {
			sat = n
			break
		}
	}
	if sat < 6 || sat > 12 {
		t.Errorf("throughput saturates at %d SSDs, want between 6 and 12", sat)
	}
	for n := sat; n < 12; n++ {
		if at(n+1).SamplesPerSec > at(n).SamplesPerSec*1.005 {
			t.Errorf("throughput still grows from %d to %d SSDs after saturating", n, n+1)
		}
	}
	peak := curve.Points[0]
	for _, o := range curve.Points {
		if o.TPC > peak.TPC {
			peak = o
		}
	}
	if rec.Best.SSDs != peak.SSDs {
		t.Errorf("recommended %d SSDs, TPC peaks at %d", rec.Best.SSDs, peak.SSDs)
	}
	// What binds at 12 SSDs is the GPU's own x16 link.
	req.SSDCounts = []int{12}
	full := recommend(t, req)
	gpuLink := false
	gpuSlot := full.Best.Placement.GPUSlots[0]
	for _, b := range full.BestEval.Bottlenecks {
		if b.ToKind == topology.KindGPU || b.To == gpuSlot {
			gpuLink = b.GBps == 24
		}
	}
	if !gpuLink || full.Hint.Bound != "pcie" || !strings.Contains(full.Hint.Next, "nothing") {
		t.Errorf("12 SSDs: bottlenecks %v, hint %+v: want the GPU's 24 GB/s link and 'nothing' from more SSDs", full.BestEval.Bottlenecks, full.Hint)
	}
	t.Logf("hyperion-a: saturates at %d SSDs; 6 SSDs %.0f, 12 SSDs %.0f samples/s (%.2fx); TPC peaks at %d", sat,
		at(6).SamplesPerSec, at(12).SamplesPerSec, at(12).SamplesPerSec/at(6).SamplesPerSec, peak.SSDs)
}

// TestPackedSaturatesWithFewerSSDs: the same machine and workload as
// TestHyperionASaturatesTheGPULink with every loader allowed: packed
// batches read at the drives' sequential rate, so fewer SSDs saturate the
// GPU's link, the plan buys fewer, and its TPC is higher; plan.json names
// the loader and why.
func TestPackedSaturatesWithFewerSSDs(t *testing.T) {
	base := hyperionCaseStudy(t)
	online := base
	online.Loaders = []string{LoaderOnline}
	on, any := recommend(t, online), recommend(t, base)
	if any.Best.SSDs >= on.Best.SSDs || any.Best.TPC <= on.Best.TPC {
		t.Errorf("every loader: %d SSDs, TPC %.4g; online only: %d SSDs, TPC %.4g: want fewer SSDs and a higher TPC", any.Best.SSDs, any.Best.TPC, on.Best.SSDs, on.Best.TPC)
	}
	l := any.Best.Loader
	if l == nil || l.Name == LoaderOnline || len(l.Options) != 3 || !strings.Contains(l.Why, "online") {
		t.Fatalf("loader %+v: want packed or multistage, the three priced, and why against online", l)
	}
	for _, o := range l.Options {
		if o.SSDBytesPerBatch <= 0 || o.RequestBytes <= 0 || o.DiskSpaceGB <= 0 || o.AccuracyRisk == "" {
			t.Errorf("%s: %+v: want bytes, request size, disk space and accuracy risk", o.Name, o)
		}
	}
	if p := any.Plan(); p.Loader != l.Name {
		t.Errorf("plan.json loader %q, the option's %q", p.Loader, l.Name)
	}
	t.Logf("online: %d SSDs, TPC %.4g; %s: %d SSDs, TPC %.4g (%s)", on.Best.SSDs, on.Best.TPC, l.Name, any.Best.SSDs, any.Best.TPC, l.Why)
}

// TestBudgetIsRespected: with --budget 80000 on moment-b the plan never
// exceeds the budget nor the slots, and raising the budget never lowers
// the best TPC.
func TestBudgetIsRespected(t *testing.T) {
	prev := 0.0
	for _, budget := range []float64{50000, 60000, 80000, 100000} {
		rec := recommend(t, request(t, "moment-b", "igb-hom", budget))
		slots := rec.Machine.Count(topology.KindSlot)
		for _, o := range rec.Options {
			if o.CostUSD > budget {
				t.Errorf("budget $%.0f: option %s costs $%.0f", budget, o.label(), o.CostUSD)
			}
			if o.GPUs+o.SSDs > slots {
				t.Errorf("budget $%.0f: option %s uses %d devices for %d slots", budget, o.label(), o.GPUs+o.SSDs, slots)
			}
		}
		if rec.Best.TPC < prev {
			t.Errorf("budget $%.0f: best TPC %.4g fell below %.4g at a lower budget", budget, rec.Best.TPC, prev)
		}
		prev = rec.Best.TPC
		if rec.Fastest.SamplesPerSec < rec.Best.SamplesPerSec {
			t.Errorf("fastest plan is slower than the best-TPC plan")
		}
	}
}

// TestDistributedAlternativeCostsMore: for IGB-HOM the distributed
// in-memory cluster costs several times more per unit of throughput
// (Hyperion and Moment report 2x-60x).
func TestDistributedAlternativeCostsMore(t *testing.T) {
	rec := recommend(t, request(t, "moment-b", "igb-hom", 80000))
	d := rec.Distributed
	if d.CostPerSample < 2 || d.CostPerSample > 60 {
		t.Errorf("the plan's TPC is %.1fx the cluster's, want 2x-60x (%s)", d.CostPerSample, d.Assumption)
	}
	if d.Machines < 2 {
		t.Errorf("cluster of %d machines for a 1 TB dataset with 5x overhead", d.Machines)
	}
}

func TestRecommendBadInput(t *testing.T) {
	cases := []struct {
		name   string
		change func(*Request)
		want   string
	}{
		{"budget below the cheapest plan", func(r *Request) { r.BudgetUSD = 40000; r.GPUModels = []string{"a100-80gb-pcie"} }, "cheapest plan"},
		{"unknown GPU model", func(r *Request) { r.GPUModels = []string{"a1000"} }, "a100-80gb-pcie"},
		{"unknown SSD model", func(r *Request) { r.SSDModels = []string{"wd-blue"} }, "p5510-3.84tb"},
		{"a workload with zero vertices", func(r *Request) { r.Workload.Vertices = 0 }, "vertices"},
		{"a negative budget", func(r *Request) { r.BudgetUSD = -1 }, "--budget"},
		{"a catalog entry without a price", func(r *Request) { r.Catalog.GPUs[0].PriceUSD = 0 }, "price"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := request(t, "moment-b", "igb-hom", 80000)
			tc.change(&req)
			_, err := Recommend(context.Background(), req)
			if err == nil || !topology.IsBadInput(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want a bad-input error mentioning %q", err, tc.want)
			}
		})
	}
}

func TestCheapestPlanMessageNamesItsCost(t *testing.T) {
	req := request(t, "hyperion-a", "igb-hom", 40000)
	req.GPUModels, req.SSDModels = []string{"a100-80gb-pcie"}, []string{"p5510-3.84tb"}
	_, err := Recommend(context.Background(), req)
	// host 14,098 + A100 14,177 + electricity 17,000 + one P5510 to hold
	// the 1.1 TB of features: 45,583.
	if err == nil || !strings.Contains(err.Error(), "costs $45583") {
		t.Fatalf("err = %v, want the cheapest A100 plan's cost", err)
	}
}

func TestPlanRoundTripAndPlot(t *testing.T) {
	rec := recommend(t, request(t, "moment-b", "igb-hom", 80000))
	p := rec.Plan()
	path := t.TempDir() + "/plan.json"
	if err := WritePlan(path, p); err != nil {
		t.Fatal(err)
	}
	back, err := LoadPlan(path)
	if err != nil {
		t.Fatal(err)
	}
	if back.CostUSD != rec.Best.CostUSD || back.BudgetUSD != 80000 || back.TPC != rec.Best.TPC ||
		len(back.Placement.Devices) != rec.Best.GPUs+rec.Best.SSDs || len(back.StorageTraffic) == 0 {
		t.Errorf("plan round trip lost fields: %+v", back.Hardware)
	}
	if back.Machine.Count(topology.KindGPU) != rec.Best.GPUs || back.Machine.Count(topology.KindNVMe) != rec.Best.SSDs {
		t.Errorf("plan machine holds %d GPUs and %d SSDs", back.Machine.Count(topology.KindGPU), back.Machine.Count(topology.KindNVMe))
	}
	var svg bytes.Buffer
	if err := WritePlotSVG(&svg, rec); err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(bytes.TrimSpace(svg.Bytes()), []byte("<?xml")) || !bytes.Contains(svg.Bytes(), []byte("<svg")) {
		t.Errorf("plot is not SVG")
	}
}

func TestRecommendIsDeterministic(t *testing.T) {
	a := recommend(t, request(t, "moment-a", "igb-hom", 80000))
	b := recommend(t, request(t, "moment-a", "igb-hom", 80000))
	if a.Best.label() != b.Best.label() || len(a.Options) != len(b.Options) {
		t.Fatalf("two runs differ: %s vs %s", a.Best.label(), b.Best.label())
	}
	for i := range a.Options {
		if a.Options[i].label() != b.Options[i].label() {
			t.Fatalf("rank %d differs: %s vs %s", i+1, a.Options[i].label(), b.Options[i].label())
		}
	}
}

// BenchmarkRecommendMomentB is `gnnplan recommend --budget 80000` on
// moment-b: every catalog GPU model at 1-4 GPUs, every SSD model at 0-16+
// SSDs within budget, every distinct placement of each.
func BenchmarkRecommendMomentB(b *testing.B) {
	benchRecommend(b, request(b, "moment-b", "igb-hom", 80000))
}

// benchRecommend times Recommend on req and reports what it searched.
func benchRecommend(b *testing.B, req Request) {
	for i := 0; i < b.N; i++ {
		rec, err := Recommend(context.Background(), req)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(rec.Placements), "placements")
		b.ReportMetric(float64(rec.Searched), "plans")
	}
}

// TestZeroSSDPlanListedOnce: a plan without SSDs does not depend on the SSD
// model, so each GPU choice lists it once, not once per SSD model.
func TestZeroSSDPlanListedOnce(t *testing.T) {
	req := request(t, "moment-b", "ogbn-papers100M", 200000)
	req.SSDCounts = []int{0, 1}
	req.MaxGPUs = 1
	rec := recommend(t, req)
	seen := map[string]int{}
	for _, o := range rec.Options {
		if o.SSDs == 0 {
			seen[fmt.Sprintf("%s x%d + %d x %s", o.GPU.Key, o.GPUs, o.DIMMs, o.DIMM.Key)]++
		}
	}
	if len(seen) == 0 {
		t.Fatal("no plan without SSDs: pick a workload that fits in memory")
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("%s with 0 SSDs listed %d times", k, n)
		}
	}
}

// eightGPURequest is the 8-GPU server with 24 NVMe bays of
// maxflow/placement/testdata (two sockets, each with two switches on x16 uplinks
// holding 2 GPU slots and 4 bays, and 4 bays on the root complex), 1-8 GPUs
// of 3 models and 0-24 SSDs of 3 models, on a budget that buys them all.
func eightGPURequest(t testing.TB) Request {
	req := request(t, "moment-b", "igb-hom", 1e6)
	m, err := topology.Load(filepath.Join("..", "maxflow", "placement", "testdata", "eight-gpu-24-bay.json"))
	if err != nil {
		t.Fatal(err)
	}
	req.Machine, req.MaxGPUs = m, 8
	req.GPUModels = []string{"h100-80gb-pcie", "a100-80gb-pcie", "l40s-48gb-pcie"}
	req.SSDModels = []string{profiles.ModelP5510_3_84TB, "980pro-1tb", "pm1743-3.84tb"}
	return req
}

// TestRecommendEightGPUServer: on a real 8-GPU server every count up to 8
// GPUs and 31 SSDs is priced, and the same request gives the same ranking
// and placements.
func TestRecommendEightGPUServer(t *testing.T) {
	if testing.Short() {
		t.Skip("prices about 2,000 plans")
	}
	rec := recommend(t, eightGPURequest(t))
	maxGPUs, maxSSDs := 0, 0
	for _, o := range rec.Options {
		maxGPUs, maxSSDs = max(maxGPUs, o.GPUs), max(maxSSDs, o.SSDs)
	}
	// SSDs also go in free GPU slots: 1 GPU leaves 31 slots.
	if maxGPUs != 8 || maxSSDs != 31 {
		t.Fatalf("options reach %d GPUs and %d SSDs, want 8 and 31", maxGPUs, maxSSDs)
	}
	if rec.Searched < 1500 {
		t.Errorf("%d plans priced, want every model x count (about 2,000)", rec.Searched)
	}
	// Determinism: the same request gives the same ranking and placements.
	again := recommend(t, eightGPURequest(t))
	for i := range rec.Options[:20] {
		a, b := rec.Options[i], again.Options[i]
		if a.label() != b.label() || fmt.Sprint(a.Placement) != fmt.Sprint(b.Placement) {
			t.Fatalf("rank %d: %s %v, then %s %v", i+1, a.label(), a.Placement, b.label(), b.Placement)
		}
	}
}

// BenchmarkRecommendEightGPUServer is issue 13's large case: an 8-GPU,
// 24-bay machine with 3 GPU models and 3 SSD models (goal: under 10 s).
func BenchmarkRecommendEightGPUServer(b *testing.B) {
	benchRecommend(b, eightGPURequest(b))
}

// TestPerBatchCostsBoundASmallGraph is the case issue 12 names: a graph of
// a few MB, one batch per epoch, used to get 4 GPUs at millions of samples
// per second because nothing cost anything per batch. With sampling, a
// fixed cost per batch and the all-reduce, one batch keeps one GPU busy:
// more GPUs add cost and no throughput, so one is recommended.
func TestPerBatchCostsBoundASmallGraph(t *testing.T) {
	req := request(t, "moment-b", "cora", 80000)
	rec := recommend(t, req)
	b := rec.Best
	if b.GPUs != 1 {
		t.Errorf("cora: %d GPUs recommended, want 1", b.GPUs)
	}
	bt := b.BatchTrain
	if !(bt.OverheadS > 0 && bt.SampleS > 0 && bt.ComputeS > 0) || bt.AllReduceS != 0 {
		t.Errorf("one GPU's batch costs %+v: want sampling, compute and overhead, no all-reduce", bt)
	}
	seeds := 140.0 // Planetoid's split
	if max := seeds / bt.OverheadS; b.SamplesPerSec > max {
		t.Errorf("%.0f samples/s, above the %0.f the fixed cost alone allows", b.SamplesPerSec, max)
	}
	// The all-reduce grows with the GPU count and the model.
	w := req.Workload
	hw := Hardware{GPU: b.GPU, GPUs: 2}
	two := trainCosts(w, hw, req.Assumptions).AllReduceS
	hw.GPUs = 4
	four := trainCosts(w, hw, req.Assumptions).AllReduceS
	if !(two > 0 && four > two) {
		t.Errorf("all-reduce %v s on 2 GPUs, %v s on 4: want positive and growing", two, four)
	}
	// A measured GPU's rates replace the catalog's: twice the catalog
	// rate halves the compute, half the link doubles the all-reduce.
	catalog := trainCosts(w, hw, req.Assumptions)
	am := req.Assumptions
	am.MeasuredGPUs = map[string]MeasuredGPU{b.GPU.Key: {Name: "test", GEMMTFLOPS: 2 * b.GPU.FP32TFLOPS * am.ComputeEfficiency,
		H2DGBps: topology.PCIeGBps(b.GPU.PCIeGen, b.GPU.Lanes) / 2}}
	measured := trainCosts(w, hw, am)
	if math.Abs(measured.ComputeS-catalog.ComputeS/2) > 1e-9*catalog.ComputeS || math.Abs(measured.AllReduceS-2*catalog.AllReduceS) > 1e-9*catalog.AllReduceS {
		t.Errorf("measured GPU: compute %g s, all-reduce %g s; catalog %g, %g: want half and double", measured.ComputeS, measured.AllReduceS, catalog.ComputeS, catalog.AllReduceS)
	}
	gat, err := w.WithModel(ModelGAT)
	if err != nil {
		t.Fatal(err)
	}
	if gat.Params() <= 0 || w.Params() != 2*1433*256+256+2*256*7+7 {
		t.Errorf("params: graphsage %d, gat %d", w.Params(), gat.Params())
	}
}

// TestRecommendStopsSoonAfterCancel: planning a machine with 2,000 GPUs
// installed runs for minutes; a cancelled context (Ctrl-C, SIGTERM) ends
// it within a second, at any moment, the first ones included.
func TestRecommendStopsSoonAfterCancel(t *testing.T) {
	if testing.Short() {
		t.Skip("a 2,000-GPU machine; skipped with -short")
	}
	m := &topology.Machine{SchemaVersion: 1, Name: "gpus2k",
		Nodes: []topology.Node{{ID: "socket0", Kind: topology.KindSocket, Cores: 16, MemoryGiB: 256}}}
	for i := range 2000 {
		rp, slot, gpu := fmt.Sprintf("rp%d", i/16), fmt.Sprintf("slot%d", i), fmt.Sprintf("gpu%d", i)
		if i%16 == 0 {
			m.Nodes = append(m.Nodes, topology.Node{ID: rp, Kind: topology.KindRootPort, Parent: "socket0"})
		}
		m.Nodes = append(m.Nodes, topology.Node{ID: slot, Kind: topology.KindSlot, Parent: rp, Lanes: 16, PCIeGen: 4, DoubleWidth: true},
			topology.Node{ID: gpu, Kind: topology.KindGPU, Parent: slot, Name: "NVIDIA A100 80GB PCIe", Lanes: 16, PCIeGen: 4, MemoryGiB: 80})
	}
	req := request(t, "moment-b", "ogbn-papers100M", 80000)
	req.Machine = m
	for _, after := range []time.Duration{0, 50 * time.Millisecond, 500 * time.Millisecond} {
		ctx, cancel := context.WithTimeout(context.Background(), after)
		start := time.Now()
		_, err := Recommend(ctx, req)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("cancelled after %v: Recommend = %v, want the context's error", after, err)
		}
		if late := time.Since(start) - after; late > time.Second {
			t.Errorf("cancelled after %v: returned %v later, want within a second", after, late.Round(time.Millisecond))
		}
	}
}

// TestSSDBoundHintNamesTheLinkCap: moment-b's bays are x4 Gen4 (6 GB/s),
// so the best $80,000 plan's Gen5 PM1743s read 6 GB/s each, not their own
// 10.2: the hint says so and names the links. Gen4 P5510s in the same bays
// run at their own rate, and no cap is reported for them.
func TestSSDBoundHintNamesTheLinkCap(t *testing.T) {
	req := request(t, "moment-b", "igb-hom", 80000)
	req.CPUCacheGiB = 10 // about Moment's 1% of the vertices: the SSDs carry most of the epoch
	req.SSDModels = []string{"pm1743-3.84tb"}
	rec := recommend(t, req)
	c, ok := SSDLinkCap(rec.BestMachine, rec.BestEval, rec.Best.SSDGBps)
	if rec.Hint.Bound != "ssd" || !ok || math.Abs(c.GBps-6) > 1e-9 || c.Links != "x4 Gen4" || !(rec.Best.SSDGBps > 9) {
		t.Fatalf("bound %q, cap %+v (%v), drive %.2f GB/s: want SSD-bound, capped at 6 GB/s by x4 Gen4 links below a 10 GB/s drive", rec.Hint.Bound, c, ok, rec.Best.SSDGBps)
	}
	if !strings.Contains(rec.Hint.Text, "read 6.0 GB/s each") || !strings.Contains(rec.Hint.Text, "x4 Gen4") || strings.Contains(rec.Hint.Text, "read 10.2 GB/s each") {
		t.Errorf("hint %q: want the links' 6.0 GB/s each and x4 Gen4, not the drives' rate as what they read", rec.Hint.Text)
	}

	req.SSDModels = []string{"p5510-3.84tb"}
	rec = recommend(t, req)
	if c, ok := SSDLinkCap(rec.BestMachine, rec.BestEval, rec.Best.SSDGBps); ok {
		t.Errorf("P5510s (%.2f GB/s) in x4 Gen4 bays: cap %+v reported", rec.Best.SSDGBps, c)
	}
}

// TestRecommendOnAMachineWithoutSlotRecords: an 8 x MI50 PCIe server as
// its RCCL topology describes it (cards under two PCIe switches, no slot
// records, no NVMe, no memory size). Papers100M fits the catalog host's
// memory: the plan refills the card positions. IGB does not: the refusal
// names what failed (no position takes an SSD; host memory too small)
// and what would fit (issue 34, finding 3). (A p4d's SXM sockets take no
// card: TestPredictInstalled.)
func TestRecommendOnAMachineWithoutSlotRecords(t *testing.T) {
	m, err := importer.Import(filepath.Join("..", "topology", "testdata", "topology", "rccl-topo_8p_pcie.xml"))
	if err != nil {
		t.Fatal(err)
	}
	w, err := BuiltinWorkload("ogbn-papers100M")
	if err != nil {
		t.Fatal(err)
	}
	req := Request{Machine: m, Workload: w, BudgetUSD: 200000, Catalog: profiles.DefaultCatalog(), Assumptions: DefaultAssumptions()}
	rec := recommend(t, req)
	if rec.Best.GPUs < 1 || rec.Best.SSDs != 0 {
		t.Fatalf("best %d GPUs, %d SSDs: want GPUs in the positions and no SSD", rec.Best.GPUs, rec.Best.SSDs)
	}
	for _, s := range rec.Best.Placement.GPUSlots {
		if n := rec.BestMachine.Node(s); n == nil || n.Takes != topology.KindGPU {
			t.Errorf("GPU placed in %s (%+v), want a GPU position", s, n)
		}
	}
	req.Workload, _ = BuiltinWorkload("igb-hom")
	_, err = Recommend(context.Background(), req)
	if err == nil || !topology.IsBadInput(err) {
		t.Fatalf("IGB on the MI50 server: %v, want a refusal", err)
	}
	for _, want := range []string{"no choice holds igb-hom", "no free slot is left for an SSD", "the machine file gives no memory size", "what would fit"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q lacks %q", err, want)
		}
	}
}

// TestPredictInstalled: moment-b as built (4 A100 40GB, 8 P5510 in Moment's
// slots) is predicted where its devices are, as PredictSetup's installed
// layout predicts it; a p4d's A100 SXM4, which no catalog GPU describes,
// is refused naming the device and the fix.
func TestPredictInstalled(t *testing.T) {
	req := request(t, "moment-b", "igb-hom", 80000)
	in, err := PredictInstalled(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	// The same prediction as PredictSetup's with the cache it decided.
	want, err := PredictSetup(context.Background(), Setup{Machine: req.Machine, Workload: req.Workload, GPU: "a100-40gb-pcie", SSD: "p5510-3.84tb",
		GPUs: -1, SSDs: -1, Layout: LayoutInstalled, Assumptions: decided(req.Assumptions, in.Decisions)})
	if err != nil {
		t.Fatal(err)
	}
	if in.GPU != "a100-40gb-pcie" || in.GPUs != 4 || in.SSD != "p5510-3.84tb" || in.SSDs != 8 || in.Prediction.EpochSeconds != want.EpochSeconds || !(want.EpochSeconds > 0) {
		t.Errorf("as installed %+v, epoch %v s; want 4 x a100-40gb-pcie + 8 x p5510-3.84tb at %v s", in, in.Prediction.EpochSeconds, want.EpochSeconds)
	}
	m, err := importer.Import(filepath.Join("..", "topology", "testdata", "topology", "aws-p4d-24xl-topo.xml"))
	if err != nil {
		t.Fatal(err)
	}
	// p4d: SXM4 modules, no SSD, memory not in the file: the modules are
	// priced as the catalog's installed-only model, and igb-hom (1.1 TB)
	// does not fit the assumed host memory without SSDs.
	req.Machine = m
	in, err = PredictInstalled(context.Background(), req)
	if err != nil || in.GPU != "a100-40gb-sxm4" || in.GPUs != 8 || in.SSDs != 0 || !strings.Contains(in.CannotHold, "no SSD") {
		t.Errorf("p4d as installed: %+v, %v; want 8 x a100-40gb-sxm4 that cannot hold igb-hom without an SSD", in, err)
	}
	if req.Workload, err = BuiltinWorkload("ogbn-papers100M"); err != nil {
		t.Fatal(err)
	}
	if in, err = PredictInstalled(context.Background(), req); err != nil || in.CannotHold != "" || !(in.Prediction.EpochSeconds > 0) {
		t.Errorf("p4d as installed on papers100M: %+v, %v; want a prediction", in, err)
	}
	// No PCIe card one can buy goes into an SXM socket: nothing to buy
	// fits, and the answer is the machine as installed.
	rec, err := Recommend(context.Background(), req)
	if err != nil || !strings.Contains(rec.NothingToBuy, "8 GPU module socket(s)") || len(rec.Options) != 1 ||
		rec.Best.GPU.Key != "a100-40gb-sxm4" || rec.Best.GPUs != 8 || rec.Best.EpochSeconds != in.Prediction.EpochSeconds {
		t.Errorf("p4d: %+v, %v; want the 8 SXM4 modules as installed, naming the module sockets", rec, err)
	}
	// igb-hom it cannot hold as installed: nothing fits, an error.
	req.Workload, _ = BuiltinWorkload("igb-hom")
	var none *NothingFitsError
	if _, err := Recommend(context.Background(), req); !errors.As(err, &none) || none.Budget || !strings.Contains(err.Error(), "8 GPU module socket(s)") {
		t.Errorf("p4d on igb-hom: %v, want nothing to fit, naming the 8 module sockets", err)
	}
	req.Workload, _ = BuiltinWorkload("ogbn-papers100M")
	// A GPU the file does not name is priced as --installed-gpu says.
	smi, err := importer.Import(filepath.Join("..", "topology", "testdata", "topology", "stelline-puget-nvidia-smi-topo.txt"))
	if err != nil {
		t.Fatal(err)
	}
	req.Machine = smi
	if _, err := PredictInstalled(context.Background(), req); err == nil || !strings.Contains(err.Error(), "--installed-gpu") {
		t.Errorf("unnamed GPUs: %v, want a refusal naming --installed-gpu", err)
	}
	req.InstalledGPU = "l40s-48gb-pcie"
	if in, err = PredictInstalled(context.Background(), req); err != nil || in.GPU != "l40s-48gb-pcie" || !(in.Prediction.EpochSeconds > 0) {
		t.Errorf("unnamed GPUs with --installed-gpu: %+v, %v", in, err)
	}
}

// TestCheckPower: a plan's maximum draw against the host's supplies, and
// what the check needs from the catalog.
func TestCheckPower(t *testing.T) {
	cat := profiles.DefaultCatalog()
	h100, _ := cat.GPU("h100-80gb-sxm5")
	l40s, _ := cat.GPU("l40s-48gb-pcie")
	pm, _ := cat.SSD("pm1743-3.84tb")
	for _, tc := range []struct {
		name string
		hw   Hardware
		host func(h *profiles.HostCost)
		want string
		fits bool
	}{
		{"4 L40S and 15 drives fit 4 kW", Hardware{GPU: l40s, GPUs: 4, SSD: pm, SSDs: 15}, nil, "= 2475 W at most, within", true},
		{"8 H100 SXM do not", Hardware{GPU: h100, GPUs: 8, SSD: pm, SSDs: 0}, nil, "= 6300 W at most, MORE than the host's 4000 W", false},
		{"no supply figure", Hardware{GPU: l40s, GPUs: 1}, func(h *profiles.HostCost) { h.PSUW = 0 }, "not checked: the catalog lacks the host's base_power_W and psu_W", false},
		{"a GPU without power_W", Hardware{GPU: profiles.GPUModel{Key: "my-gpu"}, GPUs: 1}, nil, "my-gpu's power_W", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := cat.Host
			if tc.host != nil {
				tc.host(&h)
			}
			c := CheckPower(tc.hw, h)
			if !strings.Contains(c.Text, tc.want) || c.Fits != tc.fits {
				t.Errorf("%+v: want %q, fits %v", c, tc.want, tc.fits)
			}
		})
	}
}
