package nccl

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gnnplan/gnnplan/topology"
	"github.com/gnnplan/gnnplan/topology/internal/sysfstest"
	"github.com/gnnplan/gnnplan/topology/internal/topotest"
)

// ncclFixtureDir is where the fixture copies live (topology/testdata/topology).
var ncclFixtureDir = sysfstest.FixtureDir

// ncclLoadFixture parses one fixture, skipping the test when the shared
// fixtures are not checked out next to the repository.
func ncclLoadFixture(t *testing.T, name string) *topology.Machine {
	t.Helper()
	path := filepath.Join(ncclFixtureDir, name)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		t.Skipf("fixture %s not found (the shared fixtures live in %s, next to the repository)", name, ncclFixtureDir)
	}
	if err != nil {
		t.Fatal(err)
	}
	m, err := parseNCCLXML(path, data)
	if err != nil {
		t.Fatalf("parseNCCLXML(%s): %v", name, err)
	}
	return m
}

func TestParseNCCLXMLFixtureCounts(t *testing.T) {
	tests := []struct {
		name    string
		file    string
		gpus    int
		nics    int
		sws     int
		sockets int
		fabric  int // NVLink + xGMI, by link count
		nvsw    int
		bridges int
	}{
		{
			// SOURCES.md: 8x A100, 4 EFA, 2 sockets, 4 switches of 2 GPU + 1 EFA
			// (placeholder ffff bridges with 3 children each). The file records
			// no NVLink, so none is imported.
			name: "p4d flattens each PCIe switch to a placeholder bridge with two GPUs and an EFA",
			file: "aws-p4d-24xl-topo.xml", gpus: 8, nics: 4, sws: 4, sockets: 2, fabric: 0,
		},
		{
			// SOURCES.md: 8x A100 + 8 IB NICs, 4 NUMA, one virtual switch per NUMA
			// (a bridge without ids and 4 children). No NVLink elements in the file.
			name: "ndv4 has one virtual switch per NUMA domain and no PCI ids",
			file: "azure-ndv4-topo.xml", gpus: 8, nics: 8, sws: 4, sockets: 4, fabric: 0,
		},
		{
			// SOURCES.md: 8 H100, 8 dual-port CX-7 (one <nic> per pci, 16 <net> ports),
			// 2 sockets, per GPU a PEX89000 upstream switch + 2 downstream switches
			// = 3 x 8 = 24. NVLink: each GPU lists counts 5+5+4+4 = 18 to 4 NVSwitch
			// bus ids (1a, 1b, 1c, 1d), 8 x 18 = 144.
			name: "OCI H100 keeps three-level PEX89000 switches and NVLinks to four NVSwitches",
			file: "oci-H100-topology.xml", gpus: 8, nics: 8, sws: 24, sockets: 2, fabric: 144, nvsw: 4,
		},
		{
			// SOURCES.md: 8x MI100, 2 NUMA, 1 NIC, 6 xGMI per GPU. Every GPU's
			// bridge has no ids and one child (a root port), so no switches. The
			// xGMI lists are symmetric (each GPU misses exactly the GPU that misses
			// it), so the 8 x 6 = 48 listings are 24 links of count 1.
			name: "8p6l lists each xGMI link under both GPUs, which makes one link per pair",
			file: "rccl-topo_8p6l.xml", gpus: 8, nics: 1, sws: 0, sockets: 2, fabric: 24, bridges: 8,
		},
		{
			// SOURCES.md: 8x MI50, 1 socket, PCIe only, 2 switch trees of 4 GPUs,
			// 1 IB NIC. Each tree root has 5 (resp. 4) bridge children; those
			// downstream-port bridges have one child each and no ids.
			name: "8p_pcie counts two switch trees and keeps their downstream ports as bridges",
			file: "rccl-topo_8p_pcie.xml", gpus: 8, nics: 1, sws: 2, sockets: 1, fabric: 0, bridges: 8,
		},
		{
			// SOURCES.md: 8x MI100, 4 NUMA, 4 CX-6, Switchtec two-level switches:
			// per NUMA one 11f8:4000 upstream + two 11f8:4000 below it = 3 x 4 = 12;
			// the 1002:14a0 bridge inside each MI100 package is a bridge (8).
			// xGMI: two groups of 4 GPUs, fully connected inside a group and listed
			// on both ends: 2 x 6 pairs = 12 links of count 1.
			name: "rome 4n keeps Switchtec levels as switches and MI100 package bridges as bridges",
			file: "rccl-topo_8p_rome_4n_1.xml", gpus: 8, nics: 4, sws: 12, sockets: 4, fabric: 12, bridges: 8,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := ncclLoadFixture(t, tc.file)
			got := []struct {
				what      string
				got, want int
			}{
				{"GPUs", m.Count(topology.KindGPU), tc.gpus},
				{"NICs", m.Count(topology.KindNIC), tc.nics},
				{"switches", m.Count(topology.KindSwitch), tc.sws},
				{"sockets", m.Count(topology.KindSocket), tc.sockets},
				{"NVLink+xGMI links", m.CountLinks(topology.LinkNVLink) + m.CountLinks(topology.LinkXGMI), tc.fabric},
				{"NVSwitches", m.Count(topology.KindNVSwitch), tc.nvsw},
				{"bridges", m.Count(topology.KindBridge), tc.bridges},
				{"root complexes", m.Count(topology.KindRootPort), tc.sockets},
			}
			for _, g := range got {
				if g.got != g.want {
					t.Errorf("%s: got %d, want %d", g.what, g.got, g.want)
				}
			}
			topotest.AssertSound(t, m)
			for _, n := range m.NodesOfKind(topology.KindGPU) {
				if m.Socket(n.ID) == nil {
					t.Errorf("%s (%s) has no socket above it", n.ID, n.PCIAddress)
				}
			}
		})
	}
}

func TestParseNCCLXMLLinkCapacities(t *testing.T) {
	t.Run("p4d GPUs sit on Gen3 x16 links of 12 GB/s", func(t *testing.T) {
		m := ncclLoadFixture(t, "aws-p4d-24xl-topo.xml")
		for _, g := range m.NodesOfKind(topology.KindGPU) {
			l := m.UplinkOf(g.ID)
			if l == nil {
				t.Fatalf("%s has no uplink", g.ID)
			}
			if l.PCIeGen != 3 || l.Lanes != 16 || l.GBps != 12 || l.Source != topology.SourceXML {
				t.Errorf("%s uplink: Gen%d x%d %v GB/s source %q, want Gen3 x16 12 GB/s from xml", g.ID, l.PCIeGen, l.Lanes, l.GBps, l.Source)
			}
		}
	})
	t.Run("OCI GPU-to-NVSwitch links carry count times 20.6 GB/s", func(t *testing.T) {
		m := ncclLoadFixture(t, "oci-H100-topology.xml")
		n := 0
		for _, l := range m.Links {
			if l.Kind != topology.LinkNVLink {
				continue
			}
			n++
			if want := float64(l.Count) * 20.6; math.Abs(l.GBps-want) > 1e-9 {
				t.Errorf("%s->%s: %v GB/s for count %d, want %v", l.From, l.To, l.GBps, l.Count, want)
			}
			if from, to := m.Node(l.From), m.Node(l.To); from.Kind != topology.KindGPU || to.Kind != topology.KindNVSwitch {
				t.Errorf("%s->%s joins %s to %s, want gpu to nvswitch", l.From, l.To, from.Kind, to.Kind)
			}
		}
		if n != 32 {
			t.Errorf("got %d NVLink links, want 32 (8 GPUs x 4 NVSwitches)", n)
		}
	})
	t.Run("OCI upstream links keep their reported 5.0 GT/s and say so in a note", func(t *testing.T) {
		m := ncclLoadFixture(t, "oci-H100-topology.xml")
		for _, rp := range m.NodesOfKind(topology.KindRootPort) {
			for _, id := range m.Children(rp.ID) {
				l := m.UplinkOf(id)
				if l.PCIeGen != 2 || l.GBps != topology.PCIeGBps(2, 16) {
					t.Errorf("%s uplink: Gen%d %v GB/s, want the reported Gen2 x16 (%v GB/s)", id, l.PCIeGen, l.GBps, topology.PCIeGBps(2, 16))
				}
			}
		}
		if !ncclHasNote(m, "downtrained") {
			t.Errorf("no note about downtrained links; notes: %q", m.Notes)
		}
	})
	// These are MI100s (gcn 908): RCCL gives their xGMI links 24 GB/s
	// (VEGA_XGMI_WIDTH); 48 is the MI300 rate (issue 13).
	t.Run("rome MI100 xGMI links carry count times 24 GB/s", func(t *testing.T) {
		m := ncclLoadFixture(t, "rccl-topo_8p_rome_4n_1.xml")
		for _, l := range m.Links {
			if l.Kind == topology.LinkXGMI && l.GBps != float64(l.Count)*24 {
				t.Errorf("%s->%s: %v GB/s for count %d", l.From, l.To, l.GBps, l.Count)
			}
		}
	})
}

func TestParseNCCLXMLSockets(t *testing.T) {
	tests := []struct {
		name      string
		file      string
		model     string
		cpuList   string
		interGBps float64
	}{
		{"Intel family 6 model 85 is Skylake-class with a 10 GB/s UPI",
			"aws-p4d-24xl-topo.xml", "GenuineIntel family 6 model 85 (Skylake/Cascade Lake)", "0-23,48-71", 10},
		{"Sapphire Rapids gets 22 GB/s UPI",
			"oci-H100-topology.xml", "GenuineIntel family 6 model 143 (Sapphire Rapids)", "0-55,112-167", 22},
		// NCCL writes AMD family 0x17 as 143 (0xF plus 0x8 shifted left by 4).
		{"NCCL's AMD family 143 is read as Zen2",
			"rccl-topo_8p_rome_4n_1.xml", "AuthenticAMD family 23 model 49 (Zen1/Zen2)", "16-31", 16},
		{"a hand-written AMD family 23 is Zen2 as well",
			"azure-ndv4-topo.xml", "AuthenticAMD family 23 model 49 (Zen1/Zen2)", "0-23", 16},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := ncclLoadFixture(t, tc.file)
			s := m.NodesOfKind(topology.KindSocket)[0]
			if s.CPUModel != tc.model {
				t.Errorf("CPUModel %q, want %q", s.CPUModel, tc.model)
			}
			if s.CPUList != tc.cpuList {
				t.Errorf("CPUList %q, want %q", s.CPUList, tc.cpuList)
			}
			if s.NUMANode == nil {
				t.Errorf("NUMANode is nil")
			}
			for _, l := range m.Links {
				if l.Kind == topology.LinkInterSocket && l.GBps != tc.interGBps {
					t.Errorf("inter-socket %s-%s: %v GB/s, want %v", l.From, l.To, l.GBps, tc.interGBps)
				}
			}
		})
	}
}

func TestParseNCCLXMLRefusesChannelGraph(t *testing.T) {
	inline := []byte("<graphs version=\"1\">\n  <graph id=\"0\" pattern=\"4\"><channel><gpu dev=\"0\"/></channel></graph>\n</graphs>\n")
	inputs := map[string][]byte{"inline graph": inline}
	path := filepath.Join(ncclFixtureDir, "azure-ncv4-graph.xml")
	if data, err := os.ReadFile(path); err == nil {
		inputs[path] = data
	}
	for p, data := range inputs {
		_, err := parseNCCLXML(p, data)
		if err == nil {
			t.Fatalf("%s: parsed a channel graph as a topology", p)
		}
		if !topology.IsBadInput(err) || !strings.Contains(err.Error(), "channel graph") || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: got %v (bad input %v), want a bad-input error naming the file and saying \"channel graph\"", p, err, topology.IsBadInput(err))
		}
	}
}

func TestParseNCCLXMLBadInput(t *testing.T) {
	nvlinkGPU := func(attrs string) string {
		return topotest.NCCLDoc(`<pci busid="0000:01:00.0" class="0x030200" link_speed="8 GT/s" link_width="16">
<gpu dev="0" sm="80"><nvlink ` + attrs + `/></gpu>
</pci>`)
	}
	tests := []struct {
		name      string
		in        string
		wantField string
		wantLine  int // 0: not checked
		wantMsg   string
	}{
		{name: "empty input has no element", in: "", wantMsg: "no XML element"},
		{name: "plain text is not XML", in: "not an xml file\n", wantLine: 1, wantMsg: "outside the root element"},
		{name: "binary garbage is not well-formed", in: "\x00\x01\x02<<>>", wantMsg: "not well-formed"},
		{name: "file cut inside a start tag points at its line",
			in: "<system version=\"1\">\n<cpu numaid=\"0\">\n<pci busid=\"0000:01:00.0\" class=\"0x0302", wantLine: 3, wantMsg: "not well-formed"},
		{name: "file cut after a start tag is truncated", in: "<system version=\"1\">\n<cpu numaid=\"0\">\n", wantMsg: "not well-formed"},
		{name: "mismatched end tag is not well-formed", in: "<system>\n<cpu>\n</pci>\n</system>", wantLine: 3, wantMsg: "not well-formed"},
		{name: "hwloc root is not a topology", in: "<?xml version=\"1.0\"?>\n<topology version=\"2.0\"/>", wantField: "topology", wantLine: 2, wantMsg: "want <system>"},
		{name: "second root element", in: "<system><cpu/></system>\n<system/>", wantField: "system", wantLine: 2, wantMsg: "second root"},
		{name: "text after the root", in: "<system><cpu/></system>\ntrailing", wantLine: 1, wantMsg: "outside the root"},
		{name: "system without cpu", in: "<system version=\"1\">\n</system>", wantField: "system", wantLine: 1, wantMsg: "no <cpu>"},
		{name: "non-hex vendor id", in: topotest.NCCLDoc(`<pci busid="0000:01:00.0" class="0x030200" vendor="0xzz" device="0x20b0"/>`),
			wantField: "pci.vendor", wantLine: 3, wantMsg: "hex PCI id"},
		{name: "device id wider than 16 bits", in: topotest.NCCLDoc(`<pci busid="0000:01:00.0" class="0x030200" vendor="0x10de" device="0x120b0"/>`),
			wantField: "pci.device", wantLine: 3, wantMsg: "hex PCI id"},
		{name: "non-hex class", in: topotest.NCCLDoc(`<pci busid="0000:01:00.0" class="display"/>`), wantField: "pci.class", wantLine: 3, wantMsg: "PCI class"},
		{name: "unparsable link_speed", in: topotest.NCCLDoc("\n<pci busid=\"0000:01:00.0\" link_speed=\"fast\" link_width=\"16\"/>"),
			wantField: "pci.link_speed", wantLine: 4, wantMsg: "GT/s"},
		{name: "link_speed in the wrong unit", in: topotest.NCCLDoc(`<pci busid="0000:01:00.0" link_speed="8 Gb/s"/>`), wantField: "pci.link_speed", wantLine: 3, wantMsg: "GT/s"},
		{name: "link_width beyond x32", in: topotest.NCCLDoc(`<pci busid="0000:01:00.0" link_width="x64"/>`), wantField: "pci.link_width", wantLine: 3, wantMsg: "lane count"},
		{name: "non-numeric numaid", in: "<system>\n<cpu numaid=\"zero\"/>\n</system>", wantField: "cpu.numaid", wantLine: 2, wantMsg: "NUMA node"},
		{name: "non-numeric familyid", in: "<system>\n<cpu numaid=\"0\" familyid=\"six\"/>\n</system>", wantField: "cpu.familyid", wantLine: 2, wantMsg: "decimal"},
		{name: "non-hex affinity", in: "<system>\n<cpu numaid=\"0\" affinity=\"ffzz\"/>\n</system>", wantField: "cpu.affinity", wantLine: 2, wantMsg: "CPU mask"},
		{name: "non-numeric sm", in: topotest.NCCLDoc(`<pci busid="0000:01:00.0"><gpu sm="ampere"/></pci>`), wantField: "gpu.sm", wantLine: 3, wantMsg: "decimal"},
		{name: "nvlink without target", in: nvlinkGPU(`count="4"`), wantField: "nvlink.target", wantLine: 4, wantMsg: "bus id"},
		{name: "nvlink with zero count", in: nvlinkGPU(`target="0000:1c:00.0" count="0"`), wantField: "nvlink.count", wantLine: 4, wantMsg: "link count"},
		{name: "nvlink with non-hex tclass", in: nvlinkGPU(`target="0000:1c:00.0" count="2" tclass="switch"`), wantField: "nvlink.tclass", wantLine: 4, wantMsg: "PCI class"},
		{name: "duplicate bus id", in: topotest.NCCLDoc("<pci busid=\"0000:01:00.0\"/>\n<pci busid=\"0000:01:00.0\"/>"), wantField: "pci.busid", wantLine: 4, wantMsg: "line 3"},
		{name: "absurd nesting depth", in: "<system><cpu>" + strings.Repeat("<pci>", ncclMaxDepth) + strings.Repeat("</pci>", ncclMaxDepth) + "</cpu></system>",
			wantField: "pci", wantMsg: "nested more than"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			const path = "bad/topo.xml"
			m, err := parseNCCLXML(path, []byte(tc.in))
			if err == nil {
				t.Fatalf("no error; got a machine with %d nodes", len(m.Nodes))
			}
			var ie *topology.InputError
			if !errors.As(err, &ie) || !topology.IsBadInput(err) {
				t.Fatalf("got %T %v, want a bad-input *InputError", err, err)
			}
			if ie.Path != path || !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name the path %q", err, path)
			}
			if tc.wantField != "" && ie.Field != tc.wantField {
				t.Errorf("Field %q, want %q (error %q)", ie.Field, tc.wantField, err)
			}
			if tc.wantLine != 0 && ie.Line != tc.wantLine {
				t.Errorf("Line %d, want %d (error %q)", ie.Line, tc.wantLine, err)
			}
			if !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("error %q does not say %q", err, tc.wantMsg)
			}
		})
	}
}

func TestParseNCCLXMLTruncatedFixtures(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(ncclFixtureDir, "*.xml"))
	if len(files) == 0 {
		t.Skipf("no fixtures in %s (the shared fixtures live next to the repository)", ncclFixtureDir)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		// Cutting inside the root element leaves at least one element open.
		for _, cut := range []int{len(data) / 3, len(data) / 2, len(data) - 12} {
			_, err := parseNCCLXML(f, data[:cut])
			if err == nil || !topology.IsBadInput(err) || !strings.Contains(err.Error(), f) {
				t.Errorf("%s cut at %d: got %v, want a bad-input error naming the file", filepath.Base(f), cut, err)
			}
		}
	}
}

func TestParseNCCLXMLFabricLinks(t *testing.T) {
	gpu := func(bus, links string) string {
		return `<pci busid="` + bus + `" class="0x030200" vendor="0x10de" device="0x20b0" link_speed="16 GT/s" link_width="16"><gpu dev="0" sm="80">` + links + `</gpu></pci>`
	}
	t.Run("a GPU pair listed on both ends with different counts becomes one link with the larger count", func(t *testing.T) {
		in := topotest.NCCLDoc(gpu("0000:01:00.0", `<nvlink target="0000:02:00.0" count="2" tclass="0x030200"/>`) + "\n" +
			gpu("0000:02:00.0", `<nvlink target="0000:01:00.0" count="3" tclass="0x030200"/>`))
		m, err := parseNCCLXML("pair.xml", []byte(in))
		if err != nil {
			t.Fatal(err)
		}
		var nv []topology.Link
		for _, l := range m.Links {
			if l.Kind == topology.LinkNVLink {
				nv = append(nv, l)
			}
		}
		if len(nv) != 1 || nv[0].Count != 3 || nv[0].GBps != 60 {
			t.Fatalf("NVLinks %+v, want one link of count 3 at 60 GB/s", nv)
		}
		if !ncclHasNote(m, "count 2 on one end and 3 on the other") {
			t.Errorf("no note about the disagreeing counts; notes: %q", m.Notes)
		}
	})
	t.Run("a target that is not a GPU of the file is an NVSwitch without a parent", func(t *testing.T) {
		in := topotest.NCCLDoc(gpu("0000:01:00.0", `<nvlink target="0000:C0:00.0" count="6"/>`) + "\n" +
			gpu("0000:02:00.0", `<nvlink target="00000000:c0:00.0" count="6"/><c2c bw="900" count="1"/>`))
		m, err := parseNCCLXML("nvs.xml", []byte(in))
		if err != nil {
			t.Fatal(err)
		}
		sw := m.NodesOfKind(topology.KindNVSwitch)
		if len(sw) != 1 || sw[0].Parent != "" || sw[0].PCIAddress != "0000:c0:00.0" {
			t.Fatalf("NVSwitches %+v, want one at 0000:c0:00.0 with no parent", sw)
		}
		if got := m.CountLinks(topology.LinkNVLink); got != 12 {
			t.Errorf("NVLink count %d, want 12", got)
		}
	})
	t.Run("tclass 0x068001 joins the GPU to its own CPU", func(t *testing.T) {
		in := topotest.NCCLDoc(gpu("0000:01:00.0", `<nvlink target="0000:00:00.0" count="3" tclass="0x068001"/>`))
		m, err := parseNCCLXML("p9.xml", []byte(in))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range m.Links {
			if l.Kind == topology.LinkNVLink && (m.Node(l.To).Kind != topology.KindSocket || l.Count != 3) {
				t.Errorf("NVLink %+v, want count 3 to the socket", l)
			}
		}
		if m.Count(topology.KindNVSwitch) != 0 {
			t.Errorf("made an NVSwitch for a CPU target")
		}
	})
	t.Run("an xGMI target missing from the file is left out with a note", func(t *testing.T) {
		in := topotest.NCCLDoc(`<pci busid="0000:01:00.0" class="0x038000"><gpu dev="0"><xgmi target="0000:09:00.0" count="1"/></gpu></pci>`)
		m, err := parseNCCLXML("xgmi.xml", []byte(in))
		if err != nil {
			t.Fatal(err)
		}
		if m.CountLinks(topology.LinkXGMI) != 0 || !ncclHasNote(m, "0000:09:00.0") {
			t.Errorf("xGMI links %d, notes %q; want none and a note", m.CountLinks(topology.LinkXGMI), m.Notes)
		}
	})
}

func TestParseNCCLXMLMissingAttributes(t *testing.T) {
	in := topotest.NCCLDoc(`<pci busid="0000:10:00.0" class="0x060400">
<pci busid="0000:11:00.0" class="0x020000"><nic><net name="eth0"/></nic></pci>
<pci busid="0000:12:00.0" class="0x030200" link_speed="16 GT/s"/>
</pci>
<pci busid="0000:20:00.0" class="0x060400" link_speed="8 GT/s" link_width="8">
<pci busid="0000:21:00.0" class="0x010802" link_width="4"/>
</pci>
<nic><net name="ib0"/></nic>
<nvs/>`)
	m, err := parseNCCLXML("missing.xml", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	byBus := map[string]*topology.Link{}
	for _, n := range m.Nodes {
		if n.PCIAddress != "" {
			byBus[n.PCIAddress] = m.UplinkOf(n.ID)
		}
	}
	if l := byBus["0000:10:00.0"]; l.Source != topology.SourceAssumed || l.GBps != 12 {
		t.Errorf("bridge without attributes: %+v, want an assumed 12 GB/s", l)
	}
	if l := byBus["0000:21:00.0"]; l.PCIeGen != 3 || l.Lanes != 4 || l.GBps != 3 || l.Source != topology.SourceXML {
		t.Errorf("NVMe without link_speed: %+v, want Gen3 inherited from its parent, own x4, 3 GB/s", l)
	}
	if l := byBus["0000:12:00.0"]; l.Source != topology.SourceAssumed {
		t.Errorf("GPU with a speed but no width under a bridge with neither: %+v, want assumed", l)
	}
	if m.Count(topology.KindSwitch) != 1 || m.Count(topology.KindBridge) != 1 || m.Count(topology.KindNVMe) != 1 {
		t.Errorf("switches %d bridges %d nvme %d, want 1, 1, 1", m.Count(topology.KindSwitch), m.Count(topology.KindBridge), m.Count(topology.KindNVMe))
	}
	nics := m.NodesOfKind(topology.KindNIC)
	if len(nics) != 2 || nics[1].Parent != "socket0" || nics[1].Name != "NIC ib0" {
		t.Errorf("NICs %+v, want the PCI NIC and ib0 on socket0", nics)
	}
	for _, want := range []string{"assumed Gen3 x16", "take the missing value", "directly under its <cpu>"} {
		if !ncclHasNote(m, want) {
			t.Errorf("no note saying %q; notes: %q", want, m.Notes)
		}
	}
	if err := m.Validate(); err != nil {
		t.Error(err)
	}
}

func TestNCCLCPUList(t *testing.T) {
	tests := []struct {
		name, mask, want string
		n                int
	}{
		{"empty mask is no CPUs", "", "", 0},
		{"one word", "0000ffff", "0-15", 16},
		{"words are most significant first", "000000ff,ffff0000,00ffffff", "0-23,48-71", 48},
		{"single CPUs are not ranges", "00000005", "0,2", 2},
		{"a run across a word boundary stays one range", "00000001,80000000", "31-32", 2},
		{"a run up to the last bit closes", "ffffffff", "0-31", 32},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, n, err := ncclCPUList(tc.mask)
			if err != nil || got != tc.want || n != tc.n {
				t.Errorf("ncclCPUList(%q) = %q, %d, %v; want %q, %d", tc.mask, got, n, err, tc.want, tc.n)
			}
		})
	}
}

func ncclHasNote(m *topology.Machine, s string) bool {
	for _, n := range m.Notes {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}

func FuzzNCCLXML(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(ncclFixtureDir, "*.xml"))
	for _, file := range files {
		if data, err := os.ReadFile(file); err == nil {
			f.Add(data)
		}
	}
	for _, s := range []string{
		"",
		"<system/>",
		"<graphs/>",
		`<system><cpu numaid="0"/></system>`,
		`<system><cpu numaid="0"><nic/></cpu><cpu numaid="1"/></system>`,
		topotest.NCCLDoc(`<pci busid="0000:01:00.0" class="0x030200" link_speed="16 GT/s" link_width="16"><gpu sm="90"><nvlink target="0000:01:00.0" count="2"/><nvlink target="0000:09:00.0" count="2" tclass="0x068000"/></gpu></pci>`),
		topotest.NCCLDoc(`<pci busid="0000:01:00.0" class="0x060400"><pci busid="0000:02:00.0" class="0x038000"><gpu><xgmi target="0000:01:00.0"/></gpu></pci></pci>`),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := parseNCCLXML("fuzz.xml", data)
		if err != nil {
			if !topology.IsBadInput(err) {
				t.Fatalf("error is not bad input: %v", err)
			}
			return
		}
		if err := m.Validate(); err != nil {
			t.Fatalf("parsed machine does not validate: %v", err)
		}
	})
}

func TestParseNCCLXMLVirtualInterfacesAreNotNICs(t *testing.T) {
	cases := []struct {
		name     string
		nics     string
		wantNICs int
	}{
		{"veth pair of a container", `<nic><net name="veth1a2b3c"/></nic>`, 1},
		{"docker and Linux bridges", `<nic><net name="docker0"/></nic><nic><net name="br-5f2e"/></nic><nic><net name="virbr0"/></nic>`, 1},
		{"nic with no port name", `<nic/>`, 1},
		{"real IB port without a PCI path stays a NIC", `<nic><net name="ib0"/></nic>`, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := topotest.NCCLDoc(`<pci busid="0000:11:00.0" class="0x020000" link_speed="16 GT/s" link_width="16"><nic><net name="mlx5_0"/></nic></pci>` + tc.nics)
			m, err := parseNCCLXML("virt.xml", []byte(in))
			if err != nil {
				t.Fatal(err)
			}
			topotest.AssertSound(t, m)
			if got := m.Count(topology.KindNIC); got != tc.wantNICs {
				t.Errorf("NICs = %d, want %d; notes %q", got, tc.wantNICs, m.Notes)
			}
			if tc.wantNICs == 1 && !topotest.HasNote(m, "not NICs") {
				t.Errorf("no note about virtual interfaces; notes %q", m.Notes)
			}
		})
	}
}
