package trainplan

import (
	"fmt"
	"io"

	"github.com/gnnplan/gnnplan/internal/textout"
	"github.com/gnnplan/gnnplan/tpc"
)

// WriteText prints the rates and the epoch at each cache size; the tables
// fit width columns (0: any).
func (e *Estimate) WriteText(h io.Writer, width int) error {
	w, rates := e.Workload, e.Rates
	fmt.Fprintf(h, "%s %s on this machine: %d CPU cores, %d disk(s) %.0f rows/s\n", w.Name, w.Model, rates.Cores, e.Disks, rates.DiskRowsPerS)
	if err := writeStepRates(h, width, e.Profiled, rates, e.ProbeNote); err != nil {
		return err
	}
	fmt.Fprintf(h, "out of core: %s\n", e.OutOfCoreNote)
	fmt.Fprintf(h, "a batch of %d seeds reads %.0f distinct rows of %d bytes (pre-sampled: %d batches); rows from memory: %s\n",
		w.BatchSize, e.InputRows, w.FeatureRowBytes(), PresampleBatches, e.HitSource)
	t := textout.NewTable(textout.Column{Name: "CACHE", Elastic: true, Wrap: true}, textout.Num("FROM MEMORY"), textout.Num("SAMPLE ms"), textout.Num("PRODUCTS ms"), textout.Num("MEMORY ms"), textout.Num("DISK ms"),
		textout.Num("BATCH ms"), textout.Num("EPOCH s"), textout.Opt(textout.Num("SAMPLES/s")), textout.Opt(textout.Left("BOUND")), textout.Opt(textout.Left("FITS IN MEMORY")))
	for _, r := range e.Rows {
		name, fit := fmt.Sprintf("%.0f%%", 100*r.Fraction), "no"
		if r.Fraction == e.FitsFraction {
			name += " (what memory holds)"
		}
		if r.Fits {
			fit = "yes"
		}
		b := r.Batch
		t.Row(name, fmt.Sprintf("%.1f%%", 100*r.HitShare), ms(b.SampleS), ms(b.ComputeS), ms(b.MemoryS), ms(b.DiskS+b.CopyS), ms(b.BatchS),
			fmt.Sprintf("%.1f", r.EpochS), fmt.Sprintf("%.0f", r.SamplesPerS), b.Bound, fit)
	}
	if err := t.Write(h, width); err != nil {
		return err
	}
	if e.Skipped > 0 {
		fmt.Fprintf(h, "%d smaller cache(s) left out: they read rows from disk, and no disk was measured (--ssd-dir DIR, or --measured with a profile of the disks)\n", e.Skipped)
	}
	return nil
}

// writeStepRates shows each class's rate timed alone (the profile) and
// in real steps (the probe), which the plan uses.
func writeStepRates(w io.Writer, width int, profiled, used tpc.CPURates, note string) error {
	t := textout.NewTable(textout.Left("KERNELS"), textout.Num("TIMED ALONE"), textout.Num("IN THE STEP (PLANNED WITH)"))
	rows := [][3]string{
		{"products", fmt.Sprintf("%.1f GFLOP/s", profiled.GEMMGFLOPS), fmt.Sprintf("%.1f GFLOP/s", used.GEMMGFLOPS)},
		{"aggregation", fmt.Sprintf("%.1f GB/s", profiled.Rate(profiled.AggregationGBps)), fmt.Sprintf("%.1f GB/s", used.Rate(used.AggregationGBps))},
		{"row gather", fmt.Sprintf("%.1f GB/s", profiled.Rate(profiled.RowGatherGBps)), fmt.Sprintf("%.1f GB/s", used.Rate(used.RowGatherGBps))},
		{"in-order passes", fmt.Sprintf("%.1f GB/s", profiled.Rate(profiled.StreamGBps)), fmt.Sprintf("%.1f GB/s", used.Rate(used.StreamGBps))},
		{"step overhead", "-", ms(used.StepOverheadS) + " ms"},
	}
	for _, r := range rows {
		t.Row(r[0], r[1], r[2])
	}
	if err := t.Write(w, width); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, note)
	return err
}

func ms(s float64) string { return fmt.Sprintf("%.1f", 1000*s) }
