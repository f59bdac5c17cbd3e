package maxflow

import (
	"errors"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// exactMaxFlow is the oracle: Edmonds-Karp over math/big.Rat on the exact
// values of the float64 capacities, so no magnitude is rounded away. +Inf
// capacities stand in as one more than the sum of the finite ones; the
// flow is unbounded when it reaches that.
func exactMaxFlow(n int, from, to []int, caps []float64, s, t int) (value *big.Rat, unbounded bool) {
	m := len(caps)
	big1 := new(big.Rat).SetInt64(1)
	for _, c := range caps {
		if !math.IsInf(c, 1) {
			big1.Add(big1, new(big.Rat).SetFloat64(c))
		}
	}
	res := make([]*big.Rat, 2*m) // 2e forward, 2e+1 reverse
	adj := make([][]int, n)
	for e, c := range caps {
		r := big1
		if !math.IsInf(c, 1) {
			r = new(big.Rat).SetFloat64(c)
		}
		res[2*e], res[2*e+1] = new(big.Rat).Set(r), new(big.Rat)
		adj[from[e]] = append(adj[from[e]], 2*e)
		adj[to[e]] = append(adj[to[e]], 2*e+1)
	}
	head := func(r int) int {
		if r%2 == 0 {
			return to[r/2]
		}
		return from[r/2]
	}
	value = new(big.Rat)
	for {
		via := make([]int, n) // residual edge into v on a shortest path
		for i := range via {
			via[i] = -1
		}
		via[s] = -2
		q := []int{s}
		for i := 0; i < len(q) && via[t] == -1; i++ {
			for _, r := range adj[q[i]] {
				if v := head(r); via[v] == -1 && res[r].Sign() > 0 {
					via[v] = r
					q = append(q, v)
				}
			}
		}
		if via[t] == -1 {
			return value, value.Cmp(big1) >= 0
		}
		var f *big.Rat
		for v := t; v != s; v = head(via[v] ^ 1) {
			if r := res[via[v]]; f == nil || r.Cmp(f) < 0 {
				f = r
			}
		}
		f = new(big.Rat).Set(f)
		for v := t; v != s; v = head(via[v] ^ 1) {
			res[via[v]].Sub(res[via[v]], f)
			res[via[v]^1].Add(res[via[v]^1], f)
		}
		value.Add(value, f)
		if value.Cmp(big1) >= 0 {
			return value, true
		}
	}
}

// mixedNetwork builds a random network whose rates span 1e-6 to 1e15
// (log-uniform), with some zero and some +Inf, and random volume caps of
// the same spread on a quarter of the edges.
func mixedNetwork(rng *rand.Rand, n, m int) *Network {
	net := NewNetwork(n, m)
	for i := 0; i < n; i++ {
		net.AddNode("")
	}
	mag := func() float64 { return math.Pow(10, -6+21*rng.Float64()) }
	for i := 0; i < m; i++ {
		u, v := rng.IntN(n), rng.IntN(n)
		if u == v {
			continue
		}
		r, vol := mag(), math.Inf(1)
		switch k := rng.IntN(50); {
		case k < 3:
			r = 0
		case k < 4:
			r = math.Inf(1)
		}
		if rng.IntN(4) == 0 {
			vol = mag()
		}
		net.AddCappedEdge(u, v, r, vol)
	}
	return net
}

// checkExact compares a solver's answer on caps with the exact oracle: the
// value to 1e-12 relatively, and the cut it returns is a minimum cut, its
// capacity (summed exactly) equal to the maximum flow to 1e-12.
func checkExact(t *testing.T, what string, net *Network, caps []float64, s, tt int, value float64, err error, sourceSide []bool) {
	t.Helper()
	from, to := make([]int, net.Edges()), make([]int, net.Edges())
	for e := range from {
		from[e], to[e], _, _ = net.Edge(e)
	}
	want, unbounded := exactMaxFlow(net.Nodes(), from, to, caps, s, tt)
	if unbounded {
		if !errors.Is(err, ErrUnbounded) {
			t.Fatalf("%s: err = %v, value %v; want ErrUnbounded", what, err, value)
		}
		return
	}
	if err != nil {
		t.Fatalf("%s: %v (exact max flow %s)", what, err, want.FloatString(9))
	}
	w, _ := want.Float64()
	if math.Abs(value-w) > 1e-12*w {
		t.Fatalf("%s: value %v, exact max flow %v", what, value, w)
	}
	if !sourceSide[s] || sourceSide[tt] {
		t.Fatalf("%s: the cut does not separate source from sink", what)
	}
	cut := new(big.Rat)
	for e := range caps {
		if sourceSide[from[e]] && !sourceSide[to[e]] {
			if math.IsInf(caps[e], 1) {
				t.Fatalf("%s: an unbounded edge %d is in the cut", what, e)
			}
			cut.Add(cut, new(big.Rat).SetFloat64(caps[e]))
		}
	}
	c, _ := cut.Float64()
	if math.Abs(c-w) > 1e-12*w {
		t.Fatalf("%s: cut capacity %v, exact max flow %v: not a minimum cut", what, c, w)
	}
}

// TestMaxFlowExactOnMixedMagnitudes is the property test against the exact
// oracle on networks mixing 1e-6 and 1e15, for every way the package runs
// its Dinic: MaxFlow (rates), MaxFlowWithin (rates and volumes at a time),
// and the bare residual-graph solve that LeastTime and the placement
// search's fast evaluator call, on a residual graph reused across solves.
func TestMaxFlowExactOnMixedMagnitudes(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 13))
	for i := 0; i < 600; i++ {
		n := 2 + rng.IntN(30)
		net := mixedNetwork(rng, n, rng.IntN(n*n/2+1)+n)
		s, tt := 0, n-1

		sol, err := net.MaxFlow(s, tt)
		var side []bool
		var v float64
		if err == nil {
			side, v = sol.SourceSide, sol.Value
			checkFlow(t, net, s, tt, sol)
		}
		checkExact(t, "MaxFlow", net, net.rate, s, tt, v, err, side)

		secs := math.Pow(10, -3+6*rng.Float64())
		caps := net.capsAt(secs, nil)
		side, v = nil, 0
		sol, err = net.MaxFlowWithin(s, tt, secs)
		if err == nil {
			side, v = sol.SourceSide, sol.Value
		}
		checkExact(t, "MaxFlowWithin", net, caps, s, tt, v, err, side)

		v, err = net.solver().maxflow(int32(s), int32(tt), net.rate)
		checkExact(t, "solver().maxflow", net, net.rate, s, tt, v, err, net.solver().reachable(int32(s)))
	}
}

func TestMaxFlowMixedMagnitudes(t *testing.T) {
	type edge struct {
		u, v int
		rate float64
	}
	// The issue's network: the second unit of flow must go back along the
	// 1e12 link, whose reverse residual (1) is 1e-12 of its capacity.
	issue := func(small, large float64) []edge {
		return []edge{{0, 2, small}, {2, 3, large}, {2, 5, small}, {5, 1, small}, {3, 1, small}, {0, 4, small}, {4, 3, small}}
	}
	cases := []struct {
		name  string
		edges []edge
		want  float64
		cut   []int
	}{
		{"flow returns along a link 1e12 times wider (issue 13)", issue(1, 1e12), 2, []int{0, 5}},
		{"flow returns along a link 1e21 times wider", issue(1e-6, 1e15), 2e-6, []int{0, 5}},
		{"flow returns along an unbounded link", issue(1, math.Inf(1)), 2, []int{0, 5}},
		{"a 1e-6 path beside a 1e15 one counts",
			[]edge{{0, 2, 1e15}, {2, 1, 1e15}, {0, 3, 1e-6}, {3, 1, 1}}, 1e15 + 1e-6, []int{0, 2}},
		{"a 1e-6 link in series with 1e15 binds", []edge{{0, 2, 1e15}, {2, 3, 1e-6}, {3, 1, 1e15}}, 1e-6, []int{1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			net := NewNetwork(6, len(tc.edges))
			for i := 0; i < 6; i++ {
				net.AddNode(string(rune('a' + i)))
			}
			for _, e := range tc.edges {
				net.AddEdge(e.u, e.v, e.rate)
			}
			sol, err := net.MaxFlow(0, 1)
			if err != nil {
				t.Fatal(err)
			}
			if sol.Value != tc.want {
				t.Errorf("value %v, want %v", sol.Value, tc.want)
			}
			if len(sol.Cut) != len(tc.cut) {
				t.Fatalf("cut %v, want %v", sol.Cut, tc.cut)
			}
			for i := range tc.cut {
				if sol.Cut[i] != tc.cut[i] {
					t.Fatalf("cut %v, want %v", sol.Cut, tc.cut)
				}
			}
			checkFlow(t, net, 0, 1, sol)
		})
	}
}
