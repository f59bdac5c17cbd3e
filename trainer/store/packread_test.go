package store

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
)

// randomBatches are PackBatches of fixed random inputs: batch b of
// worker w's epoch e is inputs[w][e][b], distinct vertices each.
type randomBatches struct {
	inputs [][][][]int32
}

func newRandomBatches(n, workers, epochs, batches, size int, seed uint64) randomBatches {
	rng := rand.New(rand.NewPCG(seed, 3))
	rb := randomBatches{inputs: make([][][][]int32, workers)}
	for w := range workers {
		rb.inputs[w] = make([][][]int32, epochs)
		for e := range epochs {
			for range batches {
				perm := rng.Perm(n)[:size]
				in := make([]int32, size)
				for i, v := range perm {
					in[i] = int32(v)
				}
				rb.inputs[w][e] = append(rb.inputs[w][e], in)
			}
		}
	}
	return rb
}

func (rb randomBatches) Workers() int                { return len(rb.inputs) }
func (rb randomBatches) Batches(w int) int           { return len(rb.inputs[w][0]) }
func (rb randomBatches) Sampling() string            { return "random batches" }
func (rb randomBatches) input(b PackedBatch) []int32 { return rb.inputs[b.Worker][b.Epoch][b.Batch] }
func (rb randomBatches) Inputs(ctx context.Context, w, e, first int, fn func(int, []int32) bool) error {
	for b := first; b < len(rb.inputs[w][e]); b++ {
		if !fn(b, rb.inputs[w][e][b]) {
			break
		}
	}
	return nil
}

// packedFixture packs rb's batches from a store with about half its rows
// on two SSD directories.
func packedFixture(t *testing.T, rb randomBatches, n, dim int) (*fixture, *Store, *Packed) {
	t.Helper()
	fx, _, _ := materialized(t, n, dim, mixMixed, 2, 5)
	s, err := Open(fx.dir, Options{QueueDepth: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.Pack(context.Background(), rb, PackOptions{Epochs: len(rb.inputs[0])}); err != nil {
		t.Fatal(err)
	}
	p, err := s.OpenPacked(PackedName, rb.Sampling())
	if err != nil {
		t.Fatal(err)
	}
	return fx, s, p
}

// TestPackedReadAhead gathers packed batches with the next batch named:
// in order (each read ahead, across the epochs' end too), skipping and
// going back (the read ahead is another batch's), with a hint for a batch
// never gathered, and from two workers at once. Every gathered row is the
// feature row, and each batch's stats count its own reads.
func TestPackedReadAhead(t *testing.T) {
	const n, dim, batches, size = 600, 100, 6, 120
	rb := newRandomBatches(n, 2, 2, batches, size, 9)
	fx, _, p := packedFixture(t, rb, n, dim)
	defer p.Close()
	ctx := context.Background()
	// gather reports with Errorf: the workers' goroutines call it.
	gather := func(t *testing.T, at PackedBatch, next *PackedBatch) {
		t.Helper()
		in := rb.input(at)
		dst := make([]float32, len(in)*dim)
		_, st, err := p.Gather(ctx, at, next, in, dst, -1, nil)
		if err != nil {
			t.Errorf("batch %+v: %v", at, err)
			return
		}
		for i, v := range in {
			for j := range dim {
				if got, want := dst[i*dim+j], fx.feats[int(v)*dim+j]; got != want {
					t.Errorf("batch %+v row %d (vertex %d) [%d] = %v, want %v", at, i, v, j, got, want)
					return
				}
			}
		}
		if st.SSDRows == 0 || st.UsefulBytes != int64(st.SSDRows)*int64(dim)*4 || st.DeviceBytes < st.UsefulBytes || !(st.ReadSeconds > 0) {
			t.Errorf("batch %+v: %d disk rows, %d useful and %d device bytes, reads %v s", at, st.SSDRows, st.UsefulBytes, st.DeviceBytes, st.ReadSeconds)
		}
	}
	orders := []struct {
		name  string
		order []PackedBatch
		hint  func(i int, order []PackedBatch) *PackedBatch
	}{
		{"in order", nil, func(i int, o []PackedBatch) *PackedBatch {
			if i+1 < len(o) {
				return &o[i+1]
			}
			return &PackedBatch{Epoch: 0, Batch: 0}
		}},
		{"hints wrong", nil, func(i int, o []PackedBatch) *PackedBatch {
			return &PackedBatch{Epoch: (i + 1) % 2, Batch: (i * 5) % batches}
		}},
		{"hint not packed", nil, func(int, []PackedBatch) *PackedBatch { return &PackedBatch{Epoch: 7, Batch: 99} }},
	}
	var all []PackedBatch
	for e := range 2 {
		for b := range batches {
			all = append(all, PackedBatch{Epoch: e, Batch: b})
		}
	}
	for _, o := range orders {
		t.Run(o.name, func(t *testing.T) {
			order := all
			if o.name != "in order" {
				order = []PackedBatch{all[3], all[1], all[8], all[8], all[0], all[11]}
			}
			for i, at := range order {
				gather(t, at, o.hint(i, order))
			}
		})
	}
	// Two goroutines gathering one worker's batches (the multistage
	// loader's workers share the parts, packed as worker 0's) take
	// turns: each one's hint is the other's undoing, never a wrong row.
	t.Run("one worker, two callers", func(t *testing.T) {
		done := make(chan struct{})
		for g := range 2 {
			go func() {
				defer func() { done <- struct{}{} }()
				for i := range 2 * batches {
					b := (i + g*3) % batches
					next := PackedBatch{Epoch: g, Batch: (b + 1) % batches}
					gather(t, PackedBatch{Epoch: g, Batch: b}, &next)
				}
			}()
		}
		<-done
		<-done
	})
	t.Run("two workers", func(t *testing.T) {
		done := make(chan struct{})
		for w := range 2 {
			go func() {
				defer func() { done <- struct{}{} }()
				for b := range batches {
					at := PackedBatch{Worker: w, Epoch: 1, Batch: b}
					next := PackedBatch{Worker: w, Epoch: 1, Batch: (b + 1) % batches}
					gather(t, at, &next)
				}
			}()
		}
		<-done
		<-done
	})
}

// TestPackedReadAheadDamageAndClose: a damaged piece read ahead is an
// error naming its file when its batch is gathered, the batches before it
// gathered right; Close with a read ahead in flight returns, and a Gather
// after it is an error, not a hang.
func TestPackedReadAheadDamageAndClose(t *testing.T) {
	const n, dim, batches, size = 500, 64, 3, 150
	rb := newRandomBatches(n, 1, 1, batches, size, 4)
	_, _, p := packedFixture(t, rb, n, dim)
	ctx := context.Background()
	// The last piece of the first directory's file ends with batch 3's
	// last row: flip a byte in it.
	m := p.Manifest()
	file := m.PackedFile(0, 0, 0)
	off, rows, _ := p.entryAt(0, 0, batches-1, 0)
	if rows == 0 {
		t.Fatal("batch 3 holds no rows on the first directory")
	}
	pl := layoutPiece(rows, m.RowBytes)
	flip(t, file, off+pl.data+int64(rows-1)*m.RowBytes+3)
	for b := range batches {
		at := PackedBatch{Batch: b}
		next := PackedBatch{Batch: b + 1}
		in := rb.input(at)
		_, _, err := p.Gather(ctx, at, &next, in, make([]float32, len(in)*dim), -1, nil)
		switch {
		case b < batches-1 && err != nil:
			t.Fatalf("batch %d: %v", b+1, err)
		case b == batches-1 && (err == nil || !strings.Contains(err.Error(), file) || !strings.Contains(err.Error(), "damaged")):
			t.Fatalf("batch %d: err = %v, want one naming %s and the damaged row", b+1, err, file)
		}
	}
	at := PackedBatch{Batch: 0}
	in := rb.input(at)
	if _, _, err := p.Gather(ctx, at, &PackedBatch{Batch: 1}, in, make([]float32, len(in)*dim), -1, nil); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("Close with a read ahead: %v", err)
	}
	if _, _, err := p.Gather(ctx, PackedBatch{Batch: 1}, nil, rb.input(PackedBatch{Batch: 1}), make([]float32, size*dim), -1, nil); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Gather after Close: err = %v, want closed", err)
	}
}

// flip inverts the byte of path at off (a small test file, rewritten
// whole).
func flip(t *testing.T, path string, off int64) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil || off >= int64(len(data)) {
		t.Fatalf("read %s for offset %d: %v", path, off, err)
	}
	data[off] ^= 0xff
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestReadParts reads batches' pieces whole as the multistage loader's
// first stage does: each piece's rows, where they were read, are its
// vertices' feature rows, and the pieces hold exactly the batches' rows on
// disk; a damaged row is an error naming the file, and the buffer serves
// the next read.
func TestReadParts(t *testing.T) {
	for _, chunk := range []int64{readChunkBytes, FileAlignBytes, 3 * FileAlignBytes} {
		readParts(t, chunk)
	}
}

// readParts is TestReadParts with ReadParts's reads cut into chunk bytes.
func readParts(t *testing.T, chunk int64) {
	const n, dim, batches, size = 700, 40, 4, 160
	rb := newRandomBatches(n, 1, 1, batches, size, 8)
	_, s, p := packedFixture(t, rb, n, dim)
	p.chunkBytes = chunk
	ctx := context.Background()
	var into PartsRead
	check := func(parts ...int) error {
		t.Helper()
		var at []PackedBatch
		want, wantRows := map[int32]bool{}, 0
		for _, b := range parts {
			at = append(at, PackedBatch{Batch: b})
			for _, v := range rb.input(PackedBatch{Batch: b}) {
				if !s.InMemory(v) {
					want[v] = true
					wantRows++
				}
			}
		}
		st, err := p.ReadParts(ctx, at, &into)
		if err != nil {
			return err
		}
		got := 0
		for k, ids := range into.IDs {
			rows := make([]float32, len(ids)*dim)
			if _, err := s.Gather(ctx, ids, rows); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(into.Rows[k], rows) {
				t.Fatalf("%d-byte reads, parts %v, piece %d: its rows are not its vertices' features", chunk, parts, k)
			}
			for _, v := range ids {
				if !want[v] {
					t.Fatalf("parts %v: vertex %d read, not one of the batches' rows on disk", parts, v)
				}
			}
			got += len(ids)
		}
		if got != wantRows || st.SSDRows != got || st.DeviceBytes < int64(got)*int64(dim)*4 {
			t.Fatalf("parts %v: %d rows read (stats %d, %d device bytes), the batches have %d on disk", parts, got, st.SSDRows, st.DeviceBytes, wantRows)
		}
		return nil
	}
	for _, parts := range [][]int{{2, 0}, {1}, {0, 1, 2, 3}} {
		if err := check(parts...); err != nil {
			t.Fatal(err)
		}
	}
	m := p.Manifest()
	file := m.PackedFile(0, 0, 1)
	off, rows, _ := p.entryAt(0, 0, 3, 1)
	if rows == 0 {
		t.Fatal("batch 4 holds no rows on the second directory")
	}
	flip(t, file, off+layoutPiece(rows, m.RowBytes).data+int64(rows/2)*m.RowBytes)
	if err := check(0, 3); err == nil || !strings.Contains(err.Error(), file) || !strings.Contains(err.Error(), "damaged") {
		t.Fatalf("%d-byte reads, a damaged row: err = %v, want one naming %s and the damaged row", chunk, err, file)
	}
	if err := check(1, 2); err != nil {
		t.Fatalf("after a damaged piece: %v", err)
	}
	if _, err := p.ReadParts(ctx, []PackedBatch{{Batch: batches}}, &into); err == nil || !strings.Contains(err.Error(), "not packed") {
		t.Errorf("a part not packed: %v", err)
	}
}

// TestMeasureParts times macro-batches of parts as the multistage loader
// reads them: after one untimed macro-batch, each timed one counts its
// parts' disk rows; the reads' rate, the checks' and the stage's wall time
// a row are all measured; a group larger than the set reads every part; a
// damaged row fails the measurement, naming its file.
func TestMeasureParts(t *testing.T) {
	const n, dim, batches, size = 700, 40, 4, 160
	rb := newRandomBatches(n, 1, 1, batches, size, 8)
	_, s, p := packedFixture(t, rb, n, dim)
	onDisk := func(parts ...int) int {
		rows := 0
		for _, b := range parts {
			for _, v := range rb.input(PackedBatch{Batch: b}) {
				if !s.InMemory(v) {
					rows++
				}
			}
		}
		return rows
	}
	ctx := context.Background()
	for _, tc := range []struct {
		group, want int
	}{
		{2, onDisk(2, 3)},       // parts 0 and 1 untimed
		{3, onDisk(3, 0, 1)},    // cycling past the last part
		{9, onDisk(0, 1, 2, 3)}, // the whole set a macro-batch
		{0, onDisk(1)},          // at least one part
	} {
		rr, err := p.MeasureParts(ctx, 0, tc.group)
		if err != nil {
			t.Fatal(err)
		}
		if rr.Rows != tc.want || !(rr.RowsPerS > 0) || !(rr.CheckSecondsPerRow > 0) || !(rr.StageSecondsPerRow > 0) {
			t.Errorf("groups of %d parts: %+v, want %d rows and every rate measured", tc.group, rr, tc.want)
		}
	}
	m := p.Manifest()
	file := m.PackedFile(0, 0, 0)
	off, rows, _ := p.entryAt(0, 0, 2, 0)
	flip(t, file, off+layoutPiece(rows, m.RowBytes).data)
	if _, err := p.MeasureParts(ctx, 0, 2, &PartsRead{}, &PartsRead{}); err == nil || !strings.Contains(err.Error(), file) {
		t.Errorf("a damaged row: err = %v, want one naming %s", err, file)
	}
}

// TestPerRowWithoutStalls: the disk measurement's check and CPU time a
// row leaves out batches stalled past 1.5 times the median batch's rate,
// weighs batches by their rows, and skips batches without a figure.
func TestPerRowWithoutStalls(t *testing.T) {
	batches := func(n, rows int, perRow float64) []batchCost {
		b := make([]batchCost, n)
		for i := range b {
			b[i] = batchCost{rows: rows, check: perRow * float64(rows), cpu: 2 * perRow * float64(rows), cpuOK: i%2 == 0}
		}
		return b
	}
	stall := batchCost{rows: 100, check: 4e-4, cpu: 8e-4, cpuOK: true}
	stalled := append(batches(20, 100, 1e-6), stall)
	mixed := append(batches(8, 100, 1e-6), batches(8, 300, 1.2e-6)...)
	check := func(b batchCost) (float64, bool) { return b.check, true }
	cpu := func(b batchCost) (float64, bool) { return b.cpu, b.cpuOK }
	for _, tc := range []struct {
		name string
		each []batchCost
		cost func(batchCost) (float64, bool)
		want float64
	}{
		{"steady", batches(10, 100, 1e-6), check, 1e-6},
		{"a stall left out", stalled, check, 1e-6},
		{"weighed by rows", mixed, check, (800*1e-6 + 2400*1.2e-6) / 3200},
		{"cpu where measured", stalled, cpu, 2e-6},
		{"too few to tell", append(batches(2, 100, 1e-6), stall), check, (2e-4 + 4e-4) / 300},
		{"none measured", batches(4, 100, 1e-6)[1:2], cpu, 0},
		{"no rows", []batchCost{{check: 1}}, check, 0},
	} {
		if got := perRowWithoutStalls(tc.each, tc.cost); math.Abs(got-tc.want) > 1e-15 {
			t.Errorf("%s: %g s a row, want %g", tc.name, got, tc.want)
		}
	}
}
