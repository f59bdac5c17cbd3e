package tpc

import (
	"context"
	"fmt"
	"testing"
)

// TestDecidedCacheMatchesAGrid is issue 35's first line for the CPU
// cache: for the embedded machines and workloads, the TPC of recommend's
// plan is within 0.5% of the best a grid over the cache size finds (each
// grid point with its own best placement, PredictSetup), over the three
// hardware choices recommend ranks first.
func TestDecidedCacheMatchesAGrid(t *testing.T) {
	if testing.Short() {
		t.Skip("a grid of placement searches")
	}
	const points = 24
	for _, machine := range []string{"moment-a", "moment-b", "hyperion-a"} {
		for _, workload := range []string{"igb-hom", "ogbn-papers100M", "uk-2014"} {
			t.Run(machine+"/"+workload, func(t *testing.T) {
				req := request(t, machine, workload, 80000)
				rec := recommend(t, req)
				grid, at := 0.0, ""
				for _, o := range rec.Options[:min(3, len(rec.Options))] {
					xmax := o.Decisions.MaxCPUCacheFraction
					for i := 0; i <= points; i++ {
						a := req.Assumptions
						a.CPUCacheFraction = xmax * float64(i) / points
						p, err := PredictSetup(context.Background(), Setup{Machine: req.Machine, Catalog: req.Catalog, Workload: req.Workload,
							GPU: o.GPU.Key, SSD: o.SSD.Key, GPUs: o.GPUs, SSDs: o.SSDs, Layout: LayoutBest, Assumptions: a})
						if err != nil {
							t.Fatal(err)
						}
						if p.TPC > grid {
							grid, at = p.TPC, fmt.Sprintf("%s at cache %.3f", o.label(), a.CPUCacheFraction)
						}
					}
				}
				if rec.Best.TPC < 0.995*grid {
					t.Errorf("recommend's TPC %.4g (%s at cache %.3f) is below the grid's %.4g (%s) by more than 0.5%%",
						rec.Best.TPC, rec.Best.label(), rec.Best.Decisions.CPUCacheFraction, grid, at)
				}
			})
		}
	}
}
