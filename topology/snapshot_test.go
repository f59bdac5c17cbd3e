package topology

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
			path := fixture(t, tc.archive)
			m, err := Import(path)
			if err != nil {
				t.Fatal(err)
			}
			assertSound(t, m)
			if m.Source != "sysfs-snapshot:"+path {
				t.Errorf("Source = %q, want sysfs-snapshot:%s", m.Source, path)
			}
			if m.Name != tc.name {
				t.Errorf("Name = %q, want %q", m.Name, tc.name)
			}
			for _, c := range []struct {
				kind Kind
				want int
			}{{KindSocket, tc.sockets}, {KindGPU, tc.gpus}, {KindNVMe, tc.nvme}, {KindNIC, tc.nics}} {
				if got := m.Count(c.kind); got != c.want {
					t.Errorf("%s count = %d, want %d", c.kind, got, c.want)
				}
			}
		})
	}
}

func TestImportSnapshotThroughFiles(t *testing.T) {
	path := fixture(t, "ghw-sysfs-linux-amd64-accel-nvidia.tar.gz")
	m, err := ImportFilesContext(context.Background(), []string{path})
	if err != nil {
		t.Fatal(err)
	}
	if m.Count(KindGPU) != 1 || !strings.HasPrefix(m.Source, "sysfs-snapshot:") {
		t.Errorf("got %d GPUs from %q, want the P100 from the snapshot", m.Count(KindGPU), m.Source)
	}
}

// tarEntry is one entry of a tar built by a test.
type tarEntry struct {
	name, body, link string
	typ              byte // tar.TypeReg when 0
}

func buildTar(t testing.TB, entries []tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Linkname: e.link, Typeflag: e.typ, Mode: 0o644, Format: tar.FormatPAX}
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(tw, e.body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// tarDir archives the tree at dir, symlinks as symlinks, under prefix.
func tarDir(t testing.TB, dir, prefix string) []byte {
	t.Helper()
	var entries []tarEntry
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		name := prefix + filepath.ToSlash(rel)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			entries = append(entries, tarEntry{name: name, link: target, typ: tar.TypeSymlink})
			return err
		case d.IsDir():
			entries = append(entries, tarEntry{name: name + "/", typ: tar.TypeDir})
		default:
			body, err := os.ReadFile(p)
			entries = append(entries, tarEntry{name: name, body: string(body)})
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return buildTar(t, entries)
}

func gzipBytes(t testing.TB, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(data)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
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
	fake := fakeSysfs{numaNodes: 2, cpuModel: "Intel(R) Xeon(R) Gold 6426Y", funcs: serverSysfs(0).funcs}
	tree := fake.write(t)
	cases := []struct {
		name string
		data []byte
		gpus int
	}{
		{"plain tar rooted at sys/", tarDir(t, tree, ""), 4},
		{"gzip tar under a top directory", gzipBytes(t, tarDir(t, tree, "host1/")), 4},
		{"tar under ./", tarDir(t, tree, "./"), 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// No extension: the format comes from the bytes.
			path := writeTemp(t, "capture", tc.data)
			m, err := Import(path)
			if err != nil {
				t.Fatal(err)
			}
			assertSound(t, m)
			if got := m.Count(KindGPU); got != tc.gpus {
				t.Errorf("GPUs = %d, want %d", got, tc.gpus)
			}
		})
	}
}

func TestImportSnapshotRefused(t *testing.T) {
	gz, err := os.ReadFile(fixture(t, "ghw-sysfs-linux-amd64-accel-nvidia.tar.gz"))
	if err != nil {
		t.Fatal(err)
	}
	bz, err := os.ReadFile(fixture(t, "hwloc-sysfs-32em64t-2n8c+dax+nvme+mic+dimms.tar.bz2"))
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
	sysFile := tarEntry{name: "sys/devices/system/cpu/cpu0/topology/core_id", body: "0\n"}
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
		{"gzip of something else", gzipBytes(t, []byte(`{"schema_version": 1}`)), "gzip data that is not a tar archive"},
		{"xz", []byte("\xfd7zXZ\x00\x00\x04rest"), "xz-compressed archive"},
		{"entry above the root", buildTar(t, []tarEntry{sysFile, {name: "../evil", body: "x"}}), `entry "../evil" leads outside`},
		{"entry climbing out", buildTar(t, []tarEntry{sysFile, {name: "sys/../../evil", body: "x"}}), "leads outside"},
		{"absolute entry", buildTar(t, []tarEntry{sysFile, {name: "/tmp/evil", body: "x"}}), "leads outside"},
		{"symlink out of the root", buildTar(t, []tarEntry{sysFile, {name: "sys/bus/pci/devices/x", link: "../../../../../etc", typ: tar.TypeSymlink}}),
			"symlink sys/bus/pci/devices/x -> ../../../../../etc points outside"},
		{"absolute symlink", buildTar(t, []tarEntry{sysFile, {name: "sys/block/sda", link: "/etc/passwd", typ: tar.TypeSymlink}}), "points outside"},
		{"symlink out through another symlink", buildTar(t, []tarEntry{sysFile,
			{name: "a/b/c/up", link: "../../..", typ: tar.TypeSymlink},
			{name: "sys/leak", link: "../a/b/c/up/../etc", typ: tar.TypeSymlink}}),
			"symlink sys/leak -> ../a/b/c/up/../etc points outside"},
		{"no sys tree", buildTar(t, []tarEntry{{name: "etc/hostname", body: "box\n"}, {name: "proc/cpuinfo", body: "processor: 0\n"}}),
			"not a sysfs snapshot: no sys/bus/pci or sys/devices in it"},
		{"two machines", buildTar(t, []tarEntry{{name: "a/" + sysFile.name, body: "0"}, {name: "b/" + sysFile.name, body: "0"}}), "holds 2 sysfs trees (a/sys, b/sys)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := writeTemp(t, "snap.tar.gz", tc.data)
			_, err := Import(path)
			var ie *InputError
			if !errors.As(err, &ie) || ie.Path != path {
				t.Fatalf("err = %v (%T), want an *InputError naming %s", err, err, path)
			}
			if msg := err.Error(); !strings.Contains(msg, tc.wantErr) || strings.Contains(msg, "\n") {
				t.Errorf("err = %q, want one line mentioning %q", msg, tc.wantErr)
			}
		})
	}
}

func TestExtractSnapshotSkipsAndLimits(t *testing.T) {
	sysFile := tarEntry{name: "sys/devices/system/cpu/cpu0/topology/core_id", body: "0\n"}
	big := tarEntry{name: "sys/devices/big", body: strings.Repeat("x", 2<<20)}
	cases := []struct {
		name    string
		entries []tarEntry
		lim     snapshotLimits
		wantErr string   // "" = extracts
		absent  []string // paths that must not exist after
		present []string // paths that must
	}{
		{"device files and fifos skipped", []tarEntry{sysFile,
			{name: "dev/null", typ: tar.TypeChar}, {name: "dev/sda", typ: tar.TypeBlock}, {name: "run/fifo", typ: tar.TypeFifo}},
			defaultSnapshotLimits(), "", []string{"dev/null", "dev/sda", "run/fifo"}, nil},
		{"hard link to outside skipped", []tarEntry{sysFile, {name: "sys/passwd", link: "../etc/passwd", typ: tar.TypeLink}},
			defaultSnapshotLimits(), "", []string{"sys/passwd"}, nil},
		{"hard link inside kept", []tarEntry{sysFile, {name: "sys/core_id", link: sysFile.name, typ: tar.TypeLink}},
			defaultSnapshotLimits(), "", nil, []string{"sys/core_id"}},
		{"too many entries", []tarEntry{sysFile, sysFile, sysFile}, snapshotLimits{bytes: 1 << 30, entries: 2}, "more than 2 entries", nil, nil},
		{"too many bytes", []tarEntry{sysFile, big}, snapshotLimits{bytes: 1 << 20, entries: 100}, "more than 1 MiB unpacked", nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			root, err := extractSnapshot(context.Background(), "snap.tar", bytes.NewReader(buildTar(t, tc.entries)), dir, tc.lim)
			if tc.wantErr != "" {
				if !IsBadInput(err) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want bad input mentioning %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if root != dir {
				t.Errorf("root = %s, want %s", root, dir)
			}
			for _, p := range tc.absent {
				if _, err := os.Lstat(filepath.Join(dir, p)); err == nil {
					t.Errorf("%s was extracted", p)
				}
			}
			for _, p := range tc.present {
				if fi, err := os.Lstat(filepath.Join(dir, p)); err != nil || !fi.Mode().IsRegular() {
					t.Errorf("%s not extracted as a file (%v)", p, err)
				}
			}
		})
	}
}

func TestImportSnapshotLeavesNoTempDir(t *testing.T) {
	tmp, inputs := t.TempDir(), t.TempDir()
	for _, v := range []string{"TMPDIR", "TMP", "TEMP"} {
		t.Setenv(v, tmp)
	}
	good := fixture(t, "ghw-sysfs-linux-amd64-accel-nvidia.tar.gz")
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
		{"symlink outside", context.Background(), write("evil.tar", buildTar(t, []tarEntry{
			{name: "sys/devices/system/cpu/cpu0/online", body: "1"}, {name: "sys/x", link: "../../x", typ: tar.TypeSymlink}})), true},
		{"cancelled", cancelled, good, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ImportContext(tc.ctx, tc.path)
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
