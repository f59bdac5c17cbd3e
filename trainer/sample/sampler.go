package sample

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"runtime"
	"slices"
	"sync"

	"github.com/gnnplan/gnnplan/internal/rng"

	"github.com/gnnplan/gnnplan/internal/inputerr"
	"github.com/gnnplan/gnnplan/trainer/dataset"
)

// DefaultBatchSize is the batch size of GNNDrive and DiskGNN (docs/architecture.md
// section 12; Moment and Hyperion use 8000).
const DefaultBatchSize = 1024

// AllNeighbors as a fanout takes every neighbor of each vertex at that hop
// (DGL's fanout -1, PyG's num_neighbors -1), so a small graph can train
// full-batch: with every hop at AllNeighbors and one batch of all the
// seeds, the blocks are the seeds' whole L-hop neighborhood.
const AllNeighbors = -1

// defaultFanouts is the papers' 2-hop GraphSAGE sampling: 25 neighbors of
// each seed, then 10 of each vertex reached (docs/architecture.md section 12).
func defaultFanouts() []int { return []int{25, 10} }

// DefaultSamplerOptions returns the papers' sampler: fanouts (25, 10),
// batches of 1024 seeds, shuffled every epoch, one worker per core. A
// zero SamplerOptions differs only in not shuffling, because a bool
// cannot default to true.
func DefaultSamplerOptions() SamplerOptions {
	return SamplerOptions{Fanouts: defaultFanouts(), BatchSize: DefaultBatchSize, Shuffle: true}
}

// SamplerOptions configure a Sampler.
type SamplerOptions struct {
	// Fanouts[h] is how many neighbors are drawn per vertex at hop h+1
	// counted from the seeds: (25, 10) draws 25 neighbors of each seed,
	// then 10 of every vertex the first hop holds (the seeds included, as
	// in DGL). This is PyG's num_neighbors order; DGL's NeighborSampler
	// lists the same fanouts input layer first, reversed. A fanout of
	// AllNeighbors (-1) takes every neighbor, each as often as the CSR
	// lists it. Empty means (25, 10).
	Fanouts []int
	// BatchSize is the number of seeds per mini-batch (the last batch of
	// an epoch may be smaller); 0 means DefaultBatchSize.
	BatchSize int
	// Seed fixes the shuffle and every neighbor draw.
	Seed uint64
	// Workers is the number of goroutines Epoch and Hotness sample with;
	// 0 means GOMAXPROCS. Results do not depend on it.
	Workers int
	// Shuffle permutes the seeds anew every epoch (from Seed and the
	// epoch number); without it batches take the seeds in order.
	Shuffle bool
	// Seeds are the vertices batches are made of; nil means the graph's
	// training split. A data-parallel worker passes its own partition.
	Seeds []int64
}

// Sampler draws mini-batches of uniformly sampled neighborhoods
// (GraphSAGE's sampler, as DGL's NeighborSampler and PyG's NeighborLoader
// implement it) from a graph held in memory. It is safe for concurrent
// use.
//
// Every random choice comes from a counter-based generator keyed by
// (Seed, epoch, batch, hop, vertex) rather than from a stream shared by
// the workers, so a batch is a pure function of its coordinates: the
// same whichever worker samples it, in whatever order, with any number
// of workers. That makes runs reproducible and lets hotness, measured
// ahead of training with the same options, see exactly the batches
// training will see.
//
// Each sampling goroutine deduplicates through an array of 4 bytes per
// vertex (444 MB for ogbn-papers100M's 111M vertices): one load per
// lookup, where a hash map costs several times more.
type Sampler struct {
	g         *dataset.Graph
	n         int // vertices
	fanouts   []int
	batchSize int
	seed      uint64
	workers   int
	shuffle   bool
	seeds     []int32

	mu     sync.Mutex
	orders []*epochOrder // the few most recent epochs' seed permutations
	// scratch holds per-sampler dedup arrays of 4 bytes per vertex, so
	// Sample called from any goroutine reuses one instead of allocating.
	scratch sync.Pool
}

// epochOrder is one epoch's permutation of the seeds, computed once by
// whichever goroutine asks first.
type epochOrder struct {
	epoch int
	once  sync.Once
	perm  []int32
}

// keptOrders bounds the permutation cache: a trainer and a prefetcher
// may be one epoch apart, rarely more.
const keptOrders = 4

// Block is one hop's bipartite graph, with DGL's block semantics: Dst are
// the vertices whose neighbors were sampled at this hop (the previous
// hop's Src; the seeds at hop 1), and Src is Dst followed by the vertices
// first reached at this hop, without duplicates. Putting Dst first lets a
// layer read a destination's own representation at the same local index
// (GraphSAGE's self term) and makes each hop's Src the next hop's Dst.
//
// Edges are stored as CSR over local indices: the sampled neighbors of
// Dst[i] are Src[SrcIdx[j]] for j in [Offsets[i], Offsets[i+1]).
// Dst and Src of all blocks of a MiniBatch share one backing array and
// must not be modified.
type Block struct {
	Dst, Src []int32
	Offsets  []int32 // len(Dst)+1
	SrcIdx   []int32 // indices into Src
}

// NumEdges returns the number of sampled edges of the block.
func (b *Block) NumEdges() int { return len(b.SrcIdx) }

// MiniBatch is one batch of seeds and its sampled neighborhood.
type MiniBatch struct {
	Index int     // batch number within the epoch
	Epoch int     // the epoch it was sampled for
	Seeds []int32 // the batch's seeds, = Blocks[0].Dst
	// Blocks holds one block per hop, outermost hop last. A model
	// computes from the last block to the first (DGL's blocks list is
	// ordered the other way round, input layer first).
	Blocks []Block
}

// Input returns the vertices whose features the batch reads: the
// outermost block's Src.
func (mb *MiniBatch) Input() []int32 {
	if len(mb.Blocks) == 0 {
		return mb.Seeds
	}
	return mb.Blocks[len(mb.Blocks)-1].Src
}

// NumEdges returns the number of sampled edges over all hops.
func (mb *MiniBatch) NumEdges() int {
	n := 0
	for i := range mb.Blocks {
		n += mb.Blocks[i].NumEdges()
	}
	return n
}

// NewSampler checks the options against g and returns a sampler. Options
// out of range are *inputerr.Error naming the field. g's Indices are
// trusted to be in range (LoadGraph checks them); Indptr's ends and the
// seeds are checked here.
func NewSampler(g *dataset.Graph, opt SamplerOptions) (*Sampler, error) {
	bad := func(field, format string, args ...any) error {
		return &inputerr.Error{Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	if g == nil || len(g.Indptr) < 2 {
		return nil, bad("num_nodes", "the graph has no vertices")
	}
	n := len(g.Indptr) - 1
	if n > math.MaxInt32 {
		return nil, bad("num_nodes", "%d: the sampler indexes vertices with int32 (at most %d)", n, math.MaxInt32)
	}
	if g.Indptr[0] != 0 || g.Indptr[n] != int64(len(g.Indices)) {
		return nil, bad("indptr", "offsets run from %d to %d (want 0 to the %d entries of indices)", g.Indptr[0], g.Indptr[n], len(g.Indices))
	}

	s := &Sampler{g: g, n: n, batchSize: opt.BatchSize, seed: opt.Seed, workers: opt.Workers, shuffle: opt.Shuffle}
	s.fanouts = append([]int(nil), opt.Fanouts...)
	if len(s.fanouts) == 0 {
		s.fanouts = defaultFanouts()
	}
	for h, f := range s.fanouts {
		if f < 1 && f != AllNeighbors {
			return nil, bad("fanouts", "hop %d has fanout %d (want >= 1, or -1 for every neighbour)", h+1, f)
		}
	}
	switch {
	case s.batchSize < 0:
		return nil, bad("batch_size", "%d (want >= 1, or 0 for %d)", s.batchSize, DefaultBatchSize)
	case s.batchSize == 0:
		s.batchSize = DefaultBatchSize
	}
	switch {
	case s.workers < 0:
		return nil, bad("workers", "%d (want >= 1, or 0 for one per core)", s.workers)
	case s.workers == 0:
		s.workers = runtime.GOMAXPROCS(0)
	}

	src, field := opt.Seeds, "seeds"
	if src == nil {
		src, field = g.Train, dataset.TrainFile
	}
	seedErr := func(format string, args ...any) error {
		e := bad(field, format, args...).(*inputerr.Error)
		if field == dataset.TrainFile && g.Dir != "" {
			e.Path, e.Field = filepath.Join(g.Dir, dataset.TrainFile), ""
		}
		return e
	}
	if len(src) == 0 {
		return nil, seedErr("no seed vertices to make batches of")
	}
	// A seed listed twice would appear twice in a batch's Dst, breaking
	// the one-row-per-vertex block invariant.
	seen := make([]uint64, (n+63)/64)
	s.seeds = make([]int32, len(src))
	for i, v := range src {
		if v < 0 || v >= int64(n) {
			return nil, seedErr("entry %d is vertex %d, out of range [0, %d)", i, v, n)
		}
		if seen[v/64]&(1<<(v%64)) != 0 {
			return nil, seedErr("vertex %d is listed twice (entry %d)", v, i)
		}
		seen[v/64] |= 1 << (v % 64)
		s.seeds[i] = int32(v)
	}

	// Offsets are int32: refuse fanouts that could put more than 2^31-1
	// edges in one block.
	if h, edges := maxBlockEdges(min(s.batchSize, len(s.seeds)), s.fanouts, n, len(g.Indices)); edges > math.MaxInt32 {
		return nil, bad("fanouts", "batches of %d seeds with fanouts %v can sample %.0f edges at hop %d, more than one block holds (2^31-1)", s.batchSize, s.fanouts, edges, h+1)
	}

	s.scratch.New = func() any {
		local := make([]int32, n)
		for i := range local {
			local[i] = -1
		}
		return &sampleScratch{local: local}
	}
	return s, nil
}

// maxBlockEdges bounds the edges of the largest block of a batch of seeds
// seeds: each hop draws at most fanout edges per Dst, and at most every
// one of the nnz CSR entries once (Dst are distinct), which is the only
// bound for AllNeighbors. It returns the hop (from 0) and its bound.
func maxBlockEdges(seeds int, fanouts []int, n, nnz int) (hop int, edges float64) {
	dst := float64(seeds)
	for h, f := range fanouts {
		e := float64(nnz)
		if f != AllNeighbors {
			e = min(dst*float64(f), e)
		}
		if e > edges {
			hop, edges = h, e
		}
		dst = min(dst+e, float64(n))
	}
	return hop, edges
}

// Fanouts returns the per-hop fanouts in use.
func (s *Sampler) Fanouts() []int { return append([]int(nil), s.fanouts...) }

// BatchSize returns the number of seeds per full batch.
func (s *Sampler) BatchSize() int { return s.batchSize }

// Workers returns the number of goroutines Epoch samples with.
func (s *Sampler) Workers() int { return s.workers }

// NumSeeds returns the number of seed vertices an epoch covers.
func (s *Sampler) NumSeeds() int { return len(s.seeds) }

// Batches returns the number of mini-batches of an epoch: every seed once,
// the last batch possibly smaller.
func (s *Sampler) Batches(epoch int) int {
	return (len(s.seeds) + s.batchSize - 1) / s.batchSize
}

// Sample returns mini-batch batch of epoch. It is a pure function of
// (Seed, epoch, batch): any goroutine may call it, in any order, and gets
// the batch Epoch delivers. It panics if batch is outside [0, Batches).
func (s *Sampler) Sample(epoch, batch int) *MiniBatch {
	if nb := s.Batches(epoch); batch < 0 || batch >= nb {
		panic(fmt.Sprintf("sample: Sample batch %d out of range [0, %d)", batch, nb))
	}
	sc := s.scratch.Get().(*sampleScratch)
	defer s.scratch.Put(sc)
	return s.sample(sc, epoch, batch)
}

// Epoch samples every batch of epoch with Workers goroutines and calls fn
// on them in batch order, from the calling goroutine (fn need not be safe
// for concurrent use). At most 2*Workers batches are sampled ahead of fn,
// which bounds memory when fn is the slower side. It stops at the first
// error of fn, which it returns, or when ctx is done.
func (s *Sampler) Epoch(ctx context.Context, epoch int, fn func(*MiniBatch) error) error {
	return s.EpochFrom(ctx, epoch, 0, fn)
}

// EpochFrom is Epoch starting at batch first (a resumed run's next
// batch): batches before it are not sampled.
func (s *Sampler) EpochFrom(ctx context.Context, epoch, first int, fn func(*MiniBatch) error) error {
	nb := s.Batches(epoch)
	if first < 0 || first > nb {
		return fmt.Errorf("sample epoch %d: first batch %d out of range [0, %d]", epoch, first, nb)
	}
	return s.run(ctx, epoch, first, nb, 0, func(sc *sampleScratch, b int) *MiniBatch { return s.sample(sc, epoch, b) }, fn)
}

// run samples batches first to nb-1 with draw on Workers goroutines and
// calls fn on them in order; a batch's Index is base + its number.
func (s *Sampler) run(ctx context.Context, epoch, first, nb, base int, draw func(sc *sampleScratch, b int) *MiniBatch, fn func(*MiniBatch) error) error {
	workers := min(s.workers, nb-first)
	if workers <= 1 {
		sc := s.scratch.Get().(*sampleScratch)
		defer s.scratch.Put(sc)
		for b := first; b < nb; b++ {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("sample epoch %d: %w", epoch, err)
			}
			if err := fn(draw(sc, b)); err != nil {
				return err
			}
		}
		return nil
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	window := 2 * workers
	slots := make(chan struct{}, window) // batches handed out and not yet consumed
	jobs := make(chan int)
	results := make(chan *MiniBatch, window)
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(jobs)
		for b := first; b < nb; b++ {
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				return
			}
			select {
			case jobs <- b:
			case <-ctx.Done():
				return
			}
		}
	})
	for range workers {
		wg.Go(func() {
			sc := s.scratch.Get().(*sampleScratch)
			defer s.scratch.Put(sc)
			for b := range jobs {
				mb := draw(sc, b)
				select {
				case results <- mb:
				case <-ctx.Done():
					return
				}
			}
		})
	}

	// Batches are handed out in order and at most window are out, so the
	// next one to deliver is always among them: the reorder buffer never
	// holds more than window batches and never waits forever.
	pending := make(map[int]*MiniBatch, window)
	var err error
	for next := first; next < nb && err == nil; {
		if err = ctx.Err(); err != nil {
			err = fmt.Errorf("sample epoch %d: %w", epoch, err)
			break
		}
		if mb, ok := pending[next]; ok {
			delete(pending, next)
			err = fn(mb)
			<-slots
			next++
			continue
		}
		select {
		case mb := <-results:
			pending[mb.Index-base] = mb
		case <-ctx.Done():
		}
	}
	cancel()
	wg.Wait()
	return err
}

// sampleScratch is one goroutine's working memory.
type sampleScratch struct {
	// local maps a vertex to its index in the batch's vertex list, -1
	// when absent. Sized to the graph so a lookup is one load; entries
	// set by a batch are reset from the batch's own vertex list.
	local  []int32
	picked []int64            // chosen neighbor positions
	cand   []int32            // a vertex's neighbours within a Bitmap
	drawn  []int32            // a hop's draws within a Bitmap, vertex by vertex
	drop   []int64            // positions left out, when most are kept
	set    map[int64]struct{} // membership in Floyd's draw when it is long
}

// Keys of the counter-based generator. Each level of (seed, epoch,
// batch, hop, vertex) is folded in with splitmix64's finalizer, a
// bijection with full avalanche, so neighboring coordinates give
// unrelated streams. The tags keep the shuffle's stream apart from the
// neighbor draws'.
const (
	rngTagShuffle = 0x53485546464c4531
	rngTagSample  = 0x53414d504c453031
)

func rngKey(key, x uint64) uint64 { return rng.Mix(key ^ rng.Mix(x+rng.Golden)) }

// order returns epoch's sequence of seeds.
func (s *Sampler) order(epoch int) []int32 {
	if !s.shuffle {
		return s.seeds
	}
	s.mu.Lock()
	var o *epochOrder
	for _, c := range s.orders {
		if c.epoch == epoch {
			o = c
			break
		}
	}
	if o == nil {
		o = &epochOrder{epoch: epoch}
		if len(s.orders) == keptOrders {
			s.orders = append(s.orders[:0], s.orders[1:]...)
		}
		s.orders = append(s.orders, o)
	}
	s.mu.Unlock()
	o.once.Do(func() {
		perm := append([]int32(nil), s.seeds...)
		r := rng.SplitMix{State: rngKey(rngKey(s.seed, rngTagShuffle), uint64(epoch))}
		for i := len(perm) - 1; i > 0; i-- {
			j := r.Below(uint64(i) + 1)
			perm[i], perm[j] = perm[j], perm[i]
		}
		o.perm = perm
	})
	return o.perm
}

// sample draws batch of epoch using sc, which it leaves clean.
func (s *Sampler) sample(sc *sampleScratch, epoch, batch int) *MiniBatch {
	order := s.order(epoch)
	lo := batch * s.batchSize
	hi := min(lo+s.batchSize, len(order))
	mb := s.sampleSeeds(sc, order[lo:hi], s.batchKey(epoch, batch), nil)
	mb.Index, mb.Epoch = batch, epoch
	return mb
}

// batchKey is the generator key of batch of epoch.
func (s *Sampler) batchKey(epoch, batch int) uint64 {
	return rngKey(rngKey(rngKey(s.seed, rngTagSample), uint64(epoch)), uint64(batch))
}

// sampleSeeds draws the neighbourhood of seeds with key bkey using sc,
// which it leaves clean; with within, only among the vertices it marks.
func (s *Sampler) sampleSeeds(sc *sampleScratch, seeds []int32, bkey uint64, within Bitmap) *MiniBatch {
	indptr, local := s.g.Indptr, sc.local
	// all is the batch's vertex list in order of first reach; every
	// block's Dst and Src are prefixes of it.
	// Room for the seeds' first hop, and never more than every vertex
	// (a fanout of a hundred million must not ask for 800 GB).
	room := len(indptr) - 1
	if per := 2 * (1 + min(max(s.fanouts[0], 0), room)); len(seeds) <= room/per {
		room = len(seeds) * per
	}
	all := make([]int32, 0, room)
	for _, v := range seeds {
		local[v] = int32(len(all))
		all = append(all, v)
	}
	ends := make([]int, len(s.fanouts)+1) // len(all) before each hop and at the end
	ends[0] = len(all)
	blocks := make([]Block, len(s.fanouts))
	for h, fanout := range s.fanouts {
		k := int64(fanout)
		if fanout == AllNeighbors {
			k = math.MaxInt64 // no degree exceeds it: every list is taken whole
		}
		var b Block
		b, all = s.hop(sc, all, k, rngKey(bkey, uint64(h)), within)
		blocks[h] = b
		ends[h+1] = len(all)
	}
	for _, v := range all {
		local[v] = -1
	}
	for h := range blocks {
		blocks[h].Dst = all[:ends[h]:ends[h]]
		blocks[h].Src = all[:ends[h+1]:ends[h+1]]
	}
	return &MiniBatch{Seeds: all[:ends[0]:ends[0]], Blocks: blocks}
}

// hop draws up to k neighbours of each vertex of all (those within, when
// set), appending the vertices first reached to all.
func (s *Sampler) hop(sc *sampleScratch, all []int32, k int64, hkey uint64, within Bitmap) (Block, []int32) {
	if within != nil {
		return s.hopWithin(sc, all, k, hkey, within)
	}
	indptr, indices := s.g.Indptr, s.g.Indices
	nd := len(all)
	// The sizes are known before drawing, so offsets and SrcIdx are
	// allocated exactly once.
	offsets := make([]int32, nd+1)
	for i, v := range all[:nd] {
		deg := indptr[v+1] - indptr[v]
		offsets[i+1] = offsets[i] + int32(min(deg, k))
	}
	srcIdx := make([]int32, offsets[nd])
	for i := range nd {
		v := all[i]
		nbrs := indices[indptr[v]:indptr[v+1]]
		out := srcIdx[offsets[i]:offsets[i+1]]
		if int64(len(nbrs)) <= k {
			for j, u := range nbrs {
				out[j], all = sc.reach(all, u)
			}
			continue
		}
		r := rng.SplitMix{State: rngKey(hkey, uint64(v))}
		for j, p := range sc.choose(&r, int64(len(nbrs)), k) {
			out[j], all = sc.reach(all, nbrs[p])
		}
	}
	return Block{Offsets: offsets, SrcIdx: srcIdx}, all
}

// hopWithin is hop among the neighbours within holds: each vertex's draws
// first (their number is known only once drawn), then the vertices
// reached, in the same order.
func (s *Sampler) hopWithin(sc *sampleScratch, all []int32, k int64, hkey uint64, within Bitmap) (Block, []int32) {
	indptr, indices := s.g.Indptr, s.g.Indices
	nd := len(all)
	offsets := make([]int32, nd+1)
	drawn := sc.drawn[:0]
	for i, v := range all[:nd] {
		r := rng.SplitMix{State: rngKey(hkey, uint64(v))}
		drawn = sc.drawWithin(&r, drawn, indices[indptr[v]:indptr[v+1]], k, within)
		offsets[i+1] = int32(len(drawn))
	}
	sc.drawn = drawn
	srcIdx := make([]int32, len(drawn))
	for j, u := range drawn {
		srcIdx[j], all = sc.reach(all, u)
	}
	return Block{Offsets: offsets, SrcIdx: srcIdx}, all
}

// reach is u's index in the batch's vertex list all, u appended when it
// is new.
func (sc *sampleScratch) reach(all []int32, u int32) (int32, []int32) {
	l := sc.local[u]
	if l < 0 {
		l = int32(len(all))
		sc.local[u] = l
		all = append(all, u)
	}
	return l, all
}

// rejectAfter is the list length, in multiples of the fanout, from which
// drawWithin draws at random instead of passing over the whole list, and
// the draws it makes before it gives up and passes.
const rejectAfter = 4

// drawWithin appends to dst up to k of nbrs that within holds, uniformly
// among the k-subsets of them (all of them when they are k or fewer). A
// list longer than rejectAfter x k is drawn from at random: k positions
// as hop draws them (Floyd's), then more, each uniform among those not
// yet drawn, keeping those within until k are. The drawn positions are
// at every step a uniform subset, so the first k within are a uniform
// k-subset of them; it takes about k / (the share within) draws instead
// of two passes over a hub's list, and where every neighbour is within
// it draws what hop draws. Where rejectAfter x k draws find fewer than
// k, it passes over the list.
func (sc *sampleScratch) drawWithin(r *rng.SplitMix, dst, nbrs []int32, k int64, within Bitmap) []int32 {
	deg := int64(len(nbrs))
	if deg > rejectAfter*k {
		start := len(dst)
		seen := sc.floyd(r, sc.picked[:0], deg, k)
		for _, p := range seen {
			if within.Has(nbrs[p]) {
				dst = append(dst, nbrs[p])
			}
		}
		for draws := k; draws < rejectAfter*k && int64(len(dst)-start) < k; draws++ {
			p := int64(r.Below(uint64(deg)))
			if sc.drawnBefore(seen, p, k) {
				continue
			}
			seen = append(seen, p)
			if within.Has(nbrs[p]) {
				dst = append(dst, nbrs[p])
			}
		}
		sc.picked = seen
		if int64(len(dst)-start) == k {
			return dst
		}
		dst = dst[:start]
	}
	sc.cand = within.keep(sc.cand[:0], nbrs)
	if int64(len(sc.cand)) <= k {
		return append(dst, sc.cand...)
	}
	for _, p := range sc.choose(r, int64(len(sc.cand)), k) {
		dst = append(dst, sc.cand[p])
	}
	return dst
}

// drawnBefore says position p is among seen, the positions drawn after
// floyd drew k; it records p in floyd's set where floyd kept one.
func (sc *sampleScratch) drawnBefore(seen []int64, p, k int64) bool {
	if k <= 64 {
		return containsPos(seen, p)
	}
	if _, ok := sc.set[p]; ok {
		return true
	}
	sc.set[p] = struct{}{}
	return false
}

// choose returns k distinct positions in [0, deg), deg > k, uniformly
// among the k-subsets, by Floyd's algorithm: O(k) draws and no O(deg)
// scratch, which matters for hubs with millions of neighbors. When most
// positions are kept it draws the few to leave out instead. The returned
// slice is sc's and valid until the next call.
func (sc *sampleScratch) choose(r *rng.SplitMix, deg, k int64) []int64 {
	skip := deg - k
	if skip >= k {
		sc.picked = sc.floyd(r, sc.picked[:0], deg, k)
		return sc.picked
	}
	sc.drop = sc.floyd(r, sc.drop[:0], deg, skip)
	slices.Sort(sc.drop)
	kept, d := sc.picked[:0], 0
	for p := range deg {
		if d < len(sc.drop) && sc.drop[d] == p {
			d++
			continue
		}
		kept = append(kept, p)
	}
	sc.picked = kept
	return kept
}

// floyd appends k distinct positions in [0, deg) to picked.
func (sc *sampleScratch) floyd(r *rng.SplitMix, picked []int64, deg, k int64) []int64 {
	if k <= 64 { // a scan of a few cache lines beats hashing
		for j := deg - k; j < deg; j++ {
			t := int64(r.Below(uint64(j) + 1))
			if containsPos(picked, t) {
				t = j
			}
			picked = append(picked, t)
		}
		return picked
	}
	if sc.set == nil {
		sc.set = make(map[int64]struct{}, k)
	}
	clear(sc.set)
	for j := deg - k; j < deg; j++ {
		t := int64(r.Below(uint64(j) + 1))
		if _, ok := sc.set[t]; ok {
			t = j
		}
		sc.set[t] = struct{}{}
		picked = append(picked, t)
	}
	return picked
}

func containsPos(xs []int64, x int64) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
