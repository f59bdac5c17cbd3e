package trainer

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gnnplan/gnnplan/kernels"
	"github.com/gnnplan/gnnplan/trainer/nn"
	"github.com/gnnplan/gnnplan/trainer/store"
)

// packFor packs epochs of o's batches from s and opens them.
func packFor(t *testing.T, d loaded, s *store.Store, o Options, epochs int) *store.Packed {
	t.Helper()
	if _, err := Pack(context.Background(), d.g, s, o, store.PackOptions{Epochs: epochs}); err != nil {
		t.Fatal(err)
	}
	p, err := s.OpenPacked(store.PackedName, Sampling(d.g, o))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// TestPackedMatchesOnline trains from packed batches: for the epochs
// packed, the loss curve and parameters are bitwise those of online
// training (the same batches, the same rows); past them the packed
// epochs are reused in order, reading the same rows again. Each batch's
// disk rows come in one read per SSD directory. The second store serves
// its rows scaled (store.Options.RowNormalize): its caches and packed
// rows train the in-memory matrix's bits.
func TestPackedMatchesOnline(t *testing.T) {
	for _, dim := range []int{128, 100} {
		const n = 1500
		dir := synthDataset(t, n, dim)
		d := load(t, dir)
		for _, kind := range []nn.Kind{nn.GraphSAGE, nn.GAT} {
			o := smallOptions(kind)
			o.BatchSize, o.Epochs = 64, 2
			mem := newTrainer(t, d, o, 2)
			memRes, err := mem.Run(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			for i, mix := range testMixes[:2] {
				t.Run(fmt.Sprintf("dim=%d/%s/%s", dim, kind, mix.name), func(t *testing.T) {
					s := materializeStoreWith(t, dir, n, mix, uint64(i), store.Options{QueueDepth: 8, RowNormalize: i == 1})
					oo := o
					oo.Features, oo.Loader = StoreSource(s), LoaderPacked
					oo.Packed = packFor(t, d, s, oo, 2)
					oo.Epochs = 3
					res, err := newOutOfCore(t, d.g, oo, 2).Run(context.Background(), nil)
					if err != nil {
						t.Fatal(err)
					}
					for e, me := range memRes.Epochs {
						es := res.Epochs[e]
						if es.Loss != me.Loss || es.ValLoss != me.ValLoss || es.TestAcc != me.TestAcc {
							t.Errorf("epoch %d: loss %v, val loss %v, test %v; online in memory %v, %v, %v", e+1, es.Loss, es.ValLoss, es.TestAcc, me.Loss, me.ValLoss, me.TestAcc)
						}
					}
					first, reused := res.Epochs[0].Rows, res.Epochs[2].Rows
					if first.SSDRows == 0 || reused.SSDRows != first.SSDRows || reused.UsefulBytes != first.UsefulBytes {
						t.Errorf("epoch 3 (reusing epoch 1's batches) read %d disk rows (%d bytes), epoch 1 %d (%d)", reused.SSDRows, reused.UsefulBytes, first.SSDRows, first.UsefulBytes)
					}
					if want := res.Epochs[0].Batches * mix.ssds; first.DeviceReads > want*2 {
						t.Errorf("epoch 1: %d device reads for %d batches over %d directories", first.DeviceReads, res.Epochs[0].Batches, mix.ssds)
					}
				})
			}
		}
	}
}

// TestPackedRefusesWhatItWasNotPackedFor: packed batches serve only the
// store, cache and sampling they were packed for.
func TestPackedRefusesWhatItWasNotPackedFor(t *testing.T) {
	const n = 800
	dir := synthDataset(t, n, 64)
	d := load(t, dir)
	s := materializeStore(t, dir, n, testMixes[1], 1)
	o := smallOptions(nn.GraphSAGE)
	o.Features, o.Loader = StoreSource(s), LoaderPacked
	if _, err := s.OpenPacked(store.PackedName, Sampling(d.g, o)); !errors.Is(err, store.ErrNotPacked) {
		t.Fatalf("before packing: err = %v, want ErrNotPacked", err)
	}
	packFor(t, d, s, o, 1)
	other := o
	other.Seed++
	if _, err := s.OpenPacked(store.PackedName, Sampling(d.g, other)); !errors.Is(err, store.ErrNotPacked) || !strings.Contains(err.Error(), "sampling") {
		t.Errorf("another seed: err = %v, want ErrNotPacked naming the sampling", err)
	}
	other = o
	other.Fanouts = []int{4, 3}
	if _, err := s.OpenPacked(store.PackedName, Sampling(d.g, other)); !errors.Is(err, store.ErrNotPacked) {
		t.Errorf("other fanouts: err = %v, want ErrNotPacked", err)
	}
	// The same store serving its rows scaled: the rows packed raw are
	// not its rows.
	scaled, err := store.Open(dir, store.Options{RowNormalize: true})
	if err != nil {
		t.Fatal(err)
	}
	defer scaled.Close()
	if _, err := scaled.OpenPacked(store.PackedName, Sampling(d.g, o)); !errors.Is(err, store.ErrNotPacked) || !strings.Contains(err.Error(), "scaled") {
		t.Errorf("a store that scales its rows: err = %v, want ErrNotPacked naming the scaling", err)
	}
	// A trainer told not to scale refuses a store that does.
	raw := o
	raw.Features, raw.Packed, raw.Loader, raw.RowNormalize = StoreSource(scaled), nil, LoaderOnline, false
	b, err := kernels.NewCPU(kernels.CPUOptions{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(b, d.g, nil, raw); err == nil || !strings.Contains(err.Error(), "row-normalize") {
		t.Errorf("RowNormalize off with a scaling store: err = %v, want one naming row-normalize", err)
	}
}

// TestPackedDamageIsAnError damages packed files: a flipped bit in a row,
// in the vertex ids, a truncated file and a stale index each stop
// training or opening with the file named, never a wrong row trained.
func TestPackedDamageIsAnError(t *testing.T) {
	const n = 800
	dir := synthDataset(t, n, 64)
	d := load(t, dir)
	cases := []struct {
		name, want string
		damage     func(t *testing.T, m *store.PackManifest, file string)
	}{
		{"row bit", "row 0 (vertex", func(t *testing.T, m *store.PackManifest, file string) { flipByte(t, file, firstRowOffset(t, file)+5) }},
		{"vertex id", "damaged", func(t *testing.T, m *store.PackManifest, file string) { flipByte(t, file, 64+1) }},
		{"truncated", "truncated", func(t *testing.T, m *store.PackManifest, file string) {
			fi, _ := os.Stat(file)
			if err := os.Truncate(file, fi.Size()-4096); err != nil {
				t.Fatal(err)
			}
		}},
		{"index", "index", func(t *testing.T, m *store.PackManifest, file string) {
			flipByte(t, filepath.Join(dir, store.PackedName+".idx"), 3)
		}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := materializeStore(t, dir, n, testMixes[0], uint64(i))
			o := smallOptions(nn.GraphSAGE)
			o.BatchSize = 400
			o.Features, o.Loader = StoreSource(s), LoaderPacked
			m, err := Pack(context.Background(), d.g, s, o, store.PackOptions{Epochs: 1})
			if err != nil {
				t.Fatal(err)
			}
			file := m.PackedFile(0, 0, 0)
			c.damage(t, m, file)
			p, err := s.OpenPacked(store.PackedName, Sampling(d.g, o))
			if err == nil {
				defer p.Close()
				o.Packed = p
				_, err = newOutOfCore(t, d.g, o, 1).Run(context.Background(), nil)
			}
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "packed") {
				t.Fatalf("err = %v, want one naming the packed file and %q", err, c.want)
			}
		})
	}
}

// firstRowOffset is where the first piece of a packed file keeps its
// first row: after its header, ids and checksums, on 64 bytes.
func firstRowOffset(t *testing.T, path string) int64 {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil || len(data) < 64 {
		t.Fatalf("read %s: %v", path, err)
	}
	rows := int64(binary.LittleEndian.Uint32(data[8+4*4:]))
	return (64 + 8*rows + 63) / 64 * 64
}

// flipByte inverts one byte of path at off.
func flipByte(t *testing.T, path string, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0xff
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// TestPackStoppedLeavesNothing cancels a packing: no manifest, no
// temporary file; a space limit that holds no epoch is a one-line error
// naming the flag.
func TestPackStoppedLeavesNothing(t *testing.T) {
	const n = 800
	dir := synthDataset(t, n, 64)
	d := load(t, dir)
	s := materializeStore(t, dir, n, testMixes[0], 1)
	o := smallOptions(nn.GraphSAGE)
	o.Loader = LoaderPacked
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Pack(ctx, d.g, s, o, store.PackOptions{Epochs: 2}); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled: err = %v", err)
	}
	_, err := Pack(context.Background(), d.g, s, o, store.PackOptions{Epochs: 2, SpaceBytes: 4096})
	if err == nil || !strings.Contains(err.Error(), "pack-space") {
		t.Errorf("4 KiB of space: err = %v, want one naming pack-space", err)
	}
	if _, err := store.ReadPackManifest(dir, store.PackedName); !errors.Is(err, store.ErrNotPacked) {
		t.Errorf("a manifest was left: %v", err)
	}
	for _, d := range s.Manifest().Bins {
		if d.Path == "" {
			continue
		}
		left, _ := filepath.Glob(filepath.Join(filepath.Dir(d.Path), "packed-*"))
		if len(left) > 0 {
			t.Errorf("files left: %v", left)
		}
	}
	m, err := Pack(context.Background(), d.g, s, o, store.PackOptions{Epochs: 3, SpaceBytes: 1 << 40})
	if err != nil || m.Epochs != 3 || m.Rows == 0 || m.Bytes < m.Rows*m.RowBytes {
		t.Fatalf("packing 3 epochs: %+v, %v", m, err)
	}
	one := m.Bytes / 3
	m, err = Pack(context.Background(), d.g, s, o, store.PackOptions{Epochs: 3, SpaceBytes: 2*one + one/2})
	if err != nil || m.Epochs != 2 || !m.SpaceLimited {
		t.Fatalf("space for 2.5 epochs: %d epochs packed (limited %v), %v", m.Epochs, m.SpaceLimited, err)
	}
}
