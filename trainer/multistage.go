package trainer

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"sort"
	"sync"
	"time"
	"unsafe"

	"github.com/gnnplan/gnnplan/internal/inputerr"
	"github.com/gnnplan/gnnplan/internal/rng"
	"github.com/gnnplan/gnnplan/trainer/dataset"
	"github.com/gnnplan/gnnplan/trainer/sample"
	"github.com/gnnplan/gnnplan/trainer/store"
)

// Multistage configures LoaderMultistage, HANOI's multistage sampling
// (docs/loaders.md): every epoch the parts are shuffled and taken
// MacroParts at a time as macro-batches; a macro-batch's rows are read
// into memory in one sequential pass (first stage) and its training
// vertices' mini-batches are sampled inside it (second stage): among its
// parts' vertices and the hubs, which every macro-batch holds.
type Multistage struct {
	// Part is each vertex's part, 0 to Parts-1 (package partition).
	Part  []int32
	Parts int
	// MacroParts is how many parts make a macro-batch (0: 1).
	MacroParts int
	// Hubs are the vertices every macro-batch holds besides its parts':
	// out of core exactly the rows the store holds in memory (nil: none).
	Hubs sample.Bitmap
	// Halos are, per part, vertices outside it that a macro-batch of it
	// also holds (partition.Halos: the neighbours of its training
	// vertices the partition cut); out of core their rows not in memory
	// are packed with the part's. nil: none.
	Halos [][]int32
	// Pieces are, out of core, each part's rows the store does not hold
	// in memory, part p as batch p of worker 0, epoch 0 (PackParts); nil
	// in memory, or to read the rows where the feature source has them
	// (the probe).
	Pieces *store.Packed
}

// partsSampling identifies a partition and its halos: what packed parts
// were packed for.
func partsSampling(ms *Multistage) string {
	b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(ms.Part))), 4*len(ms.Part))
	id := fmt.Sprintf("%d parts of %d vertices, partition %08x", ms.Parts, len(ms.Part), crc32.ChecksumIEEE(b))
	if halo := haloRows(ms); halo > 0 {
		h := crc32.NewIEEE()
		for _, vs := range ms.Halos {
			h.Write(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(vs))), 4*len(vs)))
			h.Write([]byte{0})
		}
		id += fmt.Sprintf(", halos of %d vertices %08x", halo, h.Sum32())
	}
	return id
}

// haloRows counts ms's halos' vertices (a vertex in several, each time).
func haloRows(ms *Multistage) int {
	n := 0
	for _, vs := range ms.Halos {
		n += len(vs)
	}
	return n
}

// checkMultistage refuses a Multistage that does not fit g.
func checkMultistage(g *dataset.Graph, o Options) error {
	ms := o.Multistage
	bad := func(format string, args ...any) error {
		return &inputerr.Error{Path: g.Dir, Field: "loader", Msg: fmt.Sprintf(format, args...)}
	}
	switch {
	case o.Loader != LoaderMultistage && ms != nil:
		return bad("a multistage configuration for the %q loader (want %q)", o.Loader, LoaderMultistage)
	case o.Loader == LoaderMultistage && ms == nil:
		return bad("the multistage loader needs its partition (Options.Multistage)")
	case ms == nil:
		return nil
	case ms.Parts < 1 || int64(len(ms.Part)) != g.Meta.NumNodes || ms.MacroParts < 0:
		return bad("a partition of %d vertices into %d parts, %d per macro-batch, for %d vertices", len(ms.Part), ms.Parts, ms.MacroParts, g.Meta.NumNodes)
	case ms.Hubs != nil && int64(len(ms.Hubs)) != (g.Meta.NumNodes+63)/64:
		return bad("a hub set of %d words for %d vertices", len(ms.Hubs), g.Meta.NumNodes)
	case ms.Halos != nil && len(ms.Halos) != ms.Parts:
		return bad("halos for %d parts, the partition has %d", len(ms.Halos), ms.Parts)
	case ms.Pieces != nil && ms.Pieces.Manifest().Sampling != partsSampling(ms):
		return bad("packed parts of another partition: pack the parts again")
	}
	if _, ok := o.Features.(storeSource); ms.Pieces != nil && !ok {
		return bad("packed parts without the feature store they were packed from (features %T)", o.Features)
	}
	for v, p := range ms.Part {
		if p < 0 || int(p) >= ms.Parts {
			return bad("vertex %d is in part %d (want 0 to %d)", v, p, ms.Parts-1)
		}
	}
	for p, vs := range ms.Halos {
		for _, v := range vs {
			if v < 0 || int64(v) >= g.Meta.NumNodes {
				return bad("part %d's halo holds vertex %d (want 0 to %d)", p, v, g.Meta.NumNodes-1)
			}
		}
	}
	return nil
}

// stages is one worker's multistage batchSource: its training vertices by
// part, the macro-batches of the last epoch planned, and out of core the
// first stage's rows.
type stages struct {
	sampler *sample.Sampler
	ms      *Multistage
	seed    uint64
	n       int
	members [][]int32 // each part's vertices, in vertex order
	seeds   [][]int32 // each part's training vertices of this worker
	macro   int       // parts per macro-batch
	epochs  int       // the run's epochs: none is read ahead after the last

	mu    sync.Mutex
	plans [2]*epochPlan // the last epochs planned, by parity
	rows  *macroRows    // out of core: the first stage's rows
}

// epochPlan is an epoch's macro-batches.
type epochPlan struct {
	epoch  int
	macros []macroBatch
	total  int
}

// macroBatch is some parts, their training vertices shuffled, and where
// its batches start among the epoch's.
type macroBatch struct {
	parts          []int32
	seeds          []int32
	first, batches int
}

func newStages(g *dataset.Graph, smp *sample.Sampler, seeds []int64, ms *Multistage, seed uint64, epochs int) *stages {
	st := &stages{sampler: smp, ms: ms, seed: seed, n: int(g.Meta.NumNodes), macro: max(ms.MacroParts, 1), epochs: epochs,
		members: make([][]int32, ms.Parts), seeds: make([][]int32, ms.Parts)}
	for v, p := range ms.Part {
		st.members[p] = append(st.members[p], int32(v))
	}
	for _, v := range seeds {
		p := ms.Part[v]
		st.seeds[p] = append(st.seeds[p], int32(v))
	}
	return st
}

// epochPlan plans epoch: the parts in a seeded random order, cut into
// macro-batches of st.macro parts, each one's training vertices shuffled.
func (st *stages) epochPlan(epoch int) *epochPlan {
	st.mu.Lock()
	defer st.mu.Unlock()
	if p := st.plans[epoch&1]; p != nil && p.epoch == epoch {
		return p
	}
	key := rng.Mix(st.seed ^ rng.Mix(uint64(epoch)+0x6d616372)) // "macr"
	order := make([]int32, st.ms.Parts)
	for i := range order {
		order[i] = int32(i)
	}
	r := rng.SplitMix{State: key}
	shuffle(&r, order)
	p := &epochPlan{epoch: epoch}
	bs := st.sampler.BatchSize()
	for lo := 0; lo < len(order); lo += st.macro {
		m := macroBatch{parts: order[lo:min(lo+st.macro, len(order))], first: p.total}
		for _, q := range m.parts {
			m.seeds = append(m.seeds, st.seeds[q]...)
		}
		if len(m.seeds) == 0 {
			continue
		}
		rs := rng.SplitMix{State: rng.Mix(key ^ uint64(len(p.macros)+1))}
		shuffle(&rs, m.seeds)
		m.batches = (len(m.seeds) + bs - 1) / bs
		p.total += m.batches
		p.macros = append(p.macros, m)
	}
	st.plans[epoch&1] = p
	return p
}

func shuffle(r *rng.SplitMix, xs []int32) {
	for i := len(xs) - 1; i > 0; i-- {
		j := r.Below(uint64(i) + 1)
		xs[i], xs[j] = xs[j], xs[i]
	}
}

// Batches is how many batches epoch's macro-batches make.
func (st *stages) Batches(epoch int) int { return st.epochPlan(epoch).total }

// within is the vertices macro-batch m holds: its parts' and their
// halos', and the hubs.
func (st *stages) within(m *macroBatch) sample.Bitmap {
	set := sample.NewBitmap(st.n)
	copy(set, st.ms.Hubs)
	for _, p := range m.parts {
		for _, v := range st.members[p] {
			set.Set(v)
		}
		if st.ms.Halos != nil {
			for _, v := range st.ms.Halos[p] {
				set.Set(v)
			}
		}
	}
	return set
}

// EpochFrom samples epoch's batches from batch first, macro-batch by
// macro-batch; out of core each macro-batch's rows are read (the first
// stage) on a goroutine of their own, the next while this one's batches
// train, and after the last the next epoch's first (unless this is the
// run's last epoch): it returns once that is read.
func (st *stages) EpochFrom(ctx context.Context, epoch, first int, fn func(*sample.MiniBatch) error) (err error) {
	plan := st.epochPlan(epoch)
	start := sort.Search(len(plan.macros), func(i int) bool { return plan.macros[i].first+plan.macros[i].batches > first })
	macros := plan.macros[start:]
	var loaded <-chan loadedMacro
	if st.rows != nil {
		var then *macroBatch
		if epoch+1 < st.epochs {
			if next := st.epochPlan(epoch + 1); len(next.macros) > 0 {
				then = &next.macros[0]
			}
		}
		ctx2, cancel := context.WithCancel(ctx)
		var wait func()
		loaded, wait = st.rows.loadAll(ctx2, epoch, macros, then)
		defer func() {
			if err != nil {
				cancel()
			}
			wait()
			cancel()
		}()
	}
	for i := range macros {
		m := &macros[i]
		if loaded != nil {
			lm, ok := <-loaded
			if !ok {
				return fmt.Errorf("epoch %d: %w", epoch+1, context.Cause(ctx))
			}
			if lm.err != nil {
				return lm.err
			}
		}
		from := max(0, first-m.first)
		if err := st.sampler.EpochWithin(ctx, epoch, m.seeds, st.within(m), m.first, from, fn); err != nil {
			return err
		}
	}
	return nil
}

// macroRows is a worker's first stage out of core: two buffers of
// macro-batch rows, one being trained from while the next is read, and
// the store's overlay, which finds a batch's row in the store's caches or
// its macro-batch's buffer with one lookup.
type macroRows struct {
	pieces *store.Packed
	ov     *store.Overlay
	dim    int
	free   chan *macroBuf
	bufs   []*macroBuf // both buffers, kept across epochs (gigabytes: filling fresh pages is slow)

	mu   sync.Mutex
	held map[int]*macroBuf // by the macro-batch's first batch
	// ahead is the next epoch's first macro-batch, read while this
	// epoch's last trained; its rows are registered with the overlay when
	// that epoch takes it (nil: none).
	ahead *macroAhead
}

// macroAhead is a macro-batch read ahead: epoch's first, of parts.
type macroAhead struct {
	epoch int
	parts []int32
	b     *macroBuf
}

// macroBuf is one macro-batch's rows read from disk, its parts' pieces
// as read. stats is what reading them cost, reported with the
// macro-batch's first batch; left counts its batches not yet gathered.
type macroBuf struct {
	read  store.PartsRead
	load  uint32 // the overlay's first load its pieces are
	first int
	left  int
	stats GatherStats
}

// loadedMacro is a macro-batch read, or the error reading it.
type loadedMacro struct {
	err error
}

func newMacroRows(pieces *store.Packed, ov *store.Overlay, dim int) *macroRows {
	mr := &macroRows{pieces: pieces, ov: ov, dim: dim, free: make(chan *macroBuf, 2), held: map[int]*macroBuf{},
		bufs: []*macroBuf{{}, {}}}
	for _, b := range mr.bufs {
		mr.free <- b
	}
	return mr
}

// loadAll reads the rows of epoch's macros in order into free buffers
// (the first may have been read ahead), sending one item per macro-batch
// read, then, with then not nil, reads then (the next epoch's first) ahead
// into the buffer the one before the last frees. It ends (closing the
// channel) after that, at an error or when ctx ends. wait waits for it to
// end.
func (mr *macroRows) loadAll(ctx context.Context, epoch int, macros []macroBatch, then *macroBatch) (_ <-chan loadedMacro, wait func()) {
	out := make(chan loadedMacro)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(out)
		for i := range macros {
			m := &macros[i]
			var b *macroBuf
			if i == 0 {
				b = mr.takeAhead(epoch, m)
			}
			if b == nil {
				var err error
				if b, err = mr.readFree(ctx, m); err != nil {
					select {
					case out <- loadedMacro{err: err}:
					case <-ctx.Done():
					}
					return
				} else if b == nil {
					return
				}
			}
			err := mr.adopt(m, b)
			select {
			case out <- loadedMacro{err: err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
		if then != nil {
			mr.readAhead(ctx, epoch+1, then)
		}
	}()
	return out, func() { <-done }
}

// readFree reads m into the next buffer freed: nil when ctx ends first,
// and after an error, which frees the buffer again.
func (mr *macroRows) readFree(ctx context.Context, m *macroBatch) (*macroBuf, error) {
	var b *macroBuf
	select {
	case b = <-mr.free:
	case <-ctx.Done():
		return nil, nil
	}
	if err := mr.read(ctx, m, b); err != nil {
		mr.free <- b
		return nil, err
	}
	return b, nil
}

// readAhead reads m, epoch's first macro-batch, into the next buffer
// freed, for that epoch to take (takeAhead). A read that fails or is
// stopped leaves nothing: the epoch reads m itself, and reports the error.
func (mr *macroRows) readAhead(ctx context.Context, epoch int, m *macroBatch) {
	b, err := mr.readFree(ctx, m)
	if b == nil || err != nil {
		return
	}
	mr.mu.Lock()
	mr.ahead = &macroAhead{epoch: epoch, parts: m.parts, b: b}
	mr.mu.Unlock()
}

// takeAhead is the buffer read ahead for m when m is epoch's first
// macro-batch as read ahead (nil otherwise: a buffer read ahead for
// another is freed).
func (mr *macroRows) takeAhead(epoch int, m *macroBatch) *macroBuf {
	mr.mu.Lock()
	a := mr.ahead
	mr.ahead = nil
	mr.mu.Unlock()
	if a == nil {
		return nil
	}
	if a.epoch != epoch || m.first != 0 || !slices.Equal(a.parts, m.parts) {
		mr.free <- a.b
		return nil
	}
	return a.b
}

// read reads m's parts' disk rows into b: each part's pieces whole, one
// sequential read each, straight into b's buffer, where the batches use
// them; the next part's read while this one's is checked.
func (mr *macroRows) read(ctx context.Context, m *macroBatch, b *macroBuf) error {
	// A part's piece holds its rows not in memory (the hubs are), each
	// with its vertex id, checked: those are the macro-batch's rows.
	parts := make([]store.PackedBatch, len(m.parts))
	for j, p := range m.parts {
		parts[j] = store.PackedBatch{Batch: int(p)}
	}
	var err error
	if b.stats, err = mr.pieces.ReadParts(ctx, parts, &b.read); err != nil {
		return fmt.Errorf("multistage: parts %v: %w", m.parts, err)
	}
	// The first stage's rows count as read once, here; the batches
	// find them in memory. Its time is the whole stage's: reads and
	// checks, what the next macro-batch waits for; ReadSeconds stays the
	// reads' own (the disk's rate), CheckSeconds the rest.
	b.stats.Rows, b.stats.Bytes = 0, 0
	return nil
}

// adopt registers b's rows, m's, with the overlay and b for m's batches:
// once no batch of another macro-batch holding its parts' rows is left.
func (mr *macroRows) adopt(m *macroBatch, b *macroBuf) error {
	var err error
	loads := make([]store.Load, len(b.read.IDs))
	for k := range loads {
		loads[k] = store.Load{IDs: b.read.IDs[k], Rows: b.read.Rows[k]}
	}
	if b.load, err = mr.ov.Register(loads...); err != nil {
		mr.free <- b
		return fmt.Errorf("multistage: parts %v: %w", m.parts, err)
	}
	b.first, b.left = m.first, m.batches
	mr.mu.Lock()
	mr.held[m.first] = b
	mr.mu.Unlock()
	return nil
}

// fetch gathers mb's rows: the ones in memory from the store, the others
// from its macro-batch's buffer, each checked to be its load's.
func (mr *macroRows) fetch(st *stages) rowFetcher {
	return func(ctx context.Context, mb *sample.MiniBatch, dst []float32, resident int, idx []int32) (int, GatherStats, error) {
		plan := st.epochPlan(mb.Epoch)
		i := sort.Search(len(plan.macros), func(i int) bool { return plan.macros[i].first+plan.macros[i].batches > mb.Index })
		if i == len(plan.macros) {
			return 0, GatherStats{}, fmt.Errorf("multistage: epoch %d has no batch %d", mb.Epoch+1, mb.Index+1)
		}
		mr.mu.Lock()
		b := mr.held[plan.macros[i].first]
		mr.mu.Unlock()
		if b == nil {
			return 0, GatherStats{}, fmt.Errorf("multistage: batch %d's macro-batch is not in memory", mb.Index+1)
		}
		// A row is this macro-batch's, or, for a vertex the next one
		// holds too (a halo's), the next one's once that is registered.
		n, gs, err := mr.ov.Gather(mb.Input(), dst, resident, idx)
		if err != nil {
			return n, gs, fmt.Errorf("multistage: batch %d of epoch %d: %w", mb.Index+1, mb.Epoch+1, err)
		}
		if mb.Index == b.first {
			gs.Add(b.stats)
		}
		mr.done(b)
		return n, gs, nil
	}
}

// done counts one of b's batches gathered; after its last, b is free for
// the next macro-batch.
func (mr *macroRows) done(b *macroBuf) {
	mr.mu.Lock()
	b.left--
	last := b.left == 0
	if last {
		delete(mr.held, b.first)
	}
	mr.mu.Unlock()
	if last {
		// No batch of a later macro-batch asks for a vertex still its:
		// each on disk is in that macro-batch's loads, registered since.
		mr.ov.Release(b.load)
		mr.free <- b
	}
}

// reset frees every buffer before an epoch (the last one's loading has
// stopped: a stopped epoch can leave buffers held) but the one read ahead
// for epoch from its first batch, which it keeps for that epoch.
func (mr *macroRows) reset(epoch, first int) {
	mr.mu.Lock()
	defer mr.mu.Unlock()
	for k, b := range mr.held {
		mr.ov.Release(b.load)
		delete(mr.held, k)
	}
	for len(mr.free) > 0 {
		<-mr.free
	}
	if a := mr.ahead; a != nil && (a.epoch != epoch || first != 0) {
		mr.ahead = nil
	}
	for _, b := range mr.bufs {
		if mr.ahead == nil || b != mr.ahead.b {
			mr.free <- b
		}
	}
}

// newMultistageLoader makes l HANOI's loader for worker w.
func newMultistageLoader(l *prefetchLoader, w *worker, g *dataset.Graph, ms *Multistage, o Options) *multistageLoader {
	so := workerSamplerOptions(g, o, w.id)
	seeds := so.Seeds
	if seeds == nil {
		seeds = g.Train
	}
	st := newStages(g, w.sampler, seeds, ms, w.seed, o.Epochs)
	l.source = st
	if ms.Pieces != nil {
		// checkMultistage saw the features are a store's.
		st.rows = newMacroRows(ms.Pieces, o.Features.(storeSource).Overlay(), w.input.dim)
		l.rows = st.rows.fetch(st)
	}
	return &multistageLoader{prefetchLoader: l, stages: st}
}

// MeasureFirstStage times the multistage loader's first stage out of core
// for about d (store.Packed.MeasureParts: macro-batches of the run's size
// read whole and checked), reading into worker 0's own macro-batch
// buffers, which the run then finds large enough and warm, and then reads
// the first epoch's first macro-batch ahead. An error when the run does
// not read macro-batches from disk.
func (t *Trainer) MeasureFirstStage(ctx context.Context, d time.Duration) (store.ReadRate, error) {
	ml, ok := t.workers[0].loader.(*multistageLoader)
	if !ok || ml.stages.rows == nil {
		return store.ReadRate{}, errors.New("measure the first stage: the run reads no macro-batches from disk")
	}
	mr := ml.stages.rows
	rr, err := func() (store.ReadRate, error) {
		var into []*store.PartsRead
		for range mr.bufs {
			select {
			case b := <-mr.free:
				defer func() { mr.free <- b }()
				into = append(into, &b.read)
			case <-ctx.Done():
				return store.ReadRate{}, fmt.Errorf("measure the first stage: %w", context.Cause(ctx))
			}
		}
		return mr.pieces.MeasureParts(ctx, d, ml.stages.macro, into...)
	}()
	if err != nil {
		return rr, err
	}
	// The first epoch's first macro-batch read now, as every later
	// epoch's is read while the epoch before trains (a run that starts
	// elsewhere frees it).
	if plan := ml.stages.epochPlan(0); len(plan.macros) > 0 {
		mr.readAhead(ctx, 0, &plan.macros[0])
	}
	return rr, nil
}

// multistageLoader is the prefetch pipeline over HANOI's stages.
type multistageLoader struct {
	*prefetchLoader
	stages *stages
}

// Epoch starts epoch's loading from batch first, its buffers all free.
func (l *multistageLoader) Epoch(ctx context.Context, epoch, first int) Batches {
	if l.stages.rows != nil {
		l.stages.rows.reset(l.sampledEpoch(epoch), first)
	}
	return l.prefetchLoader.Epoch(ctx, epoch, first)
}
