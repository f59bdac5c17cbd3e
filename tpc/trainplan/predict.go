package trainplan

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"time"

	"github.com/gnnplan/gnnplan/internal/inputerr"
	"github.com/gnnplan/gnnplan/kernels"
	"github.com/gnnplan/gnnplan/tpc"
	"github.com/gnnplan/gnnplan/trainer"
	"github.com/gnnplan/gnnplan/trainer/sample"
	"github.com/gnnplan/gnnplan/trainer/store"
)

// ProbeWarmupBatches is how many batches a probe runs untimed first: the
// first batches of a trainer pay for its buffers' first pages and the
// caches' first touches.
const ProbeWarmupBatches = 10

// MinProbeSeconds is how long a default probe times batches at least:
// batches of 40 ms, twenty of them, are a second, shorter than a shared
// machine's swings (docs/benchmarks.md).
const MinProbeSeconds = 3

// Prediction is what a run predicted for its epochs and how: a probe of a
// few batches with every row in memory, the share of row reads the store
// serves from memory, and the disks' read rate (Hyperion's TPC profiler
// feeding its analytical model).
type Prediction struct {
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
	// fewer (see ChooseBLASThreads).
	BLAS *BLASChoice `json:"blas_threads,omitempty"`
	// Loader is the loader predicted (trainer.Loaders); for the
	// multistage one, Macros macro-batches an epoch, each reading
	// MacroRows rows from disk.
	Loader    string  `json:"loader"`
	Macros    int     `json:"macro_batches,omitempty"`
	MacroRows float64 `json:"macro_rows,omitempty"`
	// Beside is, for the multistage loader out of core, the probe that
	// trained while the first stage was measured (firstStage).
	Beside *trainer.Probe `json:"probe_beside_first_stage,omitempty"`
}

// BLASChoice is the probe's pick of the products' thread count.
type BLASChoice struct {
	// Tried lists each count with the probe's time per batch on it.
	Tried []BLASTry `json:"tried"`
	// Threads is the count training runs on: the faster one.
	Threads int `json:"threads"`
}

// BLASTry is one probe at a thread count.
type BLASTry struct {
	Threads int     `json:"threads"`
	BatchS  float64 `json:"batch_s"`
}

// PredictInput is what Predict needs besides the trainer.
type PredictInput struct {
	// ProbeBatches is how many batches the probe times, at least; with
	// MinProbeSeconds > 0, more where they take less time than that
	// (judged by the warm-up's), up to ten times as many.
	ProbeBatches    int
	MinProbeSeconds float64
	// BLASThreads is the products' thread count the user fixed (0: the
	// probe may choose, ChooseBLASThreads).
	BLASThreads int
	// CPU is the trainer's backend when it is the CPU's (nil on a device).
	CPU *kernels.CPU
	// Store is the feature store out of core (nil: every row in memory),
	// Dir the dataset's directory, Nodes its vertices.
	Store *store.Store
	Dir   string
	Nodes int64
	// Seeds is the training split's size, Batch the seeds per step (0:
	// the whole split), Workers the data-parallel workers.
	Seeds, Batch, Workers int
	// Measured is a profile whose disk rates stand in for reading the
	// SSD bins for MeasureSeconds; MeasuredPath names it in messages.
	Measured       *store.MachineProfile
	MeasuredPath   string
	MeasureSeconds float64
	// Progress receives a line per phase.
	Progress io.Writer
	// Loader is the run's loader; Sequential its packed batches or parts
	// (their sequential read rate is the disk's for them); Macros and
	// MacroRows the multistage loader's macro-batches an epoch and disk
	// rows each.
	Loader     string
	Sequential *store.Packed
	Macros     int
	MacroRows  float64
}

// Predict probes tr for a few batches, finds the share of rows served
// from memory and the disks' read rate, and predicts an epoch. On a CPU
// backend out of core it also picks the products' thread count.
func Predict(ctx context.Context, tr *trainer.Trainer, in PredictInput) (*Prediction, error) {
	warm, err := tr.Probe(ctx, ProbeWarmupBatches)
	if err != nil {
		return nil, err
	}
	in.ProbeBatches = probeBatches(in, warm.BatchSeconds)
	fmt.Fprintf(in.Progress, "predicting: timing %d batches with every row in memory, after %d to warm up ...\n", in.ProbeBatches, ProbeWarmupBatches)
	pr, err := tr.Probe(ctx, in.ProbeBatches)
	if err != nil {
		return nil, err
	}
	p := &Prediction{Probe: pr, Loader: in.Loader}
	if p.Loader == "" {
		p.Loader = trainer.LoaderOnline
	}
	if in.CPU != nil && in.Store != nil && in.BLASThreads == 0 {
		probe := func(ctx context.Context) (trainer.Probe, error) { return tr.Probe(ctx, in.ProbeBatches) }
		if p.Probe, p.BLAS, err = ChooseBLASThreads(ctx, in.Progress, probe, in.CPU, pr, in.Workers); err != nil {
			return nil, err
		}
		pr = p.Probe
	}
	// A step trains a batch on each worker; worker 0 has the most seeds.
	workers := max(in.Workers, 1)
	share := (in.Seeds + workers - 1) / workers
	batch := in.Batch
	if batch == 0 {
		batch = share
	}
	p.FullBatches = (share + batch - 1) / batch
	// On a GPU the reads' CPU time leaves the step alone.
	c := tpc.BatchCosts{ComputeS: pr.BatchSeconds, SampleS: pr.SampleSeconds, StepS: pr.StepSeconds, InputRows: pr.InputRows,
		StepOffCores: in.CPU == nil, Source: fmt.Sprintf("a probe of %d batches with its own seed and every row in memory", pr.Batches)}
	if pr.FirstWaitWarm {
		// A cold first epoch's fill (fresh buffers) is no later epoch's:
		// without a warm one the fill is one batch's sampling and
		// gathering.
		c.FillS = pr.FirstWaitSeconds
	}
	hit := 1.0
	p.HitShareSource = "every row in memory"
	if in.Store != nil {
		c.CopyRowS = CopyRowSeconds(pr)
		if in.Loader == trainer.LoaderMultistage {
			p.HitShareSource = "every batch's rows in memory: its macro-batch's, read before it, and the store's cache"
			p.Macros, p.MacroRows = in.Macros, in.MacroRows
		} else if hit, p.HitShareSource, err = hitShare(in, pr); err != nil {
			return nil, err
		}
		switch {
		case p.MacroRows > 0 && in.Sequential != nil:
			// The packed parts have their own rate, whatever a profile
			// says of random reads.
			if err := firstStage(ctx, tr, in, &c, pr, p); err != nil {
				return nil, err
			}
		case hit < 1 || p.MacroRows > 0:
			if err := diskRate(ctx, in, &c, pr, p); err != nil {
				return nil, err
			}
			c.DiskCPURowS = beyondCopy(c.DiskCPURowS, pr)
		}
	}
	p.Costs = c
	p.Epoch.HitShare = hit
	batches := float64(share) / float64(batch)
	if in.Loader == trainer.LoaderMultistage {
		// Its steps, each macro-batch's last one short: the probe's
		// rows and times a batch are their mean.
		batches = float64(tr.EpochBatches(0))
	}
	if p.Epoch, err = p.at(batches, c.DiskRowsPerS); err != nil {
		return nil, err
	}
	return p, nil
}

// probeBatches is how many batches to time when a warm batch takes
// batchS: in.ProbeBatches, or more to fill in.MinProbeSeconds, at most
// ten times as many.
func probeBatches(in PredictInput, batchS float64) int {
	n := in.ProbeBatches
	if in.MinProbeSeconds > 0 && batchS > 0 {
		n = max(n, min(10*n, int(math.Ceil(in.MinProbeSeconds/batchS))))
	}
	return n
}

// at predicts an epoch of batches (full batches' worth) with p's costs at
// disk rate rowsPerS, with the loader p predicts.
func (p *Prediction) at(batches, rowsPerS float64) (tpc.PipelinePrediction, error) {
	c := p.Costs
	c.DiskRowsPerS = rowsPerS
	if p.Loader == trainer.LoaderMultistage {
		return tpc.PredictStages(c, batches, max(p.Macros, 1), p.MacroRows)
	}
	return tpc.PredictPipeline(c, p.Epoch.HitShare, batches)
}

// hitShare is the share of row reads the store serves from memory, and how
// it was found: from the accesses place measured, else the probe's reads.
func hitShare(in PredictInput, pr trainer.Probe) (float64, string, error) {
	hot, herr := sample.ReadHotness(filepath.Join(in.Dir, sample.HotnessFile), in.Nodes)
	if herr == nil {
		hit, err := in.Store.HitShare(hot)
		return hit, "the accesses place measured (" + sample.HotnessFile + ") against the rows the store holds in memory", err
	}
	var inMem, all int
	for _, vs := range pr.Vertices {
		for _, v := range vs {
			if in.Store.InMemory(v) {
				inMem++
			}
		}
		all += len(vs)
	}
	hit := 1.0
	if all > 0 {
		hit = float64(inMem) / float64(all)
	}
	return hit, fmt.Sprintf("the probe's %d row reads (no %s: %v)", all, sample.HotnessFile, herr), nil
}

// CopyRowSeconds is the gather stage's busy time per row a probe copied
// from memory. Its thread's CPU time (gather_cpu_s) is lower, but priced
// no better: on a 2-core machine the epochs' copies took longer than
// either (docs/benchmarks.md).
func CopyRowSeconds(pr trainer.Probe) float64 {
	if !(pr.InputRows > 0) {
		return 0
	}
	return pr.GatherSeconds / pr.InputRows
}

// BLASThreader is what ChooseBLASThreads needs of a CPU backend.
type BLASThreader interface {
	BLASThreads() int
	SetBLASThreads(n int) error
}

// ChooseBLASThreads decides the products' thread count out of core, where
// each worker's gather stage runs beside the step. A product split among
// threads waits for its slowest, so on few cores a thread that shares its
// core with a busy gather stage holds up the rest; but where the products
// dominate every thread counts. When the probe's gather stage was busy
// for more than half of each batch, the probe runs again (the same
// batches) with one thread fewer per worker, and training keeps whichever
// was faster; fewer only when they also beat the full count timed again
// after them (noise favours a probe that ran at a quieter moment). It
// returns the probe to predict from and what was tried (nil when nothing
// was).
func ChooseBLASThreads(ctx context.Context, progress io.Writer, probe func(context.Context) (trainer.Probe, error), cpu BLASThreader, first trainer.Probe, workers int) (trainer.Probe, *BLASChoice, error) {
	full := cpu.BLASThreads()
	fewer := max(1, full-max(workers, 1))
	if fewer == full || !(first.GatherSeconds > 0.5*first.BatchSeconds) {
		return first, nil, nil
	}
	fmt.Fprintf(progress, "predicting: the gather stage was busy %.0f%% of each batch; timing the batches again with the products on %s instead of %d ...\n",
		100*first.GatherSeconds/first.BatchSeconds, ThreadsName(fewer), full)
	if err := cpu.SetBLASThreads(fewer); err != nil {
		return first, nil, err
	}
	second, err := probe(ctx)
	if err != nil {
		return first, nil, errors.Join(err, cpu.SetBLASThreads(full))
	}
	ch := &BLASChoice{Tried: []BLASTry{{full, first.BatchSeconds}, {fewer, second.BatchSeconds}}, Threads: full}
	if !(second.BatchSeconds < first.BatchSeconds) {
		return first, ch, cpu.SetBLASThreads(full)
	}
	// On a shared machine a probe that ran at a quieter moment wins: the
	// full count is timed again before training gives it up.
	fmt.Fprintf(progress, "predicting: %s was faster; timing %d threads again ...\n", ThreadsName(fewer), full)
	if err := cpu.SetBLASThreads(full); err != nil {
		return first, nil, err
	}
	third, err := probe(ctx)
	if err != nil {
		return first, nil, err
	}
	ch.Tried = append(ch.Tried, BLASTry{full, third.BatchSeconds})
	if !(second.BatchSeconds < third.BatchSeconds) {
		return third, ch, nil
	}
	ch.Threads = fewer
	return second, ch, cpu.SetBLASThreads(fewer)
}

// ThreadsName is "1 thread" or "N threads".
func ThreadsName(n int) string {
	if n == 1 {
		return "1 thread"
	}
	return fmt.Sprintf("%d threads", n)
}

// diskRate fills c's disk read rate and the reads' CPU time: from a
// profile, or by reading the probed batches' disk-resident rows through
// the store for MeasureSeconds.
func diskRate(ctx context.Context, in PredictInput, c *tpc.BatchCosts, pr trainer.Probe, p *Prediction) error {
	if in.Sequential != nil {
		// Packed batches and parts are read sequentially: their own rate.
		secs := in.MeasureSeconds
		what := "packed batches"
		if in.Sequential.Manifest().Name == store.PartsName {
			what = "packed parts"
		}
		fmt.Fprintf(in.Progress, "predicting: reading the %s in order for %.1f s ...\n", what, secs)
		rr, err := in.Sequential.MeasureReads(ctx, time.Duration(secs*float64(time.Second)))
		if err != nil {
			return fmt.Errorf("measure the %s' read rate: %w", what, err)
		}
		p.Disk = &rr
		c.DiskRowsPerS, c.DiskCPURowS, c.CheckRowS = rr.RowsPerS, rr.CPUSecondsPerRow, rr.CheckSecondsPerRow
		// The packed loader reads the next batch's pieces while it
		// checks this one's.
		c.ReadsAhead = true
		c.Source += fmt.Sprintf("; disk rows/s from reading the %s in order (%d rows) before training", what, rr.Rows)
		return nil
	}
	if prof := in.Measured; prof != nil {
		row := in.Store.Dim() * 4
		if prof.FeatureBytes != row {
			return inputerr.Errorf("", "", "--measured %s: profiled at %d-byte reads, the dataset's rows are %d bytes (run gnnplan profile --feature-bytes %d)", in.MeasuredPath, prof.FeatureBytes, row, row)
		}
		c.DiskRowsPerS, c.DiskCPURowS = ProfiledDisks(prof)
		c.Source += fmt.Sprintf("; disk rows/s from %s at queue depth near %d", in.MeasuredPath, store.DefaultQueueDepth)
		return nil
	}
	secs := in.MeasureSeconds
	fmt.Fprintf(in.Progress, "predicting: reading the probed batches' rows from the SSD bins for %.1f s ...\n", secs)
	rr, err := in.Store.MeasureReads(ctx, time.Duration(secs*float64(time.Second)), pr.Vertices)
	if err != nil {
		return fmt.Errorf("measure the SSD bins' read rate: %w", err)
	}
	p.Disk = &rr
	c.DiskRowsPerS = rr.RowsPerS
	c.DiskCPURowS = rr.CPUSecondsPerRow
	c.Source += fmt.Sprintf("; disk rows/s from reading the probed batches' disk rows (%d) before training", rr.Rows)
	return nil
}

// firstStage measures the multistage loader's first stage as training
// runs it: macro-batches of the packed parts read whole and checked
// (Packed.MeasureParts) while a probe trains beside them, for about
// MeasureSeconds each. On a machine whose step keeps the cores busy the
// checks then wait for a core and hide less of the reads than they do
// alone, and the step slows down while they run (docs/epoch-model.md):
// the rates, the overlap and the step's batch time beside the first
// stage (BatchCosts.BesideS) are those measured together.
func firstStage(ctx context.Context, tr *trainer.Trainer, in PredictInput, c *tpc.BatchCosts, pr trainer.Probe, p *Prediction) error {
	secs := in.MeasureSeconds
	batches := max(in.ProbeBatches, 1)
	if pr.BatchSeconds > 0 {
		batches = max(batches, min(50*batches, int(math.Ceil(secs/pr.BatchSeconds))))
	}
	fmt.Fprintf(in.Progress, "predicting: reading the packed parts a macro-batch at a time for %.1f s, timing %d batches beside them ...\n", secs, batches)
	var (
		rr   store.ReadRate
		rerr error
		done = make(chan struct{})
	)
	ctx2, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		defer close(done)
		rr, rerr = tr.MeasureFirstStage(ctx2, time.Duration(secs*float64(time.Second)))
		if rerr != nil {
			cancel() // the probe beside it need not go on
		}
	}()
	beside, perr := tr.Probe(ctx2, batches)
	if perr != nil {
		cancel()
	}
	<-done
	switch {
	case rerr != nil:
		return fmt.Errorf("measure the packed parts' read rate: %w", rerr)
	case perr != nil:
		return perr
	}
	// The first stage's CPU time shows in the probe's batches beside it.
	p.Disk, p.Beside = &rr, &beside
	c.DiskRowsPerS, c.CheckRowS = rr.RowsPerS, rr.CheckSecondsPerRow
	c.ReadsAhead = true // the next epoch's first macro-batch is read while this one's last trains
	c.StageOverlap = StageOverlap(rr)
	c.BesideS = beside.BatchSeconds
	c.Source += fmt.Sprintf("; the first stage from reading the packed parts a macro-batch at a time (%d rows) beside a probe of %d batches"+
		" (%.0f%% of the shorter of the reads and checks hidden under the longer, %.3f s a batch beside them)", rr.Rows, beside.Batches, 100*c.StageOverlap, c.BesideS)
	return nil
}

// beyondCopy is the CPU time reading a row from disk takes from the step
// beyond its copy: cpuPerRow (reads, checks and the copy into place) less
// the CPU time the probe's gather stage took to copy a row from memory,
// which the probe's batches already paid beside their steps.
func beyondCopy(cpuPerRow float64, pr trainer.Probe) float64 {
	if !(pr.InputRows > 0) || !(pr.GatherCPUSeconds > 0) {
		return cpuPerRow
	}
	return max(0, cpuPerRow-pr.GatherCPUSeconds/pr.InputRows)
}

// StageOverlap is the share of the shorter of the multistage first
// stage's reads and checks that the longer hid, from its measurement:
// (reads + checks - wall) / the shorter, a row's worth, within 0 to 1.
func StageOverlap(rr store.ReadRate) float64 {
	if !(rr.RowsPerS > 0) || !(rr.CheckSecondsPerRow > 0) {
		return 0
	}
	read, check := 1/rr.RowsPerS, rr.CheckSecondsPerRow
	return min(max((read+check-rr.StageSecondsPerRow)/min(read, check), 0), 1)
}

// ProfiledDisks is a profile's disks together at the store's queue depth
// (the profiled depth closest to it): feature rows read per second, summed
// over the disks, and the CPU time per row, the most any disk took.
func ProfiledDisks(p *store.MachineProfile) (rowsPerS, cpuPerRow float64) {
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

// WithEpochDisk predicts an epoch again at the median of the disk rates
// the checked epochs read at (WarmEpochs: the epochs the measured epoch
// is the median of): 0, 0 when none read from disk.
func (p *Prediction) WithEpochDisk(checks []EpochCheck) (epochS, rowsPerS float64) {
	var rates []float64
	for _, c := range WarmEpochs(checks) {
		if c.DiskRowsPerS > 0 {
			rates = append(rates, c.DiskRowsPerS)
		}
	}
	if len(rates) == 0 {
		return 0, 0
	}
	rowsPerS = Median(rates)
	again, err := p.at(p.Epoch.Batches, rowsPerS)
	if err != nil {
		return 0, 0
	}
	return again.EpochS, rowsPerS
}
