package store

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
)

// TestOverlayServesTheStoresRows: with every row on disk registered in
// one of two registrations (the first two loads at once, as a macro-batch
// of two parts), a batch of rows in memory and rows of the first is
// served as the store's Gather and GatherResident serve it, on one copy
// goroutine or several; a row of the other load, of a load registered
// again since, or of no load, is an error naming the vertex.
func TestOverlayServesTheStoresRows(t *testing.T) {
	const n, dim = 900, 24
	fx, _, _ := materialized(t, n, dim, mixMixed, 2, 43)
	for _, threads := range []int{1, 3} {
		s, err := Open(fx.dir, Options{QueueDepth: 4, CopyThreads: threads})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		var mem, disk []int32
		for v := range int32(n) {
			if s.InMemory(v) {
				mem = append(mem, v)
			} else {
				disk = append(disk, v)
			}
		}
		if len(mem) == 0 || len(disk) < 4 {
			t.Fatalf("fixture: %d rows in memory, %d on disk", len(mem), len(disk))
		}
		rng := rand.New(rand.NewPCG(uint64(threads), 9))
		rng.Shuffle(len(disk), func(i, j int) { disk[i], disk[j] = disk[j], disk[i] })
		a, b := disk[:len(disk)/2], disk[len(disk)/2:]
		o := s.Overlay()
		register(t, s, o, a[:len(a)/3], a[len(a)/3:])
		loadB := register(t, s, o, b)

		// Batches larger than a copy goroutine's least share, with repeats.
		pool := append(slices.Clone(mem), a...)
		wb := s.WorkerBins()[0]
		for range 3 {
			batch := make([]int32, 3*minCopyRows+17)
			for i := range batch {
				batch[i] = pool[rng.IntN(len(pool))]
			}
			want := make([]float32, len(batch)*dim)
			wst, err := s.Gather(context.Background(), batch, want)
			if err != nil {
				t.Fatal(err)
			}
			got := make([]float32, len(batch)*dim)
			k, st, err := o.Gather(batch, got, -1, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) || k != len(batch) {
				t.Fatalf("%d threads: the overlay's rows differ from Gather's (%d placed of %d)", threads, k, len(batch))
			}
			if st.SSDRows != 0 || st.SocketCacheHits != wst.SocketCacheHits+wst.SSDRows || st.WorkerCacheHits != wst.WorkerCacheHits || !slices.Equal(st.BinRows, wst.BinRows) {
				t.Errorf("%d threads: stats %+v, Gather's %+v", threads, st, wst)
			}

			packedWant, idxWant := make([]float32, len(batch)*dim), make([]int32, len(batch))
			kw, rst, err := s.GatherResident(context.Background(), batch, packedWant, wb, idxWant)
			if err != nil {
				t.Fatal(err)
			}
			packed, idx := make([]float32, len(batch)*dim), make([]int32, len(batch))
			k, st, err = o.Gather(batch, packed, wb, idx)
			if err != nil {
				t.Fatal(err)
			}
			if k != kw || !slices.Equal(idx, idxWant) || !slices.Equal(packed[:k*dim], packedWant[:kw*dim]) || st.ResidentHits != rst.ResidentHits {
				t.Fatalf("%d threads: resident gather: %d rows, %d resident; GatherResident %d, %d", threads, k, st.ResidentHits, kw, rst.ResidentHits)
			}
		}

		// A row registered again is the new load's, served as the
		// store's; once that load is released, an error, though the
		// first load holding it is live.
		again := register(t, s, o, a[:1])
		got, want := make([]float32, dim), make([]float32, dim)
		if _, err := s.Gather(context.Background(), a[:1], want); err != nil {
			t.Fatal(err)
		}
		if _, _, err := o.Gather(a[:1], got, -1, nil); err != nil || !slices.Equal(got, want) {
			t.Errorf("a row registered again: %v, %v (want %v)", err, got, want)
		}
		o.Release(again)
		o.Release(loadB)
		for _, tc := range []struct {
			name  string
			v     int32
			error string
		}{
			{"a row of a released load", b[0], "in no live load"},
			{"a row registered again, that load released", a[0], "in no live load"},
			{"a vertex out of range", n, "out of range"},
		} {
			_, _, err := o.Gather([]int32{mem[0], a[1], tc.v}, make([]float32, 3*dim), -1, nil)
			if err == nil || !strings.Contains(err.Error(), tc.error) {
				t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.error)
			}
		}
		for _, ids := range [][]int32{{mem[0]}, {-1}, {n}} {
			if _, err := o.Register(Load{IDs: ids, Rows: make([]float32, dim)}); err == nil {
				t.Errorf("Register(%v): no error", ids)
			}
		}
		if _, err := o.Register(Load{IDs: b[:2], Rows: make([]float32, dim)}); err == nil {
			t.Error("Register of 2 vertices and 1 row: no error")
		}
		if _, err := o.Register(); err == nil {
			t.Error("Register(): no error")
		}
		if _, _, err := o.Gather(mem[:1], make([]float32, dim), slices.Index(s.BinIDs(), "socket0"), make([]int32, 1)); err == nil || !strings.Contains(err.Error(), "not a worker cache bin") {
			t.Errorf("a socket bin as resident: %v", err)
		}
	}
}

// TestOverlayRegistersBesideGathers: loads registered and released while
// another load's rows are gathered (the next macro-batch read while this
// one trains, holding some of its rows, the one before released) leave
// those rows right: a row a Register moves is served from either load.
// Run with -race.
func TestOverlayRegistersBesideGathers(t *testing.T) {
	const n, dim = 900, 16
	fx, _, _ := materialized(t, n, dim, mixMixed, 1, 47)
	s, err := Open(fx.dir, Options{QueueDepth: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var disk []int32
	for v := range int32(n) {
		if !s.InMemory(v) {
			disk = append(disk, v)
		}
	}
	a, b := disk[:len(disk)/2], disk[len(disk)/2:]
	o := s.Overlay()
	register(t, s, o, a)
	want := make([]float32, len(a)*dim)
	if _, err := s.Gather(context.Background(), a, want); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for g := range errs {
		wg.Go(func() {
			got := make([]float32, len(a)*dim)
			for range 50 {
				if _, _, err := o.Gather(a, got, -1, nil); err != nil {
					errs[g] = err
					return
				}
				if !slices.Equal(got, want) {
					errs[g] = errString("rows differ")
					return
				}
			}
		})
	}
	next := append(slices.Clone(a[len(a)/2:]), b...)
	var last uint32
	for range 50 {
		l := register(t, s, o, next)
		if last != 0 {
			o.Release(last)
		}
		last = l
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

type errString string

func (e errString) Error() string { return string(e) }

// register registers the pieces as loads of o, their rows the store's.
func register(t *testing.T, s *Store, o *Overlay, pieces ...[]int32) uint32 {
	t.Helper()
	loads := make([]Load, len(pieces))
	for k, ids := range pieces {
		loads[k] = Load{IDs: ids, Rows: make([]float32, len(ids)*s.Dim())}
		if _, err := s.Gather(context.Background(), ids, loads[k].Rows); err != nil {
			t.Fatal(err)
		}
	}
	first, err := o.Register(loads...)
	if err != nil {
		t.Fatal(err)
	}
	return first
}
