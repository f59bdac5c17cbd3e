package ddak

import (
	"context"
	"math"
	"runtime"
	"slices"
	"sync"
)

// denseLimit bounds the hotness values counted in a flat histogram. Skewed
// (Zipf) counts put almost every vertex on a few small values and only a
// handful of vertices above 2^16, which are counted by sorting them; the
// value -> bucket table (256 KiB) then stays in L2 while 1e9 vertices stream
// past it.
const denseLimit = 1 << 16

// smallLimit bounds the values counted in the per-chunk L1 tables.
const smallLimit = 256

// ctxEvery is how many vertices a worker handles between cancellation checks.
const ctxEvery = 1 << 22

// order is the descending-hotness order of the vertices without sorting
// them: a counting sort over the distinct hotness values. Position p in the
// order is the p-th hottest vertex; vertices of equal hotness keep vertex-id
// order, so the order is deterministic. Only the buckets are stored (one per
// distinct value), never a permutation of the vertices, which is what keeps
// DDAK within 12 bytes per vertex.
//
// Values >= denseLimit are usually few (the head of a skewed distribution)
// and get a bucket each. When they are many distinct ones (more than
// wideThreshold), a bucket each would cost more than the vertices; the order
// then ranks them by a quantized value instead (quantKey: 12 bits below the
// leading one, a relative resolution of 2^-12), vertices of one quantized
// value in vertex-id order. That moves a vertex at most past others within
// 0.025% of its hotness, far below the sampling noise of a hotness estimate,
// and keeps the order at one bucket per distinct quantized value whatever
// the distribution.
type order struct {
	n      int64
	val    []uint32 // distinct hotness values, descending (quantized: the bucket's least value)
	count  []int64  // vertices per bucket
	start  []int64  // first position of each bucket; start[len(val)] = n
	dense  []int32  // bucket of a value < denseLimit, -1 when absent
	nLarge int      // buckets [0, nLarge) hold the values >= denseLimit
	// quant says buckets [0, nLarge) are quantized values: qdense maps
	// quantKey(h) to its bucket (-1 when absent), and each such bucket's
	// total hotness is count x mean + extra (see prefix).
	quant  bool
	qdense []int32
	mean   []uint64
	extra  []int64
	// spans split the vertices into contiguous ranges, one per worker;
	// spanCount[w][k] is how many vertices of span w are in bucket k, so
	// every worker knows where its vertices start in each bucket.
	spans     [][2]int64
	spanCount [][]int64
	total     uint64 // sum of all hotness
}

// quantBits is the resolution of the quantized order: values >= denseLimit
// keep this many bits below their leading one.
const quantBits = 12

// quantKey maps h >= denseLimit to 0..65535, monotone in h: the position of
// its leading one (17..32 bits long) and the quantBits bits below it. Both
// are read off h as a float64, which holds any uint32 exactly: its biased
// exponent is 1039..1054 for h in [2^16, 2^32), and the mantissa's top bits
// are the ones below the leading one. The conversion costs about a third of
// shifting by the leading one's position, a variable shift that x86
// serializes through the flags (1.9 against 5.3 ns per value in a
// throwaway loop here), and this runs twice per vertex of a wide hotness.
func quantKey(h uint32) int {
	return int(math.Float64bits(float64(h))>>(52-quantBits)) - (1023+16)<<quantBits
}

// quantFloor is the least value with quantKey k.
func quantFloor(k int) uint32 {
	e := k >> quantBits
	return uint32(1<<quantBits|k&(1<<quantBits-1)) << (e + 16 - quantBits)
}

// wideThreshold is the number of distinct values >= denseLimit above which
// newOrder quantizes them (see order) instead of keeping a bucket per value
// (about 130 bytes per bucket over the passes, and a binary search per
// vertex): past n/256 buckets the buckets would cost more than half a byte
// per vertex. Tests force either path through countOrder's wideAt.
func wideThreshold(n int64) int { return max(1<<12, int(n>>8)) }

// bucketOf returns the bucket of hotness value h.
func (o *order) bucketOf(h uint32) int32 {
	if h < denseLimit {
		return o.dense[h]
	}
	if o.quant {
		return o.qdense[quantKey(h)]
	}
	// Large values are few (the head of a skewed distribution): binary
	// search over them in descending order.
	lo, hi := 0, o.nLarge
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if o.val[m] > h {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return int32(lo)
}

// workers is how many goroutines share a pass over n vertices.
func workers(n int64) int {
	w := runtime.GOMAXPROCS(0)
	if n < 1<<16 {
		w = 1
	}
	return max(w, 1)
}

// newOrder counts the hotness values in parallel, one bucket per distinct
// value.
func newOrder(ctx context.Context, hot []uint32) (*order, error) {
	return countOrder(ctx, hot, 0)
}

// tally is one counting worker's counts (see countOrder).
type tally struct {
	dense  []int64
	large  []uint32 // sorted, then compressed into lval/lcnt
	lval   []uint32
	lcnt   []int64
	quant  []quantTally // per quantKey (wideAt > 0): one cache line holds both counters
	capped bool         // more than largeCap vertices >= denseLimit, or more than wideAt distinct ones: quantize
	// checkAt is the length of large at which keep next looks at it (see
	// check); wideAt is countOrder's (0: never quantize).
	checkAt int64
	wideAt  int
	sum     uint64
	err     error
}

// countCapped counts hs into small (values below smallLimit, four tables
// taking turns), dense and quant (every value >= denseLimit, by quantKey)
// and returns their sum: countChunk's loop once a worker collects no more
// large values, small enough that its tables stay in registers.
func countCapped(hs []uint32, small *[4][smallLimit]uint32, dense *[denseLimit]int64, quant *[1 << 16]quantTally) uint64 {
	var s uint64
	for i, h := range hs {
		s += uint64(h)
		switch {
		case h < smallLimit:
			small[i&3][h]++
		case h < denseLimit:
			dense[h]++
		default:
			q := &quant[quantKey(h)&(1<<16-1)]
			q.count++
			q.sum += uint64(h)
		}
	}
	for h := range smallLimit {
		dense[h] += int64(small[0][h]) + int64(small[1][h]) + int64(small[2][h]) + int64(small[3][h])
	}
	return s
}

// quantTally is the vertices of one quantized value and their summed
// hotness.
type quantTally struct {
	count int64
	sum   uint64
}

// add counts one value h; small is the worker's current L1 table for
// values below smallLimit.
func (t *tally) add(h uint32, small *[smallLimit]uint32, largeCap int64) {
	switch {
	case h < smallLimit:
		small[h]++
	case h < denseLimit:
		t.dense[h]++
	default:
		if t.quant != nil {
			q := &t.quant[quantKey(h)&(1<<16-1)]
			q.count++
			q.sum += uint64(h)
		}
		if !t.capped {
			t.keep(h, largeCap)
		}
	}
}

// keep collects a value >= denseLimit, looking at what it has collected
// whenever that reaches checkAt values.
func (t *tally) keep(h uint32, largeCap int64) {
	if int64(len(t.large)) < t.checkAt {
		t.large = append(t.large, h)
		return
	}
	t.check(h, largeCap)
}

// check marks the tally capped, and drops what it collected, when largeCap
// values are collected or more than wideAt of them are distinct: either way
// the order is quantized, the second because the whole order has at least
// as many distinct values as this span. Otherwise it keeps h and sets the
// next check at twice the length. Checking at doubling lengths sorts no
// more in all than the one sort the values get at the end, and on a wide
// hotness it stops collecting after 2 x wideAt values instead of a
// sixteenth of the span (at a billion vertices, 8 M values per worker
// instead of 31 M, grown and copied as they came).
func (t *tally) check(h uint32, largeCap int64) {
	n := int64(len(t.large))
	if n >= largeCap {
		t.capped, t.large = true, nil
		return
	}
	if t.wideAt > 0 {
		slices.Sort(t.large)
		distinct := 0
		for i, v := range t.large {
			if i == 0 || v != t.large[i-1] {
				distinct++
			}
		}
		if distinct > t.wideAt {
			t.capped, t.large = true, nil
			return
		}
	}
	t.checkAt = min(2*n, largeCap)
	t.large = append(slices.Grow(t.large, int(t.checkAt-n)), h)
}

// countOrder is newOrder that, with wideAt > 0, quantizes the values >=
// denseLimit when they have more than wideAt distinct values (see order;
// Place passes wideThreshold); 0 keeps every distinct value.
func countOrder(ctx context.Context, hot []uint32, wideAt int) (*order, error) {
	n := int64(len(hot))
	w := workers(n)
	o := &order{n: n, spans: make([][2]int64, w)}
	for i := range w {
		o.spans[i] = [2]int64{n * int64(i) / int64(w), n * int64(i+1) / int64(w)}
	}
	ts := make([]tally, w)
	var wg sync.WaitGroup
	for i := range w {
		wg.Add(1)
		go func(t *tally, lo, hi int64) {
			defer wg.Done()
			t.countSpan(ctx, hot, lo, hi, wideAt)
		}(&ts[i], o.spans[i][0], o.spans[i][1])
	}
	wg.Wait()
	for i := range ts {
		if ts[i].err != nil {
			return nil, ts[i].err
		}
		o.total += ts[i].sum
	}
	large, wide := distinctLarge(ts, wideAt)
	if wide {
		large = o.quantize(ts, large)
	}
	o.nLarge = len(large)
	o.val = large
	o.addDense(ts)
	o.countBuckets(ts)
	return o, nil
}

// countSpan is one counting worker's pass over hot[lo:hi] (wideAt as
// countOrder's). Its values >= denseLimit end in lval/lcnt, descending,
// unless it is capped.
func (t *tally) countSpan(ctx context.Context, hot []uint32, lo, hi int64, wideAt int) {
	t.dense = make([]int64, denseLimit)
	// With wideAt > 0, collecting the large values stops at a sixteenth
	// of the span (a quarter byte per vertex): more of them are quantized
	// whatever their distinct count.
	largeCap := int64(math.MaxInt64)
	t.checkAt = largeCap
	if wideAt > 0 {
		t.quant = make([]quantTally, 1<<16)
		largeCap = max(1<<16, (hi-lo)>>4)
		t.wideAt = wideAt
		t.checkAt = min(largeCap, max(1<<16, 2*int64(t.wideAt)))
	}
	for b := lo; b < hi; b += ctxEvery {
		if err := ctx.Err(); err != nil {
			t.err = err
			return
		}
		e := min(b+ctxEvery, hi)
		t.countChunk(hot[b:e], largeCap)
	}
	if t.capped {
		t.large = nil
		return
	}
	slices.Sort(t.large)
	for j := len(t.large) - 1; j >= 0; j-- { // descending
		if len(t.lval) > 0 && t.lval[len(t.lval)-1] == t.large[j] {
			t.lcnt[len(t.lcnt)-1]++
		} else {
			t.lval = append(t.lval, t.large[j])
			t.lcnt = append(t.lcnt, 1)
		}
	}
	t.large = nil
}

// countChunk counts hs, one chunk of ctxEvery vertices. Its loops are the
// counting's hot loops, kept whole; the call costs once a chunk.
func (t *tally) countChunk(hs []uint32, largeCap int64) {
	// Most vertices share a few small values; counting them in four
	// interleaved L1-sized tables keeps consecutive increments of one
	// counter from waiting on each other.
	var small [4][smallLimit]uint32
	var s uint64
	if t.capped {
		// Collecting no more: every large value is quantized, in a loop
		// with no call per value.
		t.sum += countCapped(hs, &small, (*[denseLimit]int64)(t.dense), (*[1 << 16]quantTally)(t.quant))
		return
	}
	i := 0
	for ; i+4 <= len(hs); i += 4 {
		// Four at a time: one test for the common case of four small
		// values, one table each.
		h0, h1, h2, h3 := hs[i], hs[i+1], hs[i+2], hs[i+3]
		s += uint64(h0) + uint64(h1) + uint64(h2) + uint64(h3)
		if h0|h1|h2|h3 < smallLimit {
			small[0][h0&(smallLimit-1)]++
			small[1][h1&(smallLimit-1)]++
			small[2][h2&(smallLimit-1)]++
			small[3][h3&(smallLimit-1)]++
			continue
		}
		t.add(h0, &small[0], largeCap)
		t.add(h1, &small[1], largeCap)
		t.add(h2, &small[2], largeCap)
		t.add(h3, &small[3], largeCap)
	}
	for _, h := range hs[i:] {
		s += uint64(h)
		t.add(h, &small[0], largeCap)
	}
	for h := range smallLimit {
		t.dense[h] += int64(small[0][h]) + int64(small[1][h]) + int64(small[2][h]) + int64(small[3][h])
	}
	t.sum += s
}

// distinctLarge is the distinct values >= denseLimit over all spans,
// descending, and whether the order is to be quantized: a span capped, or
// (with wideAt > 0) more than wideAt of them.
func distinctLarge(ts []tally, wideAt int) ([]uint32, bool) {
	var large []uint32
	wide := false
	for i := range ts {
		large = append(large, ts[i].lval...)
		wide = wide || ts[i].capped
	}
	if !wide {
		slices.Sort(large)
		large = slices.Compact(large)
		slices.Reverse(large)
		wide = wideAt > 0 && len(large) > wideAt
	}
	return large, wide
}

// quantize makes the large buckets one per quantized value, descending,
// from the spans' quant tallies, and returns their values (in large's
// memory).
func (o *order) quantize(ts []tally, large []uint32) []uint32 {
	o.quant = true
	o.qdense = make([]int32, 1<<16)
	qcnt, qsum := make([]int64, 1<<16), make([]uint64, 1<<16)
	for i := range ts {
		for q, c := range ts[i].quant {
			qcnt[q] += c.count
			qsum[q] += c.sum
		}
	}
	large = large[:0]
	for q := 1<<16 - 1; q >= 0; q-- {
		o.qdense[q] = -1
		if qcnt[q] > 0 {
			o.qdense[q] = int32(len(large))
			large = append(large, quantFloor(q))
			o.mean = append(o.mean, qsum[q]/uint64(qcnt[q]))
			o.extra = append(o.extra, int64(qsum[q]%uint64(qcnt[q])))
		}
	}
	return large
}

// addDense appends a bucket for each value below denseLimit some span
// holds, descending, after the large ones.
func (o *order) addDense(ts []tally) {
	o.dense = make([]int32, denseLimit)
	for h := denseLimit - 1; h >= 0; h-- {
		o.dense[h] = -1
		var c int64
		for i := range ts {
			c += ts[i].dense[h]
		}
		if c > 0 {
			o.dense[h] = int32(len(o.val))
			o.val = append(o.val, uint32(h))
		}
	}
}

// countBuckets fills each bucket's count, per span and in all, and the
// buckets' first positions.
func (o *order) countBuckets(ts []tally) {
	nb := len(o.val)
	o.count = make([]int64, nb)
	o.spanCount = make([][]int64, len(ts))
	for i := range ts {
		sc := make([]int64, nb)
		if o.quant {
			for q, c := range ts[i].quant {
				if c.count > 0 {
					sc[o.qdense[q]] = c.count
				}
			}
		} else {
			for j, v := range ts[i].lval {
				sc[o.bucketOf(v)] = ts[i].lcnt[j]
			}
		}
		for k := o.nLarge; k < nb; k++ {
			sc[k] = ts[i].dense[o.val[k]]
		}
		for k := range sc {
			o.count[k] += sc[k]
		}
		o.spanCount[i] = sc
	}
	o.start = make([]int64, nb+1)
	for k := range nb {
		o.start[k+1] = o.start[k] + o.count[k]
	}
}

// cursors returns, for span w, the position of its first vertex in each
// bucket.
func (o *order) cursors(w int) []int64 {
	cur := make([]int64, len(o.val))
	for k := range cur {
		cur[k] = o.start[k]
		for j := range w {
			cur[k] += o.spanCount[j][k]
		}
	}
	return cur
}

// accessCursor walks the order from the hottest position down, summing the
// hotness of the positions it passes; DDAK's pooled steps use it to know a
// pool's accesses without touching the vertices.
type accessCursor struct {
	o   *order
	k   int   // current bucket
	off int64 // positions of bucket k already passed
}

// prefix is the hotness of the first j positions of bucket k: exact for a
// bucket of one value. A quantized bucket's positions each count as its
// mean, the first sum mod count of them one more (exact at the bucket's
// end, within 2^-12 of the truth before it, since every value of the
// bucket is within 2^-12 of the others). So pools of equal size within a
// bucket carry equal accesses, which lets the decisions rank again only
// the bin that took the last pool (see decide), and no pool pays a
// division.
func (o *order) prefix(k int, j int64) uint64 {
	if k >= o.nLarge || !o.quant {
		return uint64(j) * uint64(o.val[k])
	}
	return uint64(j)*o.mean[k] + uint64(min(j, o.extra[k]))
}

// take advances by n positions and returns the hotness they sum to.
func (c *accessCursor) take(n int64) uint64 {
	var s uint64
	for n > 0 && c.k < len(c.o.val) {
		t := min(n, c.o.count[c.k]-c.off)
		s += c.o.prefix(c.k, c.off+t) - c.o.prefix(c.k, c.off)
		n -= t
		c.off += t
		if c.off == c.o.count[c.k] {
			c.k++
			c.off = 0
		}
	}
	return s
}

// takeWithin advances by at most n positions whose hotness sums to at
// most budget, but always by at least one position (when n > 0), and
// returns how many it passed and their hotness.
func (c *accessCursor) takeWithin(n int64, budget float64) (int64, uint64) {
	o := c.o
	var taken int64
	var s uint64
	for taken < n && c.k < len(o.val) {
		t := min(n-taken, o.count[c.k]-c.off)
		var acc uint64
		if v := o.val[c.k]; c.k >= o.nLarge || !o.quant {
			// One value: the budget fits (budget - s) / v positions.
			if v > 0 {
				if fit := (budget - float64(s)) / float64(v); fit < float64(t) {
					t = int64(max(fit, 0))
				}
			}
			acc = uint64(t) * uint64(v)
		} else {
			base := o.prefix(c.k, c.off)
			acc = o.prefix(c.k, c.off+t) - base
			if float64(s)+float64(acc) > budget {
				// The most positions of this bucket the budget takes.
				fit := int64(max((budget-float64(s))/(float64(acc)/float64(t)), 0))
				for fit > 0 && float64(s)+float64(o.prefix(c.k, c.off+fit)-base) > budget {
					fit--
				}
				t = min(fit, t)
				acc = o.prefix(c.k, c.off+t) - base
			}
		}
		if t == 0 {
			if taken > 0 {
				break
			}
			t, acc = 1, o.prefix(c.k, c.off+1)-o.prefix(c.k, c.off) // always at least one position
		}
		s += acc
		taken += t
		c.off += t
		if c.off == o.count[c.k] {
			c.k++
			c.off = 0
		}
	}
	return taken, s
}

// vertices materializes the order for hotness hot (the slice newOrder
// counted): out[p] is the vertex at position p. It costs 4 bytes per vertex,
// which CacheSplit can afford and Place avoids.
func (o *order) vertices(hot []uint32) []uint32 {
	out := make([]uint32, o.n)
	cur := o.cursors(0) // span 0's cursors are the bucket starts
	for v, h := range hot {
		k := o.bucketOf(h)
		out[cur[k]] = uint32(v)
		cur[k]++
	}
	return out
}
