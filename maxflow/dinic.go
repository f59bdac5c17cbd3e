package maxflow

import "math"

// Dinic's algorithm on a compressed residual graph. Chosen over
// push-relabel because the networks gnnplan solves are shallow (storage ->
// a few interconnect levels -> compute -> sink), where Dinic needs few
// phases; BenchmarkMaxFlowRandom compares it with gonum's Dinic on a
// 100k-node / 1M-edge random network (docs/benchmarks.md).
//
// Residual edge 2e is edge e, 2e+1 its reverse. Every loop visits edges in
// a fixed order, so results are deterministic.
//
// A residual edge is open while its residual is > 0, with no tolerance, so
// no edge is lost next to larger ones (a reverse residual of 1 on a 1e12
// link still carries flow back). Saturation is exact: a push subtracts the
// bottleneck f from residuals >= f, which leaves exactly 0 on the
// bottleneck edges and something > 0 on the others (x-f rounds to 0
// only when x == f), and the opposite residuals grow by f. So Dinic's
// argument holds for float64 as it does for reals: each push closes an
// edge of the level graph, each phase lengthens the shortest path, and it
// ends. Rounding leaves residuals that are off by ~1e-16 of the flow
// through the edge; they can open a path of dust, which costs a push, never
// a wrong cut: when no path is open, every cut edge has residual exactly 0.
type dinic struct {
	n     int
	head  []int32 // CSR: residual edges of node u are adj[head[u]:head[u+1]]
	adj   []int32
	to    []int32
	res   []float64
	level []int32
	it    []int32
	queue []int32
	stack []int32
	seen  []bool
}

func (n *Network) solve(s, t int, caps []float64) (*Solution, error) {
	d := n.solver()
	value, err := d.maxflow(int32(s), int32(t), caps)
	if err != nil {
		return nil, err
	}
	sol := &Solution{Value: value, Flow: make([]float64, len(caps))}
	for e := range caps {
		// The reverse residual holds exactly what was pushed net, also on
		// unbounded edges where caps-res would be Inf-Inf.
		sol.Flow[e] = d.res[2*e+1]
	}
	sol.SourceSide = append([]bool(nil), d.reachable(int32(s))...)
	for e := range caps {
		if sol.SourceSide[n.from[e]] && !sol.SourceSide[n.to[e]] {
			sol.Cut = append(sol.Cut, e)
		}
	}
	return sol, nil
}

// solver returns the network's residual graph, built on first use and kept
// until an edge is added: a search solves one network many times with
// different capacities, and rebuilding the adjacency each time would cost
// more than the flow.
func (n *Network) solver() *dinic {
	if n.csr == nil || n.csrEdges != len(n.from) || n.csrNodes != len(n.names) {
		n.csr = newDinic(n)
		n.csrEdges, n.csrNodes = len(n.from), len(n.names)
	}
	return n.csr
}

func newDinic(n *Network) *dinic {
	nn, m := len(n.names), len(n.from)
	d := &dinic{
		n: nn, head: make([]int32, nn+1), adj: make([]int32, 2*m),
		to: make([]int32, 2*m), res: make([]float64, 2*m),
		level: make([]int32, nn), it: make([]int32, nn), queue: make([]int32, 0, nn), seen: make([]bool, nn),
	}
	for e := 0; e < m; e++ {
		u, v := n.from[e], n.to[e]
		d.to[2*e], d.to[2*e+1] = v, u
		d.head[u+1]++
		d.head[v+1]++
	}
	for u := 0; u < nn; u++ {
		d.head[u+1] += d.head[u]
	}
	fill := append([]int32(nil), d.head[:nn]...)
	for e := 0; e < m; e++ {
		u, v := n.from[e], n.to[e]
		d.adj[fill[u]] = int32(2 * e)
		fill[u]++
		d.adj[fill[v]] = int32(2*e + 1)
		fill[v]++
	}
	return d
}

// maxflow resets the residuals to caps and runs Dinic from s to t.
func (d *dinic) maxflow(s, t int32, caps []float64) (float64, error) {
	for e, c := range caps {
		d.res[2*e], d.res[2*e+1] = c, 0
	}
	return d.run(s, t)
}

// raise lifts the capacities from old to caps (each at least its old
// value), keeps the flow of value flow found under old, and augments it to
// a maximum flow under caps.
func (d *dinic) raise(s, t int32, old, caps []float64, flow float64) (float64, error) {
	for e, c := range caps {
		if c != old[e] {
			d.res[2*e] += c - old[e]
		}
	}
	more, err := d.run(s, t)
	return flow + more, err
}

func (d *dinic) run(s, t int32) (float64, error) {
	total := 0.0
	for d.bfs(s, t) {
		copy(d.it, d.head[:d.n])
		for {
			f := d.augment(s, t)
			if f == 0 {
				break
			}
			if math.IsInf(f, 1) {
				return 0, ErrUnbounded
			}
			total += f
		}
	}
	return total, nil
}

// bfs labels levels from s over unsaturated residual edges and reports
// whether t was reached.
func (d *dinic) bfs(s, t int32) bool {
	for i := range d.level {
		d.level[i] = -1
	}
	d.level[s] = 0
	q := append(d.queue[:0], s)
	for i := 0; i < len(q); i++ {
		u := q[i]
		for _, e := range d.adj[d.head[u]:d.head[u+1]] {
			v := d.to[e]
			if d.level[v] < 0 && d.res[e] > 0 {
				d.level[v] = d.level[u] + 1
				q = append(q, v)
			}
		}
	}
	d.queue = q
	return d.level[t] >= 0
}

// augment finds one s-t path in the level graph with the current-arc
// pointers, pushes its bottleneck and returns it (0 when the blocking flow
// is complete). Dead ends are pruned by dropping their level.
func (d *dinic) augment(s, t int32) float64 {
	st := d.stack[:0]
	u := s
	for {
		if u == t {
			f := math.Inf(1)
			for _, e := range st {
				if d.res[e] < f {
					f = d.res[e]
				}
			}
			if math.IsInf(f, 1) {
				d.stack = st
				return f
			}
			for _, e := range st {
				d.res[e] -= f
				d.res[e^1] += f
			}
			d.stack = st
			return f
		}
		advanced := false
		for d.it[u] < d.head[u+1] {
			e := d.adj[d.it[u]]
			v := d.to[e]
			if d.res[e] > 0 && d.level[v] == d.level[u]+1 {
				st = append(st, e)
				u = v
				advanced = true
				break
			}
			d.it[u]++
		}
		if advanced {
			continue
		}
		d.level[u] = -1 // no way on from u in this phase
		if len(st) == 0 {
			d.stack = st
			return 0
		}
		e := st[len(st)-1]
		st = st[:len(st)-1]
		u = d.to[e^1]
		d.it[u]++
	}
}

// reachable marks the nodes reachable from s in the residual graph (the
// source side of a minimum cut) in d.seen and returns it.
func (d *dinic) reachable(s int32) []bool {
	seen := d.seen
	for i := range seen {
		seen[i] = false
	}
	seen[s] = true
	q := append(d.queue[:0], s)
	for i := 0; i < len(q); i++ {
		u := q[i]
		for _, e := range d.adj[d.head[u]:d.head[u+1]] {
			if v := d.to[e]; !seen[v] && d.res[e] > 0 {
				seen[v] = true
				q = append(q, v)
			}
		}
	}
	return seen
}
