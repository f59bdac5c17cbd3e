package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/gnnplan/gnnplan/ddak/layout"

	"github.com/gnnplan/gnnplan/ddak"
	"github.com/gnnplan/gnnplan/internal/inputerr"
	"github.com/gnnplan/gnnplan/internal/tier"
)

// equalBins places the fixture over a GPU bin and three SSD bins whose
// capacities add up to the vertices, so every bin is full and the SSD bin
// files are of one size (two can be swapped without changing a size).
func equalBins(t testing.TB, fx *fixture, seed uint64) *layout.Layout {
	t.Helper()
	n := int(fx.meta.NumNodes)
	bins := []layout.Bin{{ID: "gpu0", Kind: tier.GPUMem, CapacityRows: int64(n / 4), TargetShare: 0.4}}
	for i := range 3 {
		bins = append(bins, layout.Bin{ID: fmt.Sprintf("nvme%d", i), Kind: tier.SSD, Socket: i % 2, CapacityRows: int64(n / 4), TargetShare: 0.2})
	}
	return fx.place(t, bins, rand.New(rand.NewPCG(seed, 5)))
}

func TestDamagedBinIsRefusedNamingIt(t *testing.T) {
	const n, dim = 1200, 100 // 400-byte rows: 512-byte stride, 300 rows a bin
	// other is a second store of the same shape, from another layout.
	other := newFixture(t, n, dim, 77)
	equalBins(t, other, 78)
	otherM, err := Materialize(context.Background(), other.dir, other.dir, ssdDirs(t, 1), MaterializeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	flip := func(path string, off int64) {
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		b := make([]byte, 1)
		f.ReadAt(b, off)
		b[0] ^= 0x10
		if _, err := f.WriteAt(b, off); err != nil {
			t.Fatal(err)
		}
	}
	editManifest := func(dir string, edit func(m *Manifest)) {
		m, err := ReadManifest(dir)
		if err != nil {
			t.Fatal(err)
		}
		edit(m)
		if err := writeManifestFile(filepath.Join(dir, ManifestFile), m); err != nil {
			t.Fatal(err)
		}
	}
	// Each case damages bin 2 (nvme1) and says whether Open must catch it
	// (else only Verify, which reads the rows, can), which bin the error
	// names first and what it says.
	cases := []struct {
		name   string
		damage func(m *Manifest, dir string)
		atOpen bool
		want   string
		bin    int
	}{
		{"a row's byte flipped", func(m *Manifest, _ string) {
			flip(m.Bins[2].Path, HeaderBytes+5*m.Bins[2].StrideBytes+7)
		}, false, "row 5 damaged", 2},
		{"a padding byte flipped", func(m *Manifest, _ string) {
			flip(m.Bins[2].Path, m.Bins[2].FileBytes-1)
		}, false, "the padding is damaged", 2},
		{"a header byte flipped", func(m *Manifest, _ string) {
			flip(m.Bins[2].Path, hdrRows+1)
		}, true, "header damaged", 2},
		{"two bins' files swapped", func(m *Manifest, _ string) {
			a, b := m.Bins[2].Path, m.Bins[1].Path
			os.Rename(a, a+".x")
			os.Rename(b, a)
			os.Rename(a+".x", b)
		}, true, "holds bin nvme1 (bins[2])", 1},
		{"a file cut short", func(m *Manifest, _ string) {
			os.Truncate(m.Bins[2].Path, m.Bins[2].FileBytes-FileAlignBytes)
		}, true, "truncated", 2},
		{"a file replaced by zeros of its size", func(m *Manifest, _ string) {
			os.WriteFile(m.Bins[2].Path, make([]byte, m.Bins[2].FileBytes), 0o644)
		}, true, "no bin header", 2},
		{"the manifest's path edited to another bin", func(m *Manifest, dir string) {
			editManifest(dir, func(m *Manifest) { m.Bins[2].Path = m.Bins[3].Path })
		}, true, "holds bin nvme2 (bins[3])", 2},
		{"the manifest's path edited to the bin of another store", func(m *Manifest, dir string) {
			editManifest(dir, func(m *Manifest) { m.Bins[2].Path = otherM.Bins[2].Path })
		}, true, "another store", 2},
		{"the manifest's checksum edited", func(m *Manifest, dir string) {
			editManifest(dir, func(m *Manifest) { m.Bins[2].CRC32C++ })
		}, true, "disagrees with the manifest", 2},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t, n, dim, uint64(i))
			l := equalBins(t, fx, 1)
			m, err := Materialize(context.Background(), fx.dir, fx.dir, ssdDirs(t, 2), MaterializeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if m.Bins[1].FileBytes != m.Bins[2].FileBytes || m.Bins[2].FileBytes != otherM.Bins[2].FileBytes || m.StoreID == otherM.StoreID {
				t.Fatalf("fixture: bins of %d, %d and %d bytes, store ids %s and %s: want equal sizes and different ids",
					m.Bins[1].FileBytes, m.Bins[2].FileBytes, otherM.Bins[2].FileBytes, m.StoreID, otherM.StoreID)
			}
			if rep, err := Verify(context.Background(), fx.dir, VerifyOptions{}); err != nil || rep.Damaged != 0 {
				t.Fatalf("an intact store: verify %+v, %v", rep, err)
			}
			tc.damage(m, fx.dir)
			// The bin as the (maybe edited) manifest names it.
			edited, err := ReadManifest(fx.dir)
			if err != nil {
				t.Fatal(err)
			}
			path, name := edited.Bins[tc.bin].Path, "SSD bin "+edited.Bins[tc.bin].ID
			var in *inputerr.Error

			s, err := Open(fx.dir, Options{Engine: "pread"})
			if tc.atOpen {
				if err == nil {
					s.Close()
					t.Fatal("Open accepted the damaged store")
				}
				if !errors.As(err, &in) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("Open: %v; want an InputError naming %s, %s and %q", err, path, name, tc.want)
				}
			} else if err != nil {
				t.Fatalf("Open: %v (a damaged row is Verify's to find)", err)
			} else {
				s.Close()
			}

			var log bytes.Buffer
			rep, err := Verify(context.Background(), fx.dir, VerifyOptions{Log: &log})
			if !errors.As(err, &in) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Verify: %v; want an InputError naming %s, %s and %q", err, path, name, tc.want)
			}
			if rep == nil || rep.Damaged < 1 {
				t.Fatalf("Verify report %+v: want a damaged bin", rep)
			}
			for _, c := range rep.Bins {
				if c.ID == edited.Bins[tc.bin].ID && (c.OK || !strings.Contains(c.Problem, tc.want)) {
					t.Errorf("report for %s: %+v, want a problem mentioning %q", c.ID, c, tc.want)
				}
			}
			if !strings.Contains(log.String(), name) {
				t.Errorf("verify's log does not name the bin:\n%s", log.String())
			}

			// A rerun repairs the store.
			if _, err := Materialize(context.Background(), fx.dir, fx.dir, []string{filepath.Dir(m.Bins[1].Path), filepath.Dir(m.Bins[2].Path)}, MaterializeOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := Verify(context.Background(), fx.dir, VerifyOptions{}); err != nil {
				t.Fatalf("after a rerun: %v", err)
			}
			fx.checkGather(t, l)
		})
	}
}

// writeCall is one WriteAt a bin file got.
type writeCall struct {
	path   string
	off, n int64
}

// fileRecorder hands Materialize bin files that record their writes and
// fail as told.
type fileRecorder struct {
	mu     sync.Mutex
	writes []writeCall
	// failWrite fails the failWrite-th WriteAt (1-based; 0: none) with
	// ENOSPC, as a full disk would.
	failWrite int
	// failReadBack fails the first WriteAt after a ReadAt: the second
	// pass, which reads buckets back to order their rows.
	failReadBack bool
	read         bool
	failSync     bool
	failOpen     bool
}

func (r *fileRecorder) create(path string) (binWriterFile, error) {
	if r.failOpen {
		return nil, &os.PathError{Op: "open", Path: path, Err: syscall.EACCES}
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	return &recordedFile{File: f, r: r}, nil
}

type recordedFile struct {
	*os.File
	r *fileRecorder
}

func (f *recordedFile) WriteAt(p []byte, off int64) (int, error) {
	f.r.mu.Lock()
	f.r.writes = append(f.r.writes, writeCall{f.Name(), off, int64(len(p))})
	fail := len(f.r.writes) == f.r.failWrite || f.r.failReadBack && f.r.read
	f.r.mu.Unlock()
	if fail {
		// Half the buffer reaches the file, as when a disk fills up.
		f.File.WriteAt(p[:len(p)/2], off)
		return len(p) / 2, &os.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
	}
	return f.File.WriteAt(p, off)
}

func (f *recordedFile) ReadAt(p []byte, off int64) (int, error) {
	f.r.mu.Lock()
	f.r.read = true
	f.r.mu.Unlock()
	return f.File.ReadAt(p, off)
}

func (f *recordedFile) Sync() error {
	if f.r.failSync {
		return &os.PathError{Op: "sync", Path: f.Name(), Err: syscall.EIO}
	}
	return f.File.Sync()
}

func TestFailedMaterializeKeepsThePreviousStore(t *testing.T) {
	const n, dim = 4000, 128
	fx := newFixture(t, n, dim, 21)
	rng := rand.New(rand.NewPCG(21, 21))
	l := fx.place(t, randomBins(n, mixMixed, rng), rng)
	oldDirs := ssdDirs(t, 2)
	prev, err := Materialize(context.Background(), fx.dir, fx.dir, oldDirs, MaterializeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		rec  *fileRecorder
		// small buckets, so that the second pass has work
		small bool
		want  error
	}{
		{"the new directory cannot be written", &fileRecorder{failOpen: true}, false, syscall.EACCES},
		{"the disk fills up in the first write", &fileRecorder{failWrite: 1}, false, syscall.ENOSPC},
		{"the disk fills up while rows are put in order", &fileRecorder{failReadBack: true}, true, syscall.ENOSPC},
		{"the disk fails to sync", &fileRecorder{failSync: true}, false, syscall.EIO},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dirs := ssdDirs(t, 2)
			opt := MaterializeOptions{create: tc.rec.create}
			if tc.small {
				opt.stageBytes, opt.minBucketBytes = 4096, 16384
			}
			_, err := Materialize(context.Background(), fx.dir, fx.dir, dirs, opt)
			if !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
			got, err := ReadManifest(fx.dir)
			if err != nil || !reflect.DeepEqual(got, prev) {
				t.Fatalf("the failed run changed the manifest (%v)", err)
			}
			fx.checkBinFiles(t, prev, l)
			fx.checkGather(t, l)
			for _, d := range dirs {
				if left, _ := os.ReadDir(d); len(left) > 0 {
					t.Errorf("the failed run left files in %s: %v", d, left)
				}
			}
		})
	}
}

func TestMaterializeRemovesWhatAKilledRunLeft(t *testing.T) {
	fx := newFixture(t, 1000, 16, 31)
	rng := rand.New(rand.NewPCG(31, 31))
	l := fx.place(t, randomBins(1000, mixMixed, rng), rng)
	dirs := ssdDirs(t, 2)
	stale := []string{
		filepath.Join(dirs[0], "fx-nvme0.rows.tmp"),
		filepath.Join(dirs[1], "fx-nvme1.rows.tmp"),
		filepath.Join(dirs[1], "fx-gone.rows.tmp"), // a bin of an earlier layout
		filepath.Join(fx.dir, ManifestFile+".123456.tmp"),
		filepath.Join(fx.dir, legacyJournalFile),
	}
	kept := []string{
		filepath.Join(dirs[0], "other-nvme0.rows.tmp"), // another dataset's
		filepath.Join(dirs[0], "notes.tmp"),
	}
	for _, p := range append(stale, kept...) {
		if err := os.WriteFile(p, []byte("left by a killed run"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var log bytes.Buffer
	m, err := Materialize(context.Background(), fx.dir, fx.dir, dirs, MaterializeOptions{Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range stale {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s not removed (%v)", p, err)
		}
		if !strings.Contains(log.String(), "removed "+p) {
			t.Errorf("log does not say %s was removed:\n%s", p, log.String())
		}
	}
	for _, p := range kept {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s, not this dataset's, removed (%v)", p, err)
		}
	}
	fx.checkBinFiles(t, m, l)
}

func TestMaterializeWritesInLargeAlignedChunks(t *testing.T) {
	cases := []struct {
		name      string
		n, dim    int
		mix       tierMix
		small     bool
		hashOrder bool
	}{
		{"DDAK rows, one bucket a bin", 6000, 128, mixAllSSD, false, false},
		{"DDAK rows, many small buckets", 3000, 300, mixMixed, true, false},
		{"hash rows arrive in row order: no second pass", 6000, 128, mixAllSSD, false, true},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t, tc.n, tc.dim, uint64(40+i))
			rng := rand.New(rand.NewPCG(uint64(40+i), 1))
			bins := randomBins(tc.n, tc.mix, rng)
			var l *layout.Layout
			if tc.hashOrder {
				var err error
				if l, err = ddak.PlaceHash(zipfHotness(tc.n, 1.1, rng), bins, 7); err != nil {
					t.Fatal(err)
				}
				if err := layout.Write(fx.dir, l, bins); err != nil {
					t.Fatal(err)
				}
			} else {
				l = fx.place(t, bins, rng)
			}
			rec := &fileRecorder{}
			opt := MaterializeOptions{create: rec.create}
			stage, chunk := int64(stageBytes), int64(chunkBytes)
			if tc.small {
				opt.stageBytes, opt.minBucketBytes = 8192, 32768
				stage = 8192
			}
			m, err := Materialize(context.Background(), fx.dir, fx.dir, ssdDirs(t, 2), opt)
			if err != nil {
				t.Fatal(err)
			}
			fx.checkBinFiles(t, m, l)
			fx.checkGather(t, l)
			// Per bin: one write per stage in the first pass, one per chunk
			// in the second (none for rows already in order), one per chunk
			// of row checksums, the header; plus one per bucket for the
			// buckets' ends.
			var rows, limit int64
			perPass := map[string]int64{}
			for _, b := range m.Bins {
				if b.Kind != tier.SSD {
					continue
				}
				data := b.Rows * b.StrideBytes
				rows += b.Rows
				limit += 1 + (data+stage-1)/stage + (4*b.Rows+chunk-1)/chunk
				if !tc.hashOrder {
					limit += (data + chunk - 1) / chunk
				}
				perPass[b.Path+".tmp"] = data + 4*b.Rows // rows, checksums
			}
			buckets := int64(0)
			if tc.small {
				// bucketRows is at least 32768/stride rows, rounded up to 8.
				for _, b := range m.Bins {
					if b.Kind == tier.SSD {
						br := roundUp(32768/b.StrideBytes, 8)
						buckets += 2 * ((b.Rows + br - 1) / br)
					}
				}
			}
			limit += buckets
			if int64(len(rec.writes)) > limit {
				t.Errorf("%d writes for %d rows, want at most %d", len(rec.writes), rows, limit)
			}
			if !tc.small && int64(len(rec.writes))*20 > rows {
				t.Errorf("%d writes for %d rows: want large writes, not one a row", len(rec.writes), rows)
			}
			var written int64
			for _, w := range rec.writes {
				if w.off%FileAlignBytes != 0 {
					t.Errorf("%s: a write at %d, not on a 4 KiB boundary", w.path, w.off)
				}
				if w.n > max(stage, chunk, HeaderBytes) {
					t.Errorf("%s: a write of %d bytes, more than the buffers", w.path, w.n)
				}
				if w.off >= HeaderBytes {
					written += w.n
				}
			}
			var data int64
			for _, d := range perPass {
				data += d
			}
			if tc.hashOrder && written != data {
				t.Errorf("%d bytes of rows and checksums written for %d: rows in order should be written once", written, data)
			}
		})
	}
}

func TestMaterializedFilesHaveTheUsualModes(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	fx := newFixture(t, 500, 8, 51)
	rng := rand.New(rand.NewPCG(51, 51))
	fx.place(t, randomBins(500, mixAllSSD, rng), rng)
	m, err := Materialize(context.Background(), fx.dir, fx.dir, ssdDirs(t, 2), MaterializeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	paths := []string{filepath.Join(fx.dir, ManifestFile)}
	for _, b := range m.Bins {
		if b.Kind == tier.SSD {
			paths = append(paths, b.Path)
		}
	}
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o644 {
			t.Errorf("%s: mode %v, want -rw-r--r--", p, st.Mode().Perm())
		}
	}
}

func TestVerifyReportsEveryDamagedBin(t *testing.T) {
	fx := newFixture(t, 1200, 100, 61)
	equalBins(t, fx, 61)
	m, err := Materialize(context.Background(), fx.dir, fx.dir, ssdDirs(t, 3), MaterializeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	os.Truncate(m.Bins[1].Path, HeaderBytes)
	os.Remove(m.Bins[3].Path)
	var phases []Progress
	rep, err := Verify(context.Background(), fx.dir, VerifyOptions{Progress: func(p Progress) { phases = append(phases, p) }})
	if !inputerr.Is(err) || !strings.Contains(err.Error(), "2 of 3 SSD bin files damaged") {
		t.Fatalf("error %v, want bad input saying 2 of 3 bins are damaged", err)
	}
	js, _ := json.Marshal(rep)
	if rep.Damaged != 2 || len(rep.Bins) != 3 || rep.Bins[0].OK || !rep.Bins[1].OK || rep.Bins[2].OK {
		t.Errorf("report %s: want nvme0 and nvme2 damaged, nvme1 intact", js)
	}
	if len(phases) == 0 || phases[0].Phase != "verify features" || phases[len(phases)-1].Phase != "verify" || phases[len(phases)-1].DoneBytes > phases[len(phases)-1].TotalBytes {
		t.Errorf("progress %+v: want the features, then the bin files", phases)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Verify(ctx, fx.dir, VerifyOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled verify: %v", err)
	}
}
