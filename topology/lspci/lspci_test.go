package lspci_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gnnplan/gnnplan/topology"
	"github.com/gnnplan/gnnplan/topology/importer"
	"github.com/gnnplan/gnnplan/topology/internal/sysfstest"
	"github.com/gnnplan/gnnplan/topology/lspci"
)

var (
	pugetTV  = filepath.Join(sysfstest.FixtureDir, "stelline-puget-lspci-tv.txt")
	pugetVVV = filepath.Join(sysfstest.FixtureDir, "stelline-puget-lspci-vvv.txt")
)

// nearestSwitch returns the switch nearest above node id, or "".
func nearestSwitch(m *topology.Machine, id string) string {
	for p := m.Node(m.Node(id).Parent); p != nil; p = m.Node(p.Parent) {
		if p.Kind == topology.KindSwitch {
			return p.ID
		}
	}
	return ""
}

// TestLspciTreeAlone: lspci -tv of a real workstation (Threadripper PRO,
// 2 RTX 6000 Ada on root ports, 8 Samsung NVMe behind a two-level switch
// carrier, ConnectX-7, BMC graphics) gives its tree: the GPUs, the 8 SSDs
// 4 per switch under one upper switch, the NICs, the BMC's VGA not as a
// GPU, and a note that classes came from names.
func TestLspciTreeAlone(t *testing.T) {
	m, err := importer.Import(pugetTV)
	if err != nil {
		t.Fatal(err)
	}
	if m.Count(topology.KindGPU) != 2 {
		t.Errorf("%d GPUs, want the 2 RTX 6000 Ada (not the ASPEED BMC graphics)", m.Count(topology.KindGPU))
	}
	perSwitch := map[string]int{}
	upper := map[string]bool{}
	for _, n := range m.Nodes {
		if n.Kind == topology.KindNVMe && strings.Contains(n.Name, "Samsung") {
			sw := nearestSwitch(m, n.ID)
			perSwitch[sw]++
			upper[m.Node(sw).Parent] = true
		}
	}
	if len(perSwitch) != 2 || len(upper) != 1 {
		t.Errorf("Samsung SSDs per switch %v under %v: want 4 and 4 under one upper switch", perSwitch, upper)
	}
	for sw, n := range perSwitch {
		if n != 4 {
			t.Errorf("switch %s holds %d Samsung SSDs, want 4", sw, n)
		}
	}
	if m.Count(topology.KindNIC) != 4 { // X710 and ConnectX-7, two functions each
		t.Errorf("%d NIC functions, want 4", m.Count(topology.KindNIC))
	}
	// lspci names no CPU, its AMD chipset devices name the platform.
	if !strings.Contains(strings.Join(m.Notes, "\n"), `CPU platform from the devices' names ("Advanced Micro Devices, Inc. [AMD] Genoa`) {
		t.Errorf("notes %q: want the Genoa platform taken from the devices' names", m.Notes)
	}
	// The carrier's own SSD7540 RAID function is a storage controller:
	// 9 NVMe SSDs (8 Samsung and a Kingston), not 10 (issue 34, finding 4).
	if n, raid := m.Count(topology.KindNVMe), m.Count(topology.KindStorage); n != 9 || raid < 1 {
		t.Errorf("%d NVMe SSDs and %d storage controllers, want 9 SSDs and the HighPoint carrier as storage", n, raid)
	}
	if !strings.Contains(strings.Join(m.Notes, "\n"), "classified by their names") {
		t.Errorf("no note that -tv classes are guessed: %v", m.Notes)
	}
}

// TestLspciDetailsAlone: lspci -vvv gives LnkCap as the capacity and keeps
// LnkSta where lower (an idle GPU at 2.5 GT/s is still a Gen4 x16 link).
func TestLspciDetailsAlone(t *testing.T) {
	m, err := importer.Import(pugetVVV)
	if err != nil {
		t.Fatal(err)
	}
	if m.Count(topology.KindGPU) != 2 || m.Count(topology.KindNIC) != 1 || m.Count(topology.KindStorage) != 1 {
		t.Fatalf("%d GPUs, %d NICs, %d storage; want 2, 1, 1", m.Count(topology.KindGPU), m.Count(topology.KindNIC), m.Count(topology.KindStorage))
	}
	for _, l := range m.Links {
		to := m.Node(l.To)
		switch {
		case to.Kind == topology.KindGPU:
			if l.PCIeGen != 4 || l.Lanes != 16 || l.CurrentPCIeGen != 1 {
				t.Errorf("%s: Gen%d x%d now Gen%d; want LnkCap Gen4 x16, LnkSta 2.5 GT/s kept", l.To, l.PCIeGen, l.Lanes, l.CurrentPCIeGen)
			}
			if strings.Contains(to.Name, "rev") || strings.Contains(to.Name, "prog-if") {
				t.Errorf("GPU name %q keeps lspci's revision", to.Name)
			}
		case to.Kind == topology.KindNIC:
			if l.PCIeGen != 5 || l.Lanes != 16 {
				t.Errorf("ConnectX-7: Gen%d x%d, want Gen5 x16", l.PCIeGen, l.Lanes)
			}
		}
	}
}

// TestLspciCombined: -tv for the tree with -vvv for the links, as two
// files or one: the tree of -tv with the link widths and classes of -vvv.
func TestLspciCombined(t *testing.T) {
	both, err := importer.ImportFilesContext(context.Background(), []string{pugetTV, pugetVVV})
	if err != nil {
		t.Fatal(err)
	}
	tv, _ := os.ReadFile(pugetTV)
	vvv, _ := os.ReadFile(pugetVVV)
	one, err := importer.ImportBytes("both.txt", append(append(tv, '\n'), vvv...))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []*topology.Machine{both, one} {
		if m.Count(topology.KindGPU) != 2 || m.Count(topology.KindStorage) != 1 {
			t.Errorf("%s: %d GPUs, %d storage controllers; want 2 and the HighPoint RAID function", m.Source, m.Count(topology.KindGPU), m.Count(topology.KindStorage))
		}
		gpuLinks := 0
		for _, l := range m.Links {
			if m.Node(l.To).Kind == topology.KindGPU {
				gpuLinks++
				if l.PCIeGen != 4 || l.Lanes != 16 || l.Source == topology.SourceAssumed {
					t.Errorf("%s: GPU link Gen%d x%d (%s), want -vvv's Gen4 x16", m.Source, l.PCIeGen, l.Lanes, l.Source)
				}
				if p := m.Node(m.Node(l.To).Parent); p.Kind != topology.KindRootPort {
					t.Errorf("%s: GPU under %s, want a root port as in the tree", m.Source, p.Kind)
				} else if up := m.UplinkOf(p.ID); up == nil || up.GBps < l.GBps || up.Source == topology.SourceAssumed {
					// The root port has no -vvv detail: its link is the
					// GPU's, not an assumed Gen3 x16 capping it at 12 GB/s
					// (issue 34, finding 4).
					t.Errorf("%s: root port %s's link %+v caps the GPU's %g GB/s", m.Source, p.ID, up, l.GBps)
				}
			}
		}
		if gpuLinks != 2 {
			t.Errorf("%s: %d GPU links", m.Source, gpuLinks)
		}
		// ConnectX-7 function .1 shares function .0's Gen5 x16 link.
		for _, n := range m.NodesOfKind(topology.KindNIC) {
			if !strings.Contains(n.Name, "ConnectX-7") || !strings.HasSuffix(n.PCIAddress, ".1") {
				continue
			}
			l, pl := m.UplinkOf(n.ID), m.UplinkOf(n.Parent)
			if l == nil || pl == nil || l.GBps != pl.GBps || l.Source == topology.SourceAssumed || l.PCIeGen != 5 {
				t.Errorf("%s: ConnectX-7 .1's link %+v, want function .0's %+v", m.Source, l, pl)
			}
		}
	}
}

// TestLspciBadCaptures: damaged or mixed captures exit 2 with one line.
func TestLspciBadCaptures(t *testing.T) {
	vvv, _ := os.ReadFile(pugetVVV)
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	other := strings.Replace(string(vvv), "c1:00.0 VGA", "d1:00.0 VGA", 1) // a GPU this tree lacks
	cases := []struct {
		name  string
		files []string
		want  string
	}{
		{"a link no PCIe has", []string{write("fast.txt", strings.Replace(string(vvv), "Speed 16GT/s, Width x16", "Speed 512GT/s, Width x16", 1))}, "not a possible PCIe link"},
		{"a tree without its root line", []string{write("cut.txt", "lspci -tv\n |           +-03.1-[01-13]----00.0  Foo\n")}, "nor lspci output"},
		{"a re-wrapped tree", []string{write("wrap.txt", "-[0000:00]-+-00.0  Host\n   +-03.1-[01]----00.0  Foo\n")}, "has no bus above it"},
		{"details of another machine", []string{pugetTV, write("other.txt", other)}, "tree does not have"},
		{"a JSON file combined", []string{pugetTV, write("m.json", "{}")}, "only text captures combine"},
		{"two bridges to one bus", []string{write("dup.txt", "00:01.0 PCI bridge: X\n\tBus: primary=00, secondary=01, subordinate=01\n\n00:02.0 PCI bridge: Y\n\tBus: primary=00, secondary=01, subordinate=01\n")}, "both lead to bus"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := importer.ImportFilesContext(context.Background(), tc.files)
			var ie *topology.InputError
			if !errors.As(err, &ie) {
				t.Fatalf("err = %v, want an InputError", err)
			}
			if msg := err.Error(); !strings.Contains(msg, tc.want) || strings.Contains(msg, "\n") {
				t.Errorf("error %q: want one line saying %q", msg, tc.want)
			}
		})
	}
}

func FuzzLspci(f *testing.F) {
	for _, p := range []string{pugetTV, pugetVVV} {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte("-[0000:00]-+-00.0  Host\n            \\-01.1-[01]----00.0  NVIDIA Corporation GA100\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := lspci.Parse(context.Background(), []string{"fuzz.txt"}, [][]byte{data})
		if err != nil {
			return
		}
		if err := m.Validate(); err != nil {
			t.Fatalf("imported machine does not validate: %v", err)
		}
	})
}

// TestLspciWithoutRoot: lspci -vvv run as a user hides the capabilities;
// the links are assumed and a note says to run it with sudo.
func TestLspciWithoutRoot(t *testing.T) {
	capture := "c1:00.0 3D controller: NVIDIA Corporation GA100 [A100 PCIe 40GB] (rev a1)\n" +
		"\tSubsystem: NVIDIA Corporation Device 145f\n\tNUMA node: 1\n\tCapabilities: <access denied>\n\tKernel driver in use: nvidia\n"
	m, err := importer.ImportBytes("user.txt", []byte(capture))
	if err != nil {
		t.Fatal(err)
	}
	if m.Count(topology.KindGPU) != 1 {
		t.Fatalf("%d GPUs", m.Count(topology.KindGPU))
	}
	if notes := strings.Join(m.Notes, "\n"); !strings.Contains(notes, "sudo lspci -vvv") {
		t.Errorf("no note about running lspci as root: %s", notes)
	}
	for _, l := range m.Links {
		if m.Node(l.To).Kind == topology.KindGPU && l.Source != topology.SourceAssumed {
			t.Errorf("GPU link %s, want it marked assumed", l.Source)
		}
	}
}

// TestLspciTreeWithIDs: lspci -tvnn's [vendor:device] ids are read, so a
// BMC's VGA (ASPEED, 1a03) is not taken for a GPU and an NVIDIA 3D
// controller is one, whatever the names say.
func TestLspciTreeWithIDs(t *testing.T) {
	capture := "-[0000:00]-+-00.0  Intel Corporation Device [8086:09a2]\n" +
		"           +-01.0-[01]----00.0  Some Vendor Graphics Family [1a03:2000]\n" +
		"           \\-02.0-[02]----00.0  Device GA100 [10de:20b5]\n"
	m, err := importer.ImportBytes("tvnn.txt", []byte(capture))
	if err != nil {
		t.Fatal(err)
	}
	gpus := 0
	for _, n := range m.Nodes {
		if n.Kind == topology.KindGPU {
			gpus++
			if n.VendorID != "10de" || strings.Contains(n.Name, "[10de") {
				t.Errorf("GPU %+v: want vendor 10de read from the ids and the ids off the name", n)
			}
		}
	}
	if gpus != 1 {
		t.Errorf("%d GPUs, want the NVIDIA one only", gpus)
	}
}
