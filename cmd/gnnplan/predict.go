package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gnnplan/gnnplan/kernels"
	"github.com/gnnplan/gnnplan/tpc"
	"github.com/gnnplan/gnnplan/trainer"
	"github.com/gnnplan/gnnplan/trainer/sample"
	"github.com/gnnplan/gnnplan/trainer/store"
)

// trainPrediction is what train predicted for its epochs and how: a probe
// of a few batches with every row in memory, the share of row reads the
// store serves from memory, and the disks' read rate (Hyperion's TPC
// profiler feeding its analytical model).
type trainPrediction struct {
	Probe trainer.Probe  `json:"probe"`
	Costs tpc.BatchCosts `json:"batch_costs"`
	// HitShareSource says how the share of rows from memory was found.
	HitShareSource string                 `json:"hit_share_source"`
	Disk           *store.ReadRate        `json:"disk,omitempty"`
	Epoch          tpc.PipelinePrediction `json:"epoch"`
	// FullBatches is the batches of a whole epoch (its last one may be
	// short): only whole epochs are compared with the prediction.
	FullBatches int `json:"epoch_batches"`
	// BLAS is the products' thread counts the probe tried, when it tried
	// fewer (see chooseBLASThreads).
	BLAS *blasChoice `json:"blas_threads,omitempty"`
}

// blasChoice is the probe's pick of the products' thread count.
type blasChoice struct {
	// Tried lists each count with the probe's time per batch on it.
	Tried []blasTry `json:"tried"`
	// Threads is the count training runs on: the faster one.
	Threads int `json:"threads"`
}

// blasTry is one probe at a thread count.
type blasTry struct {
	Threads int     `json:"threads"`
	BatchS  float64 `json:"batch_s"`
}

// stageCheck is one stage's measured and predicted seconds in an epoch.
type stageCheck struct {
	MeasuredS  float64 `json:"measured_s"`
	PredictedS float64 `json:"predicted_s"`
	// ErrorPct is null when nothing was predicted for the stage.
	ErrorPct trainer.Metric `json:"error_pct"`
}

func newStageCheck(measured, predicted float64) stageCheck {
	return stageCheck{MeasuredS: measured, PredictedS: predicted, ErrorPct: trainer.Metric(tpc.ErrorPct(measured, predicted))}
}

// epochCheck compares one epoch with the prediction.
type epochCheck struct {
	Epoch int `json:"epoch"`
	stageCheck
	Sample stageCheck `json:"sample"`
	Gather stageCheck `json:"gather"`
	Step   stageCheck `json:"step"`
	// DiskRowsPerS is the rate the epoch read rows from disk at (0 when
	// it read none), and WithEpochDisk the prediction made again with that
	// rate in place of the test's before training: how much of the error
	// is the disk's rate moving, and how much the model.
	DiskRowsPerS  float64     `json:"disk_rows_per_s,omitempty"`
	WithEpochDisk *stageCheck `json:"with_epoch_disk,omitempty"`
}

// check compares e with the prediction; false when e is not a whole epoch
// (a resumed one).
func (p *trainPrediction) check(e trainer.EpochStats) (epochCheck, bool) {
	if p == nil || e.Batches != p.FullBatches {
		return epochCheck{}, false
	}
	c := epochCheck{Epoch: e.Epoch, stageCheck: newStageCheck(e.Seconds, p.Epoch.EpochS),
		Sample: newStageCheck(e.Stages.Sample.BusySeconds, p.Epoch.SampleS),
		Gather: newStageCheck(e.Stages.Gather.BusySeconds, p.Epoch.GatherS),
		Step:   newStageCheck(e.GatherSeconds+e.ComputeSeconds+e.OptimizerSeconds, p.Epoch.StepS)}
	if rate := epochDiskRate(e, p.Costs.CopyRowS); rate > 0 && p.Epoch.HitShare < 1 {
		c.DiskRowsPerS = rate
		cc := p.Costs
		cc.DiskRowsPerS = rate
		if again, err := tpc.PredictPipeline(cc, p.Epoch.HitShare, p.Epoch.Batches); err == nil {
			s := newStageCheck(e.Seconds, again.EpochS)
			c.WithEpochDisk = &s
		}
	}
	return c, true
}

// epochDiskRate is the rows per second an epoch read from disk: its disk
// rows over the time the store spent on them (requests built, read and
// checked), or, where the store did not time that, over the gather
// stage's busy time less the rows it copied from memory (at the probe's
// copy time per row); 0 when it read none.
func epochDiskRate(e trainer.EpochStats, copyRowS float64) float64 {
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

// line is the check as printed after an epoch.
func (c epochCheck) line(outOfCore bool) string {
	f := func(name string, s stageCheck) string {
		// A stage that is a sliver of the epoch has no error worth a
		// percentage: its few milliseconds are noise.
		if s.PredictedS < 0.01*c.PredictedS {
			return fmt.Sprintf("%s %s", name, fmtSecondsPair(s.MeasuredS, s.PredictedS))
		}
		return fmt.Sprintf("%s %s (%+.0f%%)", name, fmtSecondsPair(s.MeasuredS, s.PredictedS), s.ErrorPct)
	}
	parts := []string{f("epoch", c.stageCheck), f("sample", c.Sample)}
	if outOfCore {
		parts = append(parts, f("gather", c.Gather))
	}
	parts = append(parts, f("step", c.Step))
	line := "  measured/predicted: " + strings.Join(parts, ", ")
	if w := c.WithEpochDisk; w != nil {
		line += fmt.Sprintf("; at this epoch's disk rate (%.0f rows/s) predicted %s (%+.1f%%)", c.DiskRowsPerS, fmtSeconds(w.PredictedS), w.ErrorPct)
	}
	return line
}

// predictTraining probes tr for a few batches, finds the share of rows
// served from memory and the disks' read rate, and predicts an epoch. On
// a CPU backend (cpu not nil) out of core it also picks the products'
// thread count (chooseBLASThreads).
func predictTraining(ctx context.Context, o *trainOptions, tr *trainer.Trainer, cpu *kernels.CPU, src *store.Store, dir string, nodes int64, seeds, batch, workers int) (*trainPrediction, error) {
	errw := o.IO.Err
	fmt.Fprintf(errw, "predicting: timing %d batches with every row in memory, after %d to warm up ...\n", o.ProbeBatches, probeWarmupBatches)
	if _, err := tr.Probe(ctx, probeWarmupBatches); err != nil {
		return nil, err
	}
	pr, err := tr.Probe(ctx, o.ProbeBatches)
	if err != nil {
		return nil, err
	}
	p := &trainPrediction{Probe: pr}
	if cpu != nil && src != nil && o.BLASThreads == 0 {
		probe := func(ctx context.Context) (trainer.Probe, error) { return tr.Probe(ctx, o.ProbeBatches) }
		if p.Probe, p.BLAS, err = chooseBLASThreads(ctx, errw, probe, cpu, pr, workers); err != nil {
			return nil, err
		}
		pr = p.Probe
	}
	// A step trains a batch on each worker; worker 0 has the most seeds.
	workers = max(workers, 1)
	share := (seeds + workers - 1) / workers
	if batch == 0 {
		batch = share
	}
	p.FullBatches = (share + batch - 1) / batch
	// On a GPU the reads' CPU time leaves the step alone.
	c := tpc.BatchCosts{ComputeS: pr.BatchSeconds, SampleS: pr.SampleSeconds, StepS: pr.StepSeconds, InputRows: pr.InputRows, FillS: pr.FirstWaitSeconds,
		StepOffCores: cpu == nil, Source: fmt.Sprintf("a probe of %d batches with its own seed and every row in memory", pr.Batches)}
	hit := 1.0
	p.HitShareSource = "every row in memory"
	if src != nil {
		c.CopyRowS = copyRowSeconds(pr)
		hot, herr := sample.ReadHotness(filepath.Join(dir, sample.HotnessFile), nodes)
		if herr == nil {
			if hit, err = src.HitShare(hot); err != nil {
				return nil, err
			}
			p.HitShareSource = "the accesses place measured (" + sample.HotnessFile + ") against the rows the store holds in memory"
		} else {
			var in, all int
			for _, vs := range pr.Vertices {
				for _, v := range vs {
					if src.InMemory(v) {
						in++
					}
				}
				all += len(vs)
			}
			if all > 0 {
				hit = float64(in) / float64(all)
			}
			p.HitShareSource = fmt.Sprintf("the probe's %d row reads (no %s: %v)", all, sample.HotnessFile, herr)
		}
		if hit < 1 {
			if err := diskRate(ctx, o, src, &c, pr, p); err != nil {
				return nil, err
			}
		}
	}
	batches := float64(share) / float64(batch)
	if p.Epoch, err = tpc.PredictPipeline(c, hit, batches); err != nil {
		return nil, err
	}
	p.Costs = c
	return p, nil
}

// copyRowSeconds is the gather stage's busy time per row a probe copied
// from memory. Its thread's CPU time (gather_cpu_s) is lower, but priced
// no better: on this project's 2-core machine the epochs' copies took
// longer than either (docs/benchmarks.md, issue 33).
func copyRowSeconds(pr trainer.Probe) float64 {
	if !(pr.InputRows > 0) {
		return 0
	}
	return pr.GatherSeconds / pr.InputRows
}

// chooseBLASThreads decides the products' thread count out of core, where
// each worker's gather stage runs beside the step. A product split among
// threads waits for its slowest, so on few cores a thread that shares its
// core with a busy gather stage holds up the rest; but where the products
// dominate (wide rows, big layers) every thread counts. When the probe's
// gather stage was busy for more than half of each batch, the probe runs
// again (the same batches) with one thread fewer per worker, and training
// keeps whichever was faster. It returns the probe to predict from and
// what was tried (nil when nothing was).
func chooseBLASThreads(ctx context.Context, errw io.Writer, probe func(context.Context) (trainer.Probe, error), cpu blasThreader, first trainer.Probe, workers int) (trainer.Probe, *blasChoice, error) {
	full := cpu.BLASThreads()
	fewer := max(1, full-max(workers, 1))
	if fewer == full || !(first.GatherSeconds > 0.5*first.BatchSeconds) {
		return first, nil, nil
	}
	fmt.Fprintf(errw, "predicting: the gather stage was busy %.0f%% of each batch; timing the batches again with the products on %s instead of %d ...\n",
		100*first.GatherSeconds/first.BatchSeconds, threadsName(fewer), full)
	if err := cpu.SetBLASThreads(fewer); err != nil {
		return first, nil, err
	}
	second, err := probe(ctx)
	if err != nil {
		return first, nil, errors.Join(err, cpu.SetBLASThreads(full))
	}
	ch := &blasChoice{Tried: []blasTry{{full, first.BatchSeconds}, {fewer, second.BatchSeconds}}, Threads: fewer}
	if second.BatchSeconds < first.BatchSeconds {
		return second, ch, nil
	}
	ch.Threads = full
	return first, ch, cpu.SetBLASThreads(full)
}

// threadsName is "1 thread" or "N threads".
func threadsName(n int) string {
	if n == 1 {
		return "1 thread"
	}
	return fmt.Sprintf("%d threads", n)
}

// blasThreader is what chooseBLASThreads needs of a CPU backend.
type blasThreader interface {
	BLASThreads() int
	SetBLASThreads(n int) error
}

// diskRate fills c's disk read rate and the reads' CPU time: from a
// profile (--measured), or by reading the probed batches' disk-resident
// rows through the store for --measure-seconds.
func diskRate(ctx context.Context, o *trainOptions, src *store.Store, c *tpc.BatchCosts, pr trainer.Probe, p *trainPrediction) error {
	if o.Measured != "" {
		prof, err := loadMeasured(o.Measured)
		if err != nil {
			return err
		}
		row := src.Dim() * 4
		if prof.FeatureBytes != row {
			return usageErrorf("--measured %s: profiled at %d-byte reads, the dataset's rows are %d bytes (run gnnplan profile --feature-bytes %d)", o.Measured, prof.FeatureBytes, row, row)
		}
		c.DiskRowsPerS, c.DiskCPURowS = profiledDisks(prof)
		c.Source += fmt.Sprintf("; disk rows/s from %s at queue depth near %d", o.Measured, store.DefaultQueueDepth)
		return nil
	}
	secs := o.MeasureSeconds
	fmt.Fprintf(o.IO.Err, "predicting: reading the probed batches' rows from the SSD bins for %.1f s ...\n", secs)
	rr, err := src.MeasureReads(ctx, time.Duration(secs*float64(time.Second)), pr.Vertices)
	if err != nil {
		return fmt.Errorf("measure the SSD bins' read rate: %w", err)
	}
	p.Disk = &rr
	c.DiskRowsPerS = rr.RowsPerS
	c.DiskCPURowS = rr.CPUSecondsPerRow
	c.Source += fmt.Sprintf("; disk rows/s from reading the probed batches' disk rows (%d) before training", rr.Rows)
	return nil
}

// profiledDisks is a profile's disks together at the store's queue depth
// (the profiled depth closest to it): feature rows read per second, summed
// over the disks, and the CPU time per row, the most any disk took.
func profiledDisks(p *store.MachineProfile) (rowsPerS, cpuPerRow float64) {
	for _, d := range p.Disks {
		best, r := math.MaxInt, store.DepthResult{}
		for _, x := range d.Depths {
			if dd := abs(x.QueueDepth - store.DefaultQueueDepth); dd < best {
				best, r = dd, x
			}
		}
		rowsPerS += r.IOPS
		cpuPerRow = max(cpuPerRow, r.CPUSecondsPerG*float64(p.FeatureBytes)/1e9)
	}
	return rowsPerS, cpuPerRow
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// describePrediction is the line printed before training.
func describePrediction(p *trainPrediction) string {
	e := p.Epoch
	s := fmt.Sprintf("predicted epoch: %s (%s-bound; per batch: compute %.1f ms", fmtSeconds(e.EpochS), e.Bound, 1000*p.Costs.ComputeS)
	if e.Batches > 0 && e.GatherS > 0 {
		s += fmt.Sprintf(", gather %.1f ms", 1000*e.GatherS/e.Batches)
	}
	s += fmt.Sprintf("; %.0f rows per batch, %.1f%% from memory", p.Costs.InputRows, 100*e.HitShare)
	if p.Costs.DiskRowsPerS > 0 {
		s += fmt.Sprintf(", disk %.0f rows/s", p.Costs.DiskRowsPerS)
	}
	s += ")"
	if b := p.BLAS; b != nil {
		var tried []string
		for i, t := range b.Tried {
			unit := " ms"
			if i == 0 {
				unit = " ms a batch"
			}
			tried = append(tried, fmt.Sprintf("%.1f%s on %d", 1000*t.BatchS, unit, t.Threads))
		}
		s += fmt.Sprintf("; products on %s (probed %s)", threadsName(b.Threads), strings.Join(tried, ", "))
	}
	return s
}

// medianEpochSeconds is the median of the whole epochs' times.
func medianEpochSeconds(p *trainPrediction, epochs []trainer.EpochStats) float64 {
	var s []float64
	for _, e := range epochs {
		if p == nil || e.Batches == p.FullBatches {
			s = append(s, e.Seconds)
		}
	}
	return median(s)
}

// median is v's median (the mean of the middle two for an even count), 0
// for none; v is sorted in place.
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// planStepTerm is one term of a CPU plan's step beside the median over
// the epochs of what the kernels of that class took, per batch.
type planStepTerm struct {
	Term       string  `json:"term"`
	PlanMS     float64 `json:"plan_ms"`
	MeasuredMS float64 `json:"measured_ms"`
}

// planStep lines up a CPU plan's predicted batch (nil: none) with the
// epochs' kernel times, term by term; nil when the epochs have none (a
// device backend).
func planStep(b *tpc.CPUBatch, epochs []trainer.EpochStats) []planStepTerm {
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
		return median(v)
	}
	terms := []planStepTerm{
		{"products", 1e3 * b.ProductsS, per(func(k kernels.KernelTimes, _ trainer.EpochStats) float64 { return k.ProductsS })},
		{"aggregation", 1e3 * b.AggregationS, per(func(k kernels.KernelTimes, _ trainer.EpochStats) float64 { return k.AggregationS })},
		{"row gather", 1e3 * b.RowGatherS, per(func(k kernels.KernelTimes, _ trainer.EpochStats) float64 { return k.RowGatherS })},
		{"in-order passes", 1e3 * b.ElementwiseS, per(func(k kernels.KernelTimes, _ trainer.EpochStats) float64 { return k.ElementwiseS })},
		{"optimizer", 1e3 * b.OptimizerS, per(func(k kernels.KernelTimes, _ trainer.EpochStats) float64 { return k.OptimizerS })},
		{"sampling", 1e3 * b.SampleS, per(func(_ kernels.KernelTimes, e trainer.EpochStats) float64 { return e.Stages.Sample.BusySeconds })},
		{"batch", 1e3 * b.BatchS, per(func(_ kernels.KernelTimes, e trainer.EpochStats) float64 { return e.Seconds })},
	}
	if terms[0].MeasuredMS == 0 {
		return nil
	}
	return terms
}

// printPredictionSummary is the end-of-run comparison.
func printPredictionSummary(w io.Writer, r trainReport) {
	if r.PlanPredictedEpochS > 0 {
		fmt.Fprintf(w, "the plan predicted %s an epoch on its hardware (%s)", fmtSeconds(r.PlanPredictedEpochS), r.PlanHardware)
		if r.MeasuredEpochS > 0 {
			fmt.Fprintf(w, "; measured here %s (%s)", fmtSeconds(r.MeasuredEpochS), r.Backend)
		}
		if r.PlanErrorPct != nil {
			fmt.Fprintf(w, ": %+.1f%%", *r.PlanErrorPct)
		}
		if e := r.PlanWithEpochDiskErrorPct; e != nil {
			fmt.Fprintf(w, "; its model at the rows from memory and the disk rate the epochs had (%.0f rows/s) predicts %s: %+.1f%%",
				r.EpochDiskRowsPerS, fmtSeconds(r.PlanWithEpochDiskS), *e)
		}
		fmt.Fprintln(w)
		if len(r.PlanStep) > 0 {
			parts := make([]string, len(r.PlanStep))
			for i, t := range r.PlanStep {
				parts[i] = fmt.Sprintf("%s %.1f/%.1f", t.Term, t.PlanMS, t.MeasuredMS)
			}
			fmt.Fprintf(w, "the plan's batch, planned/measured ms: %s\n", strings.Join(parts, ", "))
		}
	}
	if r.Prediction == nil || r.MeasuredEpochS == 0 {
		return
	}
	fmt.Fprintf(w, "epoch time: measured %s (median of %d), predicted %s: %+.1f%%",
		fmtSeconds(r.MeasuredEpochS), len(r.Checks), fmtSeconds(r.PredictedEpochS), r.PredictionErrorPct)
	if r.WithEpochDiskS > 0 {
		fmt.Fprintf(w, "; at the disk rate the epochs read at (median %.0f rows/s, against %.0f before training) predicted %s: %+.1f%%",
			r.EpochDiskRowsPerS, r.Prediction.Costs.DiskRowsPerS, fmtSeconds(r.WithEpochDiskS), tpc.ErrorPct(r.MeasuredEpochS, r.WithEpochDiskS))
	}
	fmt.Fprintln(w)
}

// withEpochDisk predicts an epoch again at the median of the disk rates
// the checked epochs read at: 0, 0 when none read from disk.
func withEpochDisk(p *trainPrediction, checks []epochCheck) (epochS, rowsPerS float64) {
	var rates []float64
	for _, c := range checks {
		if c.DiskRowsPerS > 0 {
			rates = append(rates, c.DiskRowsPerS)
		}
	}
	if len(rates) == 0 {
		return 0, 0
	}
	rowsPerS = median(rates)
	cc := p.Costs
	cc.DiskRowsPerS = rowsPerS
	again, err := tpc.PredictPipeline(cc, p.Epoch.HitShare, p.Epoch.Batches)
	if err != nil {
		return 0, 0
	}
	return again.EpochS, rowsPerS
}

// secondsUnit is the unit a time of s seconds reads best in, and its
// scale: seconds down to 1 s, then milliseconds, then microseconds, so a
// small graph's epoch does not print as 0.00 s.
func secondsUnit(s float64) (scale float64, unit string) {
	switch a := math.Abs(s); {
	case a >= 1 || a == 0:
		return 1, "s"
	case a >= 1e-3:
		return 1e3, "ms"
	}
	return 1e6, "µs"
}

// fmtScaled prints v with two decimals below 10, one below 100, none above.
func fmtScaled(v float64) string {
	switch a := math.Abs(v); {
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

// fmtSeconds prints a time of s seconds in the unit it reads best in.
func fmtSeconds(s float64) string {
	k, u := secondsUnit(s)
	return fmtScaled(s*k) + " " + u
}

// fmtSecondsPair prints measured/predicted in one unit, the larger's.
func fmtSecondsPair(measured, predicted float64) string {
	k, u := secondsUnit(max(measured, predicted))
	return fmtScaled(measured*k) + "/" + fmtScaled(predicted*k) + " " + u
}
