package store

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/gnnplan/gnnplan/internal/rng"

	"github.com/gnnplan/gnnplan/trainer/internal/spans"
)

// MemoryView serves every row of a store from memory, for timing a
// pipeline without its disks (trainer.Probe): a row the store caches is
// copied from its cache; a row on disk is replaced by a cached row chosen
// by its vertex id, so the copies range over as much memory as the
// store's caches hold (and miss the processor's caches as often). With
// nothing cached it copies from a random pool of 256 MiB. The rows it
// writes are not the features of the vertices on disk: it times, it does
// not train.
type MemoryView struct {
	s     *Store
	bins  []int   // bins held in memory with rows
	cum   []int64 // cum[i]: rows in bins[:i]
	pool  []float32
	prows int64
}

// MemoryView returns the store's view that serves every row from memory.
func (s *Store) MemoryView() *MemoryView {
	m := &MemoryView{s: s, cum: []int64{0}}
	for i, b := range s.bins {
		if b.tier != tierSSD && b.rows > 0 && i < len(s.caches) && len(s.caches[i]) > 0 {
			m.bins = append(m.bins, i)
			m.cum = append(m.cum, m.cum[len(m.cum)-1]+b.rows)
		}
	}
	if len(m.bins) == 0 {
		m.prows = max(4096, (256<<20)/(4*int64(s.dim)))
		m.pool = make([]float32, m.prows*int64(s.dim))
		r := rand.New(rand.NewPCG(uint64(s.m.NumNodes), 0x706f6f6c)) // "pool"
		for i := range m.pool {
			m.pool[i] = r.Float32()
		}
	}
	return m
}

// Dim is the store's feature dimension.
func (m *MemoryView) Dim() int { return m.s.dim }

// RowNormalized is the store's: its cached rows are scaled.
func (m *MemoryView) RowNormalized() bool { return m.s.rowNormalize }

// Gather writes a row from memory for each vertex (see MemoryView).
func (m *MemoryView) Gather(ctx context.Context, vertices []int32, dst []float32) (GatherStats, error) {
	start := time.Now()
	s, dim := m.s, m.s.dim
	if len(dst) < len(vertices)*dim {
		return GatherStats{}, fmt.Errorf("gather: dst holds %d floats, %d rows of %d need %d", len(dst), len(vertices), dim, len(vertices)*dim)
	}
	if s.caches == nil {
		return GatherStats{}, errors.New("gather: the store is closed")
	}
	err := spans.Run(spans.Cut(len(vertices), s.copyThreads, minCopyRows), func(_ int, sp spans.Span) error {
		return m.copySpan(vertices, sp, dst)
	})
	if err != nil {
		return GatherStats{}, err
	}
	n := len(vertices)
	return GatherStats{Rows: n, SocketCacheHits: n, Bytes: int64(n) * s.rowBytes, Seconds: time.Since(start).Seconds()}, nil
}

// copySpan writes the rows of vertices[sp.lo:sp.hi] (see MemoryView).
func (m *MemoryView) copySpan(vertices []int32, sp spans.Span, dst []float32) error {
	s, dim := m.s, int64(m.s.dim)
	total := m.cum[len(m.cum)-1]
	for i := sp.Lo; i < sp.Hi; i++ {
		v := vertices[i]
		if v < 0 || int64(v) >= s.m.NumNodes {
			return fmt.Errorf("gather: vertex %d (batch row %d) out of range [0, %d)", v, i, s.m.NumNodes)
		}
		out := dst[int64(i)*dim : int64(i+1)*dim]
		b, r := int(s.bin[v]), int64(s.row[v])
		switch {
		case s.bins[b].tier != tierSSD:
			copy(out, s.caches[b][r*dim:(r+1)*dim])
		case total > 0:
			k := int64(rng.Mix(uint64(v)) % uint64(total))
			j := sort.Search(len(m.bins), func(j int) bool { return m.cum[j+1] > k })
			r = k - m.cum[j]
			copy(out, s.caches[m.bins[j]][r*dim:(r+1)*dim])
		default:
			r = int64(rng.Mix(uint64(v)) % uint64(m.prows))
			copy(out, m.pool[r*dim:(r+1)*dim])
		}
	}
	return nil
}
