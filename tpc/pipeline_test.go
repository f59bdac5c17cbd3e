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
