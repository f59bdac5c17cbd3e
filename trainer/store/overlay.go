package store

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gnnplan/gnnplan/internal/hugepage"
	"github.com/gnnplan/gnnplan/trainer/internal/spans"
)

// Overlay serves a store's rows with one lookup a vertex: the rows the
// store holds in memory from its caches, the others from a load, rows
// read from disk and held in memory for a while (the multistage loader's
// macro-batches), which Register records. A row on disk that the load
// gathered from does not hold is an error, never another row.
//
// Gathers may run on several goroutines, and a Register beside them
// where its vertices are none a Gather asks for (the next macro-batch
// loads while this one trains: their parts are disjoint).
type Overlay struct {
	s     *Store
	tiers []servedFrom
	// loc is per vertex its bin (bits 56-63), the load that holds its
	// row (bits 32-55, 0: none; always 0 for a row in memory) and its
	// row in the bin's cache or the load's rows (bits 0-31).
	loc   []uint64
	mu    sync.Mutex // guards loads
	loads uint32
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
	return o
}

// Loaded is where the rows of consecutive loads are held: load First+k's
// row r at Rows[k][r x Dim:], as Register numbered them.
type Loaded struct {
	First uint32
	Rows  [][]float32
}

// Register records new loads, one per ids slice, numbered consecutively
// from the number it returns: row i of the k-th is vertex ids[k][i]'s, and
// each of those vertices is now served from it (no longer from a load
// registered before). Each must be a vertex whose row the store keeps on
// disk.
func (o *Overlay) Register(ids ...[]int32) (uint32, error) {
	if len(ids) == 0 {
		return 0, errors.New("overlay: no load to register")
	}
	o.mu.Lock()
	if o.loads+uint32(min(len(ids), overlayMaxLoads)) > overlayMaxLoads || len(ids) > overlayMaxLoads {
		o.mu.Unlock()
		return 0, fmt.Errorf("overlay: %d loads registered and %d more, past the most one overlay tells apart, %d (open another)", o.loads, len(ids), overlayMaxLoads)
	}
	first := o.loads + 1
	o.loads += uint32(len(ids))
	o.mu.Unlock()
	for k, load := range ids {
		if int64(len(load)) > 1<<32 {
			return 0, fmt.Errorf("overlay: a load of %d rows (at most 2^32)", len(load))
		}
		for i, v := range load {
			if v < 0 || int(v) >= len(o.loc) {
				return 0, fmt.Errorf("overlay: row %d of load %d is vertex %d, the store has %d", i, k+1, v, len(o.loc))
			}
			b := o.s.bin[v]
			if o.tiers[b] != tierSSD {
				return 0, fmt.Errorf("overlay: row %d of load %d is vertex %d, which the store holds in memory (bin %d)", i, k+1, v, b)
			}
			atomic.StoreUint64(&o.loc[v], uint64(b)<<56|uint64(first+uint32(k))<<32|uint64(i))
		}
	}
	return first, nil
}

// Gather is the store's GatherResident (resident < 0 and idx nil: its
// Gather) with the rows on disk taken from the loads of from. Those count
// as SocketCacheHits (they are in memory); SSDRows stays 0.
func (o *Overlay) Gather(vertices []int32, dst []float32, resident int, idx []int32, from Loaded) (int, GatherStats, error) {
	s := o.s
	start := time.Now()
	st := GatherStats{Rows: len(vertices), Bytes: int64(len(vertices)) * s.rowBytes}
	switch {
	case len(dst) < len(vertices)*s.dim || (resident >= 0 && len(idx) < len(vertices)):
		return 0, st, fmt.Errorf("gather: dst holds %d floats, idx %d entries for %d rows of %d", len(dst), len(idx), len(vertices), s.dim)
	case resident >= 0 && (resident >= len(o.tiers) || o.tiers[resident] != tierWorker):
		return 0, st, fmt.Errorf("gather: bin %d is not a worker cache bin (worker bins: %v)", resident, s.WorkerBins())
	case from.First == 0 || len(from.Rows) == 0 || uint64(from.First)+uint64(len(from.Rows))-1 > overlayMaxLoads:
		return 0, st, fmt.Errorf("gather: loads %d to %d are not ones Register returns", from.First, uint64(from.First)+uint64(len(from.Rows))-1)
	case s.caches == nil:
		return 0, st, errors.New("gather: the store is closed")
	}
	cut := spans.Cut(len(vertices), s.copyThreads, minCopyRows)
	base := spanBases(cut, idx != nil, func(v int32) bool {
		return v >= 0 && int(v) < len(o.loc) && int(atomic.LoadUint64(&o.loc[v])>>56) == resident
	}, vertices)
	parts := make([]served, len(cut))
	err := spans.Run(cut, func(i int, sp spans.Span) error {
		var err error
		parts[i], err = o.span(vertices, sp, base[i], dst, resident, idx, from)
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

// overlayChunk is how many batch rows span looks up before it copies
// them: the lookups' cache misses overlap instead of each waiting for the
// copy before it.
const overlayChunk = 32

// span is serveSpan with the rows on disk from the loads of from, counted
// in ssd and not listed.
func (o *Overlay) span(vertices []int32, sp spans.Span, base int, dst []float32, resident int, idx []int32, from Loaded) (served, error) {
	caches, dim := o.s.caches, o.s.dim
	out := served{binRows: make([]int, len(o.tiers))}
	loaded := make([]int, len(from.Rows))
	for k, rows := range from.Rows {
		loaded[k] = len(rows) / dim
	}
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
				k := uint32(l>>32)&overlayMaxLoads - from.First // wraps for a load before First
				if k >= uint32(len(loaded)) || r >= loaded[k] {
					return out, fmt.Errorf("gather: vertex %d (batch row %d) is on disk and not in loads %d to %d", vertices[i], i, from.First, from.First+uint32(len(loaded))-1)
				}
				src = from.Rows[k]
				out.ssd++
			}
			copy(dst[slot*dim:(slot+1)*dim], src[r*dim:(r+1)*dim])
		}
	}
	return out, nil
}
