package topology

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gnnplan/gnnplan/topology/internal/sysfstest"
)

func discoverAt(t testing.TB, root string) *Machine {
	t.Helper()
	m, err := Discover(context.Background(), DiscoverOptions{Root: root})
	if err != nil {
		t.Fatalf("Discover(%s): %v", root, err)
	}
	if err := m.Validate(); err != nil {
		t.Fatalf("discovered machine invalid: %v", err)
	}
	return m
}

func ancestorKinds(m *Machine, id string) []Kind {
	var ks []Kind
	for n := m.Node(m.Node(id).Parent); n != nil; n = m.Node(n.Parent) {
		ks = append(ks, n.Kind)
	}
	return ks
}

func TestDiscoverSwitchesAndLinkWidths(t *testing.T) {
	m := discoverAt(t, sysfstest.Server(4).Write(t))
	if got := m.Count(KindSwitch); got != 2 {
		t.Fatalf("switches = %d, want 2 (one cascaded below the other)", got)
	}
	sws := m.NodesOfKind(KindSwitch)
	inner, outer := sws[1], sws[0]
	if inner.Parent != outer.ID {
		t.Errorf("switch %s parent = %s, want %s (cascaded)", inner.ID, inner.Parent, outer.ID)
	}
	if got := ancestorKinds(m, outer.ID); len(got) < 2 || got[0] != KindRootPort {
		t.Errorf("outer switch ancestors %v, want a root port first", got)
	}
	if got := m.Count(KindGPU); got != 4 {
		t.Errorf("GPUs = %d, want 4", got)
	}
	for _, g := range m.NodesOfKind(KindGPU) {
		up := m.UplinkOf(g.ID)
		if up.GBps != 24 || up.Lanes != 16 || up.PCIeGen != 4 || up.Source != SourceSysfsMax {
			t.Errorf("GPU %s uplink %+v, want x16 Gen4 24 GB/s from sysfs max_link_*", g.ID, *up)
		}
	}
	for _, n := range m.NodesOfKind(KindNVMe) {
		up := m.UplinkOf(n.ID)
		if up.GBps != 6 || up.Lanes != 4 {
			t.Errorf("NVMe %s uplink %+v, want x4 Gen4 6 GB/s", n.ID, *up)
		}
		if len(n.BlockDevices) != 1 {
			t.Errorf("NVMe %s has %d block devices, want 1", n.ID, len(n.BlockDevices))
		}
	}
	nv := m.NodesOfKind(KindNVMe)
	if s := m.Socket(nv[len(nv)-1].ID); s == nil || *s.NUMANode != 1 {
		t.Errorf("socket-1 NVMe not under socket 1")
	}
	il := m.NodesOfKind(KindSocket)
	if len(il) != 2 || il[0].MemoryGiB != 128 || il[0].Threads != 4 || il[0].Cores != 4 {
		t.Errorf("sockets %+v, want 2 with 128 GiB and 4 threads", il)
	}
	var upi *Link
	for i := range m.Links {
		if m.Links[i].Kind == LinkInterSocket {
			upi = &m.Links[i]
		}
	}
	if upi == nil || upi.GBps != 22 {
		t.Errorf("inter-socket link %+v, want Sapphire Rapids UPI 22 GB/s", upi)
	}
}

func TestDiscoverVMWithoutNUMA(t *testing.T) {
	// Like the CI machine: virtio devices on the root bus, numa_node -1,
	// no link speeds, no bridges.
	fs := sysfstest.FS{NUMANodes: 1, CPUModel: "AMD EPYC", Funcs: []sysfstest.Func{
		{Addr: "0000:00:00.0", Class: "0x060000", Vendor: "8086", Device: "0d57", NUMA: -1},
		{Addr: "0000:00:02.0", Class: "0x018000", Vendor: "1af4", Device: "1042", NUMA: -1, Block: "vda"},
		{Addr: "0000:00:03.0", Class: "0x020000", Vendor: "1af4", Device: "1041", NUMA: -1},
	}}
	m := discoverAt(t, fs.Write(t))
	if m.Count(KindGPU) != 0 || m.Count(KindNVMe) != 0 {
		t.Fatalf("found GPU/NVMe in a VM without them")
	}
	disk := m.NodesOfKind(KindStorage)
	if len(disk) != 1 || len(disk[0].BlockDevices) != 1 || disk[0].BlockDevices[0].Name != "vda" {
		t.Fatalf("virtio disk not reported with /dev/vda: %+v", disk)
	}
	var sb strings.Builder
	if err := WriteSummary(&sb, m); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sb.String(), "no GPU or NVMe SSD found") {
		t.Errorf("summary does not say plainly that no GPU or NVMe was found:\n%s", sb.String())
	}
	notes := strings.Join(m.Notes, "\n")
	if !strings.Contains(notes, "assumed") {
		t.Errorf("notes do not say link capacities were assumed: %q", notes)
	}
}

func TestDiscoverLiveMachine(t *testing.T) {
	if _, err := os.Stat("/sys/bus/pci/devices"); err != nil {
		t.Skip("no /sys/bus/pci on this machine")
	}
	m := discoverAt(t, "/")
	if m.Count(KindSocket) < 1 {
		t.Errorf("this machine has no socket in its description")
	}
}

func TestDiscoverRejectsNonSysfs(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "README"), []byte("hello"), 0o644)
	cases := []struct{ name, root string }{
		{"directory without sys/", dir},
		{"missing directory", filepath.Join(dir, "nope")},
		{"a file", filepath.Join(dir, "README")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Discover(context.Background(), DiscoverOptions{Root: tc.root})
			if err == nil || !IsBadInput(err) || !strings.Contains(err.Error(), tc.root) {
				t.Fatalf("err = %v, want a bad-input error naming %s", err, tc.root)
			}
		})
	}
}

func TestDiscoverStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Discover(ctx, DiscoverOptions{Root: sysfstest.Server(0).Write(t)})
	if err == nil {
		t.Fatal("Discover ignored a cancelled context")
	}
}

// BenchmarkDiscover100Devices discovers a synthetic server of about 100
// PCI devices (2 switches, 4 GPUs, 94 NVMe SSDs on their own root ports).
func BenchmarkDiscover100Devices(b *testing.B) {
	root := sysfstest.Server(94).Write(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m, err := Discover(context.Background(), DiscoverOptions{Root: root})
		if err != nil {
			b.Fatal(err)
		}
		if m.Count(KindNVMe) != 96 {
			b.Fatalf("NVMe = %d, want 96", m.Count(KindNVMe))
		}
	}
}

func TestDiscoverWithoutPCIIDs(t *testing.T) {
	// No pci.ids file: ghw cannot name devices, discovery reads sysfs itself
	// and names devices from its own short list or as vendor:device.
	t.Setenv("PCIDB_PATH", filepath.Join(t.TempDir(), "no-pci.ids"))
	fs := sysfstest.Server(1)
	fs.Funcs = append(fs.Funcs, sysfstest.Func{Addr: "0000:80:1f.0", Class: "0x020000", Vendor: "abcd", Device: "1234", NUMA: 1})
	m := discoverAt(t, fs.Write(t))
	if m.Count(KindGPU) != 4 || m.Count(KindSwitch) != 2 {
		t.Fatalf("GPUs %d switches %d, want 4 and 2 without pci.ids", m.Count(KindGPU), m.Count(KindSwitch))
	}
	names := map[string]bool{}
	for _, n := range m.Nodes {
		names[n.Name] = true
	}
	if !names["abcd:1234"] {
		t.Errorf("unknown NIC not named vendor:device in hex; names %v", names)
	}
	if !strings.Contains(strings.Join(m.Notes, " "), "pci.ids") {
		t.Errorf("notes do not say names are missing for want of pci.ids: %v", m.Notes)
	}
}

func TestDiscoverPlacesSMBIOSSlots(t *testing.T) {
	fs := sysfstest.Server(0)
	// An empty root port on socket 1 whose secondary bus is 0x85.
	fs.Funcs = append(fs.Funcs, sysfstest.Func{Addr: "0000:80:1e.0", Class: "0x060400", Vendor: "8086", Device: "347a", NUMA: 1,
		Speed: "16.0 GT/s PCIe", Width: "16", SecondaryBus: 0x85})
	root := fs.Write(t)
	var table []byte
	for _, s := range []smbiosTestSlot{
		{layout: "3.4", handle: 0x900, designation: "CPU1 SLOT1 PCI-E 4.0 X16", typ: 0xBD, width: 0x0D, usage: 0x04, len: 0x04, id: 1,
			bus: 0x03, devfn: 0x00, info: 4, phys: 0x0D},
		{layout: "3.4", handle: 0x901, designation: "CPU2 SLOT7 PCI-E 4.0 X16", typ: 0xBD, width: 0x0D, usage: 0x03, len: 0x04, id: 7,
			bus: 0x85, devfn: 0x00, info: 4, phys: 0x0D},
		{layout: "2.6", handle: 0x902, designation: "M.2 SPARE", typ: 0x17, width: 0x0A, usage: 0x03, len: 0x03, id: 9,
			seg: 0xFFFF, bus: 0xFF, devfn: 0xFF},
	} {
		table = append(table, smbiosEncodeSlot(s)...)
	}
	table = append(table, smbiosEncodeEnd(0xFFFE)...)
	dmi := filepath.Join(root, "sys", "firmware", "dmi", "tables", "DMI")
	os.MkdirAll(filepath.Dir(dmi), 0o755)
	if err := os.WriteFile(dmi, table, 0o400); err != nil {
		t.Fatal(err)
	}
	m := discoverAt(t, root)
	slots := map[string]*Node{}
	for _, s := range m.NodesOfKind(KindSlot) {
		slots[s.Label] = s
	}
	if len(slots) != 3 {
		t.Fatalf("slots %v, want the 3 SMBIOS records", slots)
	}
	gpuSlot := slots["CPU1 SLOT1 PCI-E 4.0 X16"]
	kids := m.Children(gpuSlot.ID)
	if len(kids) != 1 || m.Node(kids[0]).PCIAddress != "0000:03:00.0" || !gpuSlot.Occupied || gpuSlot.Lanes != 16 || !gpuSlot.DoubleWidth {
		t.Errorf("slot 1 %+v holds %v, want the GPU at 0000:03:00.0 in an occupied x16 slot", *gpuSlot, kids)
	}
	if p := m.Node(gpuSlot.Parent); p.Kind != KindSwitch {
		t.Errorf("slot 1 hangs under %s, want the switch", p.Kind)
	}
	if up := m.UplinkOf(kids[0]); up == nil || up.GBps != 24 {
		t.Errorf("GPU lost its 24 GB/s link when put in the slot: %+v", up)
	}
	empty := slots["CPU2 SLOT7 PCI-E 4.0 X16"]
	if empty.Occupied || m.Node(empty.Parent).PCIAddress != "0000:80:1e.0" {
		t.Errorf("empty slot 7 %+v, want an empty slot below root port 0000:80:1e.0", *empty)
	}
	if spare := slots["M.2 SPARE"]; spare.Parent != "" || !strings.Contains(strings.Join(m.Notes, " "), "M.2 SPARE") {
		t.Errorf("slot without an address should be listed at the top with a note")
	}
}
