package tpc

import (
	"fmt"
	"math"
)

// BatchCosts are one training batch's costs on the machine that trains,
// measured there: a probe of a few batches with every row in memory and a
// read test of the disks the rows are on (Hyperion's TPC profiler, III-C).
// Times are seconds per batch.
type BatchCosts struct {
	// ComputeS is a batch's wall time when no row waits for a disk: the
	// sampling, gathering and training stages overlapped, sharing the
	// cores.
	ComputeS float64 `json:"compute_s"`
	SampleS  float64 `json:"sample_s"` // the sampling stage's busy time
	StepS    float64 `json:"step_s"`   // forward, backward and optimizer
	// FillS is the wait for the first batch of an epoch with every row in
	// memory (the pipeline filling); 0 counts one batch's sampling and
	// gathering instead.
	FillS float64 `json:"fill_s"`
	// CopyRowS is the gather stage's time per row copied from memory.
	CopyRowS float64 `json:"copy_row_s"`
	// InputRows is the distinct feature rows a batch reads.
	InputRows float64 `json:"input_rows"`
	// DiskRowsPerS is the rows per second read from the disks holding
	// them, random rows at the store's queue depth, as the gather reads
	// them.
	DiskRowsPerS float64 `json:"disk_rows_per_s"`
	// DiskCPURowS is the CPU time reading one row from disk takes
	// (submission, completion, checks) beyond the copy a probe's gather
	// stage made of it from memory: the cores it takes from the step,
	// which on a CPU machine shares them.
	DiskCPURowS float64 `json:"disk_cpu_row_s"`
	// CheckRowS is the time checking a row read from packed pieces and
	// copying it into place takes, where DiskRowsPerS is the reads' own
	// rate (packed pieces and parts); 0 where the rate includes it.
	CheckRowS float64 `json:"check_row_s,omitempty"`
	// ReadsAhead says the gather reads the next batch's rows while it
	// copies and checks this one's (the packed loader): its time is the
	// longer of the two, not their sum.
	ReadsAhead bool `json:"reads_ahead,omitempty"`
	// StageOverlap is, for the multistage loader's first stage, the share
	// of the shorter of a macro-batch's reads and checks that the longer
	// hid, as measured (0: none, their sum; 1: the longer alone).
	StageOverlap float64 `json:"stage_overlap,omitempty"`
	// BesideS is, for the multistage loader, a batch's compute time while
	// the first stage runs beside it, as measured (0: ComputeS).
	BesideS float64 `json:"beside_s,omitempty"`
	// StepOffCores says the step runs on a device of its own (a GPU): the
	// reads' CPU time takes nothing from it.
	StepOffCores bool `json:"step_off_cores,omitempty"`
	// Source says where each figure came from.
	Source string `json:"source"`
}

// PipelinePrediction is an epoch's predicted time, in total and per stage.
type PipelinePrediction struct {
	// HitShare is the share of row reads served from memory.
	HitShare float64 `json:"hit_share"`
	Batches  float64 `json:"batches"` // full batches' worth: a short last batch counts its share
	// Per-epoch seconds of each stage's work, and of the epoch.
	SampleS float64 `json:"sample_s"`
	GatherS float64 `json:"gather_s"` // reading from disk plus copying from memory
	DiskS   float64 `json:"disk_s"`   // the part of GatherS spent on disk reads
	StepS   float64 `json:"step_s"`
	EpochS  float64 `json:"epoch_s"`
	// Bound is the stage that sets the pace: "compute" or "disk".
	Bound string `json:"bound"`
}

// PredictPipeline predicts an epoch of batches (a fraction counts a short
// last batch) when hitShare of the row reads are served from memory and
// the rest read from disk. The stages overlap (Hyperion eq. 4, GNNDrive's
// queues): a batch takes the longer of its compute time and its gather
// time, T_gather = rows x hit x T_copy + rows x (1 - hit) / disk rows per
// second; the compute time grows by the reads' CPU time, rows x (1 - hit)
// x CPU per read, which the reader takes from the step's cores. The first
// batch is not overlapped: the epoch is (batches - 1) such batches plus
// the pipeline's fill (FillS and the first batch's disk reads, or one
// batch's sampling and gathering) and one step.
func PredictPipeline(c BatchCosts, hitShare, batches float64) (PipelinePrediction, error) {
	switch {
	case !(hitShare >= 0 && hitShare <= 1):
		return PipelinePrediction{}, fmt.Errorf("predict: hit share %g (want 0 to 1)", hitShare)
	case !(batches >= 0) || math.IsInf(batches, 0):
		return PipelinePrediction{}, fmt.Errorf("predict: %g batches", batches)
	case !(c.ComputeS > 0) || c.InputRows < 0 || c.CopyRowS < 0:
		return PipelinePrediction{}, fmt.Errorf("predict: batch costs %+v (want a compute time > 0)", c)
	case hitShare < 1 && !(c.DiskRowsPerS > 0):
		return PipelinePrediction{}, fmt.Errorf("predict: %.1f%% of the rows come from disk and no read rate was measured", 100*(1-hitShare))
	}
	p := PipelinePrediction{HitShare: hitShare, Batches: batches}
	b := c.batch(hitShare)
	gather, diskS, stolen := b.gatherS, b.diskS, b.stolenS
	batch := b.batchS
	p.Bound = "compute"
	if gather > b.computeS {
		p.Bound = "disk"
	}
	p.SampleS = c.SampleS * batches
	p.GatherS = gather * batches
	p.DiskS = diskS * batches
	p.StepS = (c.StepS + stolen) * batches
	if batches > 0 {
		fill := c.SampleS + b.firstS
		if c.FillS > 0 {
			// The measured fill gathered from memory: add the first
			// batch's disk reads and their checks.
			fill = c.FillS + diskS + b.checkS
		}
		p.EpochS = math.Max(batches-1, 0)*batch + fill + c.StepS + stolen
	}
	return p, nil
}

// PredictPipelineReads is PredictPipeline for an epoch whose batches'
// disk reads took reads seconds each (one entry a batch, in order; the
// first's in the fill): each batch takes the longer of its compute time
// and its gather time with its own reads, so a slow stretch of the disk
// holds the step up and a fast one banks nothing, where one rate for
// the epoch prices the longer of the two sums (docs/epoch-model.md).
func PredictPipelineReads(c BatchCosts, hitShare float64, reads []float64) (PipelinePrediction, error) {
	for i, r := range reads {
		if !(r >= 0) || math.IsInf(r, 0) {
			return PipelinePrediction{}, fmt.Errorf("predict: batch %d read for %g s", i+1, r)
		}
	}
	n := float64(len(reads))
	p, err := PredictPipeline(c, hitShare, n)
	if err != nil || len(reads) == 0 {
		return p, err
	}
	b := c.batch(hitShare)
	gather := func(d float64) float64 {
		if c.ReadsAhead {
			return math.Max(b.copyS+b.checkS, d)
		}
		return b.copyS + d + b.checkS
	}
	first := b.copyS + reads[0] + b.checkS
	if c.ReadsAhead {
		first = math.Max(b.copyS, reads[0]) + b.checkS
	}
	fill := c.SampleS + first
	if c.FillS > 0 {
		fill = c.FillS + reads[0] + b.checkS
	}
	p.EpochS, p.GatherS, p.DiskS = fill+c.StepS+b.stolenS, 0, 0
	bound := 0
	for i, d := range reads {
		g := gather(d)
		p.GatherS += g
		p.DiskS += d
		if g > b.computeS {
			bound++
		}
		if i > 0 {
			p.EpochS += math.Max(b.computeS, g)
		}
	}
	p.Bound = "compute"
	if 2*bound > len(reads) {
		p.Bound = "disk"
	}
	return p, nil
}

// pipelineBatch is one batch of the pipeline out of core, in seconds.
type pipelineBatch struct {
	copyS, diskS, checkS, stolenS float64
	gatherS                       float64 // the gather stage's time
	firstS                        float64 // the same with nothing read ahead: a pipeline's first batch
	computeS                      float64 // the compute side, the reads' CPU time included
	batchS                        float64
}

// batch is one batch when hit of its rows are served from memory: it
// takes the longer of its compute time, which grows by the reads' CPU
// time (rows x (1 - hit) x CPU per read: the reader takes it from the
// step's cores, unless the step runs on a GPU), and its gather time:
// rows x hit x T_copy + rows x (1 - hit) x (1 / disk rows per second +
// T_check), or, where the next batch's reads overlap this one's copies
// and checks (ReadsAhead), the longer of the reads and the rest.
// PredictPipeline and PredictCPU price a batch with it.
func (c BatchCosts) batch(hit float64) pipelineBatch {
	var b pipelineBatch
	b.copyS = c.InputRows * hit * c.CopyRowS
	if hit < 1 && c.DiskRowsPerS > 0 {
		b.diskS = c.InputRows * (1 - hit) / c.DiskRowsPerS
		b.checkS = c.InputRows * (1 - hit) * c.CheckRowS
	}
	if !c.StepOffCores {
		b.stolenS = c.InputRows * (1 - hit) * c.DiskCPURowS
	}
	b.computeS = c.ComputeS + b.stolenS
	b.gatherS = b.copyS + b.diskS + b.checkS
	b.firstS = b.gatherS
	if c.ReadsAhead {
		// The batch's own read overlaps its copies from memory.
		b.gatherS = math.Max(b.copyS+b.checkS, b.diskS)
		b.firstS = math.Max(b.copyS, b.diskS) + b.checkS
	}
	b.batchS = math.Max(b.computeS, b.gatherS)
	return b
}

// ErrorPct is the measured time's deviation from the predicted one in
// percent of the prediction (positive: slower than predicted).
func ErrorPct(measured, predicted float64) float64 {
	if predicted <= 0 {
		return math.NaN()
	}
	return 100 * (measured - predicted) / predicted
}

// PredictStages predicts an epoch of HANOI's multistage loader: batches
// in macros macro-batches, each macro-batch's macroRows disk rows read in
// one sequential pass at c.DiskRowsPerS and checked at c.CheckRowS a row,
// the checks overlapping the reads as measured (StageOverlap: the reads
// plus the checks less that share of the shorter), while the macro-batch
// before it trains, its batches gathering every row from memory. While
// the first stage runs the step shares the cores with its checks: its
// batches take BesideS (measured beside it; docs/epoch-model.md), then
// their own time once it ends. A macro-batch takes its first stage or, if
// longer, its batches; the epoch is the pipeline's fill (FillS, or one
// batch's sampling and gathering from memory) and every macro-batch.
// Reading ahead (ReadsAhead) the next epoch's first macro-batch is read
// while this epoch's last trains, and only the run's first epoch waits
// for its first read (not counted: the epoch predicted is a later one's);
// otherwise every epoch waits for it.
func PredictStages(c BatchCosts, batches float64, macros int, macroRows float64) (PipelinePrediction, error) {
	switch {
	case macros < 1 || !(batches >= 0) || math.IsInf(batches, 0) || macroRows < 0:
		return PipelinePrediction{}, fmt.Errorf("predict: %d macro-batches of %g rows, %g batches", macros, macroRows, batches)
	case !(c.ComputeS > 0):
		return PipelinePrediction{}, fmt.Errorf("predict: batch costs %+v (want a compute time > 0)", c)
	case macroRows > 0 && !(c.DiskRowsPerS > 0):
		return PipelinePrediction{}, fmt.Errorf("predict: macro-batches read %g rows from disk and no read rate was measured", macroRows)
	}
	b := c.batch(1)
	var load float64
	if macroRows > 0 {
		read, check := macroRows/c.DiskRowsPerS, macroRows*c.CheckRowS
		load = read + check - min(max(c.StageOverlap, 0), 1)*min(read, check)
	}
	m := float64(macros)
	n := batches / m // a macro-batch's batches
	train := n * b.batchS
	p := PipelinePrediction{HitShare: 1, Batches: batches, Bound: "compute",
		SampleS: c.SampleS * batches, GatherS: b.copyS*batches + load*m, DiskS: load * m, StepS: c.StepS * batches}
	// A macro-batch trains while the next one's first stage runs, its
	// batches at BesideS (no faster than alone) until that ends, then at
	// their own pace; a first stage longer than all of them sets the pace.
	beside := math.Max(c.BesideS, b.batchS)
	macro := load
	if load > n*beside {
		p.Bound = "disk"
	} else {
		macro = load + (n-load/beside)*b.batchS
	}
	if batches > 0 {
		fill := c.FillS
		if fill == 0 {
			fill = c.SampleS + b.copyS
		}
		p.EpochS = fill + m*macro
		if !c.ReadsAhead {
			p.EpochS = fill + load + (m-1)*macro + train
		}
	}
	return p, nil
}
