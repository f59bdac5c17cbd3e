package topology

import (
	"fmt"
	"math"
	"sort"
)

// SchemaVersion is the version of the machine JSON format this package
// reads and writes. Files with any other version are refused.
const SchemaVersion = 1

// Kind is the type of a node. Code matches nodes by Kind, never by name.
type Kind string

// Node kinds.
const (
	KindSocket      Kind = "socket"      // a CPU package with its NUMA memory
	KindRootPort    Kind = "root_port"   // a root complex, host bridge or root port
	KindSwitch      Kind = "switch"      // a PCIe switch (upstream + downstream ports collapsed)
	KindBridge      Kind = "bridge"      // a PCI bridge that is not a switch (e.g. PCIe-to-PCI)
	KindSlot        Kind = "slot"        // a physical slot or bay, empty or holding one device
	KindGPU         Kind = "gpu"         // a GPU
	KindAccelerator Kind = "accelerator" // a processing accelerator or coprocessor that is not a GPU
	KindNVSwitch    Kind = "nvswitch"    // an NVLink switch
	KindNVMe        Kind = "nvme"        // an NVMe SSD
	KindStorage     Kind = "storage"     // another storage controller (SATA, SAS, virtio-blk)
	KindNIC         Kind = "nic"         // a network or InfiniBand adapter
	KindOther       Kind = "other"       // any other PCI function
)

var knownKinds = map[Kind]bool{
	KindSocket: true, KindRootPort: true, KindSwitch: true, KindBridge: true,
	KindSlot: true, KindGPU: true, KindAccelerator: true, KindNVSwitch: true,
	KindNVMe: true, KindStorage: true, KindNIC: true, KindOther: true,
}

// Valid reports whether k is one of the kinds above.
func (k Kind) Valid() bool { return knownKinds[k] }

// IsDevice reports whether nodes of this kind are endpoint devices (the
// things that go into slots), as opposed to sockets, ports, switches and slots.
func (k Kind) IsDevice() bool {
	switch k {
	case KindGPU, KindAccelerator, KindNVSwitch, KindNVMe, KindStorage, KindNIC, KindOther:
		return true
	}
	return false
}

// LinkKind is the technology of a link.
type LinkKind string

// Link kinds.
const (
	LinkPCIe        LinkKind = "pcie"         // a PCIe link
	LinkOnDie       LinkKind = "on_die"       // socket to its own root complex
	LinkInterSocket LinkKind = "inter_socket" // QPI / UPI / Infinity Fabric between sockets
	LinkNVLink      LinkKind = "nvlink"       // NVLink between GPUs or GPU and NVSwitch
	LinkXGMI        LinkKind = "xgmi"         // AMD xGMI / Infinity Fabric between GPUs
)

var knownLinkKinds = map[LinkKind]bool{
	LinkPCIe: true, LinkOnDie: true, LinkInterSocket: true, LinkNVLink: true, LinkXGMI: true,
}

// Valid reports whether k is one of the link kinds above.
func (k LinkKind) Valid() bool { return knownLinkKinds[k] }

// BlockDevice is a disk seen by the operating system behind a controller.
type BlockDevice struct {
	Name      string `json:"name"`
	SizeBytes uint64 `json:"size_bytes"`
	Model     string `json:"model,omitempty"`
}

// Node is one vertex of the machine. Which fields are set depends on Kind.
type Node struct {
	ID     string `json:"id"`
	Kind   Kind   `json:"kind"`
	Parent string `json:"parent,omitempty"` // the node above in the PCIe tree (empty for sockets)
	Name   string `json:"name,omitempty"`   // for people: model name, or vendor:device in hex

	// PCI identity (discovered or imported machines).
	PCIAddress string `json:"pci_address,omitempty"` // domain:bus:device.function
	VendorID   string `json:"vendor_id,omitempty"`   // 4 hex digits
	DeviceID   string `json:"device_id,omitempty"`   // 4 hex digits
	Class      string `json:"class,omitempty"`       // 0xCCSSPP
	Driver     string `json:"driver,omitempty"`

	// NUMANode is the NUMA node the node belongs to; nil when unknown.
	NUMANode *int `json:"numa_node,omitempty"`

	// Sockets.
	CPUModel  string  `json:"cpu_model,omitempty"`
	CPUList   string  `json:"cpu_list,omitempty"` // Linux cpulist, e.g. "0-31,64-95"
	Cores     int     `json:"cores,omitempty"`
	Threads   int     `json:"threads,omitempty"`
	MemoryGiB float64 `json:"memory_GiB,omitempty"` // socket DRAM, or device memory for GPUs
	// DIMMSlots and DIMMs are a socket's memory slots and how many hold a
	// module; MemoryType is the modules' kind ("ddr4", "ddr5"). A plan
	// may fill the free slots with catalog DIMMs of that kind.
	DIMMSlots  int    `json:"dimm_slots,omitempty"`
	DIMMs      int    `json:"dimms,omitempty"`
	MemoryType string `json:"memory_type,omitempty"`
	// MemoryChannels is a socket's memory channels (0: unknown): memory
	// added keeps every channel holding as many modules, as interleaving
	// across them needs. MaxMemoryGiB is the most memory the CPU takes
	// per socket (0: no limit known).
	MemoryChannels int     `json:"memory_channels,omitempty"`
	MaxMemoryGiB   float64 `json:"max_memory_GiB,omitempty"`

	// Slots.
	Lanes       int    `json:"lanes,omitempty"`    // electrical lane width
	PCIeGen     int    `json:"pcie_gen,omitempty"` // PCIe generation of the slot or port
	DoubleWidth bool   `json:"double_width,omitempty"`
	Occupied    bool   `json:"occupied,omitempty"`
	Label       string `json:"label,omitempty"` // SMBIOS slot designation or a board label
	// Takes, on a slot, is the one kind of device it takes: set on the
	// position a GPU or SSD was found at with no slot record (an SXM
	// socket, an onboard M.2 connector), which takes that kind again. ""
	// takes any card the slot's lanes and width fit.
	Takes Kind `json:"takes,omitempty"`

	// Devices.
	Model        string        `json:"model,omitempty"`     // catalog model key, e.g. "a100-40gb-pcie"
	ReadGBps     float64       `json:"read_GBps,omitempty"` // storage read rate, when known
	BlockDevices []BlockDevice `json:"block_devices,omitempty"`
}

// Link is an edge between two nodes with a capacity per direction.
type Link struct {
	From    string   `json:"from"` // upstream end for tree links
	To      string   `json:"to"`
	Kind    LinkKind `json:"kind"`
	GBps    float64  `json:"GBps"`               // capacity in each direction, decimal GB/s
	PCIeGen int      `json:"pcie_gen,omitempty"` // PCIe links
	Lanes   int      `json:"lanes,omitempty"`    // PCIe links
	Count   int      `json:"count,omitempty"`    // NVLink/xGMI/UPI link count

	// CurrentPCIeGen and CurrentLanes are what the link runs at now, when
	// known and different from the capacity's generation and width: a GPU
	// idling in power save reports 2.5 GT/s, so capacity uses the maximum.
	CurrentPCIeGen int `json:"current_pcie_gen,omitempty"`
	CurrentLanes   int `json:"current_lanes,omitempty"`

	Source string `json:"source,omitempty"` // where the capacity came from
	Label  string `json:"label,omitempty"`  // e.g. "bus 11"
}

// Machine is a whole server.
type Machine struct {
	SchemaVersion int      `json:"schema_version"`
	Name          string   `json:"name"`
	Source        string   `json:"source"` // "sysfs:/", "profile:moment-b", "nccl-xml:FILE", ...
	Notes         []string `json:"notes,omitempty"`
	Nodes         []Node   `json:"nodes"`
	Links         []Link   `json:"links"`
}

// Node returns the node with the given id, or nil.
func (m *Machine) Node(id string) *Node {
	for i := range m.Nodes {
		if m.Nodes[i].ID == id {
			return &m.Nodes[i]
		}
	}
	return nil
}

// NodesByID indexes the nodes by id, for callers that look up many: Node
// scans. The pointers are into m.Nodes, valid until it is appended to.
func (m *Machine) NodesByID() map[string]*Node {
	byID := make(map[string]*Node, len(m.Nodes))
	for i := range m.Nodes {
		byID[m.Nodes[i].ID] = &m.Nodes[i]
	}
	return byID
}

// NodesOfKind returns the nodes of kind k in file order.
func (m *Machine) NodesOfKind(k Kind) []*Node {
	var out []*Node
	for i := range m.Nodes {
		if m.Nodes[i].Kind == k {
			out = append(out, &m.Nodes[i])
		}
	}
	return out
}

// Count returns how many nodes of kind k the machine has.
func (m *Machine) Count(k Kind) int {
	n := 0
	for i := range m.Nodes {
		if m.Nodes[i].Kind == k {
			n++
		}
	}
	return n
}

// CountLinks returns how many links of kind k the machine has. NVLink and
// xGMI links are counted by their Count field (a link element with count 4 is
// four links), other kinds one per Link.
func (m *Machine) CountLinks(k LinkKind) int {
	n := 0
	for _, l := range m.Links {
		if l.Kind != k {
			continue
		}
		if l.Count > 0 {
			n += l.Count
		} else {
			n++
		}
	}
	return n
}

// Children returns the ids of the nodes whose parent is id, in file order.
func (m *Machine) Children(id string) []string {
	var out []string
	for i := range m.Nodes {
		if m.Nodes[i].Parent == id {
			out = append(out, m.Nodes[i].ID)
		}
	}
	return out
}

// Roots returns the ids of nodes without a parent, in file order.
func (m *Machine) Roots() []string { return m.Children("") }

// UplinkOf returns the tree link from the node's parent to the node, or nil.
func (m *Machine) UplinkOf(id string) *Link {
	n := m.Node(id)
	if n == nil || n.Parent == "" {
		return nil
	}
	for i := range m.Links {
		l := &m.Links[i]
		if l.From == n.Parent && l.To == id {
			return l
		}
	}
	return nil
}

// Socket returns the socket above id in the tree, or nil.
func (m *Machine) Socket(id string) *Node {
	seen := 0
	for n := m.Node(id); n != nil && seen <= len(m.Nodes); n = m.Node(n.Parent) {
		if n.Kind == KindSocket {
			return n
		}
		seen++
	}
	return nil
}

// Validate checks the structural invariants every Machine must hold: known
// schema version, unique non-empty ids, known kinds, parents that exist and
// form no cycle, links between existing nodes with finite positive
// capacities. The error names the first offending node or link.
func (m *Machine) Validate() error {
	if m.SchemaVersion != SchemaVersion {
		return fmt.Errorf("schema_version %d is not supported (this gnnplan reads version %d)", m.SchemaVersion, SchemaVersion)
	}
	ids := make(map[string]int, len(m.Nodes))
	for i, n := range m.Nodes {
		if n.ID == "" {
			return fmt.Errorf("nodes[%d].id: empty (every node needs a unique id)", i)
		}
		if _, dup := ids[n.ID]; dup {
			return fmt.Errorf("nodes[%d].id: %q is used twice (ids must be unique)", i, n.ID)
		}
		ids[n.ID] = i
		if !n.Kind.Valid() {
			return fmt.Errorf("nodes[%d].kind: %q is not a node kind (valid: %s)", i, n.Kind, kindList())
		}
		if n.Lanes < 0 || n.Lanes > 32 {
			return fmt.Errorf("nodes[%d].lanes: %d (valid: 0 to 32)", i, n.Lanes)
		}
		if n.PCIeGen < 0 || n.PCIeGen > 7 {
			return fmt.Errorf("nodes[%d].pcie_gen: %d (valid: 1 to 7, or 0 for unknown)", i, n.PCIeGen)
		}
		if n.DIMMSlots < 0 || n.DIMMs < 0 || n.DIMMs > n.DIMMSlots && n.DIMMSlots > 0 {
			return fmt.Errorf("nodes[%d].dimms: %d of %d DIMM slots (valid: 0 to dimm_slots)", i, n.DIMMs, n.DIMMSlots)
		}
		if n.MemoryChannels < 0 || n.MemoryChannels > 0 && n.DIMMSlots > 0 && n.DIMMSlots%n.MemoryChannels != 0 {
			return fmt.Errorf("nodes[%d].memory_channels: %d for %d DIMM slots (valid: 0, or a divisor of dimm_slots)", i, n.MemoryChannels, n.DIMMSlots)
		}
		if n.MaxMemoryGiB < 0 || math.IsNaN(n.MaxMemoryGiB) {
			return fmt.Errorf("nodes[%d].max_memory_GiB: %v (valid: 0 for no limit, or more)", i, n.MaxMemoryGiB)
		}
		if n.MemoryType != "" && n.MemoryType != "ddr4" && n.MemoryType != "ddr5" {
			return fmt.Errorf("nodes[%d].memory_type: %q (valid: ddr4, ddr5)", i, n.MemoryType)
		}
		if n.Takes != "" && (n.Kind != KindSlot || (n.Takes != KindGPU && n.Takes != KindNVMe)) {
			return fmt.Errorf("nodes[%d].takes: %q on a %s (valid: %s or %s, on a slot)", i, n.Takes, n.Kind, KindGPU, KindNVMe)
		}
		if n.Cores < 0 || n.Threads < 0 {
			return fmt.Errorf("nodes[%d] (%s): cores %d, threads %d (counts must be >= 0)", i, n.ID, n.Cores, n.Threads)
		}
		if n.Kind == KindSocket && n.Parent != "" {
			return fmt.Errorf("nodes[%d].parent: socket %s has parent %q (a socket is the top of its tree and has no parent)", i, n.ID, n.Parent)
		}
		if bad(n.MemoryGiB) || bad(n.ReadGBps) {
			return fmt.Errorf("nodes[%d] (%s): memory_GiB and read_GBps must be finite and non-negative", i, n.ID)
		}
	}
	for i, n := range m.Nodes {
		if n.Parent == "" {
			continue
		}
		if _, ok := ids[n.Parent]; !ok {
			return fmt.Errorf("nodes[%d].parent: %q names no node", i, n.Parent)
		}
		// Walk up; a path longer than the node count is a cycle.
		p, steps := n.Parent, 0
		for p != "" {
			if steps > len(m.Nodes) || p == n.ID {
				return fmt.Errorf("nodes[%d].parent: %q is part of a parent cycle", i, n.ID)
			}
			p = m.Nodes[ids[p]].Parent
			steps++
		}
	}
	seenLinks := make(map[[3]string]int, len(m.Links))
	for i, l := range m.Links {
		if _, ok := ids[l.From]; !ok {
			return fmt.Errorf("links[%d].from: %q names no node", i, l.From)
		}
		if _, ok := ids[l.To]; !ok {
			return fmt.Errorf("links[%d].to: %q names no node", i, l.To)
		}
		if l.From == l.To {
			return fmt.Errorf("links[%d]: from and to are both %q", i, l.From)
		}
		if !l.Kind.Valid() {
			return fmt.Errorf("links[%d].kind: %q is not a link kind (valid: pcie, on_die, inter_socket, nvlink, xgmi)", i, l.Kind)
		}
		if math.IsNaN(l.GBps) || math.IsInf(l.GBps, 0) || l.GBps <= 0 {
			return fmt.Errorf("links[%d].GBps: %v (a capacity in GB/s must be finite and > 0)", i, l.GBps)
		}
		if l.PCIeGen > 7 || l.Lanes > 32 || l.CurrentPCIeGen > 7 || l.CurrentLanes > 32 {
			return fmt.Errorf("links[%d] (%s->%s): pcie_gen %d, lanes %d (valid: gen 1 to 7, 1 to 32 lanes, 0 for unknown)", i, l.From, l.To, l.PCIeGen, l.Lanes)
		}
		// A link listed twice would count its capacity twice. Fabric
		// links have no direction; tree links go parent to child.
		key := [3]string{l.From, l.To, string(l.Kind)}
		if l.To < l.From && l.Kind != LinkPCIe && l.Kind != LinkOnDie {
			key = [3]string{l.To, l.From, string(l.Kind)}
		}
		if j, dup := seenLinks[key]; dup {
			return fmt.Errorf("links[%d]: %s link %s->%s duplicates links[%d] (it would count its capacity twice; give one link with count for parallel links)", i, l.Kind, l.From, l.To, j)
		}
		seenLinks[key] = i
		if l.Count < 0 || l.Lanes < 0 || l.PCIeGen < 0 || l.CurrentLanes < 0 || l.CurrentPCIeGen < 0 {
			return fmt.Errorf("links[%d]: count, lanes, pcie_gen, current_lanes and current_pcie_gen must be >= 0", i)
		}
	}
	return nil
}

// validateInput is Validate plus the bounds of real hardware, for machines
// read from a file or built by an importer: no link carries more than
// MaxLinkGBps. (Validate alone admits larger capacities, which solvers use
// for links that must never bind.)
func (m *Machine) validateInput() error {
	if err := m.Validate(); err != nil {
		return err
	}
	for i, l := range m.Links {
		if l.GBps > MaxLinkGBps {
			return fmt.Errorf("links[%d].GBps: %v (%s->%s: no real link carries more than %d GB/s per direction)", i, l.GBps, l.From, l.To, MaxLinkGBps)
		}
	}
	return nil
}

func bad(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) || v < 0 }

func kindList() string {
	ks := make([]string, 0, len(knownKinds))
	for k := range knownKinds {
		ks = append(ks, string(k))
	}
	sort.Strings(ks)
	s := ""
	for i, k := range ks {
		if i > 0 {
			s += ", "
		}
		s += k
	}
	return s
}

// Summary counts what a machine holds.
type Summary struct {
	Sockets       int     `json:"sockets"`
	MemoryGiB     float64 `json:"memory_GiB"`
	RootPorts     int     `json:"root_ports"`
	Switches      int     `json:"switches"`
	Slots         int     `json:"slots"`
	EmptySlots    int     `json:"empty_slots"`
	GPUs          int     `json:"gpus"`
	Accelerators  int     `json:"accelerators"`
	NVSwitches    int     `json:"nvswitches"`
	NVMe          int     `json:"nvme"`
	Storage       int     `json:"storage"`
	NICs          int     `json:"nics"`
	NVLinks       int     `json:"nvlinks"`
	XGMILinks     int     `json:"xgmi_links"`
	InterSocket   int     `json:"inter_socket_links"`
	BlockDevices  int     `json:"block_devices"`
	UnknownLinkBW int     `json:"links_with_assumed_GBps"`
}

// Summarize counts the machine's nodes and links by kind.
func (m *Machine) Summarize() Summary {
	s := Summary{
		Sockets: m.Count(KindSocket), RootPorts: m.Count(KindRootPort), Switches: m.Count(KindSwitch),
		Slots: m.Count(KindSlot), GPUs: m.Count(KindGPU), Accelerators: m.Count(KindAccelerator),
		NVSwitches: m.Count(KindNVSwitch), NVMe: m.Count(KindNVMe), Storage: m.Count(KindStorage),
		NICs: m.Count(KindNIC), NVLinks: m.CountLinks(LinkNVLink), XGMILinks: m.CountLinks(LinkXGMI),
		InterSocket: m.CountLinks(LinkInterSocket),
	}
	for _, n := range m.Nodes {
		if n.Kind == KindSocket {
			s.MemoryGiB += n.MemoryGiB
		}
		if n.Kind == KindSlot && !n.Occupied {
			s.EmptySlots++
		}
		s.BlockDevices += len(n.BlockDevices)
	}
	for _, l := range m.Links {
		if l.Source == SourceAssumed {
			s.UnknownLinkBW++
		}
	}
	return s
}

// SortedKind returns the ids of the nodes of kind k in natural order
// (gpu2 before gpu10), the order results list devices in.
func (m *Machine) SortedKind(k Kind) []string {
	var ids []string
	for i := range m.Nodes {
		if m.Nodes[i].Kind == k {
			ids = append(ids, m.Nodes[i].ID)
		}
	}
	sort.SliceStable(ids, func(i, j int) bool { return NaturalLess(ids[i], ids[j]) })
	return ids
}

// NaturalLess orders ids by their stem, then by their trailing number.
func NaturalLess(a, b string) bool {
	sa, na := splitTrailingNumber(a)
	sb, nb := splitTrailingNumber(b)
	if sa != sb {
		return sa < sb
	}
	if na != nb {
		return na < nb
	}
	return a < b
}

func splitTrailingNumber(s string) (string, int) {
	i := len(s)
	for i > 0 && s[i-1] >= '0' && s[i-1] <= '9' {
		i--
	}
	n := 0
	for _, c := range s[i:] {
		n = n*10 + int(c-'0')
		if n > 1<<40 {
			break
		}
	}
	return s[:i], n
}
