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

	"github.com/gnnplan/gnnplan/ddak/layout"
	"github.com/gnnplan/gnnplan/internal/textout"

	"github.com/gnnplan/gnnplan/ddak"
	"github.com/gnnplan/gnnplan/maxflow/placement"
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
	cmd.SetFlagErrorFunc(flagUsageError)
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
		{"verify the store in place", []string{"--dataset", "d", "--verify", "-o", "json"},
			materializeOptions{Dataset: "d", Verify: true, Output: "json"}, ""},
		{"verify writes nothing, so takes no directories", []string{"--dataset", "d", "--verify", "--ssd-dir", "/a"}, materializeOptions{}, "--verify"},
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
	if code, _, errOut := runCLI(t, "recommend", "--dataset", data, "--ssds", "2-4", "--gpus", "2", "--save", plan); code != 0 {
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
		if b.Kind != placement.StorageSSD {
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
	for _, want := range []string{"nvme0", "a/skewed-nvme0.rows", "b/skewed-nvme1.rows", "a/skewed-nvme2.rows", "from features.npy", "wrote "} {
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
	bins := []ddak.Bin{{ID: "gpu0", Kind: placement.StorageGPUMem, CapacityRows: 100, TargetShare: 0.4},
		{ID: "socket0", Kind: placement.StorageHostMem, CapacityRows: 200, TargetShare: 0.2}}
	for i := range 3 {
		bins = append(bins, ddak.Bin{ID: fmt.Sprintf("nvme%d", i), Kind: placement.StorageSSD, Socket: i % 2, CapacityRows: 2000, TargetShare: 0.1})
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
	if err := layout.Write(data, l, bins); err != nil {
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
	if code, _, errOut := runCLI(t, "recommend", "--dataset", data, "--ssds", "2", "--gpus", "1", "--save", plan); code != 0 {
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

func TestMaterializeVerifyNamesTheDamagedFile(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	os.Mkdir(data, 0o755)
	writeDataset(t, data, 2000, 4, 32)
	handLayout(t, data)
	ssd := filepath.Join(dir, "ssd")
	os.Mkdir(ssd, 0o755)
	code, _, errOut := runCLI(t, "materialize", "--dataset", data, "--ssd-dir", ssd)
	if code != 0 {
		t.Fatalf("materialize: exit %d: %s", code, errOut)
	}
	// Not a terminal: one line per phase, no progress bar.
	for _, want := range []string{"materialize: writing 3 SSD bin files", "materialize: checksumming 3 files", "materialize: wrote "} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if strings.Contains(errOut, "\r") || strings.Contains(errOut, "%|") {
		t.Errorf("a progress bar on a stderr that is not a terminal:\n%q", errOut)
	}
	code, out, errOut := runCLI(t, "materialize", "--dataset", data, "--verify")
	if code != 0 || !strings.Contains(out, "features and 3 SSD bin files intact") || !strings.Contains(errOut, "verify: reading 3 SSD bin files") {
		t.Fatalf("verify of an intact store: exit %d\n%s\n%s", code, out, errOut)
	}
	m, err := store.ReadManifest(data)
	if err != nil {
		t.Fatal(err)
	}
	var bad store.BinFile
	for _, b := range m.Bins {
		if b.Kind == placement.StorageSSD && b.Rows > 0 {
			bad = b
		}
	}
	f, err := os.OpenFile(bad.Path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte{0x5a}, store.HeaderBytes+bad.StrideBytes+3)
	f.Close()
	code, out, errOut = runCLI(t, "materialize", "--dataset", data, "--verify", "-o", "json")
	if code != 2 || strings.Count(errOut, "gnnplan: ") != 1 || !strings.Contains(errOut, bad.Path) || !strings.Contains(errOut, "SSD bin "+bad.ID) {
		t.Errorf("verify of a damaged store: exit %d, stderr %q: want exit 2 and one line naming %s", code, errOut, bad.Path)
	}
	var rep store.VerifyReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Damaged != 1 || !rep.Features.OK {
		t.Errorf("report %s (%v): want one damaged bin, the features intact", out, err)
	}
	for _, c := range rep.Bins {
		if c.Path == bad.Path && (c.DamagedRows != 1 || c.FirstDamagedRow != 1) {
			t.Errorf("report for %s: %+v, want row 1 named as the one damaged row", c.Path, c)
		}
	}
}

func TestStoreReporterDrawsABarOnATerminal(t *testing.T) {
	var buf bytes.Buffer
	r := textout.NewTerminalProgress(&buf)
	p := storeProgress(r)
	p(store.Progress{Phase: "write rows", TotalBytes: 1 << 20})
	p(store.Progress{Phase: "write rows", DoneBytes: 1 << 19, TotalBytes: 1 << 20})
	fmt.Fprintf(r, "materialize: a line between bars\n")
	p(store.Progress{Phase: "checksum", TotalBytes: 1 << 20})
	r.Close()
	got := buf.String()
	for _, want := range []string{"write rows", "checksum", "materialize: a line between bars\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("terminal output lacks %q:\n%q", want, got)
		}
	}
	if storeProgress(textout.NewProgress(&buf)) != nil {
		t.Errorf("a progress callback for a stderr that is not a terminal")
	}
}
