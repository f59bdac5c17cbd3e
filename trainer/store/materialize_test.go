package store

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gnnplan/gnnplan/ddak/layout"

	"github.com/gnnplan/gnnplan/ddak"
	"github.com/gnnplan/gnnplan/internal/inputerr"
	"github.com/gnnplan/gnnplan/internal/tier"
	"github.com/gnnplan/gnnplan/trainer/internal/fslock"
)

func TestMaterializeWritesEachSSDBinInRowOrder(t *testing.T) {
	cases := []struct {
		name string
		n    int
		dim  int
		mix  tierMix
		dirs int
	}{
		{"tiny rows packed into sectors", 700, 3, mixMixed, 2},
		{"512-byte rows, eight to a block", 900, 128, mixAllSSD, 4},
		{"rows of 2800 bytes straddle blocks", 300, 700, mixMixed, 1},
		{"rows of 4000 bytes", 200, 1000, mixMixed, 3},
		{"rows of 6000 bytes straddle blocks", 150, 1500, mixAllSSD, 2},
		{"caches take everything, SSD files are empty", 400, 16, mixAllCache, 2},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(i), 11))
			fx := newFixture(t, tc.n, tc.dim, uint64(i))
			bins := randomBins(tc.n, tc.mix, rng)
			l := fx.place(t, bins, rng)
			dirs := ssdDirs(t, tc.dirs)
			var progress bytes.Buffer
			m, err := Materialize(context.Background(), fx.dir, fx.dir, dirs, MaterializeOptions{Log: &progress})
			if err != nil {
				t.Fatal(err)
			}
			fx.checkBinFiles(t, m, l)
			read, err := ReadManifest(fx.dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(read.Bins) != len(bins) || read.LayoutDir != "." {
				t.Fatalf("manifest has %d bins, layout dir %q: want %d bins, layout dir \".\"", len(read.Bins), read.LayoutDir, len(bins))
			}
			k := 0
			for j, b := range read.Bins {
				if b.ID != bins[j].ID || b.Kind != bins[j].Kind || b.Rows != l.Stats[j].Rows {
					t.Errorf("bin %d: %+v, want bin %s of %d rows", j, b, bins[j].ID, l.Stats[j].Rows)
				}
				if b.Kind != tier.SSD {
					if b.Path != "" {
						t.Errorf("cache bin %s has a file %s", b.ID, b.Path)
					}
					continue
				}
				// Round-robin over the directories, in bin order.
				if want := filepath.Join(dirs[k%len(dirs)], "fx-"+b.ID+".rows"); b.Path != want {
					t.Errorf("bin %s in %s, want %s", b.ID, b.Path, want)
				}
				k++
				// Rows never straddle a sector more than their size needs:
				// small rows pack a sector in powers of two, larger ones
				// start on sectors.
				if b.StrideBytes != StrideFor(b.RowBytes) || !validStride(b.StrideBytes, b.RowBytes) || b.FileBytes%FileAlignBytes != 0 ||
					(b.RowBytes <= RowAlignBytes && RowAlignBytes%b.StrideBytes != 0) || (b.RowBytes > RowAlignBytes && b.StrideBytes%RowAlignBytes != 0) {
					t.Errorf("bin %s: stride %d for %d-byte rows, file %d bytes: want the packing stride and a 4096-aligned size", b.ID, b.StrideBytes, b.RowBytes, b.FileBytes)
				}
			}
			noTemps(t, dirs)
		})
	}
}

// noTemps fails when a temporary file is left in dirs.
func noTemps(t *testing.T, dirs []string) {
	t.Helper()
	for _, d := range dirs {
		tmps, _ := filepath.Glob(filepath.Join(d, "*.tmp"))
		if len(tmps) > 0 {
			t.Errorf("temporary files left: %v", tmps)
		}
	}
}

// cancelAfter is a context whose Err turns to Canceled after n calls: a
// deterministic way to stop Materialize in the middle of a pass.
type cancelAfter struct {
	context.Context
	n atomic.Int64
}

func (c *cancelAfter) Err() error {
	if c.n.Add(-1) < 0 {
		return context.Canceled
	}
	return nil
}

// cancelOn is a progress writer that cancels when a line contains word.
type cancelOn struct {
	word   string
	cancel context.CancelFunc
}

func (c *cancelOn) Write(p []byte) (int, error) {
	if strings.Contains(string(p), c.word) {
		c.cancel()
	}
	return len(p), nil
}

func TestMaterializeCancelledKeepsThePreviousStore(t *testing.T) {
	const n, dim = 3000, 1000 // 4000-byte rows: two chunks in the pass
	fx := newFixture(t, n, dim, 3)
	rng := rand.New(rand.NewPCG(3, 3))
	bins := randomBins(n, mixMixed, rng)
	l := fx.place(t, bins, rng)
	cases := []struct {
		name string
		stop func() (context.Context, io.Writer)
	}{
		{"cancelled before the pass", func() (context.Context, io.Writer) {
			return &cancelAfter{Context: context.Background()}, nil
		}},
		{"cancelled in the middle of the pass", func() (context.Context, io.Writer) {
			c := &cancelAfter{Context: context.Background()}
			c.n.Store(2)
			return c, nil
		}},
		{"cancelled while ordering rows", func() (context.Context, io.Writer) {
			ctx, cancel := context.WithCancel(context.Background())
			return ctx, &cancelOn{word: "in row order", cancel: cancel}
		}},
		{"cancelled after the first file is complete", func() (context.Context, io.Writer) {
			ctx, cancel := context.WithCancel(context.Background())
			return ctx, &cancelOn{word: ".rows.tmp (", cancel: cancel}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// The previous store, on other directories.
			oldDirs := ssdDirs(t, 2)
			clean, err := Materialize(context.Background(), fx.dir, fx.dir, oldDirs, MaterializeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			dirs := ssdDirs(t, 2)
			// A killed earlier run left a temporary file of garbage.
			os.WriteFile(filepath.Join(dirs[0], "fx-nvme0.rows.tmp"), []byte("garbage"), 0o644)
			ctx, progress := tc.stop()
			_, err = Materialize(ctx, fx.dir, fx.dir, dirs, MaterializeOptions{Log: progress})
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("interrupted run: %v, want context.Canceled", err)
			}
			noTemps(t, dirs)
			got, err := ReadManifest(fx.dir)
			if err != nil || !reflect.DeepEqual(got, clean) {
				t.Fatalf("the interrupted run changed the manifest (%v)", err)
			}
			fx.checkBinFiles(t, clean, l)
			fx.checkGather(t, l)

			var out bytes.Buffer
			m, err := Materialize(context.Background(), fx.dir, fx.dir, dirs, MaterializeOptions{Log: &out})
			if err != nil {
				t.Fatal(err)
			}
			for i, b := range m.Bins {
				if b.CRC32C != clean.Bins[i].CRC32C || b.FileBytes != clean.Bins[i].FileBytes {
					t.Errorf("bin %s: crc %08x, %d bytes; an uninterrupted run gave %08x, %d bytes", b.ID, b.CRC32C, b.FileBytes, clean.Bins[i].CRC32C, clean.Bins[i].FileBytes)
				}
			}
			fx.checkBinFiles(t, m, l)
			noTemps(t, dirs)
			// The previous store's files went once the new one was in place.
			for _, b := range clean.Bins {
				if _, err := os.Stat(b.Path); b.Kind == tier.SSD && !errors.Is(err, os.ErrNotExist) {
					t.Errorf("file %s of the replaced store left (%v)", b.Path, err)
				}
			}
		})
	}
}

func TestMaterializeRerunRewritesOnlyDamagedFiles(t *testing.T) {
	fx := newFixture(t, 2000, 64, 4)
	rng := rand.New(rand.NewPCG(4, 4))
	l := fx.place(t, randomBins(2000, mixMixed, rng), rng)
	dirs := ssdDirs(t, 4)
	m, err := Materialize(context.Background(), fx.dir, fx.dir, dirs, MaterializeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var ssd []BinFile
	for _, b := range m.Bins {
		if b.Kind == tier.SSD && b.Rows > 0 {
			ssd = append(ssd, b)
		}
	}
	if len(ssd) < 3 {
		t.Fatalf("want at least 3 non-empty SSD bins, have %d", len(ssd))
	}
	// Flip one byte of the first file (same size), cut the second short,
	// delete the third.
	f, err := os.OpenFile(ssd[0].Path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte{0xff}, 3)
	f.Close()
	os.Truncate(ssd[1].Path, ssd[1].FileBytes-4096)
	os.Remove(ssd[2].Path)
	var out bytes.Buffer
	m2, err := Materialize(context.Background(), fx.dir, fx.dir, dirs, MaterializeOptions{Log: &out})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range ssd[:3] {
		if strings.Contains(out.String(), "bin "+b.ID+": "+b.Path+" is up to date") {
			t.Errorf("damaged bin %s kept:\n%s", b.ID, out.String())
		}
	}
	if got, want := strings.Count(out.String(), "up to date"), countSSD(m)-3; got != want {
		t.Errorf("kept %d files, want %d:\n%s", got, want, out.String())
	}
	fx.checkBinFiles(t, m2, l)
	for i := range m.Bins {
		if m.Bins[i] != m2.Bins[i] {
			t.Errorf("bin %d: %+v after the rerun, %+v before", i, m2.Bins[i], m.Bins[i])
		}
	}
}

func TestMaterializeRefusesBadInput(t *testing.T) {
	fx := newFixture(t, 500, 8, 5)
	rng := rand.New(rand.NewPCG(5, 5))
	fx.place(t, randomBins(500, mixMixed, rng), rng)
	other := newFixture(t, 400, 8, 6)
	other.place(t, randomBins(400, mixMixed, rng), rng)
	notDir := filepath.Join(t.TempDir(), "file")
	os.WriteFile(notDir, nil, 0o644)
	cases := []struct {
		name    string
		layout  string
		dirs    []string
		wantMsg string
	}{
		{"SSD bins without a directory", fx.dir, nil, "--ssd-dir"},
		{"an SSD directory that is a file", fx.dir, []string{notDir}, "not a directory"},
		{"a layout of another dataset", other.dir, ssdDirs(t, 1), "layout of 400 vertices"},
		{"no layout", t.TempDir(), ssdDirs(t, 1), "layout.json"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Materialize(context.Background(), fx.dir, tc.layout, tc.dirs, MaterializeOptions{})
			var in *inputerr.Error
			if !errors.As(err, &in) || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("error %v, want an InputError mentioning %q", err, tc.wantMsg)
			}
			if _, err := ReadManifest(fx.dir); err == nil {
				t.Errorf("a failed run wrote a manifest")
			}
		})
	}
}

func TestMaterializeLayoutOutsideTheDataset(t *testing.T) {
	fx := newFixture(t, 300, 8, 8)
	rng := rand.New(rand.NewPCG(8, 8))
	bins := randomBins(300, mixMixed, rng)
	l, err := ddak.Place(zipfHotness(300, 1.1, rng), bins, ddak.Options{})
	if err != nil {
		t.Fatal(err)
	}
	layoutDir := t.TempDir()
	if err := layout.Write(layoutDir, l, bins); err != nil {
		t.Fatal(err)
	}
	m, err := Materialize(context.Background(), fx.dir, layoutDir, ssdDirs(t, 1), MaterializeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if m.LayoutDir != layoutDir {
		t.Errorf("layout_dir %q, want %q (absolute: outside the dataset)", m.LayoutDir, layoutDir)
	}
	fx.checkBinFiles(t, m, l)
}

// TestMaterializeOneWriterAtATime: while another process writes a
// dataset's store, a second materialize refuses with a one-line bad-input
// error and leaves the store alone; once free, it goes ahead.
func TestMaterializeOneWriterAtATime(t *testing.T) {
	fx := newFixture(t, 300, 8, 9)
	rng := rand.New(rand.NewPCG(9, 9))
	fx.place(t, randomBins(300, mixMixed, rng), rng)
	other, err := fslock.TryLock(fx.dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Materialize(context.Background(), fx.dir, fx.dir, ssdDirs(t, 1), MaterializeOptions{})
	if !inputerr.Is(err) || !strings.Contains(err.Error(), "being written by another gnnplan") {
		t.Fatalf("Materialize beside another writer: %v, want a bad-input error saying so", err)
	}
	if _, err := os.Stat(filepath.Join(fx.dir, ManifestFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a store was written beside the other writer (%v)", err)
	}
	other.Unlock()
	if _, err := Materialize(context.Background(), fx.dir, fx.dir, ssdDirs(t, 1), MaterializeOptions{}); err != nil {
		t.Fatalf("once free: %v", err)
	}
}
