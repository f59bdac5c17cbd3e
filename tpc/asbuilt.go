package tpc

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/gnnplan/gnnplan/maxflow/placement"
	"github.com/gnnplan/gnnplan/profiles"
	"github.com/gnnplan/gnnplan/topology"
)

// Layouts a Setup can time: the devices where the machine has them, the
// best placement the search finds, or one of Moment's classic placements.
const (
	LayoutInstalled = "installed"
	LayoutBest      = "best"
)

// Setup is one machine with a given number of GPUs and SSDs of one catalog
// model each, in one layout, training one workload: what PredictSetup
// times. It is the question of a review of a server one has, and of a
// published measurement one checks the model against.
type Setup struct {
	Machine  *topology.Machine // slots and links; its GPUs and SSDs give the installed layout
	Catalog  *profiles.Catalog // nil: the built-in one
	Workload Workload
	GPU, SSD string // catalog keys of the devices
	// GPUs and SSDs are the device counts; < 0 takes the machine's.
	GPUs, SSDs int
	// DIMMs modules of the catalog's DIMM are added to the host.
	DIMM  string
	DIMMs int
	// Layout is LayoutInstalled, LayoutBest or a classic placement "a"-"d".
	Layout string
	// SSDGBps, when > 0, is one SSD's measured read rate for feature rows
	// (a profile's, or the one a paper measured), replacing the catalog's.
	SSDGBps     float64
	Assumptions Assumptions
}

// PredictSetup places s's devices as its layout says and predicts an
// epoch with the same model Recommend prices every option with.
func PredictSetup(ctx context.Context, s Setup) (Prediction, error) {
	t, err := timeSetup(ctx, s)
	if err != nil {
		return Prediction{}, err
	}
	return t.prediction, nil
}

// timedSetup is a Setup placed and timed: its hardware, the stripped
// machine and the candidate placement, and the prediction.
type timedSetup struct {
	hw         Hardware
	stripped   *topology.Machine
	candidate  *placement.Candidate
	shares     Shares
	ssdGBps    float64
	a          Assumptions
	prediction Prediction
}

func timeSetup(ctx context.Context, s Setup) (*timedSetup, error) {
	if err := s.Workload.Validate(); err != nil {
		return nil, err
	}
	cat := s.Catalog
	if cat == nil {
		cat = profiles.DefaultCatalog()
	}
	gpu, err := cat.GPU(s.GPU)
	if err != nil {
		return nil, err
	}
	ssd, err := cat.SSD(s.SSD)
	if err != nil {
		return nil, err
	}
	if s.Machine == nil {
		return nil, &topology.InputError{Field: "machine", Msg: "none given (want a machine with slots)"}
	}
	s.Machine, _ = placement.PositionSlots(s.Machine)
	stripped, inv := placement.Strip(s.Machine)
	if s.GPUs >= 0 {
		inv.GPUs = s.GPUs
	}
	if s.SSDs >= 0 {
		inv.SSDs = s.SSDs
	}
	inv.GPU, inv.SSD = gpuNode(gpu), ssdNode(ssd)
	hw := Hardware{GPU: gpu, GPUs: inv.GPUs, SSD: ssd, SSDs: inv.SSDs}
	if s.DIMMs > 0 {
		if hw.DIMM, err = cat.DIMM(s.DIMM); err != nil {
			return nil, err
		}
		hw.DIMMs = s.DIMMs
	}
	a := s.Assumptions
	sh, rate := ioShares(s.Workload, hw, hostMemoryGiB(s.Machine, cat.Host)+hw.AddedMemoryGiB(), a, s.SSDGBps)
	opts := placement.SearchOptions{Top: 1, Workers: 1}
	layout := s.Layout
	if layout == "" {
		layout = LayoutInstalled
	}
	if layout == LayoutInstalled {
		opts.Installed = placement.Installed(s.Machine)
		if n := len(opts.Installed.GPUSlots); n != inv.GPUs || len(opts.Installed.SSDSlots) != inv.SSDs {
			return nil, &topology.InputError{Field: "layout", Msg: fmt.Sprintf("installed: %s holds %d GPU(s) and %d SSD(s) in slots, not %d and %d (valid: best, a-d, or the machine's counts)",
				s.Machine.Name, n, len(opts.Installed.SSDSlots), inv.GPUs, inv.SSDs)}
		}
	}
	res, err := placement.SearchWith(ctx, stripped, inv, tiersFor(sh, rate, a), opts)
	if err != nil {
		return nil, err
	}
	var c *placement.Candidate
	switch layout {
	case LayoutInstalled:
		c = res.Installed
	case LayoutBest:
		c = res.Candidates[0]
	default:
		c = res.Classic[layout]
		if c == nil && res.ClassicNote != "" {
			return nil, &topology.InputError{Field: "layout", Msg: fmt.Sprintf("%q: %s", layout, res.ClassicNote)}
		}
	}
	if c == nil {
		return nil, &topology.InputError{Field: "layout", Msg: fmt.Sprintf("%q (valid: installed, best, a, b, c, d)", layout)}
	}
	return &timedSetup{hw: hw, stripped: stripped, candidate: c, shares: sh, ssdGBps: rate, a: a,
		prediction: predict(s.Workload, hw, cat.Host, c.Seconds, sh, a, rate)}, nil
}

// Installed is a machine as it stands: its GPUs and SSDs where they are,
// priced and predicted with the catalog models that describe them.
type Installed struct {
	GPU        string     `json:"gpu_model"` // catalog keys
	SSD        string     `json:"ssd_model,omitempty"`
	GPUs       int        `json:"gpus"`
	SSDs       int        `json:"ssds"`
	Prediction Prediction `json:"prediction"`
	// Matched says how each installed device was matched to the catalog.
	Matched []string `json:"matched,omitempty"`
	// CannotHold, when set, says why the machine as it stands cannot
	// hold the dataset; Prediction is then empty.
	CannotHold string `json:"cannot_hold,omitempty"`
	// Decisions is the CPU cache decided for the machine as it stands.
	Decisions Decisions `json:"decisions"`

	timed *timedSetup // how it was timed (nil with CannotHold)
}

// PredictInstalled predicts req's machine as it stands (Setup with
// LayoutInstalled), its devices matched to catalog models by model key,
// else by name and memory (a GPU) or name (an SSD). It is the first
// question of a review of a server one has: how fast is it as installed,
// and what binds. An error says what could not be matched or predicted.
func PredictInstalled(ctx context.Context, req Request) (*Installed, error) {
	cat := req.Catalog
	if cat == nil {
		cat = profiles.DefaultCatalog()
	}
	m, _ := placement.PositionSlots(req.Machine)
	in := &Installed{}
	for _, n := range m.Nodes {
		if n.Kind != topology.KindGPU && n.Kind != topology.KindNVMe {
			continue
		}
		if p := m.Node(n.Parent); p == nil || p.Kind != topology.KindSlot {
			continue
		}
		key, how, err := installedModel(cat, n, req.InstalledGPU)
		if err != nil {
			return nil, err
		}
		if n.Kind == topology.KindGPU {
			if in.GPU != "" && in.GPU != key {
				return nil, &topology.InputError{Field: m.Name, Msg: fmt.Sprintf("GPUs of two models (%s, %s): the model prices one model at a time", in.GPU, key)}
			}
			in.GPU, in.GPUs = key, in.GPUs+1
		} else {
			if in.SSD != "" && in.SSD != key {
				return nil, &topology.InputError{Field: m.Name, Msg: fmt.Sprintf("SSDs of two models (%s, %s): the model prices one model at a time", in.SSD, key)}
			}
			in.SSD, in.SSDs = key, in.SSDs+1
		}
		if how != "" && !slices.Contains(in.Matched, how) {
			in.Matched = append(in.Matched, how)
		}
	}
	if in.GPUs == 0 {
		return nil, &topology.InputError{Field: m.Name, Msg: "no GPU installed in a slot or position: nothing to predict as installed"}
	}
	ssd := in.SSD
	if ssd == "" {
		ssd = cat.SSDs[0].Key // no SSD: the model's key is not used
	}
	g, _ := cat.GPU(in.GPU)
	sm, _ := cat.SSD(ssd)
	if ok, why := holds(req.Workload, Hardware{GPU: g, GPUs: in.GPUs, SSD: sm, SSDs: in.SSDs}, hostMemoryGiB(m, cat.Host), req.Assumptions.HostReserveShare); !ok {
		in.CannotHold = why
		return in, nil
	}
	// The CPU cache decided as Recommend decides it for an option.
	hw := Hardware{GPU: g, GPUs: in.GPUs, SSD: sm, SSDs: in.SSDs}
	hostGiB := hostMemoryGiB(m, cat.Host)
	a := req.Assumptions
	a.CPUCacheFraction = searchCacheFraction
	a.TopologyOnSSDShare = leastTopologyOnSSD(req.Workload, hw, hostGiB, a)
	a.GPUTopologyShare = servedSplit(req.Workload, hw, hostGiB, a)
	xmax := maxCPUCacheFraction(req.Workload, hw, hostGiB, a)
	a.CPUCacheFraction = xmax
	setup := Setup{Machine: m, Catalog: cat, Workload: req.Workload, GPU: in.GPU, SSD: ssd, GPUs: in.GPUs, SSDs: in.SSDs,
		Layout: LayoutInstalled, SSDGBps: req.MeasuredSSDGBps, Assumptions: a}
	t, err := timeSetup(ctx, setup)
	if err != nil {
		return nil, err
	}
	inv := placement.Inventory{GPUs: hw.GPUs, SSDs: hw.SSDs, GPU: gpuNode(g), SSD: ssdNode(sm)}
	x, why, err := req.cpuCache(t.stripped, inv, t.candidate.Placement, hw, hostGiB, xmax)
	if err != nil {
		return nil, err
	}
	if x != xmax {
		setup.Assumptions.CPUCacheFraction = x
		if t, err = timeSetup(ctx, setup); err != nil {
			return nil, err
		}
	}
	in.Decisions = Decisions{CPUCacheFraction: x, CPUCacheGiB: t.shares.CPUCacheRows * float64(req.Workload.FeatureRowBytes()) / (1 << 30),
		MaxCPUCacheFraction: xmax, Why: why, GPUTopologyShare: a.GPUTopologyShare, GPUWhy: gpuSplitWhy(req.Workload, t.shares, setup.Assumptions),
		TopologyOnSSDShare: a.TopologyOnSSDShare, TopologyWhy: topologySplitWhy(req.Workload, hw, hostGiB, t.shares, setup.Assumptions)}
	in.Prediction = t.prediction
	in.timed = t
	return in, nil
}

// option is the machine as installed as a ranked option, with the
// machine it sits in and its flow: what Recommend answers with when
// nothing can be bought.
func (in *Installed) option() (*Option, *topology.Machine, *placement.Evaluation, error) {
	t := in.timed
	o := &Option{Hardware: t.hw, Placement: t.candidate.Placement, Prediction: t.prediction, FabricGBps: t.candidate.FabricGBps, Decisions: in.Decisions}
	inv := placement.Inventory{GPUs: t.hw.GPUs, SSDs: t.hw.SSDs, GPU: gpuNode(t.hw.GPU), SSD: ssdNode(t.hw.SSD)}
	pm, err := placement.Apply(t.stripped, inv, o.Placement)
	if err != nil {
		return nil, nil, nil, err
	}
	ev := t.candidate.Eval
	if ev == nil {
		if ev, err = placement.Evaluate(pm, tiersFor(t.shares, t.ssdGBps, t.a)); err != nil {
			return nil, nil, nil, err
		}
	}
	return o, pm, ev, nil
}

// installedModel is the catalog key of an installed device and, where it
// was matched by name, how. gpuKey, when set, is what the user says the
// installed GPUs are (--installed-gpu), for files that do not name them.
func installedModel(cat *profiles.Catalog, n topology.Node, gpuKey string) (key, how string, err error) {
	if n.Kind == topology.KindGPU && gpuKey != "" {
		g, err := cat.GPU(gpuKey)
		if err != nil {
			return "", "", &topology.InputError{Field: "--installed-gpu", Msg: err.Error()}
		}
		return g.Key, fmt.Sprintf("the installed GPUs priced as %s (--installed-gpu)", g.Key), nil
	}
	if n.Model != "" {
		if n.Kind == topology.KindGPU {
			if _, err := cat.GPU(n.Model); err == nil {
				return n.Model, "", nil
			}
		} else if _, err := cat.SSD(n.Model); err == nil {
			return n.Model, "", nil
		}
	}
	if n.Kind == topology.KindGPU {
		if g, ok := cat.GPUForDriverName(n.Name, n.MemoryGiB); ok {
			if n.MemoryGiB == 0 {
				return g.Key, fmt.Sprintf("%s (memory not in the file) priced as %s, the family's smallest (--installed-gpu names another)", n.Name, g.Key), nil
			}
			return g.Key, fmt.Sprintf("%s (%g GiB) priced as %s", n.Name, n.MemoryGiB, g.Key), nil
		}
		return "", "", &topology.InputError{Field: n.ID, Msg: fmt.Sprintf("%q (%g GiB) matches no catalog GPU: say what the installed GPUs are with --installed-gpu KEY (gnnplan catalog lists the keys), or add the model with --catalog", n.Name, n.MemoryGiB)}
	}
	for _, s := range cat.SSDs {
		if n.Name != "" && strings.EqualFold(n.Name, s.Name) {
			return s.Key, "", nil
		}
	}
	return cat.SSDs[0].Key, fmt.Sprintf("%s %q priced as %s (no catalog SSD of that name)", n.ID, n.Name, cat.SSDs[0].Key), nil
}
