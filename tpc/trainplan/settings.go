package trainplan

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/gnnplan/gnnplan/internal/inputerr"
	"github.com/gnnplan/gnnplan/tpc"
	"github.com/gnnplan/gnnplan/trainer"
	"github.com/gnnplan/gnnplan/trainer/dataset"
	"github.com/gnnplan/gnnplan/trainer/nn"
)

// Flags are the user's settings of a run, each named as its flag; Set
// says which were given, so the plan and the model's defaults fill only
// the others.
type Flags struct {
	// Plan is the plan file's path, for messages.
	Plan    string
	Model   string
	Fanouts string
	Set     func(name string) bool

	Epochs, Batch, Hidden, Heads, Patience, EvalEvery, Threads int
	Layers                                                     int

	LR, WeightDecay, Dropout, InputDropout float64
	Seed                                   uint64
	RowNormalize                           bool
	Checkpoint                             string
	Resume                                 bool
}

func (f *Flags) set(name string) bool { return f.Set != nil && f.Set(name) }

// Settings merges the model's paper defaults, the plan's workload (nil:
// none) and the flags, in that order of precedence (flags win).
func Settings(f Flags, plan *tpc.Plan) (trainer.Options, error) {
	kind, err := modelKind(f, plan)
	if err != nil {
		return trainer.Options{}, err
	}
	to := trainer.Defaults(kind)
	if plan != nil {
		applyWorkload(&to, plan.Workload, kind)
	}
	if f.set("fanouts") {
		fo, err := ParseFanouts(f.Fanouts)
		if err != nil {
			return trainer.Options{}, err
		}
		to.Fanouts = fo
	}
	if f.set("layers") && f.Layers != len(to.Fanouts) {
		return trainer.Options{}, inputerr.Errorf("", "", "--layers %d but %d fanouts (%s): give one fanout per layer, e.g. --fanouts %s",
			f.Layers, len(to.Fanouts), FormatFanouts(to.Fanouts), exampleFanouts(f.Layers))
	}
	if err := applyCounts(&to, f, kind); err != nil {
		return trainer.Options{}, err
	}
	if err := applyRates(&to, f, kind); err != nil {
		return trainer.Options{}, err
	}
	if f.set("row-normalize") {
		to.RowNormalize = f.RowNormalize
	}
	if f.set("seed") {
		to.Seed = f.Seed
	}
	if f.Threads < 0 {
		return trainer.Options{}, inputerr.Errorf("", "", "--threads: %d (valid: >= 1, or 0 for one per core)", f.Threads)
	}
	to.Threads = f.Threads
	to.Checkpoint, to.Resume = f.Checkpoint, f.Resume
	return to, nil
}

// modelKind is --model's, else the plan's, else GraphSAGE.
func modelKind(f Flags, plan *tpc.Plan) (nn.Kind, error) {
	kind := nn.GraphSAGE
	if plan != nil && plan.Workload.Model != "" {
		k, err := nn.ParseKind(plan.Workload.Model)
		if err != nil {
			return kind, inputerr.Errorf("", "", "--plan %s: workload.model %q (valid: graphsage, gcn, gat)", f.Plan, plan.Workload.Model)
		}
		kind = k
	}
	if f.set("model") {
		k, err := nn.ParseKind(f.Model)
		if err != nil {
			return kind, inputerr.Errorf("", "", "--model: %q (valid: graphsage, gcn, gat)", f.Model)
		}
		kind = k
	}
	return kind, nil
}

// applyWorkload sets what a plan's workload says of the run.
func applyWorkload(to *trainer.Options, w tpc.Workload, kind nn.Kind) {
	if len(w.Fanouts) > 0 {
		to.Fanouts = append([]int(nil), w.Fanouts...)
	}
	if w.BatchSize > 0 {
		to.BatchSize = w.BatchSize
	}
	if w.Hidden > 0 {
		to.Model.Hidden = w.Hidden
	}
	if kind == nn.GAT && w.Heads > 0 {
		to.Model.Heads = w.Heads
	}
	// A plan describes a workload at scale: features as stored, and
	// dropout between layers only (DGL's mini-batch GraphSAGE).
	to.RowNormalize = false
	to.Model.InputDropout = 0
}

// applyCounts sets the integer flags given, each checked against its least.
func applyCounts(to *trainer.Options, f Flags, kind nn.Kind) error {
	ints := []struct {
		flag string
		val  int
		dst  *int
		min  int
	}{
		{"epochs", f.Epochs, &to.Epochs, 1}, {"batch", f.Batch, &to.BatchSize, 0}, {"hidden", f.Hidden, &to.Model.Hidden, 1},
		{"heads", f.Heads, &to.Model.Heads, 1}, {"patience", f.Patience, &to.Patience, 0}, {"eval-every", f.EvalEvery, &to.EvalEvery, 0},
	}
	for _, c := range ints {
		if !f.set(c.flag) {
			continue
		}
		if c.val < c.min {
			return inputerr.Errorf("", "", "--%s: %d (valid: >= %d)", c.flag, c.val, c.min)
		}
		*c.dst = c.val
	}
	if f.set("heads") && kind != nn.GAT {
		return inputerr.Errorf("", "", "--heads: only GAT has attention heads (--model gat)")
	}
	return nil
}

// applyRates sets the learning rate, weight decay and dropouts given.
func applyRates(to *trainer.Options, f Flags, kind nn.Kind) error {
	floats := []struct {
		flag     string
		val      float64
		dst      *float32
		min, max float64
		valid    string
	}{
		{"lr", f.LR, &to.LR, math.SmallestNonzeroFloat32, 10, "above 0, at most 10"},
		{"weight-decay", f.WeightDecay, &to.WeightDecay, 0, 1, "0 to 1"},
		{"dropout", f.Dropout, &to.Model.Dropout, 0, 0.999, "0 to 0.999"},
		{"input-dropout", f.InputDropout, &to.Model.InputDropout, 0, 0.999, "0 to 0.999"},
	}
	for _, c := range floats {
		if !f.set(c.flag) {
			continue
		}
		if !(c.val >= c.min && c.val <= c.max) {
			return inputerr.Errorf("", "", "--%s: %v (valid: %s)", c.flag, c.val, c.valid)
		}
		*c.dst = float32(c.val)
	}
	if f.set("dropout") && !f.set("input-dropout") {
		to.Model.InputDropout = to.Model.Dropout
	}
	if f.set("dropout") && kind == nn.GAT {
		to.Model.AttnDropout = to.Model.Dropout
	}
	return nil
}

// ParseFanouts reads "25,10" or "-1,-1".
func ParseFanouts(s string) ([]int, error) {
	var out []int
	for _, p := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || v == 0 || v < -1 {
			return nil, inputerr.Errorf("", "", "--fanouts: %q (valid: comma-separated counts >= 1, or -1 for every neighbour, e.g. 25,10)", s)
		}
		out = append(out, v)
	}
	return out, nil
}

// FormatFanouts writes fanouts as the flag takes them: "25,10".
func FormatFanouts(f []int) string {
	return strings.Trim(strings.Join(strings.Fields(fmt.Sprint(f)), ","), "[]")
}

// exampleFanouts suggests fanouts for n layers (the papers' 25,10, then 5s).
func exampleFanouts(n int) string {
	f := []string{"25", "10"}
	for len(f) < n {
		f = append(f, "5")
	}
	return strings.Join(f[:max(n, 1)], ",")
}

// CheckMatches refuses a plan made for another dataset: its workload's
// vertex count, feature width and classes must be the dataset's.
func CheckMatches(p *tpc.Plan, m dataset.Meta, path string) error {
	w := p.Workload
	switch {
	case w.Vertices != m.NumNodes:
		return inputerr.Errorf("", "", "--plan %s: workload %q has %d vertices, dataset %s has %d (make the plan with recommend --dataset)", path, w.Name, w.Vertices, m.Name, m.NumNodes)
	case w.FeatureDim != m.FeatureDim:
		return inputerr.Errorf("", "", "--plan %s: workload %q has %d features per vertex, dataset %s has %d", path, w.Name, w.FeatureDim, m.Name, m.FeatureDim)
	case w.Classes > 1 && w.Classes != m.NumClasses:
		return inputerr.Errorf("", "", "--plan %s: workload %q has %d classes, dataset %s has %d", path, w.Name, w.Classes, m.Name, m.NumClasses)
	}
	return nil
}

// SynthOptions is the graph a run generates when given no dataset: the
// generator's defaults scaled down to nodes vertices, with the plan's
// feature width and classes when a plan is given.
func SynthOptions(nodes int64, plan *tpc.Plan) dataset.SynthOptions {
	so := dataset.DefaultSynthOptions()
	so.Name = "synthetic"
	so.Nodes = max(nodes, 100)
	so.Edges = 10 * so.Nodes
	so.FeatureDim = 64
	so.Classes = 8
	so.TrainFraction, so.ValFraction, so.TestFraction = 0.1, 0.05, 0.1
	if plan != nil {
		if plan.Workload.FeatureDim > 0 {
			so.FeatureDim = plan.Workload.FeatureDim
		}
		if plan.Workload.Classes > 1 {
			so.Classes = plan.Workload.Classes
		}
	}
	return so
}
