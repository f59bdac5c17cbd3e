package profiles

import (
	"reflect"
	"strings"
	"testing"

	"github.com/gnnplan/gnnplan/topology"
)

func TestMachineProfilesHoldThePapersHardware(t *testing.T) {
	cases := []struct {
		name                       string
		sockets, switches, slots   int
		gpus, nvme, emptySlots     int
		gpuMemGiB, interSocketGBps float64
	}{
		{"moment-a", 2, 2, 24, 4, 8, 12, 40, 10},
		{"moment-b", 2, 2, 19, 4, 8, 7, 40, 22},
		{"hyperion-a", 2, 2, 24, 1, 12, 11, 80, 10},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Machine(tc.name)
			if err != nil {
				t.Fatal(err)
			}
			s := m.Summarize()
			got := []int{s.Sockets, s.Switches, s.Slots, s.GPUs, s.NVMe, s.EmptySlots}
			want := []int{tc.sockets, tc.switches, tc.slots, tc.gpus, tc.nvme, tc.emptySlots}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("sockets, switches, slots, GPUs, NVMe, empty slots = %v, want %v", got, want)
			}
			for _, g := range m.NodesOfKind(topology.KindGPU) {
				if g.MemoryGiB != tc.gpuMemGiB {
					t.Errorf("GPU %s has %v GiB, want %v", g.ID, g.MemoryGiB, tc.gpuMemGiB)
				}
				if p := m.Node(g.Parent); p.Kind != topology.KindSlot || !p.DoubleWidth || p.Lanes != 16 {
					t.Errorf("GPU %s is not in an x16 double-width slot", g.ID)
				}
			}
			for _, l := range m.Links {
				if l.Kind == topology.LinkInterSocket && l.GBps != tc.interSocketGBps {
					t.Errorf("inter-socket link %v GB/s, want %v", l.GBps, tc.interSocketGBps)
				}
				if l.Source == topology.SourceAssumed {
					t.Errorf("link %s->%s has an assumed capacity in a profile", l.From, l.To)
				}
			}
			if len(m.Notes) == 0 {
				t.Error("profile writes down no assumptions")
			}
		})
	}
}

func TestMomentBIsCascaded(t *testing.T) {
	m, err := Machine("moment-b")
	if err != nil {
		t.Fatal(err)
	}
	sw := m.NodesOfKind(topology.KindSwitch)
	sw0, sw1 := sw[0], sw[1]
	if sw1.Parent != sw0.ID {
		t.Fatalf("switch 1's parent is %s, want switch 0", sw1.Parent)
	}
	rc0 := m.Node(sw0.Parent)
	if rc0.Kind != topology.KindRootPort || m.Node(rc0.Parent).Kind != topology.KindSocket || *m.Node(rc0.Parent).NUMANode != 0 {
		t.Fatalf("switch 0 is not below socket 0's root complex")
	}
	count := func(parent string) int {
		n := 0
		for _, id := range m.Children(parent) {
			if m.Node(id).Kind == topology.KindSlot {
				n++
			}
		}
		return n
	}
	rc1 := m.Node(m.NodesOfKind(topology.KindRootPort)[1].ID)
	if got := []int{count(rc0.ID), count(sw0.ID), count(sw1.ID), count(rc1.ID)}; !reflect.DeepEqual(got, []int{1, 4, 5, 9}) {
		t.Errorf("slots under RC0, SW0, SW1, RC1 = %v, want [1 4 5 9]", got)
	}
	if up := m.UplinkOf(sw1.ID); up.Label != "bus 16" || up.GBps != 24 {
		t.Errorf("switch 1 uplink %+v, want bus 16 at 24 GB/s", *up)
	}
}

func TestProfilesAreFreshCopies(t *testing.T) {
	a, _ := Machine("moment-b")
	a.Nodes[0].CPUModel = "changed"
	b, _ := Machine("moment-b")
	if b.Nodes[0].CPUModel == "changed" {
		t.Fatal("editing one profile copy changed the next")
	}
}

func TestUnknownProfileListsKnownOnes(t *testing.T) {
	_, err := Machine("moment-z")
	if err == nil || !topology.IsBadInput(err) {
		t.Fatalf("err = %v, want bad input", err)
	}
	for _, n := range MachineNames() {
		if !strings.Contains(err.Error(), n) {
			t.Errorf("error %q does not list %s", err, n)
		}
	}
}
