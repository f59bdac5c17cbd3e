package tpc

import (
	"context"
	"fmt"

	"github.com/gnnplan/gnnplan/maxflow"
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
	if err := s.Workload.Validate(); err != nil {
		return Prediction{}, err
	}
	cat := s.Catalog
	if cat == nil {
		cat = profiles.DefaultCatalog()
	}
	gpu, err := cat.GPU(s.GPU)
	if err != nil {
		return Prediction{}, err
	}
	ssd, err := cat.SSD(s.SSD)
	if err != nil {
		return Prediction{}, err
	}
	if s.Machine == nil {
		return Prediction{}, &topology.InputError{Field: "machine", Msg: "none given (want a machine with slots)"}
	}
	s.Machine, _ = maxflow.PositionSlots(s.Machine)
	stripped, inv := maxflow.Strip(s.Machine)
	if s.GPUs >= 0 {
		inv.GPUs = s.GPUs
	}
	if s.SSDs >= 0 {
		inv.SSDs = s.SSDs
	}
	inv.GPU, inv.SSD = gpuNode(gpu), ssdNode(ssd)
	hw := Hardware{GPU: gpu, GPUs: inv.GPUs, SSD: ssd, SSDs: inv.SSDs}
	a := s.Assumptions
	sh, rate := ioShares(s.Workload, hw, hostMemoryGiB(s.Machine, cat.Host), a, s.SSDGBps)
	opts := maxflow.SearchOptions{Top: 1, Workers: 1}
	layout := s.Layout
	if layout == "" {
		layout = LayoutInstalled
	}
	if layout == LayoutInstalled {
		opts.Installed = maxflow.Installed(s.Machine)
		if n := len(opts.Installed.GPUSlots); n != inv.GPUs || len(opts.Installed.SSDSlots) != inv.SSDs {
			return Prediction{}, &topology.InputError{Field: "layout", Msg: fmt.Sprintf("installed: %s holds %d GPU(s) and %d SSD(s) in slots, not %d and %d (valid: best, a-d, or the machine's counts)",
				s.Machine.Name, n, len(opts.Installed.SSDSlots), inv.GPUs, inv.SSDs)}
		}
	}
	res, err := maxflow.SearchWith(ctx, stripped, inv, tiersFor(sh, rate, a), opts)
	if err != nil {
		return Prediction{}, err
	}
	var c *maxflow.Candidate
	switch layout {
	case LayoutInstalled:
		c = res.Installed
	case LayoutBest:
		c = res.Candidates[0]
	default:
		c = res.Classic[layout]
		if c == nil && res.ClassicNote != "" {
			return Prediction{}, &topology.InputError{Field: "layout", Msg: fmt.Sprintf("%q: %s", layout, res.ClassicNote)}
		}
	}
	if c == nil {
		return Prediction{}, &topology.InputError{Field: "layout", Msg: fmt.Sprintf("%q (valid: installed, best, a, b, c, d)", layout)}
	}
	return predict(s.Workload, hw, cat.Host, c.Seconds, sh, a, rate), nil
}
