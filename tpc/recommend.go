package tpc

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/gnnplan/gnnplan/maxflow/placement"
	"github.com/gnnplan/gnnplan/profiles"
	"github.com/gnnplan/gnnplan/topology"
)

// Request is a recommendation question: what to buy for a budget, for a
// workload, on a machine (its slots; the GPUs and SSDs it holds are
// ignored, they are what is being chosen).
type Request struct {
	Machine   *topology.Machine
	Catalog   *profiles.Catalog
	Workload  Workload
	BudgetUSD float64
	// GPUModels and SSDModels restrict the choice to these catalog keys;
	// empty means every model in the catalog.
	GPUModels, SSDModels []string
	// MinGPUs..MaxGPUs bounds the GPU count (default: 1 to as many as
	// the machine's slots take).
	MinGPUs, MaxGPUs int
	// Loaders are the loaders a plan may train with (LoaderOnline,
	// LoaderPacked, LoaderMultistage); empty means all three. A
	// published system's setup is priced with the loader it ran.
	Loaders []string
	// MeasuredSSDGBps, when > 0, replaces every SSD model's catalog read
	// rate for feature rows with a measured one (gnnplan profile).
	MeasuredSSDGBps float64
	// InstalledGPU, when set, is the catalog key of the machine's
	// installed GPUs, for files that do not name them (PredictInstalled).
	InstalledGPU string
	// CPUCacheGiB, when > 0, fixes the host memory's feature cache at
	// this size (capped by what memory holds) instead of deciding it: a
	// setup to reproduce (Hyperion's case study fixes 20 GB), or memory
	// kept for other work.
	CPUCacheGiB float64
	// SSDCounts lists the SSD counts to consider; empty means every count
	// from 0 to what the free slots take.
	SSDCounts   []int
	Assumptions Assumptions
}

// Option is one priced, placed and predicted hardware choice.
type Option struct {
	Hardware
	Placement placement.Placement `json:"placement"`
	Prediction
	FabricGBps float64   `json:"fabric_GBps"`
	Decisions  Decisions `json:"decisions"`
}

// Recommendation is the answer: every option within budget ranked by TPC,
// the best, the fastest, what binds and what the next dollar should buy,
// and the distributed in-memory alternative.
type Recommendation struct {
	Request     Request `json:"-"`
	Machine     *topology.Machine
	Options     []*Option // within budget, best TPC first
	Best        *Option   // highest TPC
	Fastest     *Option   // most samples per second within budget
	BestMachine *topology.Machine
	BestEval    *placement.Evaluation
	Hint        Hint
	Distributed Distributed
	Searched    int // hardware choices priced
	Placements  int // distinct placements evaluated
	// NothingToBuy, when set, says why no hardware one can buy fits the
	// machine; the one option is then the machine as installed.
	NothingToBuy string
	// ValidatedError, when set, is the model's error against published
	// measurements (package validate), which the plan carries.
	ValidatedError *ValidatedError
}

// key identifies a placement search: its result depends on the devices'
// link widths, the counts and the storage tiers.
type searchKey struct {
	gpuGen, gpuLanes, ssdGen, ssdLanes, gpus, ssds int
	tiers                                          placement.Tiers
}

type searchOut struct {
	best     *placement.Candidate
	res      *placement.SearchResult
	err      error
	distinct int
}

// recommender holds a request's search cache.
type recommender struct {
	req      Request
	stripped *topology.Machine
	hostGiB  float64
	maxGen   int // newest PCIe generation of any slot
	modules  int // GPU module sockets left out of the search
	mu       sync.Mutex
	cache    map[searchKey]*searchOut
}

// Recommend prices every GPU model x GPU count x SSD model x SSD count the
// budget and the free slots allow, places each with the max-flow model,
// predicts throughput and TPC, and ranks them (exact: the space is small).
func Recommend(ctx context.Context, req Request) (*Recommendation, error) {
	autoMax, err := normalizeRequest(&req)
	if err != nil {
		return nil, err
	}
	gpus, err := pickGPUs(req.Catalog, req.GPUModels)
	if err != nil {
		return nil, err
	}
	ssds, err := pickSSDs(req.Catalog, req.SSDModels)
	if err != nil {
		return nil, err
	}
	r, room := newRecommender(req, autoMax)
	req = r.req
	rec := &Recommendation{Request: req, Machine: r.stripped}

	var drams []Hardware
	if req.CPUCacheGiB <= 0 { // a fixed cache has no use for more memory
		drams = dramChoices(req.Machine, req.Catalog)
	}
	hws, cheapest, err := r.choices(ctx, room, gpus, ssds, drams)
	if err != nil {
		return nil, err
	}
	if len(hws) == 0 {
		return r.nothingBought(ctx, room, ssds, cheapest)
	}
	rec.Searched = len(hws)
	opts, firstRefusal, err := r.evaluateAll(ctx, hws)
	if err != nil {
		return nil, err
	}
	rec.Options = opts
	if len(rec.Options) == 0 {
		return nil, &topology.InputError{Field: req.Machine.Name, Msg: "no plan within budget can serve the workload (" + firstRefusal + ")"}
	}
	sortOptions(rec.Options)
	if len(drams) > 0 {
		if err := r.addMemoryOptions(ctx, rec, drams); err != nil {
			return nil, err
		}
	}
	if err := r.refineLeaders(ctx, rec.Options); err != nil {
		return nil, err
	}
	if err := r.pickAndExplain(ctx, rec); err != nil {
		return nil, err
	}
	return rec, nil
}

// normalizeRequest checks req and fills its defaults (catalog, GPU
// range); autoMax says MaxGPUs is for the free slots to bound.
func normalizeRequest(req *Request) (autoMax bool, err error) {
	if err := req.Workload.Validate(); err != nil {
		return false, err
	}
	if req.Catalog == nil {
		req.Catalog = profiles.DefaultCatalog()
	}
	if err := req.Catalog.Validate(); err != nil {
		return false, err
	}
	if math.IsNaN(req.BudgetUSD) || req.BudgetUSD <= 0 {
		return false, &topology.InputError{Field: "--budget", Msg: fmt.Sprintf("%v (want a budget in USD > 0)", req.BudgetUSD)}
	}
	if req.MinGPUs <= 0 {
		req.MinGPUs = 1
	}
	autoMax = req.MaxGPUs <= 0
	if autoMax {
		req.MaxGPUs = math.MaxInt32 // the slots bound it, below
	}
	if req.MinGPUs > req.MaxGPUs {
		return false, &topology.InputError{Field: "--gpus", Msg: fmt.Sprintf("%d-%d is not a range", req.MinGPUs, req.MaxGPUs)}
	}
	return autoMax, nil
}

// newRecommender strips req's machine to its free slots and counts them;
// r.req is req with the machine's positions as slots and, with autoMax,
// MaxGPUs as many as the slots take.
func newRecommender(req Request, autoMax bool) (*recommender, room) {
	// Devices found outside any slot record: their positions become
	// slots that take their kind again (the machine's notes say so).
	req.Machine, _ = placement.PositionSlots(req.Machine)
	stripped, _ := placement.Strip(req.Machine)
	modules := moduleSockets(req.Machine, req.Catalog, req.InstalledGPU)
	stripped = withoutModuleSockets(stripped, modules)
	r := &recommender{modules: len(modules), req: req, stripped: stripped, hostGiB: hostMemoryGiB(req.Machine, req.Catalog.Host), cache: map[searchKey]*searchOut{}}
	room := r.slotRoom()
	if autoMax {
		r.req.MaxGPUs = max(req.MinGPUs, room.gpu+room.either)
	}
	for _, sl := range stripped.NodesOfKind(topology.KindSlot) {
		r.maxGen = max(r.maxGen, sl.PCIeGen)
	}
	if r.maxGen == 0 {
		r.maxGen = 7
	}
	return r, room
}

// priced is the cheapest hardware choice that fits the machine, within
// the budget or not, for the message when none is within it.
type priced struct {
	costUSD float64
	hw      Hardware
}

// choices is every hardware choice that fits the machine and the budget,
// in the order priced, and the cheapest that fits the machine.
func (r *recommender) choices(ctx context.Context, c room, gpus []profiles.GPUModel, ssds []profiles.SSDModel, drams []Hardware) ([]Hardware, priced, error) {
	req := r.req
	var hws []Hardware
	cheapest := priced{costUSD: math.Inf(1)}
	for _, g := range gpus {
		for n := req.MinGPUs; n <= req.MaxGPUs; n++ {
			if n > c.gpu+c.either {
				break
			}
			// More GPUs only cost more: once the GPUs alone pass the
			// budget, no larger count fits it (the smallest was priced,
			// for the message when nothing does).
			if n > req.MinGPUs && (Hardware{GPU: g, GPUs: n}).TCOUSD(req.Catalog.Host) > req.BudgetUSD {
				break
			}
			if err := ctx.Err(); err != nil {
				return nil, priced{}, err
			}
			ssdRoom := c.ssd + c.either - max(0, n-c.gpu)
			for si, s := range ssds {
				for m := 0; m <= ssdRoom; m++ {
					if !allowed(req.SSDCounts, m) || m == 0 && si > 0 {
						continue // a plan without SSDs is one plan, whatever the SSD model
					}
					hw := Hardware{GPU: g, GPUs: n, SSD: s, SSDs: m}
					if !r.feasible(hw) {
						// Memory bought may make it hold the dataset: the
						// least that does.
						var ok bool
						if hw, ok = r.leastDRAMToHold(hw, drams); !ok {
							continue
						}
					}
					cost := hw.TCOUSD(req.Catalog.Host)
					if cost < cheapest.costUSD {
						cheapest = priced{cost, hw}
					}
					if cost > req.BudgetUSD {
						continue
					}
					hws = append(hws, hw)
				}
			}
		}
	}
	return hws, cheapest, nil
}

// nothingBought is Recommend's answer when no choice is within the budget:
// the machine as installed where nothing fits it, else why not.
func (r *recommender) nothingBought(ctx context.Context, c room, ssds []profiles.SSDModel, cheapest priced) (*Recommendation, error) {
	req := r.req
	if math.IsInf(cheapest.costUSD, 1) {
		why := r.nothingFits(c, ssds)
		if rec, ok := r.asInstalled(ctx, why); ok {
			return rec, nil
		}
		return nil, &NothingFitsError{Err: &topology.InputError{Field: req.Machine.Name, Msg: why}}
	}
	hw := cheapest.hw
	return nil, &NothingFitsError{Budget: true, Err: &topology.InputError{Field: "--budget", Msg: fmt.Sprintf("$%.0f buys no plan: the cheapest plan (%d x %s, %d x %s) costs $%.0f",
		req.BudgetUSD, hw.GPUs, hw.GPU.Key, hw.SSDs, hw.SSD.Key, cheapest.costUSD)}}
}

// addMemoryOptions adds memory to buy: each plan whose bound, at the price
// with the memory, could still enter the first ranks, again with each
// DRAM choice.
func (r *recommender) addMemoryOptions(ctx context.Context, rec *Recommendation, drams []Hardware) error {
	thr := kthBestTPC(rec.Options, refineRanks)
	var more []Hardware
	for _, o := range rec.Options {
		for _, d := range drams {
			hw := o.Hardware
			if hw.AddedMemoryGiB() >= d.AddedMemoryGiB() {
				continue // it has that much already
			}
			hw.DIMM, hw.DIMMs = d.DIMM, d.DIMMs
			cost := hw.TCOUSD(r.req.Catalog.Host)
			if cost <= r.req.BudgetUSD && r.inletBoundTPC(o)*o.CostUSD/cost >= thr {
				more = append(more, hw)
			}
		}
	}
	extra, _, err := r.evaluateAll(ctx, more)
	if err != nil {
		return err
	}
	rec.Searched += len(more)
	rec.Options = append(rec.Options, extra...)
	sortOptions(rec.Options)
	return nil
}

// refineLeaders runs the second round of the placement and cache descent
// for every plan that could still enter the first refineRanks: by the
// bound on its TPC from its GPUs' own links (inletBoundTPC), best bound
// first, until the bound falls below the refineRanks-th best TPC found.
// It replaces the refined options in opts and ranks them again.
func (r *recommender) refineLeaders(ctx context.Context, opts []*Option) error {
	cands := append([]*Option(nil), opts...)
	bounds := make(map[*Option]float64, len(cands))
	for _, o := range cands {
		bounds[o] = r.inletBoundTPC(o)
	}
	sort.SliceStable(cands, func(i, j int) bool { return bounds[cands[i]] > bounds[cands[j]] })
	current := map[*Option]*Option{}
	for _, o := range opts {
		current[o] = o
	}
	threshold := func() float64 {
		now := make([]*Option, 0, len(current))
		for _, o := range current {
			now = append(now, o)
		}
		return kthBestTPC(now, refineRanks)
	}
	for i, o := range cands {
		if i >= refineMax || i > 0 && bounds[o] < threshold()*(1+1e-9) {
			break
		}
		n, err := r.refine(ctx, o)
		if err != nil {
			return err
		}
		current[o] = n
	}
	for i, o := range opts {
		opts[i] = current[o]
	}
	sortOptions(opts)
	return nil
}

// pickAndExplain fills rec's best and fastest options, the placements
// searched, the best plan's machine and flows, its hint and the
// distributed alternative.
func (r *recommender) pickAndExplain(ctx context.Context, rec *Recommendation) error {
	rec.Best = rec.Options[0]
	rec.Fastest = rec.Options[0]
	for _, o := range rec.Options {
		if o.SamplesPerSec > rec.Fastest.SamplesPerSec*(1+1e-9) {
			rec.Fastest = o
		}
	}
	for _, out := range r.cache {
		rec.Placements += out.distinct
	}
	var err error
	rec.BestMachine, rec.BestEval, err = r.detail(rec.Best)
	if err != nil {
		return err
	}
	rec.Hint = r.hint(ctx, rec)
	rec.Distributed = distributedAlternative(r.req, rec.Best)
	return nil
}

func allowed(counts []int, m int) bool {
	if len(counts) == 0 {
		return true
	}
	for _, c := range counts {
		if c == m {
			return true
		}
	}
	return false
}

// sortOptions ranks by TPC, then throughput, then cheaper, then by name.
func sortOptions(o []*Option) {
	sort.SliceStable(o, func(i, j int) bool {
		a, b := o[i], o[j]
		if d := a.TPC - b.TPC; math.Abs(d) > 1e-12*math.Max(a.TPC, b.TPC) {
			return d > 0
		}
		if d := a.SamplesPerSec - b.SamplesPerSec; math.Abs(d) > 1e-9*math.Max(a.SamplesPerSec, b.SamplesPerSec) {
			return d > 0
		}
		if a.CostUSD != b.CostUSD {
			return a.CostUSD < b.CostUSD
		}
		return a.label() < b.label()
	})
}

func (o *Option) label() string {
	return fmt.Sprintf("%s x%d + %s x%03d + %s x%02d", o.GPU.Key, o.GPUs, o.SSD.Key, o.SSDs, o.DIMM.Key, o.DIMMs)
}

// pickGPUs is the GPU models to price: keys', or every model one can buy
// (not InstalledOnly). A key naming an installed-only model is refused.
func pickGPUs(c *profiles.Catalog, keys []string) ([]profiles.GPUModel, error) {
	var out []profiles.GPUModel
	if len(keys) == 0 {
		for _, g := range c.GPUs {
			if !g.InstalledOnly {
				out = append(out, g)
			}
		}
		return out, nil
	}
	for _, k := range keys {
		g, err := c.GPU(k)
		if err != nil {
			return nil, err
		}
		if g.InstalledOnly {
			return nil, &topology.InputError{Field: "--gpu-model", Msg: fmt.Sprintf("%s is priced only where a machine has it, never bought: "+
				"no PCIe slot takes a module, and the trainer has no backend for AMD GPUs (its catalog sources say which)", g.Key)}
		}
		out = append(out, g)
	}
	return out, nil
}

func pickSSDs(c *profiles.Catalog, keys []string) ([]profiles.SSDModel, error) {
	if len(keys) == 0 {
		return append([]profiles.SSDModel(nil), c.SSDs...), nil
	}
	var out []profiles.SSDModel
	for _, k := range keys {
		s, err := c.SSD(k)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// NothingFitsError is Recommend's answer when no hardware choice fits: the
// machine (its free slots against the dataset's size) or, with Budget,
// the budget. It is a bad input (topology.IsBadInput); a review of a
// machine one has answers the first kind with the machine as installed.
type NothingFitsError struct {
	Err    *topology.InputError
	Budget bool
}

func (e *NothingFitsError) Error() string { return e.Err.Error() }
func (e *NothingFitsError) Unwrap() error { return e.Err }

// nothingFits says which constraint left no hardware choice, and what
// would fit.
func (r *recommender) nothingFits(c room, ssds []profiles.SSDModel) string {
	req := r.req
	slots := fmt.Sprintf("%d free slot(s) take a GPU, %d an SSD (%d either)", c.gpu+c.either, c.ssd+c.either, c.either)
	if r.modules > 0 {
		slots += fmt.Sprintf("; its %d GPU module socket(s) (SXM, OAM) take no card one can buy", r.modules)
	}
	if c.gpu+c.either < req.MinGPUs {
		return fmt.Sprintf("no choice fits: %s, and the plan needs at least %d GPU(s) (--gpus); describe free slots in the machine file (a slot node with lanes, pcie_gen and double_width), or use a machine with room", slots, req.MinGPUs)
	}
	feat, topo := req.Workload.DatasetBytes()
	need := float64(feat+topo) / 1e9
	keep := 1 - req.Assumptions.HostReserveShare
	host := keep * r.hostGiB * (1 << 30) / 1e9
	room := c.ssd + c.either - max(0, req.MinGPUs-c.gpu)
	biggest := 0.0
	for _, s := range ssds {
		biggest = math.Max(biggest, s.CapacityGB)
	}
	disks := float64(max(room, 0)) * biggest
	mem := fmt.Sprintf("%.0f%% of %.0f GiB", 100*keep, r.hostGiB)
	if req.Machine.Summarize().MemoryGiB == 0 {
		mem += ": the catalog's host, as the machine file gives no memory size"
	}
	msg := fmt.Sprintf("no choice holds %s's %.0f GB: host memory holds %.0f GB (%s) without SSDs", req.Workload.Name, need, host, mem)
	switch {
	case room <= 0:
		msg += fmt.Sprintf(", and no free slot is left for an SSD beside %d GPU(s) (%s)", req.MinGPUs, slots)
	default:
		msg += fmt.Sprintf(", and the %d SSD slot(s) left beside %d GPU(s) hold at most %.0f GB of features (%s)", room, req.MinGPUs, disks, slots)
	}
	return msg + "; what would fit: a dataset within those sizes, free NVMe bays described in the machine file, or more host memory (the socket's memory_GiB)"
}

// asInstalled is the answer for a machine nothing can be bought into: its
// devices where they are, as the one option, with why nothing fits. It
// is false where the machine as installed cannot be predicted (no GPU,
// one the catalog does not know, a dataset it cannot hold).
func (r *recommender) asInstalled(ctx context.Context, why string) (*Recommendation, bool) {
	in, err := PredictInstalled(ctx, r.req)
	if err != nil || in.timed == nil {
		return nil, false
	}
	o, pm, ev, err := in.option()
	if err != nil {
		return nil, false
	}
	rec := &Recommendation{Request: r.req, Machine: r.stripped, Options: []*Option{o}, Best: o, Fastest: o,
		BestMachine: pm, BestEval: ev, NothingToBuy: why, Searched: 1, Placements: 1}
	rec.Hint = r.hint(ctx, rec)
	rec.Distributed = distributedAlternative(r.req, o)
	return rec, true
}

// moduleSockets is the positions (PositionSlots' slots) that hold a GPU
// module: SXM or OAM sockets, which no GPU one can buy fills. A module is
// known by its name, or by installedGPU (--installed-gpu) naming one.
func moduleSockets(m *topology.Machine, cat *profiles.Catalog, installedGPU string) map[string]bool {
	all := false
	if g, err := cat.GPU(installedGPU); installedGPU != "" && err == nil {
		all = profiles.IsModuleName(g.Name)
	}
	out := map[string]bool{}
	for _, n := range m.Nodes {
		if n.Kind != topology.KindGPU || !all && !profiles.IsModuleName(n.Name) {
			continue
		}
		if p := m.Node(n.Parent); p != nil && p.Kind == topology.KindSlot && p.Takes == topology.KindGPU {
			out[p.ID] = true
		}
	}
	return out
}

// withoutModuleSockets is m (stripped of its devices) less the slots in
// sockets and their links.
func withoutModuleSockets(m *topology.Machine, sockets map[string]bool) *topology.Machine {
	if len(sockets) == 0 {
		return m
	}
	out := *m
	out.Nodes, out.Links = nil, nil
	for _, n := range m.Nodes {
		if !sockets[n.ID] {
			out.Nodes = append(out.Nodes, n)
		}
	}
	for _, l := range m.Links {
		if !sockets[l.From] && !sockets[l.To] {
			out.Links = append(out.Links, l)
		}
	}
	return &out
}

// room is the machine's free slots by what they take: GPUs only, SSDs
// only, or either.
type room struct{ gpu, ssd, either int }

// slotRoom counts the free slots by what they take: a double-width x16
// slot takes a GPU or an SSD, a narrower one an SSD, a position found
// without a slot record (Node.Takes) its own kind.
func (r *recommender) slotRoom() room {
	var c room
	for _, n := range r.stripped.NodesOfKind(topology.KindSlot) {
		switch {
		case n.Occupied:
		case n.Takes == topology.KindGPU:
			c.gpu++
		case n.Takes == topology.KindNVMe:
			c.ssd++
		case n.DoubleWidth && (n.Lanes == 0 || n.Lanes >= 16):
			c.either++
		default:
			c.ssd++
		}
	}
	return c
}

// hostFor is host memory with hw's DIMMs added.
func (r *recommender) hostFor(hw Hardware) float64 { return r.hostGiB + hw.AddedMemoryGiB() }

// dramChoices are the memory purchases the machine takes: for each
// catalog DIMM of the sockets' memory type, the same number added to
// every socket. Where the sockets give their channels, each choice fills
// the channels to one more module each (one, then two DIMMs per channel),
// keeping them balanced; otherwise half or all of the free slots. No
// choice takes a socket past its CPU's maximum memory. None where the
// machine does not describe its DIMM slots.
func dramChoices(m *topology.Machine, cat *profiles.Catalog) []Hardware {
	sockets := m.NodesOfKind(topology.KindSocket)
	if len(sockets) == 0 {
		return nil
	}
	typ, channels := sockets[0].MemoryType, sockets[0].MemoryChannels
	for _, s := range sockets {
		if s.DIMMSlots == 0 || s.MemoryType == "" || s.MemoryType != typ || s.MemoryChannels != channels {
			return nil
		}
	}
	// The counts each socket can add.
	var counts []int
	if channels > 0 {
		for dpc := 1; dpc*channels <= sockets[0].DIMMSlots; dpc++ {
			per := dpc*channels - sockets[0].DIMMs
			for _, s := range sockets[1:] {
				if dpc*channels-s.DIMMs != per {
					per = 0 // sockets populated differently: no count balances both
				}
			}
			if per > 0 {
				counts = append(counts, per)
			}
		}
	} else {
		free := -1
		for _, s := range sockets {
			if f := s.DIMMSlots - s.DIMMs; free < 0 || f < free {
				free = f
			}
		}
		if free > 0 {
			counts = []int{(free + 1) / 2}
			if free > 1 {
				counts = append(counts, free)
			}
		}
	}
	var out []Hardware
	for _, d := range cat.DIMMs {
		if d.Type != typ {
			continue
		}
		for _, per := range counts {
			fits := true
			for _, s := range sockets {
				if s.MaxMemoryGiB > 0 && s.MemoryGiB+float64(per)*d.CapacityGiB > s.MaxMemoryGiB {
					fits = false
				}
			}
			if fits {
				out = append(out, Hardware{DIMM: d, DIMMs: per * len(sockets)})
			}
		}
	}
	return out
}

// feasible says whether the hardware can hold the dataset (holds).
func (r *recommender) feasible(hw Hardware) bool {
	ok, _ := holds(r.req.Workload, hw, r.hostFor(hw), r.req.Assumptions.HostReserveShare)
	return ok
}

// holds says whether hw can hold w's dataset: the SSDs hold the features,
// or with no SSD host memory less its reserve (reserveShare, as the CPU
// cache keeps) holds features and topology; if not, why in words.
func holds(w Workload, hw Hardware, hostGiB, reserveShare float64) (bool, string) {
	feat, topo := w.DatasetBytes()
	if hw.SSDs == 0 {
		room := hostGiB * (1 << 30) * (1 - reserveShare)
		if total := float64(feat + topo); total > room {
			return false, fmt.Sprintf("%s's %.0f GB do not fit %.0f%% of %.0f GiB of host memory (%.0f GB), and there is no SSD",
				w.Name, total/1e9, 100*(1-reserveShare), hostGiB, room/1e9)
		}
		return true, ""
	}
	// The SSDs hold the features and the topology host memory cannot.
	spill := math.Max(0, float64(topo)-hostGiB*(1<<30)*(1-reserveShare))
	if c := float64(hw.SSDs) * hw.SSD.CapacityGB * 1e9; c < float64(feat)+spill {
		what := "features"
		if spill > 0 {
			what = "features and the topology host memory cannot hold"
		}
		return false, fmt.Sprintf("%s's %.0f GB of %s do not fit %d x %s (%.0f GB)", w.Name, (float64(feat)+spill)/1e9, what, hw.SSDs, hw.SSD.Key, c/1e9)
	}
	return true, ""
}

// leastTopologyOnSSD is the share of the topology host memory (less its
// reserve) cannot hold, which the SSDs must: 0 where it fits.
func leastTopologyOnSSD(w Workload, hw Hardware, hostGiB float64, a Assumptions) float64 {
	_, topo := w.DatasetBytes()
	if topo <= 0 || hw.SSDs == 0 {
		return 0
	}
	return math.Max(0, math.Min(1, 1-hostGiB*(1<<30)*(1-a.HostReserveShare)/float64(topo)))
}

func gpuNode(g profiles.GPUModel) topology.Node {
	return topology.Node{Kind: topology.KindGPU, Name: g.Name, Model: g.Key, MemoryGiB: g.MemoryGiB, Lanes: g.Lanes, PCIeGen: g.PCIeGen}
}

func ssdNode(s profiles.SSDModel) topology.Node {
	return topology.Node{Kind: topology.KindNVMe, Name: s.Name, Model: s.Key, Lanes: s.Lanes, PCIeGen: s.PCIeGen}
}

// evaluate places and predicts one hardware choice, with its CPU cache
// decided (decideCPUCache). The placement search runs with a small cache
// (searchCacheFraction, where branch and bound prunes well: a large host
// share leaves many placements near the best), the cache is then decided
// for the placement found, and the plans ranked first search again at
// their cache (refine): coordinate descent over placement and cache.
func (r *recommender) evaluate(ctx context.Context, hw Hardware) (*Option, error) {
	a := r.req.Assumptions
	a.CPUCacheFraction = searchCacheFraction
	a.TopologyOnSSDShare = leastTopologyOnSSD(r.req.Workload, hw, r.hostFor(hw), a)
	a.GPUTopologyShare = servedSplit(r.req.Workload, hw, r.hostFor(hw), a)
	xmax := maxCPUCacheFraction(r.req.Workload, hw, r.hostFor(hw), a)
	a.CPUCacheFraction = math.Min(xmax, searchCacheFraction)
	return r.placeAndDecide(ctx, hw, a, xmax)
}

// placeAndDecide searches hw's placements with a's CPU cache, decides the
// cache (up to xmax) for the placement found, and predicts the option
// with it: one round of the placement and cache descent.
func (r *recommender) placeAndDecide(ctx context.Context, hw Hardware, a Assumptions, xmax float64) (*Option, error) {
	w, host := r.req.Workload, r.hostFor(hw)
	s, ssd := ioShares(w, hw, host, a, r.req.MeasuredSSDGBps)
	out := r.search(ctx, hw, tiersFor(s, ssd, a))
	if out.err != nil {
		return nil, out.err
	}
	inv := placement.Inventory{GPUs: hw.GPUs, SSDs: hw.SSDs, GPU: gpuNode(hw.GPU), SSD: ssdNode(hw.SSD)}
	x, why, err := r.req.cpuCache(r.stripped, inv, out.best.Placement, hw, host, xmax)
	if err != nil {
		return nil, err
	}
	a.CPUCacheFraction = x
	s, ssd = ioShares(w, hw, host, a, r.req.MeasuredSSDGBps)
	seconds, err := r.timePlacement(inv, out.best.Placement, tiersFor(s, ssd, a))
	if err != nil {
		return nil, err
	}
	o := &Option{Hardware: hw, Placement: out.best.Placement, FabricGBps: out.best.FabricGBps,
		Decisions: Decisions{CPUCacheFraction: x, CPUCacheGiB: s.CPUCacheRows * float64(w.FeatureRowBytes()) / (1 << 30), MaxCPUCacheFraction: xmax, Why: why,
			GPUTopologyShare: a.GPUTopologyShare, GPUWhy: gpuSplitWhy(w, s, a),
			TopologyOnSSDShare: a.TopologyOnSSDShare, TopologyWhy: topologySplitWhy(w, hw, host, s, a)}}
	o.Prediction = predict(w, hw, r.req.Catalog.Host, seconds, s, a, ssd)
	ch, err := chooseLoader(loaderInput{w: w, hw: hw, a: a, s: s, ssd: ssd, online: seconds, train: o.EpochTrainSecs, hostGiB: host, allowed: r.req.Loaders,
		flow: func(t placement.Tiers) (float64, error) { return r.timePlacement(inv, out.best.Placement, t) }})
	if err != nil {
		return nil, err
	}
	if ch.Name != LoaderOnline {
		for _, l := range ch.Options {
			if l.Name == ch.Name {
				o.Prediction = predict(w, hw, r.req.Catalog.Host, l.EpochIOSeconds, s, a, ssd)
			}
		}
	}
	o.Loader = &ch
	return o, nil
}

// searchCacheFraction is the CPU cache the first placement search of each
// option runs with (Moment's 1% of the vertices).
const searchCacheFraction = 0.01

// evaluateAll evaluates hws on every core, returning the options that
// could be placed and predicted, in hws' order, and the first refusal (a
// bad input: a choice that cannot serve the epoch) in words.
func (r *recommender) evaluateAll(ctx context.Context, hws []Hardware) ([]*Option, string, error) {
	opts := make([]*Option, len(hws))
	errs := make([]error, len(hws))
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				opts[i], errs[i] = r.evaluate(ctx, hws[i])
			}
		}()
	}
	for i := range hws {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, "", err
	}
	var out []*Option
	var firstRefusal string
	for i, err := range errs {
		if err != nil && !topology.IsBadInput(err) {
			return nil, "", err
		}
		if err != nil && firstRefusal == "" {
			hw := hws[i]
			firstRefusal = fmt.Sprintf("%d x %s with %d x %s: %v", hw.GPUs, hw.GPU.Key, hw.SSDs, hw.SSD.Key, err)
		}
		if opts[i] != nil {
			out = append(out, opts[i])
		}
	}
	return out, firstRefusal, nil
}

// kthBestTPC is the k-th highest TPC of opts (the lowest when fewer).
func kthBestTPC(opts []*Option, k int) float64 {
	tpcs := make([]float64, len(opts))
	for i, o := range opts {
		tpcs[i] = o.TPC
	}
	sort.Sort(sort.Reverse(sort.Float64Slice(tpcs)))
	return tpcs[min(k, len(tpcs))-1]
}

// refineMax bounds how many plans refine searches again; refineRanks is
// how many of the first ranks it makes sure of (recommend lists ten).
const (
	refineMax   = 200
	refineRanks = 10
)

// inletBoundTPC is the most TPC o could reach with any placement and
// cache: the bytes its GPUs do not cache must cross their own links, so
// the epoch takes at least that over the links' sum, and at least its
// training time.
func (r *recommender) inletBoundTPC(o *Option) float64 {
	link := topology.PCIeGBps(min(o.GPU.PCIeGen, r.maxGen), o.GPU.Lanes) * float64(o.GPUs)
	io := 0.0
	if link > 0 {
		io = (1 - o.Shares.GPUCacheShare) * o.Shares.EpochGB / link
	}
	epoch := math.Max(io, o.EpochTrainSecs)
	if !(epoch > 0) {
		return math.Inf(1)
	}
	return o.TPC * o.EpochSeconds / epoch
}

// assumptionsFor is the request's assumptions with o's decisions in them:
// what o was predicted with.
func (r *recommender) assumptionsFor(o *Option) Assumptions {
	return decided(r.req.Assumptions, o.Decisions)
}

// timePlacement is the epoch IO time of inv placed as p under tiers.
func (r *recommender) timePlacement(inv placement.Inventory, p placement.Placement, tiers placement.Tiers) (float64, error) {
	pm, err := placement.Apply(r.stripped, inv, p)
	if err != nil {
		return 0, err
	}
	// The least time alone: Evaluate's per-GPU inlets, traffic and cut
	// are for the plan's detail, not for each option.
	g, err := placement.BuildGraph(pm, tiers)
	if err != nil {
		return 0, err
	}
	return g.LeastTime()
}

// refine searches the placements again for the option at its decided
// cache, where that is smaller than the largest, and decides the cache
// again for the placement found: the second round of the coordinate
// descent evaluate starts. It keeps whichever is faster.
func (r *recommender) refine(ctx context.Context, o *Option) (*Option, error) {
	best := o
	// Two more starts: the placement searched at the decided cache, and
	// at the largest (where memory serves most, the placement that suits
	// it may differ from both).
	xs := []float64{o.Decisions.CPUCacheFraction, o.Decisions.MaxCPUCacheFraction}
	for i, x := range xs {
		if i == 1 && x == xs[0] || math.Abs(x-math.Min(o.Decisions.MaxCPUCacheFraction, searchCacheFraction)) < 1e-12 {
			continue // searched at this cache already
		}
		a := r.assumptionsFor(o)
		a.CPUCacheFraction = x
		n, err := r.placeAndDecide(ctx, o.Hardware, a, o.Decisions.MaxCPUCacheFraction)
		if err != nil {
			return nil, err
		}
		if n.EpochIOSeconds < best.EpochIOSeconds {
			best = n
		}
	}
	// The GPU memory's split, decided on the flow for the best placement
	// and cache so far, then the cache again for the split (a third
	// coordinate of the descent).
	w, hw, host := r.req.Workload, o.Hardware, r.hostFor(o.Hardware)
	a := r.assumptionsFor(best)
	inv := placement.Inventory{GPUs: hw.GPUs, SSDs: hw.SSDs, GPU: gpuNode(hw.GPU), SSD: ssdNode(hw.SSD)}
	s, err := decideGPUSplit(r.stripped, inv, best.Placement, w, hw, host, a, r.req.MeasuredSSDGBps)
	if err != nil {
		return nil, err
	}
	// The topology's split between host memory and the SSDs, then the
	// cache again.
	u, err := decideTopologyOnSSD(r.stripped, inv, best.Placement, w, hw, host, a, r.req.MeasuredSSDGBps)
	if err != nil {
		return nil, err
	}
	if math.Abs(s-a.GPUTopologyShare) > 1e-9 || math.Abs(u-a.TopologyOnSSDShare) > 1e-9 {
		a.GPUTopologyShare, a.TopologyOnSSDShare = s, u
		xmax := maxCPUCacheFraction(w, hw, host, a)
		a.CPUCacheFraction = math.Min(xmax, a.CPUCacheFraction)
		n, err := r.placeAndDecide(ctx, hw, a, xmax)
		if err != nil {
			return nil, err
		}
		if n.EpochIOSeconds < best.EpochIOSeconds {
			best = n
		}
	}
	return best, nil
}

// ioShares splits an epoch's bytes over hw's tiers (shares; with no SSD
// the SSD share moves to host memory) and gives one SSD's read rate for
// feature rows: measuredSSDGBps where > 0, else the catalog's.
func ioShares(w Workload, hw Hardware, hostGiB float64, a Assumptions, measuredSSDGBps float64) (Shares, float64) {
	s := shares(w, hw, hostGiB, a)
	if hw.SSDs == 0 {
		s.HostShare, s.SSDShare = s.HostShare+s.SSDShare, 0
	}
	ssd := ssdGBps(hw.SSD, w.FeatureRowBytes(), a)
	if measuredSSDGBps > 0 {
		ssd = measuredSSDGBps
	}
	// Topology read from the SSDs moves whole blocks: the blocks' rate
	// beside the rows' (one drive's time is the sum of the two).
	if bt := s.SSDTopologyGB; bt > 0 && measuredSSDGBps <= 0 {
		bf := math.Max(0, s.SSDShare*s.EpochGB-bt)
		blocks := ssdGBps(hw.SSD, int64(max(a.SSDBlockBytes, 1)), a)
		if bf+bt > 0 && ssd > 0 && blocks > 0 {
			ssd = (bf + bt) / (bf/ssd + bt/blocks)
		}
	}
	return s, ssd
}

func (r *recommender) search(ctx context.Context, hw Hardware, tiers placement.Tiers) *searchOut {
	// A device runs at the lesser of its and its slot's generation, so
	// GPUs of the newer generation than every slot share one search.
	k := searchKey{min(hw.GPU.PCIeGen, r.maxGen), hw.GPU.Lanes, min(hw.SSD.PCIeGen, r.maxGen), hw.SSD.Lanes, hw.GPUs, hw.SSDs, tiers}
	r.mu.Lock()
	out, ok := r.cache[k]
	r.mu.Unlock()
	if ok {
		return out
	}
	inv := placement.Inventory{GPUs: hw.GPUs, SSDs: hw.SSDs, GPU: gpuNode(hw.GPU), SSD: ssdNode(hw.SSD)}
	res, err := placement.SearchTimes(ctx, r.stripped, inv, tiers)
	out = &searchOut{res: res, err: err}
	if err == nil {
		out.best, out.distinct = res.Candidates[0], res.Distinct
	}
	r.mu.Lock()
	r.cache[k] = out
	r.mu.Unlock()
	return out
}

// detail builds the machine of an option and its full flow evaluation.
func (r *recommender) detail(o *Option) (*topology.Machine, *placement.Evaluation, error) {
	inv := placement.Inventory{GPUs: o.GPUs, SSDs: o.SSDs, GPU: gpuNode(o.GPU), SSD: ssdNode(o.SSD)}
	pm, err := placement.Apply(r.stripped, inv, o.Placement)
	if err != nil {
		return nil, nil, err
	}
	s := o.Shares
	ev, err := placement.Evaluate(pm, tiersFor(s, o.SSDGBps, r.assumptionsFor(o)))
	if err != nil {
		return nil, nil, err
	}
	return pm, ev, nil
}

// Hint says what binds the best plan and what one more component buys.
type Hint struct {
	Bound string `json:"bound"` // "ssd", "pcie", "socket-link", "compute", "memory"
	// Link names the binding link for pcie and socket-link bounds.
	Link string `json:"link,omitempty"`
	// Next is what the next dollar should buy, with its effect.
	Next string `json:"next"`
	// ThroughputGain and TPCGain are the relative changes of Next
	// (0.05 = +5%); zero when Next is "nothing".
	ThroughputGain float64 `json:"throughput_gain"`
	TPCGain        float64 `json:"tpc_gain"`
	Text           string  `json:"text"`
	// Steps is each next purchase beside the best plan (one more SSD,
	// the next memory, one more GPU) and what it would do: the three
	// answers to "more RAM, more SSDs or another GPU?".
	Steps []NextStep `json:"steps,omitempty"`
}

// NextStep is one purchase added to the best plan and its effect; Why
// says why it was not priced (no free slot) when it was not.
type NextStep struct {
	What           string  `json:"what"`
	AddedUSD       float64 `json:"added_USD"`
	ThroughputGain float64 `json:"throughput_gain"`
	TPCGain        float64 `json:"tpc_gain"`
	Why            string  `json:"why,omitempty"`
}

// evaluateFull is evaluate and refine: both rounds of the placement and
// cache descent, as the best plan had, for the purchases a hint compares
// with it.
func (r *recommender) evaluateFull(ctx context.Context, hw Hardware) (*Option, error) {
	o, err := r.evaluate(ctx, hw)
	if err != nil {
		return nil, err
	}
	return r.refine(ctx, o)
}

// nextSteps prices one more SSD, the next memory purchase and one more
// GPU beside best.
func (r *recommender) nextSteps(ctx context.Context, best *Option) []NextStep {
	type cand struct {
		what string
		hw   Hardware
		ok   bool
	}
	ssd, gpu := best.Hardware, best.Hardware
	ssd.SSDs++
	gpu.GPUs++
	mem, memOK := r.nextDRAM(best.Hardware)
	memWhat := "more host memory"
	if memOK {
		memWhat = fmt.Sprintf("%d x %s (%.0f GiB)", mem.DIMMs-best.DIMMs, mem.DIMM.Name, mem.AddedMemoryGiB()-best.AddedMemoryGiB())
	}
	var out []NextStep
	for _, c := range []cand{{"one more " + best.SSD.Key, ssd, true}, {memWhat, mem, memOK}, {"one more " + best.GPU.Key, gpu, true}} {
		st := NextStep{What: c.what}
		if !c.ok {
			st.Why = "the machine describes no free DIMM slot (or the CPU cache is fixed)"
			out = append(out, st)
			continue
		}
		o, err := r.evaluateFull(ctx, c.hw)
		if err != nil {
			st.Why = "no room for it: " + err.Error()
			out = append(out, st)
			continue
		}
		st.AddedUSD = o.CostUSD - best.CostUSD
		st.ThroughputGain = o.SamplesPerSec/best.SamplesPerSec - 1
		st.TPCGain = o.TPC/best.TPC - 1
		out = append(out, st)
	}
	return out
}

func (r *recommender) hint(ctx context.Context, rec *Recommendation) Hint {
	h := r.boundHint(ctx, rec)
	h.Steps = r.nextSteps(ctx, rec.Best)
	return h
}

// boundHint says what binds the best plan and what the next dollar buys.
func (r *recommender) boundHint(ctx context.Context, rec *Recommendation) Hint {
	best := rec.Best
	h := Hint{}
	if best.Bound == "compute" {
		h.Bound = "compute"
		h.Text = fmt.Sprintf("GPU compute-bound: training takes %.1f s per epoch, IO %.1f s", best.EpochTrainSecs, best.EpochIOSeconds)
		r.nextStep(ctx, &h, best, Hardware{GPU: best.GPU, GPUs: best.GPUs + 1, SSD: best.SSD, SSDs: best.SSDs}, "one more "+best.GPU.Key)
		return h
	}
	ssdBound, pcie, socket := false, "", ""
	for _, b := range rec.BestEval.Bottlenecks {
		switch {
		case b.Kind == "ssd_read" || b.FromKind == topology.KindNVMe:
			ssdBound = true
		case b.Kind == string(topology.LinkInterSocket):
			socket = fmt.Sprintf("%s-%s %s (%g GB/s)", b.From, b.To, b.Label, b.GBps)
		case b.Kind == "memory_read":
			if h.Bound == "" {
				h.Bound = "memory"
			}
		default:
			if pcie == "" {
				pcie = describeLink(rec.BestMachine, b.From, b.To, b.Label, b.GBps)
			}
		}
	}
	more := best.Hardware
	more.SSDs++
	what := "one more " + best.SSD.Key
	// More memory instead, where it buys more TPC than one more SSD.
	if d, ok := r.nextDRAM(best.Hardware); ok {
		om, errM := r.evaluateFull(ctx, more)
		od, errD := r.evaluateFull(ctx, d)
		if errD == nil && od.TPC > best.TPC && (errM != nil || od.TPC > om.TPC) {
			more, what = d, fmt.Sprintf("%d x %s (%.0f GiB more host memory)", d.DIMMs-best.DIMMs, d.DIMM.Name, d.AddedMemoryGiB()-best.AddedMemoryGiB())
		}
	}
	switch {
	case ssdBound && pcie == "" && socket == "":
		h.Bound = "ssd"
		h.Text = fmt.Sprintf("SSD-bound: the %d SSD(s) read %.1f GB/s each for feature rows", best.SSDs, best.SSDGBps)
		if c, ok := SSDLinkCap(rec.BestMachine, rec.BestEval, best.SSDGBps); ok {
			h.Text = fmt.Sprintf("SSD-bound: the %d SSD(s) read %.1f GB/s each for feature rows, what their %s links carry "+
				"(a %s reads %.1f GB/s on a link of its own speed)", best.SSDs, c.GBps, c.Links, best.SSD.Key, best.SSDGBps)
		}
	case socket != "":
		h.Bound, h.Link = "socket-link", socket
		h.Text = "socket-link-bound: " + socket
	case pcie != "":
		h.Bound, h.Link = "pcie", pcie
		h.Text = "PCIe-bound at " + pcie
	default:
		if h.Bound == "" {
			h.Bound = "io"
		}
		h.Text = "IO-bound"
	}
	r.nextStep(ctx, &h, best, more, what)
	return h
}

// leastDRAMToHold is hw with the cheapest DRAM choice that lets it hold
// the dataset, and false where none does.
func (r *recommender) leastDRAMToHold(hw Hardware, drams []Hardware) (Hardware, bool) {
	best, found := hw, false
	for _, d := range drams {
		c := hw
		c.DIMM, c.DIMMs = d.DIMM, d.DIMMs
		if r.feasible(c) && (!found || c.TCOUSD(r.req.Catalog.Host) < best.TCOUSD(r.req.Catalog.Host)) {
			best, found = c, true
		}
	}
	return best, found
}

// nextDRAM is hw with the next memory purchase the machine takes: the
// smallest DRAM choice that adds more than hw has.
func (r *recommender) nextDRAM(hw Hardware) (Hardware, bool) {
	var best Hardware
	found := false
	if r.req.CPUCacheGiB > 0 {
		return hw, false
	}
	for _, d := range dramChoices(r.req.Machine, r.req.Catalog) {
		if d.AddedMemoryGiB() <= hw.AddedMemoryGiB() {
			continue
		}
		if !found || d.AddedMemoryGiB() < best.AddedMemoryGiB() || d.AddedMemoryGiB() == best.AddedMemoryGiB() && d.TCOUSD(r.req.Catalog.Host) < best.TCOUSD(r.req.Catalog.Host) {
			best, found = d, true
		}
	}
	if !found {
		return hw, false
	}
	next := hw
	next.DIMM, next.DIMMs = best.DIMM, best.DIMMs
	return next, true
}

// LinkCap is the rate the SSDs' own links hold them to.
type LinkCap struct {
	GBps  float64 // the most one SSD's link carries, the slowest of them
	Links string  // the links, as "x4 Gen4" (several kinds comma-separated)
}

// SSDLinkCap says whether the SSDs' own links (drive to slot or switch),
// not the drives, bind an evaluated machine: every SSD bottleneck is such
// a link and carries less than the drive's rate driveGBps. A Gen5 drive
// in a Gen4 x4 bay reads at the bay's 6 GB/s, not its own 10.
func SSDLinkCap(m *topology.Machine, ev *placement.Evaluation, driveGBps float64) (LinkCap, bool) {
	if m == nil || ev == nil {
		return LinkCap{}, false
	}
	var c LinkCap
	var kinds []string
	for _, b := range ev.Bottlenecks {
		if b.FromKind != topology.KindNVMe {
			continue
		}
		if b.Kind == "ssd_read" || !(b.GBps < 0.999*driveGBps) {
			return LinkCap{}, false
		}
		if c.GBps == 0 || b.GBps < c.GBps {
			c.GBps = b.GBps
		}
		k := "a PCIe link"
		if l := m.UplinkOf(b.From); l != nil && l.Lanes > 0 && l.PCIeGen > 0 {
			k = fmt.Sprintf("x%d Gen%d", l.Lanes, l.PCIeGen)
		}
		if !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	if c.GBps == 0 {
		return LinkCap{}, false
	}
	c.Links = strings.Join(kinds, ", ")
	return c, true
}

// nextStep evaluates adding one component and phrases the result.
func (r *recommender) nextStep(ctx context.Context, h *Hint, best *Option, next Hardware, what string) {
	o, err := r.evaluateFull(ctx, next)
	if err != nil || o == nil {
		var in *topology.InputError
		if errors.As(err, &in) {
			// The machine has no room for it: every slot that takes one is used.
			h.Next = fmt.Sprintf("nothing: %s has no free slot for %s", r.stripped.Name, what)
		} else {
			h.Next = fmt.Sprintf("nothing: %s not evaluated (%v)", what, err)
		}
		h.Text += "; next: " + h.Next
		return
	}
	h.ThroughputGain = o.SamplesPerSec/best.SamplesPerSec - 1
	h.TPCGain = o.TPC/best.TPC - 1
	if h.ThroughputGain < 0.01 {
		h.Next = fmt.Sprintf("nothing: %s adds %+.1f%% throughput", what, 100*h.ThroughputGain)
		h.ThroughputGain, h.TPCGain = 0, 0
	} else {
		where := ""
		if len(o.Placement.SSDSlots) > len(best.Placement.SSDSlots) {
			where = " (" + newSlot(r.stripped, best.Placement.SSDSlots, o.Placement.SSDSlots) + ")"
		}
		h.Next = fmt.Sprintf("%s%s: %+.1f%% throughput, %+.1f%% TPC, $%.0f", what, where, 100*h.ThroughputGain, 100*h.TPCGain, o.CostUSD-best.CostUSD)
	}
	h.Text += "; next: " + h.Next
}

// newSlot names where the extra SSD of a larger plan sits, by the switch
// or root complex whose count grew.
func newSlot(m *topology.Machine, before, after []string) string {
	count := func(slots []string) map[string]int {
		c := map[string]int{}
		for _, s := range slots {
			if n := m.Node(s); n != nil {
				c[n.Parent]++
			}
		}
		return c
	}
	b, a := count(before), count(after)
	var grew []string
	for p, n := range a {
		if n > b[p] {
			name := p
			if pn := m.Node(p); pn != nil && pn.Name != "" {
				name = pn.Name
			}
			grew = append(grew, "on "+name)
		}
	}
	sort.Strings(grew)
	return strings.Join(grew, ", ")
}

// describeLink names a link for people: by its label (Moment's bus names)
// or, for a slot's link, by the device the slot holds.
func describeLink(m *topology.Machine, from, to, label string, gbps float64) string {
	s := fmt.Sprintf("%s->%s", from, to)
	if n := m.Node(to); n != nil && n.Kind == topology.KindSlot {
		for _, c := range m.Children(to) {
			s = fmt.Sprintf("%s's link (%s)", c, placement.SlotLocation(m, to))
		}
	}
	if label != "" {
		s += " (" + label + ")"
	}
	return s + fmt.Sprintf(", %g GB/s", gbps)
}
