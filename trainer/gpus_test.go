//go:build cgo

package trainer

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gnnplan/gnnplan/ddak/layout"

	"github.com/gnnplan/gnnplan/ddak"
	"github.com/gnnplan/gnnplan/internal/tier"
	"github.com/gnnplan/gnnplan/kernels"
	"github.com/gnnplan/gnnplan/trainer/nn"
	"github.com/gnnplan/gnnplan/trainer/sample"
	"github.com/gnnplan/gnnplan/trainer/store"
)

// gpuTestOptions trains kind for a few steps with dropout on: masks,
// sampling and the reduction all take part.
func gpuTestOptions(kind nn.Kind) Options {
	o := Defaults(kind)
	o.Fanouts, o.BatchSize = []int{5, 3}, 48
	o.Epochs, o.EvalEvery, o.Patience = 1, 1, 0
	o.Workers = 2
	return o
}

// runOn trains o on backends (one per worker), on d's features in memory
// unless o has a feature source, and returns the master's parameters and
// Adam moments as bits, and the result.
func runOn(t *testing.T, d loaded, o Options, backends []kernels.Backend) ([]uint32, *Result) {
	t.Helper()
	o.Backends = backends
	var feat []float32
	if o.Features == nil {
		feat = append(feat, d.feat...)
	}
	tr, err := New(backends[0], d.g, feat, o)
	if err != nil {
		t.Fatal(err)
	}
	res, err := tr.Run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return params(tr), res
}

// TestWorkersOnTheirOwnGPUs trains two workers on two (emulated) GPUs,
// their passes at once and their gradients and parameters moving by peer
// copies, and wants the bits two workers reach on one GPU taking turns:
// running on several GPUs changes nothing but the speed. A worker on the
// CPU beside one on a GPU (gradients through host memory) must agree with
// both on the CPU to float32 rounding (GEMM's sums differ in order).
func TestWorkersOnTheirOwnGPUs(t *testing.T) {
	d := load(t, synthDataset(t, 400, 24))
	for _, kind := range nn.Kinds() {
		t.Run(string(kind), func(t *testing.T) {
			o := gpuTestOptions(kind)
			g0 := emuGPU(t, 0)
			one, _ := runOn(t, d, o, []kernels.Backend{g0, g0})
			two, res := runOn(t, d, o, []kernels.Backend{emuGPU(t, 0), emuGPU(t, 1)})
			if res.Epochs[0].Batches < 2 {
				t.Fatalf("%d steps, want several", res.Epochs[0].Batches)
			}
			if !slices.Equal(one, two) {
				t.Errorf("two workers on two GPUs differ from two on one GPU")
			}
			cpu := func() kernels.Backend {
				c, err := kernels.NewCPU(kernels.CPUOptions{Threads: 1, BLAS: "gonum"})
				if err != nil {
					t.Fatal(err)
				}
				return c
			}
			c0 := cpu()
			onCPU, _ := runOn(t, d, o, []kernels.Backend{c0, c0})
			mixed, _ := runOn(t, d, o, []kernels.Backend{cpu(), emuGPU(t, 0)})
			for name, got := range map[string][]uint32{"two GPUs": two, "a CPU and a GPU": mixed} {
				if err := closeBits(got, onCPU, 1e-4); err != nil {
					t.Errorf("%s against two workers on the CPU: %v", name, err)
				}
			}
		})
	}
}

// closeBits compares float32 bit patterns within tol relative to the
// largest magnitude.
func closeBits(a, b []uint32, tol float64) error {
	if len(a) != len(b) {
		return fmt.Errorf("%d values, want %d", len(a), len(b))
	}
	fa, fb := make([]float32, len(a)), make([]float32, len(b))
	for i := range a {
		fa[i], fb[i] = math.Float32frombits(a[i]), math.Float32frombits(b[i])
	}
	return closeRel([][]float32{fa}, [][]float32{fb}, tol)
}

// failingGPU is a backend whose GEMM fails as a GPU out of memory does,
// after ok calls.
type failingGPU struct {
	kernels.Backend
	ok int
}

func (f *failingGPU) Gemm(ta, tb bool, alpha float32, a, b *kernels.Mat, beta float32, c *kernels.Mat) {
	if f.ok == 0 {
		panic(&kernels.DeviceError{Device: "test GPU", Op: "allocating 96.0 MiB", Err: errors.New("out of memory")})
	}
	f.ok--
	f.Backend.Gemm(ta, tb, alpha, a, b, beta, c)
}

// TestDeviceFailureIsAnError wants a GPU's failure in one worker's pass,
// on its own goroutine, to end Run with the device's error, not to crash
// the process.
func TestDeviceFailureIsAnError(t *testing.T) {
	d := load(t, synthDataset(t, 300, 16))
	o := gpuTestOptions(nn.GraphSAGE)
	o.EvalEvery = 0
	ok := emuGPU(t, 0)
	bad := &failingGPU{Backend: emuGPU(t, 1), ok: 7}
	o.Backends = []kernels.Backend{ok, bad}
	tr, err := New(ok, d.g, append([]float32(nil), d.feat...), o)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tr.Run(context.Background(), nil)
	var de *kernels.DeviceError
	if !errors.As(err, &de) || de.Device != "test GPU" {
		t.Fatalf("Run: %v, want the test GPU's DeviceError", err)
	}
}

func emuGPU(t *testing.T, ordinal int) kernels.Backend {
	t.Helper()
	g, err := kernels.NewEmulatedGPU(ordinal, 0)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// plainSource hides a store's resident gathering: every row is gathered
// on the host and copied in.
type plainSource struct{ FeatureSource }

// TestResidentGPUCache trains out of core on (emulated) GPUs holding the
// layout's GPU cache bin in device memory, and wants the bits of the
// same run gathering every row on the host: the resident rows reach the
// model unchanged, and the report counts them.
func TestResidentGPUCache(t *testing.T) {
	const n = 1200
	dir := synthDataset(t, n, 48)
	d := load(t, dir)
	s := materializeStore(t, dir, n, storeMix{name: "mixed", gpuRows: 300, hostRows: 200, ssds: 1, gpuShare: 0.4, ssdShare: 0.3}, 7)
	for _, kind := range nn.Kinds() {
		t.Run(string(kind), func(t *testing.T) {
			run := func(src FeatureSource) ([]uint32, *Result) {
				o := gpuTestOptions(kind)
				o.Workers, o.BatchSize, o.Features = 1, 64, src
				return runOn(t, d, o, []kernels.Backend{emuGPU(t, 0)})
			}
			resident, res := run(StoreSource(s))
			copied, cres := run(plainSource{StoreSource(s)})
			if !slices.Equal(resident, copied) {
				t.Errorf("training with the GPU bin resident differs from copying every row")
			}
			rows, crows := res.Epochs[0].Rows, cres.Epochs[0].Rows
			if rows.ResidentHits == 0 || rows.ResidentHits != crows.WorkerCacheHits || crows.ResidentHits != 0 {
				t.Errorf("resident run: %d resident of %d worker-bin rows; copying run: %d worker-bin rows, %d resident",
					rows.ResidentHits, rows.WorkerCacheHits, crows.WorkerCacheHits, crows.ResidentHits)
			}
		})
	}
}

// TestResidentBinTooLargeForTheGPU: a GPU cache bin the GPU cannot hold
// is an error naming the bin and the GPU, from New, not a crash.
func TestResidentBinTooLargeForTheGPU(t *testing.T) {
	const n = 800
	dir := synthDataset(t, n, 64)
	d := load(t, dir)
	s := materializeStore(t, dir, n, storeMix{name: "gpu heavy", gpuRows: 600, ssds: 1, gpuShare: 0.8, ssdShare: 0.2}, 3)
	small, err := kernels.NewEmulatedGPU(0, 64<<10) // 64 KiB: the bin needs about 150 KiB
	if err != nil {
		t.Fatal(err)
	}
	o := gpuTestOptions(nn.GraphSAGE)
	o.Workers, o.Features = 1, StoreSource(s)
	_, err = New(small, d.g, nil, o)
	var de *kernels.DeviceError
	if !errors.As(err, &de) || !strings.Contains(err.Error(), "GPU cache bin gpu0") || !strings.Contains(err.Error(), "out of memory") {
		t.Fatalf("New: %v, want the GPU bin named and the device's out-of-memory error", err)
	}
}

// twoGPUBinStore lays dir's n rows out over two GPU bins, a CPU cache and
// an SSD bin, as a plan for two GPUs does, and opens the store.
func twoGPUBinStore(t *testing.T, dir string, n int64) *store.Store {
	t.Helper()
	rng := rand.New(rand.NewPCG(11, 12))
	hot := make([]uint32, n)
	for i := range hot {
		hot[i] = uint32(rng.IntN(1000)) + 1
	}
	bins := []layout.Bin{
		{ID: "gpu0", Kind: tier.GPUMem, CapacityRows: n / 5, TargetShare: 0.25},
		{ID: "gpu1", Kind: tier.GPUMem, CapacityRows: n / 5, TargetShare: 0.25},
		{ID: "socket0", Kind: tier.HostMem, CapacityRows: n / 10, TargetShare: 0.1},
		{ID: "nvme0", Kind: tier.SSD, CapacityRows: n, TargetShare: 0.4},
	}
	l, err := ddak.Place(hot, bins, ddak.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := layout.Write(dir, l, bins); err != nil {
		t.Fatal(err)
	}
	ssd := filepath.Join(t.TempDir(), "ssd0")
	if err := os.Mkdir(ssd, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Materialize(context.Background(), dir, dir, []string{ssd}, store.MaterializeOptions{}); err != nil {
		t.Fatal(err)
	}
	s, err := store.Open(dir, store.Options{QueueDepth: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestTwoGPUsEachWithItsBin trains a two-GPU plan's layout on two
// (emulated) GPUs, each holding its own GPU bin resident, and wants the
// bits of the same run copying every row in, and, after an interrupt
// mid-epoch and a resume from the checkpoint, the bits of the run never
// interrupted.
func TestTwoGPUsEachWithItsBin(t *testing.T) {
	const n = 1500
	dir := synthDataset(t, n, 32)
	d := load(t, dir)
	s := twoGPUBinStore(t, dir, n)
	o := gpuTestOptions(nn.GAT)
	o.Workers, o.BatchSize, o.Epochs, o.Features = 2, 40, 3, StoreSource(s)
	gpus := func() []kernels.Backend { return []kernels.Backend{emuGPU(t, 0), emuGPU(t, 1)} }
	resident, res := runOn(t, d, o, gpus())
	copied, _ := runOn(t, d, withSource(o, plainSource{StoreSource(s)}), gpus())
	if !slices.Equal(resident, copied) {
		t.Error("two GPUs holding their bins differ from two GPUs copying every row")
	}
	var rows GatherStats
	for _, e := range res.Epochs {
		rows.Add(e.Rows)
	}
	// Each worker holds one of the two bins: a row of the other worker's
	// bin is copied from host memory.
	if rows.ResidentHits == 0 || rows.ResidentHits >= rows.WorkerCacheHits {
		t.Errorf("resident %d of %d GPU-bin rows: want some, not all (each worker holds one bin)", rows.ResidentHits, rows.WorkerCacheHits)
	}

	o.Checkpoint = t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	oi := o
	oi.Backends = gpus()
	first, err := New(oi.Backends[0], d.g, nil, oi)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := first.Run(ctx, &cancelAfter{n: 3, cancel: cancel}); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("interrupted run: %v", err)
	}
	o.Resume = true
	resumed, _ := runOn(t, d, o, gpus())
	if !slices.Equal(resident, resumed) {
		t.Error("a two-GPU run resumed from its checkpoint differs from the run never interrupted")
	}
}

func withSource(o Options, src FeatureSource) Options {
	o.Features = src
	return o
}

// TestGPUFullWhileGathering: a GPU that runs out of memory on the
// pipeline's goroutines (the blocks, a batch's staged rows) ends Run with
// the device's error, not a crash, whichever stage hits it.
func TestGPUFullWhileGathering(t *testing.T) {
	const n = 900
	dir := synthDataset(t, n, 256)
	d := load(t, dir)
	s := materializeStore(t, dir, n, storeMix{name: "all on SSD", ssds: 1, ssdShare: 1}, 5)
	for _, limit := range []int64{48 << 10, 160 << 10, 400 << 10} {
		g, err := kernels.NewEmulatedGPU(0, limit)
		if err != nil {
			t.Fatal(err)
		}
		o := gpuTestOptions(nn.GraphSAGE)
		o.Workers, o.BatchSize, o.EvalEvery, o.Features, o.Backends = 1, 64, 0, StoreSource(s), nil
		tr, err := New(g, d.g, nil, o)
		if err != nil {
			var de *kernels.DeviceError
			if !errors.As(err, &de) {
				t.Errorf("%d KiB: New: %v, want a DeviceError", limit>>10, err)
			}
			continue
		}
		_, err = tr.Run(context.Background(), nil)
		var de *kernels.DeviceError
		if !errors.As(err, &de) || !strings.Contains(err.Error(), "out of memory") {
			t.Errorf("%d KiB: Run: %v, want the GPU's out-of-memory error", limit>>10, err)
		}
	}
}

// TestLoadersOnAGPU trains out of core with the packed and multistage
// loaders on an (emulated) GPU holding the GPU cache bin resident, and
// wants the bits of the reference each must equal: online sampling from
// the same store (packed) and the multistage loader with every row in
// memory; the resident rows are counted.
func TestLoadersOnAGPU(t *testing.T) {
	const n = 1200
	dir := synthDataset(t, n, 48)
	d := load(t, dir)
	s := materializeStore(t, dir, n, storeMix{name: "mixed", gpuRows: 300, hostRows: 200, ssds: 1, gpuShare: 0.4, ssdShare: 0.3}, 9)
	base := gpuTestOptions(nn.GraphSAGE)
	base.Workers, base.BatchSize, base.Epochs, base.EvalEvery = 1, 64, 2, 0
	gpu := func() []kernels.Backend { return []kernels.Backend{emuGPU(t, 0)} }

	o := base
	o.Features = StoreSource(s)
	want, _ := runOn(t, d, o, gpu())
	o.Loader = LoaderPacked
	o.Packed = packFor(t, d, s, o, 2)
	got, res := runOn(t, d, o, gpu())
	if !slices.Equal(got, want) {
		t.Error("packed: parameters differ from online sampling's")
	}
	checkResident(t, "packed", res)

	ms := multistageFor(t, d, 4, 2, sample.Bitmap(s.InMemorySet()), 0.5)
	o = base
	o.Loader, o.Multistage = LoaderMultistage, ms
	want, _ = runOn(t, d, o, gpu())
	if _, err := PackParts(context.Background(), s, ms, store.PackOptions{}); err != nil {
		t.Fatal(err)
	}
	oc := *ms
	var err error
	if oc.Pieces, err = OpenParts(s, &oc); err != nil {
		t.Fatal(err)
	}
	defer oc.Pieces.Close()
	o.Features, o.Multistage = StoreSource(s), &oc
	got, res = runOn(t, d, o, gpu())
	if !slices.Equal(got, want) {
		t.Error("multistage out of core: parameters differ from its run with every row in memory")
	}
	checkResident(t, "multistage", res)
}

// checkResident fails t unless every epoch of res held rows resident.
func checkResident(t *testing.T, loader string, res *Result) {
	t.Helper()
	for e, ep := range res.Epochs {
		if ep.Rows.ResidentHits == 0 || ep.Rows.ResidentHits > ep.Rows.WorkerCacheHits {
			t.Errorf("%s, epoch %d: %d resident rows of %d worker-bin rows", loader, e+1, ep.Rows.ResidentHits, ep.Rows.WorkerCacheHits)
		}
	}
}
