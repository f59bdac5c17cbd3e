// Package partition cuts a graph's vertices into k parts for HANOI's
// multistage sampling (docs/loaders.md): parts whose vertices keep most
// of their neighbours inside (a low edge cut, so a macro-batch of a few
// parts holds most of its vertices' neighbourhoods), of balanced size, and
// each holding its share of every class of training vertices (so the
// mini-batches sampled inside a macro-batch see every label, HANOI's
// GNN-aware balance).
//
// The partitioner is restreaming FENNEL (Tsourakakis et al., WSDM 2014;
// Nishimura and Ugander, KDD 2013) with HANOI's label-wise balance: the
// vertices are streamed in a seeded random order, each put in the part
// that maximises the neighbours it already holds minus a size penalty
// and, for a training vertex, a penalty on the part's share of that
// vertex's class; later passes stream again with every vertex's last part
// known. Each pass is O(|E| + |V| k). It is written in Go rather than
// calling METIS so that it needs no C library and works on the CSR the
// trainer already holds; its edge cut is reported beside a random
// assignment's.
package partition

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/gnnplan/gnnplan/internal/inputerr"
	"github.com/gnnplan/gnnplan/internal/rng"
	"github.com/gnnplan/gnnplan/trainer/dataset"
)

// Options configure Partition.
type Options struct {
	// Parts is k, at least 1.
	Parts int
	// Passes is how many times the vertices are streamed; 0 means
	// DefaultPasses.
	Passes int
	// Slack bounds a part's size at (1 + Slack) n / k, and a part's
	// training vertices of a class at (1 + Slack) of its share; 0 means
	// DefaultSlack.
	Slack float64
	// Seed fixes the streaming order.
	Seed uint64
}

// Defaults of Options.
const (
	DefaultPasses = 2
	DefaultSlack  = 0.1
	// gamma is FENNEL's exponent: the size penalty grows as |P|^1.5.
	gamma = 1.5
)

// Result is a partition and how good it is.
type Result struct {
	// Part[v] is vertex v's part, 0 to Parts-1.
	Part  []int32
	Parts int
	// Sizes are the parts' vertex counts; TrainSizes their training
	// vertices'.
	Sizes, TrainSizes []int
	// EdgeCut is the share of the CSR's entries whose ends lie in
	// different parts; RandomEdgeCut the same for a uniformly random
	// assignment to Parts parts (seeded), the baseline.
	EdgeCut, RandomEdgeCut float64
	// LabelImbalance is the largest part's count of a class's training
	// vertices over the class's even share, over the classes (1: every
	// part has exactly its share).
	LabelImbalance float64
}

// Partition cuts g into opt.Parts parts (see the package comment).
func Partition(ctx context.Context, g *dataset.Graph, opt Options) (*Result, error) {
	n := len(g.Indptr) - 1
	switch {
	case opt.Parts < 1 || opt.Parts > math.MaxInt32:
		return nil, &inputerr.Error{Field: "partitions", Msg: fmt.Sprintf("%d (want at least 1)", opt.Parts)}
	case n < 1:
		return nil, &inputerr.Error{Field: "num_nodes", Msg: "the graph has no vertices"}
	case opt.Passes < 0 || opt.Slack < 0:
		return nil, fmt.Errorf("partition: %d passes, slack %g (want >= 0)", opt.Passes, opt.Slack)
	}
	if opt.Passes == 0 {
		opt.Passes = DefaultPasses
	}
	if opt.Slack == 0 {
		opt.Slack = DefaultSlack
	}
	st := newStreamer(g, opt)
	for pass := range opt.Passes {
		if err := st.stream(ctx, pass); err != nil {
			return nil, err
		}
	}
	r := &Result{Part: st.part, Parts: opt.Parts, Sizes: make([]int, opt.Parts), TrainSizes: make([]int, opt.Parts)}
	for _, p := range st.part {
		r.Sizes[p]++
	}
	for _, v := range g.Train {
		r.TrainSizes[st.part[v]]++
	}
	r.EdgeCut = EdgeCut(g, st.part)
	r.RandomEdgeCut = EdgeCut(g, Random(n, opt.Parts, opt.Seed))
	r.LabelImbalance = st.labelImbalance()
	return r, nil
}

// streamer is one Partition's state.
type streamer struct {
	g     *dataset.Graph
	opt   Options
	k     int
	part  []int32 // -1: not yet placed (first pass)
	size  []float64
	order []int32
	// class[v] is v's class index when it is a training vertex, else -1;
	// trainOf[p*classes+c] counts part p's training vertices of class c,
	// share[c] is a class's even share per part.
	class   []int32
	classes int
	trainOf []float64
	share   []float64
	// alpha weighs the size penalty (FENNEL's m k^(gamma-1) / n^gamma),
	// capSize and the label terms bound the parts.
	alpha   float64
	capSize float64
	gains   []float64 // per part: the current vertex's neighbours in it
	touched []int32
}

func newStreamer(g *dataset.Graph, opt Options) *streamer {
	n, k := len(g.Indptr)-1, opt.Parts
	st := &streamer{g: g, opt: opt, k: k, part: make([]int32, n), size: make([]float64, k), gains: make([]float64, k)}
	for i := range st.part {
		st.part[i] = -1
	}
	m := float64(len(g.Indices)) / 2
	st.alpha = m * math.Pow(float64(k), gamma-1) / math.Pow(float64(n), gamma)
	st.capSize = (1 + opt.Slack) * float64(n) / float64(k)
	st.order = make([]int32, n)
	for i := range st.order {
		st.order[i] = int32(i)
	}
	r := rng.SplitMix{State: rng.Mix(opt.Seed ^ 0x70617274)} // "part"
	for i := n - 1; i > 0; i-- {
		j := r.Below(uint64(i) + 1)
		st.order[i], st.order[j] = st.order[j], st.order[i]
	}
	st.indexClasses()
	return st
}

// indexClasses numbers the training vertices' classes and their shares.
func (st *streamer) indexClasses() {
	g := st.g
	st.class = make([]int32, len(st.part))
	for i := range st.class {
		st.class[i] = -1
	}
	ids := map[int64]int32{}
	for _, v := range g.Train {
		l := int64(-1)
		if int(v) < len(g.Labels) {
			l = int64(g.Labels[v])
		}
		c, ok := ids[l]
		if !ok {
			c = int32(len(ids))
			ids[l] = c
		}
		st.class[v] = c
	}
	st.classes = len(ids)
	st.trainOf = make([]float64, st.k*st.classes)
	st.share = make([]float64, st.classes)
	for _, v := range g.Train {
		st.share[st.class[v]]++
	}
	for c := range st.share {
		st.share[c] /= float64(st.k)
	}
}

// stream places every vertex once, in the streaming order.
func (st *streamer) stream(ctx context.Context, pass int) error {
	g := st.g
	for i, v := range st.order {
		if i%(1<<16) == 0 {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("partition: pass %d: %w", pass+1, err)
			}
		}
		if old := st.part[v]; old >= 0 { // a later pass: take it out first
			st.move(v, old, -1)
		}
		for _, u := range g.Indices[g.Indptr[v]:g.Indptr[v+1]] {
			if p := st.part[u]; p >= 0 && u != v {
				if st.gains[p] == 0 {
					st.touched = append(st.touched, p)
				}
				st.gains[p]++
			}
		}
		best := st.best(v)
		for _, p := range st.touched {
			st.gains[p] = 0
		}
		st.touched = st.touched[:0]
		st.part[v] = best
		st.move(v, best, 1)
	}
	return nil
}

// best is the part FENNEL puts v in: the most neighbours minus the size
// penalty (and, for a training vertex, the class penalty), among the
// parts with room; the least full part when none has room.
func (st *streamer) best(v int32) int32 {
	c := st.class[v]
	bestP, bestScore := int32(-1), math.Inf(-1)
	for p := range st.k {
		if st.size[p]+1 > st.capSize {
			continue
		}
		score := st.gains[p] - st.alpha*gamma*math.Sqrt(st.size[p])
		if c >= 0 && st.share[c] > 0 {
			t := st.trainOf[p*st.classes+int(c)]
			if t+1 > (1+st.opt.Slack)*st.share[c]+1 {
				continue
			}
			// The class's fill of this part against its share: the
			// same penalty shape, on the class's own scale.
			score -= gamma * math.Sqrt(t/st.share[c])
		}
		if score > bestScore {
			bestP, bestScore = int32(p), score
		}
	}
	if bestP < 0 {
		bestP = 0
		for p := 1; p < st.k; p++ {
			if st.size[p] < st.size[bestP] {
				bestP = int32(p)
			}
		}
	}
	return bestP
}

// move adds (d = 1) or removes (d = -1) v to part p's counts.
func (st *streamer) move(v, p int32, d float64) {
	st.size[p] += d
	if c := st.class[v]; c >= 0 {
		st.trainOf[int(p)*st.classes+int(c)] += d
	}
}

// labelImbalance is the largest class count of a part over its share.
func (st *streamer) labelImbalance() float64 {
	worst := 0.0
	for p := range st.k {
		for c := range st.classes {
			if st.share[c] > 0 {
				worst = max(worst, st.trainOf[p*st.classes+c]/st.share[c])
			}
		}
	}
	if st.classes == 0 {
		return 1
	}
	return worst
}

// EdgeCut is the share of g's CSR entries (self loops left out) whose
// ends part puts in different parts.
func EdgeCut(g *dataset.Graph, part []int32) float64 {
	var cut, all int64
	for v := range len(g.Indptr) - 1 {
		for _, u := range g.Indices[g.Indptr[v]:g.Indptr[v+1]] {
			if int(u) == v {
				continue
			}
			all++
			if part[u] != part[v] {
				cut++
			}
		}
	}
	if all == 0 {
		return 0
	}
	return float64(cut) / float64(all)
}

// Random assigns n vertices to k parts uniformly at random (seeded): the
// baseline a partitioner's edge cut is measured against.
func Random(n, k int, seed uint64) []int32 {
	part := make([]int32, n)
	r := rng.SplitMix{State: rng.Mix(seed ^ 0x72616e64)} // "rand"
	for i := range part {
		part[i] = int32(r.Below(uint64(k)))
	}
	return part
}

// Halos lists, for each of the k parts of part, the vertices outside it
// that its training vertices' neighbourhoods reach most: the vertices
// adjacent to the most of its training vertices (ties to the lower id),
// at most fraction times the part's size of them, none for which skip is
// true (skip may be nil), each list in vertex order. A macro-batch that
// holds a part's halo keeps those neighbours of its training vertices
// that the partition cut (JOESTAR's halo nodes, docs/loaders.md). It is
// O(|E_train| + h log h) for the h candidates of a part.
func Halos(ctx context.Context, g *dataset.Graph, part []int32, k int, fraction float64, skip func(v int32) bool) ([][]int32, error) {
	n := len(g.Indptr) - 1
	switch {
	case len(part) != n || k < 1:
		return nil, fmt.Errorf("halos: a partition of %d vertices into %d parts for %d vertices", len(part), k, n)
	case !(fraction >= 0) || math.IsInf(fraction, 0):
		return nil, &inputerr.Error{Field: "halo-fraction", Msg: fmt.Sprintf("%g (want 0 or more)", fraction)}
	}
	sizes := make([]int, k)
	train := make([][]int32, k)
	for v, p := range part {
		if p < 0 || int(p) >= k {
			return nil, fmt.Errorf("halos: vertex %d is in part %d of %d", v, p, k)
		}
		sizes[p]++
	}
	for _, v := range g.Train {
		train[part[v]] = append(train[part[v]], int32(v))
	}
	halos := make([][]int32, k)
	count := make([]int32, n)
	var touched []int32
	for p := range k {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("halos: %w", err)
		}
		limit := int(math.Ceil(fraction * float64(sizes[p])))
		if limit == 0 {
			continue
		}
		touched = touched[:0]
		for _, v := range train[p] {
			for _, u := range g.Indices[g.Indptr[v]:g.Indptr[v+1]] {
				if part[u] == int32(p) || (skip != nil && skip(u)) {
					continue
				}
				if count[u] == 0 {
					touched = append(touched, u)
				}
				count[u]++
			}
		}
		slices.SortFunc(touched, func(a, b int32) int {
			if count[a] != count[b] {
				return int(count[b] - count[a])
			}
			return int(a - b)
		})
		h := slices.Clone(touched[:min(limit, len(touched))])
		slices.Sort(h)
		halos[p] = h
		for _, u := range touched {
			count[u] = 0
		}
	}
	return halos, nil
}

// Kept is the mean share of a training vertex's sampled neighbourhood,
// hops deep, that the second stage can still sample when its part's
// macro-batch trains it: the paths of uniform neighbour draws (online
// sampling's, hop by hop) whose every vertex the macro-batch holds. A
// vertex is held when it is in the training vertex's part, in that part's
// halo (halos may be nil) or a hub (hub may be nil), and any other vertex
// with the chance that its part shares the macro-batch, (macroParts - 1) /
// (k - 1), when the k parts are shuffled into macro-batches of macroParts
// each epoch. Online sampling keeps 1; training vertices without
// neighbours are left out. With hops 1 it is the share of the neighbours;
// deeper hops count what halos leave out, the halo's own neighbours
// (docs/loaders.md). O(k hops |E|) at most.
func Kept(g *dataset.Graph, part []int32, k, macroParts, hops int, hub func(v int32) bool, halos [][]int32) (float64, error) {
	n := len(g.Indptr) - 1
	switch {
	case len(part) != n || k < 1 || macroParts < 1 || macroParts > k || hops < 1:
		return 0, fmt.Errorf("kept: a partition of %d vertices into %d parts, %d a macro-batch, %d hops, for %d vertices", len(part), k, macroParts, hops, n)
	case halos != nil && len(halos) != k:
		return 0, fmt.Errorf("kept: halos for %d parts, the partition has %d", len(halos), k)
	}
	other := 1.0
	if k > 1 {
		other = float64(macroParts-1) / float64(k-1)
	}
	train := make([][]int32, k)
	for _, v := range g.Train {
		if p := part[v]; p >= 0 && int(p) < k {
			train[p] = append(train[p], int32(v))
		}
	}
	halo := make([]uint64, (n+63)/64)
	// level[h][x] is the share of x's h-hop paths held (NaN: not needed),
	// frontier[h] the vertices it is needed for.
	level := make([][]float32, hops)
	for h := 1; h < hops; h++ {
		level[h] = make([]float32, n)
		for i := range level[h] {
			level[h][i] = float32(math.NaN())
		}
	}
	frontier := make([][]int32, hops+1)
	var sum float64
	counted := 0
	for p := range k {
		if halos != nil {
			for _, u := range halos[p] {
				halo[u/64] |= 1 << (u % 64)
			}
		}
		held := func(u int32) float64 {
			if part[u] == int32(p) || halo[u/64]&(1<<(u%64)) != 0 || (hub != nil && hub(u)) {
				return 1
			}
			return other
		}
		// share is x's h-hop paths held, given level[h-1] on its neighbours.
		share := func(x int32, h int) float64 {
			nb := g.Indices[g.Indptr[x]:g.Indptr[x+1]]
			if len(nb) == 0 {
				return 1
			}
			var s float64
			for _, u := range nb {
				w := held(u)
				if h > 1 {
					w *= float64(level[h-1][u])
				}
				s += w
			}
			return s / float64(len(nb))
		}
		// The vertices each hop's shares are needed for, outermost last.
		frontier[hops] = train[p]
		for h := hops - 1; h >= 1; h-- {
			frontier[h] = frontier[h][:0]
			for _, x := range frontier[h+1] {
				for _, u := range g.Indices[g.Indptr[x]:g.Indptr[x+1]] {
					if math.IsNaN(float64(level[h][u])) {
						level[h][u] = 0
						frontier[h] = append(frontier[h], u)
					}
				}
			}
		}
		for h := 1; h < hops; h++ {
			for _, x := range frontier[h] {
				level[h][x] = float32(share(x, h))
			}
		}
		for _, v := range train[p] {
			if g.Indptr[v+1] > g.Indptr[v] {
				sum += share(v, hops)
				counted++
			}
		}
		for h := 1; h < hops; h++ {
			for _, x := range frontier[h] {
				level[h][x] = float32(math.NaN())
			}
		}
		if halos != nil {
			for _, u := range halos[p] {
				halo[u/64] = 0
			}
		}
	}
	if counted == 0 {
		return 1, nil
	}
	return sum / float64(counted), nil
}
