package ddak

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
)

// keySortMax bounds the coarse buckets sorted through a key buffer (8 bytes
// per vertex of the bucket, per worker); larger ones sort the vertex ids
// in place, comparing their hotness.
const keySortMax = 1 << 20

// sortWide fills o.wide with the vertices of hotness >= denseLimit in
// descending hotness, ties in vertex order: a two-level sort, first a
// stable counting sort on the top 16 bits of the value (coarse[w][c] is
// how many vertices of span w have value>>16 == c), then a sort within
// each coarse bucket on the low 16 bits. O(n) passes plus sorts of the
// coarse buckets, which are small unless the values crowd into a few.
func (o *order) sortWide(ctx context.Context, hot []uint32, coarse [][]int64) error {
	const nc = 1 << 16
	// Coarse buckets in descending order; start[c] is where bucket c
	// begins, and each span's vertices follow the earlier spans'.
	start, size := make([]int64, nc), make([]int64, nc)
	var pos int64
	for c := nc - 1; c >= 1; c-- {
		start[c] = pos
		for w := range coarse {
			size[c] += coarse[w][c]
		}
		pos += size[c]
	}
	o.nWide, o.hot = pos, hot
	o.wide = make([]uint32, pos)
	adviseHuge(o.wide)
	var wg sync.WaitGroup
	errs := make([]error, len(o.spans))
	for w, sp := range o.spans {
		cur := make([]int64, nc)
		for c := 1; c < nc; c++ {
			cur[c] = start[c]
			for j := range w {
				cur[c] += coarse[j][c]
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := sp[0]; b < sp[1]; b += ctxEvery {
				if err := ctx.Err(); err != nil {
					errs[w] = err
					return
				}
				e := min(b+ctxEvery, sp[1])
				for i, h := range hot[b:e] {
					if h >= denseLimit {
						c := h >> 16
						o.wide[cur[c]] = uint32(b + int64(i))
						cur[c]++
					}
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	// Within a coarse bucket the vertices are in id order; sort them on
	// the low 16 bits, descending, ties by id. Workers take buckets in turn.
	var next atomic.Int64
	next.Store(nc - 1)
	for w := range o.spans {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var keys []uint64
			for {
				if err := ctx.Err(); err != nil {
					errs[w] = err
					return
				}
				c := next.Add(-1) + 1
				if c < 1 {
					return
				}
				seg := o.wide[start[c] : start[c]+size[c]]
				if len(seg) < 2 {
					continue
				}
				if len(seg) <= keySortMax {
					// key: the low 16 bits inverted (descending), then the id.
					keys = keys[:0]
					for _, v := range seg {
						keys = append(keys, uint64(0xffff-hot[v]&0xffff)<<32|uint64(v))
					}
					slices.Sort(keys)
					for i, k := range keys {
						seg[i] = uint32(k)
					}
					continue
				}
				slices.SortFunc(seg, func(a, b uint32) int {
					if ha, hb := hot[a], hot[b]; ha != hb {
						if ha > hb {
							return -1
						}
						return 1
					}
					if a < b {
						return -1
					}
					return 1
				})
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// applyWide writes the bin and row of each vertex of the wide region:
// position p's vertex o.wide[p] goes where the run holding p says. Workers
// take contiguous position ranges; within one, the runs only move forward.
func applyWide(ctx context.Context, o *order, r *runs, bin []uint8, row []uint32) error {
	rs := *r
	errs := make([]error, len(o.spans))
	var wg sync.WaitGroup
	for w := range o.spans {
		lo, hi := o.nWide*int64(w)/int64(len(o.spans)), o.nWide*int64(w+1)/int64(len(o.spans))
		wg.Add(1)
		go func() {
			defer wg.Done()
			// The run holding lo: the last one starting at or before it.
			j, _ := slices.BinarySearchFunc(rs, lo+1, func(x run, p int64) int {
				if x.start < p {
					return -1
				}
				return 1
			})
			j--
			for b := lo; b < hi; b += ctxEvery {
				if err := ctx.Err(); err != nil {
					errs[w] = fmt.Errorf("ddak: %w", err)
					return
				}
				e := min(b+ctxEvery, hi)
				for p := b; p < e; p++ {
					for rs[j+1].start <= p {
						j++
					}
					v := o.wide[p]
					bin[v] = rs[j].bin
					row[v] = uint32(p - rs[j].start + int64(rs[j].row))
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
