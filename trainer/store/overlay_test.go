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
		loadA := register(t, s, o, a[:len(a)/3], a[len(a)/3:])
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
			k, st, err := o.Gather(batch, got, -1, nil, loadA)
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
			k, st, err = o.Gather(batch, packed, wb, idx, loadA)
			if err != nil {
				t.Fatal(err)
			}
			if k != kw || !slices.Equal(idx, idxWant) || !slices.Equal(packed[:k*dim], packedWant[:kw*dim]) || st.ResidentHits != rst.ResidentHits {
				t.Fatalf("%d threads: resident gather: %d rows, %d resident; GatherResident %d, %d", threads, k, st.ResidentHits, kw, rst.ResidentHits)
			}
		}

		for _, tc := range []struct {
			name  string
			v     int32
			from  Loaded
			error string
		}{
			{"the other registration's row", b[0], loadA, "not in loads"},
			{"a row of no load", a[0], Loaded{Rows: loadA.Rows}, "not ones Register returns"},
			{"a row of the registration's second load, given its first", a[len(a)-1], Loaded{First: loadA.First, Rows: loadA.Rows[:1]}, "not in loads"},
			{"a vertex out of range", n, loadA, "out of range"},
			{"a row registered with the other load", a[0], loadB, "not in loads"},
		} {
			_, _, err := o.Gather([]int32{mem[0], tc.v}, make([]float32, 2*dim), -1, nil, tc.from)
			if err == nil || !strings.Contains(err.Error(), tc.error) {
				t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.error)
			}
		}
		// Registered again, a row is no longer its first load's.
		if _, err := o.Register(a[:1]); err != nil {
			t.Fatal(err)
		}
		if _, _, err := o.Gather(a[:1], make([]float32, dim), -1, nil, loadA); err == nil || !strings.Contains(err.Error(), "not in loads") {
			t.Errorf("a row registered again, gathered from its first load: %v", err)
		}
		for _, ids := range [][]int32{{mem[0]}, {-1}, {n}} {
			if _, err := o.Register(ids); err == nil {
				t.Errorf("Register(%v): no error", ids)
			}
		}
		if _, err := o.Register(); err == nil {
			t.Error("Register(): no error")
		}
		if _, _, err := o.Gather(mem[:1], make([]float32, dim), slices.Index(s.BinIDs(), "socket0"), make([]int32, 1), loadA); err == nil || !strings.Contains(err.Error(), "not a worker cache bin") {
			t.Errorf("a socket bin as resident: %v", err)
		}
	}
}

// TestOverlayRegistersBesideGathers: a load registered while another
// load's batches are gathered (the next macro-batch read while this one
// trains) leaves those batches' rows alone; run with -race.
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
	loadA := register(t, s, o, a)
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
				if _, _, err := o.Gather(a, got, -1, nil, loadA); err != nil {
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
	for range 50 {
		if _, err := o.Register(b); err != nil {
			t.Fatal(err)
		}
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
func register(t *testing.T, s *Store, o *Overlay, pieces ...[]int32) Loaded {
	t.Helper()
	l := Loaded{Rows: make([][]float32, len(pieces))}
	for k, ids := range pieces {
		l.Rows[k] = make([]float32, len(ids)*s.Dim())
		if _, err := s.Gather(context.Background(), ids, l.Rows[k]); err != nil {
			t.Fatal(err)
		}
	}
	var err error
	if l.First, err = o.Register(pieces...); err != nil {
		t.Fatal(err)
	}
	return l
}
