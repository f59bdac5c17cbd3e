package maxflow

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/graph/network"
	"gonum.org/v1/gonum/graph/simple"
)

// randomNetwork builds a random network of n nodes and about m edges with
// capacities in [0, 100), some zero, with parallel and antiparallel edges.
func randomNetwork(rng *rand.Rand, n, m int) *Network {
	net := NewNetwork(n, m)
	for i := 0; i < n; i++ {
		net.AddNode("")
	}
	for i := 0; i < m; i++ {
		u, v := rng.IntN(n), rng.IntN(n)
		if u == v {
			continue
		}
		c := rng.Float64() * 100
		if rng.IntN(10) == 0 {
			c = 0
		}
		net.AddEdge(u, v, c)
	}
	return net
}

// gonumMaxFlow solves the same network with gonum (parallel edges summed,
// as gonum's simple graphs hold one edge per ordered pair).
func gonumMaxFlow(net *Network, s, t int) float64 {
	g := simple.NewWeightedDirectedGraph(0, 0)
	for v := 0; v < net.Nodes(); v++ {
		g.AddNode(simple.Node(v))
	}
	sum := map[[2]int]float64{}
	for e := 0; e < net.Edges(); e++ {
		u, v, r, _ := net.Edge(e)
		sum[[2]int{u, v}] += r
	}
	for k, c := range sum {
		g.SetWeightedEdge(simple.WeightedEdge{F: simple.Node(k[0]), T: simple.Node(k[1]), W: c})
	}
	return network.MaxFlowDinic(g, simple.Node(s), simple.Node(t), 1e-12)
}

func checkFlow(t *testing.T, net *Network, s, tt int, sol *Solution) {
	t.Helper()
	const tol = 1e-6
	bal := make([]float64, net.Nodes())
	for e := 0; e < net.Edges(); e++ {
		u, v, r, _ := net.Edge(e)
		f := sol.Flow[e]
		if f < -tol || f > r+tol*math.Max(1, r) {
			t.Fatalf("edge %d flow %v outside [0, %v]", e, f, r)
		}
		bal[u] -= f
		bal[v] += f
	}
	for v, b := range bal {
		if v == s || v == tt {
			continue
		}
		if math.Abs(b) > tol*math.Max(1, sol.Value) {
			t.Fatalf("node %d: inflow - outflow = %v (conservation broken)", v, b)
		}
	}
	if math.Abs(bal[tt]-sol.Value) > tol*math.Max(1, sol.Value) {
		t.Fatalf("sink receives %v, value says %v", bal[tt], sol.Value)
	}
	cut := 0.0
	for _, e := range sol.Cut {
		_, _, r, _ := net.Edge(e)
		cut += r
	}
	if math.Abs(cut-sol.Value) > tol*math.Max(1, sol.Value) {
		t.Fatalf("min cut capacity %v != flow value %v", cut, sol.Value)
	}
	if !sol.SourceSide[s] || sol.SourceSide[tt] {
		t.Fatalf("cut does not separate source from sink")
	}
}

// TestMaxFlowMatchesGonumOnRandomNetworks is the property test: on 1000
// random networks the value equals gonum's MaxFlowDinic and the capacity
// of the returned cut, and flows respect capacities and conservation.
func TestMaxFlowMatchesGonumOnRandomNetworks(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 1000; i++ {
		n := 2 + rng.IntN(40)
		net := randomNetwork(rng, n, rng.IntN(n*n/2+1))
		s, tt := 0, n-1
		sol, err := net.MaxFlow(s, tt)
		if err != nil {
			t.Fatalf("network %d: %v", i, err)
		}
		want := gonumMaxFlow(net, s, tt)
		if math.Abs(sol.Value-want) > 1e-9*math.Max(1, want) {
			t.Fatalf("network %d (%d nodes, %d edges): value %v, gonum %v", i, n, net.Edges(), sol.Value, want)
		}
		checkFlow(t, net, s, tt, sol)
	}
}

func TestMaxFlowIsDeterministic(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	net := randomNetwork(rng, 200, 3000)
	a, _ := net.MaxFlow(0, 199)
	b, _ := net.MaxFlow(0, 199)
	for e := range a.Flow {
		if a.Flow[e] != b.Flow[e] {
			t.Fatalf("edge %d: flow %v then %v", e, a.Flow[e], b.Flow[e])
		}
	}
}

func TestMaxFlowSmallCases(t *testing.T) {
	inf := math.Inf(1)
	cases := []struct {
		name    string
		edges   [][3]float64 // from, to, rate
		want    float64
		cut     []int
		wantErr error
	}{
		{"a single edge", [][3]float64{{0, 1, 5}}, 5, []int{0}, nil},
		{"the narrower of two links in series binds", [][3]float64{{0, 2, 24}, {2, 1, 6}}, 6, []int{1}, nil},
		{"parallel links add", [][3]float64{{0, 2, 3}, {0, 2, 4}, {2, 1, inf}}, 7, []int{0, 1}, nil},
		{"a shared uplink caps two devices", [][3]float64{{0, 2, 6}, {0, 3, 6}, {2, 4, 24}, {3, 4, 24}, {4, 1, 10}}, 10, []int{4}, nil},
		{"no path", [][3]float64{{1, 0, 5}}, 0, nil, nil},
		{"unbounded path", [][3]float64{{0, 2, inf}, {2, 1, inf}}, 0, nil, ErrUnbounded},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			net := NewNetwork(0, 0)
			for i := 0; i < 5; i++ {
				net.AddNode(string(rune('a' + i)))
			}
			for _, e := range tc.edges {
				net.AddEdge(int(e[0]), int(e[1]), e[2])
			}
			sol, err := net.MaxFlow(0, 1)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if sol.Value != tc.want {
				t.Errorf("value %v, want %v", sol.Value, tc.want)
			}
			if len(sol.Cut) != len(tc.cut) {
				t.Errorf("cut %v, want %v", sol.Cut, tc.cut)
			}
			for i := range tc.cut {
				if i < len(sol.Cut) && sol.Cut[i] != tc.cut[i] {
					t.Errorf("cut %v, want %v", sol.Cut, tc.cut)
				}
			}
		})
	}
}

func TestMaxFlowRejectsBadCapacities(t *testing.T) {
	for _, c := range []float64{-1, math.NaN()} {
		net := NewNetwork(2, 1)
		net.AddNode("s")
		net.AddNode("t")
		net.AddEdge(0, 1, c)
		_, err := net.MaxFlow(0, 1)
		var ce *CapacityError
		if !errors.As(err, &ce) || ce.Field != "rate" {
			t.Errorf("capacity %v: err = %v, want a CapacityError on rate", c, err)
		}
	}
}

func TestMinTime(t *testing.T) {
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
		exact   bool
		wantErr bool
	}{
		{"rates only: demand over max flow", []edge{{0, 2, 10, inf}, {2, 1, 4, inf}}, 100, 25, true, false},
		{"a volume-capped cache helps until it runs dry", // SSD 4 GB/s + cache 100 GB/s holding 20 GB
			[]edge{{0, 2, 4, inf}, {0, 3, 100, 20}, {2, 1, inf, inf}, {3, 1, inf, inf}}, 100, 20, false, false},
		{"each consumer needs its share: the slower one sets the time", // two GPUs, 50 GB each, links 10 and 5 GB/s
			[]edge{{0, 2, 10, inf}, {0, 3, 5, inf}, {2, 1, inf, 50}, {3, 1, inf, 50}}, 100, 10, false, false},
		{"volumes smaller than the demand", []edge{{0, 2, 10, 30}, {2, 1, 10, inf}}, 100, 0, false, true},
		{"zero-capacity path", []edge{{0, 2, 0, inf}, {2, 1, 10, inf}}, 100, 0, false, true},
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
			sol, err := net.MinTime(0, 1, tc.demand)
			if tc.wantErr {
				var de *DemandError
				if !errors.As(err, &de) {
					t.Fatalf("err = %v, want a DemandError", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(sol.Seconds-tc.want) > 1e-8*tc.want {
				t.Errorf("T = %v, want %v", sol.Seconds, tc.want)
			}
			if math.Abs(sol.Value-tc.demand) > 1e-6*tc.demand {
				t.Errorf("delivered %v, want %v", sol.Value, tc.demand)
			}
			// Less time would not do: the answer is the least time.
			under, _ := net.MaxFlowWithin(0, 1, sol.Seconds*(1-1e-6))
			if under.Value >= tc.demand {
				t.Errorf("%v s already delivers the demand; %v s is not the least time", sol.Seconds*(1-1e-6), sol.Seconds)
			}
		})
	}
}

// BenchmarkMaxFlowRandom compares the solver with gonum's MaxFlowDinic,
// side by side on the same random networks (sources and sinks joined to
// many nodes so the flow is large), solve time only: 10k nodes / 100k
// edges, and the 100k-node / 1M-edge network of the issue.
func BenchmarkMaxFlowRandom(b *testing.B) {
	for _, size := range []struct{ n, m int }{{10_000, 100_000}, {100_000, 1_000_000}} {
		rng := rand.New(rand.NewPCG(42, 42))
		net := randomNetwork(rng, size.n, size.m-2*size.n/100)
		for i := 0; i < size.n/100; i++ {
			net.AddEdge(0, 2+rng.IntN(size.n-2), 50)
			net.AddEdge(2+rng.IntN(size.n-2), 1, 50)
		}
		name := fmt.Sprintf("%dk-nodes-%dk-edges", size.n/1000, size.m/1000)
		var want float64
		b.Run(name+"/gnnplan", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				sol, err := net.MaxFlow(0, 1)
				if err != nil {
					b.Fatal(err)
				}
				want = sol.Value
			}
		})
		b.Run(name+"/gonum", func(b *testing.B) {
			g := simple.NewWeightedDirectedGraph(0, 0)
			for v := 0; v < net.Nodes(); v++ {
				g.AddNode(simple.Node(v))
			}
			sum := map[[2]int]float64{}
			for e := 0; e < net.Edges(); e++ {
				u, v, r, _ := net.Edge(e)
				sum[[2]int{u, v}] += r
			}
			for k, c := range sum {
				g.SetWeightedEdge(simple.WeightedEdge{F: simple.Node(k[0]), T: simple.Node(k[1]), W: c})
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				got := network.MaxFlowDinic(g, simple.Node(0), simple.Node(1), 1e-12)
				if want != 0 && math.Abs(got-want) > 1e-6*want {
					b.Fatalf("gonum %v, gnnplan %v", got, want)
				}
			}
		})
	}
}

// TestMinTimeNewtonMatchesBisection: on random networks with volume caps on
// some source and sink edges, Newton's method finds the time bisection
// converges to, in a handful of max flows.
func TestMinTimeNewtonMatchesBisection(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	checked := 0
	for i := 0; i < 300; i++ {
		n := 4 + rng.IntN(20)
		net := randomNetwork(rng, n, rng.IntN(n*n/3+1)+n)
		for j := 0; j < 3; j++ {
			net.AddCappedEdge(0, 2+rng.IntN(n-2), 1+rng.Float64()*50, 10+rng.Float64()*100)
			net.AddCappedEdge(2+rng.IntN(n-2), 1, math.Inf(1), 10+rng.Float64()*100)
		}
		demand := 20 + rng.Float64()*100
		bis, errB := net.MinTimeBisect(0, 1, demand, 1e-10)
		newton, errN := net.MinTime(0, 1, demand)
		var deB, deN *DemandError
		if errors.As(errB, &deB) != errors.As(errN, &deN) {
			t.Fatalf("network %d: bisection err %v, Newton err %v", i, errB, errN)
		}
		if errB != nil {
			continue
		}
		if errN != nil {
			t.Fatalf("network %d: %v", i, errN)
		}
		if math.Abs(bis.Seconds-newton.Seconds) > 1e-8*bis.Seconds {
			t.Fatalf("network %d: bisection %v s, Newton %v s", i, bis.Seconds, newton.Seconds)
		}
		if newton.MaxFlows > 20 {
			t.Errorf("network %d: Newton took %d max flows", i, newton.MaxFlows)
		}
		// Started from any lower bound (as the placement search starts a
		// subtree from its parent's bound), Newton ends at the same time.
		from := newton.Seconds * rng.Float64()
		if got, err := net.LeastTimeFrom(0, 1, demand, from, math.Inf(1)); err != nil || math.Abs(got-newton.Seconds) > 1e-9*newton.Seconds {
			t.Fatalf("network %d: from %v s: %v s, %v; want %v s", i, from, got, err, newton.Seconds)
		}
		checked++
	}
	if checked < 100 {
		t.Fatalf("only %d feasible networks checked", checked)
	}
}
