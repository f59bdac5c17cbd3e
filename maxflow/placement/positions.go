package placement

import (
	"fmt"

	"github.com/gnnplan/gnnplan/topology"
)

// hasBoard reports whether a device has a board of its own below it: a
// switch, bridge or device of a kind placement moves. Functions of the
// device itself that a capture lists under it (a GPU's audio function in
// lspci -tv) are not one.
func hasBoard(m *topology.Machine, id string) bool {
	for _, k := range m.Children(id) {
		if n := m.Node(k); n != nil && n.Kind != topology.KindOther {
			return true
		}
	}
	return false
}

// PositionSlots returns m with a slot at every position where a GPU or an
// NVMe SSD sits outside any slot (descriptions from NCCL or hwloc XML,
// nvidia-smi and lspci captures, and sysfs snapshots without SMBIOS slot
// records): the device moves into an occupied slot that takes its kind
// again (Node.Takes), at the device's lanes and generation, so placement
// search can refill the positions the machine has. The link from the
// parent now ends at the slot; a link of the device's own width joins
// slot and device. Devices with children (a GPU board behind its own
// switch) stay as they are; a device's own functions listed under it
// (KindOther) move with it. n is how many slots were made; m is returned
// unchanged when none were.
func PositionSlots(m *topology.Machine) (out *topology.Machine, n int) {
	var loose []string
	for _, d := range m.Nodes {
		if (d.Kind != topology.KindGPU && d.Kind != topology.KindNVMe) || d.Parent == "" || hasBoard(m, d.ID) {
			continue
		}
		if p := m.Node(d.Parent); p != nil && p.Kind == topology.KindSlot {
			continue
		}
		loose = append(loose, d.ID)
	}
	if len(loose) == 0 {
		return m, 0
	}
	out = &topology.Machine{SchemaVersion: m.SchemaVersion, Name: m.Name, Source: m.Source,
		Notes: append([]string(nil), m.Notes...)}
	ids := map[string]bool{}
	for _, x := range m.Nodes {
		ids[x.ID] = true
	}
	slotOf := map[string]string{}
	for _, id := range loose {
		s := "pos-" + id
		for i := 2; ids[s]; i++ {
			s = fmt.Sprintf("pos-%s-%d", id, i)
		}
		ids[s] = true
		slotOf[id] = s
	}
	for _, x := range m.Nodes {
		s, ok := slotOf[x.ID]
		if !ok {
			out.Nodes = append(out.Nodes, x)
			continue
		}
		lanes, gen := x.Lanes, x.PCIeGen
		if l := m.UplinkOf(x.ID); l != nil {
			lanes, gen = max(lanes, l.Lanes), max(gen, l.PCIeGen)
		}
		what := x.Name
		if what == "" {
			what = string(x.Kind)
		}
		out.Nodes = append(out.Nodes, topology.Node{ID: s, Kind: topology.KindSlot, Parent: x.Parent, NUMANode: x.NUMANode,
			Lanes: lanes, PCIeGen: gen, DoubleWidth: x.Kind == topology.KindGPU, Occupied: true, Takes: x.Kind,
			Label: fmt.Sprintf("position of %s (%s)", x.ID, what)})
		x.Parent = s
		out.Nodes = append(out.Nodes, x)
	}
	parentOf := make(map[string]string, len(m.Nodes))
	for _, x := range m.Nodes {
		parentOf[x.ID] = x.Parent
	}
	for _, l := range m.Links {
		// The tree link from a loose device's parent now ends at its slot.
		s, ok := slotOf[l.To]
		if !ok || parentOf[l.To] != l.From {
			out.Links = append(out.Links, l)
			continue
		}
		up := l
		up.To = s
		down := l
		down.From = s
		out.Links = append(out.Links, up, down)
	}
	out.Notes = append(out.Notes, fmt.Sprintf("%d GPU and SSD position(s) had no slot record: each is taken as a slot that takes its kind again", len(loose)))
	return out, len(loose)
}
