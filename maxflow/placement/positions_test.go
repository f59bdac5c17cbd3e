package placement

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gnnplan/gnnplan/topology"
	"github.com/gnnplan/gnnplan/topology/importer"
)

// TestPositionSlots: AWS p4d.24xlarge's NCCL topology (topology's testdata, from
// shared/fixtures) has eight A100s under PCIe switches and no slot record.
// Each GPU gets a slot at its position that takes a GPU again, with the
// GPU's link, so placement search can refill the eight positions and the
// machine as built is the installed placement; a machine with slot
// records is left as it is.
func TestPositionSlots(t *testing.T) {
	m, err := importer.Import(filepath.Join("..", "..", "topology", "testdata", "topology", "aws-p4d-24xl-topo.xml"))
	if err != nil {
		t.Fatal(err)
	}
	if n := m.Count(topology.KindSlot); n != 0 {
		t.Fatalf("the p4d description has %d slots, want none", n)
	}
	pm, n := PositionSlots(m)
	if n != 8 {
		t.Fatalf("%d position slots, want 8 (one per GPU)", n)
	}
	if err := pm.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, g := range pm.NodesOfKind(topology.KindGPU) {
		s := pm.Node(g.Parent)
		up, down := pm.UplinkOf(s.ID), pm.UplinkOf(g.ID)
		old := m.UplinkOf(g.ID)
		switch {
		case s == nil || s.Kind != topology.KindSlot || s.Takes != topology.KindGPU || !s.Occupied || !s.DoubleWidth:
			t.Fatalf("%s sits in %+v, want an occupied slot that takes a GPU", g.ID, s)
		case up == nil || down == nil || up.GBps != old.GBps || down.GBps != old.GBps || s.Lanes != 16 || s.PCIeGen != 3:
			t.Fatalf("%s: links %+v / %+v, slot x%d Gen%d; want the GPU's x16 Gen3 %g GB/s link on both sides", g.ID, up, down, s.Lanes, s.PCIeGen, old.GBps)
		case !strings.Contains(s.Label, g.ID):
			t.Errorf("slot label %q does not name %s", s.Label, g.ID)
		}
	}
	if again, n := PositionSlots(pm); n != 0 || again != pm {
		t.Errorf("a second pass made %d slots, want none", n)
	}
	if in := Installed(pm); len(in.GPUSlots) != 8 {
		t.Errorf("installed placement %v, want the 8 GPU positions", in)
	}

	// The positions take GPUs again, never an SSD.
	sm, inv := Strip(pm)
	inv.SSDs = 1
	if _, err := SearchWith(context.Background(), sm, inv, DefaultTiers(), SearchOptions{Top: 1}); err == nil || !strings.Contains(err.Error(), "free slots that take one") {
		t.Errorf("an SSD with only GPU positions free: %v, want a refusal", err)
	}
	inv.SSDs, inv.GPUs = 0, 4
	tiers := DefaultTiers()
	tiers.HostShare, tiers.GPUCacheShare = 0.7, 0.3
	res, err := SearchWith(context.Background(), sm, inv, tiers, SearchOptions{Top: 1})
	if err != nil || len(res.Candidates) == 0 {
		t.Fatalf("4 GPUs in 8 positions: %v", err)
	}

	slotted := loadFixture(t, "eight-gpu-24-bay")
	if same, n := PositionSlots(slotted); n != 0 || same != slotted {
		t.Errorf("a machine with slot records got %d position slots", n)
	}
}
