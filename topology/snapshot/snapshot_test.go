package snapshot_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gnnplan/gnnplan/topology"
	"github.com/gnnplan/gnnplan/topology/importer"
	"github.com/gnnplan/gnnplan/topology/internal/sysfstest"
	"github.com/gnnplan/gnnplan/topology/internal/topotest"
)

func TestImportSnapshotArchives(t *testing.T) {
	// Sockets, GPUs and NVMe as TestDiscoverSnapshots finds them in the
	// same trees unpacked; NICs as discovery finds them there.
	cases := []struct {
		archive, name             string
		sockets, gpus, nvme, nics int
	}{
		{"ghw-sysfs-linux-amd64-accel-nvidia.tar.gz", "ghw-sysfs-linux-amd64-accel-nvidia", 1, 1, 0, 1},
		{"hwloc-sysfs-32em64t-2n8c+dax+nvme+mic+dimms.tar.bz2", "DCS8000Z", 2, 0, 1, 3},
		{"ghw-sysfs-i7-1270P-nvme.tar.gz", "ghw-sysfs-i7-1270P-nvme", 1, 0, 1, 1}, // integrated graphics, no GPU
		{"ghw-sysfs-xeon-L5640-2numa.tar.gz", "ghw-sysfs-xeon-L5640-2numa", 2, 0, 0, 6},
	}
	for _, tc := range cases {
		t.Run(tc.archive, func(t *testing.T) {
			t.Parallel()
			path := sysfstest.Fixture(t, tc.archive)
			m, err := importer.Import(path)
			if err != nil {
				t.Fatal(err)
			}
			topotest.AssertSound(t, m)
			if m.Source != "sysfs-snapshot:"+path {
				t.Errorf("Source = %q, want sysfs-snapshot:%s", m.Source, path)
			}
			if m.Name != tc.name {
				t.Errorf("Name = %q, want %q", m.Name, tc.name)
			}
			for _, c := range []struct {
				kind topology.Kind
				want int
			}{{topology.KindSocket, tc.sockets}, {topology.KindGPU, tc.gpus}, {topology.KindNVMe, tc.nvme}, {topology.KindNIC, tc.nics}} {
				if got := m.Count(c.kind); got != c.want {
					t.Errorf("%s count = %d, want %d", c.kind, got, c.want)
				}
			}
		})
	}
}

func TestImportSnapshotThroughFiles(t *testing.T) {
	path := sysfstest.Fixture(t, "ghw-sysfs-linux-amd64-accel-nvidia.tar.gz")
	m, err := importer.ImportFilesContext(context.Background(), []string{path})
	if err != nil {
		t.Fatal(err)
	}
	if m.Count(topology.KindGPU) != 1 || !strings.HasPrefix(m.Source, "sysfs-snapshot:") {
		t.Errorf("got %d GPUs from %q, want the P100 from the snapshot", m.Count(topology.KindGPU), m.Source)
	}
}

func writeTemp(t testing.TB, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestImportSnapshotBuilt(t *testing.T) {
	fake := sysfstest.FS{NUMANodes: 2, CPUModel: "Intel(R) Xeon(R) Gold 6426Y", Funcs: sysfstest.Server(0).Funcs}
	tree := fake.Write(t)
	cases := []struct {
		name string
		data []byte
		gpus int
	}{
		{"plain tar rooted at sys/", sysfstest.TarDir(t, tree, ""), 4},
		{"gzip tar under a top directory", sysfstest.Gzip(t, sysfstest.TarDir(t, tree, "host1/")), 4},
		{"tar under ./", sysfstest.TarDir(t, tree, "./"), 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// No extension: the format comes from the bytes.
			path := writeTemp(t, "capture", tc.data)
			m, err := importer.Import(path)
			if err != nil {
				t.Fatal(err)
			}
			topotest.AssertSound(t, m)
			if got := m.Count(topology.KindGPU); got != tc.gpus {
				t.Errorf("GPUs = %d, want %d", got, tc.gpus)
			}
		})
	}
}

func TestImportSnapshotRefused(t *testing.T) {
	gz, err := os.ReadFile(sysfstest.Fixture(t, "ghw-sysfs-linux-amd64-accel-nvidia.tar.gz"))
	if err != nil {
		t.Fatal(err)
	}
	bz, err := os.ReadFile(sysfstest.Fixture(t, "hwloc-sysfs-32em64t-2n8c+dax+nvme+mic+dimms.tar.bz2"))
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	sysFile := sysfstest.TarEntry{Name: "sys/devices/system/cpu/cpu0/topology/core_id", Body: "0\n"}
	cases := []struct {
		name    string
		data    []byte
		wantErr string
	}{
		{"truncated gzip", gz[:len(gz)/2], "truncated gzip stream"},
		{"truncated bzip2", bz[:len(bz)/2], "truncated bzip2 stream"},
		{"truncated plain tar", plain[:len(plain)/2+100], "truncated tar archive"},
		{"gzip trailer cut off", gz[:len(gz)-4], "truncated gzip stream"},
		{"damaged gzip", append(append(append([]byte{}, gz[:200]...), bytes.Repeat([]byte{0xff}, 64)...), gz[264:]...), "damaged"},
		{"gzip of something else", sysfstest.Gzip(t, []byte(`{"schema_version": 1}`)), "gzip data that is not a tar archive"},
		{"xz", []byte("\xfd7zXZ\x00\x00\x04rest"), "xz-compressed archive"},
		{"entry above the root", sysfstest.BuildTar(t, []sysfstest.TarEntry{sysFile, {Name: "../evil", Body: "x"}}), `entry "../evil" leads outside`},
		{"entry climbing out", sysfstest.BuildTar(t, []sysfstest.TarEntry{sysFile, {Name: "sys/../../evil", Body: "x"}}), "leads outside"},
		{"absolute entry", sysfstest.BuildTar(t, []sysfstest.TarEntry{sysFile, {Name: "/tmp/evil", Body: "x"}}), "leads outside"},
		{"symlink out of the root", sysfstest.BuildTar(t, []sysfstest.TarEntry{sysFile, {Name: "sys/bus/pci/devices/x", Link: "../../../../../etc", Typ: tar.TypeSymlink}}),
			"symlink sys/bus/pci/devices/x -> ../../../../../etc points outside"},
		{"absolute symlink", sysfstest.BuildTar(t, []sysfstest.TarEntry{sysFile, {Name: "sys/block/sda", Link: "/etc/passwd", Typ: tar.TypeSymlink}}), "points outside"},
		{"symlink out through another symlink", sysfstest.BuildTar(t, []sysfstest.TarEntry{sysFile,
			{Name: "a/b/c/up", Link: "../../..", Typ: tar.TypeSymlink},
			{Name: "sys/leak", Link: "../a/b/c/up/../etc", Typ: tar.TypeSymlink}}),
			"symlink sys/leak -> ../a/b/c/up/../etc points outside"},
		{"no sys tree", sysfstest.BuildTar(t, []sysfstest.TarEntry{{Name: "etc/hostname", Body: "box\n"}, {Name: "proc/cpuinfo", Body: "processor: 0\n"}}),
			"not a sysfs snapshot: no sys/bus/pci or sys/devices in it"},
		{"two machines", sysfstest.BuildTar(t, []sysfstest.TarEntry{{Name: "a/" + sysFile.Name, Body: "0"}, {Name: "b/" + sysFile.Name, Body: "0"}}), "holds 2 sysfs trees (a/sys, b/sys)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := writeTemp(t, "snap.tar.gz", tc.data)
			_, err := importer.Import(path)
			var ie *topology.InputError
			if !errors.As(err, &ie) || ie.Path != path {
				t.Fatalf("err = %v (%T), want an *InputError naming %s", err, err, path)
			}
			if msg := err.Error(); !strings.Contains(msg, tc.wantErr) || strings.Contains(msg, "\n") {
				t.Errorf("err = %q, want one line mentioning %q", msg, tc.wantErr)
			}
		})
	}
}

func TestImportSnapshotLeavesNoTempDir(t *testing.T) {
	tmp, inputs := t.TempDir(), t.TempDir()
	for _, v := range []string{"TMPDIR", "TMP", "TEMP"} {
		t.Setenv(v, tmp)
	}
	good := sysfstest.Fixture(t, "ghw-sysfs-linux-amd64-accel-nvidia.tar.gz")
	gz, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, data []byte) string {
		p := filepath.Join(inputs, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	cases := []struct {
		name    string
		ctx     context.Context
		path    string
		wantErr bool
	}{
		{"imported", context.Background(), good, false},
		{"truncated", context.Background(), write("cut.tar.gz", gz[:len(gz)/2]), true},
		{"symlink outside", context.Background(), write("evil.tar", sysfstest.BuildTar(t, []sysfstest.TarEntry{
			{Name: "sys/devices/system/cpu/cpu0/online", Body: "1"}, {Name: "sys/x", Link: "../../x", Typ: tar.TypeSymlink}})), true},
		{"cancelled", cancelled, good, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := importer.ImportContext(tc.ctx, tc.path)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if tc.ctx.Err() != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("err = %v, want context.Canceled", err)
			}
			ents, err := os.ReadDir(tmp)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range ents {
				t.Errorf("left behind in the temporary directory: %s", e.Name())
			}
		})
	}
}
