package profiles

import (
	"fmt"
	"sort"
	"strings"

	"github.com/gnnplan/gnnplan/topology"
)

// Catalog model keys of the parts the machine profiles hold.
const (
	ModelA100_40GBPCIe = "a100-40gb-pcie"
	ModelA100_80GBPCIe = "a100-80gb-pcie"
	ModelP5510_3_84TB  = "p5510-3.84tb"
)

// machineProfile is one embedded machine: a description for `--help` and a
// constructor, so every call returns a fresh Machine the caller may edit.
type machineProfile struct {
	name  string
	about string
	build func() (*topology.Machine, error)
}

func machineProfiles() []machineProfile {
	return []machineProfile{
		{"moment-a", "Moment's machine A: 2 x Xeon Gold 5320, balanced PCIe tree, 4 x A100 40GB PCIe, 8 x Intel P5510", momentA},
		{"moment-b", "Moment's machine B: 2 x Xeon Gold 6426Y, cascaded PCIe switches, 4 x A100 40GB PCIe, 8 x Intel P5510", momentB},
		{"hyperion-a", "Hyperion's machine A: 2 x Xeon Gold 5320, 1 x A100 80GB PCIe, 12 x Intel P5510", hyperionA},
	}
}

// MachineNames lists the embedded machine profiles, sorted.
func MachineNames() []string {
	var names []string
	for _, p := range machineProfiles() {
		names = append(names, p.name)
	}
	sort.Strings(names)
	return names
}

// MachineAbout returns the one-line description of a machine profile.
func MachineAbout(name string) string {
	for _, p := range machineProfiles() {
		if p.name == name {
			return p.about
		}
	}
	return ""
}

// Machine returns a fresh copy of the named machine profile. An unknown
// name is a *topology.InputError that lists the known ones.
func Machine(name string) (*topology.Machine, error) {
	for _, p := range machineProfiles() {
		if p.name == name {
			m, err := p.build()
			if err != nil {
				return nil, fmt.Errorf("profile %s: %w", name, err)
			}
			return m, nil
		}
	}
	return nil, &topology.InputError{Field: "--profile",
		Msg: fmt.Sprintf("unknown machine profile %q (known: %s)", name, strings.Join(MachineNames(), ", "))}
}

// device is a part installed in a slot.
type device struct {
	kind   topology.Kind
	model  string
	name   string
	memGiB float64
	lanes  int
}

func a100_40() *device {
	return &device{topology.KindGPU, ModelA100_40GBPCIe, "NVIDIA A100 40GB PCIe", 40, 16}
}

func a100_80() *device {
	return &device{topology.KindGPU, ModelA100_80GBPCIe, "NVIDIA A100 80GB PCIe", 80, 16}
}

func p5510() *device {
	return &device{topology.KindNVMe, ModelP5510_3_84TB, "Intel SSD D7-P5510 3.84TB", 0, 4}
}

// slot is one physical slot or bay and what it holds.
type slot struct {
	label  string
	lanes  int
	double bool
	dev    *device
}

// x16 is a full-length x16 slot that takes a double-width card.
func x16(label string, d *device) slot { return slot{label, 16, true, d} }

// x16Slots returns slots label 0..n-1 holding devs in order, empty after.
func x16Slots(label string, n int, devs ...*device) []slot {
	out := make([]slot, n)
	for i := range out {
		var d *device
		if i < len(devs) {
			d = devs[i]
		}
		out[i] = x16(fmt.Sprintf("%s %d", label, i), d)
	}
	return out
}

// bays returns n front NVMe bays, each holding an SSD.
func bays(label string, n int) []slot {
	out := make([]slot, n)
	for i := range out {
		out[i] = bay(fmt.Sprintf("%s %d", label, i), p5510())
	}
	return out
}

// xeon5320Chassis builds the balanced two-socket Ice Lake chassis of
// Moment's machine A (and, by assumption, Hyperion's): per socket a root
// complex with 4 x4 NVMe bays and one 8-slot x16 PCIe switch. sw0 and sw1
// are the devices in each switch's slots, in slot order.
func xeon5320Chassis(name, bus9 string, sw0, sw1 []*device) *machineBuilder {
	const cpu = "Intel Xeon Gold 5320"
	mb := &machineBuilder{b: topology.NewBuilder(name, "profile:"+name), gen: 4}
	s0 := mb.socket(cpu, 0, 26, 52, 384)
	s1 := mb.socket(cpu, 1, 26, 52, 384)
	// Ice Lake: 8 DDR4 channels, 2 DIMMs per channel, at most 6 TB a
	// socket (Intel ARK); 384 GiB as 12 x 32 GiB is an assumption (the
	// papers give only the total).
	mb.dimms(s0, 16, 8, 12, "ddr4", 6144)
	mb.dimms(s1, 16, 8, 12, "ddr4", 6144)
	rc0 := mb.rootComplex(s0, 0, "root complex 0")
	rc1 := mb.rootComplex(s1, 1, "root complex 1")
	mb.slots(rc0, bays("RC0 bay", 4)...)
	mb.slots(mb.pcieSwitch(rc0, "PCIe switch 0", bus9), x16Slots("SW0 slot", 8, sw0...)...)
	mb.slots(rc1, bays("RC1 bay", 4)...)
	mb.slots(mb.pcieSwitch(rc1, "PCIe switch 1", ""), x16Slots("SW1 slot", 8, sw1...)...)
	mb.b.Note("memory: Table I/3 give 768 GB in all; assumed 384 GiB per socket, as 12 x 32 GiB DDR4 in 16 slots")
	return mb
}

// bay is a front U.2 NVMe bay: x4, no GPU fits.
func bay(label string, d *device) slot { return slot{label, 4, false, d} }

// machineBuilder adds slots and devices to a topology.Builder for PCIe Gen4
// machines.
type machineBuilder struct {
	b   *topology.Builder
	gen int
}

func (mb *machineBuilder) socket(cpu string, numa int, cores, threads int, memGiB float64) string {
	n := numa
	return mb.b.Add(topology.Node{Kind: topology.KindSocket, CPUModel: cpu, NUMANode: &n,
		Cores: cores, Threads: threads, MemoryGiB: memGiB})
}

// dimms gives a socket its memory: slots in all over channels, installed
// of them holding modules of kind typ, and the most memory its CPU takes.
func (mb *machineBuilder) dimms(socket string, slots, channels, installed int, typ string, maxGiB float64) {
	n := mb.b.Node(socket)
	n.DIMMSlots, n.MemoryChannels, n.DIMMs, n.MemoryType, n.MaxMemoryGiB = slots, channels, installed, typ, maxGiB
}

func (mb *machineBuilder) rootComplex(socket string, numa int, name string) string {
	n := numa
	return mb.b.Add(topology.Node{Kind: topology.KindRootPort, Parent: socket, Name: name, NUMANode: &n})
}

// pcieSwitch adds a switch below parent with an x16 uplink labelled with the
// paper's bus name.
func (mb *machineBuilder) pcieSwitch(parent, name, bus string) string {
	id := mb.b.Add(topology.Node{Kind: topology.KindSwitch, Parent: parent, Name: name, Lanes: 16, PCIeGen: mb.gen})
	mb.b.Link(topology.Link{From: parent, To: id, Kind: topology.LinkPCIe, PCIeGen: mb.gen, Lanes: 16,
		GBps: topology.PCIeGBps(mb.gen, 16), Source: topology.SourceProfile, Label: bus})
	return id
}

func (mb *machineBuilder) slots(parent string, ss ...slot) {
	for _, s := range ss {
		id := mb.b.Add(topology.Node{Kind: topology.KindSlot, Parent: parent, Label: s.label,
			Lanes: s.lanes, PCIeGen: mb.gen, DoubleWidth: s.double, Occupied: s.dev != nil})
		if s.dev != nil {
			mb.b.Add(topology.Node{Kind: s.dev.kind, Parent: id, Name: s.dev.name, Model: s.dev.model,
				MemoryGiB: s.dev.memGiB, Lanes: s.dev.lanes, PCIeGen: mb.gen})
		}
	}
}

func (mb *machineBuilder) finish(cpu string) (*topology.Machine, error) {
	arch, _ := topology.InterSocketLinkByName(cpu)
	return mb.b.Finish(arch)
}

// momentB is Moment's machine B (SC'25 section 2.3, Fig. 2 and Fig. 7,
// Table 3): 2 x Xeon Gold 6426Y (Sapphire Rapids, 16 cores / 32 threads
// each), 512 GB memory, PCIe 4.0. The slot inventory is the authors' own
// topology probe: socket 0's root complex has 1 direct slot and PCIe
// switch 0 (4 slots, uplink bus 11); switch 1 (5 slots) hangs below switch 0
// (bus 16); socket 1's root complex has 9 direct slots. Devices sit as in
// Moment's chosen placement (Fig. 7): GPU 0 on root complex 0; GPU 3 and
// four SSDs on root complex 1; two SSDs on switch 0; two SSDs and two GPUs
// on switch 1.
func momentB() (*topology.Machine, error) {
	const cpu = "Intel Xeon Gold 6426Y"
	mb := &machineBuilder{b: topology.NewBuilder("moment-b", "profile:moment-b"), gen: 4}
	s0 := mb.socket(cpu, 0, 16, 32, 256)
	s1 := mb.socket(cpu, 1, 16, 32, 256)
	// Sapphire Rapids: 8 DDR5 channels, 2 DIMMs per channel, at most 4 TB
	// a socket (Intel ARK); 256 GiB as 8 x 32 GiB, one per channel, is an
	// assumption.
	mb.dimms(s0, 16, 8, 8, "ddr5", 4096)
	mb.dimms(s1, 16, 8, 8, "ddr5", 4096)
	rc0 := mb.rootComplex(s0, 0, "root complex 0")
	rc1 := mb.rootComplex(s1, 1, "root complex 1")
	mb.slots(rc0, x16("RC0 slot 0", a100_40()))
	sw0 := mb.pcieSwitch(rc0, "PCIe switch 0", "bus 11")
	mb.slots(sw0, x16("SW0 slot 0", p5510()), x16("SW0 slot 1", p5510()), x16("SW0 slot 2", nil), x16("SW0 slot 3", nil))
	sw1 := mb.pcieSwitch(sw0, "PCIe switch 1", "bus 16")
	mb.slots(sw1, x16("SW1 slot 0", a100_40()), x16("SW1 slot 1", a100_40()), x16("SW1 slot 2", p5510()),
		x16("SW1 slot 3", p5510()), x16("SW1 slot 4", nil))
	mb.slots(rc1, x16("RC1 slot 0", a100_40()), x16("RC1 slot 1", p5510()), x16("RC1 slot 2", p5510()),
		x16("RC1 slot 3", p5510()), x16("RC1 slot 4", p5510()), x16("RC1 slot 5", nil), x16("RC1 slot 6", nil),
		x16("RC1 slot 7", nil), x16("RC1 slot 8", nil))
	mb.b.Note("slot counts are from the Moment authors' topology probe; lane widths are not in the paper: every slot is assumed x16 Gen4 and able to take a double-width card (the paper places GPUs and SSDs in both the switch slots and root complex 1's slots)")
	mb.b.Note("memory: Table 3 gives 512 GB in all; assumed 256 GiB per socket")
	mb.b.Note("devices are installed as in Moment's chosen placement (Fig. 7); placement search moves them between the 19 slots")
	return mb.finish(cpu)
}

// momentA is Moment's machine A (SC'25 section 2.3, Fig. 1, Table 3): 2 x
// Xeon Gold 5320 (Ice Lake, 26 cores / 52 threads each), 768 GB memory,
// PCIe 4.0, a balanced tree: each socket's root complex drives NVMe bays on
// their own buses (bus 1-4 on socket 0) and one PCIe switch on a single x16
// uplink (bus 9 on socket 0). Socket 1 mirrors socket 0.
func momentA() (*topology.Machine, error) {
	mb := xeon5320Chassis("moment-a", "bus 9", []*device{a100_40(), a100_40(), a100_40(), a100_40()}, nil)
	mb.b.Note("the paper gives socket 0's tree (4 NVMe on buses 1-4, one switch on bus 9) and says socket 1 mirrors it; the number of slots per switch is not given: assumed 8 x16 slots per switch, each able to take a double-width card (placement (d) puts 4 GPUs and SSDs on switch 0 together); NVMe bays are x4 and take no GPU")
	mb.b.Note("devices: the 4 GPUs under switch 0 (Fig. 1b) and the 8 SSDs in the front NVMe bays; placement search moves them")
	return mb.finish("Intel Xeon Gold 5320")
}

// hyperionA is Hyperion's machine A (Table I): 1 x A100 80GB PCIe, 12 x
// Intel P5510 3.84 TB, PCIe 4.0, 2 x Xeon Gold 5320, 768 GB. The paper
// does not draw its PCIe tree; it is the same CPU and memory as Moment's
// machine A, so the profile reuses that chassis: 4 NVMe bays per socket and
// one 8-slot PCIe switch per socket.
func hyperionA() (*topology.Machine, error) {
	mb := xeon5320Chassis("hyperion-a", "", []*device{a100_80(), p5510(), p5510(), p5510(), p5510()}, nil)
	mb.b.Note("Hyperion does not publish its PCIe tree; assumed the chassis of Moment's machine A (same CPUs and memory): 4 x4 NVMe bays and one 8-slot x16 switch per socket; the GPU and 4 SSDs on switch 0, 8 SSDs in the bays")
	mb.b.Note("all SSD reads go GPU-initiated into the A100 through its one PCIe 4.0 x16 link (24 GB/s), which is why more than ~6 P5510 add nothing (Hyperion section IV)")
	return mb.finish("Intel Xeon Gold 5320")
}
