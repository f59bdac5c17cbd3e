package maxflow

import (
	"errors"
	"fmt"
	"math"
)

// Network is a directed flow network with float64 capacities. Nodes are
// dense integers from AddNode; edges are dense integers from AddEdge, in the
// order added, which is also the order results report them in.
//
// An edge has a rate (GB/s, or any unit per second; +Inf for unbounded) and
// optionally a volume cap (GB, or the same unit): over a time T it can carry
// at most min(rate*T, volume). MaxFlow uses rates alone; MinTime uses both.
type Network struct {
	names  []string
	from   []int32
	to     []int32
	rate   []float64
	volume []float64 // +Inf when the edge has no volume cap

	// csr caches the residual graph between solves (see solver); a
	// Network is not safe for concurrent use.
	csr                *dinic
	csrEdges, csrNodes int
	capsBuf, prevCaps  []float64
}

// NewNetwork returns an empty network with room for the given sizes.
func NewNetwork(nodes, edges int) *Network {
	return &Network{
		names: make([]string, 0, nodes),
		from:  make([]int32, 0, edges), to: make([]int32, 0, edges),
		rate: make([]float64, 0, edges), volume: make([]float64, 0, edges),
	}
}

// AddNode adds a node and returns its id. The name is for results and errors.
func (n *Network) AddNode(name string) int {
	n.names = append(n.names, name)
	return len(n.names) - 1
}

// Name returns the name of node v.
func (n *Network) Name(v int) string { return n.names[v] }

// Nodes is the number of nodes.
func (n *Network) Nodes() int { return len(n.names) }

// Edges is the number of edges.
func (n *Network) Edges() int { return len(n.from) }

// Edge returns edge e's endpoints, rate and volume cap (+Inf when none).
func (n *Network) Edge(e int) (from, to int, rate, volume float64) {
	return int(n.from[e]), int(n.to[e]), n.rate[e], n.volume[e]
}

// From returns the node edge e leaves.
func (n *Network) From(e int) int { return int(n.from[e]) }

// To returns the node edge e enters.
func (n *Network) To(e int) int { return int(n.to[e]) }

// Rate returns edge e's rate.
func (n *Network) Rate(e int) float64 { return n.rate[e] }

// Volume returns edge e's volume cap (+Inf when none).
func (n *Network) Volume(e int) float64 { return n.volume[e] }

// SetRate changes edge e's rate. A search solves one network under many
// capacity settings; the residual graph the solvers keep between solves
// depends on the edges alone, so changing capacities costs no rebuild.
func (n *Network) SetRate(e int, rate float64) { n.rate[e] = rate }

// SetVolume changes edge e's volume cap (+Inf for none).
func (n *Network) SetVolume(e int, volume float64) { n.volume[e] = volume }

// Rates returns a copy of the edges' rates, indexed by edge id.
func (n *Network) Rates() []float64 { return append([]float64(nil), n.rate...) }

// Volumes returns a copy of the edges' volume caps, indexed by edge id.
func (n *Network) Volumes() []float64 { return append([]float64(nil), n.volume...) }

// SetRates sets the rates of the first len(rates) edges, which must not be
// more than Edges(), to rates (a copy Rates took); the others keep theirs.
func (n *Network) SetRates(rates []float64) { copy(n.rate[:len(rates)], rates) }

// SetVolumes sets the volume caps of the first len(volumes) edges, which
// must not be more than Edges(), to volumes; the others keep theirs.
func (n *Network) SetVolumes(volumes []float64) { copy(n.volume[:len(volumes)], volumes) }

// EdgeName returns "from->to" for edge e.
func (n *Network) EdgeName(e int) string {
	return n.names[n.from[e]] + "->" + n.names[n.to[e]]
}

// AddEdge adds an edge u->v with the given rate (capacity per unit time)
// and no volume cap, and returns its id. Bad capacities are reported by the
// solvers, not here, so building a network never fails.
func (n *Network) AddEdge(u, v int, rate float64) int {
	return n.AddCappedEdge(u, v, rate, math.Inf(1))
}

// AddCappedEdge adds an edge that carries at most min(rate*T, volume) over
// a time T: a source that holds a fixed amount of data (a CPU cache holding
// a share of the hot rows), or a consumer that needs a fixed amount.
func (n *Network) AddCappedEdge(u, v int, rate, volume float64) int {
	n.from = append(n.from, int32(u))
	n.to = append(n.to, int32(v))
	n.rate = append(n.rate, rate)
	n.volume = append(n.volume, volume)
	return len(n.from) - 1
}

// ErrUnbounded is returned when a path of unbounded edges joins s to t.
var ErrUnbounded = errors.New("unbounded flow: a path of +Inf capacities joins source and sink")

// CapacityError names an edge whose capacity is not a number >= 0.
type CapacityError struct {
	Edge  int
	Name  string
	Field string // "rate" or "volume"
	Value float64
}

func (e *CapacityError) Error() string {
	return fmt.Sprintf("edge %d (%s): %s %v is not a capacity (want a number >= 0, or +Inf for unbounded)", e.Edge, e.Name, e.Field, e.Value)
}

// BadInput marks the error as the caller's to fix.
func (e *CapacityError) BadInput() bool { return true }

func (n *Network) check(s, t int) error {
	if s < 0 || s >= len(n.names) || t < 0 || t >= len(n.names) {
		return fmt.Errorf("source %d or sink %d is not a node (have %d)", s, t, len(n.names))
	}
	if s == t {
		return fmt.Errorf("source and sink are the same node %q", n.names[s])
	}
	for e := range n.rate {
		if r := n.rate[e]; math.IsNaN(r) || r < 0 {
			return &CapacityError{e, n.EdgeName(e), "rate", r}
		}
		if v := n.volume[e]; math.IsNaN(v) || v < 0 {
			return &CapacityError{e, n.EdgeName(e), "volume", v}
		}
	}
	return nil
}

// Solution is a maximum flow: its value, the flow on every edge (indexed by
// edge id) and a minimum cut.
type Solution struct {
	Value float64
	Flow  []float64
	// SourceSide[v] is true for the nodes on the source side of the
	// minimum cut (reachable from the source in the residual network).
	SourceSide []bool
	// Cut lists the edges from the source side to the sink side: saturated
	// in every maximum flow, their capacities sum to Value.
	Cut []int
}

// MaxFlow computes a maximum flow from s to t using edge rates as
// capacities (volume caps are ignored). It is deterministic (the same
// network gives the same flows) and exact up to float64 rounding relative
// to the flow value, whatever the spread of the capacities: no edge counts
// as saturated before its residual is exactly 0, so a 1e-6 link beside
// 1e15 ones still carries its flow, and the cut's capacities sum to Value.
func (n *Network) MaxFlow(s, t int) (*Solution, error) {
	if err := n.check(s, t); err != nil {
		return nil, err
	}
	return n.solve(s, t, n.rate)
}

// MaxFlowWithin computes a maximum flow where edge e carries at most
// min(rate*T, volume) in time T seconds: the most data the network moves in T.
func (n *Network) MaxFlowWithin(s, t int, seconds float64) (*Solution, error) {
	if err := n.check(s, t); err != nil {
		return nil, err
	}
	if math.IsNaN(seconds) || seconds < 0 {
		return nil, fmt.Errorf("time %v: want seconds >= 0", seconds)
	}
	return n.solve(s, t, n.capsAt(seconds, nil))
}

func (n *Network) capsAt(seconds float64, buf []float64) []float64 {
	if cap(buf) < len(n.rate) {
		buf = make([]float64, len(n.rate))
	}
	buf = buf[:len(n.rate)]
	for e, r := range n.rate {
		c := r * seconds
		if math.IsNaN(c) { // 0 * Inf: an unbounded edge over no time
			c = 0
		}
		if n.volume[e] < c {
			c = n.volume[e]
		}
		buf[e] = c
	}
	return buf
}
