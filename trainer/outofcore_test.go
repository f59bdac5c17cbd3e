package trainer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gnnplan/gnnplan/ddak/layout"

	"github.com/gnnplan/gnnplan/ddak"
	"github.com/gnnplan/gnnplan/internal/tier"
	"github.com/gnnplan/gnnplan/kernels"
	"github.com/gnnplan/gnnplan/trainer/dataset"
	"github.com/gnnplan/gnnplan/trainer/nn"
	"github.com/gnnplan/gnnplan/trainer/store"
)

// synthDataset writes a small power-law graph with labels and splits.
func synthDataset(t testing.TB, nodes int64, dim int) string {
	t.Helper()
	so := dataset.DefaultSynthOptions()
	so.Nodes, so.Edges, so.FeatureDim, so.Classes = nodes, 8*nodes, dim, 5
	so.TrainFraction, so.ValFraction, so.TestFraction = 0.3, 0.1, 0.1
	dir := filepath.Join(t.TempDir(), "synth")
	if _, err := dataset.Synth(context.Background(), so, dir, io.Discard); err != nil {
		t.Fatal(err)
	}
	return dir
}

// storeMix is how a test layout splits the rows between memory and SSDs.
type storeMix struct {
	name               string
	gpuRows, hostRows  int64 // cache bins' capacities
	ssds               int
	gpuShare, ssdShare float64
}

// materializeStore lays dir's rows out over mix (DDAK on random
// hotness), writes the SSD bins under a temporary directory and opens the
// store.
func materializeStore(t testing.TB, dir string, n int64, mix storeMix, seed uint64) *store.Store {
	t.Helper()
	return materializeStoreWith(t, dir, n, mix, seed, store.Options{QueueDepth: 8})
}

// materializeStoreWith is materializeStore opening the store with opt.
func materializeStoreWith(t testing.TB, dir string, n int64, mix storeMix, seed uint64, opt store.Options) *store.Store {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 3))
	hot := make([]uint32, n)
	for i := range hot {
		hot[i] = uint32(rng.IntN(1000)) + 1
	}
	var bins []layout.Bin
	if mix.gpuRows > 0 {
		bins = append(bins, layout.Bin{ID: "gpu0", Kind: tier.GPUMem, CapacityRows: mix.gpuRows, TargetShare: mix.gpuShare})
	}
	if mix.hostRows > 0 {
		bins = append(bins, layout.Bin{ID: "socket0", Kind: tier.HostMem, CapacityRows: mix.hostRows, TargetShare: 0.1})
	}
	var ssdDirs []string
	for i := range mix.ssds {
		bins = append(bins, layout.Bin{ID: fmt.Sprintf("nvme%d", i), Kind: tier.SSD, CapacityRows: n, TargetShare: mix.ssdShare})
		d := filepath.Join(t.TempDir(), fmt.Sprintf("ssd%d", i))
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		ssdDirs = append(ssdDirs, d)
	}
	l, err := ddak.Place(hot, bins, ddak.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := layout.Write(dir, l, bins); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Materialize(context.Background(), dir, dir, ssdDirs, store.MaterializeOptions{}); err != nil {
		t.Fatal(err)
	}
	s, err := store.Open(dir, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// newOutOfCore is a trainer of g reading its features from o.Features.
func newOutOfCore(t testing.TB, g *dataset.Graph, o Options, threads int) *Trainer {
	t.Helper()
	b, err := kernels.NewCPU(kernels.CPUOptions{Threads: threads})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := New(b, g, nil, o)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

var testMixes = []storeMix{
	{name: "all on SSD", ssds: 2, ssdShare: 0.5},
	{name: "mixed", gpuRows: 100, hostRows: 150, ssds: 2, gpuShare: 0.3, ssdShare: 0.3},
	{name: "all in memory", gpuRows: 1 << 20, ssds: 1, gpuShare: 1, ssdShare: 0.01},
}

// TestOutOfCoreMatchesInMemory trains each model with its features served
// by the store (SSD bins read with O_DIRECT, caches in memory, gathered
// ahead of the step) and with all features in memory: the same seed and
// thread count must give bitwise the same loss curve and parameters,
// whatever share of the rows the layout keeps on SSD. Rows of 512 bytes
// (read straight into the batch) and of 400 bytes (packed, staged) both.
func TestOutOfCoreMatchesInMemory(t *testing.T) {
	for _, dim := range []int{128, 100} {
		const n = 1500
		dir := synthDataset(t, n, dim)
		d := load(t, dir)
		for _, kind := range nn.Kinds() {
			o := smallOptions(kind)
			o.BatchSize = 64
			mem := newTrainer(t, d, o, 2)
			memRes, err := mem.Run(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			for i, mix := range testMixes {
				t.Run(fmt.Sprintf("dim=%d/%s/%s", dim, kind, mix.name), func(t *testing.T) {
					s := materializeStore(t, dir, n, mix, uint64(i))
					oo := o
					oo.Features = StoreSource(s)
					tr := newOutOfCore(t, d.g, oo, 2)
					res, err := tr.Run(context.Background(), nil)
					if err != nil {
						t.Fatal(err)
					}
					var rows GatherStats
					for e, es := range res.Epochs {
						me := memRes.Epochs[e]
						if es.Loss != me.Loss || es.ValLoss != me.ValLoss || es.TestAcc != me.TestAcc {
							t.Errorf("epoch %d: loss %v, val loss %v, test %v; in memory %v, %v, %v", e+1, es.Loss, es.ValLoss, es.TestAcc, me.Loss, me.ValLoss, me.TestAcc)
						}
						rows.Add(es.Rows)
						// Each step's reads, where the epoch read from disk.
						if (es.Rows.ReadSeconds > 0) != (len(es.DiskReadS) == es.Batches) || (me.DiskReadS != nil) {
							t.Errorf("epoch %d: %d steps' reads for %d steps, %.3g s of reads (in memory: %d)", e+1, len(es.DiskReadS), es.Batches, es.Rows.ReadSeconds, len(me.DiskReadS))
						}
					}
					if !slices.Equal(params(tr), params(mem)) {
						t.Error("parameters differ from the in-memory run's")
					}
					if mix.ssds > 0 && mix.gpuRows == 0 && rows.SSDRows != rows.Rows {
						t.Errorf("%d of %d rows from SSD, want all", rows.SSDRows, rows.Rows)
					}
					if mix.name == "mixed" && (rows.SSDRows == 0 || rows.SSDRows == rows.Rows) {
						t.Errorf("%d of %d rows from SSD, want some", rows.SSDRows, rows.Rows)
					}
				})
			}
		}
	}
}

// failingSource fails its n-th Gather.
type failingSource struct {
	FeatureSource
	n int
}

func (f *failingSource) Gather(ctx context.Context, v []int32, dst []float32) (GatherStats, error) {
	if f.n--; f.n == 0 {
		return GatherStats{}, errors.New("read nvme1 bin row 17: input/output error")
	}
	return f.FeatureSource.Gather(ctx, v, dst)
}

// TestOutOfCoreStopsOnAReadError checks that a failed gather stops
// training with the source's message and the batch named.
func TestOutOfCoreStopsOnAReadError(t *testing.T) {
	const n = 800
	dir := synthDataset(t, n, 64)
	d := load(t, dir)
	s := materializeStore(t, dir, n, testMixes[0], 1)
	o := smallOptions(nn.GraphSAGE)
	o.Features = &failingSource{FeatureSource: StoreSource(s), n: 3}
	_, err := newOutOfCore(t, d.g, o, 1).Run(context.Background(), nil)
	if err == nil || !strings.Contains(err.Error(), "nvme1 bin row 17") || !strings.Contains(err.Error(), "batch 3") {
		t.Fatalf("err = %v, want the read error with its batch", err)
	}
}

// TestOutOfCoreInterruptStopsCleanly cancels an out-of-core run mid-epoch
// (reads of the next batches in flight): it stops after the batch in
// progress, leaves a checkpoint and no goroutine behind, and the resumed
// run ends with the parameters of a run that was never interrupted.
func TestOutOfCoreInterruptStopsCleanly(t *testing.T) {
	const n = 1500
	dir := synthDataset(t, n, 128)
	d := load(t, dir)
	s := materializeStore(t, dir, n, testMixes[1], 4)
	o := smallOptions(nn.GraphSAGE)
	o.BatchSize, o.Epochs, o.Features = 64, 2, StoreSource(s)
	newOOC := func(o Options) *Trainer { return newOutOfCore(t, d.g, o, 2) }
	whole := newOOC(o)
	if _, err := whole.Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}

	before := runtime.NumGoroutine()
	o.Checkpoint = t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := newOOC(o)
	steps := &cancelAfter{n: 3, cancel: cancel}
	res, err := first.Run(ctx, steps)
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("interrupted run returned %v, want ErrInterrupted", err)
	}
	if steps.n != 0 {
		t.Errorf("%d more steps ran after the cancel, want none", -steps.n)
	}
	if res.Stop != "interrupted" {
		t.Fatalf("stop %q", res.Stop)
	}
	if _, err := os.Stat(filepath.Join(o.Checkpoint, CheckpointFile)); err != nil {
		t.Fatalf("no checkpoint: %v", err)
	}
	// The pipeline's goroutines are gone once Run returns (the BLAS and
	// the sampler's pools are threads and workers of their own).
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > before {
		t.Errorf("%d goroutines after the interrupted run, %d before", g, before)
	}
	o.Resume = true
	second := newOOC(o)
	if _, err := second.Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(params(whole), params(second)) {
		t.Fatal("resumed run ended with parameters other than the uninterrupted run's")
	}
}
