package sample

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"
)

func TestMeasureRate(t *testing.T) {
	g := randomTestGraph(rand.New(rand.NewPCG(3, 1)), 60)
	r, err := MeasureRate(context.Background(), g, SamplerOptions{Fanouts: []int{5, 3}, BatchSize: 4, Seed: 1}, 5*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if r.Batches < 1 || r.Edges <= 0 || !(r.EdgesPerSecond > 0) || r.EdgesPerSecond != float64(r.Edges)/r.Seconds {
		t.Errorf("rate %+v", r)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := MeasureRate(ctx, g, SamplerOptions{Fanouts: []int{5}, BatchSize: 4}, time.Second); err == nil {
		t.Error("a cancelled measurement returned no error")
	}
}
