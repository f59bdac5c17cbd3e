package trainer

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/gnnplan/gnnplan/trainer/nn"
)

// TestProbeLeavesTheRunAlone checks that probing a trainer before it runs
// changes nothing the run does (the probe has its own parameters and
// seed), and that the probe's figures describe the batches it timed.
func TestProbeLeavesTheRunAlone(t *testing.T) {
	const n = 1500
	dir := synthDataset(t, n, 64)
	d := load(t, dir)
	for _, ooc := range []bool{false, true} {
		name := map[bool]string{false: "in memory", true: "out of core"}[ooc]
		t.Run(name, func(t *testing.T) {
			o := smallOptions(nn.GraphSAGE)
			o.BatchSize, o.Epochs = 64, 2
			mk := func() *Trainer {
				if !ooc {
					return newTrainer(t, d, o, 2)
				}
				oo := o
				oo.Features = StoreSource(materializeStore(t, dir, n, testMixes[1], 2))
				return newOutOfCore(t, d.g, oo, 2)
			}
			plain := mk()
			if _, err := plain.Run(context.Background(), nil); err != nil {
				t.Fatal(err)
			}
			probed := mk()
			p, err := probed.Probe(context.Background(), 4)
			if err != nil {
				t.Fatal(err)
			}
			res, err := probed.Run(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(params(plain), params(probed)) || len(res.Epochs) != 2 {
				t.Fatal("a probed run ended with other parameters than an unprobed one")
			}
			if p.Batches != 4 || len(p.Vertices) != 4 {
				t.Errorf("probe timed %d batches (%d input lists), want 4", p.Batches, len(p.Vertices))
			}
			if !(p.BatchSeconds > 0 && p.StepSeconds > 0 && p.FirstWaitSeconds > 0) || p.StepSeconds > 2*p.BatchSeconds {
				t.Errorf("probe times: batch %v s, step %v s", p.BatchSeconds, p.StepSeconds)
			}
			if p.Seeds != 64 || p.InputRows < p.Seeds || p.InputRows > n {
				t.Errorf("probe: %v seeds and %v input rows per batch, want 64 seeds and 64..%d rows", p.Seeds, p.InputRows, n)
			}
			if ooc != (p.GatherSeconds > 0) {
				t.Errorf("gather stage busy %v s per batch (out of core: %v)", p.GatherSeconds, ooc)
			}
			// The stage's own thread's CPU time: some, and no more than
			// its busy time (a clock tick of slack).
			if _, measured := threadCPUSeconds(); measured && ooc && !(p.GatherCPUSeconds >= 0 && p.GatherCPUSeconds <= p.GatherSeconds+0.02) {
				t.Errorf("gather stage CPU %v s per batch, busy %v s", p.GatherCPUSeconds, p.GatherSeconds)
			}
		})
	}
	t.Run("fewer batches per epoch than asked", func(t *testing.T) {
		// A small graph's epoch is timed over several epochs, each without
		// its first batch, and the run is still not changed.
		o := smallOptions(nn.GraphSAGE)
		o.BatchSize, o.Epochs = 256, 2
		plain := newTrainer(t, d, o, 1)
		nb := plain.workers.batches(0)
		if nb < 2 || nb > 8 {
			t.Fatalf("fixture: %d batches per epoch, want 2..8", nb)
		}
		if _, err := plain.Run(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
		probed := newTrainer(t, d, o, 1)
		want := 3*nb + 1 // not a multiple of the nb-1 timed per epoch
		p, err := probed.Probe(context.Background(), want)
		if err != nil {
			t.Fatal(err)
		}
		if p.Batches != want || len(p.Vertices) != want || !(p.BatchSeconds > 0 && p.StepSeconds > 0) {
			t.Errorf("probe timed %d batches (%d input lists, %v s each), want %d", p.Batches, len(p.Vertices), p.BatchSeconds, want)
		}
		if _, err := probed.Run(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(params(plain), params(probed)) {
			t.Error("a probed run ended with other parameters than an unprobed one")
		}
	})
	t.Run("one batch per epoch", func(t *testing.T) {
		o := smallOptions(nn.GCN)
		o.BatchSize = 0
		p, err := newTrainer(t, d, o, 1).Probe(context.Background(), 8)
		if err != nil {
			t.Fatal(err)
		}
		// One epoch warms up untimed; the next eight's batches are timed.
		if p.Batches != 8 || len(p.Vertices) != 8 || !(p.BatchSeconds > 0) {
			t.Errorf("probe of a one-batch epoch: %d batches, %d input lists, %v s; want 8 after a warm-up", p.Batches, len(p.Vertices), p.BatchSeconds)
		}
	})
}

// TestProbeLeavesStallsOut: a probe's batch and step times are the means
// of its batches but those stalled past 1.5 times the median batch (a
// burst of another process), with enough batches to tell; a uniformly
// slow probe stays slow.
func TestProbeLeavesStallsOut(t *testing.T) {
	steady := func(n int, wall float64) []batchTimes {
		b := make([]batchTimes, n)
		for i := range b {
			b[i] = batchTimes{wall: wall, step: 0.9 * wall}
		}
		return b
	}
	stalled := append(steady(18, 0.1), batchTimes{wall: 0.5, step: 0.45}, batchTimes{wall: 0.4, step: 0.35})
	for _, tc := range []struct {
		name       string
		each       []batchTimes
		wall, step float64
		slow       int
	}{
		{"steady", steady(20, 0.1), 1, 1, 0},
		{"two stalls", stalled, 0.1, 0.09, 2},
		{"all slow", steady(20, 0.3), 1, 1, 0},
		{"too few to tell", stalled[16:], 1, 1, 0},
	} {
		p := Probe{BatchSeconds: 1, StepSeconds: 1}
		p.withoutStalls(tc.each)
		if math.Abs(p.BatchSeconds-tc.wall) > 1e-12 || math.Abs(p.StepSeconds-tc.step) > 1e-12 || p.SlowBatches != tc.slow {
			t.Errorf("%s: batch %g s, step %g s, %d slow; want %g, %g, %d", tc.name, p.BatchSeconds, p.StepSeconds, p.SlowBatches, tc.wall, tc.step, tc.slow)
		}
	}
}
