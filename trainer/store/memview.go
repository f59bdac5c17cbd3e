package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// MemoryView is a store without its disks, for timing a pipeline apart
// from them (trainer.Probe): a row the store caches is copied from its
// cache, as Gather copies it; a row on disk is left as dst holds it, as
// Gather leaves the copying of it to the disk, which reads it straight
// into dst (its cost is the disks', measured on its own). The rows on
// disk are not the features of their vertices: it times, it does not
// train.
type MemoryView struct {
	s *Store
}

// MemoryView returns the store's view without its disks.
func (s *Store) MemoryView() *MemoryView { return &MemoryView{s: s} }

// Dim is the store's feature dimension.
func (m *MemoryView) Dim() int { return m.s.dim }

// Gather copies the cached rows of vertices into dst (see MemoryView);
// the stats count them as cache hits and the others as SSD rows, with no
// device read.
func (m *MemoryView) Gather(ctx context.Context, vertices []int32, dst []float32) (GatherStats, error) {
	start := time.Now()
	s, dim := m.s, m.s.dim
	if len(dst) < len(vertices)*dim {
		return GatherStats{}, fmt.Errorf("gather: dst holds %d floats, %d rows of %d need %d", len(dst), len(vertices), dim, len(vertices)*dim)
	}
	if s.caches == nil {
		return GatherStats{}, errors.New("gather: the store is closed")
	}
	st := GatherStats{Rows: len(vertices), Bytes: int64(len(vertices)) * s.rowBytes}
	for i, v := range vertices {
		if v < 0 || int64(v) >= s.m.NumNodes {
			return GatherStats{}, fmt.Errorf("gather: vertex %d (batch row %d) out of range [0, %d)", v, i, s.m.NumNodes)
		}
		b, r := int(s.bin[v]), int64(s.row[v])
		switch s.bins[b].tier {
		case tierWorker:
			st.WorkerCacheHits++
		case tierSocket:
			st.SocketCacheHits++
		default:
			st.SSDRows++
			continue
		}
		copy(dst[i*dim:(i+1)*dim], s.caches[b][r*int64(dim):(r+1)*int64(dim)])
	}
	st.Seconds = time.Since(start).Seconds()
	return st, nil
}
