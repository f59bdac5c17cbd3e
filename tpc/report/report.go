// Package report turns a plan into a capacity review people can take to a
// meeting: one self-contained HTML file (the machine drawn with the
// saturated links and the placed devices marked, the ranked options, TPC and
// throughput against SSD and GPU counts, the bottleneck and the next-dollar
// hint, the distributed alternative, and where every figure came from), or
// Markdown for wikis with the figures as SVG files beside it.
//
// A review re-prices the plan's search (the same machine, workload, budget,
// models, counts and assumptions) so its tables and plots show every option,
// not just the one the plan kept; it says so when the best option differs
// from the plan's (another catalog, or an edited plan). The diagram is laid
// out by Graphviz (go-graphviz, compiled to WebAssembly: no system
// Graphviz needed) and the plots are gonum/plot's.
package report

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"

	"github.com/goccy/go-graphviz"

	"github.com/gnnplan/gnnplan/maxflow/placement"
	"github.com/gnnplan/gnnplan/profiles"
	"github.com/gnnplan/gnnplan/topology"
	"github.com/gnnplan/gnnplan/tpc"
	"github.com/gnnplan/gnnplan/tpc/validate"
)

// Review is everything a review shows, computed.
type Review struct {
	Plan *tpc.Plan
	Rec  *tpc.Recommendation // the plan's search, priced again
	// Machine and Eval are the recommended option's machine and flow
	// evaluation (the diagram's).
	Machine *topology.Machine
	Eval    *placement.Evaluation
	// SVG figures, without XML prologs (ready to inline).
	TopologySVG, SSDPlotSVG, GPUPlotSVG []byte
	Sources                             []Source
	Notes                               []string
	Version                             string
	CatalogName                         string
	// ModelError is the model's error against the published
	// measurements it was checked on (gnnplan validate).
	ModelError tpc.ValidatedError
	// Budgets is the best plan at other budgets: how the choice moves.
	Budgets []BudgetStep
	// Range is the recommended hardware predicted again under other
	// assumptions: what they put on the prediction.
	Range []RangeRow
	// Feasibility is what building the plan takes: each check and its
	// verdict.
	Feasibility [][2]string
	// Installed is the machine as it stands (its own GPUs and SSDs
	// where they are), nil with the reason in InstalledNote where it has
	// none or they match no catalog model.
	Installed     *tpc.Installed
	InstalledNote string
}

// BudgetStep is the best plan (highest TPC) at one budget; Best is nil
// where the budget buys no plan.
type BudgetStep struct {
	BudgetUSD float64
	Best      *tpc.Option
}

// RangeRow is the recommended hardware's prediction under one assumption
// changed.
type RangeRow struct {
	Assumption string
	Epoch      float64 // seconds
	SamplesPS  float64
}

// budgetFactors are the budgets a review shows, as multiples of the
// plan's (1: the plan's own).
var budgetFactors = []float64{0.5, 0.75, 1, 1.25, 1.5, 2}

// skewRange is DiskGNN's Table 3 as exponents of the power law: its
// least skewed graph gives the top 1% of vertices 14.1% of the accesses
// (0.01^0.43), its most skewed 56.4% (0.01^0.12).
var skewRange = [2]float64{0.12, 0.43}

// Source says where a kind of figure came from.
type Source struct {
	Figure string // "GPU prices", "PCIe link capacities", ...
	From   string // "catalog", "measured", "assumed", "derived from the topology"
	Detail string
}

// Options tune Build.
type Options struct {
	Catalog     *profiles.Catalog // nil: the built-in catalog
	CatalogName string            // how to name the catalog in the review
	// Machine, when set, replaces the plan's machine: the plan's search
	// is priced on its slots.
	Machine *topology.Machine
	Version string // gnnplan's version, printed in the review
}

// Build prices the plan's search again and draws the figures.
func Build(ctx context.Context, plan *tpc.Plan, opt Options) (*Review, error) {
	if plan == nil || plan.Machine == nil {
		return nil, &topology.InputError{Field: "--plan", Msg: "the plan has no machine (want a plan.json written by gnnplan recommend --save)"}
	}
	m := plan.Machine
	if opt.Machine != nil {
		m = opt.Machine
	}
	// The plan's own catalog, unless the caller gives another: the plan
	// is reviewed at the prices it was made with.
	catalog, name := opt.Catalog, opt.CatalogName
	switch {
	case catalog != nil:
	case plan.Catalog != nil:
		catalog, name = plan.Catalog, plan.CatalogSource
		if name == "" {
			name = "the catalog the plan was made with"
		}
	default:
		catalog = profiles.DefaultCatalog()
	}
	if name == "" {
		name = "the built-in catalog"
	}
	req := tpc.Request{Machine: m, Catalog: catalog, Workload: plan.Workload, BudgetUSD: plan.BudgetUSD,
		GPUModels: plan.Search.GPUModels, SSDModels: plan.Search.SSDModels, MinGPUs: plan.Search.MinGPUs,
		MaxGPUs: plan.Search.MaxGPUs, SSDCounts: plan.Search.SSDCounts, MeasuredSSDGBps: plan.Search.MeasuredSSDGBps, Loaders: plan.Search.Loaders,
		CPUCacheGiB: plan.Search.CPUCacheGiB, Assumptions: plan.Assumptions}
	rec, err := tpc.Recommend(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("pricing the plan's options again: %w", err)
	}
	r := &Review{Plan: plan, Rec: rec, Machine: rec.BestMachine, Eval: rec.BestEval, Version: opt.Version, CatalogName: name}
	if r.ModelError, err = validate.Published(ctx); err != nil {
		return nil, err
	}
	b := rec.Best
	if b.GPU.Key != plan.Hardware.GPUModel || b.GPUs != plan.Hardware.GPUs || b.SSDs != plan.Hardware.SSDs ||
		(b.SSDs > 0 && b.SSD.Key != plan.Hardware.SSDModel) {
		r.Notes = append(r.Notes, fmt.Sprintf("Priced again with %s, the best option is %d x %s + %d x %s, not the plan's %d x %s + %d x %s: the catalog, the machine or the plan changed since it was written. The review shows the options as priced now.",
			name, b.GPUs, b.GPU.Key, b.SSDs, b.SSD.Key, plan.Hardware.GPUs, plan.Hardware.GPUModel, plan.Hardware.SSDs, plan.Hardware.SSDModel))
	}
	if r.TopologySVG, err = diagram(ctx, r); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := tpc.WritePlotSVG(&buf, rec); err != nil {
		return nil, err
	}
	r.SSDPlotSVG = inlineSVG(buf.Bytes())
	buf.Reset()
	if err := tpc.WriteGPUPlotSVG(&buf, rec); err != nil {
		return nil, err
	}
	r.GPUPlotSVG = inlineSVG(buf.Bytes())
	r.Sources = sources(r)
	if err := budgetsAndRange(ctx, r, req); err != nil {
		return nil, err
	}
	r.Feasibility = feasibility(r)
	// The plan's machine holds the recommended devices: what stood there
	// before is what recommend kept in the plan.
	r.Installed, r.InstalledNote = plan.Installed, plan.InstalledNote
	return r, nil
}

// feasibility checks what building the recommended plan takes: slots that
// fit the cards, adapters for drives in wide slots, the drives' capacity
// against the dataset, the devices' power against the host's supplies.
func feasibility(r *Review) [][2]string {
	b := r.Rec.Best
	m := r.Machine
	var out [][2]string
	wide := 0
	for _, s := range b.Placement.SSDSlots {
		if n := m.Node(s); n != nil && n.Lanes >= 8 && n.Takes == "" {
			wide++
		}
	}
	gpuOK := true
	for _, s := range b.Placement.GPUSlots {
		if n := m.Node(s); n == nil || (!n.DoubleWidth && b.GPU.DoubleWidth) || (n.Lanes > 0 && n.Lanes < b.GPU.Lanes) {
			gpuOK = false
		}
	}
	if gpuOK {
		out = append(out, [2]string{"GPU slots", fmt.Sprintf("each of the %d %s sits in a slot wide enough (x%d, double-width where the card is)", b.GPUs, b.GPU.Key, b.GPU.Lanes)})
	} else {
		out = append(out, [2]string{"GPU slots", "a GPU sits in a slot narrower or thinner than the card: check the machine file's slots"})
	}
	switch {
	case b.SSDs == 0:
	case wide > 0:
		out = append(out, [2]string{"SSD adapters", fmt.Sprintf("%d of the %d SSDs sit in x8 or wider slots: each needs an adapter card (one M.2 or U.2 drive per card, or a bifurcation card holding four at x4x4x4x4 where the board supports it)", wide, b.SSDs)})
	default:
		out = append(out, [2]string{"SSD adapters", "every SSD sits in an x4 bay or slot of its own: no adapter"})
	}
	if b.SSDs > 0 {
		feat, topo := r.Plan.Workload.DatasetBytes()
		have := float64(b.SSDs) * b.SSD.CapacityGB
		verdict := "holds"
		if have*1e9 < float64(feat) {
			verdict = "does not hold"
		}
		out = append(out, [2]string{"SSD capacity", fmt.Sprintf("%d x %.0f GB = %.0f GB %s the %.0f GB of features (topology %.0f GB stays in host memory)", b.SSDs, b.SSD.CapacityGB, have, verdict, float64(feat)/1e9, float64(topo)/1e9)})
	}
	out = append(out, [2]string{"Power", tpc.CheckPower(b.Hardware, r.Rec.Request.Catalog.Host).Text})
	return out
}

// budgetsAndRange fills r.Budgets (the search again at budgetFactors x
// the plan's budget) and r.Range (the recommended hardware predicted with
// the access skew at DiskGNN's extremes).
func budgetsAndRange(ctx context.Context, r *Review, req tpc.Request) error {
	for _, f := range budgetFactors {
		if f == 1 {
			r.Budgets = append(r.Budgets, BudgetStep{BudgetUSD: req.BudgetUSD, Best: r.Rec.Best})
			continue
		}
		q := req
		q.BudgetUSD = req.BudgetUSD * f
		rec, err := tpc.Recommend(ctx, q)
		if err != nil {
			if topology.IsBadInput(err) {
				r.Budgets = append(r.Budgets, BudgetStep{BudgetUSD: q.BudgetUSD})
				continue
			}
			return fmt.Errorf("the best plan at $%.0f: %w", q.BudgetUSD, err)
		}
		r.Budgets = append(r.Budgets, BudgetStep{BudgetUSD: q.BudgetUSD, Best: rec.Best})
	}
	b := r.Rec.Best
	for _, a := range skewRange {
		as := req.Assumptions
		as.SkewExponent, as.HotnessCurve = a, nil
		as.CPUCacheFraction = b.Decisions.CPUCacheFraction
		s := tpc.Setup{Machine: r.Rec.Machine, Catalog: req.Catalog, Workload: req.Workload, GPU: b.GPU.Key, SSD: b.SSD.Key,
			GPUs: b.GPUs, SSDs: b.SSDs, DIMM: b.DIMM.Key, DIMMs: b.DIMMs, Layout: tpc.LayoutBest, SSDGBps: req.MeasuredSSDGBps, Assumptions: as}
		if r.Rec.NothingToBuy != "" { // the machine as installed: its devices where they are
			s.Machine, s.Layout = r.Rec.BestMachine, tpc.LayoutInstalled
		}
		p, err := tpc.PredictSetup(ctx, s)
		if err != nil {
			return fmt.Errorf("the prediction with skew exponent %g: %w", a, err)
		}
		r.Range = append(r.Range, RangeRow{Assumption: fmt.Sprintf("access skew x^%.2f (top 1%% of vertices get %.0f%% of accesses)", a, 100*math.Pow(0.01, a)),
			Epoch: p.EpochSeconds, SamplesPS: p.SamplesPerSec})
	}
	return nil
}

// Colours of the diagram, also named in the legend.
const (
	colorSaturated = "#c0392b"
	colorGPU       = "#d5f5e3"
	colorSSD       = "#d6eaf8"
)

// diagram lays out the recommended machine with Graphviz: saturated links
// red and thick, the placed GPUs and SSDs filled.
func diagram(ctx context.Context, r *Review) ([]byte, error) {
	st := topology.DOTStyle{Nodes: map[string]string{}, Links: map[string]string{},
		Title: fmt.Sprintf("%s: recommended placement (red: saturated)", r.Machine.Name), RankDir: "LR"}
	for _, n := range r.Machine.Nodes {
		switch n.Kind {
		case topology.KindGPU:
			st.Nodes[n.ID] = `style=filled, fillcolor="` + colorGPU + `"`
		case topology.KindNVMe:
			st.Nodes[n.ID] = `style=filled, fillcolor="` + colorSSD + `"`
		}
	}
	for _, bn := range r.Eval.Bottlenecks {
		switch {
		case r.Machine.Node(bn.From) != nil && r.Machine.Node(bn.To) != nil:
			st.Links[bn.From+">"+bn.To] = fmt.Sprintf(`color="%s", fontcolor="%s", penwidth=3`, colorSaturated, colorSaturated)
		case r.Machine.Node(bn.To) != nil: // an SSD's or a memory's read rate binds
			st.Nodes[bn.To] += fmt.Sprintf(`, color="%s", penwidth=3`, colorSaturated)
		}
	}
	var dot bytes.Buffer
	if err := topology.WriteDOTStyled(&dot, r.Machine, st); err != nil {
		return nil, err
	}
	g, err := graphviz.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("diagram: %w", err)
	}
	defer g.Close()
	graph, err := graphviz.ParseBytes(dot.Bytes())
	if err != nil {
		return nil, fmt.Errorf("diagram: %w", err)
	}
	defer graph.Close()
	var out bytes.Buffer
	if err := g.Render(ctx, graph, graphviz.SVG, &out); err != nil {
		return nil, fmt.Errorf("diagram: %w", err)
	}
	return inlineSVG(out.Bytes()), nil
}

var prologRE = regexp.MustCompile(`(?s)^\s*(<\?xml[^>]*\?>\s*)?(<!DOCTYPE[^>]*>\s*)?(<!--.*?-->\s*)*`)

// inlineSVG drops the XML prolog and doctype so the SVG can sit in HTML.
func inlineSVG(svg []byte) []byte {
	return prologRE.ReplaceAll(svg, nil)
}

// sources lists where the figures came from.
func sources(r *Review) []Source {
	var out []Source
	b := r.Rec.Best
	out = append(out,
		Source{"GPU and SSD prices, GPU FP32 rates and memory", "catalog", r.CatalogName},
		Source{"host price, power and electricity", "catalog", r.CatalogName})
	if r.Plan.Search.MeasuredSSDGBps > 0 {
		out = append(out, Source{"SSD read rate for feature rows", "measured", fmt.Sprintf("%.2f GB/s per SSD (gnnplan profile)", r.Plan.Search.MeasuredSSDGBps)})
	} else {
		out = append(out, Source{"SSD read rate for feature rows", "catalog", fmt.Sprintf("%.2f GB/s per %s at the workload's row size", b.SSDGBps, b.SSD.Key)})
	}
	if c, ok := tpc.SSDLinkCap(r.Machine, r.Eval, b.SSDGBps); ok {
		out = append(out, Source{"SSD read rate in this layout", "computed",
			fmt.Sprintf("%.2f GB/s per SSD: their %s links carry less than the drives read", c.GBps, c.Links)})
	}
	// Link capacities, counted by where they came from.
	byFrom := map[string][]string{}
	counts := map[string]int{}
	for _, l := range r.Machine.Links {
		src := l.Source
		if src == "" {
			src = topology.SourceDerived
		}
		counts[src]++
	}
	var keys []string
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var froms []string
	for _, k := range keys {
		from := "derived from the topology"
		switch k {
		case topology.SourceAssumed:
			from = "assumed"
		case topology.SourceSysfs, topology.SourceSysfsMax:
			from = "measured (sysfs)"
		case topology.SourceXML:
			from = "the imported topology file"
		case topology.SourceProfile:
			from = "the machine profile"
		case topology.SourceNominal:
			from = "nominal (per-technology default)"
		}
		if _, ok := byFrom[from]; !ok {
			froms = append(froms, from)
		}
		byFrom[from] = append(byFrom[from], fmt.Sprintf("%d %s", counts[k], k))
	}
	for _, from := range froms {
		out = append(out, Source{"link capacities", from, strings.Join(byFrom[from], ", ") + " links"})
	}
	a := r.Plan.Assumptions
	out = append(out,
		gpuMemorySource(a, r.Rec.Best.Decisions),
		Source{"topology", "decided", r.Rec.Best.Decisions.TopologyWhy},
		Source{"CPU cache", "decided", fmt.Sprintf("%.1f%% of vertices (%.0f GiB): %s", 100*r.Rec.Best.Decisions.CPUCacheFraction, r.Rec.Best.Decisions.CPUCacheGiB, r.Rec.Best.Decisions.Why)},
		Source{"access skew", "assumed", fmt.Sprintf("the hottest fraction x of vertices gets x^%.2f of the accesses", a.SkewExponent)},
		Source{"training rate", "assumed", fmt.Sprintf("%.0f%% of FP32 peak", 100*a.ComputeEfficiency)},
		Source{"distributed alternative", "assumed", r.Rec.Distributed.Assumption})
	return out
}

// gpuMemorySource is the GPU memory's line among the sources: fixed by
// the plan's assumptions, or computed and decided.
func gpuMemorySource(a tpc.Assumptions, d tpc.Decisions) Source {
	if a.GPUReserveGiB > 0 {
		return Source{"GPU memory kept from the caches", "assumed", fmt.Sprintf("%g GiB per GPU", a.GPUReserveGiB)}
	}
	return Source{"GPU memory", "computed and decided", d.GPUWhy}
}
