package maxflow

import (
	"fmt"
	"math"
)

// DefaultTolerance is MinTime's relative tolerance on the time it returns.
const DefaultTolerance = 1e-9

// TimedSolution is the least time a network needs to deliver a demand, and
// the flow that does it: Flow[e] is the amount edge e carries in that time
// (divide by Seconds for its average rate).
type TimedSolution struct {
	Seconds float64
	// Exact is true when Seconds came in closed form (no volume caps);
	// otherwise it is within Tolerance of the least time, relatively.
	Exact     bool
	Tolerance float64
	*Solution
}

// DemandError says a demand cannot be met in any time: the network's
// volume caps, or a zero-capacity cut, hold less than the demand.
type DemandError struct {
	Demand, Deliverable float64
	Cut                 []string // edges of the cut that limits it
}

func (e *DemandError) Error() string {
	return fmt.Sprintf("demand %g cannot be met: the network delivers at most %g in any time (limited by %v)", e.Demand, e.Deliverable, e.Cut)
}

// BadInput marks the error as the caller's to fix.
func (e *DemandError) BadInput() bool { return true }

// MinTime returns the least time T in which the network delivers demand
// from s to t, where edge e carries at most min(rate*T, volume) in time T
// (Moment section 3.2's time bisection).
//
// Without volume caps the flow grows linearly in T, so T = demand /
// maxflow(rates) exactly. With caps the deliverable amount is a concave,
// nondecreasing, piecewise-linear function of T, and T is found by
// bisection to relative tolerance tol (DefaultTolerance when tol <= 0).
func (n *Network) MinTime(s, t int, demand, tol float64) (*TimedSolution, error) {
	if err := n.check(s, t); err != nil {
		return nil, err
	}
	if math.IsNaN(demand) || math.IsInf(demand, 0) || demand <= 0 {
		return nil, fmt.Errorf("demand %v: want a finite amount > 0", demand)
	}
	if tol <= 0 {
		tol = DefaultTolerance
	}
	capped := false
	for _, v := range n.volume {
		if !math.IsInf(v, 1) {
			capped = true
			break
		}
	}
	rates, err := n.solve(s, t, n.rate)
	if err != nil && !(capped && err == ErrUnbounded) {
		return nil, err
	}
	if !capped {
		if rates.Value <= 0 {
			return nil, n.demandError(demand, rates)
		}
		secs := demand / rates.Value
		scaled := &Solution{Value: demand, Flow: make([]float64, len(rates.Flow)), SourceSide: rates.SourceSide, Cut: rates.Cut}
		for e, f := range rates.Flow {
			scaled.Flow[e] = f * secs
		}
		return &TimedSolution{Seconds: secs, Exact: true, Tolerance: 0, Solution: scaled}, nil
	}
	// With infinite time only the volumes limit the flow.
	// An unbounded answer here means a path of rate-only edges: given time,
	// it delivers any demand.
	limit, err := n.solve(s, t, n.capsAt(math.Inf(1), nil))
	if err != nil && err != ErrUnbounded {
		return nil, err
	}
	if err == nil && limit.Value < demand*(1-tol) {
		return nil, n.demandError(demand, limit)
	}
	// Bracket: rates alone give a lower bound on T (caps only slow it).
	lo := 0.0
	if rates != nil && rates.Value > 0 && !math.IsInf(rates.Value, 1) {
		lo = demand / rates.Value
	}
	hi := math.Max(lo, 1e-9)
	buf := make([]float64, len(n.rate))
	deliver := func(sec float64) (*Solution, error) {
		return n.solve(s, t, n.capsAt(sec, buf))
	}
	var best *Solution
	for i := 0; ; i++ {
		sol, err := deliver(hi)
		if err != nil {
			return nil, err
		}
		if sol.Value >= demand*(1-tol/4) {
			best = sol
			break
		}
		if i > 2000 {
			return nil, n.demandError(demand, sol)
		}
		lo, hi = hi, hi*2
	}
	for hi-lo > tol*hi {
		mid := lo + (hi-lo)/2
		sol, err := deliver(mid)
		if err != nil {
			return nil, err
		}
		if sol.Value >= demand*(1-tol/4) {
			hi, best = mid, sol
		} else {
			lo = mid
		}
	}
	return &TimedSolution{Seconds: hi, Tolerance: tol, Solution: best}, nil
}

func (n *Network) demandError(demand float64, sol *Solution) error {
	e := &DemandError{Demand: demand, Deliverable: sol.Value}
	for _, c := range sol.Cut {
		e.Cut = append(e.Cut, n.EdgeName(c))
	}
	return e
}
