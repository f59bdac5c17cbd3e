package hwloc

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/gnnplan/gnnplan/topology"
	"github.com/gnnplan/gnnplan/topology/internal/ctxio"
)

// hwlocMaxDepth bounds element nesting. Real exports nest about 20 deep
// (machine, package, caches, core, PU, or a PCIe tree of two switch levels);
// the bound keeps a hostile file from driving the recursive passes below
// arbitrarily deep.
const hwlocMaxDepth = 256

// hwlocMaxMatrix bounds a distance matrix's side. hwloc's largest matrices
// are PU latencies of a few thousand PUs; the bound keeps nbobjs² far from
// overflowing.
const hwlocMaxMatrix = 1 << 16

// hwlocOffStandardFactor scales a pci_link_speed that matches no standard
// generation x width to a usable rate: PCIeGBps's Gen1/Gen2 figures sit at
// exactly 75% of the raw rate (and Gen3+ at 76%).
const hwlocOffStandardFactor = 0.75

// hwlocElem is one XML element kept for the passes after parsing.
type hwlocElem struct {
	name   string // element name: object, info, distances2, indexes, ...
	typ    string // for <object>: the type, with hwloc 1.x "Socket" read as "Package"
	attrs  map[string]string
	text   []byte // character data, kept only for matrix index and value lists
	kids   []*hwlocElem
	parent *hwlocElem
	line   int
}

func (e *hwlocElem) attr(name string) string { return e.attrs[name] }

// hwlocPCIName is the name the file gives a PCI object (hwloc writes
// pci.ids' vendor and device names as PCIVendor and PCIDevice infos):
// "Intel Corporation I350 Gigabit Network Connection", or the vendor's
// name and the hex ids where only the vendor is named; hex where neither.
func hwlocPCIName(e *hwlocElem, hex string) string {
	vendor, device := strings.TrimSpace(e.info("PCIVendor")), strings.TrimSpace(e.info("PCIDevice"))
	switch {
	case vendor != "" && device != "":
		return vendor + " " + device
	case device != "":
		return device
	case vendor != "":
		return vendor + " " + hex
	}
	return hex
}

func (e *hwlocElem) isObject() bool { return e != nil && e.name == "object" }

// info returns the value of the <info name=... value=...> child with the
// given name, or "".
func (e *hwlocElem) info(name string) string {
	for _, k := range e.kids {
		if k.name == "info" && k.attr("name") == name {
			return k.attr("value")
		}
	}
	return ""
}

// objKids returns the <object> children in file order.
func (e *hwlocElem) objKids() []*hwlocElem {
	var out []*hwlocElem
	for _, k := range e.kids {
		if k.isObject() {
			out = append(out, k)
		}
	}
	return out
}

// descendants returns the objects of type typ below e, in file order.
func (e *hwlocElem) descendants(typ string) []*hwlocElem {
	var out []*hwlocElem
	var walk func(*hwlocElem)
	walk = func(p *hwlocElem) {
		for _, k := range p.kids {
			if !k.isObject() {
				continue
			}
			if k.typ == typ {
				out = append(out, k)
			}
			walk(k)
		}
	}
	walk(e)
	return out
}

// ancestor returns the nearest object of type typ above e, or nil.
func (e *hwlocElem) ancestor(typ string) *hwlocElem {
	for p := e.parent; p.isObject(); p = p.parent {
		if p.typ == typ {
			return p
		}
	}
	return nil
}

// hwlocIsIO reports whether an object type belongs to hwloc's I/O tree.
func hwlocIsIO(typ string) bool { return typ == "Bridge" || typ == "PCIDev" || typ == "OSDev" }

// hwlocReadTree parses the XML into elements. It stops at the end of the
// root element and refuses any root other than <topology>.
func hwlocReadTree(ctx context.Context, path string, data []byte) (*hwlocElem, error) {
	dec := xml.NewDecoder(&ctxio.Reader{Ctx: ctx, R: bytes.NewReader(data)})
	// hwloc always writes UTF-8; accept the ASCII spellings so a re-saved
	// file still loads, and refuse the rest with a clear message.
	dec.CharsetReader = func(label string, in io.Reader) (io.Reader, error) {
		switch strings.ToLower(label) {
		case "utf-8", "utf8", "us-ascii", "ascii":
			return in, nil
		}
		return nil, fmt.Errorf("encoding %q is not supported (hwloc writes UTF-8)", label)
	}
	var root *hwlocElem
	var stack []*hwlocElem
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			line, _ := dec.InputPos()
			if root == nil {
				return nil, &topology.InputError{Path: path, Line: line, Field: "topology",
					Msg: "no XML element found: want an hwloc XML export (lstopo --of xml)"}
			}
			top := stack[len(stack)-1]
			return nil, &topology.InputError{Path: path, Line: line, Field: top.name,
				Msg: fmt.Sprintf("file ends inside <%s> opened on line %d (truncated?)", top.name, top.line)}
		}
		if err != nil {
			line, _ := dec.InputPos()
			var se *xml.SyntaxError
			if errors.As(err, &se) {
				line = se.Line
				if se.Msg == "unexpected EOF" && len(stack) > 0 {
					top := stack[len(stack)-1]
					return nil, &topology.InputError{Path: path, Line: line, Field: top.name,
						Msg: fmt.Sprintf("file ends inside <%s> opened on line %d (truncated?)", top.name, top.line), Err: err}
				}
			}
			return nil, &topology.InputError{Path: path, Line: line, Msg: "not well-formed XML", Err: err}
		}
		switch t := tok.(type) {
		case xml.StartElement:
			line, _ := dec.InputPos()
			e := &hwlocElem{name: t.Name.Local, line: line, attrs: make(map[string]string, len(t.Attr))}
			for _, a := range t.Attr {
				e.attrs[a.Name.Local] = a.Value
			}
			if e.name == "object" {
				e.typ = e.attrs["type"]
				if e.typ == "Socket" {
					e.typ = "Package"
				}
			}
			if root == nil {
				if e.name != "topology" {
					return nil, &topology.InputError{Path: path, Line: line, Field: e.name,
						Msg: fmt.Sprintf("root element is <%s>: want <topology> (an hwloc XML export, lstopo --of xml)", e.name)}
				}
				root = e
			} else {
				if len(stack) >= hwlocMaxDepth {
					return nil, &topology.InputError{Path: path, Line: line, Field: e.name,
						Msg: fmt.Sprintf("elements nest deeper than %d levels: not an hwloc export", hwlocMaxDepth)}
				}
				p := stack[len(stack)-1]
				e.parent = p
				p.kids = append(p.kids, e)
			}
			stack = append(stack, e)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				return root, nil
			}
		case xml.CharData:
			if len(stack) > 0 {
				if top := stack[len(stack)-1]; top.name == "indexes" || top.name == "u64values" {
					top.text = append(top.text, t...)
				}
			}
		}
	}
}

// hwlocPCIType is the identity read from pci_type.
type hwlocPCIType struct {
	class  uint32 // 24-bit: class << 8 | programming interface
	vendor string // 4 lower-case hex digits
	device string
}

func (p hwlocPCIType) zero() bool { return p.vendor == "0000" && p.device == "0000" }

// hwlocParsePCIType reads hwloc's pci_type, "CCCC [vvvv:dddd] [ssss:ssss] rr
// pp" (class, vendor:device, subsystem, revision and, since hwloc 2, the
// programming interface).
func hwlocParsePCIType(s string) (hwlocPCIType, bool) {
	f := strings.Fields(s)
	if len(f) < 2 || len(f[0]) != 4 {
		return hwlocPCIType{}, false
	}
	class, err := strconv.ParseUint(f[0], 16, 16)
	if err != nil {
		return hwlocPCIType{}, false
	}
	ids := strings.TrimSuffix(strings.TrimPrefix(f[1], "["), "]")
	v, d, ok := strings.Cut(ids, ":")
	if !ok || len(ids) != len(f[1])-2 || !hwlocHex16(v) || !hwlocHex16(d) {
		return hwlocPCIType{}, false
	}
	var progIf uint64
	if len(f) >= 5 {
		if p, err := strconv.ParseUint(f[4], 16, 8); err == nil {
			progIf = p
		}
	}
	return hwlocPCIType{class: uint32(class)<<8 | uint32(progIf), vendor: topology.NormalizePCIID(v), device: topology.NormalizePCIID(d)}, true
}

func hwlocHex16(s string) bool {
	if len(s) == 0 || len(s) > 4 {
		return false
	}
	_, err := strconv.ParseUint(s, 16, 16)
	return err == nil
}

// hwlocLaneGBps is the raw per-lane data rate hwloc multiplies by the width
// to get pci_link_speed: 8b/10b encoding up to Gen2, 128b/130b after.
func hwlocLaneGBps(gen int) float64 {
	switch gen {
	case 1:
		return 0.25
	case 2:
		return 0.5
	}
	return float64(int(1)<<(gen-3)) * 8 * 128 / 130 / 8
}

// hwlocGenLanes finds the PCIe generation and width whose raw rate is the
// given pci_link_speed. The rate alone is ambiguous (Gen3 x16 = Gen4 x8 =
// Gen5 x4, Gen1 x4 = Gen2 x2) but every reading gives the same PCIeGBps, so
// only the labels are at stake: the parent link's generation wins when it is
// one of the readings, else the lowest generation (the widest link, as
// servers wire GPUs and NICs).
func hwlocGenLanes(raw float64, preferGen int) (gen, lanes int, ok bool) {
	// x32 goes last: the spec allows it but no shipping device uses it, so
	// 31.5 GB/s is a Gen4 x16, not a Gen3 x32.
	for _, widths := range [...][]int{{16, 12, 8, 4, 2, 1}, {32}} {
		for g := 1; g <= 7; g++ {
			for _, w := range widths {
				want := hwlocLaneGBps(g) * float64(w)
				if math.Abs(raw-want) > 5e-4*want {
					continue
				}
				if !ok {
					gen, lanes, ok = g, w, true
				}
				if g == preferGen {
					return g, w, true
				}
			}
		}
	}
	return gen, lanes, ok
}

// hwlocCPUList writes CPU numbers as a Linux cpulist ("0-3,8").
func hwlocCPUList(ids []int) string {
	s := append([]int(nil), ids...)
	sort.Ints(s)
	var b strings.Builder
	for i := 0; i < len(s); {
		j := i
		for j+1 < len(s) && s[j+1] <= s[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		if s[j] == s[i] {
			fmt.Fprintf(&b, "%d", s[i])
		} else {
			fmt.Fprintf(&b, "%d-%d", s[i], s[j])
		}
		i = j + 1
	}
	return b.String()
}

// hwlocBitmap parses an hwloc cpuset ("0x00ff", "0x00000003,0xffffffff":
// 32-bit words, most significant first) into words, least significant
// first. ok is false for anything else.
func hwlocBitmap(s string) (words []uint32, ok bool) {
	parts := strings.Split(strings.TrimSpace(s), ",")
	if len(parts) > 4096 {
		return nil, false
	}
	for i := len(parts) - 1; i >= 0; i-- {
		p := strings.TrimPrefix(strings.TrimPrefix(parts[i], "0x"), "0X")
		if p == "f...f" { // hwloc's infinite set: every higher bit
			words = append(words, math.MaxUint32)
			continue
		}
		v, err := strconv.ParseUint(p, 16, 32)
		if err != nil {
			return nil, false
		}
		words = append(words, uint32(v))
	}
	return words, true
}

func hwlocHasBit(words []uint32, i int) bool {
	if i < 0 || i/32 >= len(words) {
		return false
	}
	return words[i/32]>>(uint(i)%32)&1 == 1
}

// hwlocGiB converts bytes to GiB rounded to 0.01, as discovery does.
func hwlocGiB(bytes float64) float64 { return math.Round(bytes/(1<<30)*100) / 100 }

// hwlocImport holds the state of one import.
type hwlocImport struct {
	names   topology.PCINames // pci.ids, for devices the file does not name
	path    string
	root    *hwlocElem // <topology>
	major   int        // format major version: 1, 2 or 3
	b       *topology.Builder
	objs    []*hwlocElem // every <object>, in file order
	byGP    map[string]*hwlocElem
	byOS    map[string]*hwlocElem // "type:os_index"
	matrix  []*hwlocElem          // distances, distances2, distances2hetero
	sockets []string              // socket node ids, in file order
	puOf    map[string][]int      // socket id -> PU os indexes
	// socketOf maps Package and NUMANode objects to socket ids; nodeOf maps
	// I/O objects to the node that stands for them (a switch's downstream
	// ports map to the switch).
	socketOf   map[*hwlocElem]string
	numaSocket map[int]string
	nodeOf     map[*hwlocElem]string
	uplink     map[string]topology.Link
	implicitRP map[*hwlocElem]string
	cpuVendor  string // PCI vendor id of the CPU maker, "" when unknown

	chipset, emptyHosts, offStandard, inherited, assumed, vfs int
	unplaced                                                  []string
}

// parseHwlocXML is Parse without a context.
func parseHwlocXML(path string, data []byte) (*topology.Machine, error) {
	return Parse(context.Background(), path, data)
}

// Parse builds a Machine from an hwloc XML export (lstopo --of xml); path
// names it in errors. It stops when ctx is cancelled.
func Parse(ctx context.Context, path string, data []byte) (*topology.Machine, error) {
	root, err := hwlocReadTree(ctx, path, data)
	if err != nil {
		return nil, err
	}
	h := &hwlocImport{
		path: path, root: root,
		byGP: map[string]*hwlocElem{}, byOS: map[string]*hwlocElem{},
		puOf: map[string][]int{}, socketOf: map[*hwlocElem]string{}, numaSocket: map[int]string{},
		nodeOf: map[*hwlocElem]string{}, uplink: map[string]topology.Link{}, implicitRP: map[*hwlocElem]string{},
	}
	return h.build()
}

func (h *hwlocImport) errorf(e *hwlocElem, attr, format string, args ...any) *topology.InputError {
	field := e.name
	if e.isObject() && e.typ != "" {
		field = e.typ
	}
	if attr != "" {
		field += "." + attr
	}
	return &topology.InputError{Path: h.path, Line: e.line, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// uintAttr reads an unsigned attribute; ok is false when it is absent.
func (h *hwlocImport) uintAttr(e *hwlocElem, name string, bits int) (v uint64, ok bool, err error) {
	s, present := e.attrs[name]
	if !present {
		return 0, false, nil
	}
	v, perr := strconv.ParseUint(strings.TrimSpace(s), 10, bits)
	if perr != nil {
		return 0, false, h.errorf(e, name, "%q: want an unsigned integer", s)
	}
	return v, true, nil
}

func (h *hwlocImport) build() (*topology.Machine, error) {
	switch v := h.root.attr("version"); {
	case v == "" || strings.HasPrefix(v, "1."):
		h.major = 1
	case strings.HasPrefix(v, "2."):
		h.major = 2
	case strings.HasPrefix(v, "3."):
		h.major = 3
	default:
		return nil, h.errorf(h.root, "version", "%q: want 2.0 or 3.0 (or no version for hwloc 1.x)", v)
	}
	if err := h.index(h.root); err != nil {
		return nil, err
	}
	if len(h.objs) == 0 {
		return nil, h.errorf(h.root, "", "no <object> elements: want the Machine object and its children")
	}
	top := h.objs[0]
	name := strings.TrimSpace(top.info("DMIProductName"))
	if name == "" {
		name = filepath.Base(h.path)
	}
	h.b = topology.NewBuilder(name, "hwloc-xml:"+h.path)
	if h.major == 1 {
		h.b.Note("hwloc 1.x XML format")
	}
	arch, err := h.addSockets()
	if err != nil {
		return nil, err
	}
	if err := h.addIO(); err != nil {
		return nil, err
	}
	if err := h.addMatrices(); err != nil {
		return nil, err
	}
	h.ioNotes()
	m, err := h.b.Finish(arch)
	if err != nil {
		return nil, &topology.InputError{Path: h.path, Msg: "the file describes an inconsistent machine", Err: err}
	}
	return m, nil
}

// index records every object and matrix, checking the numbers the later
// passes rely on so they can read them without error paths.
func (h *hwlocImport) index(e *hwlocElem) error {
	for _, k := range e.kids {
		switch k.name {
		case "object":
			h.objs = append(h.objs, k)
			if gp := k.attr("gp_index"); gp != "" {
				if _, _, err := h.uintAttr(k, "gp_index", 64); err != nil {
					return err
				}
				if _, dup := h.byGP[gp]; !dup {
					h.byGP[gp] = k
				}
			}
			if os, ok, err := h.uintAttr(k, "os_index", 32); err != nil {
				return err
			} else if ok {
				key := k.typ + ":" + strconv.FormatUint(os, 10)
				if _, dup := h.byOS[key]; !dup {
					h.byOS[key] = k
				}
			}
			if _, _, err := h.uintAttr(k, "local_memory", 64); err != nil {
				return err
			}
		case "distances", "distances2", "distances2hetero":
			h.matrix = append(h.matrix, k)
		}
		if err := h.index(k); err != nil {
			return err
		}
	}
	return nil
}

// firstInfo returns the first value of an info name in file order, so
// per-package CPU facts written once on the Machine are found too.
func (h *hwlocImport) firstInfo(name string) string {
	for _, o := range h.objs {
		if v := strings.TrimSpace(o.info(name)); v != "" {
			return v
		}
	}
	return ""
}

func (h *hwlocImport) osIndex(e *hwlocElem) (int, bool) {
	v, ok, _ := h.uintAttr(e, "os_index", 32) // checked by index
	return int(v), ok
}

func (h *hwlocImport) memBytes(e *hwlocElem) float64 {
	v, _, _ := h.uintAttr(e, "local_memory", 64) // checked by index
	return float64(v)
}

// addSockets makes one socket per Package; without packages, one per NUMA
// node; without either, one for the machine. It returns the inter-socket
// link the CPU implies.
func (h *hwlocImport) addSockets() (topology.CPUArch, error) {
	model := h.firstInfo("CPUModel")
	vendor := h.firstInfo("CPUVendor")
	fam, _ := strconv.Atoi(h.firstInfo("CPUFamilyNumber"))
	mod, _ := strconv.Atoi(h.firstInfo("CPUModelNumber"))
	arch, ok := topology.InterSocketLink(vendor, fam, mod)
	if !ok {
		if a2, ok2 := topology.InterSocketLinkByName(model); ok2 {
			arch, ok = a2, true
		}
	}
	lv, lm := strings.ToLower(vendor), strings.ToLower(model)
	switch {
	case strings.Contains(lv, "intel") || (lv == "" && (strings.Contains(lm, "intel") || strings.Contains(lm, "xeon"))):
		h.cpuVendor = "8086"
	case strings.Contains(lv, "amd") || (lv == "" && (strings.Contains(lm, "amd") || strings.Contains(lm, "epyc"))):
		h.cpuVendor = "1022"
	case strings.Contains(lv, "hygon"):
		h.cpuVendor = "1d94"
	}

	var pkgs, numas []*hwlocElem
	for _, o := range h.objs {
		switch o.typ {
		case "Package":
			pkgs = append(pkgs, o)
		case "NUMANode":
			numas = append(numas, o)
		}
	}
	claimed := map[*hwlocElem]bool{}
	add := func(n topology.Node, pus []*hwlocElem, mine []*hwlocElem) string {
		ids := make([]int, 0, len(pus))
		cores := map[*hwlocElem]bool{}
		for _, pu := range pus {
			if os, ok := h.osIndex(pu); ok {
				ids = append(ids, os)
			}
			if c := pu.ancestor("Core"); c != nil {
				cores[c] = true
			}
		}
		n.Kind, n.Threads, n.Cores, n.CPUList = topology.KindSocket, len(pus), len(cores), hwlocCPUList(ids)
		if n.CPUModel == "" {
			n.CPUModel = model
		}
		mem := 0.0
		for _, nm := range mine {
			if os, ok := h.osIndex(nm); ok && n.NUMANode == nil {
				v := os
				n.NUMANode = &v
			}
			if !claimed[nm] {
				mem += h.memBytes(nm)
			}
		}
		n.MemoryGiB = hwlocGiB(mem)
		sid := h.b.Add(n)
		for _, nm := range mine {
			if claimed[nm] {
				continue
			}
			claimed[nm] = true
			h.socketOf[nm] = sid
			if os, ok := h.osIndex(nm); ok {
				h.numaSocket[os] = sid
			}
		}
		h.sockets = append(h.sockets, sid)
		h.puOf[sid] = ids
		return sid
	}

	switch {
	case len(pkgs) > 0:
		for _, p := range pkgs {
			mine := p.descendants("NUMANode")
			if len(mine) == 0 {
				// hwloc 1.x puts the NUMA node above the package.
				if a := p.ancestor("NUMANode"); a != nil {
					mine = []*hwlocElem{a}
				}
			}
			sid := add(topology.Node{CPUModel: strings.TrimSpace(p.info("CPUModel"))}, p.descendants("PU"), mine)
			h.socketOf[p] = sid
		}
		var outside []string
		for _, nm := range numas {
			if !claimed[nm] {
				os, _ := h.osIndex(nm)
				outside = append(outside, fmt.Sprintf("%d (%.2f GiB)", os, hwlocGiB(h.memBytes(nm))))
			}
		}
		if len(outside) > 0 {
			h.b.Note("NUMA node(s) %s sit outside every package (CXL, HBM or persistent memory?): not counted in socket memory", strings.Join(outside, ", "))
		}
	case len(numas) > 0:
		for _, nm := range numas {
			// hwloc 2 hangs NUMA nodes as memory children beside the CPUs
			// they serve; hwloc 1.x puts the CPUs inside the NUMA node.
			scope := nm
			if len(nm.descendants("PU")) == 0 && nm.parent.isObject() {
				scope = nm.parent
			}
			pus := scope.descendants("PU")
			if words, ok := hwlocBitmap(nm.attr("cpuset")); ok {
				var in []*hwlocElem
				for _, pu := range pus {
					if os, ok := h.osIndex(pu); ok && hwlocHasBit(words, os) {
						in = append(in, pu)
					}
				}
				pus = in
			}
			add(topology.Node{}, pus, []*hwlocElem{nm})
		}
		h.b.Note("no Package objects: one socket per NUMA node (%d)", len(numas))
	default:
		sid := add(topology.Node{}, h.root.descendants("PU"), nil)
		if mem := h.memBytes(h.objs[0]); mem > 0 {
			h.b.Node(sid).MemoryGiB = hwlocGiB(mem)
		}
		h.b.Note("no Package or NUMANode objects: one socket holds all CPUs and memory")
	}
	if len(h.sockets) > 1 && !ok {
		h.b.Note("CPU %q not recognised: inter-socket links assumed %g GB/s per direction", model, arch.GBps)
	}
	return arch, nil
}

// addIO walks every I/O tree from where it hangs off the CPU side.
func (h *hwlocImport) addIO() error {
	for _, o := range h.objs {
		if !hwlocIsIO(o.typ) || (o.parent.isObject() && hwlocIsIO(o.parent.typ)) {
			continue
		}
		var err error
		switch {
		case o.typ == "OSDev":
			// pmem, dax and similar: memory, not a PCIe endpoint.
		case o.typ == "Bridge" && hwlocIsHostBridge(o):
			err = h.addHostBridge(o)
		default:
			err = h.addBare(o)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func hwlocIsHostBridge(o *hwlocElem) bool {
	if bt := o.attr("bridge_type"); bt != "" {
		return strings.HasPrefix(bt, "0-")
	}
	return o.attr("depth") == "0" && o.attr("pci_busid") == ""
}

// hwlocChipsetKind reports whether a function on a root bus is chipset plumbing
// (DMA engines, uncore counters, USB, SMBus, the host bridge's own
// function) rather than something a planner moves data through. Discovery
// hides the same functions.
func hwlocChipsetKind(k topology.Kind) bool {
	return k == topology.KindOther || k == topology.KindRootPort
}

// hwlocPCIDevKind classifies a PCIDev; ok is false when pci_type is unreadable.
func hwlocPCIDevKind(e *hwlocElem) (hwlocPCIType, topology.Kind, bool) {
	pt, ok := hwlocParsePCIType(e.attr("pci_type"))
	k := topology.KindForPCIDevice(pt.class, pt.vendor, pt.device)
	// hwloc marks NVSwitches it found through NVLink peers; their PCI
	// identity is sometimes unreadable (class 0000, ids 0000:0000).
	if strings.EqualFold(e.attr("subtype"), "NVSwitch") {
		k = topology.KindNVSwitch
	}
	return pt, k, ok
}

func (h *hwlocImport) addHostBridge(hb *hwlocElem) error {
	kept := false
	for _, k := range hb.objKids() {
		switch k.typ {
		case "Bridge":
			kept = true
		case "PCIDev":
			if _, kind, ok := hwlocPCIDevKind(k); !ok || !hwlocChipsetKind(kind) {
				kept = true
			}
		}
	}
	if !kept {
		h.emptyHosts++
		for _, k := range hb.objKids() {
			if k.typ == "PCIDev" {
				h.chipset++
			}
		}
		return nil
	}
	sock := h.socketForIO(hb)
	n := topology.Node{Kind: topology.KindRootPort, Parent: sock, NUMANode: h.b.Node(sock).NUMANode, Name: "host bridge"}
	if bp := hb.attr("bridge_pci"); bp != "" {
		n.Name += " " + bp
	}
	// The root port folds into this node (see addBridge); when it is the
	// only one, the node takes its PCI identity.
	var ports []*hwlocElem
	for _, k := range hb.objKids() {
		if k.typ == "Bridge" {
			ports = append(ports, k)
		}
	}
	if len(ports) == 1 {
		if pt, ok := hwlocParsePCIType(ports[0].attr("pci_type")); ok && h.isRootPort(ports[0]) {
			n.PCIAddress, n.VendorID, n.DeviceID = ports[0].attr("pci_busid"), pt.vendor, pt.device
			n.Class = fmt.Sprintf("0x%06x", pt.class)
		}
	}
	id := h.b.Add(n)
	h.nodeOf[hb] = id
	for _, k := range hb.objKids() {
		if err := h.addObj(k, id, 0, true); err != nil {
			return err
		}
	}
	return nil
}

// addBare adds a bridge or device that hangs straight off a CPU-side object
// (lstopo --filter bridge:none does that) below a stand-in host bridge.
func (h *hwlocImport) addBare(o *hwlocElem) error {
	if o.typ == "PCIDev" {
		if _, k, ok := hwlocPCIDevKind(o); ok && hwlocChipsetKind(k) {
			h.chipset++
			return nil
		}
	}
	rp, ok := h.implicitRP[o.parent]
	if !ok {
		sock := h.socketForIO(o)
		rp = h.b.Add(topology.Node{Kind: topology.KindRootPort, Parent: sock, NUMANode: h.b.Node(sock).NUMANode,
			Name: "host bridge (not in file)"})
		h.implicitRP[o.parent] = rp
		h.b.Note("PCI objects below %s line %d have no host bridge in the file: %s stands in for it", o.parent.typ, o.parent.line, rp)
	}
	return h.addObj(o, rp, 0, true)
}

// socketForIO finds the socket an I/O tree belongs to: the package (or
// hwloc 1.x NUMA node) it hangs below, else the one socket whose CPUs the
// file's pci_locality gives for its bus, else socket 0.
func (h *hwlocImport) socketForIO(o *hwlocElem) string {
	for p := o.parent; p.isObject(); p = p.parent {
		if sid, ok := h.socketOf[p]; ok {
			return sid
		}
		if p.typ == "NUMANode" {
			if os, ok := h.osIndex(p); ok {
				if sid, ok := h.numaSocket[os]; ok {
					return sid
				}
			}
		}
	}
	if sid, ok := h.localitySocket(o); ok {
		return sid
	}
	if len(h.sockets) > 1 {
		where := o.attr("bridge_pci")
		if where == "" {
			where = o.attr("pci_busid")
		}
		if where == "" {
			where = fmt.Sprintf("line %d", o.line)
		}
		h.unplaced = append(h.unplaced, where)
	}
	return h.sockets[0]
}

// localitySocket reads hwloc 3's <pci_locality domain bus_min bus_max
// cpuset> records for the bus of o.
func (h *hwlocImport) localitySocket(o *hwlocElem) (string, bool) {
	dom, bus, ok := hwlocBus(o)
	if !ok {
		return "", false
	}
	for _, e := range h.root.kids {
		if e.name != "pci_locality" {
			continue
		}
		d, err1 := strconv.ParseUint(strings.TrimPrefix(e.attr("domain"), "0x"), 16, 32)
		lo, err2 := strconv.ParseUint(strings.TrimPrefix(e.attr("bus_min"), "0x"), 16, 8)
		hi, err3 := strconv.ParseUint(strings.TrimPrefix(e.attr("bus_max"), "0x"), 16, 8)
		words, ok := hwlocBitmap(e.attr("cpuset"))
		if err1 != nil || err2 != nil || err3 != nil || !ok || d != dom || bus < lo || bus > hi {
			continue
		}
		var match []string
		for _, sid := range h.sockets {
			for _, cpu := range h.puOf[sid] {
				if hwlocHasBit(words, cpu) {
					match = append(match, sid)
					break
				}
			}
		}
		if len(match) == 1 {
			return match[0], true
		}
		return "", false
	}
	return "", false
}

// hwlocBus returns the PCI domain and bus of an I/O object: a host bridge's
// secondary bus from bridge_pci "0000:[2b-3b]", else the bus of pci_busid.
func hwlocBus(o *hwlocElem) (dom, bus uint64, ok bool) {
	s := o.attr("bridge_pci")
	if s != "" {
		d, rest, found := strings.Cut(s, ":[")
		lo, _, found2 := strings.Cut(rest, "-")
		if !found || !found2 {
			return 0, 0, false
		}
		dv, err1 := strconv.ParseUint(d, 16, 32)
		bv, err2 := strconv.ParseUint(lo, 16, 8)
		return dv, bv, err1 == nil && err2 == nil
	}
	f := strings.Split(o.attr("pci_busid"), ":")
	if len(f) != 3 {
		return 0, 0, false
	}
	dv, err1 := strconv.ParseUint(f[0], 16, 32)
	bv, err2 := strconv.ParseUint(f[1], 16, 8)
	return dv, bv, err1 == nil && err2 == nil
}

// addObj adds I/O object e below node parent. port is the pci_link_speed of
// the port whose downstream link e sits on (a folded root port or switch
// downstream port), 0 when there is none. rootBus says e sits on a host
// bridge's bus.
func (h *hwlocImport) addObj(e *hwlocElem, parent string, port float64, rootBus bool) error {
	switch e.typ {
	case "OSDev":
		h.addOSDev(e, parent)
	case "PCIDev":
		return h.addPCIDev(e, parent, port, rootBus)
	case "Bridge":
		return h.addBridge(e, parent, port, rootBus)
	}
	// Misc objects (and CPU-side objects, which hwloc never puts in an I/O
	// tree) carry nothing for the PCIe model.
	return nil
}

func (h *hwlocImport) addPCIDev(e *hwlocElem, parent string, port float64, rootBus bool) error {
	pt, k, ok := hwlocPCIDevKind(e)
	if !ok {
		return h.errorf(e, "pci_type", "%q: want \"CCCC [vvvv:dddd] [ssss:ssss] rr\" such as \"0302 [10de:1db8] [10de:12ab] a1\"", e.attr("pci_type"))
	}
	if rootBus && hwlocChipsetKind(k) {
		h.chipset++
		return nil
	}
	n := topology.Node{Kind: k, Parent: parent, PCIAddress: e.attr("pci_busid"), NUMANode: h.b.Node(parent).NUMANode,
		Label: strings.TrimSpace(e.info("PCISlot"))}
	if !pt.zero() {
		n.VendorID, n.DeviceID, n.Class = pt.vendor, pt.device, fmt.Sprintf("0x%06x", pt.class)
	}
	n.Name = topology.DeviceName(pt.vendor, pt.device)
	if n.Name == pt.vendor+":"+pt.device {
		n.Name = hwlocOSDevModel(e, hwlocPCIName(e, n.Name))
		if n.Name == pt.vendor+":"+pt.device && !pt.zero() {
			n.Name = h.names.DeviceName(pt.vendor, pt.device)
		}
		if k == topology.KindNVSwitch && pt.zero() {
			n.Name = "NVIDIA NVSwitch"
		}
	}
	if k == topology.KindGPU && topology.IsIntegratedGraphics(n.Name) {
		k, n.Kind = topology.KindOther, topology.KindOther
	}
	if k == topology.KindGPU {
		n.MemoryGiB = topology.GPUMemoryGiB(pt.vendor, pt.device)
	}
	if k == topology.KindNIC && topology.IsVirtualFunction(n.Name) {
		n.Kind = topology.KindOther
		h.vfs++
	}
	id := h.b.Add(n)
	h.nodeOf[e] = id
	if err := h.linkTo(parent, id, port, e); err != nil {
		return err
	}
	for _, c := range e.objKids() {
		if err := h.addObj(c, id, 0, false); err != nil {
			return err
		}
	}
	return nil
}

// hwlocOSDevModel returns the model string an OS device below e gives
// (NVML, CUDA, OpenCL, MIC), else fallback: for ids the package does not
// know it reads better than hex.
func hwlocOSDevModel(e *hwlocElem, fallback string) string {
	for _, k := range e.objKids() {
		for _, key := range [...]string{"GPUModel", "CoProcType"} {
			if v := strings.TrimSpace(k.info(key)); v != "" {
				return v
			}
		}
	}
	return fallback
}

// isRootPort reports whether a bridge on a host bridge's bus is a root
// port (see addBridge).
func (h *hwlocImport) isRootPort(e *hwlocElem) bool {
	if !h.isSwitchUpstream(e) {
		return true
	}
	pt, _ := hwlocParsePCIType(e.attr("pci_type"))
	return pt.vendor == h.cpuVendor
}

// addBridge models a PCI-to-PCI bridge. The rule, applied top down:
//
//   - A bridge with a bridge child of the same vendor:device (PLX 10b5:9781
//     over 10b5:9781), or with only bridge children, two or more, of its own
//     vendor, is a switch's upstream port: one KindSwitch node. All its
//     bridge children are the switch's downstream ports and get no node;
//     what sits below each hangs off the switch, on a link of that
//     downstream port's speed. A downstream port's own children are judged
//     afresh, so a switch below a switch (the DGX-2's two levels of PEX9781)
//     is a second switch node.
//   - A bridge directly on a host bridge's bus is a root port, unless it is
//     a switch upstream port from a vendor other than the CPU's. Root ports
//     fold into the host bridge's KindRootPort node (model.go counts root
//     ports, host bridges and root complexes as one kind, and the on-die
//     link Finish adds already stands for the root complex); what sits
//     below keeps the root port's link speed, so no capacity is lost.
//   - Any other bridge (a PCIe-to-PCI bridge, say) is a KindBridge node.
func (h *hwlocImport) addBridge(e *hwlocElem, parent string, port float64, rootBus bool) error {
	own, err := h.linkSpeed(e)
	if err != nil {
		return err
	}
	pt, _ := hwlocParsePCIType(e.attr("pci_type"))
	if rootBus && h.isRootPort(e) {
		for _, c := range e.objKids() {
			if err := h.addObj(c, parent, own, false); err != nil {
				return err
			}
		}
		return nil
	}
	up := h.isSwitchUpstream(e)
	kind := topology.KindBridge
	if up {
		kind = topology.KindSwitch
	}
	n := topology.Node{Kind: kind, Parent: parent, PCIAddress: e.attr("pci_busid"), NUMANode: h.b.Node(parent).NUMANode}
	if pt.vendor != "" && !pt.zero() {
		n.VendorID, n.DeviceID, n.Class = pt.vendor, pt.device, fmt.Sprintf("0x%06x", pt.class)
		n.Name = topology.DeviceName(pt.vendor, pt.device)
		if n.Name == pt.vendor+":"+pt.device {
			n.Name = hwlocPCIName(e, n.Name)
		}
		if n.Name == pt.vendor+":"+pt.device {
			n.Name = h.names.DeviceName(pt.vendor, pt.device)
		}
	}
	id := h.b.Add(n)
	h.nodeOf[e] = id
	if err := h.linkTo(parent, id, port, e); err != nil {
		return err
	}
	for _, c := range e.objKids() {
		if !up || c.typ != "Bridge" {
			if err := h.addObj(c, id, 0, false); err != nil {
				return err
			}
			continue
		}
		h.nodeOf[c] = id
		ds, err := h.linkSpeed(c)
		if err != nil {
			return err
		}
		for _, g := range c.objKids() {
			if err := h.addObj(g, id, ds, false); err != nil {
				return err
			}
		}
	}
	return nil
}

func (h *hwlocImport) isSwitchUpstream(e *hwlocElem) bool {
	pt, ok := hwlocParsePCIType(e.attr("pci_type"))
	if !ok || pt.zero() {
		return false
	}
	bridges, onlyBridges, sameVendor := 0, true, true
	for _, c := range e.objKids() {
		switch c.typ {
		case "Bridge":
			bridges++
			cp, ok := hwlocParsePCIType(c.attr("pci_type"))
			if ok && cp.vendor == pt.vendor && cp.device == pt.device {
				return true
			}
			if !ok || cp.vendor != pt.vendor {
				sameVendor = false
			}
		case "PCIDev":
			onlyBridges = false
		}
	}
	return bridges >= 2 && onlyBridges && sameVendor
}

// hwlocMaxLinkSpeed is the raw rate of the fastest PCIe link (Gen7 x32,
// 128 GT/s x 32 lanes x 242/256 / 8 bits) in GB/s, as hwloc would write it.
const hwlocMaxLinkSpeed = 484.0

// linkSpeed reads pci_link_speed in GB/s; 0 means unknown (hwloc writes
// 0.000000 when it could not read the link status).
func (h *hwlocImport) linkSpeed(e *hwlocElem) (float64, error) {
	s := strings.TrimSpace(e.attr("pci_link_speed"))
	if s == "" {
		return 0, nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return 0, h.errorf(e, "pci_link_speed", "%q: want a link rate in GB/s such as 15.753846", s)
	}
	if v > hwlocMaxLinkSpeed {
		return 0, h.errorf(e, "pci_link_speed", "%q GB/s: no PCIe link is that fast (Gen7 x32 signals %g GB/s)", s, hwlocMaxLinkSpeed)
	}
	return v, nil
}

// linkTo adds the PCIe link from parent to child. Both ends of a link
// report the same negotiated speed, so the port above wins when it has one,
// then the object's own pci_link_speed, then the parent's uplink.
func (h *hwlocImport) linkTo(parent, child string, port float64, e *hwlocElem) error {
	raw := port
	if raw <= 0 {
		own, err := h.linkSpeed(e)
		if err != nil {
			return err
		}
		raw = own
	}
	up, hasUp := h.uplink[parent]
	l := topology.Link{From: parent, To: child, Kind: topology.LinkPCIe, Source: topology.SourceXML}
	if raw > 0 {
		if gen, lanes, ok := hwlocGenLanes(raw, up.PCIeGen); ok {
			l.PCIeGen, l.Lanes, l.GBps = gen, lanes, topology.PCIeGBps(gen, lanes)
		} else {
			l.GBps = raw * hwlocOffStandardFactor
			h.offStandard++
		}
	}
	switch {
	case l.GBps > 0 && !math.IsInf(l.GBps, 0):
		h.b.Link(l)
	case hasUp && up.Kind == topology.LinkPCIe && up.Source != topology.SourceAssumed:
		l.GBps, l.PCIeGen, l.Lanes, l.Source = up.GBps, up.PCIeGen, up.Lanes, up.Source
		h.inherited++
		h.b.Link(l)
	default:
		h.b.PCIeLink(parent, child, 0, 0, topology.SourceXML)
		links := h.b.Machine().Links
		l = links[len(links)-1]
		h.assumed++
	}
	h.uplink[child] = l
	return nil
}

// addOSDev hangs a disk under its controller. hwloc 3 marks storage with
// bit 0 of osdev_type (and memory-like pmem/dax with bit 1); hwloc 1.x and
// 2.x use type 0 for block devices; all versions put "Disk" in the subtype.
func (h *hwlocImport) addOSDev(e *hwlocElem, parent string) {
	n := h.b.Node(parent)
	if n == nil || !n.Kind.IsDevice() {
		return
	}
	t, err := strconv.ParseUint(e.attr("osdev_type"), 10, 32)
	disk := strings.EqualFold(e.attr("subtype"), "Disk")
	if err == nil && !disk {
		if h.major >= 3 {
			disk = t&1 != 0 && t&2 == 0
		} else {
			disk = t == 0
		}
	}
	if !disk {
		return
	}
	bd := topology.BlockDevice{Name: e.attr("name"), Model: strings.TrimSpace(e.info("Model"))}
	if kib, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(e.info("Size")), "KiB"), 10, 64); err == nil && kib <= math.MaxUint64/1024 {
		bd.SizeBytes = kib * 1024
	}
	n.BlockDevices = append(n.BlockDevices, bd)
}

func (h *hwlocImport) ioNotes() {
	if h.vfs > 0 {
		h.b.Note("%d SR-IOV virtual function(s) are not counted as NICs: each shares its physical function's port and link", h.vfs)
	}
	if h.chipset > 0 {
		h.b.Note("%d chipset function(s) on root buses (host bridge functions, DMA engines, uncore, USB, SMBus, ...) are not shown", h.chipset)
	}
	if h.emptyHosts > 0 {
		h.b.Note("%d host bridge(s) with only chipset functions below are not shown", h.emptyHosts)
	}
	if len(h.unplaced) > 0 {
		h.b.Note("I/O below the Machine object (%s) has no single local socket in the file: placed under %s", strings.Join(h.unplaced, ", "), h.sockets[0])
	}
	if h.offStandard > 0 {
		h.b.Note("%d PCIe link(s) have a pci_link_speed matching no generation x width: capacity is %g x the reported rate", h.offStandard, hwlocOffStandardFactor)
	}
	if h.inherited > 0 {
		h.b.Note("%d PCIe link(s) have no pci_link_speed: they take the link above them", h.inherited)
	}
	if h.assumed > 0 {
		h.b.Note("%d PCIe link(s) have no pci_link_speed (hwloc wrote 0 or nothing): capacity assumed Gen3 x16", h.assumed)
	}
}

// hwlocMatrix is one distance matrix with its objects and values.
type hwlocMatrix struct {
	e    *hwlocElem
	n    int
	idx  []string
	vals []uint64
}

// addMatrices checks every distance matrix and imports NVLink bandwidths.
func (h *hwlocImport) addMatrices() error {
	for _, e := range h.matrix {
		if e.name == "distances" {
			if err := h.checkV1Matrix(e); err != nil {
				return err
			}
			continue
		}
		m, err := h.readMatrix(e)
		if err != nil {
			return err
		}
		switch name := e.attr("name"); {
		case strings.EqualFold(name, "NVLinkBandwidth"):
			if err := h.addNVLinks(m); err != nil {
				return err
			}
		case name != "" && !strings.HasPrefix(name, "NUMA"):
			h.b.Note("distance matrix %q (line %d) is not imported", name, e.line)
		}
	}
	return nil
}

func (h *hwlocImport) nbobjs(e *hwlocElem) (int, error) {
	s, ok := e.attrs["nbobjs"]
	if !ok {
		return 0, h.errorf(e, "nbobjs", "missing: want the number of objects in the matrix")
	}
	n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 32)
	if err != nil || n == 0 || n > hwlocMaxMatrix {
		return 0, h.errorf(e, "nbobjs", "%q: want an object count from 1 to %d", s, hwlocMaxMatrix)
	}
	return int(n), nil
}

// checkV1Matrix checks an hwloc 1.x <distances> element: nbobjs² <latency>
// children. hwloc 1.x had no NVLink matrices, so nothing is imported.
func (h *hwlocImport) checkV1Matrix(e *hwlocElem) error {
	n, err := h.nbobjs(e)
	if err != nil {
		return err
	}
	count := 0
	for _, k := range e.kids {
		if k.name != "latency" {
			continue
		}
		count++
		if _, err := strconv.ParseFloat(k.attr("value"), 64); err != nil {
			return h.errorf(k, "value", "%q: want a number", k.attr("value"))
		}
	}
	if count != n*n {
		return h.errorf(e, "latency", "%d values for nbobjs=%d: want nbobjs² = %d", count, n, n*n)
	}
	return nil
}

func (h *hwlocImport) readMatrix(e *hwlocElem) (*hwlocMatrix, error) {
	n, err := h.nbobjs(e)
	if err != nil {
		return nil, err
	}
	m := &hwlocMatrix{e: e, n: n}
	want := n * n
	for _, k := range e.kids {
		switch k.name {
		case "indexes":
			m.idx = append(m.idx, strings.Fields(string(k.text))...)
			if len(m.idx) > n {
				return nil, h.errorf(k, "", "more than nbobjs=%d objects listed in <%s>", n, e.name)
			}
		case "u64values":
			for _, f := range strings.Fields(string(k.text)) {
				v, err := strconv.ParseUint(f, 10, 64)
				if err != nil {
					return nil, h.errorf(k, "", "%q: want an unsigned integer", f)
				}
				if len(m.vals) == want {
					return nil, h.errorf(k, "", "more than nbobjs² = %d values in <%s>", want, e.name)
				}
				m.vals = append(m.vals, v)
			}
		}
	}
	if len(m.idx) != n {
		return nil, h.errorf(e, "indexes", "%d objects listed: want nbobjs = %d", len(m.idx), n)
	}
	if len(m.vals) != want {
		return nil, h.errorf(e, "u64values", "%d values: want nbobjs² = %d (nbobjs=%d)", len(m.vals), want, n)
	}
	return m, nil
}

// matrixObjects resolves a matrix's indexes to objects. distances2hetero
// lists "Type:gp_index"; distances2 lists indexes of its type attribute,
// by os_index or gp_index as its indexing attribute says (hwloc's default:
// os for PUs and NUMA nodes, gp for the rest).
func (h *hwlocImport) matrixObjects(m *hwlocMatrix) ([]*hwlocElem, error) {
	e := m.e
	typ := e.attr("type")
	if typ == "Socket" {
		typ = "Package"
	}
	byOS := e.attr("indexing") == "os" || (e.attr("indexing") == "" && (typ == "PU" || typ == "NUMANode"))
	out := make([]*hwlocElem, len(m.idx))
	for i, tok := range m.idx {
		var o *hwlocElem
		switch {
		case e.name == "distances2hetero":
			if j := strings.LastIndexByte(tok, ':'); j > 0 {
				t := tok[:j]
				if t == "Socket" {
					t = "Package"
				}
				if c := h.byGP[tok[j+1:]]; c != nil && c.typ == t {
					o = c
				}
			}
		case byOS:
			o = h.byOS[typ+":"+tok]
		default:
			if c := h.byGP[tok]; c != nil && c.typ == typ {
				o = c
			}
		}
		if o == nil {
			return nil, h.errorf(e, "indexes", "%q names no object in the file", tok)
		}
		out[i] = o
	}
	return out, nil
}

// nodeForObj returns the node an object stands as: its own node, the
// switch of a downstream port, the device above an OS device, the socket of
// a package or NUMA node.
func (h *hwlocImport) nodeForObj(o *hwlocElem) string {
	for p := o; p.isObject(); p = p.parent {
		if id, ok := h.nodeOf[p]; ok {
			return id
		}
		if id, ok := h.socketOf[p]; ok {
			return id
		}
	}
	return ""
}

// addNVLinks turns hwloc's NVLinkBandwidth matrix into NVLink links.
// hwloc's NVML backend adds, per active NVLink, 20000 MB/s for NVLink 1
// (P100) and 25000 MB/s for NVLink 2-4, both into [i][j] and [j][i]; so a
// pair's value divided by its per-link rate is the link count. The diagonal
// (0, or 1000000 in newer hwloc) is local bandwidth, not a link.
func (h *hwlocImport) addNVLinks(m *hwlocMatrix) error {
	objs, err := h.matrixObjects(m)
	if err != nil {
		return err
	}
	type pair struct {
		from, to string
		mbps     uint64
	}
	var pairs []pair
	at := map[[2]string]int{}
	unresolved := 0
	for i := 0; i < m.n; i++ {
		for j := i + 1; j < m.n; j++ {
			bw := max(m.vals[i*m.n+j], m.vals[j*m.n+i])
			if bw == 0 {
				continue
			}
			a, b := h.nodeForObj(objs[i]), h.nodeForObj(objs[j])
			if a == "" || b == "" {
				unresolved++
				continue
			}
			if a == b {
				continue
			}
			key := [2]string{min(a, b), max(a, b)}
			if k, ok := at[key]; ok {
				// Two OS devices of one GPU (cuda0, nvml0) repeat a link.
				pairs[k].mbps = max(pairs[k].mbps, bw)
				continue
			}
			at[key] = len(pairs)
			pairs = append(pairs, pair{a, b, bw})
		}
	}
	total := 0
	for _, p := range pairs {
		perLink := uint64(25000)
		sm := 0
		for _, id := range [...]string{p.from, p.to} {
			if n := h.b.Node(id); n.Kind == topology.KindGPU && n.VendorID == "10de" {
				sm = topology.NVLinkSMForDevice(n.DeviceID)
			}
		}
		if sm == 60 || (sm == 0 && p.mbps%25000 != 0 && p.mbps%20000 == 0) {
			perLink = 20000
		}
		count := int(math.Round(float64(p.mbps) / float64(perLink)))
		count = max(count, 1)
		total += count
		// Capacity as NCCL models it (count x per-link rate of the GPU
		// generation), so an hwloc and an NCCL export of one machine agree;
		// hwloc's raw figure stays in the label.
		rate, _ := topology.NVLinkGBps(sm)
		h.b.Link(topology.Link{From: p.from, To: p.to, Kind: topology.LinkNVLink, GBps: float64(count) * rate, Count: count,
			Source: topology.SourceNominal, Label: fmt.Sprintf("hwloc %d MB/s", p.mbps)})
	}
	h.b.Note("NVLinkBandwidth matrix (line %d): %d NVLink link(s) over %d pair(s), counted at 25000 MB/s per link (20000 for P100)",
		m.e.line, total, len(pairs))
	if unresolved > 0 {
		h.b.Note("NVLinkBandwidth matrix: %d pair(s) name objects outside the PCI tree and CPU packages: not imported", unresolved)
	}
	return nil
}
