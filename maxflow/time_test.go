package maxflow

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// TestMinTimeBisectEnds: bisection ends, with the answer or an error, where
// it used to loop forever.
func TestMinTimeBisectEnds(t *testing.T) {
	inf := math.Inf(1)
	type edge struct {
		u, v      int
		rate, vol float64
	}
	cases := []struct {
		name    string
		edges   []edge
		demand  float64
		want    float64
		wantErr bool
	}{
		{"least time 0: the data sits behind unbounded links",
			[]edge{{0, 2, inf, 100}, {2, 1, inf, inf}}, 50, 0, false},
		{"least time 0: two caches share the demand",
			[]edge{{0, 2, inf, 30}, {0, 3, inf, 30}, {2, 1, inf, inf}, {3, 1, inf, inf}}, 60, 0, false},
		{"least time near 0 is found, not taken for 0",
			[]edge{{0, 2, inf, 100}, {2, 1, 1e15, inf}}, 50, 5e-14, false},
		{"a demand just above what the volumes hold is refused",
			[]edge{{0, 2, 1, 100}, {2, 1, inf, inf}}, 100 / (1 - 0.5e-9), 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			net := NewNetwork(4, len(tc.edges))
			for i := 0; i < 4; i++ {
				net.AddNode(string(rune('a' + i)))
			}
			for _, e := range tc.edges {
				net.AddCappedEdge(e.u, e.v, e.rate, e.vol)
			}
			type result struct {
				sol *TimedSolution
				err error
			}
			done := make(chan result, 1)
			go func() {
				sol, err := net.MinTimeBisect(0, 1, tc.demand, 1e-9)
				done <- result{sol, err}
			}()
			var r result
			select {
			case r = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("MinTimeBisect did not return")
			}
			if tc.wantErr {
				var de *DemandError
				if !errors.As(r.err, &de) {
					t.Fatalf("err = %v, want a DemandError", r.err)
				}
				return
			}
			if r.err != nil {
				t.Fatal(r.err)
			}
			if math.Abs(r.sol.Seconds-tc.want) > 1e-8*tc.want {
				t.Errorf("T = %v, want %v", r.sol.Seconds, tc.want)
			}
			if math.Abs(r.sol.Value-tc.demand) > 1e-6*tc.demand && r.sol.Value < tc.demand {
				t.Errorf("delivered %v, want %v", r.sol.Value, tc.demand)
			}
			if r.sol.MaxFlows > 200 {
				t.Errorf("took %d max flows", r.sol.MaxFlows)
			}
		})
	}
}

// TestLeastTimeNewtonStepLimit: Newton's method that runs out of max flows
// says so instead of returning the last iterate as the least time.
func TestLeastTimeNewtonStepLimit(t *testing.T) {
	inf := math.Inf(1)
	// Two GPUs of 50 GB each behind links of 10 and 5 GB/s: the rates give
	// 100/15 s, the first cut 10 s, which the third max flow confirms.
	net := NewNetwork(4, 4)
	for i := 0; i < 4; i++ {
		net.AddNode(string(rune('a' + i)))
	}
	net.AddEdge(0, 2, 10)
	net.AddEdge(0, 3, 5)
	net.AddCappedEdge(2, 1, inf, 50)
	net.AddCappedEdge(3, 1, inf, 50)
	cases := []struct {
		name     string
		maxFlows int
		want     float64
		wantErr  error
	}{
		{"enough max flows: the least time", 3, 10, nil},
		{"the step limit is an error, not an answer", 2, 0, ErrNoConvergence},
		{"a limit of one max flow is an error", 1, 0, ErrNoConvergence},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			secs, flows, err := net.leastTime(0, 1, 100, 0, inf, tc.maxFlows)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v (T = %v after %d max flows), want %v", err, secs, flows, tc.wantErr)
			}
			if err == nil && math.Abs(secs-tc.want) > 1e-12*tc.want {
				t.Errorf("T = %v, want %v", secs, tc.want)
			}
		})
	}
}

// TestCutReachesDemandEqualToVolumesUpToRounding: a demand that a cut's
// volumes meet exactly but for the last bit of the sum (shares that add up
// to the demand in exact arithmetic) is reached when the last volume
// arrives, not refused: recommend dropped every plan with SSDs when the
// features all fit the caches ("demand 5.033184446915593 cannot be met:
// the network delivers at most 5.033184446915592").
func TestCutReachesDemandEqualToVolumesUpToRounding(t *testing.T) {
	vols := []float64{0.1, 0.2, 0.3, 4.433184446915592}
	sum := 0.0
	for _, v := range vols {
		sum += v
	}
	net := NewNetwork(2+len(vols), 2*len(vols))
	net.AddNode("s")
	net.AddNode("t")
	for i, v := range vols {
		net.AddNode(string(rune('a' + i)))
		net.AddCappedEdge(0, 2+i, float64(i+1), v) // v / (i+1) s to carry
	}
	seen := []bool{true, false, false, false, false, false}
	last := vols[3] / 4
	for _, demand := range []float64{sum, math.Nextafter(sum, math.Inf(1)), sum * (1 + 1e-13)} {
		if got := net.cutReaches(seen, demand); math.Abs(got-last) > 1e-12*last {
			t.Errorf("demand %v (volumes sum to %v): reached at %v, want %v when the last volume is in", demand, sum, got, last)
		}
	}
	if got := net.cutReaches(seen, sum*(1+1e-6)); !math.IsInf(got, 1) {
		t.Errorf("demand 1e-6 above the volumes reached at %v, want never", got)
	}
}

// TestDemandErrorStaysOneShortLine: a cut through 2,000 links (a machine
// with 2,000 GPUs) once made a 60 KB error line; it names a few edges and
// counts the rest, and prints its figures without float noise.
func TestDemandErrorStaysOneShortLine(t *testing.T) {
	cut := make([]string, 2000)
	for i := range cut {
		cut[i] = fmt.Sprintf("source->mem:u-gpu-gslot%d", i)
	}
	msg := (&DemandError{Demand: 1810.7465106744944, Deliverable: 1753.2116380983698, Cut: cut}).Error()
	for _, want := range []string{"demand 1811 ", "at most 1753 ", "gslot0, ", "gslot5 and 1994 more edges"} {
		if !strings.Contains(msg, want) {
			t.Errorf("%q lacks %q", msg, want)
		}
	}
	if len(msg) > 400 {
		t.Errorf("a %d-byte error for a cut of %d edges", len(msg), len(cut))
	}
}
