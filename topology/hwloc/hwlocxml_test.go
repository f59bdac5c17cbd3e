package hwloc

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gnnplan/gnnplan/topology"
	"github.com/gnnplan/gnnplan/topology/internal/sysfstest"
	"github.com/gnnplan/gnnplan/topology/internal/topotest"
)

const (
	hwlocDGX2 = "hwloc-nvidiaDGX2.xml"
	hwlocDell = "hwloc-32em64t-2n8c+dax+nvme+mic+dimms.xml"
)

// hwlocFixturePath is where the fixture copies live (topology/testdata/topology).
func hwlocFixturePath(name string) string {
	return filepath.Join(sysfstest.FixtureDir, name)
}

// hwlocFixture reads a shared fixture, skipping the test when the shared
// fixtures are not checked out next to the repository.
func hwlocFixture(t *testing.T, name string) (string, []byte) {
	t.Helper()
	path := hwlocFixturePath(name)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		t.Skipf("fixture %s not found: the shared fixtures live in %s, next to the repository", name, filepath.Dir(path))
	}
	if err != nil {
		t.Fatal(err)
	}
	return path, data
}

func hwlocLoadFixture(t *testing.T, name string) *topology.Machine {
	t.Helper()
	path, data := hwlocFixture(t, name)
	m, err := parseHwlocXML(path, data)
	if err != nil {
		t.Fatalf("parseHwlocXML(%s): %v", name, err)
	}
	return m
}

func hwlocParseString(t *testing.T, doc string) *topology.Machine {
	t.Helper()
	m, err := parseHwlocXML("test.xml", []byte(doc))
	if err != nil {
		t.Fatalf("parseHwlocXML: %v\n%s", err, doc)
	}
	if err := m.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	return m
}

func hwlocHasNote(m *topology.Machine, s string) bool {
	for _, n := range m.Notes {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}

func TestParseHwlocXMLFixtureCounts(t *testing.T) {
	cases := []struct {
		name, file                            string
		gpus, nics, switches, sockets, nvsw   int
		nvme, accel, nvlinks, rootPorts, disk int
	}{
		{
			name: "DGX-2 has 16 V100s behind two PLX levels and NVLinks to 12 NVSwitches",
			file: hwlocDGX2,
			gpus: 16, sockets: 2, nvsw: 12, // SOURCES.md
			// No PCIDev has class 02xx or 0c06.
			nics: 0,
			// Upstream ports with same-id bridge children: per GPU tree one PEX9781/9797
			// top switch + 2 PEX9781 GPU switches (4 trees = 12) + one PEX8725 NVSwitch
			// switch on two of them = 14.
			switches: 14,
			// 16 GPUs x 6 nonzero 25000 MB/s entries (one per NVSwitch of its board),
			// one link each.
			nvlinks: 96,
			// Four host bridges (bridge_type 0-1), each with one 8086:2030 root port folded in.
			rootPorts: 4,
		},
		{
			name:    "Dell DCS8000Z has an NVMe on a root port, a Xeon Phi and a ConnectX-3",
			file:    hwlocDell,
			sockets: 2, nvme: 1, accel: 1, // SOURCES.md
			// Class 02xx: two I350 functions 8086:1521 (02:00.0, 02:00.3) + ConnectX-3 15b3:1003.
			nics: 3,
			// No bridge has a bridge child with its own vendor:device.
			switches: 0,
			// The only display device is the ASPEED BMC VGA 1a03:2000, which is console graphics.
			gpus: 0,
			// Host bridges 0000:[00-06] and 0000:[80-83]; [7f-7f] and [ff-ff] hold only uncore functions.
			rootPorts: 2,
			// The SATA controller 8086:1d02 (class 0106) holding sda.
			disk: 1,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := hwlocLoadFixture(t, tc.file)
			got := []struct {
				what      string
				got, want int
			}{
				{"GPUs", m.Count(topology.KindGPU), tc.gpus},
				{"NICs", m.Count(topology.KindNIC), tc.nics},
				{"switches", m.Count(topology.KindSwitch), tc.switches},
				{"sockets", m.Count(topology.KindSocket), tc.sockets},
				{"NVSwitches", m.Count(topology.KindNVSwitch), tc.nvsw},
				{"NVMe", m.Count(topology.KindNVMe), tc.nvme},
				{"accelerators", m.Count(topology.KindAccelerator), tc.accel},
				{"NVLinks", m.CountLinks(topology.LinkNVLink), tc.nvlinks},
				{"root ports", m.Count(topology.KindRootPort), tc.rootPorts},
				{"storage", m.Count(topology.KindStorage), tc.disk},
			}
			for _, g := range got {
				if g.got != g.want {
					t.Errorf("%s: got %d, want %d", g.what, g.got, g.want)
				}
			}
			topotest.AssertSound(t, m)
			for _, n := range m.NodesOfKind(topology.KindSocket) {
				if n.NUMANode == nil || n.MemoryGiB <= 0 || n.Threads == 0 || n.Cores == 0 || n.CPUList == "" || n.CPUModel == "" {
					t.Errorf("socket %+v: want NUMA node, memory, cores, threads, CPU list and model", *n)
				}
			}
		})
	}
}

func TestParseHwlocXMLDGX2Details(t *testing.T) {
	m := hwlocLoadFixture(t, hwlocDGX2)

	s0 := m.Node("socket0")
	if s0 == nil || s0.CPUList != "0-1" || s0.Threads != 2 || s0.Cores != 2 || *s0.NUMANode != 0 {
		t.Errorf("socket0 %+v: want PUs 0-1 (the file trims to 2 per package) on NUMA node 0", s0)
	}
	// local_memory 810234351616 bytes.
	if s0 != nil && s0.MemoryGiB != 754.59 {
		t.Errorf("socket0 memory %v GiB, want 754.59", s0.MemoryGiB)
	}
	if s1 := m.Node("socket1"); s1 == nil || s1.CPUList != "24-25" {
		t.Errorf("socket1 %+v: want PUs 24-25", s1)
	}
	for _, l := range m.Links {
		if l.Kind == topology.LinkInterSocket && (l.GBps != 10 || !strings.Contains(l.Label, "UPI")) {
			t.Errorf("inter-socket link %+v: want Skylake UPI at 10 GB/s (CPU 6/85)", l)
		}
	}

	t.Run("every V100 uplink is the Gen3 x16 its pci_link_speed 15.753846 implies", func(t *testing.T) {
		for _, g := range m.NodesOfKind(topology.KindGPU) {
			l := m.UplinkOf(g.ID)
			if l == nil {
				t.Fatalf("%s has no uplink", g.ID)
			}
			if l.PCIeGen != 3 || l.Lanes != 16 || l.GBps != topology.PCIeGBps(3, 16) || l.Source != topology.SourceXML {
				t.Errorf("%s uplink: Gen%d x%d %v GB/s from %q, want Gen3 x16 %v GB/s from xml", g.ID, l.PCIeGen, l.Lanes, l.GBps, l.Source, topology.PCIeGBps(3, 16))
			}
			if p := m.Node(g.Parent); p.Kind != topology.KindSwitch || m.Node(p.Parent).Kind != topology.KindSwitch {
				t.Errorf("%s: want two switch levels above, got %s under %s", g.ID, p.Kind, p.Parent)
			}
			if g.MemoryGiB != 32 || g.DeviceID != "1db8" {
				t.Errorf("%s: %+v, want a 32 GiB 10de:1db8", g.ID, g)
			}
		}
	})

	t.Run("the NVSwitch management switch runs Gen3 x4 from its 3.938462 GB/s port", func(t *testing.T) {
		for _, sw := range m.NodesOfKind(topology.KindSwitch) {
			if sw.DeviceID != "8725" {
				continue
			}
			if l := m.UplinkOf(sw.ID); l.PCIeGen != 3 || l.Lanes != 4 || l.GBps != 3 {
				t.Errorf("%s uplink %+v, want Gen3 x4 3 GB/s", sw.ID, l)
			}
			if n := len(m.Children(sw.ID)); n != 6 {
				t.Errorf("%s has %d children, want 6 NVSwitches", sw.ID, n)
			}
		}
	})

	t.Run("each GPU has one NVLink (20 GB/s as NCCL counts V100 links) to each of the 6 NVSwitches on its board", func(t *testing.T) {
		per := map[string]map[string]bool{}
		for _, l := range m.Links {
			if l.Kind != topology.LinkNVLink {
				continue
			}
			from, to := m.Node(l.From), m.Node(l.To)
			if from.Kind != topology.KindGPU || to.Kind != topology.KindNVSwitch || l.Count != 1 || l.GBps != 20 || l.Source != topology.SourceNominal {
				t.Errorf("NVLink %+v: want GPU->NVSwitch, count 1, 20 GB/s nominal", l)
			}
			if per[l.From] == nil {
				per[l.From] = map[string]bool{}
			}
			per[l.From][l.To] = true
			if m.Socket(l.From).ID != m.Socket(l.To).ID {
				t.Errorf("NVLink %s-%s crosses sockets; the matrix links each board's GPUs to its own NVSwitches", l.From, l.To)
			}
		}
		for _, g := range m.NodesOfKind(topology.KindGPU) {
			if len(per[g.ID]) != 6 {
				t.Errorf("%s has NVLinks to %d NVSwitches, want 6", g.ID, len(per[g.ID]))
			}
		}
	})
}

func TestParseHwlocXMLDellDetails(t *testing.T) {
	m := hwlocLoadFixture(t, hwlocDell)
	nvme := m.NodesOfKind(topology.KindNVMe)
	if len(nvme) != 1 || len(nvme[0].BlockDevices) != 1 {
		t.Fatalf("NVMe %+v: want one controller with nvme0n1", nvme)
	}
	// Size 390711384 KiB.
	if bd := nvme[0].BlockDevices[0]; bd.Name != "nvme0n1" || bd.SizeBytes != 390711384*1024 {
		t.Errorf("block device %+v, want nvme0n1 of 390711384 KiB", bd)
	}
	if p := m.Node(nvme[0].Parent); p.Kind != topology.KindRootPort || m.Node(p.Parent).ID != "socket0" {
		t.Errorf("NVMe parent %+v, want the root port of socket0", p)
	}
	for _, k := range []topology.Kind{topology.KindAccelerator, topology.KindNIC} {
		for _, n := range m.NodesOfKind(k) {
			if n.VendorID == "15b3" || n.DeviceID == "225c" {
				if m.Socket(n.ID).ID != "socket1" || n.Label == "" {
					t.Errorf("%s (%s) under %s with label %q: want socket1 and its PCISlot label", n.ID, n.Name, m.Socket(n.ID).ID, n.Label)
				}
			}
		}
	}
	// hwloc wrote pci_link_speed="0.000000" everywhere in this file.
	for _, l := range m.Links {
		if l.Kind == topology.LinkPCIe && l.Source != topology.SourceAssumed {
			t.Errorf("link %+v: want an assumed capacity, the file has no link speeds", l)
		}
	}
	if !hwlocHasNote(m, "capacity assumed") || !hwlocHasNote(m, "chipset function") {
		t.Errorf("notes %q: want the assumed capacities and hidden chipset functions explained", m.Notes)
	}
	if l := m.Links; len(l) == 0 {
		t.Fatal("no links")
	}
	for _, l := range m.Links {
		if l.Kind == topology.LinkInterSocket && l.GBps != 6 {
			t.Errorf("inter-socket %+v: want QPI 6 GB/s from the E5-2680 name", l)
		}
	}
}

func TestParseHwlocXMLHandWritten(t *testing.T) {
	switchTree := `<object type="Bridge" gp_index="100" bridge_type="0-1" depth="0" bridge_pci="0000:[10-20]">
  <object type="Bridge" gp_index="101" bridge_type="1-1" depth="1" pci_busid="0000:10:00.0" pci_type="0604 [8086:2030] [8086:0000] 04 00" pci_link_speed="15.753846">
    <object type="Bridge" gp_index="102" bridge_type="1-1" depth="2" pci_busid="0000:11:00.0" pci_type="0604 [10b5:8747] [10b5:8747] ca 00" pci_link_speed="15.753846">
      <object type="Bridge" gp_index="103" bridge_type="1-1" depth="3" pci_busid="0000:12:08.0" pci_type="0604 [10b5:8747] [10b5:8747] ca 00" pci_link_speed="7.876923">
        <object type="PCIDev" gp_index="104" pci_busid="0000:13:00.0" pci_type="0302 [10de:1db4] [10de:1214] a1 00" pci_link_speed="0.000000">
          <object type="OSDev" gp_index="105" name="cuda0" osdev_type="12"/>
        </object>
      </object>
      <object type="Bridge" gp_index="106" bridge_type="1-1" depth="3" pci_busid="0000:12:10.0" pci_type="0604 [10b5:8747] [10b5:8747] ca 00" pci_link_speed="0.000000">
        <object type="PCIDev" gp_index="107" pci_busid="0000:14:00.0" pci_type="0302 [10de:1db4] [10de:1214] a1 00" pci_link_speed="0.000000">
          <object type="OSDev" gp_index="108" name="cuda1" osdev_type="12"/>
        </object>
      </object>
      <object type="Bridge" gp_index="109" bridge_type="1-1" depth="3" pci_busid="0000:12:11.0" pci_type="0604 [10b5:8747] [10b5:8747] ca 00" pci_link_speed="12.000000">
        <object type="PCIDev" gp_index="110" pci_busid="0000:15:00.0" pci_type="0207 [15b3:101b] [15b3:0007] 00 00" pci_link_speed="12.000000"/>
      </object>
    </object>
  </object>
</object>`

	t.Run("a PLX upstream port becomes one switch and its downstream ports give the links", func(t *testing.T) {
		m := hwlocParseString(t, topotest.HwlocDoc(topotest.HwlocPackage("0", "0", "2", switchTree), ""))
		if n := m.Count(topology.KindSwitch); n != 1 {
			t.Fatalf("%d switches, want 1", n)
		}
		if n := m.Count(topology.KindBridge); n != 0 {
			t.Errorf("%d bridges, want 0: the root port folds into the host bridge", n)
		}
		sw := m.NodesOfKind(topology.KindSwitch)[0]
		if l := m.UplinkOf(sw.ID); l.PCIeGen != 3 || l.Lanes != 16 || l.GBps != 12 {
			t.Errorf("switch uplink %+v: want the root port's Gen3 x16", l)
		}
		gpus := m.NodesOfKind(topology.KindGPU)
		if len(gpus) != 2 {
			t.Fatalf("%d GPUs, want 2", len(gpus))
		}
		// Port 12:08.0 reports 7.876923 = Gen3 x8; the GPU itself reports 0.
		if l := m.UplinkOf(gpus[0].ID); l.PCIeGen != 3 || l.Lanes != 8 || l.GBps != 6 || l.Source != topology.SourceXML {
			t.Errorf("gpu0 uplink %+v: want its downstream port's Gen3 x8 6 GB/s", l)
		}
		// Port and GPU both report 0: the link takes the switch's uplink.
		if l := m.UplinkOf(gpus[1].ID); l.PCIeGen != 3 || l.Lanes != 16 || l.GBps != 12 || !hwlocHasNote(m, "take the link above") {
			t.Errorf("gpu1 uplink %+v: want the switch uplink's Gen3 x16 inherited, with a note", l)
		}
		// 12.0 GB/s is no standard generation x width.
		nic := m.NodesOfKind(topology.KindNIC)[0]
		if l := m.UplinkOf(nic.ID); l.GBps != 9 || l.PCIeGen != 0 || l.Source != topology.SourceXML || !hwlocHasNote(m, "matching no generation") {
			t.Errorf("NIC uplink %+v: want 0.75 x 12 GB/s from xml, with a note", l)
		}
	})

	t.Run("a homogeneous NVLink matrix counts two links per 50000 MB/s on V100", func(t *testing.T) {
		after := `<distances2 type="OSDev" nbobjs="2" kind="25" name="NVLinkBandwidth" indexing="gp">
  <indexes length="8">105 108 </indexes>
  <u64values length="28">1000000 50000 50000 1000000 </u64values>
</distances2>`
		m := hwlocParseString(t, topotest.HwlocDoc(topotest.HwlocPackage("0", "0", "2", switchTree), after))
		var nv []topology.Link
		for _, l := range m.Links {
			if l.Kind == topology.LinkNVLink {
				nv = append(nv, l)
			}
		}
		if len(nv) != 1 || nv[0].Count != 2 || nv[0].GBps != 40 || m.Node(nv[0].From).Kind != topology.KindGPU || m.Node(nv[0].To).Kind != topology.KindGPU {
			t.Errorf("NVLinks %+v: want one GPU-GPU link of count 2 at 40 GB/s (the diagonal is not a link)", nv)
		}
	})

	t.Run("a P100 NVLink is counted at 20000 MB/s per link", func(t *testing.T) {
		io := `<object type="Bridge" gp_index="30" bridge_type="0-1" depth="0" bridge_pci="0000:[01-02]">
  <object type="PCIDev" gp_index="31" pci_busid="0000:01:00.0" pci_type="0302 [10de:15f8] [10de:0000] a1" pci_link_speed="15.753846"/>
  <object type="PCIDev" gp_index="32" pci_busid="0000:02:00.0" pci_type="0302 [10de:15f8] [10de:0000] a1" pci_link_speed="15.753846"/>
</object>`
		after := `<distances2hetero nbobjs="2" kind="25" name="NVLinkBandwidth">
  <indexes length="20">PCIDev:31 PCIDev:32 </indexes>
  <u64values length="20">0 80000 80000 0 </u64values>
</distances2hetero>`
		m := hwlocParseString(t, topotest.HwlocDoc(topotest.HwlocPackage("0", "0", "2", io), after))
		if n := m.CountLinks(topology.LinkNVLink); n != 4 {
			t.Errorf("NVLink count %d, want 4 (80000 MB/s / 20000)", n)
		}
	})

	t.Run("NUMA nodes under the Machine without packages become one socket each", func(t *testing.T) {
		doc := topotest.HwlocDoc(`<object type="NUMANode" os_index="0" cpuset="0x00000003" gp_index="2" local_memory="2147483648"/>
<object type="NUMANode" os_index="1" cpuset="0x0000000c" gp_index="3" local_memory="1073741824"/>
<object type="Core" os_index="0" gp_index="4"><object type="PU" os_index="0" gp_index="5"/></object>
<object type="Core" os_index="1" gp_index="6"><object type="PU" os_index="1" gp_index="7"/></object>
<object type="Core" os_index="2" gp_index="8"><object type="PU" os_index="2" gp_index="9"/><object type="PU" os_index="3" gp_index="10"/></object>`, "")
		m := hwlocParseString(t, doc)
		socks := m.NodesOfKind(topology.KindSocket)
		if len(socks) != 2 || !hwlocHasNote(m, "one socket per NUMA node") {
			t.Fatalf("sockets %d, notes %q: want 2 with a note", len(socks), m.Notes)
		}
		if s := socks[0]; s.CPUList != "0-1" || s.Cores != 2 || s.MemoryGiB != 2 || *s.NUMANode != 0 {
			t.Errorf("socket0 %+v: want CPUs 0-1, 2 cores, 2 GiB on NUMA 0", *s)
		}
		if s := socks[1]; s.CPUList != "2-3" || s.Cores != 1 || s.Threads != 2 || s.MemoryGiB != 1 {
			t.Errorf("socket1 %+v: want CPUs 2-3, 1 core with 2 threads, 1 GiB", *s)
		}
	})

	t.Run("a file without packages or NUMA nodes gets one socket", func(t *testing.T) {
		m := hwlocParseString(t, topotest.HwlocDoc(`<object type="PU" os_index="0" gp_index="2"/><object type="PU" os_index="1" gp_index="3"/>`, ""))
		if s := m.NodesOfKind(topology.KindSocket); len(s) != 1 || s[0].Threads != 2 || !hwlocHasNote(m, "one socket holds all") {
			t.Errorf("sockets %+v notes %q: want one socket with 2 threads and a note", s, m.Notes)
		}
	})

	t.Run("hwloc 1.x NUMA nodes above Socket objects place their I/O by NUMA node", func(t *testing.T) {
		doc := `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE topology SYSTEM "hwloc.dtd">
<topology>
  <object type="Machine" os_index="0" local_memory="0">
    <info name="CPUModel" value="AMD EPYC 7742 64-Core Processor"/>
    <object type="NUMANode" os_index="0" local_memory="4294967296">
      <object type="Socket" os_index="0"><object type="Core" os_index="0"><object type="PU" os_index="0"/></object></object>
      <object type="Bridge" bridge_type="0-1" depth="0" bridge_pci="0000:[00-01]">
        <object type="PCIDev" pci_busid="0000:00:01.0" pci_type="0108 [144d:a808] [144d:a801] 00" pci_link_speed="3.938462"/>
      </object>
    </object>
    <object type="NUMANode" os_index="1" local_memory="4294967296">
      <object type="Socket" os_index="1"><object type="Core" os_index="0"><object type="PU" os_index="1"/></object></object>
      <object type="Bridge" bridge_type="0-1" depth="0" bridge_pci="0000:[80-81]">
        <object type="PCIDev" pci_busid="0000:80:01.0" pci_type="0200 [8086:1521] [8086:0000] 01" pci_link_speed="3.938462"/>
      </object>
    </object>
  </object>
</topology>`
		m := hwlocParseString(t, doc)
		if n := m.Count(topology.KindSocket); n != 2 {
			t.Fatalf("%d sockets, want 2", n)
		}
		if s := m.Node("socket1"); *s.NUMANode != 1 || s.MemoryGiB != 4 || s.CPUModel == "" {
			t.Errorf("socket1 %+v: want NUMA 1 with 4 GiB and the Machine's CPU model", *s)
		}
		nic := m.NodesOfKind(topology.KindNIC)
		if len(nic) != 1 || m.Socket(nic[0].ID).ID != "socket1" {
			t.Errorf("NIC %+v: want it under socket1", nic)
		}
		if l := m.UplinkOf(m.NodesOfKind(topology.KindNVMe)[0].ID); l.PCIeGen != 3 || l.Lanes != 4 {
			t.Errorf("NVMe uplink %+v: want Gen3 x4 from 3.938462", l)
		}
		if !hwlocHasNote(m, "hwloc 1.x") {
			t.Errorf("notes %q: want the format named", m.Notes)
		}
	})

	t.Run("I/O under the Machine goes to the socket its pci_locality names, else socket 0 with a note", func(t *testing.T) {
		io := `<object type="Bridge" gp_index="50" bridge_type="0-1" depth="0" bridge_pci="0000:[80-81]">
  <object type="PCIDev" gp_index="51" pci_busid="0000:80:00.0" pci_type="0108 [8086:0953] [8086:3709] 01 02" pci_link_speed="3.938462"/>
</object>`
		pkgs := topotest.HwlocPackage("0", "0", "2", "") + topotest.HwlocPackage("1", "8", "3", "")
		local := `<pci_locality domain="0x0" bus_min="0x80" bus_max="0x81" cpuset="0x00000100"/>`
		m := hwlocParseString(t, topotest.HwlocDoc(pkgs+io, local))
		if s := m.Socket(m.NodesOfKind(topology.KindNVMe)[0].ID); s.ID != "socket1" || hwlocHasNote(m, "no single local socket") {
			t.Errorf("NVMe under %s (notes %q): want socket1 from pci_locality", s.ID, m.Notes)
		}
		m = hwlocParseString(t, topotest.HwlocDoc(pkgs+io, ""))
		if s := m.Socket(m.NodesOfKind(topology.KindNVMe)[0].ID); s.ID != "socket0" || !hwlocHasNote(m, "no single local socket") {
			t.Errorf("NVMe under %s (notes %q): want socket0 and a note", s.ID, m.Notes)
		}
	})

	t.Run("PCI devices without a host bridge get a stand-in root port", func(t *testing.T) {
		io := `<object type="PCIDev" gp_index="60" pci_busid="0000:01:00.0" pci_type="0200 [15b3:1021] [15b3:0000] 00" pci_link_speed="31.507692"/>`
		m := hwlocParseString(t, topotest.HwlocDoc(topotest.HwlocPackage("0", "0", "2", io), ""))
		nic := m.NodesOfKind(topology.KindNIC)
		if len(nic) != 1 || m.Node(nic[0].Parent).Kind != topology.KindRootPort || !hwlocHasNote(m, "no host bridge") {
			t.Fatalf("NIC %+v notes %q: want it under a stand-in root port, with a note", nic, m.Notes)
		}
		if l := m.UplinkOf(nic[0].ID); l.PCIeGen != 4 || l.Lanes != 16 || l.GBps != 24 {
			t.Errorf("NIC uplink %+v: want Gen4 x16 24 GB/s from 31.507692", l)
		}
	})
}

func TestParseHwlocXMLRejectsBadInput(t *testing.T) {
	_, dgx := hwlocFixture(t, hwlocDGX2)
	pkg := func(io string) string { return topotest.HwlocDoc(topotest.HwlocPackage("0", "0", "2", io), "") }
	cases := []struct {
		name  string
		data  string
		field string // substring of InputError.Field; "" to skip
		line  bool   // want a line number
	}{
		{"an empty file", "", "topology", false},
		{"garbage", "this is not XML \x00\x01\x02", "", true},
		{"plain text", "hello world", "topology", false},
		{"a truncated DGX-2 export", string(dgx[:len(dgx)/2]), "", true},
		{"a file cut after an element", "<topology version=\"2.0\"><object type=\"Machine\">", "object", true},
		{"an NCCL topology instead of hwloc", "<system version=\"1\"><cpu numaid=\"0\"/></system>", "system", true},
		{"mismatched tags", "<topology>\n<object type=\"Machine\">\n</topology>", "", true},
		{"an unknown format version", `<topology version="9.0"><object type="Machine"/></topology>`, "topology.version", true},
		{"a topology without objects", `<topology version="2.0"></topology>`, "topology", true},
		{"a matrix with too few values", topotest.HwlocDoc(`<object type="PU" os_index="0" gp_index="2"/>`,
			`<distances2 type="PU" nbobjs="2" kind="5" name="x" indexing="os"><indexes length="4">0 0 </indexes><u64values length="5">1 2 3 </u64values></distances2>`),
			"distances2.u64values", true},
		{"a matrix with too many values", topotest.HwlocDoc(`<object type="PU" os_index="0" gp_index="2"/>`,
			`<distances2 type="PU" nbobjs="1" kind="5" indexing="os"><indexes length="2">0 </indexes><u64values length="3">1 2 </u64values></distances2>`),
			"u64values", true},
		{"a matrix with a bad value", topotest.HwlocDoc(`<object type="PU" os_index="0" gp_index="2"/>`,
			`<distances2 type="PU" nbobjs="1" kind="5" indexing="os"><indexes length="2">0 </indexes><u64values length="3">-1 </u64values></distances2>`),
			"u64values", true},
		{"a matrix with a bad nbobjs", topotest.HwlocDoc(``, `<distances2hetero nbobjs="lots" kind="25" name="NVLinkBandwidth"></distances2hetero>`),
			"distances2hetero.nbobjs", true},
		{"an NVLink matrix naming a missing object", topotest.HwlocDoc(`<object type="PU" os_index="0" gp_index="2"/>`,
			`<distances2hetero nbobjs="1" kind="25" name="NVLinkBandwidth"><indexes length="9">OSDev:999</indexes><u64values length="1">0</u64values></distances2hetero>`),
			"distances2hetero.indexes", true},
		{"an hwloc 1.x matrix with missing latencies", `<topology><object type="Machine"><distances nbobjs="2" relative_depth="1" latency_base="10"><latency value="1"/></distances></object></topology>`,
			"distances.latency", true},
		{"a bad pci_link_speed", pkg(`<object type="Bridge" bridge_type="0-1" depth="0"><object type="PCIDev" pci_busid="0000:01:00.0" pci_type="0302 [10de:1db8] [10de:0000] a1" pci_link_speed="fast"/></object>`),
			"PCIDev.pci_link_speed", true},
		{"a negative pci_link_speed", pkg(`<object type="Bridge" bridge_type="0-1" depth="0"><object type="PCIDev" pci_busid="0000:01:00.0" pci_type="0302 [10de:1db8] [10de:0000] a1" pci_link_speed="-1"/></object>`),
			"PCIDev.pci_link_speed", true},
		{"a bad pci_type", pkg(`<object type="Bridge" bridge_type="0-1" depth="0"><object type="PCIDev" pci_busid="0000:01:00.0" pci_type="display [nvidia]"/></object>`),
			"PCIDev.pci_type", true},
		{"a bad local_memory", topotest.HwlocDoc(`<object type="NUMANode" os_index="0" local_memory="-5"/>`, ""), "NUMANode.local_memory", true},
		{"a bad os_index", topotest.HwlocDoc(`<object type="PU" os_index="zero"/>`, ""), "PU.os_index", true},
		{"nesting no hwloc export has", "<topology>" + strings.Repeat("<object type=\"Group\">", 300), "object", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			const path = "bad/input.xml"
			m, err := parseHwlocXML(path, []byte(tc.data))
			if err == nil {
				t.Fatalf("no error; machine %+v", m.Summarize())
			}
			if !topology.IsBadInput(err) {
				t.Errorf("error %v is not marked as bad input", err)
			}
			var ie *topology.InputError
			if !errors.As(err, &ie) {
				t.Fatalf("error %T %v is not an *InputError", err, err)
			}
			if ie.Path != path || !strings.Contains(err.Error(), path) {
				t.Errorf("error %q: want path %q", err, path)
			}
			if !strings.Contains(ie.Field, tc.field) {
				t.Errorf("error %q: field %q, want it to name %q", err, ie.Field, tc.field)
			}
			if tc.line && ie.Line <= 0 {
				t.Errorf("error %q: want a line number", err)
			}
			if ie.Msg == "" {
				t.Errorf("error %q: want a message saying what was expected", err)
			}
		})
	}
}

func TestHwlocGenLanesReadsHwlocLinkSpeeds(t *testing.T) {
	cases := []struct {
		raw         float64
		prefer      int
		gen, lanes  int
		ok          bool
		description string
	}{
		{15.753846, 0, 3, 16, true, "Gen3 x16 (Gen4 x8 and Gen5 x4 read the same; the lowest generation wins)"},
		{15.753846, 4, 4, 8, true, "Gen4 x8 when the link above is Gen4"},
		{7.876923, 0, 3, 8, true, "Gen3 x8"},
		{3.938462, 3, 3, 4, true, "Gen3 x4"},
		{31.507692, 0, 4, 16, true, "Gen4 x16"},
		{63.015385, 0, 5, 16, true, "Gen5 x16"},
		{1.000000, 0, 1, 4, true, "Gen1 x4 (= Gen2 x2)"},
		{8.0, 0, 2, 16, true, "Gen2 x16"},
		{0.25, 0, 1, 1, true, "Gen1 x1"},
		{12.0, 0, 0, 0, false, "no standard link"},
		{0, 0, 0, 0, false, "unknown"},
	}
	for _, tc := range cases {
		gen, lanes, ok := hwlocGenLanes(tc.raw, tc.prefer)
		if gen != tc.gen || lanes != tc.lanes || ok != tc.ok {
			t.Errorf("%v GB/s (prefer Gen%d): Gen%d x%d %v, want %s", tc.raw, tc.prefer, gen, lanes, ok, tc.description)
		}
	}
}

func TestHwlocCPUListWritesLinuxRanges(t *testing.T) {
	cases := []struct {
		in   []int
		want string
	}{
		{nil, ""},
		{[]int{0}, "0"},
		{[]int{3, 1, 2, 0}, "0-3"},
		{[]int{0, 1, 2, 3, 8}, "0-3,8"},
		{[]int{24, 25, 0, 1, 1}, "0-1,24-25"},
	}
	for _, tc := range cases {
		if got := hwlocCPUList(tc.in); got != tc.want {
			t.Errorf("hwlocCPUList(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func FuzzHwlocXML(f *testing.F) {
	for _, name := range []string{hwlocDGX2, hwlocDell} {
		if data, err := os.ReadFile(hwlocFixturePath(name)); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte(""))
	f.Add([]byte("<topology/>"))
	f.Add([]byte(`<topology version="2.0"><object type="Machine"><object type="PU" os_index="0"/></object></topology>`))
	f.Add([]byte(topotest.HwlocDoc(topotest.HwlocPackage("0", "0", "2", `<object type="Bridge" bridge_type="0-1" depth="0" bridge_pci="0000:[01-02]">
  <object type="Bridge" bridge_type="1-1" pci_busid="0000:01:00.0" pci_type="0604 [10b5:9781] [10b5:9781] b0 00" pci_link_speed="15.753846">
    <object type="Bridge" bridge_type="1-1" pci_busid="0000:02:00.0" pci_type="0604 [10b5:9781] [10b5:9781] b0 00" pci_link_speed="7.876923">
      <object type="PCIDev" gp_index="9" pci_busid="0000:03:00.0" pci_type="0302 [10de:1db8] [10de:0000] a1 00" pci_link_speed="0"/>
    </object>
  </object>
</object>`), `<distances2hetero nbobjs="2" kind="25" name="NVLinkBandwidth"><indexes length="9">PCIDev:9 Package:21</indexes><u64values length="9">0 25000 25000 0</u64values></distances2hetero>`)))
	f.Add([]byte(`<topology><object type="Machine"><object type="NUMANode" os_index="0" local_memory="1"><object type="Socket"><object type="PU" os_index="0"/></object></object><distances nbobjs="1"><latency value="1"/></distances></object></topology>`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := parseHwlocXML("fuzz.xml", data)
		if err != nil {
			if !topology.IsBadInput(err) {
				t.Fatalf("error not marked as bad input: %v", err)
			}
			return
		}
		if err := m.Validate(); err != nil {
			t.Fatalf("parsed machine does not validate: %v", err)
		}
	})
}
