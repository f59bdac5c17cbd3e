package nccl

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gnnplan/gnnplan/internal/inputerr"
	"github.com/gnnplan/gnnplan/topology"
	"github.com/gnnplan/gnnplan/topology/internal/ctxio"
)

// NCCL and RCCL describe a node as a tree: <system> holds one <cpu> per NUMA
// domain, each <cpu> holds the PCI tree below it as nested <pci> elements,
// and a <pci> that is a GPU or NIC carries a <gpu> or <nic> element. GPU
// fabrics hang off the GPUs as <nvlink>/<xgmi> elements naming the far end
// by bus id, which may come later in the file, so the importer reads the
// whole tree first and resolves those links in a second pass.

// ncclMaxDepth bounds element nesting. Real files nest eight levels
// (system, cpu, up to four pci, gpu, xgmi in rccl-topo_8p_rome_4n_1.xml) and
// deeper switch trees add a few more; the bound keeps a hostile file from
// costing unbounded recursion.
const ncclMaxDepth = 64

// ncclMaxLinkCount bounds the count attribute of <nvlink>/<xgmi>. The largest
// real value is 18 (one GB200 to its NVSwitch tray); a far larger number is
// a corrupt file, not a machine.
const ncclMaxLinkCount = 255

// PCI classes NCCL puts in the tclass attribute of <nvlink> (its
// kvDictPciClass): an NVSwitch, and the POWER9 CPU that GPUs reach over NVLink.
const (
	ncclTClassNVSwitch = 0x068000
	ncclTClassCPU      = 0x068001
)

// ncclElem is one XML element with the line it starts on.
type ncclElem struct {
	name  string
	attrs []xml.Attr
	line  int
	kids  []*ncclElem
}

// attr returns the value of the attribute name and whether it is present.
// Namespaces play no part in NCCL files, so only the local name is matched.
func (e *ncclElem) attr(name string) (string, bool) {
	for _, a := range e.attrs {
		if a.Name.Local == name {
			return a.Value, true
		}
	}
	return "", false
}

// kid returns the first child element called name, or nil.
func (e *ncclElem) kid(name string) *ncclElem {
	for _, k := range e.kids {
		if k.name == name {
			return k
		}
	}
	return nil
}

// parseNCCLXML is Parse without a context.
func parseNCCLXML(path string, data []byte) (*topology.Machine, error) {
	return Parse(context.Background(), path, data)
}

// Parse builds a Machine from an NCCL or RCCL topology XML file (<system>);
// path names it in errors. It stops when ctx is cancelled.
func Parse(ctx context.Context, path string, data []byte) (*topology.Machine, error) {
	root, err := ncclReadTree(ctx, path, data)
	if err != nil {
		return nil, err
	}
	im := &ncclImport{
		path:       path,
		b:          topology.NewBuilder(ncclMachineName(path), "nccl-xml:"+path),
		byBus:      map[string]string{},
		busLine:    map[string]int{},
		nvSwitches: map[string]string{},
		links:      map[ncclPairKey]*ncclLinkAcc{},
		downSeen:   map[string]bool{},
	}
	arch, err := im.addSystem(root)
	if err != nil {
		return nil, err
	}
	if err := im.addFabric(); err != nil {
		return nil, err
	}
	im.notes()
	m, err := im.b.Finish(arch)
	if err != nil {
		// Everything in the machine came from the file: an inconsistency
		// (a duplicated link, an impossible capacity) is the file's.
		return nil, &topology.InputError{Path: path, Msg: "the file describes an impossible machine", Err: err}
	}
	return m, nil
}

// ncclMachineName names the machine after its file.
func ncclMachineName(path string) string {
	base := filepath.Base(path)
	if base == "." || base == string(filepath.Separator) {
		return "nccl-topology"
	}
	return strings.TrimSuffix(base, filepath.Ext(base))
}

// ncclReadTree parses the document into a tree of elements. It refuses
// anything whose root is not <system>, stopping at the root element so that
// a large file of another kind costs nothing to refuse.
func ncclReadTree(ctx context.Context, path string, data []byte) (*ncclElem, error) {
	dec := xml.NewDecoder(&ctxio.Reader{Ctx: ctx, R: bytes.NewReader(data)})
	var root *ncclElem
	var stack []*ncclElem
	for {
		// The position before Token is where the next token starts: the
		// '<' of an element, since the whitespace before it is a token of
		// its own. Errors then point at the element's first line, not at
		// the '>' of a start tag spread over several lines.
		line, _ := dec.InputPos()
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var se *xml.SyntaxError
			if errors.As(err, &se) {
				line = se.Line
			}
			return nil, &topology.InputError{Path: path, Line: line,
				Msg: "not well-formed XML (want an NCCL topology file, <system version=\"1\"> as NCCL_TOPO_DUMP_FILE writes)", Err: err}
		}
		switch t := tok.(type) {
		case xml.StartElement:
			e := &ncclElem{name: t.Name.Local, attrs: t.Attr, line: line}
			if len(stack) == 0 {
				if root != nil {
					return nil, &topology.InputError{Path: path, Line: line, Field: t.Name.Local,
						Msg: fmt.Sprintf("a second root element after <%s> (an XML file has exactly one)", root.name)}
				}
				if err := ncclCheckRoot(path, e); err != nil {
					return nil, err
				}
				root = e
			} else {
				if len(stack) >= ncclMaxDepth {
					return nil, &topology.InputError{Path: path, Line: line, Field: t.Name.Local,
						Msg: fmt.Sprintf("elements nested more than %d deep (an NCCL topology nests about 10)", ncclMaxDepth)}
				}
				parent := stack[len(stack)-1]
				parent.kids = append(parent.kids, e)
			}
			stack = append(stack, e)
		case xml.EndElement:
			// The decoder checks that end tags match start tags; the guard
			// only keeps a decoder change from becoming a panic.
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		case xml.CharData:
			if len(stack) == 0 && len(bytes.TrimSpace(t)) > 0 {
				return nil, &topology.InputError{Path: path, Line: line,
					Msg: "text outside the root element (want an NCCL topology file, <system version=\"1\">...</system>)"}
			}
		}
	}
	if root == nil {
		return nil, inputerr.Errorf(path, "", "no XML element found (want an NCCL topology file, <system version=\"1\"> as NCCL_TOPO_DUMP_FILE writes)")
	}
	if len(stack) > 0 {
		// Unreachable with a strict decoder, which reports the unclosed
		// element itself; kept so a truncated file can never pass.
		return nil, &topology.InputError{Path: path, Line: stack[len(stack)-1].line, Field: stack[len(stack)-1].name,
			Msg: "element is never closed (the file looks truncated)"}
	}
	return root, nil
}

// ncclCheckRoot refuses every root element but <system>. NCCL's channel
// graph dump is the file most often confused with a topology, so it gets a
// message of its own.
func ncclCheckRoot(path string, e *ncclElem) error {
	switch e.name {
	case "system":
		return nil
	case "graphs", "graph":
		return &topology.InputError{Path: path, Line: e.line,
			Msg: "this file is an NCCL channel graph (<graphs>), not a topology (<system>): NCCL_GRAPH_DUMP_FILE writes graphs, NCCL_TOPO_DUMP_FILE writes the topology this command reads"}
	}
	return &topology.InputError{Path: path, Line: e.line, Field: e.name,
		Msg: fmt.Sprintf("root element is <%s> (want <system>, the root of an NCCL/RCCL topology file)", e.name)}
}

// ncclLinkAttrs is what an element's link_speed and link_width say, plus
// the values in force after inheritance from the parent's link.
type ncclLinkAttrs struct {
	gen, lanes       int // in force (own value, else the parent's)
	reportedGen      int // the element's own link_speed, 0 when absent
	reportedSpeedStr string
	busID            string
}

// ncclGPU is a GPU whose fabric links are resolved after the whole tree is
// read.
type ncclGPU struct {
	id     string
	socket string
	busID  string
	elem   *ncclElem // the <gpu> element
	rate   float64   // GB/s per NVLink
	rateOK bool
}

// ncclPairKey identifies one fabric link: an unordered pair of node ids
// (a < b) and the link technology.
type ncclPairKey struct {
	a, b string
	kind topology.LinkKind
}

// ncclLinkAcc gathers what the file says about one fabric link. NCCL lists
// a GPU-to-GPU link under both GPUs; each direction's count is kept so the
// two ends can be compared.
type ncclLinkAcc struct {
	from, to string // the end that listed it first, and the other end
	fromBus  string
	toBus    string
	count    map[string]int // count listed under each end, by node id
	rate     float64        // GB/s per link
	rateOK   bool
}

// ncclImport is the state of one import: the machine being built, the bus
// ids seen so far, and what the notes will report.
type ncclImport struct {
	path       string
	b          *topology.Builder
	names      topology.PCINames // pci.ids, for devices the file names only by id
	byBus      map[string]string // normalised bus id -> node id
	busLine    map[string]int    // normalised bus id -> line, for duplicate reports
	gpus       []ncclGPU
	nvSwitches map[string]string // bus id -> NVSwitch node id created for NVLink targets
	links      map[ncclPairKey]*ncclLinkAcc
	linkOrder  []ncclPairKey

	assumed     int      // PCIe links with an assumed capacity
	inherited   int      // PCIe links that took a value from their parent
	downtrained []string // upstream links slower than a link below them
	downSeen    map[string]bool
	cpuNICs     []string // NICs attached straight to a <cpu>
	virtualNICs []string // software interfaces under a <cpu>, left out
	xgmiAssumed int      // xGMI elements of GPUs with no known gcn
	ignoredPCI  int      // <pci> elements outside any <cpu>
	fabricNotes []string
	archNote    string
	numCPUs     int
	arch        topology.CPUArch
}

// addSystem adds the sockets and PCI trees and returns the inter-socket
// link of the CPUs.
func (im *ncclImport) addSystem(root *ncclElem) (topology.CPUArch, error) {
	var cpus []*ncclElem
	for _, k := range root.kids {
		switch k.name {
		case "cpu":
			cpus = append(cpus, k)
		case "pci":
			im.ignoredPCI++
		}
	}
	if len(cpus) == 0 {
		return topology.CPUArch{}, &topology.InputError{Path: im.path, Line: root.line, Field: "system",
			Msg: "no <cpu> element (an NCCL topology has one <cpu numaid=...> per NUMA domain, holding the PCI tree)"}
	}
	im.numCPUs = len(cpus)
	var first topology.CPUArch
	var firstDesc string
	firstOK := false
	for i, c := range cpus {
		arch, ok, desc, err := im.addCPU(c)
		if err != nil {
			return topology.CPUArch{}, err
		}
		if i == 0 {
			first, firstOK, firstDesc = arch, ok, desc
			continue
		}
		if arch != first && im.archNote == "" {
			im.archNote = fmt.Sprintf("the <cpu> elements name different CPUs (%s and %s); inter-socket links use the first one's rate, %g GB/s", firstDesc, desc, first.GBps)
		}
	}
	if !firstOK && len(cpus) > 1 && im.archNote == "" {
		im.archNote = fmt.Sprintf("CPU %s is not recognised; inter-socket links assume %g GB/s per direction (Skylake-class UPI)", firstDesc, first.GBps)
	}
	im.arch = first
	return first, nil
}

// addCPU adds one <cpu> as a socket with a root complex holding its PCI
// tree. It returns the CPU's inter-socket link and a description for notes.
func (im *ncclImport) addCPU(c *ncclElem) (arch topology.CPUArch, ok bool, desc string, err error) {
	var numa *int
	if s, has := c.attr("numaid"); has {
		v, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || v < -1 {
			return topology.CPUArch{}, false, "", &topology.InputError{Path: im.path, Line: c.line, Field: "cpu.numaid",
				Msg: fmt.Sprintf("%q is not a NUMA node number (want 0, 1, ... or -1 for none)", s)}
		}
		// NCCL writes -1 when the kernel reports no NUMA node.
		if v >= 0 {
			numa = &v
		}
	}
	family, err := im.intAttr(c, "familyid")
	if err != nil {
		return topology.CPUArch{}, false, "", err
	}
	model, err := im.intAttr(c, "modelid")
	if err != nil {
		return topology.CPUArch{}, false, "", err
	}
	vendor, _ := c.attr("vendor")
	vendor = strings.TrimSpace(vendor)
	family = ncclCPUFamily(vendor, family)
	arch, ok = topology.InterSocketLink(vendor, family, model)

	sock := topology.Node{Kind: topology.KindSocket, NUMANode: numa}
	switch {
	case vendor == "" && family == 0 && model == 0:
		if a, has := c.attr("arch"); has {
			sock.CPUModel = strings.TrimSpace(a)
		}
		desc = "with no vendor, family or model"
	default:
		desc = strings.TrimSpace(fmt.Sprintf("%s family %d model %d", vendor, family, model))
		sock.CPUModel = desc
		if ok {
			sock.CPUModel += " (" + arch.Name + ")"
		}
	}
	if s, has := c.attr("affinity"); has {
		list, n, err := ncclCPUList(s)
		if err != nil {
			return topology.CPUArch{}, false, "", &topology.InputError{Path: im.path, Line: c.line, Field: "cpu.affinity", Msg: err.Error()}
		}
		sock.CPUList, sock.Threads = list, n
	}
	sockID := im.b.Add(sock)

	var pcis, nics []*ncclElem
	for _, k := range c.kids {
		switch k.name {
		case "pci":
			pcis = append(pcis, k)
		case "nic":
			nics = append(nics, k)
		}
	}
	if len(pcis) > 0 {
		// NCCL does not record root ports, only the tree below them: one
		// root complex per socket stands for all of them. Finish gives it
		// an on-die link as wide as the PCIe links below it.
		rc := im.b.Add(topology.Node{Kind: topology.KindRootPort, Parent: sockID, Name: "root complex", NUMANode: ncclCopyInt(numa)})
		for _, p := range pcis {
			if err := im.addPCI(p, rc, ncclLinkAttrs{}, sockID, numa); err != nil {
				return topology.CPUArch{}, false, "", err
			}
		}
	}
	for _, n := range nics {
		// A <nic> straight under <cpu> is a network device NCCL found no
		// PCI path for. Container and bridge interfaces (veth, docker0,
		// br-*) are software: they carry no bytes off the machine and are
		// not NICs. Others (ib0 in a container that hides /sys) are real
		// and sit on the socket with an assumed link.
		if names, virtual := ncclVirtualNIC(n); virtual {
			im.virtualNICs = append(im.virtualNICs, names...)
			continue
		}
		id := im.b.Add(topology.Node{Kind: topology.KindNIC, Parent: sockID, Name: ncclNICName(n, "", ""), NUMANode: ncclCopyInt(numa)})
		im.cpuNICs = append(im.cpuNICs, id)
	}
	return arch, ok, desc, nil
}

// addPCI adds a <pci> element and its subtree below parent. up describes
// the parent's own link, from which missing attributes are inherited.
func (im *ncclImport) addPCI(e *ncclElem, parent string, up ncclLinkAttrs, sock string, numa *int) error {
	busRaw, _ := e.attr("busid")
	bus := ncclNormBusID(busRaw)
	if bus != "" {
		if first, dup := im.busLine[bus]; dup {
			return &topology.InputError{Path: im.path, Line: e.line, Field: "pci.busid",
				Msg: fmt.Sprintf("%s appears twice (first on line %d); bus ids must be unique for NVLink targets to resolve", bus, first)}
		}
		im.busLine[bus] = e.line
	}
	vendor, err := im.hexAttr(e, "vendor", bus)
	if err != nil {
		return err
	}
	device, err := im.hexAttr(e, "device", bus)
	if err != nil {
		return err
	}
	var class uint32
	classStr, hasClass := e.attr("class")
	hasClass = hasClass && strings.TrimSpace(classStr) != ""
	if hasClass {
		if class, err = topology.ParseClass(classStr); err != nil {
			return &topology.InputError{Path: im.path, Line: e.line, Field: "pci.class", Msg: ncclWhere(bus), Err: err}
		}
	}
	link, err := im.linkAttrs(e, bus)
	if err != nil {
		return err
	}

	var pciKids []*ncclElem
	for _, k := range e.kids {
		if k.name == "pci" {
			pciKids = append(pciKids, k)
		}
	}
	gpu, nic := e.kid("gpu"), e.kid("nic")
	var kind topology.Kind
	switch {
	case gpu != nil:
		// NCCL adds <gpu> only to devices it drives, whatever their class
		// (AMD Instinct parts report 0x038000, "display controller, other").
		kind = topology.KindGPU
	case nic != nil:
		kind = topology.KindNIC
	case hasClass:
		kind = topology.KindForPCIDevice(class, vendor, device)
	case len(pciKids) > 0:
		kind = topology.KindBridge
	default:
		kind = topology.KindOther
	}
	if kind == topology.KindBridge && ncclIsSwitch(vendor, device, len(pciKids)) {
		kind = topology.KindSwitch
	}

	n := topology.Node{Kind: kind, Parent: parent, PCIAddress: bus, VendorID: vendor, DeviceID: device, NUMANode: ncclCopyInt(numa)}
	if hasClass {
		n.Class = fmt.Sprintf("0x%06x", class)
	}
	n.Name = ncclDeviceName(kind, vendor, device, gpu, nic)
	if vendor != "" && n.Name == topology.NormalizePCIID(vendor)+":"+topology.NormalizePCIID(device) {
		n.Name = im.names.DeviceName(vendor, device)
	}
	if kind == topology.KindGPU && vendor != "" && device != "" {
		n.MemoryGiB = topology.GPUMemoryGiB(vendor, device)
	}
	id := im.b.Add(n)
	if bus != "" {
		im.byBus[bus] = id
	}

	// A missing attribute takes the parent's value: NCCL omits them on
	// hand-written files, and a device rarely links faster than its parent.
	own := link
	if link.gen == 0 && up.gen > 0 {
		link.gen = up.gen
	}
	if link.lanes == 0 && up.lanes > 0 {
		link.lanes = up.lanes
	}
	if link.gen != own.gen || link.lanes != own.lanes {
		im.inherited++
	}
	im.b.PCIeLink(parent, id, link.gen, link.lanes, topology.SourceXML)
	if l := im.b.Machine().Links; l[len(l)-1].Source == topology.SourceAssumed {
		im.assumed++
	}
	if up.reportedGen > 0 && link.reportedGen > up.reportedGen {
		im.markDowntrained(parent, up, link)
	}

	if gpu != nil {
		if err := im.addGPU(gpu, id, sock, bus, device); err != nil {
			return err
		}
	}
	for _, k := range pciKids {
		if err := im.addPCI(k, id, link, sock, numa); err != nil {
			return err
		}
	}
	return nil
}

// markDowntrained records an upstream link (the one into parent) slower
// than a link below it, once per upstream link.
func (im *ncclImport) markDowntrained(parent string, up, child ncclLinkAttrs) {
	if im.downSeen[parent] {
		return
	}
	im.downSeen[parent] = true
	im.downtrained = append(im.downtrained, fmt.Sprintf("%s (%s above %s)",
		ncclOr(up.busID, parent), strings.TrimSpace(up.reportedSpeedStr), strings.TrimSpace(child.reportedSpeedStr)))
}

// linkAttrs reads link_speed and link_width.
func (im *ncclImport) linkAttrs(e *ncclElem, bus string) (ncclLinkAttrs, error) {
	a := ncclLinkAttrs{busID: bus}
	if s, has := e.attr("link_speed"); has {
		gen, err := ncclLinkSpeed(s)
		if err != nil {
			return a, &topology.InputError{Path: im.path, Line: e.line, Field: "pci.link_speed", Msg: ncclWhere(bus), Err: err}
		}
		a.gen, a.reportedGen, a.reportedSpeedStr = gen, gen, s
	}
	if s, has := e.attr("link_width"); has {
		lanes, err := topology.ParseLinkWidth(s)
		if err != nil {
			return a, &topology.InputError{Path: im.path, Line: e.line, Field: "pci.link_width", Msg: ncclWhere(bus), Err: err}
		}
		a.lanes = lanes
	}
	return a, nil
}

// ncclLinkSpeed is ParseLinkSpeed that also takes the kernel's "Unknown
// speed", which NCCL copies from sysfs for links that never trained.
func ncclLinkSpeed(s string) (int, error) {
	if strings.HasPrefix(strings.ToLower(strings.TrimSpace(s)), "unknown") {
		return 0, nil
	}
	return topology.ParseLinkSpeed(s)
}

// addGPU reads the <gpu> element's attributes and queues its fabric links.
func (im *ncclImport) addGPU(g *ncclElem, id, sock, bus, device string) error {
	sm, err := im.intAttr(g, "sm")
	if err != nil {
		return err
	}
	if sm == 0 {
		sm = topology.NVLinkSMForDevice(device)
	}
	rate, ok := topology.NVLinkGBps(sm)
	im.gpus = append(im.gpus, ncclGPU{id: id, socket: sock, busID: bus, elem: g, rate: rate, rateOK: ok})
	return nil
}

// ncclIsSwitch decides whether a PCI bridge in an NCCL file is a PCIe
// switch. NCCL keeps real switches as nested bridges but hand-written and
// virtual files flatten each switch to one placeholder bridge, so ids and
// shape are both evidence:
//   - a bridge whose vendor:device is a switch part (Broadcom PEX88000
//     1000:c010 and PEX89000 1000:c030, Microchip Switchtec 11f8:4000, any
//     PLX 10b5, the switch inside ConnectX-7/8 15b3:1979 and 15b3:197c) is a
//     switch, even with a single child: such a bridge is one level of a
//     multi-level switch, and nested levels stay nested;
//   - any other bridge (placeholder ffff/0000 ids, no ids, a CPU root port,
//     the bridge inside an AMD Instinct package 1002:14a0, 1022:14c7,
//     1022:1500) is a switch when it fans out to two or more PCI children,
//     because only a switch can;
//   - the rest (one child or none, ids not of a switch part) stay bridges:
//     a root port or a package-internal bridge, whose PCIe link is kept.
func ncclIsSwitch(vendor, device string, pciKids int) bool {
	switch vendor + ":" + device {
	case "1000:c010", "1000:c030", "11f8:4000", "15b3:1979", "15b3:197c":
		return true
	}
	if vendor == "10b5" {
		return true
	}
	return pciKids >= 2
}

// ncclDeviceName names a PCI node: the part name when the file has ids,
// else what NCCL knows of it (GPU index, network port names).
func ncclDeviceName(kind topology.Kind, vendor, device string, gpu, nic *ncclElem) string {
	placeholder := vendor == "" || device == "" || vendor == "ffff" || vendor == "0000"
	if !placeholder {
		return topology.DeviceName(vendor, device)
	}
	switch kind {
	case topology.KindGPU:
		name := "GPU"
		if gpu != nil {
			if dev, ok := gpu.attr("dev"); ok {
				name += " dev=" + strings.TrimSpace(dev)
			}
			if gcn, ok := gpu.attr("gcn"); ok && strings.TrimSpace(gcn) != "" {
				// RCCL writes the AMD ISA ("908" or "gfx90a:sramecc+"), the
				// only model hint in files without PCI ids.
				g := strings.TrimSpace(gcn)
				if !strings.HasPrefix(g, "gfx") {
					g = "gfx" + g
				}
				name += " (" + g + ")"
			}
		}
		return name
	case topology.KindNIC:
		return ncclNICName(nic, vendor, device)
	case topology.KindSwitch:
		return "PCIe switch"
	case topology.KindBridge:
		return "PCI bridge"
	}
	if vendor != "" || device != "" {
		return topology.DeviceName(vendor, device)
	}
	return string(kind)
}

// ncclNICName names a NIC after its network ports when the ids say nothing.
// virtualNICPrefixes name software network interfaces: container veth
// pairs, Linux and Docker bridges, overlay and tunnel devices, loopback.
var virtualNICPrefixes = []string{"veth", "docker", "br-", "br", "virbr", "cni", "flannel", "cali", "cilium",
	"vxlan", "weave", "kube", "tun", "tap", "lo", "dummy", "podman", "lxc", "vnet", "genev"}

// ncclVirtualNIC reports whether a <nic> without a PCI device is a
// software interface: it names no port, or every port it names is one.
func ncclVirtualNIC(nic *ncclElem) (names []string, virtual bool) {
	for _, k := range nic.kids {
		if k.name != "net" {
			continue
		}
		name, _ := k.attr("name")
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		if !isVirtualNetName(name) {
			return nil, false
		}
		names = append(names, name)
	}
	if len(names) == 0 {
		names = []string{"<nic> with no name"}
	}
	return names, true
}

func isVirtualNetName(name string) bool {
	n := strings.ToLower(name)
	for _, p := range virtualNICPrefixes {
		if strings.HasPrefix(n, p) {
			return true
		}
	}
	return false
}

func ncclNICName(nic *ncclElem, vendor, device string) string {
	if vendor != "" && device != "" && vendor != "ffff" && vendor != "0000" {
		return topology.DeviceName(vendor, device)
	}
	var ports []string
	if nic != nil {
		for _, k := range nic.kids {
			if k.name != "net" {
				continue
			}
			if name, ok := k.attr("name"); ok && strings.TrimSpace(name) != "" {
				ports = append(ports, strings.TrimSpace(name))
			}
		}
	}
	if len(ports) == 0 {
		return "NIC"
	}
	return "NIC " + strings.Join(ports, ",")
}

// addFabric resolves the <nvlink> and <xgmi> elements of every GPU.
func (im *ncclImport) addFabric() error {
	for _, g := range im.gpus {
		if !g.rateOK && g.elem.kid("nvlink") != nil {
			im.fabricNotes = append(im.fabricNotes, fmt.Sprintf(
				"GPU %s has no sm attribute and an unrecognised device id; its NVLinks assume %g GB/s per link (SM80)", ncclOr(g.busID, g.id), g.rate))
		}
		for _, l := range g.elem.kids {
			var kind topology.LinkKind
			switch l.name {
			case "nvlink":
				kind = topology.LinkNVLink
			case "xgmi":
				kind = topology.LinkXGMI
			default:
				// <c2c>, <nvs> and elements of later versions carry no
				// link this model represents.
				continue
			}
			if err := im.addFabricLink(g, l, kind); err != nil {
				return err
			}
		}
	}
	im.emitFabric()
	return nil
}

// addFabricLink records one <nvlink> or <xgmi> element.
func (im *ncclImport) addFabricLink(g ncclGPU, l *ncclElem, kind topology.LinkKind) error {
	field := l.name + ".target"
	targetRaw, ok := l.attr("target")
	target := ncclNormBusID(targetRaw)
	if !ok || target == "" {
		return &topology.InputError{Path: im.path, Line: l.line, Field: field,
			Msg: "missing (want the bus id of the GPU, NVSwitch or CPU at the far end, e.g. target=\"0000:1c:00.0\")"}
	}
	count := 1
	if s, has := l.attr("count"); has && strings.TrimSpace(s) != "" {
		v, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || v < 1 || v > ncclMaxLinkCount {
			return &topology.InputError{Path: im.path, Line: l.line, Field: l.name + ".count",
				Msg: fmt.Sprintf("%q is not a link count (want 1 to %d)", s, ncclMaxLinkCount)}
		}
		count = v
	}
	tclass := uint32(0)
	if s, has := l.attr("tclass"); has && strings.TrimSpace(s) != "" {
		v, err := topology.ParseClass(s)
		if err != nil {
			return &topology.InputError{Path: im.path, Line: l.line, Field: l.name + ".tclass", Msg: ncclWhere(target), Err: err}
		}
		tclass = v
	}

	far, farRate, farRateOK := "", 0.0, false
	targetID, known := im.byBus[target]
	targetIsGPU := known && im.b.Node(targetID).Kind == topology.KindGPU
	switch {
	case target == g.busID:
		im.fabricNotes = append(im.fabricNotes, fmt.Sprintf("GPU %s lists an %s to itself (line %d); ignored", target, kind, l.line))
		return nil
	case kind == topology.LinkNVLink && tclass == ncclTClassCPU:
		// POWER9 joins GPUs to their own CPU over NVLink.
		far = g.socket
	case targetIsGPU && tclass != ncclTClassNVSwitch:
		far = targetID
		for _, o := range im.gpus {
			if o.id == targetID {
				farRate, farRateOK = o.rate, o.rateOK
			}
		}
	case kind == topology.LinkXGMI:
		im.fabricNotes = append(im.fabricNotes, fmt.Sprintf("xGMI target %s of GPU %s (line %d) is not a GPU in the file; the link is left out", target, ncclOr(g.busID, g.id), l.line))
		return nil
	case known && im.b.Node(targetID).Kind == topology.KindNVSwitch:
		far = targetID
	default:
		// NCCL never lists NVSwitches as <pci>: a target that is not a GPU
		// of the file is a switch, one node per bus id.
		far = im.nvSwitch(target, tclass)
	}

	rate, rateOK := topology.XGMIGBps, true
	if kind == topology.LinkXGMI {
		// Two GPUs of different generations talk at the older rate.
		gcn, _ := g.elem.attr("gcn")
		rate, rateOK = topology.XGMIGBpsForGCN(gcn)
		for _, o := range im.gpus {
			if o.id == far {
				fg, _ := o.elem.attr("gcn")
				if fr, ok := topology.XGMIGBpsForGCN(fg); ok && (!rateOK || fr < rate) {
					rate, rateOK = fr, true
				}
			}
		}
		if !rateOK {
			im.xgmiAssumed++
		}
	}
	if kind == topology.LinkNVLink {
		rate, rateOK = g.rate, g.rateOK
		// Two GPUs of different NVLink generations talk at the older rate.
		if farRateOK && (!rateOK || farRate < rate) {
			rate, rateOK = farRate, true
		}
	}
	a, b := g.id, far
	if b < a {
		a, b = b, a
	}
	key := ncclPairKey{a, b, kind}
	acc, seen := im.links[key]
	if !seen {
		acc = &ncclLinkAcc{from: g.id, to: far, fromBus: ncclOr(g.busID, g.id), toBus: target, count: map[string]int{}, rate: rate, rateOK: rateOK}
		im.links[key] = acc
		im.linkOrder = append(im.linkOrder, key)
	} else if rateOK && (!acc.rateOK || rate < acc.rate) {
		acc.rate, acc.rateOK = rate, true
	}
	// NCCL adds up repeated elements under one GPU, so do the same.
	acc.count[g.id] += count
	return nil
}

// nvSwitch returns the NVSwitch node for a bus id, adding it on first use.
// It has no parent: NCCL records no PCI path for NVSwitches, and a parent
// would make Finish invent a PCIe link to it.
func (im *ncclImport) nvSwitch(bus string, tclass uint32) string {
	if id, ok := im.nvSwitches[bus]; ok {
		return id
	}
	n := topology.Node{Kind: topology.KindNVSwitch, Name: "NVIDIA NVSwitch", PCIAddress: bus, VendorID: "10de"}
	if tclass != 0 {
		n.Class = fmt.Sprintf("0x%06x", tclass)
	}
	id := im.b.Add(n)
	im.nvSwitches[bus] = id
	return id
}

// emitFabric turns the gathered fabric links into Links, one per pair.
func (im *ncclImport) emitFabric() {
	for _, key := range im.linkOrder {
		acc := im.links[key]
		count := acc.count[acc.from]
		if back, ok := acc.count[acc.to]; ok && back != count {
			im.fabricNotes = append(im.fabricNotes, fmt.Sprintf(
				"%s between %s and %s is listed with count %d on one end and %d on the other; the larger count is used",
				key.kind, acc.fromBus, acc.toBus, count, back))
			count = max(count, back)
		}
		src := topology.SourceNominal
		if !acc.rateOK {
			src = topology.SourceAssumed
		}
		im.b.Link(topology.Link{From: acc.from, To: acc.to, Kind: key.kind, Count: count,
			GBps: float64(count) * acc.rate, Source: src})
	}
}

// notes records the caveats of the import on the machine.
func (im *ncclImport) notes() {
	b := im.b
	if im.numCPUs > 2 {
		b.Note("the file has %d <cpu> elements; NCCL writes one per NUMA domain, so each is modelled as a socket and every pair is joined at the %s rate (%g GB/s), which understates NUMA domains that share a package (AMD NPS, Intel SNC)",
			im.numCPUs, im.arch.Link, im.arch.GBps)
	}
	if im.archNote != "" {
		b.Note("%s", im.archNote)
	}
	if im.ignoredPCI > 0 {
		b.Note("%d <pci> elements directly under <system> (outside any <cpu>) were ignored", im.ignoredPCI)
	}
	if im.inherited > 0 {
		b.Note("%d PCIe links have no link_speed or link_width of their own; they take the missing value from the link above them", im.inherited)
	}
	if im.assumed > 0 {
		b.Note("%d PCIe links have no usable link_speed/link_width (nor a parent link to inherit from); their capacity is assumed Gen3 x16 = %g GB/s", im.assumed, topology.PCIeGBps(3, 16))
	}
	if len(im.downtrained) > 0 {
		shown := im.downtrained
		more := ""
		if len(shown) > 4 {
			more = fmt.Sprintf(" and %d more", len(shown)-4)
			shown = shown[:4]
		}
		b.Note("%d PCIe links report a lower speed than links below them: %s%s. These upstream links are reported downtrained (NCCL writes the lesser of a device's and its port's max_link_speed); the reported speed is kept, so paths through them are limited to it",
			len(im.downtrained), strings.Join(shown, ", "), more)
	}
	if im.xgmiAssumed > 0 {
		b.Note("%d xGMI link element(s) join GPUs with no recognised gcn attribute: %g GB/s per link assumed (RCCL's MI300 rate)", im.xgmiAssumed, topology.XGMIGBps)
	}
	if len(im.virtualNICs) > 0 {
		b.Note("%d virtual network interface(s) with no PCI device (%s) are not NICs: left out", len(im.virtualNICs), strings.Join(im.virtualNICs, ", "))
	}
	for _, id := range im.cpuNICs {
		b.Note("NIC %s (%s) sits directly under its <cpu> with no PCI path in the file; its link to the socket is assumed", id, b.Node(id).Name)
	}
	for _, n := range im.fabricNotes {
		b.Note("%s", n)
	}
}

// intAttr reads an optional non-negative decimal attribute; absent is 0.
func (im *ncclImport) intAttr(e *ncclElem, name string) (int, error) {
	s, has := e.attr(name)
	if !has || strings.TrimSpace(s) == "" {
		return 0, nil
	}
	v, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || v < 0 {
		return 0, &topology.InputError{Path: im.path, Line: e.line, Field: e.name + "." + name,
			Msg: fmt.Sprintf("%q is not a non-negative decimal number", s)}
	}
	return v, nil
}

// hexAttr reads an optional 16-bit PCI id ("0x10de") as four lower-case hex
// digits; absent is "".
func (im *ncclImport) hexAttr(e *ncclElem, name, bus string) (string, error) {
	s, has := e.attr(name)
	t := strings.TrimSpace(s)
	if !has || t == "" {
		// NCCL writes an empty value when sysfs had none to give.
		return "", nil
	}
	t = strings.TrimPrefix(strings.TrimPrefix(t, "0x"), "0X")
	v, err := strconv.ParseUint(t, 16, 16)
	if err != nil {
		return "", &topology.InputError{Path: im.path, Line: e.line, Field: e.name + "." + name,
			Msg: fmt.Sprintf("%s%q is not a 16-bit hex PCI id (want e.g. 0x10de)", ncclWherePrefix(bus), s)}
	}
	return fmt.Sprintf("%04x", v), nil
}

// ncclCPUFamily converts NCCL's CPU family to the one /proc/cpuinfo shows.
// NCCL adds the extended family shifted left by four (family 0xF plus
// extended 0x8 gives 143 for AMD Zen2), where the CPUID convention adds it
// unshifted (23). Intel's family 6 has no extended part, and hand-written
// files use the /proc/cpuinfo value, whose low digit is never F for AMD
// families from 0x10 on, so only values above 0xF ending in F are converted.
func ncclCPUFamily(vendor string, family int) int {
	if strings.Contains(vendor, "AMD") && family > 0xF && family&0xF == 0xF {
		return 0xF + family>>4
	}
	return family
}

// ncclCPUList turns a Linux cpumask ("000000ff,ffff0000,00ffffff": 32-bit
// words, most significant first) into a cpulist ("0-23,48-71") and the
// number of CPUs in it.
func ncclCPUList(mask string) (string, int, error) {
	words := strings.Split(strings.TrimSpace(mask), ",")
	if len(words) == 1 && words[0] == "" {
		return "", 0, nil
	}
	var sb strings.Builder
	count, start, next := 0, -1, 0
	flush := func(end int) {
		if start < 0 {
			return
		}
		if sb.Len() > 0 {
			sb.WriteByte(',')
		}
		if end-1 == start {
			fmt.Fprintf(&sb, "%d", start)
		} else {
			fmt.Fprintf(&sb, "%d-%d", start, end-1)
		}
		start = -1
	}
	for wi := len(words) - 1; wi >= 0; wi-- {
		w := strings.TrimPrefix(strings.TrimSpace(words[wi]), "0x")
		v, err := strconv.ParseUint(w, 16, 32)
		if err != nil {
			return "", 0, fmt.Errorf("%q is not a CPU mask (want comma-separated 32-bit hex words, e.g. \"0000ffff,ffff0000\")", mask)
		}
		for bit := 0; bit < 32; bit++ {
			cpu := next + bit
			if v>>bit&1 == 1 {
				count++
				if start < 0 {
					start = cpu
				}
			} else {
				flush(cpu)
			}
		}
		next += 32
	}
	flush(next)
	return sb.String(), count, nil
}

// ncclNormBusID lower-cases a bus id and trims NVML's 8-digit domain
// ("00000000:1C:00.0") to the 4 digits NCCL writes, so targets match.
func ncclNormBusID(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	if i := strings.IndexByte(s, ':'); i > 4 && strings.Count(s, ":") == 2 {
		dom := strings.TrimLeft(s[:i-4], "0")
		if dom == "" {
			s = s[i-4:]
		}
	}
	return s
}

func ncclWhere(bus string) string {
	if bus == "" {
		return ""
	}
	return "busid " + bus
}

func ncclWherePrefix(bus string) string {
	if bus == "" {
		return ""
	}
	return "busid " + bus + ": "
}

func ncclOr(s, fallback string) string {
	if s != "" {
		return s
	}
	return fallback
}

func ncclCopyInt(p *int) *int {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
