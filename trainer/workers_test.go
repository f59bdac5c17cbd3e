package trainer

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gnnplan/gnnplan/kernels"
	"github.com/gnnplan/gnnplan/trainer/nn"
)

// deterministicOptions trains kind with every neighbour and no dropout:
// a seed's loss then depends on the seed alone, not on the batch it is in
// or on which worker trains it.
func deterministicOptions(kind nn.Kind) Options {
	o := Defaults(kind)
	o.Fanouts = []int{-1, -1}
	o.Model.Dropout, o.Model.InputDropout, o.Model.AttnDropout = 0, 0, 0
	o.Epochs, o.EvalEvery = 1, 0
	return o
}

// matsOf downloads each parameter's value and gradient.
func matsOf(tr *Trainer) (w, g [][]float32) {
	for _, p := range tr.Model().Params() {
		for i, m := range []*kernels.Mat{p.W, p.G} {
			v := make([]float32, m.Len())
			tr.backend.Download(v, m)
			if i == 0 {
				w = append(w, v)
			} else {
				g = append(g, v)
			}
		}
	}
	return w, g
}

// closeRel reports the first matrix where a and b differ by more than tol
// times the matrix's largest magnitude.
func closeRel(a, b [][]float32, tol float64) error {
	for i := range a {
		var scale, diff float64
		for j := range a[i] {
			scale = math.Max(scale, math.Abs(float64(b[i][j])))
			diff = math.Max(diff, math.Abs(float64(a[i][j])-float64(b[i][j])))
		}
		if diff > tol*scale {
			return fmt.Errorf("matrix %d: largest difference %g, %g relative", i, diff, diff/scale)
		}
	}
	return nil
}

// TestTwoWorkersEqualOneWithTheirCombinedBatch is issue 12's third
// acceptance line: two workers each training half of the seeds, their
// gradients averaged, end the step with the parameters one worker reaches
// on all of those seeds in one batch (1e-5 relative).
func TestTwoWorkersEqualOneWithTheirCombinedBatch(t *testing.T) {
	dir := synthDataset(t, 600, 32)
	d := load(t, dir)
	seeds := len(d.g.Train)
	for _, kind := range nn.Kinds() {
		for _, workers := range []int{2, 3} {
			t.Run(fmt.Sprintf("%s/%d workers", kind, workers), func(t *testing.T) {
				o := deterministicOptions(kind)
				o.Workers, o.BatchSize = workers, (seeds+workers-1)/workers // one step each
				par := newTrainer(t, d, o, 2)
				res, err := par.Run(context.Background(), nil)
				if err != nil {
					t.Fatal(err)
				}
				if len(res.Epochs) != 1 || res.Epochs[0].Batches != 1 {
					t.Fatalf("%d workers ran %d steps, want 1", workers, res.Epochs[0].Batches)
				}
				one := deterministicOptions(kind)
				one.BatchSize = seeds
				whole := newTrainer(t, d, one, 2)
				wres, err := whole.Run(context.Background(), nil)
				if err != nil {
					t.Fatal(err)
				}
				pw, pg := matsOf(par)
				ww, wg := matsOf(whole)
				if err := closeRel(pg, wg, 1e-5); err != nil {
					t.Errorf("averaged gradient: %v", err)
				}
				if err := closeRel(pw, ww, 1e-5); err != nil {
					t.Errorf("parameters after the step: %v", err)
				}
				if d := math.Abs(res.Epochs[0].Loss - wres.Epochs[0].Loss); d > 1e-5*wres.Epochs[0].Loss {
					t.Errorf("loss %v, one worker %v", res.Epochs[0].Loss, wres.Epochs[0].Loss)
				}
				if res.Epochs[0].Loss == 0 || slices.Equal(params(par), params(newTrainer(t, d, o, 2))) {
					t.Error("the step changed nothing: the comparison would hold vacuously")
				}
				// Every replica holds the master's parameters.
				for _, w := range par.workers[1:] {
					for j, p := range w.model.Params() {
						a, b := make([]float32, p.W.Len()), make([]float32, p.W.Len())
						par.backend.Download(a, p.W)
						par.backend.Download(b, par.model.Params()[j].W)
						if err := closeRel([][]float32{a}, [][]float32{b}, 0); err != nil {
							t.Fatalf("worker %d's replica differs from the master: %v", w.id, err)
						}
					}
				}
			})
		}
	}
}

// TestWorkersCoverTheSeedsAndResume trains with two workers over several
// steps and epochs, on uneven shares (an odd number of seeds): each epoch
// trains every seed once, the run is deterministic, and a run interrupted
// and resumed from its checkpoint ends where an uninterrupted one does.
func TestWorkersCoverTheSeedsAndResume(t *testing.T) {
	dir := synthDataset(t, 1501, 32)
	d := load(t, dir)
	o := smallOptions(nn.GraphSAGE)
	o.Workers, o.BatchSize, o.Epochs, o.EvalEvery = 2, 40, 2, 0
	a := newTrainer(t, d, o, 2)
	res, err := a.Run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	seeds := len(d.g.Train)
	half := (seeds + 1) / 2
	for _, e := range res.Epochs {
		if e.Batches != (half+39)/40 {
			t.Errorf("epoch %d: %d steps, want %d", e.Epoch, e.Batches, (half+39)/40)
		}
	}
	b := newTrainer(t, d, o, 2)
	if _, err := b.Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(params(a), params(b)) {
		t.Fatal("two runs with the same seed and workers differ")
	}
	o.Checkpoint = t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := newTrainer(t, d, o, 2).Run(ctx, &cancelAfter{n: 5, cancel: cancel}); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("interrupted run: %v", err)
	}
	if _, err := os.Stat(filepath.Join(o.Checkpoint, CheckpointFile)); err != nil {
		t.Fatal(err)
	}
	o.Resume = true
	c := newTrainer(t, d, o, 2)
	if _, err := c.Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(params(a), params(c)) {
		t.Fatal("the resumed run ended elsewhere than the uninterrupted one")
	}
	// A checkpoint of two workers does not resume with one.
	o.Workers = 1
	if _, err := newTrainer(t, d, o, 2).Run(context.Background(), nil); err == nil {
		t.Error("a two-worker checkpoint resumed with one worker")
	}
}
