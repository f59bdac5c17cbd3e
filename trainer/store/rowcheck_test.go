package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gnnplan/gnnplan/internal/inputerr"
	"github.com/gnnplan/gnnplan/internal/tier"
	"github.com/gnnplan/gnnplan/trainer/dataset"
	"github.com/gnnplan/gnnplan/trainer/ioread"
)

// rewrite changes the bytes of path at off with edit.
func rewrite(t *testing.T, path string, off int64, n int, edit func(p []byte)) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p := make([]byte, n)
	if _, err := f.ReadAt(p, off); err != nil {
		t.Fatal(err)
	}
	edit(p)
	if _, err := f.WriteAt(p, off); err != nil {
		t.Fatal(err)
	}
}

// TestEveryReadRowIsChecked damages rows of every SSD bin in the ways a
// disk or a person can (a flipped bit, two rows swapped, a row read as
// zeros) and gathers: every batch holding a damaged row fails naming the
// bin's file, the row and the vertex, and a batch without one still reads,
// on both reader engines and at 512-byte and 4 KiB rows.
func TestEveryReadRowIsChecked(t *testing.T) {
	for _, dim := range []int{128, 1024} {
		for _, engine := range []string{"pread", "auto"} {
			t.Run(fmt.Sprintf("dim=%d/%s", dim, engine), func(t *testing.T) {
				const n = 600
				fx, l, m := materialized(t, n, dim, mixMixed, 2, uint64(dim))
				rng := rand.New(rand.NewPCG(uint64(dim), 3))
				byBin := map[int][]int32{} // vertices of each SSD bin
				for v, b := range l.Bin {
					if m.Bins[b].Kind == tier.SSD {
						byBin[int(b)] = append(byBin[int(b)], int32(v))
					}
				}
				if len(byBin) < 3 {
					t.Fatalf("want rows in at least 3 SSD bins, have %d", len(byBin))
				}
				for b, vs := range byBin {
					bf := m.Bins[b]
					rowOff := func(v int32) int64 { return HeaderBytes + int64(l.Row[v])*bf.StrideBytes }
					for trial := range 3 {
						v := vs[rng.IntN(len(vs))]
						w := vs[rng.IntN(len(vs))]
						var undo func()
						what := ""
						switch trial {
						case 0:
							i, bit := rng.IntN(4*dim), byte(1)<<rng.IntN(8)
							what = fmt.Sprintf("bit %d of byte %d flipped", bit, i)
							flipBit := func(p []byte) { p[i] ^= bit }
							rewrite(t, bf.Path, rowOff(v), 4*dim, flipBit)
							undo = func() { rewrite(t, bf.Path, rowOff(v), 4*dim, flipBit) }
						case 1:
							if v == w {
								continue
							}
							what = fmt.Sprintf("swapped with vertex %d's row", w)
							swap := func() {
								a, c := make([]byte, 4*dim), make([]byte, 4*dim)
								rewrite(t, bf.Path, rowOff(v), 4*dim, func(p []byte) { copy(a, p) })
								rewrite(t, bf.Path, rowOff(w), 4*dim, func(p []byte) { copy(c, p); copy(p, a) })
								rewrite(t, bf.Path, rowOff(v), 4*dim, func(p []byte) { copy(p, c) })
							}
							swap()
							undo = swap
						case 2:
							what = "read as zeros"
							old := make([]byte, 4*dim)
							rewrite(t, bf.Path, rowOff(v), 4*dim, func(p []byte) { copy(old, p); clear(p) })
							undo = func() { rewrite(t, bf.Path, rowOff(v), 4*dim, func(p []byte) { copy(p, old) }) }
						}
						s, err := Open(fx.dir, Options{Engine: engine, QueueDepth: 8})
						if err != nil {
							t.Fatalf("open (the rows are checked as read, not at open): %v", err)
						}
						batch := append(randomBatch(n, 200, rng), v)
						rng.Shuffle(len(batch), func(i, j int) { batch[i], batch[j] = batch[j], batch[i] })
						dst := make([]float32, len(batch)*dim)
						_, err = gatherNoHang(t, s, context.Background(), batch, dst)
						var ie *inputerr.Error
						want := fmt.Sprintf("row %d (vertex %d)", l.Row[v], v)
						if trial == 1 {
							// Either of the two swapped rows may be met first.
							if !strings.Contains(fmt.Sprint(err), want) {
								want = fmt.Sprintf("row %d (vertex %d)", l.Row[w], w)
							}
						}
						if !errors.As(err, &ie) || ie.Path != bf.Path || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "damaged") {
							t.Errorf("bin %s, vertex %d's row %s: gather gave %v; want an input error naming %s and %q", bf.ID, v, what, err, bf.Path, want)
						}
						// Rows other than the damaged ones still read right.
						var clean []int32
						for _, u := range randomBatch(n, 200, rng) {
							if u != v && u != w {
								clean = append(clean, u)
							}
						}
						got := make([]float32, len(clean)*dim)
						if _, err := gatherNoHang(t, s, context.Background(), clean, got); err != nil {
							t.Errorf("a batch without the damaged row: %v", err)
						}
						for i, u := range clean {
							if !slices.Equal(got[i*dim:(i+1)*dim], fx.feats[int(u)*dim:(int(u)+1)*dim]) {
								t.Fatalf("vertex %d read wrong", u)
							}
						}
						s.Close()
						undo()
					}
				}
			})
		}
	}
}

// TestOpenRefusesDamagedRowChecksums: the table of row checksums is itself
// checked when Open loads it.
func TestOpenRefusesDamagedRowChecksums(t *testing.T) {
	fx, _, m := materialized(t, 500, 64, mixAllSSD, 1, 9)
	for i, b := range m.Bins {
		if b.Kind != tier.SSD || b.Rows < 2 {
			continue
		}
		rewrite(t, b.Path, rowCRCsOffset(b.Rows, b.StrideBytes)+5, 1, func(p []byte) { p[0] ^= 4 })
		_, err := Open(fx.dir, Options{Engine: "pread"})
		var ie *inputerr.Error
		if !errors.As(err, &ie) || ie.Path != b.Path || !strings.Contains(err.Error(), "row checksums are damaged") || !strings.Contains(err.Error(), fmt.Sprintf("bins[%d]", i)) {
			t.Errorf("open with bin %d's row checksums damaged: %v", i, err)
		}
		return
	}
	t.Fatal("no SSD bin with rows")
}

// TestCacheOverrideChecksRowsReadFromFeatures: with a cache override, the
// rows the layout keeps in memory are read from features.npy; a row that
// changes there after Open is refused, not trained on.
func TestCacheOverrideChecksRowsReadFromFeatures(t *testing.T) {
	const n, dim = 800, 64
	fx, l, m := materialized(t, n, dim, mixMixed, 2, 21)
	hot := make([]uint32, n) // nothing hot: a cache of 0 rows
	s, err := Open(fx.dir, Options{Engine: "pread", QueueDepth: 8, Cache: &CacheOverride{Fraction: 0, Hotness: hot}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	v := int32(-1)
	for u, b := range l.Bin {
		if m.Bins[b].Kind != tier.SSD {
			v = int32(u)
			break
		}
	}
	if v < 0 {
		t.Fatal("the layout keeps no row in memory")
	}
	path := filepath.Join(fx.dir, dataset.FeaturesFile)
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	off := st.Size() - int64(n-int(v))*4*dim + 3
	rewrite(t, path, off, 1, func(p []byte) { p[0] ^= 1 })
	dst := make([]float32, dim)
	_, err = gatherNoHang(t, s, context.Background(), []int32{v}, dst)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("vertex %d", v)) || !strings.Contains(err.Error(), dataset.FeaturesFile) {
		t.Errorf("vertex %d's row changed in %s after open: gather gave %v, want an error naming the file and the vertex", v, path, err)
	}
}

// setFeature writes x as vertex v's feature col in features.npy of fx.
func (fx *fixture) setFeature(t *testing.T, v, col int, x float32) {
	t.Helper()
	path := filepath.Join(fx.dir, dataset.FeaturesFile)
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	dim := fx.meta.FeatureDim
	off := st.Size() - int64(fx.meta.NumNodes)*int64(4*dim) + int64(v*dim+col)*4
	rewrite(t, path, off, 4, func(p []byte) { binary.LittleEndian.PutUint32(p, math.Float32bits(x)) })
}

// TestMaterializeRefusesNonFiniteFeatures: a NaN or infinite feature in
// any row, cached or on SSD, is refused when the store is cut, naming the
// row and column, as memory mode refuses it: no store holds one.
func TestMaterializeRefusesNonFiniteFeatures(t *testing.T) {
	for _, x := range []float32{float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())} {
		fx := newFixture(t, 700, 16, 3)
		fx.place(t, randomBins(700, mixMixed, rand.New(rand.NewPCG(3, 3))), rand.New(rand.NewPCG(3, 4)))
		fx.setFeature(t, 611, 9, x)
		_, err := Materialize(context.Background(), fx.dir, fx.dir, ssdDirs(t, 1), MaterializeOptions{})
		want := fmt.Sprintf("row 611 column 9 is %v", x)
		if !inputerr.Is(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("a feature of %v: materialize gave %v, want a bad-input error saying %q", x, err, want)
		}
		if _, err := os.Stat(filepath.Join(fx.dir, ManifestFile)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a feature of %v: a manifest was written (%v)", x, err)
		}
	}
}

// TestVerifyRefusesWhatOpenRefuses damages a store's inputs in the ways
// that leave every bin file intact: Verify must not call a store intact
// that Open (and so train) refuses, and it finds a features.npy changed
// in a row the sampled check does not read.
func TestVerifyRefusesWhatOpenRefuses(t *testing.T) {
	cases := []struct {
		name   string
		damage func(fx *fixture)
		want   string
	}{
		{"features changed in a row off the sample", func(fx *fixture) { fx.setFeature(t, 2, 0, 0.5) }, "the rows' CRC-32C"},
		{"features made infinite in a row off the sample", func(fx *fixture) { fx.setFeature(t, 5, 2, float32(math.Inf(1))) }, "row 5 column 2 is +Inf"},
		{"features rewritten in a sampled row", func(fx *fixture) { fx.setFeature(t, 0, 0, 0.25) }, "sampled rows differ"},
		{"the layout replaced", func(fx *fixture) {
			fx.place(t, randomBins(int(fx.meta.NumNodes), mixMixed, rand.New(rand.NewPCG(9, 9))), rand.New(rand.NewPCG(9, 10)))
		}, "the layout"},
		{"the dataset's shape changed", func(fx *fixture) {
			meta := fx.meta
			meta.NumNodes--
			if err := dataset.WriteMeta(fx.dir, meta); err != nil {
				t.Fatal(err)
			}
		}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// 1000 rows: the sampled check reads 256 of them, every fourth.
			fx, _, _ := materialized(t, 1000, 16, mixMixed, 1, 5)
			tc.damage(fx)
			s, oerr := Open(fx.dir, Options{Engine: "pread"})
			if oerr == nil {
				s.Close()
			}
			_, verr := Verify(context.Background(), fx.dir, VerifyOptions{})
			if verr == nil || !strings.Contains(verr.Error(), tc.want) {
				t.Errorf("Verify: %v, want an error saying %q", verr, tc.want)
			}
			if oerr == nil {
				t.Errorf("Open accepted the store (Verify: %v)", verr)
			}
		})
	}
}

// TestReadManifestRefusesImpossibleCounts: counts in store.json that no
// store can have are refused before anything is sized by them (a cache
// bin of 1e11 rows once reached makeslice).
func TestReadManifestRefusesImpossibleCounts(t *testing.T) {
	fx, _, _ := materialized(t, 300, 8, mixMixed, 1, 4)
	good, err := ReadManifest(fx.dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		edit func(m *Manifest)
		want string
	}{
		{"a cache bin of 1e11 rows", func(m *Manifest) { m.Bins[0].Rows = 1e11 }, "rows of the bins add up to"},
		{"rows that do not add up", func(m *Manifest) { m.Bins[0].Rows++ }, "want num_nodes (300)"},
		{"more vertices than a vertex id holds", func(m *Manifest) { m.NumNodes = 1 << 40 }, "num_nodes 1099511627776"},
		{"a row of a gigabyte", func(m *Manifest) { m.FeatureDim, m.RowBytes = 1<<30, 1<<32 }, "feature_dim 1073741824"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := *good
			m.Bins = slices.Clone(good.Bins)
			tc.edit(&m)
			if err := writeManifestFile(filepath.Join(fx.dir, ManifestFile), &m); err != nil {
				t.Fatal(err)
			}
			_, err := Open(fx.dir, Options{})
			if !inputerr.Is(err) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("open: %v, want a bad-input error saying %q", err, tc.want)
			}
		})
	}
}

// TestGatherInPieces: a batch large enough to be read in pieces (each
// checked while the next is read) still serves every row right, with and
// without a cache override, reads no block twice, and stops at a damaged
// row.
func TestGatherInPieces(t *testing.T) {
	const n, dim = 40000, 16 // 64-byte rows: 64 to a block
	fx, l, m := materialized(t, n, dim, mixMixed, 2, 31)
	rng := rand.New(rand.NewPCG(31, 1))
	batch := append(randomBatch(n, 30000, rng), randomBatch(n, 30000, rng)...)
	for _, cache := range []*CacheOverride{nil, {Fraction: 0.1, Hotness: zipfHotness(n, 1.1, rng)}} {
		s, err := Open(fx.dir, Options{Engine: "pread", QueueDepth: 16, Cache: cache})
		if err != nil {
			t.Fatal(err)
		}
		dst := make([]float32, len(batch)*dim)
		st, err := gatherNoHang(t, s, context.Background(), batch, dst)
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range batch {
			if !slices.Equal(dst[i*dim:(i+1)*dim], fx.feats[int(v)*dim:(int(v)+1)*dim]) {
				t.Fatalf("cache %v: batch row %d (vertex %d) read wrong", cache != nil, i, v)
			}
		}
		if st.SSDRows < 2*minCheckChunkRows {
			t.Fatalf("only %d rows from disk: the batch is not read in pieces", st.SSDRows)
		}
		// The same requests in one read: the pieces read no more.
		var reqs []ioread.Request
		buf := make([]byte, len(batch)*4*dim)
		for i, v := range batch {
			if b := &s.bins[s.bin[v]]; b.tier == tierSSD {
				reqs = append(reqs, ioread.Request{File: b.file, Offset: b.base + int64(s.row[v])*b.stride, Length: 4 * dim, Dst: buf[i*4*dim : (i+1)*4*dim]})
			}
		}
		whole, err := s.reader.Read(context.Background(), reqs)
		if err != nil {
			t.Fatal(err)
		}
		if st.DeviceBytes > whole.DeviceBytes {
			t.Errorf("cache %v: read %d bytes in pieces, %d in one read: a block was read twice", cache != nil, st.DeviceBytes, whole.DeviceBytes)
		}
		s.Close()
	}
	// A damaged row in a late piece is found.
	var last int32 = -1
	for v := n - 1; v >= 0; v-- {
		if m.Bins[l.Bin[v]].Kind == tier.SSD {
			last = int32(v)
			break
		}
	}
	bf := m.Bins[l.Bin[last]]
	rewrite(t, bf.Path, HeaderBytes+int64(l.Row[last])*bf.StrideBytes, 1, func(p []byte) { p[0] ^= 0x80 })
	s, err := Open(fx.dir, Options{Engine: "pread", QueueDepth: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	batch = append(batch, last)
	_, err = gatherNoHang(t, s, context.Background(), batch, make([]float32, len(batch)*dim))
	if want := fmt.Sprintf("row %d (vertex %d)", l.Row[last], last); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("gather over a damaged row: %v, want an error naming %s", err, want)
	}
}

// TestOpenRefusesCachesThatCannotFit: a layout (or --cache-fraction)
// whose caches would not fit the memory available is refused at Open with
// one line saying what they need, before they are allocated.
func TestOpenRefusesCachesThatCannotFit(t *testing.T) {
	fx, _, _ := materialized(t, 2000, 64, mixMixed, 1, 8)
	tiny := func() (uint64, bool) { return 64 << 10, true }
	hot := make([]uint32, 2000)
	for _, opt := range []Options{{memAvailable: tiny}, {memAvailable: tiny, Cache: &CacheOverride{Fraction: 0.5, Hotness: hot}}} {
		_, err := Open(fx.dir, opt)
		if !inputerr.Is(err) || !strings.Contains(err.Error(), "GiB available") || !strings.Contains(err.Error(), ManifestFile) {
			t.Errorf("open with 64 KiB available (override %v): %v, want a bad-input error saying what the caches need", opt.Cache != nil, err)
		}
	}
	plenty := func() (uint64, bool) { return 1 << 40, true }
	s, err := Open(fx.dir, Options{memAvailable: plenty})
	if err != nil {
		t.Fatalf("open with 1 TiB available: %v", err)
	}
	s.Close()
}
