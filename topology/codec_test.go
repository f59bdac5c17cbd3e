package topology_test

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gnnplan/gnnplan/topology"
	"github.com/gnnplan/gnnplan/topology/importer"
	"github.com/gnnplan/gnnplan/topology/internal/sysfstest"
	"github.com/gnnplan/gnnplan/topology/internal/topotest"
)

func TestJSONRoundTripIsExact(t *testing.T) {
	machines := map[string]*topology.Machine{"built": topotest.SampleMachine(t), "discovered": topotest.DiscoverAt(t, sysfstest.Server(3).Write(t))}
	for name, m := range machines {
		t.Run(name, func(t *testing.T) {
			var first bytes.Buffer
			if err := topology.Encode(&first, m); err != nil {
				t.Fatal(err)
			}
			back, err := topology.Decode("mem.json", first.Bytes())
			if err != nil {
				t.Fatalf("decode own output: %v", err)
			}
			if !reflect.DeepEqual(m, back) {
				t.Fatalf("decoded machine differs from the encoded one")
			}
			var second bytes.Buffer
			if err := topology.Encode(&second, back); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(first.Bytes(), second.Bytes()) {
				t.Fatalf("re-encoding changed the bytes")
			}
		})
	}
}

func TestJSONHasKindsAndCapacitiesForScripts(t *testing.T) {
	var buf bytes.Buffer
	if err := topology.Encode(&buf, topotest.SampleMachine(t)); err != nil {
		t.Fatal(err)
	}
	s := buf.String()
	for _, want := range []string{`"schema_version": 1`, `"kind": "switch"`, `"kind": "slot"`, `"kind": "gpu"`, `"kind": "nvme"`,
		`"from": "socket0"`, `"GBps": 22`, `"GBps": 24`, `"memory_GiB": 256`} {
		if !strings.Contains(s, want) {
			t.Errorf("JSON lacks %s", want)
		}
	}
}

func TestDecodeRejectsBadInput(t *testing.T) {
	var good bytes.Buffer
	topology.Encode(&good, topotest.SampleMachine(t))
	g := good.String()
	cases := []struct {
		name, doc, want string
	}{
		{"garbage", "this is not json", "malformed JSON"},
		{"truncated", g[:len(g)/2], "JSON"},
		{"not a machine", `{"hello": 1}`, "schema_version"},
		{"future schema", strings.Replace(g, `"schema_version": 1`, `"schema_version": 7`, 1), "7 is not supported"},
		{"wrong unit field", strings.Replace(g, `"GBps": 22`, `"bandwidth_gbit": 22`, 1), "bandwidth_gbit"},
		{"negative capacity", strings.Replace(g, `"GBps": 22`, `"GBps": -22`, 1), "GBps"},
		{"zero capacity", strings.Replace(g, `"GBps": 22`, `"GBps": 0`, 1), "GBps"},
		{"unknown kind", strings.Replace(g, `"kind": "switch"`, `"kind": "hub"`, 1), "not a node kind"},
		{"dangling parent", strings.Replace(g, `"parent": "sw0"`, `"parent": "sw9"`, 1), "names no node"},
		{"string where number", strings.Replace(g, `"GBps": 22`, `"GBps": "22"`, 1), "GBps"},
		{"trailing data", g + "{}", "after top-level value"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := topology.Decode("machine.json", []byte(tc.doc))
			if err == nil {
				t.Fatal("accepted bad input")
			}
			if !topology.IsBadInput(err) {
				t.Errorf("error %v is not marked bad input", err)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "machine.json") || !strings.Contains(msg, tc.want) || strings.Contains(msg, "\n") {
				t.Errorf("error %q: want one line starting with the file and mentioning %q", msg, tc.want)
			}
		})
	}
}

func TestDecodeSyntaxErrorNamesLine(t *testing.T) {
	doc := "{\n  \"schema_version\": 1,\n  \"name\": \"x\",\n  \"nodes\": [,]\n}\n"
	_, err := topology.Decode("m.json", []byte(doc))
	if err == nil || !strings.HasPrefix(err.Error(), "m.json:4:") {
		t.Fatalf("err = %v, want it to name m.json line 4", err)
	}
}

func TestValidateCatchesParentCycle(t *testing.T) {
	m := &topology.Machine{SchemaVersion: topology.SchemaVersion, Nodes: []topology.Node{
		{ID: "a", Kind: topology.KindSwitch, Parent: "b"}, {ID: "b", Kind: topology.KindSwitch, Parent: "a"},
	}}
	if err := m.Validate(); err == nil || !strings.Contains(err.Error(), "cycle") {
		t.Fatalf("err = %v, want a parent cycle", err)
	}
}

func TestSaveIsAtomicAndLoadable(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "machine.json")
	m := topotest.SampleMachine(t)
	if err := topology.Save(p, m); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("save left %d files, want only machine.json", len(ents))
	}
	back, err := topology.Load(p)
	if err != nil || !reflect.DeepEqual(back, m) {
		t.Fatalf("Load after Save: %v", err)
	}
	if err := topology.Save(filepath.Join(dir, "missing", "m.json"), m); err == nil {
		t.Error("Save into a missing directory succeeded")
	}
}

func TestPCIeGBps(t *testing.T) {
	cases := []struct {
		gen, lanes int
		want       float64
	}{
		{3, 16, 12}, {4, 16, 24}, {5, 16, 48}, {6, 16, 96}, {4, 4, 6}, {4, 8, 12}, {3, 1, 0.75}, {0, 16, 0}, {4, 0, 0}, {9, 16, 0},
	}
	for _, c := range cases {
		if got := topology.PCIeGBps(c.gen, c.lanes); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("PCIeGBps(%d, %d) = %v, want %v", c.gen, c.lanes, got, c.want)
		}
	}
}

func TestParseLinkSpeed(t *testing.T) {
	cases := []struct {
		in      string
		gen     int
		wantErr bool
	}{
		{"2.5 GT/s", 1, false}, {"5.0 GT/s PCIe", 2, false}, {"8 GT/s", 3, false}, {"16.0 GT/s PCIe", 4, false},
		{"32.0 GT/s PCIe", 5, false}, {"64.0 GT/s PCIe", 6, false}, {"Unknown", 0, false}, {"", 0, false},
		{"fast", 0, true}, {"16 Gbps", 0, true},
	}
	for _, c := range cases {
		gen, err := topology.ParseLinkSpeed(c.in)
		if gen != c.gen || (err != nil) != c.wantErr {
			t.Errorf("ParseLinkSpeed(%q) = %d, %v; want %d, err=%v", c.in, gen, err, c.gen, c.wantErr)
		}
	}
}

func TestInterSocketLinkFromCPUName(t *testing.T) {
	cases := []struct {
		cpu  string
		want float64
	}{
		{"Intel(R) Xeon(R) Gold 6426Y", 22},      // Sapphire Rapids
		{"Intel(R) Xeon(R) Gold 5320 CPU", 10},   // Ice Lake: NCCL uses the Skylake rate
		{"Intel(R) Xeon(R) Silver 4214 CPU", 10}, // Cascade Lake
		{"Intel(R) Xeon(R) Platinum 8592+", 40},  // Emerald Rapids
		{"Intel(R) Xeon(R) CPU E5-2680 v4", 6},   // Broadwell
		{"AMD EPYC 7742 64-Core Processor", 16},  // Zen2
		{"AMD EPYC 7763 64-Core Processor", 24},  // Zen3
		{"AMD EPYC 9654 96-Core Processor", 24},  // Zen4
		{"AMD EPYC 9755 128-Core Processor", 32}, // Zen5
		// Platform code names in chipset devices' names, as lspci prints
		// them where no CPU model is given (issue 34, finding 4).
		{"Advanced Micro Devices, Inc. [AMD] Genoa CCP/PSP 4.0 Device", 24},
		{"Advanced Micro Devices, Inc. [AMD] Starship/Matisse Root Complex", 0},
		{"Intel Corporation Sapphire Rapids PCIe Root Port", 22},
	}
	for _, c := range cases {
		a, ok := topology.InterSocketLinkByName(c.cpu)
		if c.want == 0 {
			if ok {
				t.Errorf("InterSocketLinkByName(%q) = %+v: want no platform recognised", c.cpu, a)
			}
			continue
		}
		if !ok || a.GBps != c.want {
			t.Errorf("InterSocketLinkByName(%q) = %+v, %v; want %v GB/s", c.cpu, a, ok, c.want)
		}
	}
}

func TestViewsShowEveryNodeAndCapacity(t *testing.T) {
	m := topotest.SampleMachine(t)
	var tree, table, dot bytes.Buffer
	if err := topology.WriteTree(&tree, m); err != nil {
		t.Fatal(err)
	}
	writeTableView(&table, m)
	if err := topology.WriteDOT(&dot, m); err != nil {
		t.Fatal(err)
	}
	for _, n := range m.Nodes {
		for name, out := range map[string]string{"tree": tree.String(), "table": table.String(), "dot": dot.String()} {
			if !strings.Contains(out, n.ID) {
				t.Errorf("%s view lacks node %s", name, n.ID)
			}
		}
	}
	for _, want := range []string{"x16 Gen4 24 GB/s", "x4 Gen4 6 GB/s", "NVLink x4 80 GB/s", "inter-socket 22 GB/s"} {
		if !strings.Contains(tree.String(), want) {
			t.Errorf("tree lacks %q:\n%s", want, tree.String())
		}
	}
	if !strings.HasPrefix(dot.String(), "digraph") || strings.Count(dot.String(), "->") != len(m.Links) {
		t.Errorf("DOT has %d edges, want %d", strings.Count(dot.String(), "->"), len(m.Links))
	}
	if !strings.Contains(table.String(), "UPLINK GB/s") {
		t.Errorf("table header lost its units:\n%s", table.String())
	}
}

// TestViewsRoundMemory: memory the CUDA driver reports in bytes shows in
// GiB to two places (the H200's 150,109,880,320 bytes as 139.8 GiB), and a
// rate computed as a product to three (18 x 40.1 GB/s as 721.8), not as
// the float's every digit.
func TestViewsRoundMemory(t *testing.T) {
	b := topology.NewBuilder("vm", "test")
	s := b.Add(topology.Node{Kind: topology.KindSocket, MemoryGiB: 125.87109375 + 1e-9})
	rp := b.Add(topology.Node{Kind: topology.KindRootPort, Parent: s})
	g := b.Add(topology.Node{Kind: topology.KindGPU, Parent: rp, Name: "NVIDIA H200", MemoryGiB: 150109880320.0 / (1 << 30), Lanes: 16, PCIeGen: 5})
	g2 := b.Add(topology.Node{Kind: topology.KindGPU, Parent: rp, Name: "NVIDIA H200", MemoryGiB: 140, Lanes: 16, PCIeGen: 5})
	perLink := 40.1 // a variable: a constant product would be exact
	b.Link(topology.Link{From: g, To: g2, Kind: topology.LinkNVLink, Count: 18, GBps: 18 * perLink, Source: topology.SourceNominal})
	m, err := b.Finish(topology.CPUArch{})
	if err != nil {
		t.Fatal(err)
	}
	var tree, table bytes.Buffer
	if err := topology.WriteTree(&tree, m); err != nil {
		t.Fatal(err)
	}
	writeTableView(&table, m)
	for name, out := range map[string]string{"tree": tree.String(), "table": table.String()} {
		if !strings.Contains(out, "NVIDIA H200, 139.8 GiB") || !strings.Contains(out, "125.87 GiB memory") || strings.Contains(out, "139.800") {
			t.Errorf("%s view does not round memory to two places:\n%s", name, out)
		}
		if name == "tree" && (!strings.Contains(out, "NVLink x18 721.8 GB/s") || strings.Contains(out, "721.80")) {
			t.Errorf("tree view shows a rate's float noise (18 x 40.1 = %v):\n%s", 18*perLink, out)
		}
	}
}

// FuzzDecodeMachineJSON checks the machine JSON reader never panics and
// only returns valid machines.
func FuzzDecodeMachineJSON(f *testing.F) {
	var buf bytes.Buffer
	topology.Encode(&buf, topotest.SampleMachine(f))
	f.Add(append([]byte(nil), buf.Bytes()...))
	m, err := topology.Discover(context.Background(), topology.DiscoverOptions{Root: sysfstest.Server(2).Write(f)})
	if err == nil {
		buf.Reset()
		topology.Encode(&buf, m)
		f.Add(append([]byte(nil), buf.Bytes()...))
	}
	// Every topology fixture, imported and written as machine JSON.
	ents, _ := os.ReadDir(sysfstest.FixtureDir)
	for _, e := range ents {
		if m, err := importer.Import(filepath.Join(sysfstest.FixtureDir, e.Name())); err == nil {
			buf.Reset()
			topology.Encode(&buf, m)
			f.Add(append([]byte(nil), buf.Bytes()...))
		}
	}
	f.Add([]byte(`{"schema_version": 1, "name": "x", "source": "", "nodes": [], "links": []}`))
	f.Add([]byte(`{"schema_version": 1, "nodes": [{"id": "a", "kind": "gpu", "parent": "a"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := topology.Decode("fuzz.json", data)
		if err != nil {
			if !topology.IsBadInput(err) {
				t.Fatalf("error not marked bad input: %v", err)
			}
			return
		}
		if err := m.Validate(); err != nil {
			t.Fatalf("Decode returned an invalid machine: %v", err)
		}
	})
}

// writeTableView writes Table's rows as tab-separated lines.
func writeTableView(b *bytes.Buffer, m *topology.Machine) {
	v := topology.Table(m)
	for _, rows := range [][][]string{{v.NodeHeader}, v.Nodes, {v.CrossHeader}, v.Cross} {
		for _, r := range rows {
			b.WriteString(strings.Join(r, "\t") + "\n")
		}
	}
}
