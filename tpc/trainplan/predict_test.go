package trainplan

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gnnplan/gnnplan/tpc"
	"github.com/gnnplan/gnnplan/trainer"
	"github.com/gnnplan/gnnplan/trainer/store"
)

// fakeBLAS records the thread counts ChooseBLASThreads sets.
type fakeBLAS struct {
	threads int
	set     []int
}

func (f *fakeBLAS) BLASThreads() int { return f.threads }

func (f *fakeBLAS) SetBLASThreads(n int) error {
	f.threads = n
	f.set = append(f.set, n)
	return nil
}

// TestChooseBLASThreads: out of core, the products try one thread fewer
// per worker only where the gather stage kept a core busy for most of a
// batch, and training keeps the faster count, fewer only when they also
// beat every thread timed again after them; its probe is the one predicted
// from.
func TestChooseBLASThreads(t *testing.T) {
	probe := func(batchS, gatherS float64) trainer.Probe {
		return trainer.Probe{Batches: 20, BatchSeconds: batchS, GatherSeconds: gatherS}
	}
	failed := errors.New("probe failed")
	heavy := probe(0.067, 0.055)
	cases := []struct {
		name        string
		threads     int
		workers     int
		first       trainer.Probe
		later       []trainer.Probe // the probes after the first, in order
		failAt      int             // the later probe that fails, from 1 (0: none)
		wantThreads int             // the count training runs on
		wantSet     []int           // the counts set, in order
		wantBatchS  float64
		wantErr     bool
	}{
		{"gather light: the products keep every core", 2, 1, probe(0.060, 0.020), nil, 0, 2, nil, 0.060, false},
		{"gather heavy, fewer faster twice", 2, 1, heavy, []trainer.Probe{probe(0.050, 0.040), probe(0.070, 0.055)}, 0, 1, []int{1, 2, 1}, 0.050, false},
		{"fewer faster than a slow first only: every core", 2, 1, heavy, []trainer.Probe{probe(0.050, 0.040), probe(0.045, 0.040)}, 0, 2, []int{1, 2}, 0.045, false},
		{"gather heavy, fewer slower: back to every core", 2, 1, heavy, []trainer.Probe{probe(0.090, 0.040)}, 0, 2, []int{1, 2}, 0.067, false},
		{"one core: nothing to leave", 1, 1, heavy, nil, 0, 1, nil, 0.067, false},
		{"four workers on 16 cores", 16, 4, heavy, []trainer.Probe{probe(0.050, 0.040), probe(0.070, 0.055)}, 0, 12, []int{12, 16, 12}, 0.050, false},
		{"two workers on two cores: one thread", 2, 2, heavy, []trainer.Probe{probe(0.050, 0.040), probe(0.070, 0.055)}, 0, 1, []int{1, 2, 1}, 0.050, false},
		{"the second probe fails: every core again", 2, 1, heavy, nil, 1, 2, []int{1, 2}, 0, true},
		{"the third probe fails: every core", 2, 1, heavy, []trainer.Probe{probe(0.050, 0.040)}, 2, 2, []int{1, 2}, 0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cpu := &fakeBLAS{threads: c.threads}
			probes := 0
			next := func(context.Context) (trainer.Probe, error) {
				probes++
				if probes == c.failAt {
					return trainer.Probe{}, failed
				}
				if probes > len(c.later) {
					t.Fatalf("probe %d: only %d expected", probes, len(c.later))
				}
				return c.later[probes-1], nil
			}
			var errw strings.Builder
			got, ch, err := ChooseBLASThreads(context.Background(), &errw, next, cpu, c.first, c.workers)
			if (err != nil) != c.wantErr {
				t.Fatalf("err = %v, want error: %v", err, c.wantErr)
			}
			wantProbes := len(c.later)
			if c.failAt > 0 {
				wantProbes = c.failAt
			}
			if probes != wantProbes || cpu.threads != c.wantThreads || !slices.Equal(cpu.set, c.wantSet) {
				t.Errorf("%d later probes, products on %d, set %v; want %d, %d, %v", probes, cpu.threads, cpu.set, wantProbes, c.wantThreads, c.wantSet)
			}
			if c.wantErr {
				return
			}
			if got.BatchSeconds != c.wantBatchS {
				t.Errorf("predicting from a probe of %v s a batch, want %v", got.BatchSeconds, c.wantBatchS)
			}
			if wantProbes == 0 {
				if ch != nil || errw.Len() > 0 {
					t.Errorf("nothing tried, yet choice %+v, stderr %q", ch, errw.String())
				}
				return
			}
			if ch == nil || ch.Threads != c.wantThreads || len(ch.Tried) != 1+len(c.later) || ch.Tried[0].Threads != c.threads || ch.Tried[0].BatchS != c.first.BatchSeconds {
				t.Fatalf("choice %+v, want every count with its probe and %d chosen", ch, c.wantThreads)
			}
			for i, p := range c.later {
				if ch.Tried[i+1].BatchS != p.BatchSeconds {
					t.Errorf("try %d: %v s a batch, the probe took %v", i+2, ch.Tried[i+1].BatchS, p.BatchSeconds)
				}
			}
			if !strings.Contains(errw.String(), "gather stage was busy") {
				t.Errorf("stderr %q does not say why it probes again", errw.String())
			}
		})
	}
}

// TestDescribePredictionNamesTheProductsThreads: the line before training
// says which thread count the probe chose and what each one took.
func TestDescribePredictionNamesTheProductsThreads(t *testing.T) {
	p := &Prediction{BLAS: &BLASChoice{Tried: []BLASTry{{2, 0.0672}, {1, 0.0491}}, Threads: 1}}
	p.Epoch.EpochS, p.Epoch.Bound = 2.5, "compute"
	got := p.Describe()
	if !strings.Contains(got, "products on 1 thread (probed 67.2 ms a batch on 2, 49.1 ms on 1)") {
		t.Errorf("Describe = %q", got)
	}
}

// TestDescribePredictionNamesTheFirstStage: a multistage prediction out
// of core says how its first stage overlapped and how slow the step ran
// beside it.
func TestDescribePredictionNamesTheFirstStage(t *testing.T) {
	p := &Prediction{Loader: trainer.LoaderMultistage, Beside: &trainer.Probe{Batches: 40}}
	p.Costs.StageOverlap, p.Costs.BesideS, p.Costs.ComputeS = 0.72, 0.1604, 0.125
	p.Epoch.EpochS, p.Epoch.Bound = 3.9, "disk"
	if got := p.Describe(); !strings.Contains(got, "first stage: 72% of the shorter of its reads and checks under the longer, compute 160.4 ms a batch beside it") {
		t.Errorf("Describe = %q", got)
	}
	if got := (&Prediction{}).Describe(); strings.Contains(got, "first stage") {
		t.Errorf("without a first stage: Describe = %q", got)
	}
}

// TestProbeBatches: a default probe times at least MinProbeSeconds of
// batches (at most ten times the batches asked); asked batches alone when
// the minimum is off or the batches are slow.
func TestProbeBatches(t *testing.T) {
	for _, tc := range []struct {
		name   string
		asked  int
		minS   float64
		batchS float64
		want   int
	}{
		{"short batches fill 3 s", 20, 3, 0.04, 75},
		{"slow batches: the asked count", 20, 3, 0.5, 20},
		{"at most ten times asked", 20, 3, 0.001, 200},
		{"minimum off", 2, 0, 0.001, 2},
		{"no warm-up time", 20, 3, 0, 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := probeBatches(PredictInput{ProbeBatches: tc.asked, MinProbeSeconds: tc.minS}, tc.batchS); got != tc.want {
				t.Errorf("probeBatches(%d asked, %g s min, %g s a batch) = %d, want %d", tc.asked, tc.minS, tc.batchS, got, tc.want)
			}
		})
	}
}

// TestMeasuredEpochLeavesTheFirstOut: the measured epoch is the median of
// the whole epochs after the run's first (which pays for its buffers'
// first pages), every whole epoch when there is one, and a resumed,
// partial epoch counts in neither.
func TestMeasuredEpochLeavesTheFirstOut(t *testing.T) {
	p := &Prediction{FullBatches: 10, Loader: trainer.LoaderPacked}
	whole := func(n int, secs ...float64) []trainer.EpochStats {
		var es []trainer.EpochStats
		for i, s := range secs {
			es = append(es, trainer.EpochStats{Epoch: i + 1, Seconds: s, Batches: n})
		}
		return es
	}
	tests := []struct {
		name   string
		epochs []trainer.EpochStats
		want   float64
	}{
		{"cold first", whole(10, 17.6, 4.9, 5.1, 5.7), 5.1},
		{"one epoch", whole(10, 17.6), 17.6},
		{"two epochs", whole(10, 9, 4), 4},
		{"a partial first", append(whole(4, 30), whole(10, 17.6, 5, 6)[0:]...), 5.5},
		{"none whole", whole(3, 1, 2), 0},
	}
	for _, tt := range tests {
		if got := MedianEpochSeconds(p, tt.epochs); got != tt.want {
			t.Errorf("%s: measured %v s, want %v", tt.name, got, tt.want)
		}
	}
}

// TestCheckPricesAMultistageEpochAtItsBatches: a multistage epoch (its
// macro-batches end in short batches, so it has more steps than the
// seeds' whole batches) is compared with the prediction for its own
// number of steps, the one the prediction made for an epoch of that many,
// whatever the whole batches were.
func TestCheckPricesAMultistageEpochAtItsBatches(t *testing.T) {
	c := tpc.BatchCosts{ComputeS: 0.1, SampleS: 0.01, StepS: 0.09, CopyRowS: 1e-7, InputRows: 1000, DiskRowsPerS: 100_000, CheckRowS: 5e-6, ReadsAhead: true}
	p := &Prediction{Costs: c, FullBatches: 21, Loader: trainer.LoaderMultistage, Macros: 4, MacroRows: 50_000}
	var err error
	if p.Epoch, err = p.at(24, c.DiskRowsPerS); err != nil {
		t.Fatal(err)
	}
	for _, batches := range []int{24, 26} {
		want, err := tpc.PredictStages(c, float64(batches), 4, 50_000)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := p.Check(trainer.EpochStats{Epoch: 2, Seconds: 3, Batches: batches})
		if !ok || math.Abs(got.PredictedS-want.EpochS) > 1e-12 {
			t.Errorf("an epoch of %d steps: checked against %v s (ok %v), want %v s", batches, got.PredictedS, ok, want.EpochS)
		}
	}
}

// TestStageOverlap: the share of the shorter of the first stage's reads
// and checks hidden under the longer, from the measured rates: a row read
// in 10 us and checked in 4 us whose stage took 10 us hid all its check,
// 14 us none, 12 us half; out-of-range walls clamp; without a check or a
// rate there is nothing to overlap.
func TestStageOverlap(t *testing.T) {
	for _, tc := range []struct {
		name                string
		rowsPerS, check, at float64
		want                float64
	}{
		{"all hidden", 100_000, 4e-6, 10e-6, 1},
		{"none hidden", 100_000, 4e-6, 14e-6, 0},
		{"half hidden", 100_000, 4e-6, 12e-6, 0.5},
		{"checks longer than reads", 100_000, 20e-6, 25e-6, 0.5},
		{"faster than the longer (noise)", 100_000, 4e-6, 8e-6, 1},
		{"slower than both", 100_000, 4e-6, 30e-6, 0},
		{"no checks", 100_000, 0, 10e-6, 0},
		{"no rate", 0, 4e-6, 10e-6, 0},
	} {
		rr := store.ReadRate{RowsPerS: tc.rowsPerS, CheckSecondsPerRow: tc.check, StageSecondsPerRow: tc.at}
		if got := StageOverlap(rr); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: overlap %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestBeyondCopy: a disk row takes from the step only the CPU time beyond
// the copy the probe's gather stage already made of it; never less than
// nothing, and all of it where the probe's copies were not measured.
func TestBeyondCopy(t *testing.T) {
	for _, tc := range []struct {
		name              string
		cpu, gather, rows float64
		want              float64
	}{
		{"reads cost more than the copy", 3e-6, 0.1, 100_000, 2e-6},
		{"reads cost less than the copy", 0.5e-6, 0.1, 100_000, 0},
		{"copies not measured", 3e-6, 0, 100_000, 3e-6},
		{"no rows", 3e-6, 0.1, 0, 3e-6},
	} {
		pr := trainer.Probe{GatherCPUSeconds: tc.gather, InputRows: tc.rows}
		if got := beyondCopy(tc.cpu, pr); math.Abs(got-tc.want) > 1e-15 {
			t.Errorf("%s: %v s a row, want %v", tc.name, got, tc.want)
		}
	}
}

// TestCheckPricesAnEpochAtItsBatchesReads: a packed epoch whose disk read
// fast for half its batches and slowly for the rest is checked both at
// its mean rate and at each batch's own reads, the latter longer and the
// measured epoch's match; the multistage loader, priced a macro-batch at a
// time, gets no batch-by-batch check.
func TestCheckPricesAnEpochAtItsBatchesReads(t *testing.T) {
	c := tpc.BatchCosts{ComputeS: 0.1, SampleS: 0.01, StepS: 0.09, CopyRowS: 1e-7, InputRows: 100_000, DiskRowsPerS: 100_000, ReadsAhead: true}
	p := &Prediction{Costs: c, FullBatches: 20, Loader: trainer.LoaderPacked}
	var err error
	if p.Epoch, err = tpc.PredictPipeline(c, 0.9, 20); err != nil {
		t.Fatal(err)
	}
	reads := make([]float64, 20)
	for i := range reads {
		reads[i] = 0.05
		if i >= 10 {
			reads[i] = 0.15
		}
	}
	// 200 k disk rows read in 2 s: the mean rate is the one predicted.
	e := trainer.EpochStats{Epoch: 2, Seconds: 2.55, Batches: 20, DiskReadS: reads,
		Rows: trainer.GatherStats{Rows: 2_000_000, SSDRows: 200_000, ReadSeconds: 2}}
	got, ok := p.Check(e)
	if !ok || got.WithEpochDisk == nil || got.WithBatchReads == nil {
		t.Fatalf("check %+v (ok %v): want both checks at the epoch's disk", got, ok)
	}
	if w, b := got.WithEpochDisk.PredictedS, got.WithBatchReads.PredictedS; math.Abs(b-2.55) > 1e-9 || !(b > w+0.4) {
		t.Errorf("at the mean rate %v s, at each batch's reads %v s; want 2.55 s and the mean rate's 0.5 s shorter", w, b)
	}
	if line := got.Line(true); !strings.Contains(line, "each batch's own reads") {
		t.Errorf("the epoch's line does not tell the disk's moving rate: %s", line)
	}
	p.Loader = trainer.LoaderMultistage
	p.Macros, p.MacroRows = 4, 50_000
	if got, ok := p.Check(e); ok && got.WithBatchReads != nil {
		t.Errorf("a multistage epoch checked batch by batch: %+v", got.WithBatchReads)
	}
}
