package sample

import (
	"context"
	"fmt"
	"time"

	"github.com/gnnplan/gnnplan/trainer/dataset"
)

// Rate is what MeasureRate measured.
type Rate struct {
	// EdgesPerSecond is sampled edges per second on one goroutine (one
	// core): what a machine's sampling costs per batch scales from.
	EdgesPerSecond float64 `json:"edges_per_s"`
	Batches        int     `json:"batches"`
	Edges          int64   `json:"edges"`
	Seconds        float64 `json:"seconds"`
}

// MeasureRate samples batches of opt (one goroutine, batch after batch of
// epoch 0, wrapping around) for about d, after one untimed batch, and
// returns the rate in sampled edges per second.
func MeasureRate(ctx context.Context, g *dataset.Graph, opt SamplerOptions, d time.Duration) (Rate, error) {
	opt.Workers = 1
	s, err := NewSampler(g, opt)
	if err != nil {
		return Rate{}, err
	}
	nb := s.Batches(0)
	if nb == 0 {
		return Rate{}, fmt.Errorf("measure sampling: no seeds to sample")
	}
	s.Sample(0, 0)
	var r Rate
	start := time.Now()
	for i := 1; r.Batches == 0 || time.Since(start) < d; i++ {
		if err := ctx.Err(); err != nil {
			return Rate{}, err
		}
		r.Edges += int64(s.Sample(0, i%nb).NumEdges())
		r.Batches++
	}
	r.Seconds = time.Since(start).Seconds()
	r.EdgesPerSecond = float64(r.Edges) / r.Seconds
	return r, nil
}
