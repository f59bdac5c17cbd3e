package tpc

import (
	"math"
	"testing"

	"github.com/gnnplan/gnnplan/maxflow/placement"
	"github.com/gnnplan/gnnplan/profiles"
)

// TestMultistageOptionPerWorker: each worker (one a GPU) reads every SSD
// row an epoch and holds its own macro-batches and a word a vertex, so
// four GPUs read four times the rows, and hold four times the memory, of
// one.
func TestMultistageOptionPerWorker(t *testing.T) {
	w := Workload{Vertices: 10_000_000, FeatureDim: 128, FeatureBytes: 4, BatchSize: 1024, TrainFraction: 0.1}
	in := loaderInput{w: w, s: Shares{HostShare: 0.3, SSDShare: 0.7, CPUCacheRows: 1_000_000, EpochGB: 50},
		hw:      Hardware{SSDs: 2, SSD: profiles.SSDModel{ReadGBps: 3, CapacityGB: 4000}},
		hostGiB: 1024, train: 1,
		flow: func(placement.Tiers) (float64, error) { return 0.5, nil }}
	rowsGB := 9_000_000 * 512 / 1e9
	macroGB := rowsGB * plannedMacroParts / plannedParts
	for _, gpus := range []int{0, 1, 4} {
		in.hw.GPUs = gpus
		o, err := multistageOption(in)
		if err != nil {
			t.Fatal(err)
		}
		workers := float64(max(gpus, 1))
		wantRead := workers * rowsGB / (2 * 3)
		wantHost := workers * (macroBuffers*macroGB*1e9 + 8*10_000_000) / (1 << 30)
		if math.Abs(o.EpochIOSeconds-wantRead) > 1e-9 || math.Abs(o.HostGiB-wantHost) > 1e-9 {
			t.Errorf("%d GPUs: reads %v s, holds %v GiB; want %v s, %v GiB", gpus, o.EpochIOSeconds, o.HostGiB, wantRead, wantHost)
		}
	}
}
