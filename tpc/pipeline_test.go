package tpc

import (
	"math"
	"strings"
	"testing"
)

func TestPredictPipeline(t *testing.T) {
	base := BatchCosts{ComputeS: 0.1, SampleS: 0.01, StepS: 0.09, CopyRowS: 1e-7, InputRows: 100_000, DiskRowsPerS: 100_000}
	tests := []struct {
		name      string
		hit       float64
		batches   float64
		wantEpoch float64
		wantBound string
		wantDisk  float64
	}{
		// Every row in memory: copies take 10 ms a batch, hidden behind
		// 100 ms of compute; the first batch adds its sampling, gathering
		// and step (0.01 + 0.01 + 0.09).
		{"all in memory", 1, 50, 49*0.1 + 0.11, "compute", 0},
		// Half from disk: 0.5 s of reads plus 5 ms of copies a batch.
		{"half on disk", 0.5, 50, 49*0.505 + 0.01 + 0.505 + 0.09, "disk", 25},
		{"all on disk", 0, 10, 9*1.0 + 0.01 + 1.0 + 0.09, "disk", 10},
		// A short last batch counts its share.
		{"fraction of a batch", 1, 0.5, 0.11, "compute", 0},
		{"no batches", 1, 0, 0, "compute", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := PredictPipeline(base, tt.hit, tt.batches)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(p.EpochS-tt.wantEpoch) > 1e-9 || p.Bound != tt.wantBound || math.Abs(p.DiskS-tt.wantDisk) > 1e-9 {
				t.Errorf("epoch %v s, %s-bound, disk %v s; want %v s, %s, %v s", p.EpochS, p.Bound, p.DiskS, tt.wantEpoch, tt.wantBound, tt.wantDisk)
			}
			if math.Abs(p.StepS-0.09*tt.batches) > 1e-9 || math.Abs(p.SampleS-0.01*tt.batches) > 1e-9 {
				t.Errorf("stages: step %v, sample %v", p.StepS, p.SampleS)
			}
		})
	}
	// The reads' CPU time slows the step: at 10% from disk, 10,000 reads
	// of 2 us take 20 ms from a 100 ms step, which then outlasts the
	// 109 ms gather.
	stealing := base
	stealing.DiskCPURowS = 2e-6
	p, err := PredictPipeline(stealing, 0.9, 10)
	if err != nil {
		t.Fatal(err)
	}
	if p.Bound != "compute" || math.Abs(p.StepS-10*(0.09+0.02)) > 1e-9 || math.Abs(p.EpochS-(9*0.12+0.01+0.109+0.09+0.02)) > 1e-9 {
		t.Errorf("reads stealing cores: %+v", p)
	}
	// A step on a GPU keeps its time: the same reads leave it at 100 ms,
	// under the 109 ms gather.
	offCores := stealing
	offCores.StepOffCores = true
	if p, err = PredictPipeline(offCores, 0.9, 10); err != nil {
		t.Fatal(err)
	}
	if p.Bound != "disk" || math.Abs(p.StepS-10*0.09) > 1e-9 || math.Abs(p.EpochS-(9*0.109+0.01+0.109+0.09)) > 1e-9 {
		t.Errorf("reads beside a step on a GPU: %+v", p)
	}
	// A measured fill replaces one batch's sampling and gathering, plus
	// the first batch's disk reads.
	filled := base
	filled.FillS = 0.05
	p, err = PredictPipeline(filled, 0.5, 50)
	if err != nil {
		t.Fatal(err)
	}
	if want := 49*0.505 + 0.05 + 0.5 + 0.09; math.Abs(p.EpochS-want) > 1e-9 {
		t.Errorf("with a measured fill: epoch %v s, want %v", p.EpochS, want)
	}
	// Packed pieces: the reads' own rate and a check of 2 us a row. Half
	// from disk, 50,000 rows a batch: reads 0.5 s, checks 0.1 s, copies
	// 5 ms. One after the other they add up; read ahead (the packed
	// loader) the reads hide the copies and checks, and the first batch,
	// read as its copies are made, still waits for its checks.
	checked := base
	checked.CheckRowS = 2e-6
	for _, c := range []struct {
		ahead bool
		batch float64
		first float64
	}{{false, 0.605, 0.605}, {true, 0.5, 0.6}} {
		checked.ReadsAhead = c.ahead
		p, err := PredictPipeline(checked, 0.5, 50)
		if err != nil {
			t.Fatal(err)
		}
		if want := 49*c.batch + 0.01 + c.first + 0.09; math.Abs(p.EpochS-want) > 1e-9 || p.Bound != "disk" {
			t.Errorf("checks of %v s a row, reads ahead %v: epoch %v s (%s-bound), want %v s, disk-bound", checked.CheckRowS, c.ahead, p.EpochS, p.Bound, want)
		}
	}
	// More cache never predicts a slower epoch.
	prev := math.Inf(1)
	for hit := 0.0; hit <= 1; hit += 0.05 {
		p, err := PredictPipeline(base, math.Min(hit, 1), 100)
		if err != nil {
			t.Fatal(err)
		}
		if p.EpochS > prev+1e-12 {
			t.Fatalf("hit share %v predicts %v s, more than %v s with less cache", hit, p.EpochS, prev)
		}
		prev = p.EpochS
	}
	for _, bad := range []struct {
		name    string
		c       BatchCosts
		hit, nb float64
		want    string
	}{
		{"hit share above 1", base, 1.5, 10, "hit share"},
		{"NaN hit share", base, math.NaN(), 10, "hit share"},
		{"negative batches", base, 1, -1, "batches"},
		{"no compute time", BatchCosts{InputRows: 10}, 1, 10, "compute time"},
		{"disk rows without a rate", BatchCosts{ComputeS: 0.1, InputRows: 10}, 0.9, 10, "no read rate"},
	} {
		if _, err := PredictPipeline(bad.c, bad.hit, bad.nb); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: err %v, want one saying %q", bad.name, err, bad.want)
		}
	}
	if e := ErrorPct(110, 100); math.Abs(e-10) > 1e-12 {
		t.Errorf("ErrorPct(110, 100) = %v, want 10", e)
	}
	if e := ErrorPct(1, 0); !math.IsNaN(e) {
		t.Errorf("ErrorPct against 0 = %v, want NaN", e)
	}
}

func TestPredictCPU(t *testing.T) {
	w := Workload{Name: "t", Vertices: 1_000_000, Edges: 10_000_000, FeatureDim: 128, FeatureBytes: 4, Classes: 16, TrainFraction: 0.05,
		Model: ModelGraphSAGE, Hidden: 256, Heads: 1, Fanouts: []int{25, 10}, BatchSize: 1024}
	blocks := []BlockShape{{Dst: 1024, Src: 25000, Edges: 25600}, {Dst: 25000, Src: 90000, Edges: 250000}}
	r := CPURates{Cores: 2, GEMMGFLOPS: 100, SamplerEdgesPerSPerCore: 5e6, MemcpyGBps: 5, DiskRowsPerS: 100_000}
	mem, err := PredictCPU(w, blocks, 90000, r, 1)
	if err != nil {
		t.Fatal(err)
	}
	// Sampling 275,600 edges on its workers, two cores at 5M edges/s
	// each, beside the step.
	if math.Abs(mem.SampleS-275600/1e7) > 1e-12 || mem.DiskS != 0 || mem.Bound != "compute" {
		t.Errorf("all in memory: %+v", mem)
	}
	if want := mem.ComputeS + mem.MemoryS; math.Abs(mem.BatchS-want) > 1e-12 || mem.BatchS < mem.SampleS {
		t.Errorf("batch %v s, want the step's kernels = %v, sampling (%v s) hidden beside them", mem.BatchS, want, mem.SampleS)
	}
	// In memory the step gathers rows itself; here the first layer widens
	// 128 to 256 and reads the features in place, gathering only its
	// 25,000 destinations' own rows.
	if mem.RowGatherS <= 0 || mem.Work.RowGatherRows != 25000 {
		t.Errorf("in memory: the step gathers %v rows in %v s, want 25000", mem.Work.RowGatherRows, mem.RowGatherS)
	}
	slowSampler := r
	slowSampler.SamplerEdgesPerSPerCore = 5e4
	if b, _ := PredictCPU(w, blocks, 90000, slowSampler, 1); b.Bound != "sampling" || b.BatchS != b.SampleS {
		t.Errorf("a slow sampler: %+v, want it to set the pace", b)
	}
	// A probe's rates: each class its work over its time, and the step's
	// overhead added.
	pr := StepRates(r, mem.Work, 0.07, 0.03, 0.01, 0.02, 0.001, 0.004, "probe")
	again, _ := PredictCPU(w, blocks, 90000, pr, 1)
	if math.Abs(again.ProductsS-0.07) > 1e-12 || math.Abs(again.AggregationS-0.03) > 1e-12 || math.Abs(again.RowGatherS-0.01) > 1e-12 ||
		math.Abs(again.ElementwiseS-0.02) > 1e-12 || math.Abs(again.OptimizerS-0.001) > 1e-12 || math.Abs(again.BatchS-0.135) > 1e-12 {
		t.Errorf("at the probe's rates: %+v, want the probe's class times back and a 135 ms batch", again)
	}
	disk, err := PredictCPU(w, blocks, 90000, r, 0)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(disk.DiskS-0.9) > 1e-12 || disk.Bound != "disk" || disk.BatchS != disk.DiskS {
		t.Errorf("all on disk: %+v, want 0.9 s of reads setting the pace", disk)
	}
	// Out of core with the store's own rates (a probe through it): its
	// batch is the compute side, each disk row takes CPU from it, the
	// store's copies and the disk reads are the gather's. Half the rows
	// from memory: 45,000 copies at 1 us, 45,000 reads at 100,000/s and
	// 2 us of CPU each.
	ooc := r
	ooc.DiskCPURowS = 2e-6
	ooc.OutOfCore = &OutOfCoreRates{ComputeS: 0.05, CopyRowS: 1e-6, InputRows: 90000}
	half, err := PredictCPU(w, blocks, 90000, ooc, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(half.CopyS-0.045) > 1e-12 || math.Abs(half.DiskS-0.45) > 1e-12 || math.Abs(half.StolenS-0.09) > 1e-12 ||
		math.Abs(half.BatchS-0.495) > 1e-12 || half.Bound != "disk" {
		t.Errorf("half from disk with the store's rates: %+v, want copies 45 ms, reads 450 ms, 90 ms of the step's CPU, a 495 ms batch", half)
	}
	ooc.DiskRowsPerS = 1e7 // fast disks: the step, slowed by the reads' CPU, sets the pace
	if b, _ := PredictCPU(w, blocks, 90000, ooc, 0.5); math.Abs(b.BatchS-0.14) > 1e-12 || b.Bound != "compute" {
		t.Errorf("fast disks: %+v, want the store's 50 ms batch plus 90 ms of reads' CPU", b)
	}
	// Twice the GEMM rate halves the compute time.
	r2 := r
	r2.GEMMGFLOPS *= 2
	fast, _ := PredictCPU(w, blocks, 90000, r2, 1)
	if math.Abs(fast.ComputeS*2-mem.ComputeS) > 1e-12 {
		t.Errorf("compute %v s at twice the rate, %v s before", fast.ComputeS, mem.ComputeS)
	}
	for _, bad := range []struct {
		r   CPURates
		hit float64
	}{{r, 1.1}, {CPURates{Cores: 2}, 1}, {CPURates{Cores: 2, GEMMGFLOPS: 1, SamplerEdgesPerSPerCore: 1, MemcpyGBps: 1}, 0.5}} {
		if _, err := PredictCPU(w, blocks, 90000, bad.r, bad.hit); err == nil {
			t.Errorf("%+v at hit %v: no error", bad.r, bad.hit)
		}
	}
}

// TestPredictStages prices HANOI's multistage epochs: 40 batches of 0.1 s
// in 4 macro-batches of 100,000 disk rows each, read at 100,000 rows/s
// and checked at 5 us a row, the checks overlapping the reads as much as
// measured. Each macro-batch's first stage overlaps the training before
// it; the first macro-batch's, where the reads are not ahead, overlaps
// nothing (where they are, the epoch before's last macro-batch).
func TestPredictStages(t *testing.T) {
	c := BatchCosts{ComputeS: 0.1, SampleS: 0.01, StepS: 0.09, CopyRowS: 1e-7, InputRows: 100_000, DiskRowsPerS: 100_000, CheckRowS: 5e-6}
	const fill = 0.01 + 0.01 // one batch's sampling and copies
	tests := []struct {
		name      string
		ahead     bool
		overlap   float64
		beside    float64 // a batch's time beside the first stage
		macroRows float64
		wantEpoch float64
		wantBound string
	}{
		// Reads then checks: 1.5 s a macro-batch, over its 1 s of training.
		{"reads, then checks", false, 0, 0, 100_000, fill + 1.5 + 3*1.5 + 1, "disk"},
		{"read ahead, checks after the reads", true, 0, 0, 100_000, fill + 4*1.5, "disk"},
		// The checks wholly under the reads: 1 s, as long as training,
		// the next epoch's first read while this one's last trains.
		{"read ahead, checks under the reads", true, 1, 0, 100_000, fill + 4*1, "compute"},
		// Three fifths of the checks hidden: 1.2 s.
		{"read ahead, checks partly under the reads", true, 0.6, 0, 100_000, fill + 4*1.2, "disk"},
		// An overlap share out of range counts as its nearest bound.
		{"overlap over 1", true, 1.7, 0, 100_000, fill + 4*1, "compute"},
		{"overlap under 0", true, -0.5, 0, 100_000, fill + 4*1.5, "disk"},
		// Half a second a macro-batch, hidden by each second of training.
		{"read ahead, reads shorter than training", true, 1, 0, 50_000, fill + 4*1, "compute"},
		{"reads then checks, shorter than training", false, 0, 0, 50_000, fill + 0.75 + 3*1 + 1, "compute"},
		{"nothing on disk", true, 1, 0, 0, fill + 4*1, "compute"},
		// Batches of 0.2 s while the first stage runs beside them: its
		// half second holds 2.5 of them, the other 7.5 take 0.1 s.
		{"slower beside a short first stage", true, 1, 0.2, 50_000, fill + 4*(0.5+0.75), "compute"},
		// 1.5 s holds 7.5 of them, the other 2.5 take 0.1 s.
		{"slower beside a long first stage", true, 0, 0.2, 100_000, fill + 4*(1.5+0.25), "compute"},
		// 0.12 s each: all ten end before the 1.5 s first stage.
		{"first stage longer than the batches beside it", true, 0, 0.12, 100_000, fill + 4*1.5, "disk"},
		// Faster beside than alone (noise): their own time.
		{"faster beside", true, 1, 0.05, 50_000, fill + 4*1, "compute"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cc := c
			cc.ReadsAhead, cc.StageOverlap, cc.BesideS = tt.ahead, tt.overlap, tt.beside
			p, err := PredictStages(cc, 40, 4, tt.macroRows)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(p.EpochS-tt.wantEpoch) > 1e-9 || p.Bound != tt.wantBound {
				t.Errorf("epoch %v s, %s-bound; want %v s, %s", p.EpochS, p.Bound, tt.wantEpoch, tt.wantBound)
			}
		})
	}
	// The first stage's CPU time is not the step's: 2 us a row changes
	// nothing, on the CPU or on a GPU.
	for _, off := range []bool{false, true} {
		cc := c
		cc.ReadsAhead, cc.StageOverlap, cc.DiskCPURowS, cc.StepOffCores = true, 1, 2e-6, off
		p, err := PredictStages(cc, 40, 4, 100_000)
		if err != nil {
			t.Fatal(err)
		}
		if want := fill + 4*1.0; math.Abs(p.EpochS-want) > 1e-9 || math.Abs(p.StepS-40*0.09) > 1e-9 {
			t.Errorf("step off cores %v: epoch %v s, step %v s; want %v s, %v s", off, p.EpochS, p.StepS, want, 40*0.09)
		}
	}
	if _, err := PredictStages(BatchCosts{ComputeS: 0.1}, 10, 2, 1000); err == nil || !strings.Contains(err.Error(), "no read rate") {
		t.Errorf("disk rows without a rate: err %v", err)
	}
}

// TestPredictPipelineReads prices an epoch batch by batch at the reads it
// measured: reads at one steady rate give PredictPipeline's epoch at that
// rate, and the same mean rate in a fast stretch and a slow one gives a
// longer epoch, the slow stretch holding the step up.
func TestPredictPipelineReads(t *testing.T) {
	// A batch reads 10% of its 100 k rows from disk: 0.1 s at 100 k rows
	// a second, as long as its compute.
	c := BatchCosts{ComputeS: 0.1, SampleS: 0.01, StepS: 0.09, CopyRowS: 1e-7, InputRows: 100_000, DiskRowsPerS: 100_000}
	steady := make([]float64, 20)
	bursty := make([]float64, 20)
	for i := range steady {
		steady[i] = 0.1
		bursty[i] = 0.05
		if i >= 10 {
			bursty[i] = 0.15
		}
	}
	for _, ahead := range []bool{false, true} {
		c.ReadsAhead = ahead
		one, err := PredictPipeline(c, 0.9, 20)
		if err != nil {
			t.Fatal(err)
		}
		got, err := PredictPipelineReads(c, 0.9, steady)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got.EpochS-one.EpochS) > 1e-9 || math.Abs(got.DiskS-one.DiskS) > 1e-9 {
			t.Errorf("reads ahead %v: steady reads give %v s (disk %v), one rate %v s (disk %v)", ahead, got.EpochS, got.DiskS, one.EpochS, one.DiskS)
		}
	}
	// Read ahead: the fill samples and reads the first batch (0.06 s) and
	// the last steps (0.09 s); nine batches at the compute's 0.1 s and
	// ten at the slow reads' 0.15 s, where one rate gives 19 x 0.1 s.
	got, err := PredictPipelineReads(c, 0.9, bursty)
	if err != nil {
		t.Fatal(err)
	}
	if want := 0.06 + 9*0.1 + 10*0.15 + 0.09; math.Abs(got.EpochS-want) > 1e-9 {
		t.Errorf("bursty reads: %v s, want %v", got.EpochS, want)
	}
	for _, bad := range [][]float64{{0.1, -1}, {math.NaN()}, {math.Inf(1)}} {
		if _, err := PredictPipelineReads(c, 0.9, bad); err == nil {
			t.Errorf("reads %v: no error", bad)
		}
	}
}
