package validate

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/gnnplan/gnnplan/profiles"
	"github.com/gnnplan/gnnplan/tpc"
)

// Case is one measurement: where it comes from and what it measured.
type Case struct {
	ID      string `json:"id"`
	Source  string `json:"source"`
	Where   string `json:"where"`   // figure, table or document
	Reading string `json:"reading"` // Stated, Label, Plot, or how this machine measured it
	// Group is the set of configurations the source compared: the model
	// must order them as it measured them.
	Group string `json:"group"`
	Label string `json:"label"`
	// Config names the configuration; repeated runs of one share it and
	// their order is not checked. "" is Label.
	Config   string  `json:"config,omitempty"`
	Metric   string  `json:"metric"` // EpochS, SamplesPerS or InletGBps
	Measured float64 `json:"measured"`
}

// Result is a case beside gnnplan's prediction of it.
type Result struct {
	Case
	Predicted float64 `json:"predicted"`
	// ErrorPct is (predicted - measured) / measured, in percent: positive
	// when the model predicts a longer epoch or a higher throughput.
	ErrorPct float64 `json:"error_pct"`
	Bound    string  `json:"bound,omitempty"`
	// Inputs are the figures the prediction took from the source itself.
	Inputs string `json:"inputs"`
}

// Order is one group's configurations, fastest first, as measured and as
// predicted.
type Order struct {
	Group     string   `json:"group"`
	Source    string   `json:"source"`
	Measured  []string `json:"measured"`
	Predicted []string `json:"predicted"`
	// Kept is false when two configurations the source measured more than
	// OrderTolerance apart come out the other way round, or tie.
	Kept  bool   `json:"kept"`
	Wrong string `json:"wrong,omitempty"` // the first pair out of order
}

// OrderTolerance is how far apart two measurements must be for their
// order to count: closer ones are within an epoch time's run-to-run spread
// and a plot's reading.
const OrderTolerance = 0.05

// Summary is the error over a set of cases.
type Summary struct {
	tpc.ValidatedError
	WorstCase string `json:"worst_case"`
	// OrdersKept of Orders groups keep their source's order.
	OrdersKept int `json:"orders_kept"`
	Orders     int `json:"orders"`
}

// Report is the whole validation.
type Report struct {
	Results   []Result `json:"cases"`
	Orders    []Order  `json:"orders"`
	Published Summary  `json:"published"`
	Here      Summary  `json:"this_machine"`
	// HereMachine is the machine this machine's cases were measured on.
	HereMachine string `json:"this_machine_cpu"`
}

// Run predicts every case and compares.
func Run(ctx context.Context) (*Report, error) {
	var res []Result
	for _, c := range append(momentCases(), hyperionCases()...) {
		r, err := c.predict(ctx)
		if err != nil {
			return nil, fmt.Errorf("case %s: %w", c.ID, err)
		}
		res = append(res, r)
	}
	here, err := loadHere()
	if err != nil {
		return nil, err
	}
	for _, c := range here.Cases {
		r, err := c.predict()
		if err != nil {
			return nil, fmt.Errorf("case %s: %w", c.ID, err)
		}
		res = append(res, r)
	}
	rep := &Report{Results: res, Orders: orders(res), HereMachine: here.Machine}
	rep.Published = summarize(rep, func(s string) bool { return s != Here })
	rep.Here = summarize(rep, func(s string) bool { return s == Here })
	return rep, nil
}

// Published is the model's error over the published cases: what
// recommend and the capacity review quote.
func Published(ctx context.Context) (tpc.ValidatedError, error) {
	rep, err := Run(ctx)
	if err != nil {
		return tpc.ValidatedError{}, err
	}
	return rep.Published.ValidatedError, nil
}

func (c gpuCase) predict(ctx context.Context) (Result, error) {
	m, err := profiles.Machine(c.machine)
	if err != nil {
		return Result{}, err
	}
	w, err := tpc.BuiltinWorkload(c.workload)
	if err != nil {
		return Result{}, err
	}
	if c.model != "" {
		if w, err = w.WithModel(c.model); err != nil {
			return Result{}, err
		}
	}
	if c.dim > 0 {
		w.FeatureDim = c.dim
	}
	cat := profiles.DefaultCatalog()
	gpu, err := cat.GPU(c.gpu)
	if err != nil {
		return Result{}, err
	}
	a := tpc.DefaultAssumptions()
	inputs := fmt.Sprintf("SSD %.2f GB/s measured by the source", c.ssdGBps)
	row := float64(w.FeatureRowBytes())
	switch {
	case c.noGPUCache:
		a.GPUReserveGiB = gpu.MemoryGiB
		inputs += "; no GPU cache"
	case c.gpuCacheGB > 0:
		a.GPUReserveGiB = gpu.MemoryGiB - c.gpuCacheGB*1e9/(1<<30)
		inputs += fmt.Sprintf("; GPU cache %g GB", c.gpuCacheGB)
	}
	switch {
	case c.inMemory:
		a.CPUCacheFraction = 1
		inputs = "every feature in host memory"
	case c.cpuCacheGB < 0:
		a.CPUCacheFraction = 0
		inputs += "; no host cache"
	case c.cpuCacheGB > 0:
		a.CPUCacheFraction = math.Min(1, c.cpuCacheGB*1e9/(row*float64(w.Vertices)))
		inputs += fmt.Sprintf("; host cache %g GB", c.cpuCacheGB)
	}
	p, err := tpc.PredictSetup(ctx, tpc.Setup{Machine: m, Catalog: cat, Workload: w, GPU: c.gpu, SSD: c.ssd,
		GPUs: c.gpus, SSDs: c.ssds, Layout: c.layout, SSDGBps: c.ssdGBps, Assumptions: a})
	if err != nil {
		return Result{}, err
	}
	pred := p.EpochSeconds
	switch c.Metric {
	case SamplesPerS:
		pred = p.SamplesPerSec
	case InletGBps:
		pred = p.Shares.EpochGB / float64(c.gpus) / p.EpochSeconds
	}
	return result(c.Case, pred, p.Bound, inputs), nil
}

func result(c Case, pred float64, bound, inputs string) Result {
	return Result{Case: c, Predicted: pred, ErrorPct: 100 * (pred - c.Measured) / c.Measured, Bound: bound, Inputs: inputs}
}

//go:embed this_machine.json
var hereJSON []byte

// hereFile is this machine's measurements: the plans recommend
// --this-machine wrote (the workload, the rates its probe measured, the
// batch's shape) and the median epoch train --plan measured.
type hereFile struct {
	Machine string     `json:"machine"`
	Date    string     `json:"date"`
	How     string     `json:"how"`
	Cases   []hereCase `json:"cases"`
}

type hereCase struct {
	ID       string       `json:"id"`
	Label    string       `json:"label"`
	Config   string       `json:"config"`
	Measured float64      `json:"measured_epoch_s"`
	Workload tpc.Workload `json:"workload"`
	Rates    tpc.CPURates `json:"cpu_rates"`
	Shape    tpc.CPUShape `json:"cpu_shape"`
	// HitShare is the share of row reads memory served, DiskRowsPerS the
	// rate the epochs read the rest at (out of core only): the plan is
	// predicted again at both, as train --plan does.
	HitShare      float64 `json:"hit_share"`
	DiskRowsPerS  float64 `json:"disk_rows_per_s"`
	CacheFraction float64 `json:"cache_fraction"`
}

func loadHere() (hereFile, error) {
	var f hereFile
	if err := json.Unmarshal(hereJSON, &f); err != nil {
		return f, fmt.Errorf("this machine's measurements: %w", err)
	}
	return f, nil
}

func (c hereCase) predict() (Result, error) {
	r := c.Rates
	inputs := "rates of recommend --this-machine's probe"
	if c.DiskRowsPerS > 0 {
		r.DiskRowsPerS = c.DiskRowsPerS
		inputs += fmt.Sprintf("; %.0f%% of rows from memory, the rest at the epochs' %.0f rows/s", 100*c.HitShare, c.DiskRowsPerS)
	}
	b, err := tpc.PredictCPU(c.Workload, c.Shape.Blocks, c.Shape.InputRows, r, c.HitShare)
	if err != nil {
		return Result{}, err
	}
	group := "this machine, in memory"
	if c.HitShare < 1 {
		group = "this machine, out of core"
	}
	cs := Case{ID: c.ID, Source: Here, Where: "docs/benchmarks.md (issue 33)", Reading: "median epoch of train --plan",
		Group: group, Label: c.Label, Config: c.Config, Metric: EpochS, Measured: c.Measured}
	return result(cs, b.BatchS*float64(c.Workload.BatchesPerEpoch()), b.Bound, inputs), nil
}

func (c Case) config() string {
	if c.Config != "" {
		return c.Config
	}
	return c.Label
}

// faster says whether a is a faster configuration than b under metric.
func faster(metric string, a, b float64) bool {
	if metric == SamplesPerS || metric == InletGBps {
		return a > b
	}
	return a < b
}

// orders checks each group: every pair the source measured more than
// OrderTolerance apart must come out the same way round.
func orders(res []Result) []Order {
	byGroup := map[string][]Result{}
	var names []string
	for _, r := range res {
		if _, ok := byGroup[r.Group]; !ok {
			names = append(names, r.Group)
		}
		byGroup[r.Group] = append(byGroup[r.Group], r)
	}
	var out []Order
	for _, g := range names {
		rs := byGroup[g]
		if len(rs) < 2 {
			continue
		}
		o := Order{Group: g, Source: rs[0].Source, Kept: true}
		meas := slices.Clone(rs)
		sort.SliceStable(meas, func(i, j int) bool { return faster(meas[i].Metric, meas[i].Measured, meas[j].Measured) })
		pred := slices.Clone(rs)
		sort.SliceStable(pred, func(i, j int) bool { return faster(pred[i].Metric, pred[i].Predicted, pred[j].Predicted) })
		for _, r := range meas {
			o.Measured = append(o.Measured, r.Label)
		}
		for _, r := range pred {
			o.Predicted = append(o.Predicted, r.Label)
		}
		for i := 0; i < len(meas) && o.Kept; i++ {
			for j := i + 1; j < len(meas); j++ {
				x, y := meas[i], meas[j]
				if x.config() == y.config() {
					continue
				}
				if math.Abs(x.Measured-y.Measured) <= OrderTolerance*math.Min(x.Measured, y.Measured) {
					continue
				}
				if !faster(x.Metric, x.Predicted, y.Predicted) {
					o.Kept = false
					o.Wrong = fmt.Sprintf("%s measured faster than %s (%.4g against %.4g), predicted %.4g against %.4g",
						x.Label, y.Label, x.Measured, y.Measured, x.Predicted, y.Predicted)
					break
				}
			}
		}
		out = append(out, o)
	}
	return out
}

func summarize(rep *Report, in func(source string) bool) Summary {
	var s Summary
	var errs []float64
	for _, r := range rep.Results {
		if !in(r.Source) {
			continue
		}
		s.Cases++
		if !slices.Contains(s.Sources, r.Source) {
			s.Sources = append(s.Sources, r.Source)
		}
		e := math.Abs(r.ErrorPct)
		errs = append(errs, e)
		if e > s.WorstPct {
			s.WorstPct, s.WorstCase = e, r.ID
		}
	}
	if len(errs) > 0 {
		slices.Sort(errs)
		n := len(errs)
		s.MedianPct = errs[n/2]
		if n%2 == 0 {
			s.MedianPct = (errs[n/2-1] + errs[n/2]) / 2
		}
	}
	for _, o := range rep.Orders {
		if in(o.Source) {
			s.Orders++
			if o.Kept {
				s.OrdersKept++
			}
		}
	}
	return s
}

// Only is the report of the cases whose source's name contains source
// (case does not matter); an error when none does.
func (rep *Report) Only(source string) (*Report, error) {
	want := strings.ToLower(strings.TrimSpace(source))
	keep := func(s string) bool { return strings.Contains(strings.ToLower(s), want) }
	out := &Report{HereMachine: rep.HereMachine}
	var names []string
	for _, r := range rep.Results {
		if keep(r.Source) {
			out.Results = append(out.Results, r)
		}
		if !slices.Contains(names, r.Source) {
			names = append(names, r.Source)
		}
	}
	if len(out.Results) == 0 {
		return nil, fmt.Errorf("no source matches %q (sources: %s)", source, strings.Join(names, ", "))
	}
	for _, o := range rep.Orders {
		if keep(o.Source) {
			out.Orders = append(out.Orders, o)
		}
	}
	out.Published = summarize(out, func(s string) bool { return s != Here })
	out.Here = summarize(out, func(s string) bool { return s == Here })
	return out, nil
}
