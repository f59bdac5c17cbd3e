package nvsmi_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gnnplan/gnnplan/topology"
	"github.com/gnnplan/gnnplan/topology/importer"
	"github.com/gnnplan/gnnplan/topology/internal/sysfstest"
	"github.com/gnnplan/gnnplan/topology/nvsmi"
)

// smiCapture writes an `nvidia-smi topo -m` matrix as a recent driver
// prints it (tab-separated cells, CPU and NUMA affinity on GPU rows, the
// legends after it) for devices whose path types rel gives.
func smiCapture(names []string, rel func(i, j int) string, cpus, numa func(i int) string, legend map[string]string) string {
	var b strings.Builder
	b.WriteString("\t")
	for _, n := range names {
		b.WriteString(n + "\t")
	}
	b.WriteString("CPU Affinity\tNUMA Affinity\tGPU NUMA ID\n")
	for i, n := range names {
		b.WriteString(n)
		for j := range names {
			b.WriteString("\t " + rel(i, j))
		}
		if strings.HasPrefix(n, "GPU") {
			fmt.Fprintf(&b, "\t%s\t%s\t\tN/A", cpus(i), numa(i))
		}
		b.WriteString("\n")
	}
	b.WriteString("\nLegend:\n\n  X    = Self\n  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)\n")
	b.WriteString("  PIX  = Connection traversing at most a single PCIe bridge\n  NV#  = Connection traversing a bonded set of # NVLinks\n")
	if len(legend) > 0 {
		b.WriteString("\nNIC Legend:\n\n")
		for i := 0; i < len(legend); i++ {
			k := fmt.Sprintf("NIC%d", i)
			fmt.Fprintf(&b, "  %s: %s\n", k, legend[k])
		}
	}
	return b.String()
}

// ndv4Capture is the matrix an Azure ND A100 v4 prints: 8 A100s joined by
// NVSwitches (NV12 between every pair), 8 InfiniBand NICs, 4 NUMA nodes,
// each with one PCIe switch holding 2 GPUs and 2 NICs. The grouping and
// NUMA numbering are those of azure-ndv4-topo.xml in ../shared (GPUs and
// NICs numbered in bus order: GPUs 0-1 and NICs 0-1 on NUMA 1, 2-3 on 0,
// 4-5 on 3, 6-7 on 2).
func ndv4Capture() string {
	var names []string
	for i := range 8 {
		names = append(names, fmt.Sprintf("GPU%d", i))
	}
	for i := range 8 {
		names = append(names, fmt.Sprintf("NIC%d", i))
	}
	numaOf := []int{1, 1, 0, 0, 3, 3, 2, 2}
	group := func(i int) int { return i % 8 / 2 } // GPUs 2k,2k+1 and NICs 2k,2k+1 share a switch
	gpu := func(i int) bool { return i < 8 }
	rel := func(i, j int) string {
		switch {
		case i == j:
			return "X"
		case gpu(i) && gpu(j):
			return "NV12"
		case group(i) == group(j):
			return "PIX"
		}
		return "SYS"
	}
	cpus := func(i int) string { n := numaOf[i]; return fmt.Sprintf("%d-%d", 24*n, 24*n+23) }
	numa := func(i int) string { return fmt.Sprint(numaOf[i]) }
	legend := map[string]string{}
	for i := range 8 {
		legend[fmt.Sprintf("NIC%d", i)] = fmt.Sprintf("mlx5_ib%d", i)
	}
	return smiCapture(names, rel, cpus, numa, legend)
}

// switchGroups describes how a machine groups GPUs and NICs under shared
// PCIe switches: for each switch holding any, "numa N: G gpus, N nics"
// (the nearest switch above each device), sorted.
func switchGroups(t *testing.T, m *topology.Machine) []string {
	t.Helper()
	count := map[string][2]int{}
	numaOf := map[string]int{}
	for _, n := range m.Nodes {
		if n.Kind != topology.KindGPU && n.Kind != topology.KindNIC {
			continue
		}
		sw := ""
		for p := m.Node(n.Parent); p != nil; p = m.Node(p.Parent) {
			if p.Kind == topology.KindSwitch && sw == "" {
				sw = p.ID
			}
			if p.Kind == topology.KindSocket && p.NUMANode != nil {
				numaOf[sw] = *p.NUMANode
			}
		}
		if sw == "" {
			continue
		}
		c := count[sw]
		if n.Kind == topology.KindGPU {
			c[0]++
		} else {
			c[1]++
		}
		count[sw] = c
	}
	var out []string
	for sw, c := range count {
		out = append(out, fmt.Sprintf("numa %d: %d gpus, %d nics", numaOf[sw], c[0], c[1]))
	}
	slices.Sort(out)
	return out
}

// TestSMITopoMatchesNCCLXML: the matrix of an 8-GPU, 8-NIC server imports
// to the GPUs, NICs, NUMA nodes and switch grouping the NCCL topology file
// of the same machine type gives.
func TestSMITopoMatchesNCCLXML(t *testing.T) {
	smi, err := importer.ImportBytes("ndv4-smi.txt", []byte(ndv4Capture()))
	if err != nil {
		t.Fatal(err)
	}
	xml, err := importer.Import(filepath.Join(sysfstest.FixtureDir, "azure-ndv4-topo.xml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []topology.Kind{topology.KindGPU, topology.KindNIC, topology.KindSocket} {
		if a, b := smi.Count(k), xml.Count(k); a != b {
			t.Errorf("%s: %d from the matrix, %d from the NCCL file", k, a, b)
		}
	}
	if a, b := switchGroups(t, smi), switchGroups(t, xml); !slices.Equal(a, b) {
		t.Errorf("switch grouping:\n matrix %v\n NCCL   %v", a, b)
	}
	// NIC names come from the legend; NVLinks through one fabric.
	if n := smi.Node("nic3"); n == nil || n.Name != "mlx5_ib3" {
		t.Errorf("nic3 = %+v, want the legend's name mlx5_ib3", n)
	}
	for _, l := range smi.Links {
		if l.Kind == topology.LinkNVLink && (l.Count != 12 || smi.Node(l.To).Kind != topology.KindNVSwitch) {
			t.Errorf("NVLink %s-%s x%d: want 12 links to the NVSwitch fabric", l.From, l.To, l.Count)
		}
	}
}

// smiRealCapture is a real p4d.24xlarge capture in ../shared. Its source
// states no licence, so it is read from there (test input only), not
// copied into the repository.
var smiRealCapture = filepath.Join("..", "..", "..", "shared", "fixtures", "topology", "aws-p4d.24xlarge-nvidia-smi-topo.txt")

// TestSMITopoRealCapture: a real p4d.24xlarge capture (8 A100 over
// NVSwitch, 2 NUMA nodes, no NIC columns) gives 8 GPUs, 4 per NUMA node as
// the NCCL file of the same instance type has them, each with 12 NVLinks.
func TestSMITopoRealCapture(t *testing.T) {
	if _, err := os.Stat(smiRealCapture); err != nil {
		t.Skipf("../shared not present: %v", err)
	}
	m, err := importer.Import(smiRealCapture)
	if err != nil {
		t.Fatal(err)
	}
	perNUMA := func(m *topology.Machine) map[int]int {
		out := map[int]int{}
		for _, n := range m.Nodes {
			if n.Kind != topology.KindGPU {
				continue
			}
			for p := m.Node(n.Parent); p != nil; p = m.Node(p.Parent) {
				if p.Kind == topology.KindSocket && p.NUMANode != nil {
					out[*p.NUMANode]++
				}
			}
		}
		return out
	}
	if got := perNUMA(m); got[0] != 4 || got[1] != 4 || len(got) != 2 {
		t.Errorf("GPUs per NUMA node %v, want 4 and 4", got)
	}
	xml, err := importer.Import(filepath.Join(sysfstest.FixtureDir, "aws-p4d-24xl-topo.xml"))
	if err != nil {
		t.Fatal(err)
	}
	if a, b := fmt.Sprint(perNUMA(m)), fmt.Sprint(perNUMA(xml)); a != b {
		t.Errorf("GPUs per NUMA node: matrix %s, NCCL file %s", a, b)
	}
	links := 0
	for _, l := range m.Links {
		if l.Kind == topology.LinkNVLink {
			links++
			if l.Count != 12 {
				t.Errorf("%s-%s: %d NVLinks, want 12", l.From, l.To, l.Count)
			}
		}
	}
	if links != 8 {
		t.Errorf("%d NVLink links, want one per GPU to the fabric", links)
	}
	if !strings.Contains(strings.Join(m.Notes, "\n"), "PCIe generations and widths are not in the matrix") {
		t.Errorf("notes do not say the PCIe links are assumed: %v", m.Notes)
	}
}

// TestSMITopoSwitchTrees: PIX, PXB, PHB and NODE put devices under one
// switch, one switch tree, one host bridge and one NUMA node; direct NVLinks
// (a GPU with few enough links) stay direct.
func TestSMITopoSwitchTrees(t *testing.T) {
	names := []string{"GPU0", "GPU1", "GPU2", "GPU3", "NIC0", "NIC1"}
	// GPU0+NIC0 on one switch, GPU1 on a sibling switch of the same tree
	// (PXB), GPU2 on another host bridge of NUMA 0 (NODE), GPU3+NIC1 on
	// NUMA 1 through the host bridge (PHB).
	table := [][]string{
		{"X", "PXB", "NODE", "SYS", "PIX", "SYS"},
		{"PXB", "X", "NODE", "SYS", "PXB", "SYS"},
		{"NODE", "NODE", "X", "SYS", "NODE", "SYS"},
		{"SYS", "SYS", "SYS", "X", "SYS", "PHB"},
		{"PIX", "PXB", "NODE", "SYS", "X", "SYS"},
		{"SYS", "SYS", "SYS", "PHB", "SYS", "X"},
	}
	rel := func(i, j int) string {
		if i < 4 && j < 4 && i != j && (i < 2) == (j < 2) {
			return "NV4" // GPU0-GPU1 and GPU2-GPU3 paired by 4 NVLinks
		}
		return table[i][j]
	}
	numa := func(i int) string { return []string{"0", "0", "0", "1"}[i] }
	cpus := func(i int) string { return []string{"0-15", "0-15", "0-15", "16-31"}[i] }
	m, err := importer.ImportBytes("box.txt", []byte(smiCapture(names, rel, cpus, numa, map[string]string{"NIC0": "mlx5_0", "NIC1": "mlx5_1"})))
	if err != nil {
		t.Fatal(err)
	}
	parent := func(id string) *topology.Node { return m.Node(m.Node(id).Parent) }
	if parent("gpu0").ID != parent("nic0").ID || parent("gpu0").Kind != topology.KindSwitch {
		t.Errorf("gpu0 under %s, nic0 under %s: want one switch (PIX)", parent("gpu0").ID, parent("nic0").ID)
	}
	if parent("gpu1").ID == parent("gpu0").ID || parent("gpu1").ID != parent(parent("gpu0").ID).ID {
		t.Errorf("gpu1 should sit in gpu0's switch tree, not on its switch (PXB)")
	}
	if parent("gpu2").Kind != topology.KindRootPort || parent("gpu2").Parent != parent(parent(parent("gpu0").ID).ID).Parent {
		t.Errorf("gpu2 should be on its own host bridge of NUMA 0 (NODE)")
	}
	if parent("gpu3").ID != parent("nic1").ID || parent("gpu3").Kind != topology.KindRootPort {
		t.Errorf("gpu3 and nic1 should share a host bridge (PHB)")
	}
	direct := 0
	for _, l := range m.Links {
		if l.Kind == topology.LinkNVLink {
			if m.Node(l.To).Kind != topology.KindGPU || l.Count != 4 {
				t.Errorf("NVLink %s-%s x%d: want direct GPU pairs of 4", l.From, l.To, l.Count)
			}
			direct++
		}
	}
	if direct != 2 {
		t.Errorf("%d NVLink pairs, want 2", direct)
	}
}

// TestSMITopoFormats: ANSI underlines (nvidia-smi on a terminal), CRLF line
// ends, a shell prompt before the matrix, SOC for SYS (old drivers), NIC
// columns named by device (no legend) and cells run together (many NIC
// columns) all import.
func TestSMITopoFormats(t *testing.T) {
	glued := strings.ReplaceAll(ndv4Capture(), "SYS\t SYS", "SYSSYS")
	if !strings.Contains(glued, "SYSSYS") {
		t.Fatal("no cells to run together")
	}
	a, err := importer.ImportBytes("glued.txt", []byte(glued))
	if err != nil {
		t.Fatalf("cells run together: %v", err)
	}
	b, _ := importer.ImportBytes("ndv4.txt", []byte(ndv4Capture()))
	if len(a.Nodes) != len(b.Nodes) || len(a.Links) != len(b.Links) {
		t.Errorf("cells run together import to %d nodes, %d links; apart to %d, %d", len(a.Nodes), len(a.Links), len(b.Nodes), len(b.Links))
	}
	capture := "$ nvidia-smi topo -m\r\n" +
		"\t\x1b[4mGPU0\tGPU1\tmlx5_0\tCPU Affinity\tNUMA Affinity\x1b[0m\r\n" +
		"GPU0\t X \tSOC\tPIX\t0-7\t0\r\n" +
		"GPU1\tSOC\t X \tSOC\t8-15\t1\r\n" +
		"mlx5_0\tPIX\tSOC\t X \t\r\n"
	m, err := importer.ImportBytes("old.txt", []byte(capture))
	if err != nil {
		t.Fatal(err)
	}
	if m.Count(topology.KindGPU) != 2 || m.Count(topology.KindNIC) != 1 || m.Count(topology.KindSocket) != 2 {
		t.Fatalf("%d GPUs, %d NICs, %d sockets; want 2, 1, 2", m.Count(topology.KindGPU), m.Count(topology.KindNIC), m.Count(topology.KindSocket))
	}
	if nic := m.Node("nic0"); nic.Name != "mlx5_0" || m.Node(nic.Parent).ID != m.Node("gpu0").Parent {
		t.Errorf("nic0 %+v should be mlx5_0 beside gpu0", nic)
	}
}

// TestSMITopoBadCaptures: damaged or foreign text exits 2 with one line
// naming what is wrong.
func TestSMITopoBadCaptures(t *testing.T) {
	good := ndv4Capture()
	lines := strings.Split(good, "\n")
	cases := []struct {
		name, data, want string
	}{
		{"truncated: rows missing", strings.Join(lines[:6], "\n"), "no row for device"},
		{"truncated: a row cut short", strings.Join(lines[:3], "\n") + "\n" + lines[3][:20] + "\n" + strings.Join(lines[4:], "\n"), "truncated capture"},
		{"a cell that is no path type", strings.Replace(good, "SYS\t SYS", "SYS\t SIS", 1), "is not a path type"},
		{"not symmetric", strings.Replace(good, "GPU1\t NV12", "GPU1\t PIX", 1), "symmetric"},
		{"two captures pasted", good + good, "a second matrix"},
		{"X off the diagonal", strings.Replace(good, "GPU0\t X\t NV12", "GPU0\t X\t X", 1), "diagonal"},
		{"a row for another machine's device", strings.Replace(good, "\nNIC7", "\nNIC9", 1), "header does not list"},
		{"another tool's output", "available: 2 nodes (0-1)\nnode 0 cpus: 0 1 2 3\nnode 0 size: 128295 MB\n", "nvidia-smi topo -m"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := importer.ImportBytes("capture.txt", []byte(tc.data))
			var ie *topology.InputError
			if !errors.As(err, &ie) {
				t.Fatalf("err = %v, want an InputError", err)
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.want) || strings.Contains(msg, "\n") || !strings.Contains(msg, "capture.txt") {
				t.Errorf("error %q: want one line naming the file and saying %q", msg, tc.want)
			}
		})
	}
}

func FuzzSMITopo(f *testing.F) {
	f.Add([]byte(ndv4Capture()))
	if data, err := os.ReadFile(smiRealCapture); err == nil {
		f.Add(data)
	}
	f.Add([]byte("\tGPU0\tNIC0\nGPU0\t X \tPHB\t0\t0\nNIC0\tPHB\t X\n\nNIC Legend:\n  NIC0: mlx5_0\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := nvsmi.Parse(context.Background(), "fuzz.txt", data)
		if err != nil {
			return
		}
		if err := m.Validate(); err != nil {
			t.Fatalf("imported machine does not validate: %v", err)
		}
	})
}

// The Puget workstation's lspci captures (topology/testdata/topology).
var (
	pugetTV  = filepath.Join(sysfstest.FixtureDir, "stelline-puget-lspci-tv.txt")
	pugetVVV = filepath.Join(sysfstest.FixtureDir, "stelline-puget-lspci-vvv.txt")
)

// TestLspciWithSMITopo: the Puget's lspci captures with its nvidia-smi
// matrix: the ConnectX-7 functions get their RDMA names, the paths agree
// (GPUs PHB, the two NIC ports PIX, GPU to NIC NODE), so no note says the
// captures disagree; a matrix with more GPUs than lspci shows is refused.
func TestLspciWithSMITopo(t *testing.T) {
	smi := filepath.Join(sysfstest.FixtureDir, "stelline-puget-nvidia-smi-topo.txt")
	m, err := importer.ImportFilesContext(context.Background(), []string{pugetTV, pugetVVV, smi})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, n := range m.Nodes {
		if n.Kind == topology.KindNIC && strings.HasPrefix(n.Name, "mlx5_") {
			names[strings.Fields(n.Name)[0]] = true
			if !strings.Contains(n.Name, "ConnectX-7") {
				t.Errorf("%s named %q: want the RDMA name on the ConnectX-7 function", n.ID, n.Name)
			}
		}
	}
	if !names["mlx5_0"] || !names["mlx5_1"] {
		t.Errorf("RDMA names %v, want mlx5_0 and mlx5_1", names)
	}
	notes := strings.Join(m.Notes, "\n")
	if !strings.Contains(notes, "combined with the nvidia-smi matrix") || strings.Contains(notes, "disagree") {
		t.Errorf("notes:\n%s", notes)
	}
	// An 8-GPU matrix with this workstation's lspci: two machines.
	_, err = importer.ImportFilesContext(context.Background(), []string{pugetTV, filepath.Join(t.TempDir(), "x")})
	if err == nil {
		t.Error("a missing file combined without error")
	}
	dir := t.TempDir()
	eight := filepath.Join(dir, "ndv4.txt")
	if err := os.WriteFile(eight, []byte(ndv4Capture()), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = importer.ImportFilesContext(context.Background(), []string{pugetTV, eight})
	if err == nil || !strings.Contains(err.Error(), "two machines") {
		t.Errorf("err = %v, want the GPU counts refused as two machines", err)
	}
}
