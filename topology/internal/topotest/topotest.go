// Package topotest serves the tests of topology's importers and of
// topology's external tests: a sample machine, the checks every imported
// machine must pass, and small NCCL and hwloc documents. Tests inside
// package topology cannot import it (it imports topology).
package topotest

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/gnnplan/gnnplan/topology"
)

// SampleMachine is a small two-socket machine with a switch, a slot, a GPU,
// an SSD and an NVLink, built the way importers build theirs.
func SampleMachine(t testing.TB) *topology.Machine {
	t.Helper()
	b := topology.NewBuilder("sample", "test")
	zero, one := 0, 1
	s0 := b.Add(topology.Node{Kind: topology.KindSocket, CPUModel: "Intel Xeon Gold 6426Y", NUMANode: &zero, MemoryGiB: 256})
	s1 := b.Add(topology.Node{Kind: topology.KindSocket, CPUModel: "Intel Xeon Gold 6426Y", NUMANode: &one, MemoryGiB: 256})
	rp := b.Add(topology.Node{Kind: topology.KindRootPort, Parent: s0})
	b.Add(topology.Node{Kind: topology.KindRootPort, Parent: s1})
	sw := b.Add(topology.Node{Kind: topology.KindSwitch, Parent: rp, Lanes: 16, PCIeGen: 4})
	sl := b.Add(topology.Node{Kind: topology.KindSlot, Parent: sw, Lanes: 16, PCIeGen: 4, DoubleWidth: true, Occupied: true, Label: "SLOT1"})
	g0 := b.Add(topology.Node{Kind: topology.KindGPU, Parent: sl, Name: "NVIDIA A100 40GB PCIe", MemoryGiB: 40, Model: "a100-40gb-pcie"})
	g1 := b.Add(topology.Node{Kind: topology.KindGPU, Parent: sw, Lanes: 16, PCIeGen: 4})
	b.Add(topology.Node{Kind: topology.KindNVMe, Parent: sw, Lanes: 4, PCIeGen: 4, ReadGBps: 6.5,
		BlockDevices: []topology.BlockDevice{{Name: "nvme0n1", SizeBytes: 3840755982336}}})
	b.Add(topology.Node{Kind: topology.KindSlot, Parent: sw, Lanes: 8, PCIeGen: 4})
	b.Link(topology.Link{From: g0, To: g1, Kind: topology.LinkNVLink, Count: 4, GBps: 80, Source: topology.SourceNominal})
	arch, _ := topology.InterSocketLinkByName("Intel Xeon Gold 6426Y")
	m, err := b.Finish(arch)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// HwlocDoc wraps objects in an hwloc 2 Machine; after follows the Machine
// (distance matrices, pci_locality). machine starts on line 4.
func HwlocDoc(machine, after string) string {
	return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<topology version=\"2.0\">\n" +
		"<object type=\"Machine\" os_index=\"0\" gp_index=\"1\">\n" + machine + "\n</object>\n" + after + "\n</topology>\n"
}

// HwlocPackage is one package with a NUMA node of 1 GiB and two PUs; io
// goes inside it.
func HwlocPackage(os, firstPU, gp, io string) string {
	return `<object type="Package" os_index="` + os + `" gp_index="` + gp + `1">
  <info name="CPUVendor" value="GenuineIntel"/><info name="CPUFamilyNumber" value="6"/><info name="CPUModelNumber" value="85"/>
  <info name="CPUModel" value="Intel(R) Xeon(R) Gold 6130 CPU @ 2.10GHz"/>
  <object type="NUMANode" os_index="` + os + `" gp_index="` + gp + `2" local_memory="1073741824"/>
  <object type="Core" os_index="0" gp_index="` + gp + `3"><object type="PU" os_index="` + firstPU + `" gp_index="` + gp + `4"/></object>
  ` + io + `
</object>`
}

// NCCLDoc wraps body in a one-socket system; body starts on line 3.
func NCCLDoc(body string) string {
	return "<system version=\"1\">\n" +
		"<cpu numaid=\"0\" affinity=\"0000ffff\" arch=\"x86_64\" vendor=\"GenuineIntel\" familyid=\"6\" modelid=\"85\">\n" +
		body + "\n</cpu>\n</system>\n"
}

// DiscoverAt discovers the machine whose sysfs is at root, failing the
// test when discovery fails or the machine is invalid.
func DiscoverAt(t testing.TB, root string) *topology.Machine {
	t.Helper()
	m, err := topology.Discover(context.Background(), topology.DiscoverOptions{Root: root})
	if err != nil {
		t.Fatalf("Discover(%s): %v", root, err)
	}
	if err := m.Validate(); err != nil {
		t.Fatalf("discovered machine invalid: %v", err)
	}
	return m
}

// AssertSound checks what every machine must satisfy whatever built it:
// the model's invariants and a finite positive capacity on every link.
func AssertSound(t testing.TB, m *topology.Machine) {
	t.Helper()
	if err := m.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	for i, l := range m.Links {
		if !(l.GBps > 0) || math.IsInf(l.GBps, 0) {
			t.Errorf("links[%d] %s->%s (%s): GBps %v, want > 0", i, l.From, l.To, l.Kind, l.GBps)
		}
	}
}

// HasNote reports whether one of m's notes contains s.
func HasNote(m *topology.Machine, s string) bool {
	for _, n := range m.Notes {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}
