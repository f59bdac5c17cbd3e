package store

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkOverlayGather gathers batches of 50,000 rows of 128 or 1024
// features, as a multistage step at those widths does, through an Overlay
// of 8 Mi vertices (at 1024-d 1 Mi): a tenth of them cached in memory,
// the others on disk, a quarter of those registered in one load (a
// macro-batch); three in ten batch rows cached, the rest from the load.
// The anchor, "indexed", copies the same rows from one matrix by a
// precomputed row index: no lookup, the rows' own misses only.
func BenchmarkOverlayGather(b *testing.B) {
	for _, dim := range []int{128, 1024} {
		n := 8 << 20
		if dim == 1024 {
			n = 1 << 20
		}
		s, o, rows, batch := benchOverlay(n, dim)
		dst := make([]float32, len(batch)*dim)
		b.Run(fmt.Sprintf("dim=%d/overlay", dim), func(b *testing.B) {
			b.SetBytes(int64(len(batch) * dim * 4))
			for range b.N {
				if _, _, err := o.Gather(batch, dst, -1, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
		// The anchor: each batch row's source row found beforehand.
		src := make([][]float32, len(batch))
		for i, v := range batch {
			l := o.loc[v]
			r := int(uint32(l))
			if s.bins[l>>56].tier == tierSSD {
				src[i] = rows[r*dim : (r+1)*dim]
			} else {
				src[i] = s.caches[l>>56][r*dim : (r+1)*dim]
			}
		}
		b.Run(fmt.Sprintf("dim=%d/indexed", dim), func(b *testing.B) {
			b.SetBytes(int64(len(batch) * dim * 4))
			for range b.N {
				for i, r := range src {
					copy(dst[i*dim:(i+1)*dim], r)
				}
			}
		})
	}
}

// benchOverlay is an Overlay of n vertices of dim features built in
// memory (no files): bin 0 a socket cache of n/10 rows, bin 1 the disk,
// a load of the first quarter of the disk's vertices, and a batch.
func benchOverlay(n, dim int) (*Store, *Overlay, []float32, []int32) {
	rng := rand.New(rand.NewPCG(3, 4))
	s := &Store{m: &Manifest{NumNodes: int64(n)}, dim: dim, rowBytes: int64(dim) * 4, copyThreads: 1,
		bin: make([]uint8, n), row: make([]uint32, n),
		bins: []binSrc{{tier: tierSocket, rows: int64(n / 10)}, {tier: tierSSD, rows: int64(n - n/10)}}}
	perm := rng.Perm(n)
	var cached, disk []int32
	for i, v := range perm {
		if i < n/10 {
			s.bin[v], s.row[v] = 0, uint32(i)
			cached = append(cached, int32(v))
		} else {
			s.bin[v], s.row[v] = 1, uint32(i-n/10)
			disk = append(disk, int32(v))
		}
	}
	s.caches = [][]float32{make([]float32, n/10*dim), nil}
	o := s.Overlay()
	ids := disk[:len(disk)/4]
	rows := make([]float32, len(ids)*dim)
	for i := range rows {
		rows[i] = float32(i % 7)
	}
	if _, err := o.Register(Load{IDs: ids, Rows: rows}); err != nil {
		panic(err)
	}
	batch := make([]int32, 50_000)
	for i := range batch {
		if rng.IntN(10) < 3 {
			batch[i] = cached[rng.IntN(len(cached))]
		} else {
			batch[i] = ids[rng.IntN(len(ids))]
		}
	}
	return s, o, rows, batch
}
