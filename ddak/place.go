package ddak

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gnnplan/gnnplan/internal/hugepage"

	"github.com/gnnplan/gnnplan/ddak/layout"

	"github.com/gnnplan/gnnplan/topology"
)

// Priority is the formula DDAK ranks the bins of a tier by; the bin with
// the lowest priority takes the next pool of vertices.
type Priority = layout.Priority

// The two priorities of docs/architecture.md section 7. With r = access / target (the
// bin's accesses so far over what it should get) and f = used / capacity:
const (
	// PrioritySum is r + f, the formula of Moment's public code: an empty
	// bin still ranks by traffic, and with ample capacity (SSDs) the
	// traffic term decides.
	PrioritySum Priority = "sum"
	// PriorityProduct is r x f, the formula of Moment's paper (eq. 2).
	PriorityProduct Priority = "product"
	// PriorityNeed ranks a bin by the traffic it still lacks per row it
	// still has free, (expected - access) / (capacity - used), neediest
	// first: the hottest rows left go to the bin that must serve the most
	// traffic with the room it has left. Each step evens those densities
	// out, and the tier's remaining traffic reaches 0 as its rows run out,
	// so every bin ends near its target whether its room is ample or tight
	// (issue 13: with unequal targets and nearly full SSDs the sum misses by
	// 20-90%, this by under 5%).
	PriorityNeed Priority = "need"
)

// Priorities lists the valid priorities, the default first (for a flag's
// validation and help).
func Priorities() []Priority { return []Priority{PriorityNeed, PrioritySum, PriorityProduct} }

// DefaultPriority is the priority whose per-bin traffic lands closest to the
// targets on skewed hotness (TestDefaultPriorityIsTheCloser and
// TestTargetsWithNearlyFullSSDs show it). Of the paper's two, the sum is the
// closer (the product leaves the SSD bins' traffic far from target, because
// r x f can be made small either by few accesses or by few rows, so bins that
// took hot pools early are paid back with few cold rows rather than with
// little traffic), but both ignore how much room a bin has left, and miss
// targets by 20% and more when the SSDs are nearly full; the need does not.
const DefaultPriority = PriorityNeed

// DefaultPool is how many vertices one DDAK decision places (Moment's n).
const DefaultPool = 100

// stepShare caps the traffic of one pooled decision at this share of the
// smallest traffic a bin of the tier expects. On skewed hotness the head
// is so hot that a pool of 100 of the hottest vertices can carry a third
// of all accesses, and whichever bin took it would overshoot its target
// for good; capping a pool's traffic shrinks pools to single vertices at
// the head only (a few thousand hottest vertices), so pooled decisions
// match per-vertex ones while the tail keeps full pools.
const stepShare = 0.01

// Policy names how a layout was made (package layout).
type Policy = layout.Policy

// The policies.
const (
	PolicyDDAK = layout.PolicyDDAK
	PolicyHash = layout.PolicyHash
)

// Options tune Place. The zero value is Moment's setting with the default
// priority.
type Options struct {
	Priority Priority // "" means DefaultPriority
	// Pool is how many consecutive vertices (in hotness order) go to the
	// chosen bin at once; 0 means DefaultPool. Pooling makes a decision
	// per n vertices instead of per vertex, which is what lets DDAK run over
	// a billion vertices in seconds.
	Pool int
}

func (o Options) withDefaults() (Options, error) {
	if o.Priority == "" {
		o.Priority = DefaultPriority
	}
	if o.Priority != PrioritySum && o.Priority != PriorityProduct && o.Priority != PriorityNeed {
		return o, &topology.InputError{Field: "priority", Msg: fmt.Sprintf("%q (valid: %s, %s, %s)", o.Priority, PriorityNeed, PrioritySum, PriorityProduct)}
	}
	if o.Pool == 0 {
		o.Pool = DefaultPool
	}
	if o.Pool < 0 {
		return o, &topology.InputError{Field: "pool", Msg: fmt.Sprintf("%d (valid: 1 or more)", o.Pool)}
	}
	return o, nil
}

// run is one of DDAK's decisions in order-position space: positions from
// start up to the next run's start go to bin, rows row, row+1, ... The
// fields share one cache line, which is what the per-vertex lookup reads.
type run struct {
	start int64
	row   uint32
	bin   uint8
}

// runs are the decisions in order; a sentinel run (start MaxInt64) closes
// the last one.
type runs []run

func (r *runs) add(pos int64, bin uint8, row uint32) {
	if n := len(*r); n > 0 && (*r)[n-1].bin == bin {
		return // the same bin again: rows continue where the run left off
	}
	*r = append(*r, run{start: pos, row: row, bin: bin})
}

// Place lays out the vertices with DDAK (Moment section 3.3). hotness[v] is
// vertex v's accesses per epoch; bins come from BinsFromPlan or the caller.
//
// Vertices go in descending hotness (ties in vertex order; a hotness with
// many distinct values >= 2^16 is ranked by those values quantized to 2^-12,
// see order, and the stats then count each bin's exact hotness). The hierarchy
// GPU > CPU > SSD decides the tier: the GPU bins together take the hottest
// rows until full, then the CPU bins, then the SSDs. Within a tier, each
// step gives the next Pool vertices to the bin of lowest priority and
// updates it; a step stops early when its vertices would carry more than 1%
// of the smallest traffic a bin of the tier expects (stepShare), which only
// happens among the hottest few thousand vertices. The priority compares r = access / expected with f = used /
// capacity, where access is the bin's summed hotness so far and expected
// is its target's part of the tier's accesses (target / sum of the tier's
// targets x the tier's total hotness, known in advance because the
// hierarchy fixes which rows each tier gets). Normalizing within the tier
// makes r reach 1 when a bin has its share, so r and f are on one scale and
// the sum formula weighs traffic and fill alike; the paper leaves the scale
// open. A bin with target 0 in a tier that has targets is an overflow
// bin: it takes rows only when every other bin of its tier is full. Ties go
// to the larger target, then to the lower index. Rows within each bin are
// numbered 0..n-1 in hotness order.
//
// Why this cuts cross-socket traffic, and what Place holds in memory:
// docs/architecture.md, section 7.
func Place(hotness []uint32, bins []Bin, opt Options) (*Layout, error) {
	return PlaceContext(context.Background(), hotness, bins, opt)
}

// PlaceContext is Place that stops when ctx is done.
func PlaceContext(ctx context.Context, hotness []uint32, bins []Bin, opt Options) (*Layout, error) {
	return place(ctx, hotness, bins, opt, placeRun{wide: true})
}

// phaseTimes is how long each of Place's passes took (benchmarks report
// them): counting the order, the decisions, and the output pass; faulted
// is the share of the output's pages the spare cores faulted in before the
// output pass began.
type phaseTimes struct {
	count, decide, apply time.Duration
	faulted              float64
}

// placeRun is how place runs: what Place does, or what a test or a
// benchmark compares it with.
type placeRun struct {
	// wide quantizes a hotness with more than wideThreshold distinct
	// values >= denseLimit (Place's way); false keeps a bucket per
	// distinct value however many there are (the slower path tests
	// compare the wide one with).
	wide bool
	// wideAt, with wide, replaces wideThreshold (tests that take the
	// quantized path on small inputs).
	wideAt int
	// smallPages leaves the output in the kernel's default pages instead
	// of asking for transparent huge pages (a benchmark's comparison).
	smallPages bool
	// tm, when not nil, gets the passes' times.
	tm *phaseTimes
}

// place is PlaceContext run as run says.
func place(ctx context.Context, hotness []uint32, bins []Bin, opt Options, run placeRun) (*Layout, error) {
	opt, err := opt.withDefaults()
	if err != nil {
		return nil, err
	}
	n := int64(len(hotness))
	if n > math.MaxUint32 {
		return nil, &topology.InputError{Field: "hotness", Msg: fmt.Sprintf("%d vertices (at most 2^32-1: vertex ids and rows are 32-bit)", n)}
	}
	if err := validateBins(bins, n); err != nil {
		return nil, err
	}
	// The output is 5 GB of fresh memory for a billion vertices, which the
	// kernel maps and zeroes page by page as it is first written. Spare
	// cores take those faults while the order is counted and the decisions
	// (one core) are made; what they have not reached when the decisions
	// are done, the output pass faults itself.
	l := &Layout{Policy: PolicyDDAK, Priority: opt.Priority, Pool: opt.Pool, Stats: make([]BinStats, len(bins))}
	l.Bin, l.Row = make([]uint8, n), make([]uint32, n)
	if !run.smallPages {
		hugepage.Advise(l.Bin)
		hugepage.Advise(l.Row)
	}
	stopFaults := prefault(l.Bin, l.Row)
	t0 := time.Now()
	wideAt := 0
	if run.wide {
		wideAt = cmp.Or(run.wideAt, wideThreshold(n))
	}
	o, err := countOrder(ctx, hotness, wideAt)
	if err != nil {
		stopFaults()
		return nil, fmt.Errorf("ddak: %w", err)
	}
	l.TotalAccesses = o.total
	t1 := time.Now()
	r, placed, err := decide(ctx, o, bins, opt, l.Stats, 3)
	faulted := stopFaults()
	t2 := time.Now()
	if tm := run.tm; tm != nil {
		tm.count, tm.decide, tm.faulted = t1.Sub(t0), t2.Sub(t1), faulted
	}
	if err != nil {
		return nil, err
	}
	if placed != n { // validateBins guarantees room: a bug guard
		return nil, fmt.Errorf("ddak: placed %d of %d rows", placed, n)
	}
	acc, err := applyRuns(ctx, o, hotness, r, l.Bin, l.Row)
	if err != nil {
		return nil, err
	}
	if tm := run.tm; tm != nil {
		tm.apply = time.Since(t2)
	}
	if acc != nil {
		// A quantized order's decisions knew pools' accesses to within
		// 2^-12; the bins' totals are summed exactly as the rows land.
		for b := range l.Stats {
			l.Stats[b].Accesses = acc[b]
		}
	}
	return l, nil
}

// tierBins lists the bin indices of each tier, GPU first.
func tierBins(bins []Bin) [3][]int {
	var t [3][]int
	for i, b := range bins {
		r := tierRank(b.Kind)
		t[r] = append(t[r], i)
	}
	return t
}

// decide runs DDAK over the first nTiers tiers (3: all; 2: the caches) and
// returns its runs and how many positions of the order they cover; stats
// collect each bin's rows and accesses.
func decide(ctx context.Context, o *order, bins []Bin, opt Options, stats []BinStats, nTiers int) (*runs, int64, error) {
	// About one run per pool (fewer where a bin takes several pools in a
	// row): sized up front, the 160 MB of a billion vertices' runs are not
	// copied as they grow. At most 2^24 runs (256 MB) are reserved so: a
	// tiny pool over many vertices grows them as it goes.
	r := make(runs, 0, min(o.n/int64(opt.Pool)+1024, 1<<24))
	hugepage.Advise(r[:cap(r)]) // the output pass reads them at random, once per bucket and run
	ac := accessCursor{o: o}
	pos := int64(0)
	pool := int64(opt.Pool)
	tiers := tierBins(bins)
	need := opt.Priority == PriorityNeed
	for _, tier := range tiers[:nTiers] {
		var capTier int64
		var targetTier float64
		for _, b := range tier {
			capTier += usableRows(bins[b])
			targetTier += bins[b].TargetShare
		}
		end := min(o.n, pos+capTier)
		if end <= pos {
			continue
		}
		// The tier's accesses, so targets can be scaled to what the tier
		// actually serves.
		ahead := ac // from where the cursor stands, not from the top again
		tierAccess := float64(ahead.take(end - pos))
		cands := make([]candidate, len(tier))
		budget := math.Inf(1)
		for i, b := range tier {
			expected := tierAccess / float64(len(tier)) // no targets: even shares
			if targetTier > 0 {
				expected = bins[b].TargetShare / targetTier * tierAccess
			}
			c := candidate{bin: b, capacity: usableRows(bins[b]), target: bins[b].TargetShare, expected: expected}
			switch {
			case expected > 0:
				c.perAccess = 1 / expected
				budget = math.Min(budget, stepShare*expected)
			case tierAccess > 0:
				c.overflow = true
			}
			if c.capacity > 0 {
				c.perRow = 1 / float64(c.capacity)
			}
			cands[i] = c
		}
		// A bin's need changes only with its own state and the pool's
		// rows and accesses: while consecutive pools are alike (a bucket
		// of one value), only the bin that took the last pool is ranked
		// again, and the others keep the value they had (the same
		// arithmetic on the same inputs, so the same choices).
		prio := make([]float64, len(cands))
		ranked, lastRows, lastAcc, lastBest := false, int64(0), uint64(0), -1
		for step := 0; pos < end; step++ {
			if step&0xffff == 0 {
				if err := ctx.Err(); err != nil {
					return nil, 0, fmt.Errorf("ddak: %w", err)
				}
			}
			var best *candidate
			bestP := math.Inf(1)
			// The need ranks a bin by where the next pool would leave it,
			// so a pool hotter than a bin's need goes to a bin it fits.
			var poolRows int64
			var poolAcc uint64
			var ahead accessCursor
			if need {
				ahead = ac
				poolRows, poolAcc = ahead.takeWithin(min(pool, end-pos), budget)
				if ranked && poolRows == lastRows && poolAcc == lastAcc {
					prio[lastBest] = cands[lastBest].need(poolRows, poolAcc)
				} else {
					for i := range cands {
						prio[i] = cands[i].need(poolRows, poolAcc)
					}
					ranked, lastRows, lastAcc = true, poolRows, poolAcc
				}
			}
			for i := range cands {
				c := &cands[i]
				if c.used >= c.capacity {
					continue
				}
				var p float64
				if need {
					p = prio[i]
				} else {
					p = c.priority(opt.Priority, poolRows, poolAcc)
				}
				if best == nil || p < bestP || (p == bestP && c.target > best.target) {
					best, bestP, lastBest = c, p, i
				}
			}
			var take int64
			var acc uint64
			if limit := min(pool, best.capacity-best.used, end-pos); need && limit == min(pool, end-pos) {
				take, acc, ac = poolRows, poolAcc, ahead // the pool the need looked at
			} else {
				take, acc = ac.takeWithin(limit, budget)
			}
			r.add(pos, uint8(best.bin), uint32(best.used))
			best.access += acc
			best.used += take
			pos += take
		}
		for _, c := range cands {
			stats[c.bin] = BinStats{Rows: c.used, Accesses: c.access}
		}
	}
	r = append(r, run{start: math.MaxInt64})
	return &r, pos, nil
}

// candidate is a bin of the tier being filled, with what its priority
// needs precomputed (a step ranks every bin of the tier).
type candidate struct {
	bin       int
	capacity  int64
	used      int64
	access    uint64
	perAccess float64 // 1 / the accesses the bin should get in this tier
	perRow    float64 // 1 / capacity
	expected  float64 // the accesses the bin should get in this tier
	target    float64
	// overflow marks a zero target in a tier that carries traffic: the
	// bin takes rows only when every other bin of the tier is full.
	overflow bool
}

// priority is the bin's rank within its tier (lower goes first): with r =
// access / expected and f = used / capacity, r + f or r x f, or the need.
//
// For the need, rows and acc are the next pool's: the rank is the accesses
// the bin would have in excess of its share per row it would have left,
// (access + acc - expected) / (capacity - used - rows), a full bin counting
// one row left.
func (c *candidate) priority(p Priority, rows int64, acc uint64) float64 {
	if p == PriorityNeed {
		return c.need(rows, acc)
	}
	if c.overflow {
		return math.Inf(1)
	}
	r := float64(c.access) * c.perAccess
	f := float64(c.used) * c.perRow
	if p == PriorityProduct {
		return r * f
	}
	return r + f
}

// need is the need priority (see priority), small enough to inline in
// decide's loop over a tier's bins, once per pool.
func (c *candidate) need(rows int64, acc uint64) float64 {
	if c.overflow {
		return math.Inf(1)
	}
	return (float64(c.access+acc) - c.expected) / float64(max(c.capacity-c.used-rows, 1))
}

// applyState is one hotness bucket's place in the runs, packed into 8
// bytes so that a vertex costs one load and one store of it (the states of
// 2^16 buckets, 512 KiB, stay in a core's L2 while the vertices stream
// past): the row the bucket's next vertex gets (bits 0-31), its bin (32-39)
// and how many more of the bucket's vertices the current run takes (40-63,
// at most stateLeftMax: a longer run is taken in parts). The position in
// the order is implicit, the current run's start plus the rows taken in it;
// the run itself is kept apart (at), since only the step to the next run,
// about once per pool, reads it.
type applyState uint64

// stateLeftMax is the most vertices a state takes before it looks at the
// runs again.
const stateLeftMax = 1<<24 - 1

// stateLeft is one vertex in a state's count of vertices left.
const stateLeft = 1 << 40

// take returns the bin and row of the state's next vertex and the state
// after it; ok is false when the current run has no vertex left.
func (s applyState) take() (bin uint8, row uint32, next applyState, ok bool) {
	return uint8(s >> 32), uint32(s), s + 1 - stateLeft, s >= stateLeft
}

// stateAt is the state of a bucket whose next vertex is at position p, in
// run x.
func stateAt(rs runs, x int32, p int64) applyState {
	r := rs[x]
	left := min(rs[x+1].start-p, stateLeftMax)
	return applyState(uint64(r.row+uint32(p-r.start)) | uint64(r.bin)<<32 | uint64(left)<<40)
}

// startStates returns the apply states and runs of a worker whose first
// vertex in bucket k is at position cur[k]. With no run but the sentinel (a
// hash layout without caches) every state is empty and never taken.
func startStates(rs runs, cur []int64) ([]applyState, []int32) {
	st, at := make([]applyState, len(cur)), make([]int32, len(cur))
	if len(rs) < 2 {
		return st, at
	}
	j := 0
	for k, c := range cur { // cursors grow with k: one merge walk
		for rs[j+1].start <= c {
			j++
		}
		st[k], at[k] = stateAt(rs, int32(j), c), int32(j)
	}
	return st, at
}

// next takes the next vertex of state k: its bin and row, after moving
// the state on to the run that holds it when the current one has no vertex
// left.
func next(rs runs, st []applyState, at []int32, k int32) (uint8, uint32) {
	b, w, after, ok := st[k].take()
	if !ok {
		x := at[k]
		r := rs[x]
		p := r.start + int64(uint32(st[k])-r.row) // the vertex's position
		for rs[x+1].start <= p {
			x++
		}
		at[k] = x
		b, w, after, _ = stateAt(rs, x, p).take()
	}
	st[k] = after
	return b, w
}

// applySpan writes the bin and row of hs[0], hs[1], ... while each one's
// bucket is found by a table (a value below denseLimit, or any value of a
// quantized order, whose states qst are indexed by quantKey) and its run
// still has room, and returns the index of the first vertex it left
// (len(hs) when none). It is applyRuns's inner loop, kept small so its few
// live values stay in registers; acc, when not nil, sums each bin's
// hotness.
func applySpan(hs []uint32, bs []uint8, ws []uint32, dense *[1 << 16]int32, st []applyState, qst *[1 << 16]applyState, acc *[256]uint64) int {
	bs, ws = bs[:len(hs)], ws[:len(hs)]
	for i, h := range hs {
		var s *applyState
		switch {
		case h < denseLimit:
			s = &st[dense[h&(denseLimit-1)]]
		case qst != nil:
			s = &qst[quantKey(h)&(1<<16-1)]
		default:
			return i
		}
		b, w, after, ok := s.take()
		if !ok {
			return i
		}
		*s = after
		bs[i], ws[i] = b, w
		if acc != nil {
			acc[b] += uint64(h)
		}
	}
	return len(hs)
}

// applyRuns writes each vertex's bin and row from the runs, one parallel
// pass over the vertices in id order: each worker knows where its vertices
// fall in every hotness bucket (order.cursors), and within a bucket
// positions only grow, so each bucket keeps a pointer into the runs that
// only moves forward. On a quantized order it also returns each bin's
// summed hotness (nil otherwise: the decisions' sums are exact).
func applyRuns(ctx context.Context, o *order, hot []uint32, r *runs, bin []uint8, row []uint32) ([]uint64, error) {
	errs := make([]error, len(o.spans))
	accs := make([][256]uint64, len(o.spans))
	var wg sync.WaitGroup
	for w, sp := range o.spans {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rs := *r
			st, at := startStates(rs, o.cursors(w))
			dense := (*[denseLimit]int32)(o.dense)
			var acc *[256]uint64
			// A quantized order's large buckets get their states by
			// quantKey, sparing the vertex a lookup of its bucket.
			var qst *[1 << 16]applyState
			var qat []int32
			if o.quant {
				acc, qst, qat = &accs[w], new([1 << 16]applyState), make([]int32, 1<<16)
				for q, k := range o.qdense {
					if k >= 0 {
						qst[q], qat[q] = st[k], at[k]
					}
				}
			}
			for b := sp[0]; b < sp[1]; b += ctxEvery {
				if err := ctx.Err(); err != nil {
					errs[w] = fmt.Errorf("ddak: %w", err)
					return
				}
				e := min(b+ctxEvery, sp[1])
				hs := hot[b:e]
				bs, ws := bin[b:e][:len(hs)], row[b:e][:len(hs)]
				for i := 0; i < len(hs); i++ {
					// The tight loop takes every vertex whose bucket is
					// dense or quantized and stays within its run; the
					// rest (the next run, a binary search) come here.
					if i += applySpan(hs[i:], bs[i:], ws[i:], dense, st, qst, acc); i == len(hs) {
						break
					}
					h := hs[i]
					sts, ats, k := st, at, o.bucketOf(h)
					if qst != nil && h >= denseLimit {
						sts, ats, k = qst[:], qat, int32(quantKey(h))
					}
					bs[i], ws[i] = next(rs, sts, ats, k)
					if acc != nil {
						acc[bs[i]] += uint64(h)
					}
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	if !o.quant {
		return nil, nil
	}
	var sum []uint64
	for b := range 256 {
		var t uint64
		for w := range accs {
			t += accs[w][b]
		}
		sum = append(sum, t)
	}
	return sum, nil
}

// faultPage is the stride at which prefault touches memory: the smallest
// page size, so every page is touched whether or not the kernel backed the
// slices with huge pages.
const faultPage = 4096

// faultChunk is how many vertices prefault touches between checks for
// stop: 2 MiB of rows.
const faultChunk = 1 << 19

// prefault touches the pages of bin and row on all but one core, so the
// kernel maps (and zeroes) them while the caller works, and returns a
// function that stops it, waits until it has, and returns the share of the
// vertices whose pages it touched: the caller may write the slices only
// after that. It goes through the output pass's spans (order) front to
// front, a chunk of each in turn, so the pages it did not reach,
// which the output pass faults itself, are shared evenly by its workers.
func prefault(bin []uint8, row []uint32) (stop func() float64) {
	helpers := runtime.GOMAXPROCS(0) - 1
	n := len(bin)
	if helpers < 1 || n < 1<<20 {
		return func() float64 { return 0 }
	}
	w := workers(int64(n))
	rowBytes := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(row))), 4*len(row))
	var wg sync.WaitGroup
	var done atomic.Bool
	var touched atomic.Int64
	for h := range helpers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := h * faultChunk; c < (n+w-1)/w; c += helpers * faultChunk {
				if done.Load() {
					return
				}
				for x := range w {
					lo, end := n*x/w+c, n*(x+1)/w
					hi := min(lo+faultChunk, end)
					for i := lo; i < hi; i += faultPage {
						bin[i] = 0
					}
					for i := 4 * lo; i < 4*hi; i += faultPage {
						rowBytes[i] = 0
					}
					touched.Add(int64(max(hi-lo, 0)))
				}
			}
		}()
	}
	return func() float64 {
		done.Store(true)
		wg.Wait()
		return float64(touched.Load()) / float64(n)
	}
}

// Layout says where each vertex's feature row lives (package layout).
type Layout = layout.Layout

// BinStats is what a layout put in one bin (package layout).
type BinStats = layout.BinStats
