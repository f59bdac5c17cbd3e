package trainplan

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/gnnplan/gnnplan/kernels"
	"github.com/gnnplan/gnnplan/tpc"
	"github.com/gnnplan/gnnplan/trainer"
)

// StageCheck is one stage's measured and predicted seconds in an epoch.
type StageCheck struct {
	MeasuredS  float64 `json:"measured_s"`
	PredictedS float64 `json:"predicted_s"`
	// ErrorPct is null when nothing was predicted for the stage.
	ErrorPct trainer.Metric `json:"error_pct"`
}

func newStageCheck(measured, predicted float64) StageCheck {
	return StageCheck{MeasuredS: measured, PredictedS: predicted, ErrorPct: trainer.Metric(tpc.ErrorPct(measured, predicted))}
}

// EpochCheck compares one epoch with the prediction.
type EpochCheck struct {
	Epoch int `json:"epoch"`
	StageCheck
	Sample StageCheck `json:"sample"`
	Gather StageCheck `json:"gather"`
	Step   StageCheck `json:"step"`
	// DiskRowsPerS is the rate the epoch read rows from disk at (0 when
	// it read none), and WithEpochDisk the prediction made again with that
	// rate in place of the one measured before training: how much of the
	// error is the disk's rate moving, and how much the model.
	DiskRowsPerS  float64     `json:"disk_rows_per_s,omitempty"`
	WithEpochDisk *StageCheck `json:"with_epoch_disk,omitempty"`
	// WithBatchReads is the prediction made again with each batch's own
	// reads (trainer.EpochStats.DiskReadS; not for the multistage loader,
	// priced a macro-batch at a time): where the disk's rate moved inside
	// the epoch, the epoch at its one mean rate misses by more than this.
	WithBatchReads *StageCheck `json:"with_batch_reads,omitempty"`
}

// Check compares e with the prediction; false when e is not a whole epoch
// (a resumed one) or p is nil.
func (p *Prediction) Check(e trainer.EpochStats) (EpochCheck, bool) {
	if p == nil || !p.whole(e) {
		return EpochCheck{}, false
	}
	pe := p.Epoch
	if p.Loader == trainer.LoaderMultistage && float64(e.Batches) != pe.Batches { // priced at its own batches
		again, err := p.at(float64(e.Batches), p.Costs.DiskRowsPerS)
		if err != nil {
			return EpochCheck{}, false
		}
		pe = again
	}
	c := EpochCheck{Epoch: e.Epoch, StageCheck: newStageCheck(e.Seconds, pe.EpochS),
		Sample: newStageCheck(e.Stages.Sample.BusySeconds, pe.SampleS),
		Gather: newStageCheck(e.Stages.Gather.BusySeconds, pe.GatherS),
		Step:   newStageCheck(e.GatherSeconds+e.ComputeSeconds+e.OptimizerSeconds, pe.StepS)}
	if rate := EpochDiskRate(e, p.Costs.CopyRowS); rate > 0 && (pe.HitShare < 1 || p.MacroRows > 0) {
		c.DiskRowsPerS = rate
		if again, err := p.at(pe.Batches, rate); err == nil {
			s := newStageCheck(e.Seconds, again.EpochS)
			c.WithEpochDisk = &s
		}
		if p.Loader != trainer.LoaderMultistage && len(e.DiskReadS) == e.Batches {
			costs := p.Costs
			costs.DiskRowsPerS = rate
			if again, err := tpc.PredictPipelineReads(costs, pe.HitShare, e.DiskReadS); err == nil {
				s := newStageCheck(e.Seconds, again.EpochS)
				c.WithBatchReads = &s
			}
		}
	}
	return c, true
}

// whole says e is a whole epoch, not one a run resumed part-way: of the
// predicted batches, or for the multistage loader, whose macro-batches
// end in a short batch each, of at least as many.
func (p *Prediction) whole(e trainer.EpochStats) bool {
	if p.Loader == trainer.LoaderMultistage {
		return e.Batches >= p.FullBatches
	}
	return e.Batches == p.FullBatches
}

// EpochDiskRate is the rows per second an epoch read from disk: its disk
// rows over the time the store spent on them (requests built, read and
// checked; for packed pieces and parts the reads alone, their checks
// priced apart), or, where the store did not time that, over the gather
// stage's busy time less the rows it copied from memory (at copyRowS a
// row); 0 when it read none.
func EpochDiskRate(e trainer.EpochStats, copyRowS float64) float64 {
	r := e.Rows
	if r.SSDRows == 0 {
		return 0
	}
	if r.ReadSeconds > 0 {
		return float64(r.SSDRows) / r.ReadSeconds
	}
	secs := e.Stages.Gather.BusySeconds - float64(r.Rows-r.SSDRows)*copyRowS
	if !(secs > 0) {
		return 0
	}
	return float64(r.SSDRows) / secs
}

// Line is the check as printed after an epoch.
func (c EpochCheck) Line(outOfCore bool) string {
	f := func(name string, s StageCheck) string {
		// A stage that is a sliver of the epoch has no error worth a
		// percentage: its few milliseconds are noise.
		if s.PredictedS < 0.01*c.PredictedS {
			return fmt.Sprintf("%s %s", name, tpc.FormatSecondsPair(s.MeasuredS, s.PredictedS))
		}
		return fmt.Sprintf("%s %s (%+.0f%%)", name, tpc.FormatSecondsPair(s.MeasuredS, s.PredictedS), s.ErrorPct)
	}
	parts := []string{f("epoch", c.StageCheck), f("sample", c.Sample)}
	if outOfCore {
		parts = append(parts, f("gather", c.Gather))
	}
	parts = append(parts, f("step", c.Step))
	line := "  measured/predicted: " + strings.Join(parts, ", ")
	if w := c.WithEpochDisk; w != nil {
		line += fmt.Sprintf("; at this epoch's disk rate (%.0f rows/s) predicted %s (%+.1f%%)", c.DiskRowsPerS, tpc.FormatSeconds(w.PredictedS), w.ErrorPct)
	}
	if b := c.WithBatchReads; b != nil && c.WithEpochDisk != nil && readsMoved(b.PredictedS, c.WithEpochDisk.PredictedS) {
		line += fmt.Sprintf("; at each batch's own reads %s (%+.1f%%): the disk's rate moved inside the epoch", tpc.FormatSeconds(b.PredictedS), b.ErrorPct)
	}
	return line
}

// readsMoved says an epoch priced at each batch's own reads (byBatch)
// differs from it at one mean rate (oneRate) by more than 5%: the disk's
// rate moved inside it, worth telling the user.
func readsMoved(byBatch, oneRate float64) bool {
	return byBatch > 0 && math.Abs(byBatch-oneRate) > 0.05*oneRate
}

// MedianEpochSeconds is the median of the whole epochs' times (every
// epoch's when p is nil), the run's first left out where others follow
// (WarmEpochs).
func MedianEpochSeconds(p *Prediction, epochs []trainer.EpochStats) float64 {
	var s []float64
	for _, e := range epochs {
		if p == nil || p.whole(e) {
			s = append(s, e.Seconds)
		}
	}
	return Median(WarmEpochs(s))
}

// WarmEpochs is a run's epochs (or what was measured of each) without its
// first where others follow: the first pays once for what a prediction's
// warm-up batches leave out (its buffers' first pages, tens of
// microseconds a page on a VM: the multistage loader's first epoch took
// 3 to 12 times its later ones).
func WarmEpochs[T any](epochs []T) []T {
	if len(epochs) > 1 {
		return epochs[1:]
	}
	return epochs
}

// Median is v's median (the mean of the middle two for an even count), 0
// for none; v is sorted in place.
func Median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// PlanStepTerm is one term of a CPU plan's step beside the median over
// the epochs of what the kernels of that class took, per batch.
type PlanStepTerm struct {
	Term       string  `json:"term"`
	PlanMS     float64 `json:"plan_ms"`
	MeasuredMS float64 `json:"measured_ms"`
}

// PlanStep lines up a CPU plan's predicted batch (nil: none) with the
// epochs' kernel times, term by term; nil when the epochs have none (a
// device backend).
func PlanStep(b *tpc.CPUBatch, epochs []trainer.EpochStats) []PlanStepTerm {
	if b == nil {
		return nil
	}
	per := func(f func(k kernels.KernelTimes, e trainer.EpochStats) float64) float64 {
		var v []float64
		for _, e := range epochs {
			if e.Kernels != nil && e.Batches > 0 {
				v = append(v, 1e3*f(*e.Kernels, e)/float64(e.Batches))
			}
		}
		return Median(v)
	}
	kernel := func(k func(kernels.KernelTimes) float64) float64 {
		return per(func(t kernels.KernelTimes, _ trainer.EpochStats) float64 { return k(t) })
	}
	terms := []PlanStepTerm{
		{"products", 1e3 * b.ProductsS, kernel(func(k kernels.KernelTimes) float64 { return k.ProductsS })},
		{"aggregation", 1e3 * b.AggregationS, kernel(func(k kernels.KernelTimes) float64 { return k.AggregationS })},
		{"row gather", 1e3 * b.RowGatherS, kernel(func(k kernels.KernelTimes) float64 { return k.RowGatherS })},
		{"in-order passes", 1e3 * b.ElementwiseS, kernel(func(k kernels.KernelTimes) float64 { return k.ElementwiseS })},
		{"optimizer", 1e3 * b.OptimizerS, kernel(func(k kernels.KernelTimes) float64 { return k.OptimizerS })},
		{"sampling", 1e3 * b.SampleS, per(func(_ kernels.KernelTimes, e trainer.EpochStats) float64 { return e.Stages.Sample.BusySeconds })},
		{"batch", 1e3 * b.BatchS, per(func(_ kernels.KernelTimes, e trainer.EpochStats) float64 { return e.Seconds })},
	}
	if terms[0].MeasuredMS == 0 {
		return nil
	}
	return terms
}
