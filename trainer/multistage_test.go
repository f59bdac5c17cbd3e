package trainer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"testing"

	"github.com/gnnplan/gnnplan/trainer/nn"
	"github.com/gnnplan/gnnplan/trainer/partition"
	"github.com/gnnplan/gnnplan/trainer/sample"
	"github.com/gnnplan/gnnplan/trainer/store"
)

// multistageFor partitions d's graph into parts, macro of them per
// macro-batch, with hubs, and halos of up to halo times a part's size.
func multistageFor(t *testing.T, d loaded, parts, macro int, hubs sample.Bitmap, halo float64) *Multistage {
	t.Helper()
	r, err := partition.Partition(context.Background(), d.g, partition.Options{Parts: parts, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	ms := &Multistage{Part: r.Part, Parts: parts, MacroParts: macro, Hubs: hubs}
	if halo > 0 {
		if ms.Halos, err = partition.Halos(context.Background(), d.g, r.Part, parts, halo, func(v int32) bool { return hubs.Has(v) }); err != nil {
			t.Fatal(err)
		}
	}
	return ms
}

// TestMultistageOutOfCoreMatchesInMemory trains with HANOI's loader twice:
// its macro-batches read from packed parts on disk (the store's cache as
// the hubs) and with every row in memory (the same hubs): the same
// batches and rows, so bitwise the same loss curve and parameters; with
// halos too, which consecutive macro-batches share (a row the next one
// registers while this one trains is served from either); and after the
// first stage was measured in the run's buffers (MeasureFirstStage), which
// reads the first epoch's first macro-batch ahead.
func TestMultistageOutOfCoreMatchesInMemory(t *testing.T) {
	const n = 1500
	dir := synthDataset(t, n, 64)
	d := load(t, dir)
	for i, mix := range testMixes[:2] {
		for j, kind := range []nn.Kind{nn.GraphSAGE, nn.GCN} {
			halo := float64(j) // GCN with halos as large as the parts
			t.Run(fmt.Sprintf("%s/%s/halo-%g", mix.name, kind, halo), func(t *testing.T) {
				s := materializeStore(t, dir, n, mix, uint64(i))
				o := smallOptions(kind)
				o.BatchSize, o.Epochs, o.Loader = 48, 3, LoaderMultistage
				o.Multistage = multistageFor(t, d, 6, 2, sample.Bitmap(s.InMemorySet()), halo)
				mem := newTrainer(t, d, o, 2)
				memRes, err := mem.Run(context.Background(), nil)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := PackParts(context.Background(), s, o.Multistage, store.PackOptions{}); err != nil {
					t.Fatal(err)
				}
				ms := *o.Multistage
				if ms.Pieces, err = OpenParts(s, &ms); err != nil {
					t.Fatal(err)
				}
				defer ms.Pieces.Close()
				oo := o
				oo.Features, oo.Multistage = StoreSource(s), &ms
				tr := newOutOfCore(t, d.g, oo, 2)
				// Measuring the first stage in the run's own buffer
				// leaves the run as it was.
				rr, err := tr.MeasureFirstStage(context.Background(), 0)
				if err != nil || (mix.ssds > 0 && mix.gpuRows == 0 && !(rr.Rows > 0 && rr.StageSecondsPerRow > 0)) {
					t.Fatalf("measuring the first stage: %+v, %v", rr, err)
				}
				if a := tr.workers[0].loader.(*multistageLoader).stages.rows.ahead; a == nil || a.epoch != 0 {
					t.Fatalf("after measuring the first stage: read ahead %+v, want the first epoch's first macro-batch", a)
				}
				if _, err := mem.MeasureFirstStage(context.Background(), 0); err == nil {
					t.Error("measuring the first stage of a run with every row in memory: no error")
				}
				res, err := tr.Run(context.Background(), nil)
				if err != nil {
					t.Fatal(err)
				}
				for e, me := range memRes.Epochs {
					es := res.Epochs[e]
					if es.Loss != me.Loss || es.ValLoss != me.ValLoss || es.Batches != me.Batches {
						t.Errorf("epoch %d: loss %v, val loss %v, %d batches; in memory %v, %v, %d", e+1, es.Loss, es.ValLoss, es.Batches, me.Loss, me.ValLoss, me.Batches)
					}
					if mix.ssds > 0 && mix.gpuRows == 0 && (es.Rows.SSDRows == 0 || es.Rows.UsefulBytes == 0) {
						t.Errorf("epoch %d: %d rows from disk, %d bytes read", e+1, es.Rows.SSDRows, es.Rows.UsefulBytes)
					}
				}
				if !slices.Equal(params(tr), params(mem)) {
					t.Error("parameters differ from the in-memory run's")
				}
			})
		}
	}
}

// TestMultistageBatches checks the second stage's batches: each epoch
// covers every training vertex once, in batches whose vertices lie in
// their macro-batch's parts, their halos (some do) or the hubs, in an
// order that differs from epoch to epoch.
func TestMultistageBatches(t *testing.T) {
	d := load(t, coraDir(t))
	hubs := sample.NewBitmap(int(d.g.Meta.NumNodes))
	hubs.Set(0)
	ms := multistageFor(t, d, 4, 2, hubs, 0.5)
	o := smallOptions(nn.GraphSAGE)
	o.BatchSize, o.Loader, o.Multistage = 16, LoaderMultistage, ms
	tr := newTrainer(t, d, o, 1)
	st := tr.workers[0].loader.(*multistageLoader).stages
	var firsts [][]int32
	for epoch := range 2 {
		plan := st.epochPlan(epoch)
		seen := map[int32]int{}
		var order []int32
		fromHalos := 0
		err := st.EpochFrom(context.Background(), epoch, 0, func(mb *sample.MiniBatch) error {
			m := plan.macros[0]
			for _, x := range plan.macros {
				if mb.Index >= x.first {
					m = x
				}
			}
			for _, v := range mb.Seeds {
				seen[v]++
				order = append(order, v)
			}
			for _, v := range mb.Input()[len(mb.Seeds):] {
				switch {
				case slices.Contains(m.parts, ms.Part[v]) || hubs.Has(v):
				case slices.ContainsFunc(m.parts, func(p int32) bool { _, ok := slices.BinarySearch(ms.Halos[p], v); return ok }):
					fromHalos++
				default:
					t.Fatalf("epoch %d batch %d: vertex %d of part %d, outside macro-batch parts %v, their halos and the hubs", epoch, mb.Index, v, ms.Part[v], m.parts)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(seen) != len(d.g.Train) {
			t.Errorf("epoch %d: %d distinct seeds, want %d", epoch, len(seen), len(d.g.Train))
		}
		if fromHalos == 0 {
			t.Errorf("epoch %d: no batch sampled a vertex of its parts' halos", epoch)
		}
		for v, c := range seen {
			if c != 1 {
				t.Errorf("epoch %d: seed %d trained %d times", epoch, v, c)
			}
		}
		firsts = append(firsts, order)
	}
	if slices.Equal(firsts[0], firsts[1]) {
		t.Error("two epochs trained their seeds in the same order")
	}
}

// TestMultistageReadsTheNextEpochAhead: out of core, an epoch reads the
// next epoch's first macro-batch after its last (not after the run's last
// epoch), and the next epoch trains from it without reading it again; a
// run resumed inside an epoch does not take it, and reads its own.
func TestMultistageReadsTheNextEpochAhead(t *testing.T) {
	tr := outOfCoreMultistage(t, 32, 3, 2)
	l := tr.workers[0].loader.(*multistageLoader)
	mr := l.stages.rows
	// epoch runs the loader over epoch from batch first and returns the
	// device bytes its batches report.
	epoch := func(e, first int) int64 {
		b := l.Epoch(context.Background(), e, first)
		defer b.Stop()
		var read int64
		for {
			x, err := b.Next()
			if errors.Is(err, io.EOF) {
				return read
			}
			if err != nil {
				t.Fatal(err)
			}
			read += x.Stats.Rows.DeviceBytes
			b.Release(x)
		}
	}
	full := epoch(0, 0)
	if mr.ahead == nil || mr.ahead.epoch != 1 || !slices.Equal(mr.ahead.parts, l.stages.epochPlan(1).macros[0].parts) {
		t.Fatalf("after epoch 1: read ahead %+v, want epoch 2's first macro-batch", mr.ahead)
	}
	ahead := mr.ahead.b
	if got := epoch(1, 0); got != full {
		t.Errorf("epoch 2 reports %d device bytes, epoch 1 %d: the macro-batch read ahead counts once, in the epoch it trains", got, full)
	}
	if mr.ahead != nil {
		t.Errorf("after the run's last epoch: read ahead %+v", mr.ahead)
	}
	// Resumed inside epoch 2: what was read ahead for its start is dropped.
	mr.ahead = &macroAhead{epoch: 1, parts: l.stages.epochPlan(1).macros[0].parts, b: ahead}
	if got := epoch(1, 5); got == 0 {
		t.Error("a resumed epoch read nothing")
	}
	if mr.ahead != nil {
		t.Errorf("after a resumed last epoch: read ahead %+v", mr.ahead)
	}
}

// TestMultistageEpochKeepsItsReadAhead checks that an epoch ends once its
// loading does: the next epoch's first macro-batch, read while this
// epoch's last one trained, is kept for it however long the read takes,
// and the run's last epoch reads nothing ahead.
func TestMultistageEpochKeepsItsReadAhead(t *testing.T) {
	tr := outOfCoreMultistage(t, 64, 0, 3)
	o := tr.opts
	st := tr.workers[0].loader.(*multistageLoader).stages
	for epoch := range o.Epochs {
		if err := tr.runEpoch(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
		a := st.rows.ahead
		if epoch+1 == o.Epochs {
			if a != nil {
				t.Errorf("after the last epoch: read ahead %+v, want nothing", a)
			}
			continue
		}
		if want := st.epochPlan(epoch + 1).macros[0].parts; a == nil || a.epoch != epoch+1 || !slices.Equal(a.parts, want) {
			t.Fatalf("after epoch %d: read ahead %+v, want epoch %d's first macro-batch, parts %v", epoch+1, a, epoch+2, want)
		}
	}
}

// outOfCoreMultistage is a trainer of epochs epochs on a 1500-vertex
// graph of dim-d rows, all on SSD (the store's layout seeded with seed),
// with the multistage loader reading its parts' packed pieces: 6 parts,
// 2 a macro-batch.
func outOfCoreMultistage(t *testing.T, dim int, seed uint64, epochs int) *Trainer {
	t.Helper()
	const n = 1500
	dir := synthDataset(t, n, dim)
	d := load(t, dir)
	s := materializeStore(t, dir, n, testMixes[0], seed)
	o := smallOptions(nn.GraphSAGE)
	o.BatchSize, o.Epochs, o.Loader = 48, epochs, LoaderMultistage
	ms := multistageFor(t, d, 6, 2, sample.Bitmap(s.InMemorySet()), 0)
	if _, err := PackParts(context.Background(), s, ms, store.PackOptions{}); err != nil {
		t.Fatal(err)
	}
	var err error
	if ms.Pieces, err = OpenParts(s, ms); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ms.Pieces.Close() })
	o.Features, o.Multistage = StoreSource(s), ms
	return newOutOfCore(t, d.g, o, 2)
}
