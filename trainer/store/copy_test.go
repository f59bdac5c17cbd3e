package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestCopyThreadsGatherTheSame: a store copying on several goroutines
// gathers what one copying alone does, row for row, with the same counts,
// the same packing for a resident bin, the same memory view, and the same
// refusal of a bad vertex late in the batch.
func TestCopyThreadsGatherTheSame(t *testing.T) {
	const n, dim, rows = 3000, 8, 5*minCopyRows + 123
	fx, _, _ := materialized(t, n, dim, mixMixed, 2, 77)
	one, err := Open(fx.dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	many, err := Open(fx.dir, Options{CopyThreads: 6})
	if err != nil {
		t.Fatal(err)
	}
	defer many.Close()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(3, 4))
	batch := randomBatch(n, rows, rng)
	a, b := make([]float32, rows*dim), make([]float32, rows*dim)
	sa, err := one.Gather(ctx, batch, a)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := many.Gather(ctx, batch, b)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a, b) || !slices.Equal(sa.BinRows, sb.BinRows) || sa.SSDRows != sb.SSDRows || sa.SocketCacheHits != sb.SocketCacheHits ||
		sa.WorkerCacheHits != sb.WorkerCacheHits || sa.UsefulBytes != sb.UsefulBytes || sa.SSDRows == 0 || sa.SocketCacheHits == 0 {
		t.Fatalf("6 copy threads gathered other rows or counts: %+v, one thread %+v", sb, sa)
	}

	wb := one.WorkerBins()
	pa, ia := make([]float32, rows*dim), make([]int32, rows)
	pb, ib := make([]float32, rows*dim), make([]int32, rows)
	na, ra, err := one.GatherResident(ctx, batch, pa, wb[0], ia)
	if err != nil {
		t.Fatal(err)
	}
	nb, rb, err := many.GatherResident(ctx, batch, pb, wb[0], ib)
	if err != nil {
		t.Fatal(err)
	}
	if na != nb || !slices.Equal(ia, ib) || !slices.Equal(pa[:na*dim], pb[:nb*dim]) || ra.ResidentHits != rb.ResidentHits || ra.ResidentHits == 0 {
		t.Fatalf("resident gather: %d packed (%d resident) with 6 threads, %d (%d) with one, or other rows", nb, rb.ResidentHits, na, ra.ResidentHits)
	}

	ma, mb := make([]float32, rows*dim), make([]float32, rows*dim)
	if _, err := one.MemoryView().Gather(ctx, batch, ma); err != nil {
		t.Fatal(err)
	}
	if _, err := many.MemoryView().Gather(ctx, batch, mb); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ma, mb) {
		t.Fatal("the memory view copied other rows on 6 threads")
	}

	bad := slices.Clone(batch)
	bad[rows-7] = n + 5
	for name, g := range map[string]func() error{
		"gather":      func() error { _, err := many.Gather(ctx, bad, b); return err },
		"memory view": func() error { _, err := many.MemoryView().Gather(ctx, bad, b); return err },
	} {
		if err := g(); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("batch row %d", rows-7)) {
			t.Errorf("%s of a batch with vertex %d at row %d: %v, want a refusal naming the row", name, n+5, rows-7, err)
		}
	}
}

// BenchmarkGatherCopyThreads gathers batches of 88,000 random rows of 512
// bytes (a GraphSAGE 25,10 batch's input on a power-law graph) from a
// store holding 1 Mi rows (512 MiB) in memory, copying on 1 to 8
// goroutines: the rate a GPU's pipeline is fed at when every row is
// cached. Reports GB/s gathered and ns a row.
func BenchmarkGatherCopyThreads(b *testing.B) {
	const n, dim, rows = 1 << 20, 128, 88000
	fx, _, _ := materialized(b, n, dim, mixAllCache, 1, 9)
	rng := rand.New(rand.NewPCG(1, 2))
	batches := make([][]int32, 16)
	for i := range batches {
		batches[i] = randomBatch(n, rows, rng)
	}
	dst := make([]float32, rows*dim)
	for _, threads := range []int{1, 2, 4, 8} {
		b.Run(fmt.Sprintf("threads=%d", threads), func(b *testing.B) {
			s, err := Open(fx.dir, Options{CopyThreads: threads})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			i := 0
			for b.Loop() {
				if _, err := s.Gather(context.Background(), batches[i%len(batches)], dst); err != nil {
					b.Fatal(err)
				}
				i++
			}
			sec := b.Elapsed().Seconds()
			b.ReportMetric(float64(b.N)*rows*dim*4/sec/1e9, "GB/s")
			b.ReportMetric(sec/float64(b.N)/rows*1e9, "ns/row")
		})
	}
}
