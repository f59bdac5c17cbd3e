package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/gnnplan/gnnplan/ddak/layout"

	"github.com/gnnplan/gnnplan/ddak"
	"github.com/gnnplan/gnnplan/internal/tier"
	"github.com/gnnplan/gnnplan/trainer/dataset"
)

// fixture is a small dataset (meta.json and features.npy only: the store
// reads nothing else) with its features also kept in memory.
type fixture struct {
	dir   string
	meta  dataset.Meta
	feats []float32
}

// newFixture writes n rows of dim random features under a new directory.
func newFixture(t testing.TB, n, dim int, seed uint64) *fixture {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 7))
	feats := make([]float32, n*dim)
	for i := range feats {
		feats[i] = float32(rng.NormFloat64())
	}
	if err := dataset.WriteArray(filepath.Join(dir, dataset.FeaturesFile), "<f4", feats, int64(n), int64(dim)); err != nil {
		t.Fatal(err)
	}
	meta := dataset.Meta{Name: "fx", NumNodes: int64(n), FeatureDim: dim, FeatureDType: "float32", IndexDType: "int32"}
	if err := dataset.WriteMeta(dir, meta); err != nil {
		t.Fatal(err)
	}
	meta.SchemaVersion = dataset.SchemaVersion
	return &fixture{dir: dir, meta: meta, feats: feats}
}

// zipfHotness gives vertices Zipf(s) access counts in a random order, so
// hot vertices are scattered over the ids as in a real graph.
func zipfHotness(n int, s float64, rng *rand.Rand) []uint32 {
	hot := make([]uint32, n)
	for rank, v := range rng.Perm(n) {
		hot[v] = uint32(1e6/math.Pow(float64(rank+1), s)) + 1
	}
	return hot
}

// tierMix names which tiers a layout's rows go to.
type tierMix string

const (
	mixAllCache tierMix = "all cache"
	mixAllSSD   tierMix = "all ssd"
	mixMixed    tierMix = "mixed"
)

// randomBins makes hand-made bins for n rows of the given mix with random
// capacities: a GPU cache, two sockets' CPU caches and 3-4 SSDs.
func randomBins(n int, mix tierMix, rng *rand.Rand) []layout.Bin {
	var bins []layout.Bin
	nSSD := 3 + rng.IntN(2)
	ssd := func(capRows int64) {
		for i := range nSSD {
			bins = append(bins, layout.Bin{ID: fmt.Sprintf("nvme%d", i), Kind: tier.SSD, Socket: i % 2, CapacityRows: capRows,
				TargetShare: 0.1 + rng.Float64()})
		}
	}
	switch mix {
	case mixAllCache:
		bins = append(bins,
			layout.Bin{ID: "gpu0", Kind: tier.GPUMem, Socket: 0, CapacityRows: int64(n/4 + rng.IntN(n/4+1)), TargetShare: 0.5},
			layout.Bin{ID: "socket0", Kind: tier.HostMem, Socket: 0, CapacityRows: int64(n), TargetShare: 0.2},
			layout.Bin{ID: "socket1", Kind: tier.HostMem, Socket: 1, CapacityRows: int64(n), TargetShare: 0.2})
		ssd(int64(n)) // present, but the caches leave them empty
	case mixAllSSD:
		ssd(int64(n))
	case mixMixed:
		bins = append(bins,
			layout.Bin{ID: "gpu0", Kind: tier.GPUMem, Socket: 0, CapacityRows: int64(rng.IntN(n/5 + 1)), TargetShare: 0.3},
			layout.Bin{ID: "socket0", Kind: tier.HostMem, Socket: 0, CapacityRows: int64(rng.IntN(n/5 + 1)), TargetShare: 0.1},
			layout.Bin{ID: "socket1", Kind: tier.HostMem, Socket: 1, CapacityRows: int64(rng.IntN(n/5 + 1)), TargetShare: 0.1})
		ssd(int64(n))
	}
	return bins
}

// place lays the fixture out over bins (DDAK on Zipf hotness) and writes
// the layout into the dataset directory.
func (fx *fixture) place(t testing.TB, bins []layout.Bin, rng *rand.Rand) *layout.Layout {
	t.Helper()
	l, err := ddak.Place(zipfHotness(int(fx.meta.NumNodes), 1.1, rng), bins, ddak.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := layout.Write(fx.dir, l, bins); err != nil {
		t.Fatal(err)
	}
	return l
}

// ssdDirs makes k directories for SSD bin files.
func ssdDirs(t testing.TB, k int) []string {
	t.Helper()
	base := t.TempDir()
	dirs := make([]string, k)
	for i := range dirs {
		dirs[i] = filepath.Join(base, fmt.Sprintf("ssd%d", i))
		if err := os.Mkdir(dirs[i], 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dirs
}

// rowBytes is vertex v's features as stored (little-endian float32).
func (fx *fixture) rowBytes(v int) []byte {
	dim := fx.meta.FeatureDim
	b := make([]byte, 4*dim)
	for j, x := range fx.feats[v*dim : (v+1)*dim] {
		binary.LittleEndian.PutUint32(b[4*j:], math.Float32bits(x))
	}
	return b
}

// checkBinFiles checks every SSD bin file of m byte for byte: the header
// naming the store and the bin, each vertex's row at its offset, the
// CRC-32C of each row in the table after the rows, zeros elsewhere.
func (fx *fixture) checkBinFiles(t testing.TB, m *Manifest, l *layout.Layout) {
	t.Helper()
	want := map[int][]byte{}
	for i, b := range m.Bins {
		if b.Kind != tier.SSD {
			continue
		}
		want[i] = make([]byte, b.FileBytes)
		h, err := expectedHeader(m, i)
		if err != nil {
			t.Fatal(err)
		}
		copy(want[i], h.marshal())
	}
	for v, b := range l.Bin {
		if w, ok := want[int(b)]; ok {
			bf := m.Bins[b]
			copy(w[HeaderBytes+int64(l.Row[v])*bf.StrideBytes:], fx.rowBytes(v))
			table := HeaderBytes + (bf.Rows*bf.StrideBytes+4095)/4096*4096
			binary.LittleEndian.PutUint32(w[table+4*int64(l.Row[v]):], crc32.Checksum(fx.rowBytes(v), crc32.MakeTable(crc32.Castagnoli)))
		}
	}
	for i, w := range want {
		got, err := os.ReadFile(m.Bins[i].Path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, w) {
			t.Errorf("bin %s: %s differs from the features (%d bytes, want %d)", m.Bins[i].ID, m.Bins[i].Path, len(got), len(w))
		}
	}
}

// checkGather opens the store of fx and gathers every vertex, checking
// each row against the features: what training would read.
func (fx *fixture) checkGather(t testing.TB, l *layout.Layout) {
	t.Helper()
	s, err := Open(fx.dir, Options{Engine: "pread", QueueDepth: 8})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer s.Close()
	all := make([]int32, len(l.Bin))
	for v := range all {
		all[v] = int32(v)
	}
	dst := make([]float32, len(all)*fx.meta.FeatureDim)
	if _, err := s.Gather(context.Background(), all, dst); err != nil {
		t.Fatalf("gather: %v", err)
	}
	for i, x := range dst {
		if math.Float32bits(x) != math.Float32bits(fx.feats[i]) {
			t.Fatalf("vertex %d: feature %d is %v, want %v", i/fx.meta.FeatureDim, i%fx.meta.FeatureDim, x, fx.feats[i])
		}
	}
}
