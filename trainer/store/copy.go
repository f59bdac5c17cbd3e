package store

import (
	"fmt"

	"github.com/gnnplan/gnnplan/trainer/internal/spans"
)

// minCopyRows is the fewest batch rows a copy goroutine is given: below
// it, starting one costs more than the copies it would take over.
const minCopyRows = 4096

// served is what one span of a gather did: the rows it counted and
// copied, and the SSD rows it left for the reader (batch rows, and the
// rows of dst they go to), in batch order.
type served struct {
	binRows                       []int
	worker, socket, resident, ssd int
	ssdRows, slots                []int
}

// slot counts batch row i, row r of bin b, in out and says which row of
// dst it goes to: i, or with idx (the rows packed) the next one, *n,
// recorded in idx[i]; false for a row of the resident bin, idx[i] = -1-r.
func (out *served) slot(i, b, r, resident int, idx []int32, n *int) (int, bool) {
	out.binRows[b]++
	if b == resident {
		idx[i] = int32(-1 - r)
		out.resident++
		return 0, false
	}
	slot := i
	if idx != nil {
		slot = *n
		idx[i] = int32(slot)
	}
	*n++
	return slot, true
}

// serveSpan copies the cached rows of vertices[sp.Lo:sp.Hi] into dst and
// lists the SSD rows. Without a resident bin (idx nil) batch row i goes
// to row i of dst; with one, the rows not resident are packed from row
// base on (idx as GatherResident describes).
func (s *Store) serveSpan(caches [][]float32, vertices []int32, sp spans.Span, base int, dst []float32, resident int, idx []int32) (served, error) {
	dim := s.dim
	out := served{binRows: make([]int, len(s.bins))}
	n := base
	for i := sp.Lo; i < sp.Hi; i++ {
		v := vertices[i]
		if v < 0 || int64(v) >= s.m.NumNodes {
			return out, fmt.Errorf("gather: vertex %d (batch row %d) out of range [0, %d)", v, i, s.m.NumNodes)
		}
		b, r := s.bin[v], int(s.row[v])
		slot, ok := out.slot(i, int(b), r, resident, idx, &n)
		if !ok {
			continue
		}
		switch s.bins[b].tier {
		case tierWorker:
			copy(dst[slot*dim:(slot+1)*dim], caches[b][r*dim:(r+1)*dim])
			out.worker++
		case tierSocket:
			copy(dst[slot*dim:(slot+1)*dim], caches[b][r*dim:(r+1)*dim])
			out.socket++
		default:
			out.ssdRows = append(out.ssdRows, i)
			out.slots = append(out.slots, slot)
			out.ssd++
		}
	}
	return out, nil
}

// serve runs serveSpan over the batch on up to s.copyThreads goroutines
// and joins their counts and SSD rows in batch order; n is how many rows
// were placed in dst (all but the resident ones).
func (s *Store) serve(caches [][]float32, vertices []int32, dst []float32, resident int, idx []int32, st *GatherStats) (n int, ssd, slots []int, err error) {
	cut := spans.Cut(len(vertices), s.copyThreads, minCopyRows)
	base := spanBases(cut, idx != nil, func(v int32) bool {
		return v >= 0 && int64(v) < s.m.NumNodes && int(s.bin[v]) == resident
	}, vertices)
	parts := make([]served, len(cut))
	err = spans.Run(cut, func(i int, sp spans.Span) error {
		var err error
		parts[i], err = s.serveSpan(caches, vertices, sp, base[i], dst, resident, idx)
		return err
	})
	if err != nil {
		return 0, nil, nil, err
	}
	n, ssd, slots = join(parts, st)
	return n, ssd, slots, nil
}

// spanBases is where each span's rows start in dst: 0 each without a
// resident bin (packed false: rows keep their batch row); with one (the
// rows packed), after the rows before it that are not resident.
func spanBases(cut []spans.Span, packed bool, isResident func(v int32) bool, vertices []int32) []int {
	base := make([]int, len(cut))
	if !packed || len(cut) < 2 {
		return base
	}
	counts := make([]int, len(cut))
	_ = spans.Run(cut, func(i int, sp spans.Span) error {
		for _, v := range vertices[sp.Lo:sp.Hi] {
			if !isResident(v) {
				counts[i]++
			}
		}
		return nil
	})
	for i := 1; i < len(cut); i++ {
		base[i] = base[i-1] + counts[i-1]
	}
	return base
}

// join adds the spans' counts to st and joins their SSD rows in batch
// order; n is the rows they placed in dst.
func join(parts []served, st *GatherStats) (n int, ssd, slots []int) {
	st.BinRows = parts[0].binRows
	ssd, slots = parts[0].ssdRows, parts[0].slots
	for i, p := range parts {
		if i > 0 {
			for b, c := range p.binRows {
				st.BinRows[b] += c
			}
			ssd, slots = append(ssd, p.ssdRows...), append(slots, p.slots...)
		}
		st.WorkerCacheHits += p.worker + p.resident
		st.ResidentHits += p.resident
		st.SocketCacheHits += p.socket
		n += p.worker + p.socket + p.ssd
	}
	return n, ssd, slots
}
