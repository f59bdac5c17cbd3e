package tpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/gnnplan/gnnplan/internal/fsutil"

	"github.com/gnnplan/gnnplan/maxflow/placement"
	"github.com/gnnplan/gnnplan/profiles"
	"github.com/gnnplan/gnnplan/topology"
)

// PlanSchemaVersion versions plan.json. Version 3 spells every key as
// every other gnnplan JSON does (snake_case words, a unit suffix as the
// unit is written: cost_USD, demand_GB, memory_GiB; docs/json.md), keeps
// the catalog the plan was priced with, and says when it is the machine
// as installed (nothing_to_buy).
const PlanSchemaVersion = 3

// Plan is what `gnnplan recommend --save plan.json` writes and `place` and
// `train` read: the machine with its devices placed, what each storage
// node should serve, and the prediction with everything it assumed. The
// top-level keys budget_USD, cost_USD, predicted_epoch_s, samples_per_s
// and tpc are there for scripts.
type Plan struct {
	SchemaVersion   int     `json:"schema_version"`
	BudgetUSD       float64 `json:"budget_USD"`
	CostUSD         float64 `json:"cost_USD"`
	PredictedEpochS float64 `json:"predicted_epoch_s"`
	SamplesPerS     float64 `json:"samples_per_s"`
	// TPC is samples per second per USD of 5-year TCO (Hyperion eq. 3).
	TPC float64 `json:"tpc"`

	// Loader is how the plan's training loads its batches (online,
	// packed or multistage; prediction.loader says why).
	Loader    string        `json:"loader,omitempty"`
	Workload  Workload      `json:"workload"`
	Hardware  PlanHardware  `json:"hardware"`
	Placement PlanPlacement `json:"placement"`
	// Machine is the machine with the plan's devices in their slots.
	Machine    *topology.Machine `json:"machine"`
	Prediction Prediction        `json:"prediction"`
	// PerGPUGBps is each GPU's predicted average inlet bandwidth.
	PerGPUGBps map[string]float64 `json:"per_gpu_GBps"`
	// StorageTraffic is each storage node's target traffic per epoch,
	// which data placement (DDAK) matches.
	StorageTraffic []placement.StorageTraffic `json:"storage_traffic"`
	Bottlenecks    []placement.Bottleneck     `json:"bottlenecks"`
	Hint           Hint                       `json:"hint"`
	Fastest        PlanSummary                `json:"fastest_within_budget"`
	Distributed    Distributed                `json:"distributed_alternative"`
	Tiers          placement.Tiers            `json:"tiers"`
	// Assumptions are what the prediction assumed, with the decided CPU
	// cache in cpu_cache_fraction; Decisions what the plan chose and why.
	Assumptions Assumptions `json:"assumptions"`
	Decisions   Decisions   `json:"decisions"`
	// Search is what the recommendation searched, so a report can price
	// the same options again.
	Search PlanSearch `json:"search"`
	// Cache is set in a plan of CPU training on the machine that made it
	// (recommend --this-machine): how much of the features training holds
	// in memory, which train --plan then holds.
	Cache *PlanCache `json:"cache,omitempty"`
	// CPUBatch is such a plan's predicted batch, stage by stage;
	// CPURates and CPUShape what it was predicted from, so that training
	// can predict it again at the cache and disk rate it ran at.
	CPUBatch *CPUBatch `json:"cpu_batch,omitempty"`
	CPURates *CPURates `json:"cpu_rates,omitempty"`
	CPUShape *CPUShape `json:"cpu_shape,omitempty"`
	// ValidatedError is how far this model's predictions were from the
	// published measurements gnnplan validate checks it against.
	ValidatedError *ValidatedError `json:"validated_error,omitempty"`
	// Catalog is the catalog the plan was priced with (the built-in one,
	// or it with a --catalog file's entries over it): prices, rates and
	// sources, so a review prices the plan as it was made. CatalogSource
	// names it ("the built-in catalog", "catalog prices.yaml").
	Catalog       *profiles.Catalog `json:"catalog,omitempty"`
	CatalogSource string            `json:"catalog_source,omitempty"`
	// Installed is the machine as it stood when the plan was made (its
	// own GPUs and SSDs where they were), nil where it held none or they
	// matched no catalog model (InstalledNote says which).
	Installed     *Installed `json:"installed,omitempty"`
	InstalledNote string     `json:"installed_note,omitempty"`
	// NothingToBuy, when set, says why nothing one can buy fits the
	// machine: the plan is then the machine as installed, buying nothing.
	NothingToBuy string   `json:"nothing_to_buy,omitempty"`
	Notes        []string `json:"notes,omitempty"`
}

// ValidatedError is the model's error over a set of measurements it was
// checked against (gnnplan validate): how far to trust a plan's numbers.
type ValidatedError struct {
	Cases     int      `json:"cases"`
	Sources   []string `json:"sources"`
	MedianPct float64  `json:"median_abs_error_pct"`
	WorstPct  float64  `json:"worst_abs_error_pct"`
}

// String says it in a line, e.g. "median |error| 22% and worst 66% over
// 37 measurements (Moment (SC'25), Hyperion (ICDE'25))".
func (v ValidatedError) String() string {
	return fmt.Sprintf("median |error| %.0f%% and worst %.0f%% over %d measurements (%s)",
		v.MedianPct, v.WorstPct, v.Cases, strings.Join(v.Sources, ", "))
}

// CPUShape is a batch's mean shape, from pre-sampling the dataset: its
// blocks, the seeds' first, and its distinct input rows.
type CPUShape struct {
	Blocks    []BlockShape `json:"blocks"`
	InputRows float64      `json:"input_rows"`
}

// PredictAgain predicts p's epoch again with hit of the rows from memory
// and the disks at diskRowsPerS (a CPU plan's model on what training
// measured); false for a plan without its rates and shape.
func (p *Plan) PredictAgain(hit, diskRowsPerS float64) (float64, bool) {
	if p.CPURates == nil || p.CPUShape == nil {
		return 0, false
	}
	r := *p.CPURates
	if diskRowsPerS > 0 {
		r.DiskRowsPerS = diskRowsPerS
	}
	b, err := PredictCPU(p.Workload, p.CPUShape.Blocks, p.CPUShape.InputRows, r, hit)
	if err != nil {
		return 0, false
	}
	return b.BatchS * float64(p.Workload.BatchesPerEpoch()), true
}

// PlanCache is the feature cache a plan of CPU training predicted with.
type PlanCache struct {
	// Fraction is the share of the vertices' rows held in memory (1: all
	// of them, training in memory; below 1, the hottest rows, the rest
	// read from disk).
	Fraction float64 `json:"fraction"`
	// HitShare is the share of a batch's row reads it serves, and
	// HitSource where that share comes from (measured hotness or the
	// power law).
	HitShare  float64 `json:"hit_share"`
	HitSource string  `json:"hit_source"`
}

// PlanSearch is the recommendation's search space beyond the budget.
type PlanSearch struct {
	GPUModels       []string `json:"gpu_models,omitempty"` // empty: every catalog model
	SSDModels       []string `json:"ssd_models,omitempty"`
	MinGPUs         int      `json:"min_gpus"`
	MaxGPUs         int      `json:"max_gpus"`
	SSDCounts       []int    `json:"ssd_counts,omitempty"` // empty: 0 to what the slots take
	MeasuredSSDGBps float64  `json:"measured_ssd_GBps,omitempty"`
	CPUCacheGiB     float64  `json:"cpu_cache_GiB,omitempty"` // fixed by --cpu-cache-gib; 0: decided
	Loaders         []string `json:"loaders,omitempty"`       // empty: every loader
}

// PlanHardware is what the plan buys, or, for a plan of CPU training on
// the machine that made it, the cores it trains on.
type PlanHardware struct {
	CPUCores int     `json:"cpu_cores,omitempty"`
	GPUModel string  `json:"gpu_model"`
	GPUs     int     `json:"gpus"`
	SSDModel string  `json:"ssd_model"`
	SSDs     int     `json:"ssds"`
	GPUUSD   float64 `json:"gpu_price_USD"`
	SSDUSD   float64 `json:"ssd_price_USD"`
	// DIMMModel and DIMMs are the memory bought into free DIMM slots.
	DIMMModel string  `json:"dimm_model,omitempty"`
	DIMMs     int     `json:"dimms,omitempty"`
	DIMMUSD   float64 `json:"dimm_price_USD,omitempty"`
}

// PlanPlacement says where each device goes.
type PlanPlacement struct {
	Devices  map[string]string `json:"devices"` // device id -> slot id
	Where    map[string]string `json:"where"`   // device id -> readable slot location
	GPUSlots []string          `json:"gpu_slots"`
	SSDSlots []string          `json:"ssd_slots"`
}

// PlanSummary is a short description of another option.
type PlanSummary struct {
	GPUModel    string  `json:"gpu_model"`
	GPUs        int     `json:"gpus"`
	SSDModel    string  `json:"ssd_model"`
	SSDs        int     `json:"ssds"`
	CostUSD     float64 `json:"cost_USD"`
	SamplesPerS float64 `json:"samples_per_s"`
	TPC         float64 `json:"tpc"`
}

func summarize(o *Option) PlanSummary {
	return PlanSummary{GPUModel: o.GPU.Key, GPUs: o.GPUs, SSDModel: o.SSD.Key, SSDs: o.SSDs, CostUSD: o.CostUSD,
		SamplesPerS: o.SamplesPerSec, TPC: o.TPC}
}

// Plan builds the plan of the recommendation's best option.
func (rec *Recommendation) Plan() *Plan {
	b := rec.Best
	p := &Plan{SchemaVersion: PlanSchemaVersion, BudgetUSD: rec.Request.BudgetUSD, CostUSD: b.CostUSD, Loader: LoaderOnline,
		PredictedEpochS: b.EpochSeconds, SamplesPerS: b.SamplesPerSec, TPC: b.TPC,
		Workload: rec.Request.Workload, Machine: rec.BestMachine, Prediction: b.Prediction,
		Hardware: PlanHardware{GPUModel: b.GPU.Key, GPUs: b.GPUs, SSDModel: b.SSD.Key, SSDs: b.SSDs, GPUUSD: b.GPU.PriceUSD, SSDUSD: b.SSD.PriceUSD,
			DIMMModel: b.DIMM.Key, DIMMs: b.DIMMs, DIMMUSD: b.DIMM.PriceUSD},
		Placement: PlanPlacement{Devices: map[string]string{}, Where: map[string]string{},
			GPUSlots: b.Placement.GPUSlots, SSDSlots: b.Placement.SSDSlots},
		PerGPUGBps: map[string]float64{}, StorageTraffic: rec.BestEval.Traffic, Bottlenecks: rec.BestEval.Bottlenecks,
		Hint: rec.Hint, Fastest: summarize(rec.Fastest), Distributed: rec.Distributed,
		Tiers: tiersFor(b.Shares, b.SSDGBps, rec.Request.Assumptions), Assumptions: decided(rec.Request.Assumptions, b.Decisions), Decisions: b.Decisions,
		Search: PlanSearch{GPUModels: rec.Request.GPUModels, SSDModels: rec.Request.SSDModels, MinGPUs: rec.Request.MinGPUs,
			MaxGPUs: rec.Request.MaxGPUs, SSDCounts: rec.Request.SSDCounts, MeasuredSSDGBps: rec.Request.MeasuredSSDGBps,
			CPUCacheGiB: rec.Request.CPUCacheGiB, Loaders: rec.Request.Loaders}}
	for i, s := range b.Placement.GPUSlots {
		id := fmt.Sprintf("gpu%d", i)
		p.Placement.Devices[id], p.Placement.Where[id] = s, placement.SlotLocation(rec.Machine, s)
	}
	for i, s := range b.Placement.SSDSlots {
		id := fmt.Sprintf("nvme%d", i)
		p.Placement.Devices[id], p.Placement.Where[id] = s, placement.SlotLocation(rec.Machine, s)
	}
	for _, g := range rec.BestEval.PerGPU {
		p.PerGPUGBps[g.ID] = g.GBps
	}
	if b.Loader != nil {
		p.Loader = b.Loader.Name
	}
	p.ValidatedError = rec.ValidatedError
	p.Catalog = rec.Request.Catalog
	p.NothingToBuy = rec.NothingToBuy
	p.Notes = append(p.Notes, "T_train: "+b.TrainTimeSource,
		"access skew: the hottest fraction x of vertices gets x^a of the accesses (no measured hotness yet)")
	return p
}

// CPUPlan is the plan of training w on the machine m with CPU workers at
// rates r, with cache of the features in memory, where a batch is
// predicted to take b: what recommend --this-machine writes and train
// --plan then runs.
func CPUPlan(w Workload, m *topology.Machine, r CPURates, shape CPUShape, cache PlanCache, b CPUBatch) (*Plan, error) {
	if err := w.Validate(); err != nil {
		return nil, err
	}
	if !(b.BatchS > 0) {
		return nil, fmt.Errorf("cpu plan: a predicted batch of %g s", b.BatchS)
	}
	epoch := b.BatchS * float64(w.BatchesPerEpoch())
	p := &Plan{SchemaVersion: PlanSchemaVersion, PredictedEpochS: epoch, Workload: w, Machine: m,
		SamplesPerS: float64(w.BatchSize) * float64(w.BatchesPerEpoch()) / epoch,
		Hardware:    PlanHardware{CPUCores: r.Cores},
		Placement:   PlanPlacement{Devices: map[string]string{}, Where: map[string]string{}},
		PerGPUGBps:  map[string]float64{}, Cache: &cache, CPUBatch: &b, CPURates: &r, CPUShape: &shape,
		Notes: []string{fmt.Sprintf("CPU training on this machine: %d cores, products %.1f GFLOP/s, aggregation %.1f GB/s, row gather %.1f GB/s, in-order passes %.1f GB/s, sampling %.2f M edges/s a core, disks %.0f rows/s (%s)",
			r.Cores, r.GEMMGFLOPS, r.Rate(r.AggregationGBps), r.Rate(r.RowGatherGBps), r.Rate(r.StreamGBps), r.SamplerEdgesPerSPerCore/1e6, r.DiskRowsPerS, r.Source)}}
	return p, nil
}

// WritePlan writes the plan as JSON to path atomically.
func WritePlan(path string, p *Plan) error {
	var buf bytes.Buffer
	if err := EncodePlan(&buf, p); err != nil {
		return err
	}
	return fsutil.WriteFileAtomic(path, buf.Bytes())
}

// EncodePlan writes p as plan.json's indented JSON to w.
func EncodePlan(w io.Writer, p *Plan) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(p); err != nil {
		return fmt.Errorf("encode plan: %w", err)
	}
	return nil
}

// LoadPlan reads a plan.json, checking its schema version and machine.
func LoadPlan(path string) (*Plan, error) {
	data, err := fsutil.ReadRegularFile(path)
	if err != nil {
		return nil, &topology.InputError{Path: path, Field: "--plan", Msg: "cannot read plan", Err: err}
	}
	var probe struct {
		SchemaVersion *int `json:"schema_version"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, planJSONError(path, data, err)
	}
	if probe.SchemaVersion != nil && *probe.SchemaVersion >= 1 && *probe.SchemaVersion < PlanSchemaVersion {
		return nil, &topology.InputError{Path: path, Field: "schema_version", Msg: fmt.Sprintf("%d: a plan an older gnnplan wrote; run gnnplan recommend again to write it as version %d", *probe.SchemaVersion, PlanSchemaVersion)}
	}
	if probe.SchemaVersion == nil || *probe.SchemaVersion != PlanSchemaVersion {
		return nil, &topology.InputError{Path: path, Field: "schema_version", Msg: fmt.Sprintf("want %d (a plan written by `gnnplan recommend --save`)", PlanSchemaVersion)}
	}
	var p Plan
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, planJSONError(path, data, err)
	}
	if err := p.Workload.Validate(); err != nil {
		var in *topology.InputError
		if errors.As(err, &in) {
			return nil, &topology.InputError{Path: path, Field: "workload." + in.Field, Msg: in.Msg}
		}
		return nil, &topology.InputError{Path: path, Field: "workload", Err: err}
	}
	if p.Machine == nil {
		return nil, &topology.InputError{Path: path, Field: "machine", Msg: "missing"}
	}
	if err := p.Machine.Validate(); err != nil {
		return nil, &topology.InputError{Path: path, Field: "machine", Msg: err.Error()}
	}
	if p.Catalog != nil {
		if err := p.Catalog.Validate(); err != nil {
			var in *topology.InputError
			if errors.As(err, &in) && in.Field != "" {
				return nil, &topology.InputError{Path: path, Field: "catalog." + in.Field, Msg: in.Msg, Err: in.Err}
			}
			return nil, &topology.InputError{Path: path, Field: "catalog", Err: err}
		}
	}
	return &p, nil
}

// planJSONError says where and how plan.json's JSON is wrong: the line of
// a syntax error, the field whose value has the wrong type, or what the
// file holds when it is not an object.
func planJSONError(path string, data []byte, err error) error {
	line := func(off int64) int { return bytes.Count(data[:min(int(off), len(data))], []byte("\n")) + 1 }
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return &topology.InputError{Path: path, Line: line(syn.Offset), Msg: "malformed JSON: " + syn.Error()}
	case errors.As(err, &typ) && typ.Field == "":
		return &topology.InputError{Path: path, Msg: fmt.Sprintf("not a plan: the file holds a JSON %s, want the object `gnnplan recommend --save` writes", typ.Value)}
	case errors.As(err, &typ):
		return &topology.InputError{Path: path, Line: line(typ.Offset), Field: typ.Field, Msg: fmt.Sprintf("a JSON %s where the plan wants %s", typ.Value, jsonKind(typ.Type.Kind().String()))}
	}
	return &topology.InputError{Path: path, Msg: "not a plan", Err: err}
}

// jsonKind names the JSON value a Go kind is read from.
func jsonKind(k string) string {
	switch {
	case strings.HasPrefix(k, "int"), strings.HasPrefix(k, "uint"), strings.HasPrefix(k, "float"):
		return "a number"
	case k == "slice" || k == "array":
		return "a list"
	case k == "struct" || k == "map" || k == "ptr":
		return "an object"
	case k == "bool":
		return "true or false"
	}
	return "a " + k
}

// Curve is one point per SSD count for a fixed GPU choice: what the plot
// and the table of SSD counts show.
type Curve struct {
	GPUModel string
	GPUs     int
	SSDModel string
	Points   []*Option // by SSD count
}

// SSDCurve returns the options that share the best plan's GPU choice and
// SSD model, by SSD count.
func (rec *Recommendation) SSDCurve() Curve {
	b := rec.Best
	c := Curve{GPUModel: b.GPU.Key, GPUs: b.GPUs, SSDModel: b.SSD.Key}
	for _, o := range rec.Options {
		if o.GPU.Key == b.GPU.Key && o.GPUs == b.GPUs && o.SSD.Key == b.SSD.Key && o.DIMMs == b.DIMMs && o.DIMM.Key == b.DIMM.Key {
			c.Points = append(c.Points, o)
		}
	}
	sort.Slice(c.Points, func(i, j int) bool { return c.Points[i].SSDs < c.Points[j].SSDs })
	return c
}

// GPUCurve returns, for the best plan's GPU and SSD models, the option of
// highest TPC at each GPU count (over SSD counts), by GPU count: what one
// more or one fewer GPU would do.
func (rec *Recommendation) GPUCurve() Curve {
	b := rec.Best
	c := Curve{GPUModel: b.GPU.Key, SSDModel: b.SSD.Key}
	best := map[int]*Option{}
	for _, o := range rec.Options { // best TPC first: the first of a count wins
		if o.GPU.Key == b.GPU.Key && (o.SSD.Key == b.SSD.Key || o.SSDs == 0) && o.DIMMs == b.DIMMs && o.DIMM.Key == b.DIMM.Key && best[o.GPUs] == nil {
			best[o.GPUs] = o
		}
	}
	for _, o := range best {
		c.Points = append(c.Points, o)
	}
	sort.Slice(c.Points, func(i, j int) bool { return c.Points[i].GPUs < c.Points[j].GPUs })
	return c
}

// FormatUSD prints whole dollars with thousands separators: 80000 -> "80,000".
func FormatUSD(v float64) string {
	s := fmt.Sprintf("%.0f", v)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
