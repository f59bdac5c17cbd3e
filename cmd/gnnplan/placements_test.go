package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gnnplan/gnnplan/maxflow/placement"
	"github.com/gnnplan/gnnplan/topology"
)

func TestPlacementsTableMarksClassicPlacements(t *testing.T) {
	code, out, errOut := runCLI(t, "placements", "--profile", "moment-b", "--gpus", "4", "--ssds", "8", "--top", "3", "-o", "wide")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"distinct up to symmetry", "\n>3    c  ", "\n>3    d  ", "\n>3    a  ", "\n>3    b  ", "best vs classic (c):", "bus 11", "best placement:", "gpu3 ", "nvme7 "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestPlacementsJSON(t *testing.T) {
	code, out, errOut := runCLI(t, "placements", "--profile", "moment-a", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep placement.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("-o json is not a report: %v", err)
	}
	if rep.SchemaVersion != 1 || rep.GPUs != 4 || rep.SSDs != 8 || len(rep.Candidates) < placement.DefaultTop {
		t.Fatalf("report header %+v", rep)
	}
	for _, n := range placement.ClassicNames {
		if _, ok := rep.Classic[n]; !ok {
			t.Errorf("classic (%s) not ranked", n)
		}
	}
	prev := rep.Candidates[0].AggregateGBps
	for i, c := range rep.Candidates {
		if c.Rank == 0 && c.Classic != "" {
			continue // a classic placement below the top
		}
		if c.Rank != i+1 || c.AggregateGBps > prev+1e-9 {
			t.Fatalf("candidate %d out of order (rank %d, %v GB/s after %v)", i, c.Rank, c.AggregateGBps, prev)
		}
		prev = c.AggregateGBps
		if len(c.Devices) != 12 || len(c.PerGPUGBps) != 4 || len(c.Where) != 12 {
			t.Fatalf("candidate %d: %d devices, %d per-GPU rates", c.Rank, len(c.Devices), len(c.PerGPUGBps))
		}
	}
	if best := rep.Candidates[0]; len(best.Bottlenecks) == 0 {
		t.Errorf("best placement names no bottleneck")
	}
}

func TestPlacementsBadInputExitsTwo(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "m.json")
	os.WriteFile(bad, []byte(`{"schema_version": 1, "nodes": [{"id": "x", "kind": "socket"}, {"id": "y", "kind": "gpu", "parent": "x"}], "links": [{"from": "x", "to": "y", "kind": "pcie", "GBps": -3}]}`), 0o644)
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"more devices than slots", []string{"placements", "--profile", "moment-b", "--gpus", "4", "--ssds", "30"}, "--ssds"},
		{"more GPUs than wide slots", []string{"placements", "--profile", "moment-a", "--gpus", "17", "--ssds", "0"}, "--gpus"},
		{"share out of range", []string{"placements", "--profile", "moment-b", "--host-share", "1.5"}, "host_share"},
		{"negative capacity in a machine file", []string{"placements", "--machine", bad}, "m.json: links[0].GBps: -3"},
		{"two machines", []string{"placements", "--profile", "moment-b", "--machine", bad}, "at most one"},
		{"no SSD for the SSD share", []string{"placements", "--profile", "moment-b", "--ssds", "0"}, "cannot serve the epoch"},
		{"a negative top", []string{"placements", "--profile", "moment-b", "--top", "-5"}, "--top: -5 (valid: >= 1)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := runCLI(t, tc.args...)
			if code != 2 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr %q: want exit 2 and one line mentioning %q", code, errOut, tc.want)
			}
		})
	}
}

func TestPlacementsFlags(t *testing.T) {
	var got *placementsOptions
	cmd := newPlacementsCmd(&deps{}, func(_ context.Context, o *placementsOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"--profile", "moment-b", "--gpus", "2", "--ssds", "6", "--host-share", "0.5", "--ssd-GBps", "3.5", "-o", "json", "--top", "4"})
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.Profile != "moment-b" || got.GPUs != 2 || got.SSDs != 6 || got.Tiers.HostShare != 0.5 || got.Tiers.SSDReadGBps != 3.5 ||
		got.Output != "json" || got.Top != 4 || !got.TopSet || got.Tiers.HostMemGBps != placement.DefaultTiers().HostMemGBps {
		t.Errorf("options %+v", *got)
	}
	got = nil
	cmd = newPlacementsCmd(&deps{}, func(_ context.Context, o *placementsOptions) error { got = o; return nil })
	cmd.SetArgs(nil)
	cmd.Execute()
	if got.GPUs != -1 || got.SSDs != -1 || got.TopSet || got.Tiers != placement.DefaultTiers() {
		t.Errorf("defaults %+v: want counts from the machine and Moment's tiers", *got)
	}
}

// TestPlacementsCountsDevicesOutsideSlots: GPUs and SSDs wired to the
// fabric without slots are not moved by the search but are in the
// machine: the report counts them next to their per-GPU figures.
func TestPlacementsCountsDevicesOutsideSlots(t *testing.T) {
	b := topology.NewBuilder("no-slots", "test")
	zero := 0
	s := b.Add(topology.Node{Kind: topology.KindSocket, NUMANode: &zero, MemoryGiB: 64})
	rc := b.Add(topology.Node{Kind: topology.KindRootPort, Parent: s})
	for i := 0; i < 4; i++ {
		b.Add(topology.Node{Kind: topology.KindGPU, Parent: rc, Lanes: 16, PCIeGen: 4})
	}
	for i := 0; i < 2; i++ {
		b.Add(topology.Node{Kind: topology.KindNVMe, Parent: rc, Lanes: 4, PCIeGen: 4})
	}
	m, err := b.Finish(topology.CPUArch{})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "m.json")
	if err := topology.Save(path, m); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "placements", "--machine", path, "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep placement.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.GPUs != 4 || rep.SSDs != 2 || len(rep.Candidates) == 0 || len(rep.Candidates[0].PerGPUGBps) != 4 {
		t.Fatalf("gpus %d, ssds %d, per-GPU figures %v: want 4 GPUs, 2 SSDs", rep.GPUs, rep.SSDs, rep.Candidates)
	}
}

// TestPlacementsShowTheInstalledLayout: a machine's current layout is
// ranked with the rest, with its epoch IO time over the best's; asked to
// place other counts, there is no current layout to show.
func TestPlacementsShowTheInstalledLayout(t *testing.T) {
	code, out, errOut := runCLI(t, "placements", "--profile", "moment-a", "--top", "3")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var row string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "installed") && strings.HasPrefix(l, ">") {
			row = l
		}
	}
	// moment-a is built as classic (b): all four GPUs behind bus 9.
	if !strings.Contains(row, "b, installed") || !strings.Contains(row, "2.86x") {
		t.Errorf("installed row %q, want classic (b) at 2.86x the best\n%s", row, out)
	}
	code, out, errOut = runCLI(t, "placements", "--profile", "moment-a", "--gpus", "2", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep placement.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.InstalledRank != nil {
		t.Errorf("--gpus 2 on a 4-GPU machine reported an installed rank %d", *rep.InstalledRank)
	}
	if rep.Candidates[0].VsBest != 1 {
		t.Errorf("best candidate vs_best %v, want 1", rep.Candidates[0].VsBest)
	}
}
