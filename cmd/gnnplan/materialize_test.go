package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gnnplan/gnnplan/ddak"
	"github.com/gnnplan/gnnplan/maxflow"
	"github.com/gnnplan/gnnplan/topology"
	"github.com/gnnplan/gnnplan/trainer/store"
)

// execMaterialize runs the materialize command in-process (it is built
// directly: root.go decides whether it is registered).
func execMaterialize(t *testing.T, runF func(context.Context, *materializeOptions) error, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := newMaterializeCmd(&deps{In: strings.NewReader(""), Out: &out, Err: &errOut}, runF)
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

func TestMaterializeFlags(t *testing.T) {
	cases := []struct {
		name    string
		args    []string
		want    materializeOptions
		wantErr string
	}{
		{"one directory per SSD, in order", []string{"--dataset", "d", "--ssd-dir", "/a", "--ssd-dir", "/b"},
			materializeOptions{Dataset: "d", SSDDirs: []string{"/a", "/b"}, Output: "table"}, ""},
		{"a layout elsewhere, as JSON", []string{"--dataset", "d", "--layout", "l", "--ssd-dir", "/a,b", "-o", "json"},
			materializeOptions{Dataset: "d", Layout: "l", SSDDirs: []string{"/a,b"}, Output: "json"}, ""},
		{"dataset missing", []string{"--ssd-dir", "/a"}, materializeOptions{}, "--dataset"},
		{"unknown output", []string{"--dataset", "d", "-o", "yaml"}, materializeOptions{}, "--output"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got *materializeOptions
			_, _, err := execMaterialize(t, func(_ context.Context, o *materializeOptions) error { got = o; return nil }, tc.args...)
			if tc.wantErr != "" {
				if err == nil || !isUsageError(err) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want a usage error mentioning %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got.IO = nil
			if !reflect.DeepEqual(*got, tc.want) {
				t.Errorf("options %+v, want %+v", *got, tc.want)
			}
		})
	}
}

func TestMaterializeAfterPlace(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	os.Mkdir(data, 0o755)
	writeDataset(t, data, 3000, 8, 16)
	plan := filepath.Join(dir, "plan.json")
	if code, _, errOut := runCLI(t, "recommend", "--dataset", data, "--ssds", "2-4", "--gpus", "2", "-o", plan); code != 0 {
		t.Fatalf("recommend: %s", errOut)
	}
	ssd := filepath.Join(dir, "ssd0")
	os.Mkdir(ssd, 0o755)
	code, out, errOut := runCLI(t, "place", "--plan", plan, "--dataset", data, "--materialize", "--ssd-dir", ssd, "-o", "json")
	if code != 0 {
		t.Fatalf("place --materialize: exit %d: %s", code, errOut)
	}
	var rep placeReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("place's JSON broken by materialize: %v\n%s", err, out)
	}
	if !strings.Contains(errOut, store.ManifestFile) {
		t.Errorf("stderr does not say where the manifest went:\n%s", errOut)
	}
	m, err := store.ReadManifest(data)
	if err != nil {
		t.Fatal(err)
	}
	// A plan's GPUs take a test dataset whole, so the SSD bins may be
	// empty or absent; TestMaterializeCommandWritesBinFiles fills them.
	if len(m.Bins) == 0 {
		t.Fatalf("manifest without bins")
	}
	for _, b := range m.Bins {
		if b.Kind != maxflow.StorageSSD {
			continue
		}
		if st, err := os.Stat(b.Path); err != nil || filepath.Dir(b.Path) != ssd || st.Size() != b.FileBytes {
			t.Errorf("bin %s: file %s (%v), want %d bytes in %s", b.ID, b.Path, err, b.FileBytes, ssd)
		}
	}
}

func TestMaterializeCommandWritesBinFiles(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	os.Mkdir(data, 0o755)
	writeDataset(t, data, 2000, 4, 32)
	bins := handLayout(t, data)
	ssd := []string{filepath.Join(dir, "a"), filepath.Join(dir, "b")}
	for _, d := range ssd {
		os.Mkdir(d, 0o755)
	}
	out, _, err := execMaterialize(t, nil, "--dataset", data, "--ssd-dir", ssd[0], "--ssd-dir", ssd[1])
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"nvme0", ssd[0] + "/skewed-nvme0.rows", ssd[1] + "/skewed-nvme1.rows", ssd[0] + "/skewed-nvme2.rows", "from features.npy", "wrote "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// Again as JSON: the manifest, the files kept.
	out, errOut, err := execMaterialize(t, nil, "--dataset", data, "--ssd-dir", ssd[0], "--ssd-dir", ssd[1], "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var m store.Manifest
	if err := json.Unmarshal([]byte(out), &m); err != nil || len(m.Bins) != len(bins) {
		t.Fatalf("manifest %+v (%v)", m, err)
	}
	if got := strings.Count(errOut, "up to date"); got != 3 {
		t.Errorf("rerun kept %d of 3 files:\n%s", got, errOut)
	}
}

// handLayout places the dataset in data (2000 vertices) over hand-made
// bins, so that the SSDs hold rows (a plan's GPUs would take a test
// dataset whole), and returns the bins.
func handLayout(t *testing.T, data string) []ddak.Bin {
	t.Helper()
	bins := []ddak.Bin{{ID: "gpu0", Kind: maxflow.StorageGPUMem, CapacityRows: 100, TargetShare: 0.4},
		{ID: "socket0", Kind: maxflow.StorageHostMem, CapacityRows: 200, TargetShare: 0.2}}
	for i := range 3 {
		bins = append(bins, ddak.Bin{ID: fmt.Sprintf("nvme%d", i), Kind: maxflow.StorageSSD, Socket: i % 2, CapacityRows: 2000, TargetShare: 0.1})
	}
	rng := rand.New(rand.NewPCG(1, 2))
	hot := make([]uint32, 2000)
	for v := range hot {
		hot[v] = uint32(rng.IntN(1000))
	}
	l, err := ddak.Place(hot, bins, ddak.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := ddak.WriteLayout(data, l, bins); err != nil {
		t.Fatal(err)
	}
	return bins
}

func TestMaterializeBadInputExitsTwo(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	os.Mkdir(data, 0o755)
	writeDataset(t, data, 500, 4, 8)
	plan := filepath.Join(dir, "plan.json")
	if code, _, errOut := runCLI(t, "recommend", "--dataset", data, "--ssds", "2", "--gpus", "1", "-o", plan); code != 0 {
		t.Fatalf("recommend: %s", errOut)
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"an SSD directory without --materialize", []string{"place", "--plan", plan, "--dataset", data, "--ssd-dir", dir}, "--ssd-dir"},
		{"an SSD directory that does not exist", []string{"place", "--plan", plan, "--dataset", data, "--materialize", "--ssd-dir", filepath.Join(dir, "none")}, "none: --ssd-dir: not a directory"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := runCLI(t, tc.args...)
			if code != 2 || strings.Count(errOut, "gnnplan: ") != 1 || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr %q: want exit 2 and one error line mentioning %q", code, errOut, tc.want)
			}
		})
	}
	// A layout with SSD bins, and no directory for their files.
	other := filepath.Join(dir, "other")
	os.Mkdir(other, 0o755)
	writeDataset(t, other, 2000, 4, 8)
	handLayout(t, other)
	_, _, err := execMaterialize(t, nil, "--dataset", other)
	if !topology.IsBadInput(err) || !strings.Contains(err.Error(), "--ssd-dir") {
		t.Errorf("no --ssd-dir: error %v, want bad input naming --ssd-dir", err)
	}
}
