package trainplan

import (
	"fmt"
	"io"
	"time"

	"github.com/gnnplan/gnnplan/internal/textout"
	"github.com/gnnplan/gnnplan/trainer"
	"github.com/schollz/progressbar/v3"
)

// ProgressOptions say what Progress prints.
type ProgressOptions struct {
	// Lines prints a line per epoch on out (else a short one on errw
	// where errw is not a terminal); Wide adds each stage's seconds.
	Lines, Wide bool
	// OutOfCore adds the gather stage to the check against the prediction.
	OutOfCore bool
}

// Progress is a trainer.Reporter for people: a progress bar per epoch on a
// terminal, and a line per epoch with its check against the prediction.
type Progress struct {
	out, errw io.Writer
	pred      *Prediction // nil: nothing to compare with
	o         ProgressOptions
	tty       bool
	bar       *progressbar.ProgressBar
	epoch     int
}

// NewProgress reports a run's batches on errw and its epochs on out,
// checking each against pred (nil: none).
func NewProgress(out, errw io.Writer, pred *Prediction, o ProgressOptions) *Progress {
	return &Progress{out: out, errw: errw, pred: pred, o: o, tty: textout.IsTerminal(errw)}
}

// Batch draws the epoch's bar.
func (r *Progress) Batch(p trainer.BatchProgress) {
	if !r.tty {
		return
	}
	if r.bar == nil || r.epoch != p.Epoch {
		r.Finish()
		r.epoch = p.Epoch
		r.bar = progressbar.NewOptions(p.Batches, progressbar.OptionSetWriter(r.errw),
			progressbar.OptionSetDescription(fmt.Sprintf("epoch %d/%d", p.Epoch, p.Epochs)),
			progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(true), progressbar.OptionClearOnFinish(),
			// The description grows to "epoch 10/10  loss 0.1234  1234567 samples/s".
			progressbar.OptionSetWidth(textout.BarWidth(textout.Columns(r.errw), 44)), progressbar.OptionThrottle(100*time.Millisecond))
	}
	rate := 0.0
	if p.Elapsed > 0 {
		rate = float64(p.Samples) / p.Elapsed.Seconds()
	}
	r.bar.Describe(fmt.Sprintf("epoch %d/%d  loss %.4f  %.0f samples/s", p.Epoch, p.Epochs, p.Loss, rate))
	r.bar.Set(p.Batch)
}

// Epoch prints the epoch's line.
func (r *Progress) Epoch(e trainer.EpochStats) {
	r.Finish()
	if !r.o.Lines {
		if !r.tty {
			fmt.Fprintf(r.errw, "epoch %d: %.3f s, loss %.4f, val %s\n", e.Epoch, e.Seconds, e.Loss, FormatMetric(e.ValAcc))
		}
		return
	}
	stages := "" // -o wide: the seconds each stage took
	if r.o.Wide {
		stages = fmt.Sprintf("  wait %.3f  sample %.3f  gather %.3f  fwd+bwd %.3f  optim %.3f s", e.WaitSeconds,
			e.Stages.Sample.BusySeconds+e.Stages.Sample.WaitInSeconds, e.GatherSeconds+e.Stages.Gather.BusySeconds, e.ComputeSeconds, e.OptimizerSeconds)
	}
	fmt.Fprintf(r.out, "epoch %4d  %8.3f s  %10.0f samples/s%s  loss %.4f  train %.4f  val %s  test %s\n",
		e.Epoch, e.Seconds, e.SamplesPerSecond, stages, e.Loss, e.TrainAcc, FormatMetric(e.ValAcc), FormatMetric(e.TestAcc))
	if c, ok := r.pred.Check(e); ok {
		fmt.Fprintln(r.out, c.Line(r.o.OutOfCore))
	}
}

// Finish clears the last bar.
func (r *Progress) Finish() {
	if r.bar != nil {
		r.bar.Finish()
		r.bar = nil
	}
}
