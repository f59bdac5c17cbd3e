package snapshot

import (
	"archive/tar"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gnnplan/gnnplan/topology"
	"github.com/gnnplan/gnnplan/topology/internal/sysfstest"
	"github.com/gnnplan/gnnplan/topology/internal/topotest"
)

// unpackSnapshot extracts a sysfs snapshot archive (with its symlinks)
// into a temporary directory, as Import does, and returns the directory
// holding sys/.
func unpackSnapshot(t testing.TB, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	root, err := extractSnapshot(context.Background(), path, f, t.TempDir(), defaultSnapshotLimits())
	if err != nil {
		t.Fatalf("unpack %s: %v", path, err)
	}
	return root
}

func TestDiscoverSnapshots(t *testing.T) {
	cases := []struct {
		name    string
		archive string
		sockets int
		gpus    int
		nvme    int
		check   func(t *testing.T, m *topology.Machine)
	}{
		{
			name: "QEMU VM with a P100 on a root port", archive: "ghw-sysfs-linux-amd64-accel-nvidia.tar.gz",
			sockets: 1, gpus: 1, nvme: 0,
			check: func(t *testing.T, m *topology.Machine) {
				gpus := m.NodesOfKind(topology.KindGPU)
				if gpus[0].DeviceID != "15f8" || gpus[0].VendorID != "10de" {
					t.Errorf("GPU is %s:%s, want the P100 10de:15f8", gpus[0].VendorID, gpus[0].DeviceID)
				}
				p := m.Node(gpus[0].Parent)
				if p.Kind != topology.KindRootPort || p.PCIAddress != "0000:00:01.5" {
					t.Errorf("P100's parent is %s %s, want root port 0000:00:01.5", p.Kind, p.PCIAddress)
				}
				if m.UplinkOf(gpus[0].ID) == nil {
					t.Error("P100 has no uplink")
				}
			},
		},
		{
			name: "Dell 2-socket with an NVMe on socket 0", archive: "hwloc-sysfs-32em64t-2n8c+dax+nvme+mic+dimms.tar.bz2",
			sockets: 2, gpus: 0, nvme: 1,
			check: func(t *testing.T, m *topology.Machine) {
				nv := m.NodesOfKind(topology.KindNVMe)[0]
				if nv.DeviceID != "0953" {
					t.Errorf("NVMe is %s, want the P3700 8086:0953", nv.DeviceID)
				}
				if s := m.Socket(nv.ID); s == nil || s.NUMANode == nil || *s.NUMANode != 0 {
					t.Errorf("NVMe not under NUMA node 0's socket")
				}
				if len(nv.BlockDevices) != 1 || nv.BlockDevices[0].Name != "nvme0n1" {
					t.Errorf("NVMe block devices %+v, want nvme0n1", nv.BlockDevices)
				}
				if m.Count(topology.KindAccelerator) != 1 {
					t.Errorf("want the Xeon Phi as 1 accelerator, got %d", m.Count(topology.KindAccelerator))
				}
				if m.Count(topology.KindSlot) != 2 {
					t.Errorf("want the 2 hotplug slots from /sys/bus/pci/slots, got %d", m.Count(topology.KindSlot))
				}
				if m.CountLinks(topology.LinkInterSocket) != 1 {
					t.Errorf("want 1 inter-socket link, got %d", m.CountLinks(topology.LinkInterSocket))
				}
			},
		},
		{
			// Its display (8086:46a6) is the CPU's integrated graphics.
			name: "laptop with one Samsung NVMe", archive: "ghw-sysfs-i7-1270P-nvme.tar.gz",
			sockets: 1, gpus: 0, nvme: 1,
			check: func(t *testing.T, m *topology.Machine) {
				nv := m.NodesOfKind(topology.KindNVMe)[0]
				if m.Node(nv.Parent).Kind != topology.KindRootPort {
					t.Errorf("NVMe parent is %s, want a root port", m.Node(nv.Parent).Kind)
				}
			},
		},
		{
			name: "Dell R610 2 NUMA nodes, no NVMe or GPU", archive: "ghw-sysfs-xeon-L5640-2numa.tar.gz",
			sockets: 2, gpus: 0, nvme: 0,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := unpackSnapshot(t, sysfstest.Fixture(t, tc.archive))
			m := topotest.DiscoverAt(t, root)
			if got := m.Count(topology.KindSocket); got != tc.sockets {
				t.Errorf("sockets = %d, want %d", got, tc.sockets)
			}
			if got := m.Count(topology.KindGPU); got != tc.gpus {
				t.Errorf("GPUs = %d, want %d", got, tc.gpus)
			}
			if got := m.Count(topology.KindNVMe); got != tc.nvme {
				t.Errorf("NVMe = %d, want %d", got, tc.nvme)
			}
			for _, l := range m.Links {
				if l.GBps <= 0 {
					t.Errorf("link %s->%s has capacity %v", l.From, l.To, l.GBps)
				}
			}
			if tc.check != nil {
				tc.check(t, m)
			}
		})
	}
}

func TestExtractSnapshotSkipsAndLimits(t *testing.T) {
	sysFile := sysfstest.TarEntry{Name: "sys/devices/system/cpu/cpu0/topology/core_id", Body: "0\n"}
	big := sysfstest.TarEntry{Name: "sys/devices/big", Body: strings.Repeat("x", 2<<20)}
	cases := []struct {
		name    string
		entries []sysfstest.TarEntry
		lim     snapshotLimits
		wantErr string   // "" = extracts
		absent  []string // paths that must not exist after
		present []string // paths that must
	}{
		{"device files and fifos skipped", []sysfstest.TarEntry{sysFile,
			{Name: "dev/null", Typ: tar.TypeChar}, {Name: "dev/sda", Typ: tar.TypeBlock}, {Name: "run/fifo", Typ: tar.TypeFifo}},
			defaultSnapshotLimits(), "", []string{"dev/null", "dev/sda", "run/fifo"}, nil},
		{"hard link to outside skipped", []sysfstest.TarEntry{sysFile, {Name: "sys/passwd", Link: "../etc/passwd", Typ: tar.TypeLink}},
			defaultSnapshotLimits(), "", []string{"sys/passwd"}, nil},
		{"hard link inside kept", []sysfstest.TarEntry{sysFile, {Name: "sys/core_id", Link: sysFile.Name, Typ: tar.TypeLink}},
			defaultSnapshotLimits(), "", nil, []string{"sys/core_id"}},
		{"too many entries", []sysfstest.TarEntry{sysFile, sysFile, sysFile}, snapshotLimits{bytes: 1 << 30, entries: 2}, "more than 2 entries", nil, nil},
		{"too many bytes", []sysfstest.TarEntry{sysFile, big}, snapshotLimits{bytes: 1 << 20, entries: 100}, "more than 1 MiB unpacked", nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			root, err := extractSnapshot(context.Background(), "snap.tar", bytes.NewReader(sysfstest.BuildTar(t, tc.entries)), dir, tc.lim)
			if tc.wantErr != "" {
				if !topology.IsBadInput(err) || !strings.Contains(err.Error(), tc.wantErr) {
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
