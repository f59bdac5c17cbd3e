package dataset

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/gnnplan/gnnplan/internal/inputerr"
)

// writeTiny writes a 4-vertex undirected path graph 0-1-2-3.
func writeTiny(t testing.TB, dir string) {
	t.Helper()
	m := Meta{Name: "tiny", NumNodes: 4, NumEdges: 6, Undirected: true, FeatureDim: 2, FeatureDType: "float32", IndexDType: "int32",
		NumClasses: 2, NumTrain: 2, NumVal: 1, NumTest: 1}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(WriteArray(filepath.Join(dir, IndptrFile), "<i8", []int64{0, 1, 3, 5, 6}, 5))
	must(WriteArray(filepath.Join(dir, IndicesFile), "<i4", []int32{1, 0, 2, 1, 3, 2}, 6))
	must(WriteArray(filepath.Join(dir, FeaturesFile), "<f4", []float32{0, 1, 2, 3, 4, 5, 6, 7}, 4, 2))
	must(WriteArray(filepath.Join(dir, LabelsFile), "<i8", []int64{0, 0, 1, 1}, 4))
	must(WriteArray(filepath.Join(dir, TrainFile), "<i8", []int64{0, 3}, 2))
	must(WriteArray(filepath.Join(dir, ValFile), "<i8", []int64{1}, 1))
	must(WriteArray(filepath.Join(dir, TestFile), "<i8", []int64{2}, 1))
	must(WriteMeta(dir, m))
}

func TestDatasetRoundTrip(t *testing.T) {
	dir := t.TempDir()
	writeTiny(t, dir)
	g, err := LoadGraph(dir)
	if err != nil {
		t.Fatal(err)
	}
	if g.Degree(1) != 2 || g.Neighbors(2)[1] != 3 || g.Labels[3] != 1 || len(g.Train) != 2 {
		t.Fatalf("loaded graph wrong: %+v", g)
	}
	fr, err := OpenFeatures(dir, g.Meta)
	if err != nil {
		t.Fatal(err)
	}
	defer fr.Close()
	row := make([]float32, 2)
	if err := fr.Row(2, row); err != nil || row[0] != 4 || row[1] != 5 {
		t.Fatalf("row 2 = %v (%v), want [4 5]", row, err)
	}
}

func TestDatasetBadInput(t *testing.T) {
	cases := []struct {
		name   string
		break_ func(dir string)
		want   string
	}{
		{"truncated npy", func(dir string) {
			p := filepath.Join(dir, IndicesFile)
			b, _ := os.ReadFile(p)
			os.WriteFile(p, b[:len(b)-6], 0o644)
		}, "indices.npy"},
		{"indices out of range", func(dir string) {
			WriteArray(filepath.Join(dir, IndicesFile), "<i4", []int32{1, 0, 2, 1, 9, 2}, 6)
		}, "out of range"},
		{"labels of the wrong length", func(dir string) {
			WriteArray(filepath.Join(dir, LabelsFile), "<i8", []int64{0, 0, 1}, 3)
		}, "labels.npy"},
		{"not a dataset", func(dir string) { os.Remove(filepath.Join(dir, MetaFile)) }, "meta.json"},
		{"padded npy", func(dir string) {
			p := filepath.Join(dir, LabelsFile)
			b, _ := os.ReadFile(p)
			os.WriteFile(p, append(b, 0, 0, 0, 0, 0, 0, 0, 0), 0o644)
		}, "labels.npy: 168 bytes, want 160 for 4 elements: truncated or padded"},
		{"header length 0xFFFF", func(dir string) {
			p := filepath.Join(dir, IndptrFile)
			b, _ := os.ReadFile(p)
			b[8], b[9] = 0xff, 0xff
			os.WriteFile(p, b, 0o644)
		}, "indptr.npy: not a .npy array: header of 65545 bytes"},
		{"asymmetric but marked undirected", func(dir string) {
			// 2 -> 3 kept, 3 -> 2 turned into 3 -> 1: the counts still add up.
			WriteArray(filepath.Join(dir, IndicesFile), "<i4", []int32{1, 0, 2, 1, 3, 1}, 6)
		}, "undirected: meta.json says every edge is stored both ways, but edge 2 -> 3 has no 3 -> 2"},
		{"duplicate edge one way only", func(dir string) {
			// 0-1 twice one way, 1-2 not at all: every pair has some reverse.
			WriteArray(filepath.Join(dir, IndicesFile), "<i4", []int32{1, 0, 0, 1, 3, 2}, 6)
		}, "undirected: "},
		{"vertex twice in a split", func(dir string) {
			WriteArray(filepath.Join(dir, TrainFile), "<i8", []int64{3, 3}, 2)
		}, "train_idx.npy: vertex 3 is listed twice (entry 1)"},
		{"split out of range", func(dir string) {
			WriteArray(filepath.Join(dir, TestFile), "<i8", []int64{4}, 1)
		}, "test_idx.npy: entry 0 is vertex 4, out of range [0, 4)"},
		{"index file of int64 out of range", func(dir string) {
			WriteArray(filepath.Join(dir, IndicesFile), "<i8", []int64{1, 0, 2, 1, 3, 1 << 33}, 6)
		}, "entry 5 is vertex 8589934592, out of range"},
		{"dataset is a file", func(dir string) {}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTiny(t, dir)
			tc.break_(dir)
			if tc.name == "dataset is a file" {
				dir = filepath.Join(dir, MetaFile)
				tc.want = "meta.json: --dataset: is a file (want a dataset directory"
			}
			_, err := LoadGraph(dir)
			if err == nil || !inputerr.Is(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want a bad-input error mentioning %q", err, tc.want)
			}
		})
	}
}

func TestArrayWriterLeavesNothingOnShortWrite(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.npy")
	a, err := CreateArray(p, "<i8", 3)
	if err != nil {
		t.Fatal(err)
	}
	a.Write([]int64{1, 2})
	if err := a.Close(); err == nil {
		t.Fatal("short array accepted")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("left %v behind", ents)
	}
}

func TestLoadGraphRefusesCutHeaders(t *testing.T) {
	for _, size := range []int{0, 5, 12, 20, 40} {
		dir := t.TempDir()
		writeTiny(t, dir)
		p := filepath.Join(dir, IndptrFile)
		b, _ := os.ReadFile(p)
		os.WriteFile(p, b[:size], 0o644)
		_, err := LoadGraph(dir)
		if err == nil || !inputerr.Is(err) {
			t.Errorf("indptr cut to %d bytes: err = %v, want a bad-input error", size, err)
		}
	}
}

// Arrays stored with other integer widths than gnnplan writes load to the
// same graph: int64 column ids are narrowed, int32 labels and splits
// widened.
func TestLoadGraphOtherIntegerWidths(t *testing.T) {
	dir := t.TempDir()
	writeTiny(t, dir)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(WriteArray(filepath.Join(dir, IndicesFile), "<i8", []int64{1, 0, 2, 1, 3, 2}, 6))
	must(WriteArray(filepath.Join(dir, LabelsFile), "<i4", []int32{0, 0, 1, 1}, 4))
	must(WriteArray(filepath.Join(dir, TrainFile), "<u4", []uint32{0, 3}, 2))
	g, err := LoadGraph(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if !slices.Equal(g.Indices, []int32{1, 0, 2, 1, 3, 2}) || !slices.Equal(g.Labels, []int64{0, 0, 1, 1}) || !slices.Equal(g.Train, []int64{0, 3}) {
		t.Fatalf("indices %v labels %v train %v", g.Indices, g.Labels, g.Train)
	}
}

// Features are read from the offset the header gives, and a features.npy
// with bytes missing or extra is refused rather than read shifted.
func TestOpenFeaturesChecksSize(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func([]byte) []byte
		want string
	}{
		{"truncated", func(b []byte) []byte { return b[:len(b)-4] }, "156 bytes, want 160 for 4 elements"},
		{"padded", func(b []byte) []byte { return append(b, make([]byte, 8)...) }, "truncated or padded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTiny(t, dir)
			p := filepath.Join(dir, FeaturesFile)
			b, _ := os.ReadFile(p)
			os.WriteFile(p, tc.edit(b), 0o644)
			m, err := ReadMeta(dir)
			if err != nil {
				t.Fatal(err)
			}
			fr, err := OpenFeatures(dir, m)
			if err == nil {
				fr.Close()
			}
			if err == nil || !inputerr.Is(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want a bad-input error mentioning %q", err, tc.want)
			}
		})
	}
}

// FuzzReadArrayHeader feeds arbitrary bytes to the header reader and the
// loader's array mapping: they must return an error or a header whose
// data offset lies inside the file, never panic.
func FuzzReadArrayHeader(f *testing.F) {
	dir := f.TempDir()
	good := filepath.Join(dir, "seed.npy")
	if err := WriteArray(good, "<i8", []int64{1, 2, 3}, 3); err != nil {
		f.Fatal(err)
	}
	b, _ := os.ReadFile(good)
	f.Add(b)
	f.Add(b[:12])
	cut := append([]byte(nil), b...)
	cut[8], cut[9] = 0xff, 0xff
	f.Add(cut)
	v2 := append([]byte(nil), b...)
	v2[6] = 2
	f.Add(v2)
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(t.TempDir(), "a.npy")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		fh, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		h, err := ReadArrayHeader(fh)
		if err == nil && (h.DataOffset < 10 || h.DataOffset > int64(len(data))) {
			t.Fatalf("data offset %d outside a %d-byte file", h.DataOffset, len(data))
		}
		if a, err := mapInts(p, 3); err == nil {
			xs, _ := a.int64s()
			if len(xs) != 3 {
				t.Fatalf("mapped %d elements, want 3", len(xs))
			}
			a.unmap()
		}
	})
}

// A dataset is readable by other accounts the way any file is: files are
// created 0644 and directories 0755, less the umask (the temporary-file
// helpers of the standard library would give 0600 and 0700).
func TestDatasetFileModes(t *testing.T) {
	umask := os.FileMode(syscall.Umask(0o022))
	defer syscall.Umask(int(umask))
	opt := DefaultSynthOptions()
	opt.Nodes, opt.Edges, opt.FeatureDim = 1000, 5000, 4
	out := filepath.Join(t.TempDir(), "ds")
	if _, err := Synth(context.Background(), opt, out, nil); err != nil {
		t.Fatal(err)
	}
	err := filepath.WalkDir(out, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		want := os.FileMode(0o644)
		if d.IsDir() {
			want = 0o755
		}
		if got := info.Mode().Perm(); got != want {
			t.Errorf("%s: mode %o, want %o (umask 022)", path, got, want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestStageDirRemovesWhatAKilledRunLeft: a staging directory no process
// holds (its run was killed) is removed by the next build of the same
// name; one a live build holds is left alone.
func TestStageDirRemovesWhatAKilledRunLeft(t *testing.T) {
	parent := t.TempDir()
	out := filepath.Join(parent, "ds")
	killed := filepath.Join(parent, "ds.partial-123")
	if err := os.MkdirAll(filepath.Join(killed, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(parent, "dsx.partial-1") // another dataset's
	os.Mkdir(other, 0o755)
	live, err := StageDir(out)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(killed); !os.IsNotExist(err) {
		t.Errorf("%s left by a killed run is still there (%v)", killed, err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("another dataset's staging directory was removed: %v", err)
	}
	second, err := StageDir(out)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(live.Dir); err != nil {
		t.Errorf("a live build's staging directory was removed: %v", err)
	}
	second.Abort()
	if err := live.Commit(); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(out); err != nil || !st.IsDir() {
		t.Errorf("commit: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(parent, "ds.partial-*")); len(left) != 0 {
		t.Errorf("staging directories left: %v", left)
	}
}
