package topology

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/jaypipes/ghw"
	"github.com/jaypipes/ghw/pkg/pci"
)

// DiscoverOptions says where discovery reads from.
type DiscoverOptions struct {
	// Root is the directory holding sys/ (and proc/): "/" for the running
	// machine, or an unpacked sysfs snapshot.
	Root string
	// UseDmidecode runs `dmidecode -t slot` for slot records and
	// `dmidecode -t memory` for DIMM slots when the raw SMBIOS table cannot
	// be read and dmidecode is on PATH (only for Root "/").
	UseDmidecode bool
}

// pciFunc is one PCI function as discovery sees it, before it becomes a Node.
type pciFunc struct {
	addr, parent     string // parent is "" for functions on a root bus
	rootBus          string // "pci0000:00"
	vendor, device   string // 4 hex digits
	class            uint32
	vendorName, name string
	driver           string
	numa             int // -1 unknown
	localCPUs        string
	gen, lanes       int // current link, 0 unknown
	maxGen, maxLanes int
	secondaryBus     int // -1 unknown
	children         []string
	ancestors        []string // PCI addresses on the device path above it, root first
}

// PCIFunction is one PCI function that a capture of a machine describes
// (lspci's output), as Discover would read it from sysfs.
type PCIFunction struct {
	Address, Parent  string // "0000:17:00.0"; Parent "" = on a root bus
	Vendor, Device   string // 4 hex digits, "" = unknown
	Class            uint32
	Name, Driver     string
	NUMANode         int // -1 = unknown
	Gen, Lanes       int // the link now, 0 = unknown
	MaxGen, MaxLanes int // the link's maximum (LnkCap), 0 = unknown
	SecondaryBus     int // a bridge's secondary bus, -1 = unknown
}

// AddPCIFunctions adds captured PCI functions to b the way Discover adds
// sysfs's: a host bridge per root bus under the socket of its functions'
// NUMA node, root ports, switches, bridges and devices, each link at its
// maximum. numaSocket maps NUMA nodes (-1 for unknown) to socket ids in b;
// a function whose parent is not among funcs sits on a root bus. It
// returns how many links run below their maximum now.
func AddPCIFunctions(b *Builder, numaSocket map[int]string, funcs []PCIFunction) (belowMax int, err error) {
	d := &discoverer{b: b, funcs: map[string]*pciFunc{}, numaSocket: numaSocket}
	for _, x := range funcs {
		d.order = append(d.order, x.Address)
		d.funcs[x.Address] = &pciFunc{addr: x.Address, parent: x.Parent, vendor: x.Vendor, device: x.Device, class: x.Class, name: x.Name,
			driver: x.Driver, numa: x.NUMANode, gen: x.Gen, lanes: x.Lanes, maxGen: x.MaxGen, maxLanes: x.MaxLanes, secondaryBus: x.SecondaryBus}
	}
	sort.Strings(d.order)
	// Root buses: a function without a parent sits on its own bus.
	for _, a := range d.order {
		pf := d.funcs[a]
		if pf.parent != "" {
			if p, ok := d.funcs[pf.parent]; ok {
				p.children = append(p.children, a)
			} else {
				pf.parent = ""
			}
		}
	}
	for _, a := range d.order {
		pf := d.funcs[a]
		r := pf
		for seen := 0; r.parent != "" && seen < len(d.order); seen++ {
			r = d.funcs[r.parent]
		}
		pf.rootBus = "pci" + r.addr[:7]
	}
	if err := d.buildTree(); err != nil {
		return 0, err
	}
	return len(d.belowMax), nil
}

var pciAddrRE = regexp.MustCompile(`^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$`)

// ResolveSysfsRoot finds the directory that holds sys/ under dir: dir itself,
// or its single subdirectory (snapshot tarballs often unpack into one).
func ResolveSysfsRoot(dir string) (string, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return "", &InputError{Path: dir, Field: "--sysfs-root", Msg: "cannot read directory", Err: err}
	}
	if !st.IsDir() {
		return "", inputErrorf(dir, "--sysfs-root", "not a directory (want the directory that holds sys/, e.g. an unpacked snapshot)")
	}
	if IsSysfsRoot(dir) {
		return dir, nil
	}
	if filepath.Base(dir) == "sys" && IsSysfsRoot(filepath.Dir(dir)) {
		return filepath.Dir(dir), nil
	}
	ents, _ := os.ReadDir(dir)
	var cands []string
	for _, e := range ents {
		if e.IsDir() && IsSysfsRoot(filepath.Join(dir, e.Name())) {
			cands = append(cands, filepath.Join(dir, e.Name()))
		}
	}
	if len(cands) == 1 {
		return cands[0], nil
	}
	return "", inputErrorf(dir, "--sysfs-root", "not a sysfs tree: no sys/bus/pci/devices or sys/devices/system below it (want / or an unpacked snapshot holding sys/)")
}

// IsSysfsRoot reports whether dir holds a sysfs tree Discover can read:
// sys/bus/pci/devices, sys/devices/system/node or sys/devices/system/cpu.
func IsSysfsRoot(dir string) bool {
	for _, p := range []string{"sys/bus/pci/devices", "sys/devices/system/node", "sys/devices/system/cpu"} {
		if st, err := os.Stat(filepath.Join(dir, p)); err == nil && st.IsDir() {
			return true
		}
	}
	return false
}

// Discover describes the machine whose sysfs is at opts.Root: NUMA nodes and
// CPUs, memory, the PCI tree with link widths and speeds, NVMe and other
// disks, NICs, GPUs and accelerators, and physical slots (SMBIOS type 9,
// /sys/bus/pci/slots). It never fails on missing optional files; it fails
// only when Root is not a sysfs tree. Context cancellation stops it.
func Discover(ctx context.Context, opts DiscoverOptions) (*Machine, error) {
	root := opts.Root
	if root == "" {
		root = "/"
	}
	root, err := ResolveSysfsRoot(root)
	if err != nil {
		return nil, err
	}
	d := &discoverer{root: root, opts: opts}
	name, _ := os.Hostname()
	source := "sysfs:" + root
	if root != "/" {
		name = filepath.Base(root)
	}
	if n := d.readTrim("sys/class/dmi/id/product_name"); n != "" && root != "/" {
		name = n
	}
	d.b = NewBuilder(name, source)
	steps := []func() error{d.loadSockets, d.loadPCI, d.buildTree, d.attachBlock, d.attachSlots, d.attachMemory}
	for _, step := range steps {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := step(); err != nil {
			return nil, err
		}
	}
	if n := len(d.belowMax); n > 0 {
		ex := d.belowMax
		if len(ex) > 4 {
			ex = append(ex[:4:4], "...")
		}
		d.b.Note("%d PCIe link(s) run below their maximum now (%s): power saving (idle GPUs drop to 2.5 GT/s) or a downtrained link; capacities use the maximum, the current speed and width are kept on the link",
			n, strings.Join(ex, ", "))
	}
	m, err := d.b.Finish(d.arch)
	if err != nil {
		return nil, fmt.Errorf("discover %s: %w", root, err)
	}
	if s := m.Summarize(); s.UnknownLinkBW > 0 {
		m.Notes = append(m.Notes, fmt.Sprintf("%d PCIe link(s) report no speed or width (a VM, or an old kernel): assumed Gen3 x16, 12 GB/s", s.UnknownLinkBW))
	}
	return m, nil
}

type discoverer struct {
	root       string
	opts       DiscoverOptions
	b          *Builder
	arch       CPUArch
	funcs      map[string]*pciFunc
	order      []string       // pci addresses sorted
	numaSocket map[int]string // NUMA node -> socket id
	socketCPUs map[string][]int
	nodeOf     map[string]string // pci address -> node id
	hostBridge map[string]string // root bus -> host bridge node id
	belowMax   []string          // links running below their maximum now

	// The raw SMBIOS table, read once for slots and memory.
	dmi      []byte
	dmiErr   error
	dmiRead  bool
	dmiNoted bool // a note already says the table is damaged
}

// dmiTable reads sys/firmware/dmi/tables/DMI once. Only root can read it
// on a running machine.
func (d *discoverer) dmiTable() ([]byte, error) {
	if !d.dmiRead {
		d.dmi, d.dmiErr = os.ReadFile(d.path("sys/firmware/dmi/tables/DMI"))
		d.dmiRead = true
	}
	return d.dmi, d.dmiErr
}

func (d *discoverer) path(rel string) string { return filepath.Join(d.root, rel) }

func (d *discoverer) readTrim(rel string) string {
	b, err := os.ReadFile(d.path(rel))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func (d *discoverer) ghwOpts() []any {
	return []any{ghw.WithChroot(d.root), ghw.WithDisableWarnings(), ghw.WithDisableTools(),
		ghw.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))}
}

// loadSockets makes one socket node per NUMA node (a NUMA node is the unit
// whose memory is a storage tier), with its CPUs, model and memory.
func (d *discoverer) loadSockets() error {
	cpuinfo := parseCPUInfo(d.readTrim("proc/cpuinfo"))
	model := strings.Join(strings.Fields(cpuinfo["model name"]), " ")
	vendor := cpuinfo["vendor_id"]
	fam, _ := strconv.Atoi(cpuinfo["cpu family"])
	mod, _ := strconv.Atoi(cpuinfo["model"])
	if model == "" || vendor == "" {
		if ci, err := ghw.CPU(d.ghwOpts()...); err == nil && len(ci.Processors) > 0 {
			if model == "" {
				model = ci.Processors[0].Model
			}
			if vendor == "" {
				vendor = ci.Processors[0].Vendor
			}
		}
	}
	arch, ok := InterSocketLink(vendor, fam, mod)
	if !ok {
		if a2, ok2 := InterSocketLinkByName(model); ok2 {
			arch, ok = a2, true
		}
	}
	d.arch = arch
	d.numaSocket = map[int]string{}
	d.socketCPUs = map[string][]int{}

	nodes := d.numaNodes()
	totalMem := d.totalMemoryGiB()
	if len(nodes) == 0 {
		nodes = []int{0}
		d.b.Note("no NUMA information in sysfs: one socket holds all CPUs and memory")
	}
	// A socket is a physical package, not a NUMA node: an EPYC in NPS4 or
	// a Xeon in SNC mode shows four or two NUMA nodes per package. Group
	// the nodes by the physical_package_id of their CPUs; a node whose CPUs
	// say nothing stays a socket of its own, a node with no CPUs (CXL,
	// HBM, persistent memory) joins the first socket for locality without
	// counting as its memory.
	type group struct {
		nodes []int
		cpus  []int
	}
	var groups []*group
	byPkg := map[string]*group{}
	var memOnly []int
	for _, id := range nodes {
		cpus := d.readTrim(fmt.Sprintf("sys/devices/system/node/node%d/cpulist", id))
		if cpus == "" && len(nodes) == 1 {
			cpus = d.readTrim("sys/devices/system/cpu/online")
		}
		list := parseCPUList(cpus)
		if len(list) == 0 && len(nodes) > 1 {
			memOnly = append(memOnly, id)
			continue
		}
		pkg := ""
		if len(list) > 0 {
			pkg = d.readTrim(fmt.Sprintf("sys/devices/system/cpu/cpu%d/topology/physical_package_id", list[0]))
		}
		g := byPkg[pkg]
		if g == nil || pkg == "" {
			g = &group{}
			groups = append(groups, g)
			if pkg != "" {
				byPkg[pkg] = g
			}
		}
		g.nodes = append(g.nodes, id)
		g.cpus = append(g.cpus, list...)
	}
	if len(groups) == 0 { // only memory nodes: keep them as one socket
		groups = []*group{{nodes: memOnly}}
		memOnly = nil
	}
	for _, g := range groups {
		sort.Ints(g.cpus)
		n := Node{Kind: KindSocket, CPUModel: model}
		first := g.nodes[0]
		n.NUMANode = &first
		if len(g.nodes) == 1 {
			n.CPUList = d.readTrim(fmt.Sprintf("sys/devices/system/node/node%d/cpulist", first))
			if n.CPUList == "" && len(nodes) == 1 {
				n.CPUList = d.readTrim("sys/devices/system/cpu/online")
			}
		} else {
			n.CPUList = formatCPUList(g.cpus)
		}
		n.Threads = len(g.cpus)
		n.Cores = d.countCores(g.cpus)
		mem := 0.0
		for _, id := range g.nodes {
			mem += d.nodeMemGiB(id)
		}
		// One node holds all memory: /proc/meminfo is the better count
		// there, as VMs with hotplugged memory (virtio-mem) leave some of
		// it out of the node's own meminfo.
		if len(nodes) == 1 && totalMem > mem {
			mem = totalMem
		}
		n.MemoryGiB = float64(int64(mem*100+0.5)) / 100
		sid := d.b.Add(n)
		for _, id := range g.nodes {
			d.numaSocket[id] = sid
		}
		d.socketCPUs[sid] = g.cpus
		if len(g.nodes) > 1 {
			d.b.Note("%s is one CPU package with %d NUMA nodes (%s): NPS or sub-NUMA clustering; reported as one socket", sid, len(g.nodes), joinInts(g.nodes))
		}
	}
	if len(memOnly) > 0 {
		for _, id := range memOnly {
			d.numaSocket[id] = d.b.m.Nodes[0].ID
		}
		d.b.Note("NUMA node(s) %s have memory but no CPUs (CXL, HBM or persistent memory?): not counted in socket memory", joinInts(memOnly))
	}
	if len(groups) > 1 && !ok {
		d.b.Note("CPU %q not recognised: inter-socket links assumed %s GB/s per direction", model, fmtNum(arch.GBps))
	}
	return nil
}

func (d *discoverer) numaNodes() []int {
	ents, err := os.ReadDir(d.path("sys/devices/system/node"))
	if err != nil {
		return nil
	}
	var ids []int
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), "node") {
			continue
		}
		if id, err := strconv.Atoi(strings.TrimPrefix(e.Name(), "node")); err == nil {
			ids = append(ids, id)
		}
	}
	sort.Ints(ids)
	return ids
}

// nodeMemGiB reads MemTotal from a NUMA node's meminfo ("Node 0 MemTotal: 131072 kB").
func (d *discoverer) nodeMemGiB(id int) float64 {
	for _, line := range strings.Split(d.readTrim(fmt.Sprintf("sys/devices/system/node/node%d/meminfo", id)), "\n") {
		f := strings.Fields(line)
		if len(f) >= 4 && f[2] == "MemTotal:" {
			kb, err := strconv.ParseFloat(f[3], 64)
			if err == nil {
				return roundGiB(kb * 1024)
			}
		}
	}
	return 0
}

// totalMemoryGiB is the memory the OS manages (/proc/meminfo MemTotal),
// else what ghw counts from the memory blocks.
func (d *discoverer) totalMemoryGiB() float64 {
	for _, line := range strings.Split(d.readTrim("proc/meminfo"), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "MemTotal:" {
			if kb, err := strconv.ParseFloat(f[1], 64); err == nil && kb > 0 {
				return roundGiB(kb * 1024)
			}
		}
	}
	if mi, err := ghw.Memory(d.ghwOpts()...); err == nil && mi.TotalUsableBytes > 0 {
		return roundGiB(float64(mi.TotalUsableBytes))
	}
	return 0
}

func roundGiB(bytes float64) float64 {
	return float64(int64(bytes/(1<<30)*100+0.5)) / 100
}

func (d *discoverer) countCores(cpus []int) int {
	seen := map[string]bool{}
	for _, c := range cpus {
		base := fmt.Sprintf("sys/devices/system/cpu/cpu%d/topology/", c)
		core := d.readTrim(base + "core_id")
		pkg := d.readTrim(base + "physical_package_id")
		if core == "" {
			return 0
		}
		seen[pkg+"/"+core] = true
	}
	return len(seen)
}

// loadPCI lists PCI functions with ghw (names from pci.ids) and falls back
// to reading sysfs directly when ghw cannot (no pci.ids file); then it reads
// what ghw does not give: link speed and width, raw numa_node, local CPUs.
func (d *discoverer) loadPCI() error {
	d.funcs = map[string]*pciFunc{}
	pi, err := ghw.PCI(d.ghwOpts()...)
	if err == nil && len(pi.Devices) > 0 {
		for _, dev := range pi.Devices {
			d.funcs[dev.Address] = fromGhw(dev)
		}
	} else {
		if err != nil {
			d.b.Note("PCI names unavailable (%v): devices are named vendor:device in hex; install the pci.ids package for names", shortErr(err))
		}
		ents, _ := os.ReadDir(d.path("sys/bus/pci/devices"))
		for _, e := range ents {
			if pciAddrRE.MatchString(e.Name()) {
				d.funcs[e.Name()] = &pciFunc{addr: e.Name()}
			}
		}
	}
	for addr := range d.funcs {
		d.order = append(d.order, addr)
	}
	sort.Strings(d.order)
	for _, addr := range d.order {
		if err := d.enrich(d.funcs[addr]); err != nil {
			return err
		}
	}
	hidden := map[string]bool{}
	for _, addr := range d.order {
		f := d.funcs[addr]
		if _, ok := d.funcs[f.parent]; !ok && f.parent != "" {
			hidden[f.parent] = true
			f.parent = ""
			for i := len(f.ancestors) - 1; i >= 0; i-- {
				if _, ok := d.funcs[f.ancestors[i]]; ok {
					f.parent = f.ancestors[i]
					break
				}
			}
		}
		if p, ok := d.funcs[f.parent]; ok {
			p.children = append(p.children, addr)
		}
	}
	if len(hidden) > 0 {
		names := make([]string, 0, len(hidden))
		for a := range hidden {
			names = append(names, a)
		}
		sort.Strings(names)
		d.b.Note("%d PCI bridge(s) on device paths are not listed in sys/bus/pci/devices (%s): devices below them hang on their nearest listed ancestor", len(names), strings.Join(names, ", "))
	}
	return nil
}

func shortErr(err error) string {
	s := err.Error()
	if i := strings.Index(s, "\n"); i >= 0 {
		s = s[:i]
	}
	return s
}

func fromGhw(dev *pci.Device) *pciFunc {
	f := &pciFunc{addr: dev.Address, parent: dev.ParentAddress, driver: dev.Driver}
	if dev.Vendor != nil && dev.Vendor.Name != "unknown" {
		f.vendorName = dev.Vendor.Name
	}
	if dev.Product != nil && dev.Product.Name != "unknown" {
		f.name = dev.Product.Name
	}
	return f
}

// enrich reads a function's identity and link from sysfs. A link speed or
// width that no PCIe link can have (NaN, 512 GT/s, 64 lanes) is refused:
// the snapshot is corrupt or made up. Text that is not a number is read as
// unknown, as kernels write "Unknown" for links they cannot read.
func (d *discoverer) enrich(f *pciFunc) error {
	base := "sys/bus/pci/devices/" + f.addr + "/"
	f.vendor = NormalizePCIID(d.readTrim(base + "vendor"))
	f.device = NormalizePCIID(d.readTrim(base + "device"))
	if c, err := ParseClass(d.readTrim(base + "class")); err == nil {
		f.class = c
	}
	f.numa = -1
	if v, err := strconv.Atoi(d.readTrim(base + "numa_node")); err == nil {
		f.numa = v
	}
	f.localCPUs = d.readTrim(base + "local_cpulist")
	for _, v := range []struct {
		file  string
		dst   *int
		speed bool
	}{{"current_link_speed", &f.gen, true}, {"current_link_width", &f.lanes, false},
		{"max_link_speed", &f.maxGen, true}, {"max_link_width", &f.maxLanes, false}} {
		raw := d.readTrim(base + v.file)
		var err error
		if v.speed {
			*v.dst, err = ParseLinkSpeed(raw)
		} else {
			*v.dst, err = ParseLinkWidth(raw)
		}
		if err != nil && startsWithNumber(raw) {
			return &InputError{Path: d.path(base + v.file), Field: v.file, Msg: "PCI function " + f.addr + ": not a possible PCIe link value", Err: err}
		}
	}
	f.secondaryBus = -1
	if v, err := strconv.Atoi(d.readTrim(base + "secondary_bus_number")); err == nil {
		f.secondaryBus = v
	}
	if f.driver == "" {
		if t, err := os.Readlink(d.path(base + "driver")); err == nil {
			f.driver = filepath.Base(t)
		}
	}
	target, err := os.Readlink(d.path("sys/bus/pci/devices/" + f.addr))
	if err == nil {
		parts := strings.Split(filepath.ToSlash(target), "/")
		for i, p := range parts {
			if strings.HasPrefix(p, "pci") && len(p) > 3 && f.rootBus == "" {
				f.rootBus = p
			}
			if p == f.addr {
				// Every PCI address before ours on the device path is an
				// ancestor, nearest last; loadPCI picks the nearest one
				// sysfs lists (a hidden bridge must not lift the device
				// up to the host bridge).
				f.ancestors = f.ancestors[:0]
				for _, a := range parts[:i] {
					if pciAddrRE.MatchString(a) {
						f.ancestors = append(f.ancestors, a)
					}
				}
				if len(f.ancestors) > 0 {
					f.parent = f.ancestors[len(f.ancestors)-1]
				}
			}
		}
	}
	if f.rootBus == "" {
		f.rootBus = "pci" + f.addr[:7]
	}
	return nil
}

// startsWithNumber reports whether s begins with something strconv reads as
// a number ("NaN", "Inf", "512", "x64"), as opposed to words like "Unknown".
func startsWithNumber(s string) bool {
	f := strings.Fields(strings.TrimPrefix(strings.ToLower(s), "x"))
	if len(f) == 0 {
		return false
	}
	_, err := strconv.ParseFloat(f[0], 64)
	return err == nil
}

func (f *pciFunc) isBridge() bool { return f.class>>8 == classBridgePCI || f.class>>8 == 0x0609 }

// kind classifies a function; chipset functions on a root bus that are not
// devices a planner cares about come back as KindOther.
func (f *pciFunc) kind() Kind {
	k := KindForPCIDevice(f.class, f.vendor, f.device)
	// Without ids (lspci -tv) the name tells a RAID carrier's own NVMe
	// function from a drive: "SSD7540 ... NVMe RAID Controller".
	if k == KindNVMe && (strings.Contains(f.name, "RAID") || strings.HasPrefix(f.name, "HighPoint") || strings.HasPrefix(f.vendorName, "HighPoint")) {
		return KindStorage
	}
	if k == KindNIC && IsVirtualFunction(f.name) || k == KindGPU && IsIntegratedGraphics(f.name) {
		return KindOther
	}
	return k
}

func (f *pciFunc) displayName() string {
	if f.name != "" {
		if f.vendorName != "" && !strings.Contains(f.name, f.vendorName) {
			return f.vendorName + " " + f.name
		}
		return f.name
	}
	return DeviceName(f.vendor, f.device)
}

// socketFor picks the socket a root bus belongs to: the NUMA node of its
// functions, else the node whose CPUs match their local_cpulist, else the
// only socket.
func (d *discoverer) socketFor(rootBus string) (string, bool) {
	votes := map[int]int{}
	for _, addr := range d.order {
		f := d.funcs[addr]
		if f.rootBus != rootBus {
			continue
		}
		if f.numa >= 0 {
			votes[f.numa]++
		} else if f.localCPUs != "" {
			lc := parseCPUList(f.localCPUs)
			for node, sid := range d.numaSocket {
				if len(lc) > 0 && slices.Equal(lc, d.socketCPUs[sid]) {
					votes[node]++
				}
			}
		}
	}
	best, bestN := -1, 0
	for node, n := range votes {
		if n > bestN || (n == bestN && node < best) {
			best, bestN = node, n
		}
	}
	if sid, ok := d.numaSocket[best]; ok {
		return sid, true
	}
	ids := make([]int, 0, len(d.numaSocket))
	for k := range d.numaSocket {
		ids = append(ids, k)
	}
	sort.Ints(ids)
	return d.numaSocket[ids[0]], len(ids) == 1
}

// buildTree turns PCI functions into nodes: a host bridge per root bus under
// its socket, root ports, switches (an upstream port whose children are all
// bridges, with its downstream ports folded in), bridges and devices.
func (d *discoverer) buildTree() error {
	d.nodeOf = map[string]string{}
	d.hostBridge = map[string]string{}
	skipped := 0
	var unknownNUMA []string
	for _, addr := range d.order {
		f := d.funcs[addr]
		if f.parent != "" {
			continue
		}
		k := f.kind()
		if !f.isBridge() && (k == KindOther || k == KindRootPort) {
			skipped++
			continue
		}
		hb, ok := d.hostBridge[f.rootBus]
		if !ok {
			sock, sure := d.socketFor(f.rootBus)
			if !sure {
				unknownNUMA = append(unknownNUMA, f.rootBus)
			}
			hb = d.b.Add(Node{Kind: KindRootPort, Parent: sock, Name: "host bridge " + f.rootBus, NUMANode: d.b.Node(sock).NUMANode})
			d.hostBridge[f.rootBus] = hb
		}
		if f.isBridge() {
			id := d.b.Add(d.nodeFor(f, KindRootPort, hb))
			d.nodeOf[addr] = id
			d.linkTo(hb, id, f, nil)
			d.addBelow(f, id)
			continue
		}
		id := d.b.Add(d.nodeFor(f, k, hb))
		d.nodeOf[addr] = id
		d.linkTo(hb, id, f, nil)
	}
	if skipped > 0 {
		d.b.Note("%d chipset function(s) on root buses (host bridges, memory controllers, USB, SMBus, ...) are not shown", skipped)
	}
	if len(unknownNUMA) > 0 && len(d.numaSocket) > 1 {
		d.b.Note("NUMA locality unknown for %s (numa_node = -1): placed under socket 0", strings.Join(unknownNUMA, ", "))
	}
	return nil
}

// addBelow adds the functions below port p (a root port, switch downstream
// port or bridge) as children of node id.
func (d *discoverer) addBelow(p *pciFunc, id string) {
	for _, caddr := range p.children {
		d.addOne(d.funcs[caddr], id, p)
	}
}

// addOne adds function c below node parent; port is the PCI function whose
// downstream link c sits on. A bridge whose children are all bridges is a
// switch upstream port: it becomes one switch node, and its downstream
// ports fold into it, each giving the link to what sits below it.
func (d *discoverer) addOne(c *pciFunc, parent string, port *pciFunc) {
	if c.isBridge() && len(c.children) > 0 && allBridges(d, c.children) {
		sw := d.b.Add(d.nodeFor(c, KindSwitch, parent))
		d.nodeOf[c.addr] = sw
		d.linkTo(parent, sw, c, port)
		for _, daddr := range c.children {
			dp := d.funcs[daddr]
			d.nodeOf[daddr] = sw
			for _, eaddr := range dp.children {
				d.addOne(d.funcs[eaddr], sw, dp)
			}
		}
		return
	}
	k := c.kind()
	if c.isBridge() {
		k = KindBridge
	}
	id := d.b.Add(d.nodeFor(c, k, parent))
	d.nodeOf[c.addr] = id
	d.linkTo(parent, id, c, port)
	if c.isBridge() {
		d.addBelow(c, id)
	}
}

func allBridges(d *discoverer, addrs []string) bool {
	for _, a := range addrs {
		if !d.funcs[a].isBridge() {
			return false
		}
	}
	return true
}

func (d *discoverer) nodeFor(f *pciFunc, k Kind, parent string) Node {
	n := Node{Kind: k, Parent: parent, PCIAddress: f.addr, VendorID: f.vendor, DeviceID: f.device,
		Class: fmt.Sprintf("0x%06x", f.class), Driver: f.driver, Name: f.displayName()}
	if f.numa >= 0 {
		v := f.numa
		n.NUMANode = &v
	}
	if k == KindGPU {
		n.MemoryGiB = GPUMemoryGiB(f.vendor, f.device)
	}
	if k == KindRootPort && f.isBridge() {
		n.Name = "root port"
		if f.name != "" {
			n.Name += " (" + f.displayName() + ")"
		}
	}
	n.Lanes, n.PCIeGen = f.maxLanes, f.maxGen
	return n
}

// linkTo links parent to child. The capacity is the link's maximum: the
// lesser of the child's and its port's max_link_speed and max_link_width
// (the port's LnkCap bounds what the child can train to). The current speed
// and width only describe now: a GPU idling in power save reports 2.5 GT/s.
// They are kept on the link when they differ, and counted for a note.
func (d *discoverer) linkTo(parent, child string, f, port *pciFunc) {
	gen, lanes := f.maxGen, f.maxLanes
	if port != nil {
		gen, lanes = MinKnown(gen, port.maxGen), MinKnown(lanes, port.maxLanes)
	}
	cur, curLanes := f.gen, f.lanes
	if (cur == 0 || curLanes == 0) && port != nil && port.gen > 0 && port.lanes > 0 {
		cur, curLanes = port.gen, port.lanes
	}
	src := SourceSysfsMax
	if gen == 0 {
		gen, src = cur, SourceSysfs
	}
	if lanes == 0 {
		lanes, src = curLanes, SourceSysfs
	}
	d.b.PCIeLink(parent, child, gen, lanes, src)
	l := &d.b.m.Links[len(d.b.m.Links)-1]
	if cur > 0 && curLanes > 0 && (cur != gen || curLanes != lanes) && l.Source != SourceAssumed {
		l.CurrentPCIeGen, l.CurrentLanes = cur, curLanes
		d.belowMax = append(d.belowMax, fmt.Sprintf("%s Gen%d x%d of Gen%d x%d", child, cur, curLanes, gen, lanes))
	}
}

// attachBlock hangs each disk under the PCI function that controls it,
// found by resolving /sys/block/NAME to its device path.
func (d *discoverer) attachBlock() error {
	sizes := map[string]BlockDevice{}
	if bi, err := ghw.Block(d.ghwOpts()...); err == nil {
		for _, disk := range bi.Disks {
			sizes[disk.Name] = BlockDevice{Name: disk.Name, SizeBytes: disk.SizeBytes, Model: cleanModel(disk.Model)}
		}
	}
	// Old kernels list disks only in /sys/class/block; partitions there
	// resolve below their disk and are skipped.
	seen := map[string]bool{}
	var names, targets, dirs []string
	for _, dir := range []string{"sys/block", "sys/class/block"} {
		ents, _ := os.ReadDir(d.path(dir))
		for _, e := range ents {
			target, err := os.Readlink(d.path(dir + "/" + e.Name()))
			if err != nil || seen[e.Name()] {
				continue
			}
			parts := strings.Split(filepath.ToSlash(target), "/")
			if len(parts) >= 3 && parts[len(parts)-3] == "block" {
				continue // a partition: .../block/DISK/PART
			}
			seen[e.Name()] = true
			names = append(names, e.Name())
			targets = append(targets, target)
			dirs = append(dirs, dir)
		}
	}
	for i, name := range names {
		target := targets[i]
		ctrl := ""
		for _, p := range strings.Split(filepath.ToSlash(target), "/") {
			if pciAddrRE.MatchString(p) {
				ctrl = p
			}
		}
		id, ok := d.nodeOf[ctrl]
		if !ok {
			continue
		}
		bd, ok := sizes[name]
		if !ok {
			bd = BlockDevice{Name: name}
			if s, err := strconv.ParseUint(d.readTrim(dirs[i]+"/"+name+"/size"), 10, 64); err == nil {
				bd.SizeBytes = s * 512
			}
			bd.Model = cleanModel(d.readTrim(dirs[i] + "/" + name + "/device/model"))
		}
		n := d.b.Node(id)
		n.BlockDevices = append(n.BlockDevices, bd)
	}
	// NVMe controllers by their class device, whatever their PCI class says.
	ctrls, _ := os.ReadDir(d.path("sys/class/nvme"))
	for _, c := range ctrls {
		if t, err := os.Readlink(d.path("sys/class/nvme/" + c.Name() + "/device")); err == nil {
			if id, ok := d.nodeOf[filepath.Base(t)]; ok && d.b.Node(id).Kind.IsDevice() {
				d.b.Node(id).Kind = KindNVMe
			}
		}
	}
	return nil
}

func cleanModel(s string) string {
	s = strings.TrimSpace(s)
	if s == "unknown" {
		return ""
	}
	return s
}

// attachSlots inserts slot nodes from SMBIOS type 9 records (raw table, or
// dmidecode on the live machine), else from /sys/bus/pci/slots. A record
// whose bus address matches a device puts a slot between the device and its
// parent; one that matches a port's secondary bus hangs an empty slot below
// the port; others are listed at the top level with a note.
func (d *discoverer) attachSlots() error {
	recs, src := d.slotRecords()
	if len(recs) == 0 {
		return nil
	}
	var unplaced []string
	for _, r := range recs {
		addr := r.Address()
		slot := Node{Kind: KindSlot, Label: r.Designation, Lanes: r.DataWidth, PCIeGen: r.PCIeGen,
			DoubleWidth: r.DoubleWidthLikely(), Occupied: r.InUse}
		devID, ok := d.nodeOf[addr]
		if ok && addr != "" {
			dev := d.b.Node(devID)
			if dev.Kind == KindRootPort || (dev.Kind == KindSwitch && dev.PCIAddress != addr) {
				// The record names the port: the slot sits below it and
				// holds what is below the port.
				slot.Parent = devID
				sid := d.b.Add(slot)
				d.reparentChildren(devID, sid)
				continue
			}
			slot.Parent = dev.Parent
			slot.Occupied = true
			if slot.Lanes == 0 {
				slot.Lanes = dev.Lanes
			}
			sid := d.b.Add(slot)
			d.reparent(devID, sid)
			continue
		}
		if port := d.portWithSecondaryBus(r); port != "" {
			slot.Parent = port
			d.b.Add(slot)
			continue
		}
		d.b.Add(slot)
		unplaced = append(unplaced, r.Designation)
	}
	if len(unplaced) > 0 {
		d.b.Note("%d slot(s) from %s could not be placed in the PCIe tree (no device or port at their bus address): %s", len(unplaced), src, strings.Join(unplaced, ", "))
	}
	return nil
}

func (d *discoverer) slotRecords() ([]SlotRecord, string) {
	dmiPath := d.path("sys/firmware/dmi/tables/DMI")
	if data, err := d.dmiTable(); err == nil {
		if recs, err := ParseSMBIOSSlots(dmiPath, data); err == nil && len(recs) > 0 {
			return recs, "SMBIOS"
		} else if err != nil {
			d.b.Note("SMBIOS table %s unreadable: %v", dmiPath, err)
			d.dmiNoted = true
		}
	}
	if d.root == "/" && d.opts.UseDmidecode {
		if bin, err := exec.LookPath("dmidecode"); err == nil {
			out, err := exec.Command(bin, "-t", "slot").Output()
			if err == nil {
				if recs, err := ParseDmidecodeSlots("dmidecode -t slot", out); err == nil && len(recs) > 0 {
					return recs, "dmidecode"
				}
			}
		}
	}
	// Hotplug/ACPI slots: /sys/bus/pci/slots/N/address is "dddd:bb:dd".
	ents, err := os.ReadDir(d.path("sys/bus/pci/slots"))
	if err != nil {
		return nil, ""
	}
	var recs []SlotRecord
	for _, e := range ents {
		a := d.readTrim("sys/bus/pci/slots/" + e.Name() + "/address")
		var seg, bus, dev int
		if _, err := fmt.Sscanf(a, "%x:%x:%x", &seg, &bus, &dev); err != nil {
			continue
		}
		r := SlotRecord{Designation: "slot " + e.Name(), SegmentGroup: seg, Bus: bus, Device: dev, HasAddress: true}
		if _, ok := d.nodeOf[r.Address()]; ok {
			r.InUse = true
		}
		if f, ok := d.funcs[r.Address()]; ok {
			r.DataWidth = f.maxLanes
			r.PCIeGen = f.maxGen
		}
		recs = append(recs, r)
	}
	return recs, "/sys/bus/pci/slots"
}

func (d *discoverer) portWithSecondaryBus(r SlotRecord) string {
	if !r.HasAddress {
		return ""
	}
	for _, addr := range d.order {
		f := d.funcs[addr]
		if f.isBridge() && f.secondaryBus == r.Bus && len(f.children) == 0 {
			if id, ok := d.nodeOf[addr]; ok {
				return id
			}
		}
	}
	return ""
}

// reparent moves node id (and its uplink) under newParent; the uplink keeps
// its capacity and a slot link of the same capacity joins the old parent.
func (d *discoverer) reparent(id, newParent string) {
	m := d.b.m
	n := d.b.Node(id)
	old := n.Parent
	for i := range m.Links {
		l := &m.Links[i]
		if l.From == old && l.To == id {
			cp := *l
			cp.To = newParent
			l.From = newParent
			m.Links = append(m.Links, cp)
			break
		}
	}
	n.Parent = newParent
}

func (d *discoverer) reparentChildren(portID, slotID string) {
	m := d.b.m
	for i := range m.Nodes {
		if m.Nodes[i].Parent == portID && m.Nodes[i].ID != slotID {
			d.reparent(m.Nodes[i].ID, slotID)
		}
	}
	d.b.Node(slotID).Occupied = len(m.Children(slotID)) > 0 || d.b.Node(slotID).Occupied
}

func parseCPUInfo(s string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			if strings.TrimSpace(line) == "" && len(out) > 0 {
				break // first processor block is enough
			}
			continue
		}
		k = strings.TrimSpace(k)
		if _, seen := out[k]; !seen {
			out[k] = strings.TrimSpace(v)
		}
	}
	return out
}

// parseCPUList reads a Linux cpulist ("0-3,8,10-11").
func parseCPUList(s string) []int {
	var out []int
	for _, part := range strings.Split(strings.TrimSpace(s), ",") {
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return nil
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a || b-a > 1<<16 {
				return nil
			}
		}
		for c := a; c <= b; c++ {
			out = append(out, c)
		}
	}
	return out
}

// formatCPUList writes sorted CPU numbers as a Linux cpulist ("0-3,8").
func formatCPUList(cpus []int) string {
	var b strings.Builder
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		if j > i {
			fmt.Fprintf(&b, "%d-%d", cpus[i], cpus[j])
		} else {
			fmt.Fprintf(&b, "%d", cpus[i])
		}
		i = j + 1
	}
	return b.String()
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ", ")
}
