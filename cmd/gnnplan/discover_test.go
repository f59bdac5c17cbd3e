package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/gnnplan/gnnplan/topology"
)

// runCLI runs gnnplan in-process and returns exit code, stdout and stderr.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestDiscoverFlags(t *testing.T) {
	cases := []struct {
		name    string
		args    []string
		want    discoverOptions
		wantErr string
	}{
		{"defaults read this machine as a table", nil, discoverOptions{Output: "table", Dmidecode: true}, ""},
		{"profile as tree", []string{"--profile", "moment-b", "-o", "tree"}, discoverOptions{Profile: "moment-b", Output: "tree", Dmidecode: true}, ""},
		{"snapshot saved", []string{"--sysfs-root", "/snap", "--save", "m.json", "--dmidecode=false"}, discoverOptions{SysfsRoot: "/snap", Save: "m.json", Output: "table"}, ""},
		{"two sources refused", []string{"--profile", "moment-b", "--from", "x.xml"}, discoverOptions{}, "at most one"},
		{"unknown format refused", []string{"-o", "yaml"}, discoverOptions{}, "valid: table, wide, tree, json, dot"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got *discoverOptions
			cmd := newDiscoverCmd(&deps{}, func(_ context.Context, o *discoverOptions) error { got = o; return nil })
			cmd.SetArgs(tc.args)
			cmd.SetOut(&bytes.Buffer{})
			cmd.SetErr(&bytes.Buffer{})
			err := cmd.Execute()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			g := *got
			if g.IO == nil || g.Discover == nil || g.Import == nil || g.Profiles == nil || g.DriverGPUs == nil {
				t.Fatal("machine sources not wired")
			}
			g.IO, g.Discover, g.Import, g.Profiles, g.DriverGPUs = nil, nil, nil, nil, nil
			if !reflect.DeepEqual(g, tc.want) {
				t.Errorf("options = %+v, want %+v", g, tc.want)
			}
		})
	}
}

func TestDiscoverMomentBTree(t *testing.T) {
	code, out, errOut := runCLI(t, "discover", "--profile", "moment-b", "-o", "tree")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(out, "\n")
	indent := func(id string) int {
		for _, l := range lines {
			if i := strings.Index(l, " "+id+" ["); i >= 0 {
				return i
			}
		}
		t.Fatalf("tree lacks %s:\n%s", id, out)
		return -1
	}
	if !(indent("socket0") < indent("sw0") && indent("sw0") < indent("sw1")) {
		t.Errorf("switch 1 is not drawn below switch 0 below socket 0:\n%s", out)
	}
	slotRE := regexp.MustCompile(`\[slot\] .*x(4|8|16) Gen4`)
	linkRE := regexp.MustCompile(`<= .*[0-9.]+ GB/s`)
	slots := 0
	for _, l := range lines {
		if strings.Contains(l, "[slot]") {
			slots++
			if !slotRE.MatchString(l) {
				t.Errorf("slot without its width: %q", l)
			}
		}
		if strings.Contains(l, " [") && !strings.Contains(l, "[socket]") && !linkRE.MatchString(l) {
			t.Errorf("node without the capacity of its link: %q", l)
		}
	}
	if slots != 19 {
		t.Errorf("tree shows %d slots, want 19", slots)
	}
	if !strings.Contains(out, "inter-socket 22 GB/s") {
		t.Errorf("tree lacks the socket link capacity")
	}
}

func TestDiscoverJSONAndSave(t *testing.T) {
	dir := t.TempDir()
	save := filepath.Join(dir, "machine.json")
	code, out, errOut := runCLI(t, "discover", "--profile", "moment-a", "-o", "json", "--save", save)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc struct {
		SchemaVersion int `json:"schema_version"`
		Nodes         []struct{ Kind string }
		Links         []struct {
			From, To string
			GBps     float64
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("-o json is not JSON: %v", err)
	}
	if doc.SchemaVersion != 1 || len(doc.Nodes) == 0 || len(doc.Links) == 0 {
		t.Fatalf("json output lacks schema, nodes or links")
	}
	saved, err := os.ReadFile(save)
	if err != nil || !bytes.Equal(saved, []byte(out)) {
		t.Fatalf("--save file differs from -o json output (%v)", err)
	}
	// The saved file is a machine source itself.
	code, out2, _ := runCLI(t, "discover", "--from", save, "-o", "json")
	if code != 0 || out2 != out {
		t.Fatalf("discover --from saved machine did not reproduce it (exit %d)", code)
	}
}

func TestDiscoverBadInputExitsTwo(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.json")
	os.WriteFile(garbage, []byte("{\"schema_version\": 1, \"nodes\": [}"), 0o644)
	future := filepath.Join(dir, "future.json")
	os.WriteFile(future, []byte(`{"schema_version": 99}`), 0o644)
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"unknown profile", []string{"discover", "--profile", "nope"}, "moment-b"},
		{"unknown output", []string{"discover", "-o", "yaml"}, "--output"},
		{"unknown flag", []string{"discover", "--frobnicate"}, "frobnicate"},
		{"missing file", []string{"discover", "--from", filepath.Join(dir, "none.xml")}, "none.xml"},
		{"garbage json", []string{"discover", "--from", garbage}, "garbage.json:1"},
		{"future schema", []string{"discover", "--from", future}, "schema_version"},
		{"not a sysfs tree", []string{"discover", "--sysfs-root", dir}, "not a sysfs tree"},
		{"save into missing dir", []string{"discover", "--profile", "moment-b", "--save", filepath.Join(dir, "no", "m.json")}, "--save"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, tc.args...)
			wantCode := 2
			if tc.name == "save into missing dir" {
				wantCode = 1 // not the input's fault: the output path
			}
			if code != wantCode {
				t.Errorf("exit %d, want %d (stderr %q)", code, wantCode, errOut)
			}
			if strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, tc.want) {
				t.Errorf("stderr %q: want one line mentioning %q", errOut, tc.want)
			}
			if strings.Contains(errOut, "panic") || (code != 0 && out != "") {
				t.Errorf("unexpected output %q / %q", out, errOut)
			}
		})
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 {
		t.Errorf("failed commands left files behind: %v", ents)
	}
}

func TestDiscoverThisMachine(t *testing.T) {
	if _, err := os.Stat("/sys/bus/pci/devices"); err != nil {
		t.Skip("no sysfs here")
	}
	code, out, errOut := runCLI(t, "discover")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "socket(s)") || !strings.Contains(out, "GPU(s)") {
		t.Errorf("summary missing:\n%s", out)
	}
}

func TestVersionAndHelp(t *testing.T) {
	code, out, _ := runCLI(t, "version")
	if code != 0 || !strings.HasPrefix(out, "gnnplan ") {
		t.Errorf("version: exit %d, %q", code, out)
	}
	if !strings.Contains(out, "\ngpus: ") {
		t.Errorf("version does not say which GPUs the CUDA backend sees: %q", out)
	}
	code, out, _ = runCLI(t, "--help")
	if code != 0 || !strings.Contains(out, "discover") {
		t.Errorf("help: exit %d, %q", code, out)
	}
}

func TestSaveIsMachineJSON(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "m.json")
	if code, _, e := runCLI(t, "discover", "--profile", "hyperion-a", "-o", "dot", "--save", p); code != 0 {
		t.Fatal(e)
	}
	if _, err := topology.Load(p); err != nil {
		t.Fatal(err)
	}
}

// fixtureDir holds the copies of the shared topology files the topology
// package tests use (see topology/testdata/topology/SOURCES.md).
var fixtureDir = filepath.Join("..", "..", "topology", "testdata", "topology")

// TestDiscoverFromTopologyFiles imports every XML fixture through the CLI
// and checks the counts SOURCES.md gives (or, where it gives none, what the
// file holds; see the importer tests for each derivation).
func TestDiscoverFromTopologyFiles(t *testing.T) {
	cases := []struct {
		file                                  string
		gpus, nics, switches, sockets, fabric int
	}{
		{"aws-p4d-24xl-topo.xml", 8, 4, 4, 2, 0},
		{"azure-ndv4-topo.xml", 8, 8, 4, 4, 0},
		{"oci-H100-topology.xml", 8, 8, 24, 2, 144},                  // 3 PEX89000 levels per GPU; 18 NVLinks per GPU
		{"rccl-topo_8p6l.xml", 8, 1, 0, 2, 24},                       // 6 xGMI per GPU, listed at both ends
		{"rccl-topo_8p_pcie.xml", 8, 1, 2, 1, 0},                     // two switch trees of 4 GPUs
		{"rccl-topo_8p_rome_4n_1.xml", 8, 4, 12, 4, 12},              // Switchtec two-level trees; two 4-GPU xGMI cliques
		{"hwloc-nvidiaDGX2.xml", 16, 0, 14, 2, 96},                   // 16 GPUs x 6 NVSwitches
		{"hwloc-32em64t-2n8c+dax+nvme+mic+dimms.xml", 0, 3, 0, 2, 0}, // I350 (2 ports) + ConnectX-3
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			p := filepath.Join(fixtureDir, tc.file)
			if _, err := os.Stat(p); err != nil {
				t.Skipf("fixture %s not available: %v", tc.file, err)
			}
			code, out, errOut := runCLI(t, "discover", "--from", p, "-o", "json")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			m, err := topology.Decode("stdout", []byte(out))
			if err != nil {
				t.Fatalf("-o json output is not a valid machine: %v", err)
			}
			got := []int{m.Count(topology.KindGPU), m.Count(topology.KindNIC), m.Count(topology.KindSwitch),
				m.Count(topology.KindSocket), m.CountLinks(topology.LinkNVLink) + m.CountLinks(topology.LinkXGMI)}
			want := []int{tc.gpus, tc.nics, tc.switches, tc.sockets, tc.fabric}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("GPUs, NICs, switches, sockets, NVLink/xGMI links = %v, want %v", got, want)
			}
		})
	}
}

func TestDiscoverRefusesNCCLGraphFile(t *testing.T) {
	p := filepath.Join(fixtureDir, "azure-ncv4-graph.xml")
	if _, err := os.Stat(p); err != nil {
		t.Skipf("fixture not available: %v", err)
	}
	code, _, errOut := runCLI(t, "discover", "--from", p)
	if code != 2 || !strings.Contains(errOut, "channel graph") || !strings.Contains(errOut, "azure-ncv4-graph.xml") {
		t.Fatalf("exit %d, stderr %q: want exit 2 saying it is a channel graph", code, errOut)
	}
}
