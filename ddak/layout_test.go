package ddak

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gnnplan/gnnplan/ddak/layout"

	"github.com/gnnplan/gnnplan/topology"
)

func TestLayoutRoundTrip(t *testing.T) {
	hot := zipfHotness(50_000, 1, 5e4, 4)
	bins, _ := testBins(hot)
	d, err := Place(hot, bins, Options{})
	if err != nil {
		t.Fatal(err)
	}
	h, err := PlaceHash(hot, bins, 77)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []*Layout{d, h} {
		t.Run(string(l.Policy), func(t *testing.T) {
			dir := t.TempDir()
			if err := layout.Write(dir, l, bins); err != nil {
				t.Fatal(err)
			}
			back, bb, err := layout.Read(dir)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(back.Bin, l.Bin) || !slices.Equal(back.Row, l.Row) || !slices.Equal(back.Stats, l.Stats) ||
				!slices.Equal(bb, bins) || back.Policy != l.Policy || back.Priority != l.Priority || back.Pool != l.Pool ||
				back.Seed != l.Seed || back.TotalAccesses != l.TotalAccesses {
				t.Error("layout changed on the way through the files")
			}
			entries, _ := os.ReadDir(dir)
			if len(entries) != 3 {
				t.Errorf("%d files in the layout directory, want 3 (no temporaries left)", len(entries))
			}
		})
	}
}

func TestReadLayoutBadInput(t *testing.T) {
	hot := []uint32{5, 4, 3, 2, 1}
	bins := []Bin{{ID: "nvme0", Kind: "ssd", CapacityRows: 3, TargetShare: 0.5}, {ID: "nvme1", Kind: "ssd", CapacityRows: 3, TargetShare: 0.5}}
	l, err := Place(hot, bins, Options{})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		spoil func(dir string)
		want  string
	}{
		{"truncated row array", func(dir string) {
			p := filepath.Join(dir, layout.RowFile)
			b, _ := os.ReadFile(p)
			os.WriteFile(p, b[:len(b)-3], 0o644)
		}, "truncated"},
		{"bin index past the bins", func(dir string) {
			p := filepath.Join(dir, layout.BinFile)
			b, _ := os.ReadFile(p)
			b[len(b)-1] = 9
			os.WriteFile(p, b, 0o644)
		}, "bin 9"},
		{"row past its bin", func(dir string) {
			p := filepath.Join(dir, layout.RowFile)
			b, _ := os.ReadFile(p)
			b[len(b)-4] = 200
			os.WriteFile(p, b, 0o644)
		}, "row 200"},
		{"not a npy file", func(dir string) { os.WriteFile(filepath.Join(dir, layout.BinFile), []byte("hello"), 0o644) }, "not a .npy"},
		{"wrong schema version", func(dir string) {
			p := filepath.Join(dir, layout.MetaFile)
			b, _ := os.ReadFile(p)
			os.WriteFile(p, bytes.Replace(b, []byte(`"schema_version": 1`), []byte(`"schema_version": 7`), 1), 0o644)
		}, "schema_version"},
		{"more vertices than the arrays", func(dir string) {
			p := filepath.Join(dir, layout.MetaFile)
			b, _ := os.ReadFile(p)
			os.WriteFile(p, bytes.Replace(b, []byte(`"vertices": 5`), []byte(`"vertices": 5000000000000`), 1), 0o644)
		}, "5000000000000"},
		{"missing array", func(dir string) { os.Remove(filepath.Join(dir, layout.RowFile)) }, "cannot read"},
		// materialize sizes a bin's file by its rows: 1e15 would ask for
		// 125 TB before anything else was read.
		{"a bin of 1e15 rows", func(dir string) {
			p := filepath.Join(dir, layout.MetaFile)
			b, _ := os.ReadFile(p)
			os.WriteFile(p, regexp.MustCompile(`"rows": 3`).ReplaceAll(b, []byte(`"rows": 1000000000000000`)), 0o644)
		}, "bins[0].rows: 1000000000000000, but layout_bin.npy puts 3 vertices"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := layout.Write(dir, l, bins); err != nil {
				t.Fatal(err)
			}
			tc.spoil(dir)
			_, _, err := layout.Read(dir)
			if !topology.IsBadInput(err) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want a bad-input error saying %q", err, tc.want)
			}
		})
	}
}

func TestWriteLayoutLeavesNothingOnFailure(t *testing.T) {
	l := &Layout{Policy: PolicyDDAK, Bin: []uint8{0}, Row: []uint32{0}, Stats: []BinStats{{Rows: 1, Accesses: 1}}}
	bins := []Bin{{ID: "nvme0", Kind: "ssd", CapacityRows: 1}}
	dir := filepath.Join(t.TempDir(), "absent")
	if err := layout.Write(dir, l, bins); err == nil {
		t.Fatal("wrote into a directory that does not exist")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the directory appeared: %v", err)
	}
}

// FuzzReadLayout reads layouts whose layout.json is anything, beside a
// real layout's arrays: refused or read, never a panic, and what is read
// places every vertex in a bin it lists.
func FuzzReadLayout(f *testing.F) {
	hot := zipfHotness(500, 1, 500, 4)
	bins, _ := testBins(hot)
	l, err := Place(hot, bins, Options{})
	if err != nil {
		f.Fatal(err)
	}
	seedDir := f.TempDir()
	if err := layout.Write(seedDir, l, bins); err != nil {
		f.Fatal(err)
	}
	meta, err := os.ReadFile(filepath.Join(seedDir, layout.MetaFile))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(meta)
	f.Add([]byte(`{"schema_version": 1, "vertices": 1000000000000000, "bins": [{}]}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, meta []byte) {
		dir := t.TempDir()
		for _, name := range []string{layout.BinFile, layout.RowFile} {
			data, err := os.ReadFile(filepath.Join(seedDir, name))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, layout.MetaFile), meta, 0o644); err != nil {
			t.Fatal(err)
		}
		got, gotBins, err := layout.Read(dir)
		if err != nil {
			return
		}
		for v, b := range got.Bin {
			if int(b) >= len(gotBins) {
				t.Fatalf("vertex %d in bin %d of %d", v, b, len(gotBins))
			}
		}
	})
}
