package maxflow

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
)

// DefaultTolerance is MinTimeBisect's relative tolerance on the time.
const DefaultTolerance = 1e-9

// newtonMaxFlows bounds the max flows of one Newton search. Newton's
// iterates visit distinct minimum cuts, 2-5 on machine graphs; running
// into the bound means floating point kept it from settling.
const newtonMaxFlows = 10000

// ErrNoConvergence is returned (wrapped) when a least-time search stops
// without an answer it can vouch for.
var ErrNoConvergence = errors.New("the least-time search did not converge")

// TimedSolution is the least time a network needs to deliver a demand, and
// the flow that does it: Flow[e] is the amount edge e carries in that time
// (divide by Seconds for its average rate).
type TimedSolution struct {
	Seconds float64
	// Exact is true when Seconds is exact up to floating point (closed
	// form, Newton's method, or a least time of 0 found by bisection);
	// false when it came from bisection, then within Tolerance of the
	// least time, relatively.
	Exact     bool
	Tolerance float64
	// MaxFlows counts the max-flow solves it took.
	MaxFlows int
	*Solution
}

// DemandError says a demand cannot be met in any time: the network's
// volume caps, or a zero-capacity cut, hold less than the demand.
type DemandError struct {
	Demand, Deliverable float64
	Cut                 []string // edges of the cut that limits it
}

func (e *DemandError) Error() string {
	return fmt.Sprintf("demand %.4g cannot be met: the network delivers at most %.4g in any time (limited by %s)", e.Demand, e.Deliverable, listSome(e.Cut, maxCutNamed))
}

// maxCutNamed is how many of a cut's edges an error names: enough to
// see which links bind, few enough for one line on any machine.
const maxCutNamed = 6

// listSome joins the first n of names, saying how many more there are.
func listSome(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more edges", strings.Join(names[:n], ", "), len(names)-n)
}

// BadInput marks the error as the caller's to fix.
func (e *DemandError) BadInput() bool { return true }

// MinTime returns the least time T in which the network delivers demand
// from s to t, where edge e carries at most min(rate*T, volume) in time T
// (Moment section 3.2's time search).
//
// Without volume caps the flow grows linearly in T, so T = demand /
// maxflow(rates) in closed form. With caps, F(T) (the most the network
// delivers in T) is the minimum over cuts of sum min(rate*T, volume): a
// concave, nondecreasing, piecewise-linear function. MinTime runs Newton's
// method on it from below: at each T it takes a minimum cut and jumps to
// the T at which that cut's capacity reaches the demand. Every step stays
// at or below the least time and uses a new cut, so it ends after finitely
// many max flows (2-5 on machine graphs) with the exact answer, where
// bisection (MinTimeBisect) needs ~35 for 1e-9. Should floating point keep
// it from settling, it returns an error wrapping ErrNoConvergence rather
// than a time it cannot vouch for.
func (n *Network) MinTime(s, t int, demand float64) (*TimedSolution, error) {
	if err := n.checkDemand(s, t, demand); err != nil {
		return nil, err
	}
	secs, flows, err := n.leastTime(s, t, demand, 0, math.Inf(1), newtonMaxFlows)
	if err != nil {
		return nil, err
	}
	sol, err := n.solve(s, t, n.capsAt(secs, nil))
	if err != nil {
		return nil, err
	}
	return &TimedSolution{Seconds: secs, Exact: true, MaxFlows: flows + 1, Solution: sol}, nil
}

func (n *Network) checkDemand(s, t int, demand float64) error {
	if err := n.check(s, t); err != nil {
		return err
	}
	if math.IsNaN(demand) || math.IsInf(demand, 0) || demand <= 0 {
		return fmt.Errorf("demand %v: want a finite amount > 0", demand)
	}
	return nil
}

// LeastTime is MinTime without the flow: the least time only, and how many
// max flows it took. It allocates nothing after the network's first solve,
// for searches that evaluate many capacity settings of one network.
func (n *Network) LeastTime(s, t int, demand float64) (float64, error) {
	if err := n.checkDemand(s, t, demand); err != nil {
		return 0, err
	}
	secs, _, err := n.leastTime(s, t, demand, 0, math.Inf(1), newtonMaxFlows)
	return secs, err
}

// LeastTimeBelow is LeastTime for a search that only cares about times
// below cutoff: Newton's iterates are lower bounds, so once one reaches
// the cutoff it stops and returns it with below = false. Unlike LeastTime
// it does not check s, t, demand or the capacities (a pass over every
// edge): it is for a search that sets only capacities it knows are valid.
func (n *Network) LeastTimeBelow(s, t int, demand, cutoff float64) (secs float64, below bool, err error) {
	secs, _, err = n.leastTime(s, t, demand, 0, cutoff, newtonMaxFlows)
	return secs, err == nil && secs < cutoff, err
}

// LeastTimeFrom is LeastTimeBelow given a lower bound from > 0 on the
// least time (a relaxation's): Newton starts there instead of at the
// rates-only max flow's bound, which saves that max flow. A bound a
// rounding error above the least time comes back as the answer. Like
// LeastTimeBelow it checks nothing.
func (n *Network) LeastTimeFrom(s, t int, demand, from, cutoff float64) (float64, error) {
	secs, _, err := n.leastTime(s, t, demand, from, cutoff, newtonMaxFlows)
	return secs, err
}

// leastTime runs Newton's method with at most maxFlows max flows and
// returns the least time and the max flows it took. With from > 0 on a
// network with volume caps, Newton starts at from, which must not exceed
// the least time (beyond rounding).
func (n *Network) leastTime(s, t int, demand, from, cutoff float64, maxFlows int) (float64, int, error) {
	d := n.solver()
	if cap(n.capsBuf) < len(n.rate) {
		n.capsBuf = make([]float64, len(n.rate))
	}
	capped := false
	for _, v := range n.volume {
		if !math.IsInf(v, 1) {
			capped = true
			break
		}
	}
	// Rates alone bound the flow from above, so demand / maxflow(rates) is
	// a lower bound on T, and exact without volume caps.
	var f float64
	var err error
	T := 1e-12 // an unbounded path of rates: start just above zero
	switch {
	case from > 0 && capped:
		if T = from; T >= cutoff {
			return T, 0, nil
		}
	default:
		f, err = d.maxflow(int32(s), int32(t), n.rate)
	}
	switch {
	case from > 0 && capped:
	case err == ErrUnbounded:
		if !capped {
			return 0, 1, err
		}
	case err != nil:
		return 0, 1, err
	case f <= 0:
		return 0, 1, n.cutDemandError(d.reachable(int32(s)), demand)
	case !capped:
		return demand / f, 1, nil
	default:
		T = demand / f
	}
	// Newton from below, starting at T > 0 so that unbounded-rate edges
	// already carry their whole volume. T only grows, and with it every
	// capacity, so each step after the first keeps the flow it has and
	// augments from there (warm start).
	if cap(n.prevCaps) < len(n.rate) {
		n.prevCaps = make([]float64, len(n.rate))
	}
	prev := n.prevCaps[:len(n.rate)]
	for flows := 2; flows <= maxFlows; flows++ {
		caps := n.capsAt(T, n.capsBuf)
		if flows == 2 {
			f, err = d.maxflow(int32(s), int32(t), caps)
		} else {
			f, err = d.raise(int32(s), int32(t), prev, caps, f)
		}
		copy(prev, caps)
		if err == ErrUnbounded {
			return T, flows, nil
		}
		if err != nil {
			return 0, flows, err
		}
		if f >= demand*(1-1e-12) {
			return T, flows, nil
		}
		// The minimum cut's capacity as a function of time bounds F from
		// above; where it reaches the demand is the next T (<= least T).
		seen := d.reachable(int32(s))
		next := n.cutReaches(seen, demand)
		if math.IsInf(next, 1) {
			return 0, flows, n.cutDemandError(seen, demand)
		}
		if next <= T*(1+1e-15) {
			// Floating point: no further progress. The cut says the
			// demand arrives at T; the flow must agree up to rounding.
			if f < demand*(1-1e-9) {
				return 0, flows, fmt.Errorf("newton's method stalled at %g s with %g of demand %g delivered: %w", T, f, demand, ErrNoConvergence)
			}
			return T, flows, nil
		}
		T = next
		if T >= cutoff {
			return T, flows, nil
		}
	}
	return 0, maxFlows, fmt.Errorf("newton's method after %d max flows: %g of demand %g delivered in %g s: %w",
		maxFlows, f, demand, T, ErrNoConvergence)
}

// cutReaches returns the least T >= 0 at which the cut (edges from seen to
// unseen) carries demand, sum over its edges of min(rate*T, volume); +Inf
// if its volumes sum to less.
func (n *Network) cutReaches(seen []bool, demand float64) float64 {
	type piece struct{ at, rate, volume float64 }
	var ps []piece
	fixed, uncapped := 0.0, 0.0
	for e := range n.from {
		if !seen[n.from[e]] || seen[n.to[e]] {
			continue
		}
		r, v := n.rate[e], n.volume[e]
		switch {
		case r == 0 || v == 0:
		case math.IsInf(r, 1):
			fixed += v // its whole volume at any T > 0
		case math.IsInf(v, 1):
			uncapped += r
		default:
			ps = append(ps, piece{v / r, r, v})
		}
	}
	if math.IsInf(fixed, 1) {
		return 0
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].at < ps[j].at })
	// Before breakpoint i the capped edges i.. still grow at their rates.
	// Suffix sums, not a running difference: subtracting rates one by one
	// leaves rounding dust that looks like a tiny positive slope.
	suffix := make([]float64, len(ps)+1)
	for i := len(ps) - 1; i >= 0; i-- {
		suffix[i] = suffix[i+1] + ps[i].rate
	}
	for i, p := range ps {
		slope := uncapped + suffix[i]
		if fixed+slope*p.at >= demand {
			return math.Max((demand-fixed)/slope, 0)
		}
		fixed += p.volume
	}
	// Volumes that add up to the demand but for rounding (shares of one
	// demand summed in another order) meet it, as a flow within the same
	// relative tolerance does in leastTime.
	if fixed >= demand*(1-1e-12) {
		if len(ps) > 0 {
			return ps[len(ps)-1].at
		}
		return 0
	}
	if uncapped > 0 {
		return (demand - fixed) / uncapped
	}
	return math.Inf(1)
}

func (n *Network) cutDemandError(seen []bool, demand float64) error {
	e := &DemandError{Demand: demand}
	for i := range n.from {
		if seen[n.from[i]] && !seen[n.to[i]] {
			if n.rate[i] > 0 {
				e.Deliverable += n.volume[i]
			}
			e.Cut = append(e.Cut, n.EdgeName(i))
		}
	}
	return e
}

// MinTimeBisect is MinTime by bisection on T to relative tolerance tol
// (DefaultTolerance when tol <= 0): the method Moment's planner uses. It
// serves as a cross-check of MinTime in tests. When the demand arrives in
// any time > 0 (unbounded rates from volume caps), the least time is 0 and
// the flow is the one at the smallest positive time.
func (n *Network) MinTimeBisect(s, t int, demand, tol float64) (*TimedSolution, error) {
	if err := n.checkDemand(s, t, demand); err != nil {
		return nil, err
	}
	if tol <= 0 {
		tol = DefaultTolerance
	}
	// T meets the demand when F(T) >= want; the same test decides the
	// limit, so a demand the network meets only in the limit is refused
	// rather than chased to T = +Inf.
	want := demand * (1 - tol/4)
	flows := 0
	meets := func(T float64) (*Solution, bool, error) {
		sol, err := n.solve(s, t, n.capsAt(T, nil))
		flows++
		if err == ErrUnbounded {
			return sol, true, nil
		}
		if err != nil {
			return nil, false, err
		}
		return sol, sol.Value >= want, nil
	}
	limit, err := n.solve(s, t, n.capsAt(math.Inf(1), nil))
	flows++
	if err != nil && err != ErrUnbounded {
		return nil, err
	}
	if err == nil && limit.Value < want {
		return nil, n.demandError(demand, limit)
	}
	lo, hi := 0.0, 1e-9
	var best *Solution
	for {
		sol, ok, err := meets(hi)
		if err != nil {
			return nil, err
		}
		if ok {
			best = sol
			break
		}
		if math.IsInf(hi, 1) {
			return nil, fmt.Errorf("bisection: no finite time delivers %g though the limit does: %w", demand, ErrNoConvergence)
		}
		lo, hi = hi, hi*2
	}
	if lo == 0 {
		// The least time may be 0, where relative tolerance never holds.
		sol, ok, err := meets(math.SmallestNonzeroFloat64)
		if err != nil {
			return nil, err
		}
		if ok {
			return &TimedSolution{Seconds: 0, Exact: true, MaxFlows: flows, Solution: sol}, nil
		}
	}
	for hi-lo > tol*hi {
		mid := lo + (hi-lo)/2
		if mid <= lo || mid >= hi {
			break // adjacent floats: as close as float64 gets
		}
		sol, ok, err := meets(mid)
		if err != nil {
			return nil, err
		}
		if ok {
			hi, best = mid, sol
		} else {
			lo = mid
		}
	}
	return &TimedSolution{Seconds: hi, Tolerance: tol, MaxFlows: flows, Solution: best}, nil
}

func (n *Network) demandError(demand float64, sol *Solution) error {
	e := &DemandError{Demand: demand, Deliverable: sol.Value}
	for _, c := range sol.Cut {
		e.Cut = append(e.Cut, n.EdgeName(c))
	}
	return e
}
