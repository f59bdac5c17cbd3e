package report

import (
	"fmt"
	"html/template"
	"io"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gnnplan/gnnplan/maxflow/placement"
	"github.com/gnnplan/gnnplan/topology"
	"github.com/gnnplan/gnnplan/tpc"
)

// TopOptions is how many ranked options the review's table lists.
const TopOptions = 15

// view is what the templates read: every figure formatted.
type view struct {
	Title, Subtitle                string
	Summary                        [][2]string
	Workload                       [][2]string
	Costs                          [][]string
	CostNote                       string
	Budgets, Range                 [][]string
	Feasibility                    [][2]string
	Hint, Fastest, Distributed     string
	NextSteps                      []string
	DistributedWhy                 string
	Notes                          []string
	Options                        [][]string
	OptionsHead                    []string
	Placement                      [][]string
	Bottlenecks                    []string
	Sources                        [][]string
	MachineNotes                   []string
	Topology, SSDPlot, GPUPlot     template.HTML
	TopologyFile, SSDFile, GPUFile string
	Legend                         string
	Version                        string
}

func (r *Review) view() *view {
	p, rec, b := r.Plan, r.Rec, r.Rec.Best
	v := &view{
		Title: fmt.Sprintf("Capacity review: %s %s on %s", p.Workload.Name, p.Workload.Model, r.Machine.Name),
		Subtitle: fmt.Sprintf("Budget $%s for one machine's 5-year TCO; %d hardware choices priced, %d distinct placements evaluated.",
			tpc.FormatUSD(p.BudgetUSD), rec.Searched, rec.Placements),
		Hint:      rec.Hint.Text,
		NextSteps: nextSteps(rec.Hint.Steps),
		Notes:     r.Notes,
		Version:   r.Version,
		Legend:    "Red, thick: links and devices the flow model saturates. Green: the GPUs placed; blue: the SSDs placed. Dashed: empty slots. Link labels give the capacity per direction in GB/s (decimal).",
	}
	dram := ""
	if b.DIMMs > 0 {
		dram = fmt.Sprintf(" + %d x %s (%.0f GiB more host memory)", b.DIMMs, b.DIMM.Name, b.AddedMemoryGiB())
	}
	buy := [2]string{"Buy", fmt.Sprintf("%d x %s + %s%s", b.GPUs, b.GPU.Name, ssdText(b.SSDs, b.SSD.Name), dram)}
	if rec.NothingToBuy != "" {
		v.Subtitle = fmt.Sprintf("Nothing one can buy fits the machine: %s. This review is of the machine as installed, at catalog prices.", rec.NothingToBuy)
		buy = [2]string{"Keep (as installed)", fmt.Sprintf("%d x %s + %s", b.GPUs, b.GPU.Name, ssdText(b.SSDs, b.SSD.Name))}
	}
	v.Summary = [][2]string{
		buy,
		{"5-year TCO", "$" + tpc.FormatUSD(b.CostUSD)},
		{"Throughput", fmt.Sprintf("%.0f samples/s", b.SamplesPerSec)},
		{"Epoch", fmt.Sprintf("%.1f s (IO %.1f s, training %.1f s)", b.EpochSeconds, b.EpochIOSeconds, b.EpochTrainSecs)},
		{"TPC", fmt.Sprintf("%.3f samples/s per $1k", b.TPC*1000)},
		{"Bound", b.Bound},
		{"Bytes per epoch", fmt.Sprintf("%.0f GB: %.0f%% from GPU memory, %.0f%% from CPU memory, %.0f%% from SSDs", b.Shares.EpochGB, 100*b.Shares.GPUCacheShare, 100*b.Shares.HostShare, 100*b.Shares.SSDShare)},
		{"How far to trust it", fmt.Sprintf("the model's predictions of published measurements had %s (gnnplan validate)", r.ModelError)},
	}
	if l := b.Loader; l != nil {
		v.Summary = append(v.Summary, [2]string{"Loader", l.Why})
	}
	v.Feasibility = r.Feasibility
	switch in := r.Installed; {
	case in != nil:
		ip := in.Prediction
		v.Summary = append(v.Summary, [2]string{"As installed", fmt.Sprintf("%d x %s + %s: epoch %.1f s, %.0f samples/s, TPC %.3f per $1k, %s-bound; %s",
			in.GPUs, in.GPU, ssdText(in.SSDs, in.SSD), ip.EpochSeconds, ip.SamplesPerSec, 1000*ip.TPC, ip.Bound, keptOrBought(in, b))})
	case r.InstalledNote != "":
		v.Summary = append(v.Summary, [2]string{"As installed", "not predicted: " + r.InstalledNote})
	}
	w := p.Workload
	feat, topo := w.DatasetBytes()
	v.Workload = [][2]string{
		{"Dataset", fmt.Sprintf("%s: %s vertices, %s edges", w.Name, tpc.FormatUSD(float64(w.Vertices)), tpc.FormatUSD(float64(w.Edges)))},
		{"Features", fmt.Sprintf("%d x %d-byte values a vertex (%d bytes a row), %.0f GB; topology %.0f GB", w.FeatureDim, w.FeatureBytes, w.FeatureRowBytes(), float64(feat)/1e9, float64(topo)/1e9)},
		{"Model", fmt.Sprintf("%s, hidden %d, fanouts %s, batch %d", w.Model, w.Hidden, strings.Trim(strings.Join(strings.Fields(fmt.Sprint(w.Fanouts)), ","), "[]"), w.BatchSize)},
		{"Training vertices", fmt.Sprintf("%.2f%% of the vertices, each once an epoch", 100*w.TrainFraction)},
	}
	cat := rec.Request.Catalog
	h := cat.Host
	v.Costs = [][]string{
		{"Host (chassis, CPUs, memory)", "$" + tpc.FormatUSD(h.MachineUSD), "1", "$" + tpc.FormatUSD(h.MachineUSD), "capex", sourcePart(h.Sources, "machine: ")},
		{b.GPU.Name, "$" + tpc.FormatUSD(b.GPU.PriceUSD), fmt.Sprint(b.GPUs), "$" + tpc.FormatUSD(b.GPU.PriceUSD*float64(b.GPUs)), "capex", priceSource(b.GPU.Sources)},
	}
	if b.SSDs > 0 {
		v.Costs = append(v.Costs, []string{b.SSD.Name, "$" + tpc.FormatUSD(b.SSD.PriceUSD), fmt.Sprint(b.SSDs), "$" + tpc.FormatUSD(b.SSD.PriceUSD*float64(b.SSDs)), "capex", priceSource(b.SSD.Sources)})
	}
	if b.DIMMs > 0 {
		v.Costs = append(v.Costs, []string{b.DIMM.Name, "$" + tpc.FormatUSD(b.DIMM.PriceUSD), fmt.Sprint(b.DIMMs), "$" + tpc.FormatUSD(b.DIMM.PriceUSD*float64(b.DIMMs)), "capex", priceSource(b.DIMM.Sources)})
	}
	v.Costs = append(v.Costs, []string{fmt.Sprintf("Electricity: %g kW at $%g/kWh for %g years", h.PowerKW, h.USDPerKWh, h.Years), "", "", "$" + tpc.FormatUSD(h.ElectricityUSD), "opex", sourcePart(h.Sources, "electricity: ")})
	capex := h.MachineUSD + b.GPU.PriceUSD*float64(b.GPUs) + b.SSD.PriceUSD*float64(b.SSDs) + b.DIMM.PriceUSD*float64(b.DIMMs)
	v.CostNote = fmt.Sprintf("Capex $%s, opex $%s over %g years: 5-year TCO $%s (Hyperion's equation 5). Prices from %s.",
		tpc.FormatUSD(capex), tpc.FormatUSD(h.ElectricityUSD), h.Years, tpc.FormatUSD(capex+h.ElectricityUSD), r.CatalogName)
	for _, st := range r.Budgets {
		row := []string{"$" + tpc.FormatUSD(st.BudgetUSD), "no plan", "", "", ""}
		if o := st.Best; o != nil {
			row = []string{"$" + tpc.FormatUSD(st.BudgetUSD), fmt.Sprintf("%d x %s + %d x %s", o.GPUs, o.GPU.Key, o.SSDs, o.SSD.Key),
				"$" + tpc.FormatUSD(o.CostUSD), fmt.Sprintf("%.0f", o.SamplesPerSec), fmt.Sprintf("%.3f", 1000*o.TPC)}
		}
		v.Budgets = append(v.Budgets, row)
	}
	v.Range = [][]string{{fmt.Sprintf("the plan's: access skew x^%.2f", p.Assumptions.SkewExponent), fmt.Sprintf("%.1f", b.EpochSeconds), fmt.Sprintf("%.0f", b.SamplesPerSec)}}
	for _, x := range r.Range {
		v.Range = append(v.Range, []string{x.Assumption, fmt.Sprintf("%.1f", x.Epoch), fmt.Sprintf("%.0f", x.SamplesPS)})
	}
	if m := r.ModelError.MedianPct; m > 0 {
		v.Range = append(v.Range, []string{fmt.Sprintf("the model's median error on published measurements (%.0f%%)", m),
			fmt.Sprintf("%.1f to %.1f", b.EpochSeconds*(1-m/100), b.EpochSeconds*(1+m/100)), fmt.Sprintf("%.0f to %.0f", b.SamplesPerSec/(1+m/100), b.SamplesPerSec/(1-m/100))})
	}
	if f := rec.Fastest; f != b {
		v.Fastest = fmt.Sprintf("Fastest within budget: %d x %s + %d x %s, $%s, %.0f samples/s (%.2fx the recommended), TPC %.3f per $1k.",
			f.GPUs, f.GPU.Key, f.SSDs, f.SSD.Key, tpc.FormatUSD(f.CostUSD), f.SamplesPerSec, f.SamplesPerSec/b.SamplesPerSec, f.TPC*1000)
	}
	d := rec.Distributed
	v.Distributed = fmt.Sprintf("%d machines, $%s, %.0f samples/s, TPC %.3f per $1k: the recommended plan is %.1fx better per dollar.",
		d.Machines, tpc.FormatUSD(d.CostUSD), d.SamplesPerSec, d.TPC*1000, d.CostPerSample)
	v.DistributedWhy = d.Assumption
	v.OptionsHead = []string{"Rank", "GPUs", "SSDs", "Cost $", "Samples/s", "Epoch s", "TPC per $1k", "Bound"}
	for i, o := range rec.Options {
		if i >= TopOptions && o != rec.Fastest {
			continue
		}
		rank := fmt.Sprint(i + 1)
		switch {
		case rec.NothingToBuy != "":
			rank = "installed"
		case o == rec.Fastest:
			rank += " (fastest)"
		}
		v.Options = append(v.Options, []string{rank, fmt.Sprintf("%d x %s", o.GPUs, o.GPU.Key), ssdText(o.SSDs, o.SSD.Key),
			tpc.FormatUSD(o.CostUSD), fmt.Sprintf("%.0f", o.SamplesPerSec), fmt.Sprintf("%.1f", o.EpochSeconds), fmt.Sprintf("%.3f", o.TPC*1000), o.Bound})
	}
	plan := rec.Plan()
	var ids []string
	for id := range plan.Placement.Devices {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return topology.NaturalLess(ids[i], ids[j]) })
	for _, id := range ids {
		inlet := ""
		if g, ok := plan.PerGPUGBps[id]; ok {
			inlet = fmt.Sprintf("%.2f", g)
		}
		v.Placement = append(v.Placement, []string{id, plan.Placement.Devices[id], plan.Placement.Where[id], inlet})
	}
	v.Bottlenecks = append(v.Bottlenecks, placement.BottleneckSummary(r.Eval.Bottlenecks))
	for _, s := range r.Sources {
		v.Sources = append(v.Sources, []string{s.Figure, s.From, s.Detail})
	}
	v.MachineNotes = r.Machine.Notes
	v.Topology, v.SSDPlot, v.GPUPlot = template.HTML(r.TopologySVG), template.HTML(r.SSDPlotSVG), template.HTML(r.GPUPlotSVG)
	return v
}

// ssdText is "n x model" or "no SSD".
func ssdText(n int, model string) string {
	if n == 0 {
		return "no SSD"
	}
	return fmt.Sprintf("%d x %s", n, model)
}

// nextSteps says, a line each, what one more SSD, the next memory and one
// more GPU would each add to the plan.
func nextSteps(steps []tpc.NextStep) []string {
	var out []string
	for _, st := range steps {
		if st.Why != "" {
			out = append(out, fmt.Sprintf("%s: not priced (%s)", st.What, st.Why))
			continue
		}
		out = append(out, fmt.Sprintf("%s: $%s more, %+.1f%% throughput, %+.1f%% TPC", st.What, tpc.FormatUSD(st.AddedUSD), 100*st.ThroughputGain, 100*st.TPCGain))
	}
	return out
}

// keptOrBought says which installed devices the plan keeps and what it
// buys: devices of the plan's model are kept, others replaced.
func keptOrBought(in *tpc.Installed, b *tpc.Option) string {
	part := func(what string, have int, haveModel string, want int, wantModel string) string {
		switch {
		case want == 0 && have == 0:
			return ""
		case haveModel == wantModel && have >= want:
			return fmt.Sprintf("keeps %d of the %d %s", want, have, what)
		case haveModel == wantModel:
			return fmt.Sprintf("keeps the %d %s and buys %d more", have, what, want-have)
		case have == 0:
			return fmt.Sprintf("buys %d %s", want, what)
		default:
			return fmt.Sprintf("replaces the %d %s with %d x %s", have, what, want, wantModel)
		}
	}
	var out []string
	for _, s := range []string{part("GPUs", in.GPUs, in.GPU, b.GPUs, b.GPU.Key), part("SSDs", in.SSDs, in.SSD, b.SSDs, b.SSD.Key)} {
		if s != "" {
			out = append(out, s)
		}
	}
	return "the plan " + strings.Join(out, " and ")
}

// priceSource is the price part of a catalog entry's sources ("price:
// estimate: ..." up to its "rates:"), or all of it.
func priceSource(src string) string { return sourcePart(src, "price: ") }

// sourcePart is the part of a catalog sources text that starts with key
// ("price: ", "machine: ", "electricity: "), up to the next such part;
// all of it where key is not there.
func sourcePart(src, key string) string {
	i := strings.Index(src, key)
	if i < 0 {
		return strings.TrimSpace(src)
	}
	rest := src[i+len(key):]
	end := len(rest)
	for _, next := range []string{" rates:", " machine:", " electricity:", " memory:", " price:"} {
		if j := strings.Index(rest, next); j >= 0 && j < end {
			end = j
		}
	}
	return strings.TrimSpace(rest[:end])
}

var htmlTmpl = template.Must(template.New("review").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="gnnplan {{.Version}}">
<title>{{.Title}}</title>
<style>
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 2em auto; max-width: 70em; color: #222; line-height: 1.45; padding: 0 1em; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { font-size: 1.25em; border-bottom: 1px solid #ddd; padding-bottom: 0.2em; margin-top: 1.8em; }
table { border-collapse: collapse; margin: 0.6em 0; font-size: 0.92em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.note { background: #fff4e5; border-left: 4px solid #f0a030; padding: 0.5em 0.8em; margin: 0.8em 0; }
figure { margin: 1em 0; overflow-x: auto; }
figure svg { max-width: 100%; height: auto; }
figcaption { font-size: 0.9em; color: #555; }
.plots { display: flex; flex-wrap: wrap; gap: 1em; }
.plots figure { flex: 1 1 30em; }
footer { margin-top: 2em; font-size: 0.85em; color: #777; }
@media print {
  body { max-width: none; margin: 0; font-size: 10pt; }
  h2 { break-after: avoid; }
  figure, tr, .note { break-inside: avoid; }
}
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p>{{.Subtitle}}</p>
{{range .Notes}}<p class="note">{{.}}</p>
{{end}}
<h2 id="recommendation">Recommendation</h2>
<table id="summary">
{{range .Summary}}<tr><th>{{index . 0}}</th><td>{{index . 1}}</td></tr>
{{end}}</table>
<p id="hint"><strong>What binds and what the next dollar buys:</strong> {{.Hint}}</p>
{{if .NextSteps}}<ul id="next-steps">{{range .NextSteps}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{if .Fastest}}<p>{{.Fastest}}</p>{{end}}
<p id="distributed"><strong>Distributed in-memory alternative:</strong> {{.Distributed}} <br><small>{{.DistributedWhy}}</small></p>

<h2 id="workload">The workload</h2>
<table id="workload-table">
{{range .Workload}}<tr><th>{{index . 0}}</th><td>{{index . 1}}</td></tr>
{{end}}</table>

<h2 id="costs">What it costs</h2>
<table id="cost-breakdown">
<tr><th>Item</th><th>Unit price</th><th>Count</th><th>Subtotal</th><th>Kind</th><th>Price from</th></tr>
{{range .Costs}}<tr><td>{{index . 0}}</td><td class="num">{{index . 1}}</td><td class="num">{{index . 2}}</td><td class="num">{{index . 3}}</td><td>{{index . 4}}</td><td>{{index . 5}}</td></tr>
{{end}}</table>
<p>{{.CostNote}}</p>

<h2 id="feasibility">Building it</h2>
<table id="feasibility-table">
{{range .Feasibility}}<tr><th>{{index . 0}}</th><td>{{index . 1}}</td></tr>
{{end}}</table>

<h2 id="sensitivity">How the plan moves with the budget and the assumptions</h2>
<table id="budgets">
<tr><th>Budget</th><th>Best plan (highest TPC)</th><th>5-year TCO</th><th>Samples/s</th><th>TPC per $1k</th></tr>
{{range .Budgets}}<tr><td class="num">{{index . 0}}</td><td>{{index . 1}}</td><td class="num">{{index . 2}}</td><td class="num">{{index . 3}}</td><td class="num">{{index . 4}}</td></tr>
{{end}}</table>
<table id="range">
<tr><th>The recommended hardware, with</th><th>Epoch s</th><th>Samples/s</th></tr>
{{range .Range}}<tr><td>{{index . 0}}</td><td class="num">{{index . 1}}</td><td class="num">{{index . 2}}</td></tr>
{{end}}</table>

<h2 id="machine">The machine and the placement</h2>
<figure id="topology">
{{.Topology}}
<figcaption>{{.Legend}}</figcaption>
</figure>
<table id="placement">
<tr><th>Device</th><th>Slot</th><th>Where</th><th>Inlet GB/s</th></tr>
{{range .Placement}}<tr><td>{{index . 0}}</td><td>{{index . 1}}</td><td>{{index . 2}}</td><td class="num">{{index . 3}}</td></tr>
{{end}}</table>
<p><strong>Saturated:</strong> {{range .Bottlenecks}}{{.}}{{end}}</p>

<h2 id="options">Options ranked by TPC</h2>
<table id="ranked">
<tr>{{range .OptionsHead}}<th>{{.}}</th>{{end}}</tr>
{{range .Options}}<tr>{{range $i, $c := .}}<td{{if and (ge $i 3) (le $i 6)}} class="num"{{end}}>{{$c}}</td>{{end}}</tr>
{{end}}</table>

<h2 id="plots">TPC and throughput against SSD and GPU counts</h2>
<div class="plots">
<figure id="plot-ssds">{{.SSDPlot}}<figcaption>Against the SSD count, for the recommended GPU choice: where TPC peaks is the recommended count; where throughput flattens the next bottleneck took over.</figcaption></figure>
<figure id="plot-gpus">{{.GPUPlot}}<figcaption>Against the GPU count, each at its best SSD count.</figcaption></figure>
</div>

<h2 id="sources">Assumptions and where each figure came from</h2>
<table id="provenance">
<tr><th>Figure</th><th>From</th><th>Detail</th></tr>
{{range .Sources}}<tr><td>{{index . 0}}</td><td>{{index . 1}}</td><td>{{index . 2}}</td></tr>
{{end}}</table>
{{if .MachineNotes}}<p>Notes on the machine description:</p>
<ul>{{range .MachineNotes}}<li>{{.}}</li>{{end}}</ul>{{end}}
<footer>Written by gnnplan {{.Version}}. Self-contained: opens without network access.</footer>
</body>
</html>
`))

// WriteHTML writes the review as one self-contained HTML file.
func (r *Review) WriteHTML(w io.Writer) error {
	if err := htmlTmpl.Execute(w, r.view()); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// Figures names the SVG files a Markdown review refers to, by stem.
func Figures(stem string) (topology, ssds, gpus string) {
	return stem + "-topology.svg", stem + "-ssds.svg", stem + "-gpus.svg"
}

// WriteMarkdown writes the review as Markdown that refers to its figures
// as the files Figures(stem) names (relative links); the caller writes the
// SVGs (TopologySVG, SSDPlotSVG, GPUPlotSVG) there.
func (r *Review) WriteMarkdown(w io.Writer, stem string) error {
	v := r.view()
	v.TopologyFile, v.SSDFile, v.GPUFile = Figures(filepath.Base(stem))
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n%s\n\n", v.Title, v.Subtitle)
	for _, n := range v.Notes {
		fmt.Fprintf(&b, "> **Note:** %s\n\n", n)
	}
	b.WriteString("## Recommendation\n\n| | |\n|---|---|\n")
	mdPairs(&b, v.Summary)
	fmt.Fprintf(&b, "\n**What binds and what the next dollar buys:** %s\n\n", v.Hint)
	for _, st := range v.NextSteps {
		fmt.Fprintf(&b, "- %s\n", st)
	}
	if len(v.NextSteps) > 0 {
		b.WriteString("\n")
	}
	if v.Fastest != "" {
		fmt.Fprintf(&b, "%s\n\n", v.Fastest)
	}
	fmt.Fprintf(&b, "**Distributed in-memory alternative:** %s (%s)\n\n", v.Distributed, v.DistributedWhy)
	b.WriteString("## The workload\n\n| | |\n|---|---|\n")
	mdPairs(&b, v.Workload)
	b.WriteString("\n## What it costs\n\n| Item | Unit price | Count | Subtotal | Kind | Price from |\n|---|---:|---:|---:|---|---|\n")
	mdRows(&b, v.Costs)
	fmt.Fprintf(&b, "\n%s\n\n", v.CostNote)
	b.WriteString("## Building it\n\n| | |\n|---|---|\n")
	mdPairs(&b, v.Feasibility)
	b.WriteString("\n## How the plan moves with the budget and the assumptions\n\n| Budget | Best plan (highest TPC) | 5-year TCO | Samples/s | TPC per $1k |\n|---:|---|---:|---:|---:|\n")
	mdRows(&b, v.Budgets)
	b.WriteString("\n| The recommended hardware, with | Epoch s | Samples/s |\n|---|---:|---:|\n")
	mdRows(&b, v.Range)
	b.WriteString("\n")
	fmt.Fprintf(&b, "## The machine and the placement\n\n![topology of %s](%s)\n\n%s\n\n", mdCell(r.Machine.Name), v.TopologyFile, v.Legend)
	b.WriteString("| Device | Slot | Where | Inlet GB/s |\n|---|---|---|---:|\n")
	mdRows(&b, v.Placement)
	fmt.Fprintf(&b, "\n**Saturated:** %s\n\n## Options ranked by TPC\n\n| %s |\n|---|---|---|---:|---:|---:|---:|---|\n", strings.Join(v.Bottlenecks, "; "), strings.Join(v.OptionsHead, " | "))
	mdRows(&b, v.Options)
	fmt.Fprintf(&b, "\n## TPC and throughput against SSD and GPU counts\n\n![against the SSD count](%s)\n\n![against the GPU count](%s)\n\n", v.SSDFile, v.GPUFile)
	b.WriteString("## Assumptions and where each figure came from\n\n| Figure | From | Detail |\n|---|---|---|\n")
	mdRows(&b, v.Sources)
	if len(v.MachineNotes) > 0 {
		b.WriteString("\nNotes on the machine description:\n\n")
		for _, n := range v.MachineNotes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
	}
	fmt.Fprintf(&b, "\n_Written by gnnplan %s._\n", v.Version)
	_, err := io.WriteString(w, b.String())
	return err
}

// mdPairs writes rows of two cells as Markdown table rows.
func mdPairs(b *strings.Builder, rows [][2]string) {
	for _, row := range rows {
		fmt.Fprintf(b, "| %s | %s |\n", mdCell(row[0]), mdCell(row[1]))
	}
}

// mdRows writes rows as Markdown table rows.
func mdRows(b *strings.Builder, rows [][]string) {
	for _, row := range rows {
		fmt.Fprintf(b, "| %s |\n", strings.Join(mdCells(row), " | "))
	}
}

func mdCell(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ") }

func mdCells(row []string) []string {
	out := make([]string, len(row))
	for i, c := range row {
		out[i] = mdCell(c)
	}
	return out
}
