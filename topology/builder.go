package topology

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// idPrefix is the id stem of each kind: "gpu0", "sw1", "slot3".
var idPrefix = map[Kind]string{
	KindSocket: "socket", KindRootPort: "rp", KindSwitch: "sw", KindBridge: "br",
	KindSlot: "slot", KindGPU: "gpu", KindAccelerator: "acc", KindNVSwitch: "nvsw",
	KindNVMe: "nvme", KindStorage: "disk", KindNIC: "nic", KindOther: "dev",
}

// Builder assembles a Machine node by node. Importers, discovery and the
// profiles package use it so every machine gets the same id scheme and the
// same derived links.
type Builder struct {
	m    *Machine
	next map[Kind]int
	idx  map[string]int
}

// NewBuilder starts an empty machine.
func NewBuilder(name, source string) *Builder {
	return &Builder{
		m:    &Machine{SchemaVersion: SchemaVersion, Name: name, Source: source, Nodes: []Node{}, Links: []Link{}},
		next: map[Kind]int{},
		idx:  map[string]int{},
	}
}

// Add appends a node and returns its id. An empty n.ID gets the next id of
// its kind ("gpu0", "gpu1", ...); a given id must be unused.
func (b *Builder) Add(n Node) string {
	if n.ID == "" {
		for {
			n.ID = fmt.Sprintf("%s%d", idPrefix[n.Kind], b.next[n.Kind])
			b.next[n.Kind]++
			if _, used := b.idx[n.ID]; !used {
				break
			}
		}
	}
	b.idx[n.ID] = len(b.m.Nodes)
	b.m.Nodes = append(b.m.Nodes, n)
	return n.ID
}

// Node returns the node with the given id for in-place edits, or nil.
func (b *Builder) Node(id string) *Node {
	i, ok := b.idx[id]
	if !ok {
		return nil
	}
	return &b.m.Nodes[i]
}

// Link appends a link.
func (b *Builder) Link(l Link) { b.m.Links = append(b.m.Links, l) }

// PCIeLink links parent to child with a PCIe link of the given generation
// and width. When either is unknown the capacity is assumed (Gen3 x16,
// 12 GB/s, the most common server slot) and the link's source says so.
func (b *Builder) PCIeLink(parent, child string, gen, lanes int, source string) {
	l := Link{From: parent, To: child, Kind: LinkPCIe, PCIeGen: gen, Lanes: lanes, Source: source}
	l.GBps = PCIeGBps(gen, lanes)
	if l.GBps == 0 {
		l.GBps = PCIeGBps(3, 16)
		l.Source = SourceAssumed
	}
	b.Link(l)
}

// Note records an assumption or a caveat the user should read.
func (b *Builder) Note(format string, args ...any) {
	b.m.Notes = append(b.m.Notes, fmt.Sprintf(format, args...))
}

// Machine returns the machine under construction without finishing it.
func (b *Builder) Machine() *Machine { return b.m }

// Finish derives what the parts imply and validates the result:
//   - the functions of a multi-function device share its one link (see
//     shareMultiFunctionLinks);
//   - every node with a parent and no link from it gets one: an on-die link
//     for a root port under a socket (capacity: the sum of the root port's
//     downstream links, so the root complex itself never binds), a PCIe
//     link otherwise (capacity from the child's lanes and generation, or
//     assumed);
//   - sockets get an inter-socket link to each other socket, at the CPU
//     family's rate, unless one was added already.
func (b *Builder) Finish(sockets CPUArch) (*Machine, error) {
	m := b.m
	b.shareMultiFunctionLinks()
	hasUplink := map[string]bool{}
	for _, l := range m.Links {
		if n := b.Node(l.To); n != nil && n.Parent == l.From {
			hasUplink[l.To] = true
		}
	}
	// PCIe links first: the on-die capacities below sum them.
	for i := range m.Nodes {
		n := m.Nodes[i]
		if n.Parent == "" || hasUplink[n.ID] {
			continue
		}
		p := b.Node(n.Parent)
		if p.Kind == KindSocket {
			continue
		}
		gen, lanes := n.PCIeGen, n.Lanes
		if p.Kind == KindSlot {
			// A card runs at the lesser of its own and its slot's link.
			gen, lanes = MinKnown(gen, p.PCIeGen), MinKnown(lanes, p.Lanes)
		}
		b.PCIeLink(n.Parent, n.ID, gen, lanes, SourceDerived)
		hasUplink[n.ID] = true
	}
	b.inferSwitchUplinks()
	// One pass over the links: summing per node would be quadratic in a
	// machine with many root complexes.
	downstream := map[string]float64{}
	for _, l := range m.Links {
		if l.Kind == LinkPCIe {
			downstream[l.From] += l.GBps
		}
	}
	var capped []string
	for i := range m.Nodes {
		n := m.Nodes[i]
		if n.Parent == "" || hasUplink[n.ID] {
			continue
		}
		sum := downstream[n.ID]
		src := SourceSum
		if sum == 0 {
			sum, src = PCIeGBps(3, 16), SourceAssumed
		}
		// A root complex carries at most its CPU's PCIe lanes x rate
		// (docs/architecture.md section 3), however much hangs below it; and no link
		// carries more than MaxLinkGBps.
		if rc := sockets.RootComplexGBps(); rc > 0 && b.Node(n.Parent).Kind == KindSocket && sum > rc {
			lanes, gen := sockets.PCIe()
			sum, src = rc, SourceCPULanes
			capped = append(capped, fmt.Sprintf("%s (%d Gen%d lanes, %g GB/s)", n.ID, lanes, gen, rc))
		}
		sum = min(sum, MaxLinkGBps)
		b.Link(Link{From: n.Parent, To: n.ID, Kind: LinkOnDie, GBps: sum, Source: src})
	}
	if len(capped) > 0 {
		b.Note("%d root complex(es) have more below them than their CPU has PCIe lanes for: capped at %s; several root complexes of one socket are each capped, not their total", len(capped), strings.Join(capped, ", "))
	}
	var socks []string
	for _, n := range m.Nodes {
		if n.Kind == KindSocket {
			socks = append(socks, n.ID)
		}
	}
	linked := map[[2]string]bool{}
	for _, l := range m.Links {
		if l.Kind == LinkInterSocket {
			linked[[2]string{l.From, l.To}] = true
			linked[[2]string{l.To, l.From}] = true
		}
	}
	sort.Strings(socks)
	if sockets.GBps > 0 {
		for i := 0; i < len(socks); i++ {
			for j := i + 1; j < len(socks); j++ {
				if linked[[2]string{socks[i], socks[j]}] {
					continue
				}
				b.Link(Link{From: socks[i], To: socks[j], Kind: LinkInterSocket, GBps: sockets.GBps,
					Source: SourceNominal, Label: sockets.Link + " (" + sockets.Name + ")"})
			}
		}
	}
	if err := m.validateInput(); err != nil {
		return nil, err
	}
	return m, nil
}

// MinKnown is the smaller of two values where 0 means unknown: a card
// runs at the lesser of its own and its slot's width and generation.
func MinKnown(a, b int) int {
	switch {
	case a == 0:
		return b
	case b == 0 || a < b:
		return a
	}
	return b
}

// shareMultiFunctionLinks makes the functions of one device (same
// domain:bus:device, different .function: the two ports of a dual-port NIC,
// a GPU and its audio function) share the device's one physical link. Left
// as siblings, each function would have its own copy of the link and two
// NIC ports would count twice the bandwidth. The lowest function keeps the
// uplink; the others hang below it, their link to it the same capacity (the
// device's internal path never binds before its own link does). Only
// endpoint devices are grouped: root ports and switch ports that are
// functions of one device each have a link of their own.
func (b *Builder) shareMultiFunctionLinks() {
	m := b.m
	primary := map[string]string{} // domain:bus:device -> node id of the lowest function
	fn := map[string]int64{}       // node id -> its function number
	for i := range m.Nodes {
		n := &m.Nodes[i]
		dev, f, ok := splitPCIFunction(n.PCIAddress)
		if !ok || !n.Kind.IsDevice() || n.Parent == "" {
			continue
		}
		fn[n.ID] = f
		if p, seen := primary[dev]; !seen || f < fn[p] {
			primary[dev] = n.ID
		}
	}
	uplink := make(map[string]int, len(m.Links))
	for i, l := range m.Links {
		if n := b.Node(l.To); n != nil && n.Parent == l.From {
			uplink[l.To] = i
		}
	}
	moved := 0
	for i := range m.Nodes {
		n := &m.Nodes[i]
		dev, _, ok := splitPCIFunction(n.PCIAddress)
		if !ok {
			continue
		}
		p, has := primary[dev]
		if !has || p == n.ID {
			continue
		}
		// The lowest function may already sit in a slot below the port.
		if pp := b.Node(p).Parent; pp != n.Parent && !(b.Node(pp).Kind == KindSlot && b.Node(pp).Parent == n.Parent) {
			continue
		}
		if li, ok := uplink[n.ID]; ok {
			l := &m.Links[li]
			l.From = p
			if l.Label == "" {
				l.Label = "function of " + p
			}
			// One link: where only the lowest function's is known (lspci
			// -vvv of function .0 alone), the others take it.
			if pl, ok := uplink[p]; ok && l.Source == SourceAssumed && m.Links[pl].Source != SourceAssumed && m.Links[pl].Kind == LinkPCIe {
				l.PCIeGen, l.Lanes, l.GBps, l.Source = m.Links[pl].PCIeGen, m.Links[pl].Lanes, m.Links[pl].GBps, m.Links[pl].Source
			}
		}
		n.Parent = p
		moved++
	}
	if moved > 0 {
		b.Note("%d PCI function(s) share the link of another function of the same device (a multi-function card has one link): they hang below its lowest function", moved)
	}
}

// splitPCIFunction splits "dddd:bb:dd.f" into "dddd:bb:dd" and f.
func splitPCIFunction(addr string) (dev string, fn int64, ok bool) {
	i := strings.LastIndexByte(addr, '.')
	if i <= 0 || i == len(addr)-1 {
		return "", 0, false
	}
	f, err := strconv.ParseInt(addr[i+1:], 16, 32)
	if err != nil {
		return "", 0, false
	}
	return strings.ToLower(addr[:i]), f, true
}

// inferSwitchUplinks gives a switch whose uplink reports no speed or width
// (an assumed Gen3 x16) the generation and width of the fastest and widest
// link it carries: a switch is built with an uplink at least that wide, and
// the assumption would make a Gen5 switch of Gen5 GPUs a Gen3 bottleneck.
func (b *Builder) inferSwitchUplinks() {
	if n := b.inferUplinks(KindSwitch); n > 0 {
		b.Note("%d switch uplink(s) report no speed or width: taken as the fastest and widest link each switch carries", n)
	}
	// A root port's link is the link to what hangs below it; where the
	// capture gives it no details (lspci -tv alone) the links below say
	// what it carries, instead of an assumed Gen3 x16 capping a Gen4 GPU.
	if n := b.inferUplinks(KindRootPort); n > 0 {
		b.Note("%d root port link(s) report no speed or width: taken as the fastest and widest link below each", n)
	}
}

// inferUplinks gives each node of kind whose PCIe uplink is assumed the
// generation and width of the fastest and widest known PCIe link below it,
// and returns how many it changed.
func (b *Builder) inferUplinks(kind Kind) int {
	m := b.m
	type best struct{ gen, lanes int }
	below := map[string]best{}
	for _, l := range m.Links {
		if l.Kind != LinkPCIe || l.Source == SourceAssumed {
			continue
		}
		if n := b.Node(l.From); n == nil || n.Kind != kind {
			continue
		}
		x := below[l.From]
		below[l.From] = best{max(x.gen, l.PCIeGen), max(x.lanes, l.Lanes)}
	}
	inferred := 0
	for i := range m.Links {
		l := &m.Links[i]
		if l.Kind != LinkPCIe || l.Source != SourceAssumed {
			continue
		}
		if n := b.Node(l.To); n == nil || n.Kind != kind || n.Parent != l.From {
			continue
		}
		x := below[l.To]
		if x.gen == 0 || x.lanes == 0 {
			continue
		}
		l.PCIeGen, l.Lanes, l.GBps, l.Source = x.gen, x.lanes, PCIeGBps(x.gen, x.lanes), SourceDerived
		inferred++
	}
	return inferred
}
