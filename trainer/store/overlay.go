package store

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gnnplan/gnnplan/internal/hugepage"
	"github.com/gnnplan/gnnplan/trainer/internal/spans"
)

// Overlay serves a store's rows with one lookup a vertex: the rows the
// store holds in memory from its caches, the others from a load, rows
// read from disk and held in memory for a while (the multistage loader's
// macro-batches), which Register records and Release ends. A row on disk
// that no live load holds is an error, never another row.
//
// Gathers may run on several goroutines, and Register and Release beside
// them: a vertex that a Register moves to its load while a Gather asks
// for it is served from either (the next macro-batch loads while this one
// trains, and may hold some of its rows). A caller releases a load once no
// Gather can ask for a vertex that is still its.
type Overlay struct {
	s     *Store
	tiers []servedFrom
	// loc is per vertex its bin (bits 56-63), the load that holds its
	// row (bits 32-55, 0: none; always 0 for a row in memory) and its
	// row in the bin's cache or the load's rows (bits 0-31).
	loc   []uint64
	mu    sync.Mutex // guards loads and changes to live
	loads uint32
	// live are the registrations not released, replaced whole on a
	// change (a Gather reads one snapshot).
	live atomic.Pointer[[]liveLoads]
}

// liveLoads is one Register's loads: load first+k's rows are rows[k].
type liveLoads struct {
	first uint32
	rows  [][]float32
	n     []int // rows[k]'s row count
}

// overlayMaxLoads is how many loads one Overlay can tell apart.
const overlayMaxLoads = 1<<24 - 1

// Overlay returns an Overlay of the store with no load registered. It
// holds 8 bytes a vertex.
func (s *Store) Overlay() *Overlay {
	o := &Overlay{s: s, loc: make([]uint64, len(s.bin)), tiers: make([]servedFrom, len(s.bins))}
	// Looked up at random: huge pages spare a TLB miss a row.
	hugepage.Advise(o.loc)
	for b, bin := range s.bins {
		o.tiers[b] = bin.tier
	}
	for v, b := range s.bin {
		o.loc[v] = uint64(b)<<56 | uint64(s.row[v])
	}
	o.live.Store(&[]liveLoads{})
	return o
}

// Load is rows read from disk for an Overlay: row i, Rows[i x Dim:(i+1)
// x Dim], is vertex IDs[i]'s.
type Load struct {
	IDs  []int32
	Rows []float32
}

// Register records loads, numbered consecutively from the number it
// returns, and serves from them until Release of that number: each of
// their vertices is now served from the last load holding it (no longer
// from one registered before). Each must be a vertex whose row the store
// keeps on disk.
func (o *Overlay) Register(loads ...Load) (uint32, error) {
	if len(loads) == 0 {
		return 0, errors.New("overlay: no load to register")
	}
	rows, counts := make([][]float32, len(loads)), make([]int, len(loads))
	for k, l := range loads {
		switch {
		case int64(len(l.IDs)) > 1<<32:
			return 0, fmt.Errorf("overlay: a load of %d rows (at most 2^32)", len(l.IDs))
		case len(l.Rows) != len(l.IDs)*o.s.dim:
			return 0, fmt.Errorf("overlay: load %d has %d vertices and %d floats of rows of %d", k+1, len(l.IDs), len(l.Rows), o.s.dim)
		}
		for i, v := range l.IDs {
			if v < 0 || int(v) >= len(o.loc) {
				return 0, fmt.Errorf("overlay: row %d of load %d is vertex %d, the store has %d", i, k+1, v, len(o.loc))
			}
			if b := o.s.bin[v]; o.tiers[b] != tierSSD {
				return 0, fmt.Errorf("overlay: row %d of load %d is vertex %d, which the store holds in memory (bin %d)", i, k+1, v, b)
			}
		}
		rows[k], counts[k] = l.Rows, len(l.IDs)
	}
	o.mu.Lock()
	if len(loads) > overlayMaxLoads-int(o.loads) {
		o.mu.Unlock()
		return 0, fmt.Errorf("overlay: %d loads registered and %d more, past the most one overlay tells apart, %d (open another)", o.loads, len(loads), overlayMaxLoads)
	}
	first := o.loads + 1
	o.loads += uint32(len(loads))
	// Live before any vertex moves to them.
	live := append(slices.Clone(*o.live.Load()), liveLoads{first: first, rows: rows, n: counts})
	o.live.Store(&live)
	o.mu.Unlock()
	for k, l := range loads {
		for i, v := range l.IDs {
			atomic.StoreUint64(&o.loc[v], uint64(o.s.bin[v])<<56|uint64(first+uint32(k))<<32|uint64(i))
		}
	}
	return first, nil
}

// Release ends the loads Register numbered from first: their vertices
// not registered since are errors to Gather until registered again.
func (o *Overlay) Release(first uint32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	live := slices.DeleteFunc(slices.Clone(*o.live.Load()), func(l liveLoads) bool { return l.first == first })
	o.live.Store(&live)
}

// Gather is the store's GatherResident (resident < 0 and idx nil: its
// Gather) with the rows on disk taken from the live loads. Those count as
// SocketCacheHits (they are in memory); SSDRows stays 0.
func (o *Overlay) Gather(vertices []int32, dst []float32, resident int, idx []int32) (int, GatherStats, error) {
	s := o.s
	start := time.Now()
	st := GatherStats{Rows: len(vertices), Bytes: int64(len(vertices)) * s.rowBytes}
	switch {
	case len(dst) < len(vertices)*s.dim || (resident >= 0 && len(idx) < len(vertices)):
		return 0, st, fmt.Errorf("gather: dst holds %d floats, idx %d entries for %d rows of %d", len(dst), len(idx), len(vertices), s.dim)
	case resident >= 0 && (resident >= len(o.tiers) || o.tiers[resident] != tierWorker):
		return 0, st, fmt.Errorf("gather: bin %d is not a worker cache bin (worker bins: %v)", resident, s.WorkerBins())
	case s.caches == nil:
		return 0, st, errors.New("gather: the store is closed")
	}
	live := *o.live.Load()
	cut := spans.Cut(len(vertices), s.copyThreads, minCopyRows)
	base := spanBases(cut, idx != nil, func(v int32) bool {
		return v >= 0 && int(v) < len(o.loc) && int(atomic.LoadUint64(&o.loc[v])>>56) == resident
	}, vertices)
	parts := make([]served, len(cut))
	err := spans.Run(cut, func(i int, sp spans.Span) error {
		var err error
		parts[i], err = o.span(vertices, sp, base[i], dst, resident, idx, live)
		return err
	})
	if err != nil {
		return 0, st, err
	}
	n, _, _ := join(parts, &st)
	for _, p := range parts {
		st.SocketCacheHits += p.ssd
	}
	st.Seconds = time.Since(start).Seconds()
	return n, st, nil
}

// loadedRow is row r of load among the live loads (nil: not one of them,
// or it has no row r).
func loadedRow(live []liveLoads, load uint32, r, dim int) []float32 {
	for _, l := range live {
		if k := load - l.first; k < uint32(len(l.rows)) { // wraps for a load before first
			if r < l.n[k] {
				return l.rows[k][r*dim : (r+1)*dim]
			}
			return nil
		}
	}
	return nil
}

// overlayChunk is how many batch rows span looks up before it copies
// them: the lookups' cache misses overlap instead of each waiting for the
// copy before it.
const overlayChunk = 32

// span is serveSpan with the rows on disk from the live loads, counted in
// ssd and not listed.
func (o *Overlay) span(vertices []int32, sp spans.Span, base int, dst []float32, resident int, idx []int32, live []liveLoads) (served, error) {
	caches, dim := o.s.caches, o.s.dim
	out := served{binRows: make([]int, len(o.tiers))}
	n := base
	var locs [overlayChunk]uint64
	for lo := sp.Lo; lo < sp.Hi; lo += overlayChunk {
		hi := min(lo+overlayChunk, sp.Hi)
		for i := lo; i < hi; i++ {
			v := vertices[i]
			if v < 0 || int(v) >= len(o.loc) {
				return out, fmt.Errorf("gather: vertex %d (batch row %d) out of range [0, %d)", v, i, len(o.loc))
			}
			locs[i-lo] = atomic.LoadUint64(&o.loc[v])
		}
		for i := lo; i < hi; i++ {
			l := locs[i-lo]
			b, r := int(l>>56), int(uint32(l))
			slot, ok := out.slot(i, b, r, resident, idx, &n)
			if !ok {
				continue
			}
			var src []float32
			switch o.tiers[b] {
			case tierWorker:
				src = caches[b]
				out.worker++
			case tierSocket:
				src = caches[b]
				out.socket++
			default:
				load := uint32(l>>32) & overlayMaxLoads
				if src = loadedRow(live, load, r, dim); src == nil {
					// Registered since the Gather began: live by now.
					live = *o.live.Load()
					src = loadedRow(live, load, r, dim)
				}
				if src == nil {
					return out, fmt.Errorf("gather: vertex %d (batch row %d) is on disk and in no live load (load %d)", vertices[i], i, load)
				}
				r = 0
				out.ssd++
			}
			copy(dst[slot*dim:(slot+1)*dim], src[r*dim:(r+1)*dim])
		}
	}
	return out, nil
}
