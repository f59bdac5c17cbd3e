//go:build cgo

package trainer

import (
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/gnnplan/gnnplan/kernels"
	"github.com/gnnplan/gnnplan/tpc"
	"github.com/gnnplan/gnnplan/tpc/presample"
	"github.com/gnnplan/gnnplan/trainer/nn"
)

// settledDeviceBytes is g's allocated device memory once the garbage
// collector has freed what nothing refers to: buffers are freed by
// cleanups that run after a collection, so it collects until the count
// stops moving.
func settledDeviceBytes(t *testing.T, g *kernels.GPU) int64 {
	t.Helper()
	last := int64(-1)
	for range 50 {
		runtime.GC()
		time.Sleep(2 * time.Millisecond)
		b, ok := kernels.EmulatedDeviceBytes(g)
		if !ok {
			t.Fatal("not an emulated GPU")
		}
		if b == last {
			return b
		}
		last = b
	}
	return last
}

// TestWorkingSetMatchesTheDevice holds the planner's GPU working set
// (tpc.Workload.GPUWorkingSet, which sizes what a plan leaves the GPU's
// caches) to the device memory an out-of-core run on an emulated GPU
// really holds after training: the model's parameters and Adam's
// moments, every layer's matrices, the input rows' device buffers and the
// last batch's blocks, for each model, with and without a GPU cache bin
// resident (whose own rows are taken out of the count).
func TestWorkingSetMatchesTheDevice(t *testing.T) {
	const n, dim = 1500, 96
	dir := synthDataset(t, n, dim)
	d := load(t, dir)
	plain := materializeStore(t, dir, n, storeMix{name: "no gpu bin", hostRows: 300, ssds: 1, ssdShare: 0.7}, 5)
	cached := materializeStore(t, dir, n, storeMix{name: "gpu bin", gpuRows: 400, hostRows: 200, ssds: 1, gpuShare: 0.4, ssdShare: 0.4}, 5)
	for _, kind := range nn.Kinds() {
		for _, c := range []struct {
			name string
			src  FeatureSource
			bin  int64 // rows of the resident GPU bin
		}{{"no cache", StoreSource(plain), 0}, {"cache resident", StoreSource(cached), 400}} {
			t.Run(string(kind)+"/"+c.name, func(t *testing.T) {
				o := gpuTestOptions(kind)
				o.Workers, o.BatchSize, o.Fanouts, o.Features = 1, 96, []int{6, 4}, c.src
				o.Model.InputDropout = 0
				g, err := kernels.NewEmulatedGPU(0, 0)
				if err != nil {
					t.Fatal(err)
				}
				o.Backends = []kernels.Backend{g}
				tr, err := New(g, d.g, nil, o)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := tr.Run(t.Context(), nil); err != nil {
					t.Fatal(err)
				}
				got := float64(settledDeviceBytes(t, g)) - float64(c.bin*dim*4)*9/8
				runtime.KeepAlive(tr)

				cfg := tr.config
				w := tpc.Workload{FeatureDim: dim, Classes: cfg.Classes, Model: map[nn.Kind]string{nn.GraphSAGE: tpc.ModelGraphSAGE, nn.GCN: tpc.ModelGCN, nn.GAT: tpc.ModelGAT}[kind],
					Hidden: cfg.Hidden, Heads: cfg.Heads, Fanouts: o.Fanouts, BatchSize: o.BatchSize}
				blocks, rows, err := presample.Shapes(d.g, w, 1000)
				if err != nil {
					t.Fatal(err)
				}
				a := tpc.DefaultAssumptions()
				a.GPUContextGiB = 0
				ws, err := w.GPUWorkingSet(blocks, rows, c.bin > 0, a)
				if err != nil {
					t.Fatal(err)
				}
				// After the run only the last batch's blocks are held, not
				// the pipeline's five.
				want := (ws.TotalGiB - ws.BlocksGiB*4/5) * (1 << 30)
				if r := got / want; math.Abs(r-1) > 0.25 {
					t.Errorf("the device holds %.0f KiB, the planner counts %.0f KiB (%.2fx): params %.0f, activations %.0f, input %.0f, blocks %.0f KiB",
						got/1024, want/1024, r, ws.ParamsGiB*(1<<20), ws.ActivationsGiB*(1<<20), ws.InputGiB*(1<<20), ws.BlocksGiB*(1<<20)/5)
				}
				t.Logf("device %.0f KiB, planner %.0f KiB (%.2fx)", got/1024, want/1024, got/want)
			})
		}
	}
}
