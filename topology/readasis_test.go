package topology_test

import (
	"testing"

	"github.com/gnnplan/gnnplan/topology"
	"github.com/gnnplan/gnnplan/topology/internal/sysfstest"
	"github.com/gnnplan/gnnplan/topology/internal/topotest"
)

// Machines read as they are: capacities from the maximum link, topology.GPUs and
// topology.NICs told from what only looks like them, sockets as packages, hidden
// bridges and impossible values, importers at scale and under cancel.

func TestDiscoverCapacityFromMaximumLink(t *testing.T) {
	gen4, gen1, gen3 := "16.0 GT/s PCIe", "2.5 GT/s PCIe", "8.0 GT/s PCIe"
	cases := []struct {
		name                string
		port, gpu           sysfstest.Func
		wantGBps            float64
		wantGen, wantLanes  int
		wantCurGen, wantCur int // 0: current equals maximum, nothing kept
		wantNote            bool
	}{
		{"idle GPU in power save keeps its Gen4 x16 capacity",
			sysfstest.Func{Speed: gen4, Width: "16"}, sysfstest.Func{Speed: gen1, Width: "16", MaxSpeed: gen4},
			24, 4, 16, 1, 16, true},
		{"link downtrained in width is modelled at its maximum",
			sysfstest.Func{Speed: gen4, Width: "16"}, sysfstest.Func{Speed: gen4, Width: "8", MaxWidth: "16"},
			24, 4, 16, 4, 8, true},
		{"port's maximum bounds the link",
			sysfstest.Func{Speed: gen3, Width: "16"}, sysfstest.Func{Speed: gen1, Width: "16", MaxSpeed: gen4},
			12, 3, 16, 1, 16, true},
		{"link at its maximum gets no note",
			sysfstest.Func{Speed: gen4, Width: "16"}, sysfstest.Func{Speed: gen4, Width: "16"},
			24, 4, 16, 0, 0, false},
		{"no maximum falls back to the current link",
			sysfstest.Func{}, sysfstest.Func{Speed: gen3, Width: "8", MaxSpeed: "Unknown", MaxWidth: "255"},
			6, 3, 8, 0, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			port, gpu := tc.port, tc.gpu
			port.Addr, port.Class, port.Vendor, port.Device = "0000:00:01.0", "0x060400", "8086", "347a"
			gpu.Addr, gpu.Parent, gpu.Class, gpu.Vendor, gpu.Device = "0000:01:00.0", "0000:00:01.0", "0x030200", "10de", "20f1"
			fs := sysfstest.FS{NUMANodes: 1, CPUModel: "Intel(R) Xeon(R) Gold 6426Y", Funcs: []sysfstest.Func{port, gpu}}
			m := topotest.DiscoverAt(t, fs.Write(t))
			topotest.AssertSound(t, m)
			gpus := m.NodesOfKind(topology.KindGPU)
			if len(gpus) != 1 {
				t.Fatalf("topology.GPUs = %d, want 1", len(gpus))
			}
			up := m.UplinkOf(gpus[0].ID)
			if up.GBps != tc.wantGBps || up.PCIeGen != tc.wantGen || up.Lanes != tc.wantLanes {
				t.Errorf("uplink %+v, want Gen%d x%d %v GB/s", *up, tc.wantGen, tc.wantLanes, tc.wantGBps)
			}
			if up.CurrentPCIeGen != tc.wantCurGen || up.CurrentLanes != tc.wantCur {
				t.Errorf("current link Gen%d x%d, want Gen%d x%d", up.CurrentPCIeGen, up.CurrentLanes, tc.wantCurGen, tc.wantCur)
			}
			if got := topotest.HasNote(m, "below their maximum"); got != tc.wantNote {
				t.Errorf("note about links below maximum = %v, want %v; notes %q", got, tc.wantNote, m.Notes)
			}
		})
	}
}

func TestKindForPCIComputeGPUsOnly(t *testing.T) {
	cases := []struct {
		name   string
		class  uint32
		vendor string
		want   topology.Kind
	}{
		{"ASPEED BMC VGA is not a GPU", 0x030000, "1a03", topology.KindOther},
		{"Matrox G200e BMC VGA is not a GPU", 0x030000, "102b", topology.KindOther},
		{"Nuvoton BMC VGA is not a GPU", 0x030000, "1050", topology.KindOther},
		{"Silicon Motion VGA is not a GPU", 0x030000, "126f", topology.KindOther},
		{"unknown vendor display controller is not a GPU", 0x038000, "1d17", topology.KindOther},
		{"virtio-gpu is not a GPU", 0x030000, "1af4", topology.KindOther},
		{"NVIDIA 3D controller is a GPU", 0x030200, "10de", topology.KindGPU},
		{"NVIDIA VGA controller is a GPU", 0x030000, "10de", topology.KindGPU},
		{"AMD Instinct display controller is a GPU", 0x038000, "1002", topology.KindGPU},
		{"Intel display controller is a GPU", 0x030000, "8086", topology.KindGPU},
		{"3D controller without a vendor is a GPU", 0x030200, "", topology.KindGPU},
		{"VGA controller without a vendor is not a GPU", 0x030000, "", topology.KindOther},
		{"Ethernet controller is a NIC", 0x020000, "15b3", topology.KindNIC},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := topology.KindForPCI(tc.class, tc.vendor); got != tc.want {
				t.Errorf("topology.KindForPCI(0x%06x, %q) = %s, want %s", tc.class, tc.vendor, got, tc.want)
			}
		})
	}
}

func TestDiscoverBMCGraphicsIsNotAGPU(t *testing.T) {
	for _, vendor := range []string{"1a03", "102b", "1050"} {
		t.Run("vendor "+vendor, func(t *testing.T) {
			fs := sysfstest.FS{NUMANodes: 1, CPUModel: "AMD EPYC 7742 64-Core Processor", Funcs: []sysfstest.Func{
				{Addr: "0000:00:01.0", Class: "0x060400", Vendor: "1022", Device: "1483", Speed: "2.5 GT/s PCIe", Width: "1"},
				{Addr: "0000:01:00.0", Parent: "0000:00:01.0", Class: "0x060400", Vendor: vendor, Device: "1150", Speed: "2.5 GT/s PCIe", Width: "1"},
				{Addr: "0000:02:00.0", Parent: "0000:01:00.0", Class: "0x030000", Vendor: vendor, Device: "2000"},
				{Addr: "0000:00:02.0", Class: "0x060400", Vendor: "1022", Device: "1483", Speed: "16.0 GT/s PCIe", Width: "16"},
				{Addr: "0000:03:00.0", Parent: "0000:00:02.0", Class: "0x030200", Vendor: "10de", Device: "20f1", Speed: "16.0 GT/s PCIe", Width: "16"},
			}}
			m := topotest.DiscoverAt(t, fs.Write(t))
			topotest.AssertSound(t, m)
			if got := m.Count(topology.KindGPU); got != 1 {
				t.Errorf("topology.GPUs = %d, want 1 (the NVIDIA one, not the BMC's VGA)", got)
			}
		})
	}
}

func TestDiscoverSocketsArePackagesNotNUMANodes(t *testing.T) {
	cases := []struct {
		name                 string
		numa, packages       int
		wantSockets          int
		wantThreadsPerSocket int
	}{
		{"one EPYC in NPS4 is one socket", 4, 1, 1, 16},
		{"two EPYCs in NPS4 are two sockets", 8, 2, 2, 16},
		{"two Xeons in SNC2 are two sockets", 4, 2, 2, 8},
		{"one NUMA node per package stays as it was", 2, 2, 2, 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fs := sysfstest.FS{NUMANodes: tc.numa, Packages: tc.packages, CPUModel: "AMD EPYC 7742 64-Core Processor"}
			// A GPU on the last NUMA node must land under the socket holding it.
			fs.Funcs = []sysfstest.Func{
				{Addr: "0000:c0:01.0", Class: "0x060400", Vendor: "1022", Device: "1483", NUMA: tc.numa - 1, Speed: "16.0 GT/s PCIe", Width: "16"},
				{Addr: "0000:c1:00.0", Parent: "0000:c0:01.0", Class: "0x030200", Vendor: "10de", Device: "20f1", NUMA: tc.numa - 1, Speed: "16.0 GT/s PCIe", Width: "16"},
			}
			m := topotest.DiscoverAt(t, fs.Write(t))
			topotest.AssertSound(t, m)
			socks := m.NodesOfKind(topology.KindSocket)
			if len(socks) != tc.wantSockets {
				t.Fatalf("sockets = %d, want %d", len(socks), tc.wantSockets)
			}
			for _, s := range socks {
				if s.Threads != tc.wantThreadsPerSocket || s.MemoryGiB != float64(128*tc.numa/tc.wantSockets) {
					t.Errorf("%s: %d threads %v GiB, want %d threads %d GiB", s.ID, s.Threads, s.MemoryGiB, tc.wantThreadsPerSocket, 128*tc.numa/tc.wantSockets)
				}
			}
			gpu := m.NodesOfKind(topology.KindGPU)[0]
			if s := m.Socket(gpu.ID); s == nil || s.ID != socks[len(socks)-1].ID {
				t.Errorf("GPU on NUMA node %d under %v, want the last socket %s", tc.numa-1, s, socks[len(socks)-1].ID)
			}
		})
	}
}

func TestDiscoverHiddenBridgeAttachesToNearestAncestor(t *testing.T) {
	gen4 := "16.0 GT/s PCIe"
	chain := func() []sysfstest.Func {
		return []sysfstest.Func{
			{Addr: "0000:00:01.0", Class: "0x060400", Vendor: "8086", Device: "347a", Speed: gen4, Width: "16"},
			{Addr: "0000:01:00.0", Parent: "0000:00:01.0", Class: "0x060400", Vendor: "1000", Device: "c010", Speed: gen4, Width: "16"},
			{Addr: "0000:02:00.0", Parent: "0000:01:00.0", Class: "0x060400", Vendor: "1000", Device: "c010", Speed: gen4, Width: "16"},
			{Addr: "0000:02:01.0", Parent: "0000:01:00.0", Class: "0x060400", Vendor: "1000", Device: "c010", Speed: gen4, Width: "16"},
			{Addr: "0000:03:00.0", Parent: "0000:02:00.0", Class: "0x030200", Vendor: "10de", Device: "20f1", Speed: gen4, Width: "16"},
			{Addr: "0000:04:00.0", Parent: "0000:02:01.0", Class: "0x030200", Vendor: "10de", Device: "20f1", Speed: gen4, Width: "16"},
		}
	}
	cases := []struct {
		name       string
		hide       []int  // indexes into chain()
		wantParent string // PCI address of the node 03:00.0 hangs on
	}{
		{"hidden downstream port: GPU hangs on the switch's upstream port", []int{2}, "0000:01:00.0"},
		{"hidden upstream and downstream ports: GPU hangs on the root port", []int{1, 2}, "0000:00:01.0"},
		{"nothing hidden: GPU hangs on its switch", nil, "0000:01:00.0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			funcs := chain()
			for _, i := range tc.hide {
				funcs[i].Hidden = true
			}
			fs := sysfstest.FS{NUMANodes: 1, CPUModel: "Intel(R) Xeon(R) Gold 6426Y", Funcs: funcs}
			m := topotest.DiscoverAt(t, fs.Write(t))
			topotest.AssertSound(t, m)
			var gpu *topology.Node
			for _, n := range m.NodesOfKind(topology.KindGPU) {
				if n.PCIAddress == "0000:03:00.0" {
					gpu = n
				}
			}
			if gpu == nil {
				t.Fatalf("GPU 03:00.0 missing")
			}
			p := m.Node(gpu.Parent)
			if p.PCIAddress != tc.wantParent {
				t.Errorf("GPU parent %s (%s %q), want the node of %s", p.ID, p.Kind, p.PCIAddress, tc.wantParent)
			}
			if len(tc.hide) > 0 && !topotest.HasNote(m, "nearest listed ancestor") {
				t.Errorf("no note about hidden bridges; notes %q", m.Notes)
			}
		})
	}
}
