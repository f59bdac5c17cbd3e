package placement

import (
	"fmt"

	"github.com/gnnplan/gnnplan/topology"
)

// ClassicNames are Moment's four classic placements (SC'25 section 2.3,
// Figs. 1-2), the layouts people build by hand:
//
//	a: SSDs front-board-first, GPUs spread evenly across the PCIe switches
//	b: SSDs front-board-first, GPUs together on one switch (P2P-friendly)
//	c: SSDs spread evenly across the switches, GPUs spread across them
//	d: SSDs spread evenly across the switches, GPUs together on one switch
var ClassicNames = []string{"a", "b", "c", "d"}

// ClassicAbout describes each classic placement in a few words.
func ClassicAbout(name string) string {
	switch name {
	case "a":
		return "SSDs front board first, GPUs spread across switches"
	case "b":
		return "SSDs front board first, GPUs together on one switch"
	case "c":
		return "SSDs spread across switches, GPUs spread across switches"
	case "d":
		return "SSDs spread across switches, GPUs together on one switch"
	}
	return ""
}

// classicPlacements builds and finds the four classic placements among the
// ranked candidates. "Front board" means the slots and bays directly on a
// root complex (not behind a switch), in socket order; "spread" deals
// devices round-robin over the switches in tree order; "together" puts all
// GPUs under the first switch with room for them. Devices that do not fit
// where a rule sends them overflow to the other kind of slot.
func classicPlacements(m *topology.Machine, inv Inventory, groups []slotGroup, tiers Tiers, canon *canonicalizer, ranked []*Candidate) (map[string]*Candidate, string) {
	switches := m.SortedKind(topology.KindSwitch)
	if len(switches) == 0 {
		return nil, "the machine has no PCIe switch, so Moment's classic placements (which differ in how devices share switches) do not apply"
	}
	under := map[string]string{} // slot -> the switch it hangs under ("" for front board)
	for _, g := range groups {
		sw := ""
		for p := m.Node(g.parent); p != nil; p = m.Node(p.Parent) {
			if p.Kind == topology.KindSwitch {
				sw = p.ID
				break
			}
		}
		for _, s := range g.slots {
			under[s] = sw
		}
	}
	byKey := map[string]*Candidate{}
	for _, c := range ranked {
		byKey[c.key] = c
	}
	out := map[string]*Candidate{}
	for _, name := range ClassicNames {
		spreadGPU := name == "a" || name == "c"
		spreadSSD := name == "c" || name == "d"
		counts, ok := classicCounts(groups, under, switches, inv, spreadGPU, spreadSSD)
		if !ok {
			return nil, fmt.Sprintf("the devices do not fit the slots the classic placement (%s) would use", name)
		}
		key := canon.key(counts)
		c, found := byKey[key]
		if !found {
			return nil, "internal: a classic placement is missing from the search"
		}
		c.Classic = name
		out[name] = c
	}
	return out, ""
}

// classicCounts places devices by the classic rules and returns per-group
// counts, the form the search's canonical keys take.
func classicCounts(groups []slotGroup, under map[string]string, switches []string, inv Inventory, spreadGPU, spreadSSD bool) ([][2]int, bool) {
	taken := map[string]bool{}
	slotsOf := func(sw string, gpu bool) []string { // free slots under a switch ("" = front board) that take the card
		var out []string
		for _, g := range groups {
			if gpu && !g.takesGPU || !gpu && !g.takesSSD {
				continue
			}
			for _, s := range g.slots {
				if under[s] == sw && !taken[s] {
					out = append(out, s)
				}
			}
		}
		return out
	}
	var gpuSlots, ssdSlots []string
	take := func(list *[]string, s string) {
		taken[s] = true
		*list = append(*list, s)
	}
	roundRobin := func(list *[]string, n int, gpu bool) int {
		for n > 0 {
			progress := false
			for _, sw := range switches {
				if n == 0 {
					break
				}
				if free := slotsOf(sw, gpu); len(free) > 0 {
					take(list, free[0])
					n--
					progress = true
				}
			}
			if !progress {
				break
			}
		}
		return n
	}
	fill := func(list *[]string, n int, sw string, gpu bool) int {
		for _, s := range slotsOf(sw, gpu) {
			if n == 0 {
				break
			}
			take(list, s)
			n--
		}
		return n
	}
	// GPUs first: they need the wide slots.
	left := inv.GPUs
	if spreadGPU {
		left = roundRobin(&gpuSlots, left, true)
	} else {
		placed := false
		for _, sw := range switches {
			if len(slotsOf(sw, true)) >= left {
				left = fill(&gpuSlots, left, sw, true)
				placed = true
				break
			}
		}
		if !placed {
			for _, sw := range switches {
				left = fill(&gpuSlots, left, sw, true)
			}
		}
	}
	left = fill(&gpuSlots, left, "", true)
	if left > 0 {
		return nil, false
	}
	left = inv.SSDs
	if spreadSSD {
		left = roundRobin(&ssdSlots, left, false)
		left = fill(&ssdSlots, left, "", false)
	} else {
		left = fill(&ssdSlots, left, "", false)
		left = roundRobin(&ssdSlots, left, false)
	}
	if left > 0 {
		return nil, false
	}
	counts := make([][2]int, len(groups))
	idx := map[string]int{}
	for i, g := range groups {
		for _, s := range g.slots {
			idx[s] = i
		}
	}
	for _, s := range gpuSlots {
		counts[idx[s]][0]++
	}
	for _, s := range ssdSlots {
		counts[idx[s]][1]++
	}
	return counts, true
}
