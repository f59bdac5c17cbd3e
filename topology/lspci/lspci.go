package lspci

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/gnnplan/gnnplan/internal/inputerr"
	"github.com/gnnplan/gnnplan/topology"
)

// Importing what lspci prints. `lspci -vvv` gives every function's class,
// name, NUMA node, LnkCap (the link's maximum) and LnkSta (what it runs at
// now), and each bridge's secondary bus, which is enough to rebuild the
// tree. `lspci -tv` gives the tree and names only. Given both (two --from
// files, or one file holding both), the tree comes from -tv and the details
// from -vvv for the functions it describes. The tree then goes through the
// same construction as sysfs discovery: host bridges per root bus, switches
// where an upstream port has only bridges below it, links at LnkCap with
// the current speed kept where LnkSta is lower.

var (
	// "c1:00.0 VGA compatible controller: NVIDIA ..." or with a domain,
	// and with -nn "[0300]" after the class.
	lspciHeadRE = regexp.MustCompile(`^((?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]) (.+?)(?: \[([0-9a-fA-F]{4})\])?: (.*)$`)
	lspciIDsRE  = regexp.MustCompile(`\[([0-9a-fA-F]{4}):([0-9a-fA-F]{4})\]`)
	lspciLinkRE = regexp.MustCompile(`Speed ([0-9.]+)GT/s[^,]*, Width x([0-9]+)`)
	lspciBusRE  = regexp.MustCompile(`secondary=([0-9a-fA-F]{2})`)
	lspciRevRE  = regexp.MustCompile(` \((?:rev [0-9a-fA-F]+|prog-if [^)]*\)?)\)`)
	// -tv: a root bus "[0000:00]", a function "03.1" after a connector,
	// a bridge's bus range "[01-13]" or "[05]".
	lspciRootRE = regexp.MustCompile(`\[([0-9a-fA-F]{4}):([0-9a-fA-F]{2})\]`)
	lspciTokRE  = regexp.MustCompile(`([+\\-])-([0-9a-fA-F]{2}\.[0-7])(?:-\[([0-9a-fA-F]{2})(?:-[0-9a-fA-F]{2})?\])?`)
)

// lspciClasses maps the class names lspci prints to class codes.
var lspciClasses = map[string]uint32{
	"Host bridge": 0x060000, "PCI bridge": 0x060400, "ISA bridge": 0x060100, "Bridge": 0x068000,
	"VGA compatible controller": 0x030000, "3D controller": 0x030200, "Display controller": 0x038000,
	"Non-Volatile memory controller": 0x010802, "SATA controller": 0x010601, "RAID bus controller": 0x010400,
	"Serial Attached SCSI controller": 0x010700, "Mass storage controller": 0x018000, "SCSI storage controller": 0x010000,
	"Ethernet controller": 0x020000, "Network controller": 0x028000, "Infiniband controller": 0x020700,
	"Processing accelerators": 0x120000, "Co-processor": 0x0b4000,
	"USB controller": 0x0c0330, "SMBus": 0x0c0500, "Audio device": 0x040300, "Multimedia audio controller": 0x040100,
	"System peripheral": 0x088000, "IOMMU": 0x080600, "Encryption controller": 0x108000, "Signal processing controller": 0x118000,
	"Non-Essential Instrumentation [1300]": 0x130000, "Non-Essential Instrumentation": 0x130000, "Memory controller": 0x058000,
}

// lspciVendors maps vendor names lspci prints to ids, for captures without
// -nn (the kinds of GPUs and of BMC graphics depend on the vendor).
var lspciVendors = []struct{ prefix, id string }{
	{"NVIDIA Corporation", "10de"}, {"Advanced Micro Devices, Inc. [AMD/ATI]", "1002"},
	{"Advanced Micro Devices, Inc. [AMD]", "1022"}, {"Intel Corporation", "8086"},
	{"Mellanox Technologies", "15b3"}, {"ASPEED Technology", "1a03"}, {"Matrox Electronics", "102b"},
	{"Samsung Electronics", "144d"}, {"Broadcom / LSI", "1000"}, {"PLX Technology", "10b5"},
	{"Kingston Technology", "2646"}, {"Micron Technology", "1344"}, {"Habana Labs", "1da3"},
}

// lspciFunc is what the captures say about one PCI function.
type lspciFunc struct {
	addr         string // 0000:c1:00.0
	class        uint32
	classOK      bool
	name         string // vendor and device as printed
	vendor, dev  string
	numa         int
	gen, lanes   int // LnkSta
	maxGen       int // LnkCap
	maxLanes     int
	secondary    int // -1 unless a bridge
	driver       string
	denied       bool // "Capabilities: <access denied>": lspci ran without root
	fromTree     bool
	detailed     bool
	line         int
	capturedFrom string
}

// LooksLike says whether data is lspci -vvv or -tv output.
func LooksLike(data []byte) bool {
	for _, line := range strings.SplitN(string(data), "\n", 64) {
		line = strings.TrimRight(line, "\r")
		if lspciHeadRE.MatchString(line) || lspciRootRE.MatchString(line) && strings.Contains(line, "]-") {
			return true
		}
	}
	return false
}

// lspciCapture parses one file into f (keyed by address): the -vvv blocks
// and the -tv tree, whichever it holds.
func lspciCapture(ctx context.Context, path string, data []byte, f map[string]*lspciFunc) error {
	lines := strings.Split(string(data), "\n")
	var cur *lspciFunc
	inTree := false
	col := map[int]int{} // -tv: the bus whose children branch at this column
	domain := "0000"
	found := 0
	for i, line := range lines {
		if i%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		line = strings.TrimRight(line, "\r")
		if m := lspciHeadRE.FindStringSubmatch(line); m != nil {
			inTree = false
			addr := strings.ToLower(m[1])
			if len(addr) == 7 {
				addr = "0000:" + addr
			}
			cur = getLspci(f, addr)
			cur.detailed, cur.line, cur.capturedFrom = true, i+1, path
			if m[3] != "" {
				c, _ := strconv.ParseUint(m[3], 16, 16)
				cur.class, cur.classOK = uint32(c)<<8, true
			} else if c, ok := lspciClasses[m[2]]; ok {
				cur.class, cur.classOK = c, true
			}
			cur.name = strings.TrimSpace(lspciRevRE.ReplaceAllString(m[4], ""))
			if ids := lspciIDsRE.FindAllStringSubmatch(m[4], -1); len(ids) > 0 {
				last := ids[len(ids)-1]
				cur.vendor, cur.dev = strings.ToLower(last[1]), strings.ToLower(last[2])
				cur.name = strings.TrimSpace(strings.Replace(cur.name, last[0], "", 1))
			}
			found++
			continue
		}
		if rm := lspciRootRE.FindStringSubmatchIndex(line); rm != nil && strings.Contains(line[rm[1]:], "-") {
			inTree, cur = true, nil
			domain = strings.ToLower(line[rm[2]:rm[3]])
			bus, _ := strconv.ParseUint(line[rm[4]:rm[5]], 16, 8)
			// The root bus's functions branch at the first connector after it.
			rest := line[rm[1]:]
			if k := strings.IndexAny(rest, "+\\"); k >= 0 {
				col[rm[1]+k] = int(bus)
			}
			if err := lspciTreeLine(path, i+1, line, rm[1], domain, int(bus), col, f); err != nil {
				return err
			}
			found++
			continue
		}
		if inTree {
			if strings.TrimSpace(line) == "" || strings.HasPrefix(strings.TrimSpace(line), "```") {
				inTree = false
				continue
			}
			if err := lspciTreeLine(path, i+1, line, 0, domain, -1, col, f); err != nil {
				return err
			}
			continue
		}
		if cur == nil {
			continue
		}
		t := strings.TrimSpace(line)
		switch {
		case t == "":
			cur = nil
		case strings.HasPrefix(t, "NUMA node:"):
			if v, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(t, "NUMA node:"))); err == nil && v >= 0 && v < 1024 {
				cur.numa = v
			}
		case strings.HasPrefix(t, "LnkCap:"), strings.HasPrefix(t, "LnkSta:"):
			m := lspciLinkRE.FindStringSubmatch(t)
			if m == nil {
				continue
			}
			gen, err := topology.ParseLinkSpeed(m[1] + " GT/s")
			lanes, err2 := topology.ParseLinkWidth(m[2])
			if err != nil || err2 != nil || lanes > 32 {
				return &topology.InputError{Path: path, Line: i + 1, Field: cur.addr + " " + t[:7], Msg: fmt.Sprintf("%q is not a possible PCIe link (want 2.5-64 GT/s, x1-x32)", m[0])}
			}
			if strings.HasPrefix(t, "LnkCap:") {
				cur.maxGen, cur.maxLanes = gen, lanes
			} else {
				cur.gen, cur.lanes = gen, lanes
			}
		case strings.HasPrefix(t, "Bus: "):
			if m := lspciBusRE.FindStringSubmatch(t); m != nil {
				v, _ := strconv.ParseUint(m[1], 16, 8)
				cur.secondary = int(v)
			}
		case strings.HasPrefix(t, "Capabilities:") && strings.Contains(t, "access denied"):
			cur.denied = true
		case strings.HasPrefix(t, "Kernel driver in use:"):
			cur.driver = strings.TrimSpace(strings.TrimPrefix(t, "Kernel driver in use:"))
		}
	}
	if found == 0 {
		return inputerr.Errorf(path, "", "no lspci -vvv device or lspci -tv tree in the file")
	}
	return nil
}

func getLspci(f map[string]*lspciFunc, addr string) *lspciFunc {
	x, ok := f[addr]
	if !ok {
		x = &lspciFunc{addr: addr, numa: -1, secondary: -1}
		f[addr] = x
	}
	return x
}

// lspciTreeLine reads the functions on one line of lspci -tv from column
// from on. col maps the column of each branch connector to the bus whose
// functions hang there; bus is the bus of a function not preceded by a
// connector of its own (-1: none).
func lspciTreeLine(path string, lineNo int, line string, from int, domain string, bus int, col map[int]int, f map[string]*lspciFunc) error {
	lastBus := bus
	for _, m := range lspciTokRE.FindAllStringSubmatchIndex(line[from:], -1) {
		conn := from + m[2]
		tok := line[from+m[4] : from+m[5]]
		b := lastBus
		if line[conn] == '+' || line[conn] == '\\' {
			v, ok := col[conn]
			if !ok {
				return &topology.InputError{Path: path, Line: lineNo, Field: "lspci -tv", Msg: fmt.Sprintf("branch at column %d has no bus above it: a damaged or re-wrapped tree", conn+1)}
			}
			b = v
		}
		if b < 0 {
			return &topology.InputError{Path: path, Line: lineNo, Field: "lspci -tv", Msg: fmt.Sprintf("function %s has no bus: a damaged tree", tok)}
		}
		addr := fmt.Sprintf("%s:%02x:%s", domain, b, strings.ToLower(tok))
		x := getLspci(f, addr)
		x.fromTree = true
		end := from + m[1]
		if m[6] >= 0 { // a bridge: its secondary bus follows
			sec, _ := strconv.ParseUint(line[from+m[6]:from+m[7]], 16, 8)
			x.secondary = int(sec)
			if !x.classOK {
				x.class, x.classOK = 0x060400, true
			}
			lastBus = int(sec)
			rest := line[end:]
			if k := strings.IndexAny(rest, "+\\"); k >= 0 && strings.Trim(rest[:k], "-") == "" {
				col[end+k] = int(sec)
			}
		} else if name := strings.TrimSpace(line[end:]); name != "" && x.name == "" {
			// lspci -tvnn ends the name with [vendor:device].
			if ids := lspciIDsRE.FindAllStringSubmatchIndex(name, -1); len(ids) > 0 {
				last := ids[len(ids)-1]
				if strings.TrimSpace(name[last[1]:]) == "" && x.vendor == "" {
					x.vendor, x.dev = strings.ToLower(name[last[2]:last[3]]), strings.ToLower(name[last[4]:last[5]])
					name = strings.TrimSpace(name[:last[0]])
				}
			}
			x.name = name
		}
	}
	return nil
}

// Parse imports one or more lspci captures (-vvv, -tv, or both) of one
// machine: data[i] read from paths[i].
func Parse(ctx context.Context, paths []string, data [][]byte) (*topology.Machine, error) {
	funcs := map[string]*lspciFunc{}
	for i := range paths {
		if err := lspciCapture(ctx, paths[i], data[i], funcs); err != nil {
			return nil, err
		}
	}
	return buildLspciMachine(paths, funcs)
}

// buildLspciMachine resolves parents and builds the machine through the
// discovery code.
func buildLspciMachine(paths []string, funcs map[string]*lspciFunc) (*topology.Machine, error) {
	path := strings.Join(paths, "+")
	tree := false
	for _, x := range funcs {
		tree = tree || x.fromTree
	}
	// Each function's parent is the bridge whose secondary bus is its bus
	// (same domain); a function on no bridge's bus sits on a root bus.
	bridgeOf := map[string]string{}
	for _, x := range funcs {
		if x.secondary >= 0 {
			key := fmt.Sprintf("%s:%02x", x.addr[:4], x.secondary)
			if other, dup := bridgeOf[key]; dup {
				return nil, &topology.InputError{Path: path, Field: x.addr, Msg: fmt.Sprintf("bridges %s and %s both lead to bus %s: captures of two machines?", other, x.addr, key)}
			}
			bridgeOf[key] = x.addr
		}
	}
	var order []string
	for a := range funcs {
		order = append(order, a)
	}
	sort.Strings(order)
	name := strings.TrimSuffix(filepath.Base(paths[0]), ".txt")
	b := topology.NewBuilder(name, "lspci:"+path)
	var pfs []topology.PCIFunction
	untyped, notDetailed, denied := 0, 0, 0
	for _, a := range order {
		x := funcs[a]
		if tree && !x.fromTree {
			return nil, &topology.InputError{Path: x.capturedFrom, Line: x.line, Field: a, Msg: "lspci -vvv describes a function the lspci -tv tree does not have: captures of two machines?"}
		}
		parent := bridgeOf[a[:7]]
		if parent == a {
			parent = ""
		}
		if !x.classOK {
			x.class, x.classOK = classFromName(x.name, x.vendor), true
			untyped++
		}
		if x.name == "" && x.secondary >= 0 {
			x.name = "PCI bridge"
		}
		if !x.detailed {
			notDetailed++
		}
		if x.denied && x.maxGen == 0 {
			denied++
		}
		vendor := x.vendor
		if vendor == "" {
			for _, v := range lspciVendors {
				if strings.HasPrefix(x.name, v.prefix) {
					vendor = v.id
					break
				}
			}
		}
		pfs = append(pfs, topology.PCIFunction{Address: a, Parent: parent, Vendor: vendor, Device: x.dev, Class: x.class, Name: x.name,
			Driver: x.driver, NUMANode: x.numa, Gen: x.gen, Lanes: x.lanes, MaxGen: x.maxGen, MaxLanes: x.maxLanes, SecondaryBus: x.secondary})
	}
	// Sockets: one per NUMA node the captures name, else one.
	numas := map[int]bool{}
	for _, pf := range pfs {
		if pf.NUMANode >= 0 {
			numas[pf.NUMANode] = true
		}
	}
	var ids []int
	for n := range numas {
		ids = append(ids, n)
	}
	sort.Ints(ids)
	if len(ids) == 0 {
		ids = []int{-1}
	}
	numaSocket := map[int]string{}
	for _, n := range ids {
		s := topology.Node{Kind: topology.KindSocket}
		if n >= 0 {
			v := n
			s.NUMANode = &v
		}
		numaSocket[n] = b.Add(s)
	}
	if len(ids) > 1 {
		b.Note("%d NUMA nodes in the lspci capture, each modelled as a socket (assumed: lspci does not say which share a package)", len(ids))
	}
	belowMax, err := topology.AddPCIFunctions(b, numaSocket, pfs)
	if err != nil {
		return nil, err
	}
	if untyped > 0 {
		b.Note("%d PCI functions have no class in the captures (lspci -tv prints none): classified by their names; add lspci -vvv (or -nn) for exact classes", untyped)
	}
	if notDetailed > 0 && tree {
		b.Note("%d PCI functions of the tree have no lspci -vvv details: their links are assumed Gen3 x16", notDetailed)
	}
	if denied > 0 {
		b.Note("%d PCI functions show \"Capabilities: <access denied>\": lspci ran without root, so their LnkCap and LnkSta are hidden and their links are assumed; run sudo lspci -vvv for the real widths and speeds", denied)
	}
	if belowMax > 0 {
		b.Note("%d PCIe link(s) run below their LnkCap now (LnkSta lower): capacities use LnkCap, the current speed and width are kept on the link", belowMax)
	}
	// No CPU model in lspci: the platform's code name in its own devices'
	// names ("[AMD] Genoa CCP/PSP") gives the inter-socket link.
	arch, _ := topology.InterSocketLink("", 0, 0)
	for _, pf := range pfs {
		if pa, ok := topology.InterSocketLinkByName(pf.Name); ok {
			arch = pa
			b.Note("CPU platform from the devices' names (%q): inter-socket links at %s's rate", pf.Name, pa.Name)
			break
		}
	}
	m, err := b.Finish(arch)
	if err != nil {
		return nil, &topology.InputError{Path: path, Msg: "the captures do not describe a machine", Err: err}
	}
	return m, nil
}

// classFromName guesses a class code from a device name, and the vendor
// id when the capture gives one (lspci -tvnn), when it has no class
// (lspci -tv).
func classFromName(name, vendor string) uint32 {
	n := strings.ToLower(name)
	nvidia := strings.HasPrefix(n, "nvidia") || vendor == "10de"
	switch {
	case strings.Contains(n, "nvme") || strings.Contains(n, "non-volatile"):
		return 0x010802
	case strings.Contains(n, "connectx") || strings.Contains(n, "infiniband") || strings.Contains(n, "bluefield"):
		return 0x020700
	case strings.Contains(n, "ethernet") || strings.Contains(n, "network"):
		return 0x020000
	case nvidia && !strings.Contains(n, "audio") && !strings.Contains(n, "usb") && !strings.Contains(n, "nvswitch"):
		return 0x030200
	case strings.Contains(n, "aspeed") || strings.Contains(n, "matrox") || strings.Contains(n, "vga") || vendor == "1a03" || vendor == "102b":
		return 0x030000
	}
	return 0xff0000
}
