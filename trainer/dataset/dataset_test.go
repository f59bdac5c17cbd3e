package dataset

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gnnplan/gnnplan/topology"
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
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTiny(t, dir)
			tc.break_(dir)
			_, err := LoadGraph(dir)
			if err == nil || !topology.IsBadInput(err) || !strings.Contains(err.Error(), tc.want) {
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
		if err == nil || !topology.IsBadInput(err) {
			t.Errorf("indptr cut to %d bytes: err = %v, want a bad-input error", size, err)
		}
	}
}
