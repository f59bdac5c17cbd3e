package nvsmi

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

// The `nvidia-smi topo -m` matrix: one row and one column per GPU and NIC,
// each cell the path between the two (nvidia-smi's legend):
//
//	X     the device itself
//	SYS   PCIe plus the interconnect between NUMA nodes (QPI/UPI); SOC in old drivers
//	NODE  PCIe plus the interconnect between host bridges of one NUMA node
//	PHB   PCIe through one host bridge (the CPU)
//	PXB   several PCIe bridges, no host bridge (a tree of switches)
//	PIX   at most one PCIe bridge (one switch)
//	NV#   a bonded set of # NVLinks
//
// then the CPU affinity, the NUMA affinity and (newer drivers) the GPU NUMA
// id of each GPU, and a "NIC Legend" naming the NICs.
//
// What the matrix cannot say is assumed and noted: PCIe generations and
// widths, models, the CPU and its inter-socket rate, whether NUMA nodes
// share a package, and the PCIe path between two GPUs it shows as NV#.

// smiMaxDevices bounds the matrix: more GPUs and NICs than any server holds
// means this is not a capture of one machine.
const smiMaxDevices = 512

// smiMaxNVLinks is the most NVLinks one GPU has (NVLink 4, H100: 18). A GPU
// whose NV# cells add up to more reaches its peers through NVSwitches.
const smiMaxNVLinks = 18

var (
	smiGlued  = regexp.MustCompile(`^(?:X|PIX|PXB|PHB|NODE|SYS|SOC|NV[0-9]+)+$`)
	smiCell   = regexp.MustCompile(`X|PIX|PXB|PHB|NODE|SYS|SOC|NV[0-9]+`)
	smiANSI   = regexp.MustCompile("\x1b\\[[0-9;]*[A-Za-z]")
	smiNV     = regexp.MustCompile(`^NV([0-9]+)$`)
	smiLegend = regexp.MustCompile(`^\s*(NIC[0-9]+)\s*:\s*(\S+)\s*$`)
)

// LooksLike says whether data is an `nvidia-smi topo -m` capture:
// a line whose first column is GPU0 followed by more device columns, after
// any prompt or comment lines.
func LooksLike(data []byte) bool {
	_, _, ok := smiHeader(strings.Split(smiANSI.ReplaceAllString(string(data), ""), "\n"))
	return ok
}

// smiHeader finds the matrix's header line: its index and the device
// columns.
func smiHeader(lines []string) (int, []string, bool) {
	for i, line := range lines {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != "GPU0" {
			continue
		}
		var devs []string
		for _, c := range f {
			if c == "CPU" || c == "NUMA" {
				break
			}
			devs = append(devs, c)
		}
		return i, devs, true
	}
	return 0, nil, false
}

// unglue splits the first n cells of a row where nvidia-smi ran two into
// one ("SYSSYS": with many NIC columns the fixed-width cells can touch),
// leaving the cells after them (the affinities) as they are.
func unglue(fields []string, n int) []string {
	out := make([]string, 0, len(fields)+2)
	for _, c := range fields {
		if len(out) < n {
			if _, ok := parseSMIRel(c); !ok && smiGlued.MatchString(c) {
				out = append(out, smiCell.FindAllString(c, -1)...)
				continue
			}
		}
		out = append(out, c)
	}
	return out
}

// smiRel is a cell of the matrix.
type smiRel struct {
	kind    string // X, PIX, PXB, PHB, NODE, SYS, NV
	nvlinks int
}

func parseSMIRel(s string) (smiRel, bool) {
	switch s {
	case "X", "PIX", "PXB", "PHB", "NODE", "SYS":
		return smiRel{kind: s}, true
	case "SOC": // drivers before 384 wrote SOC for SYS
		return smiRel{kind: "SYS"}, true
	}
	if m := smiNV.FindStringSubmatch(s); m != nil {
		n, err := strconv.Atoi(m[1])
		if err == nil && n >= 1 && n <= 64 {
			return smiRel{kind: "NV", nvlinks: n}, true
		}
	}
	return smiRel{}, false
}

// smiDevice is a row of the matrix.
type smiDevice struct {
	name   string // column header: GPU0, NIC0, mlx5_0
	label  string // the NIC Legend's name, if any
	gpu    bool
	line   int
	rel    []smiRel
	cpus   string // CPU affinity as printed
	numa   int    // -1 when unknown
	numaOK bool
}

// Parse imports an `nvidia-smi topo -m` capture; path names it in errors.
func Parse(ctx context.Context, path string, data []byte) (*topology.Machine, error) {
	devs, err := parseSMIDevices(ctx, path, data)
	if err != nil {
		return nil, err
	}
	return buildSMIMachine(path, devs)
}

// Combine adds what the `nvidia-smi topo -m` capture data (read from path)
// knows and lspci does not to m, a machine imported from lspci captures of
// the same machine: the NVLinks and the NICs' RDMA names.
func Combine(ctx context.Context, path string, data []byte, m *topology.Machine) (*topology.Machine, error) {
	devs, err := parseSMIDevices(ctx, path, data)
	if err != nil {
		return nil, err
	}
	return combineSMI(path, m, devs)
}

// parseSMIDevices reads the matrix's rows.
func parseSMIDevices(ctx context.Context, path string, data []byte) ([]smiDevice, error) {
	lines := strings.Split(smiANSI.ReplaceAllString(string(data), ""), "\n")
	for i := range lines {
		lines[i] = strings.TrimRight(lines[i], "\r")
	}
	hi, cols, ok := smiHeader(lines)
	if !ok {
		return nil, inputerr.Errorf(path, "", "no nvidia-smi topo -m matrix (want a header line starting with GPU0)")
	}
	if len(cols) > smiMaxDevices {
		return nil, &topology.InputError{Path: path, Line: hi + 1, Msg: fmt.Sprintf("%d device columns (at most %d): not one machine's nvidia-smi topo -m", len(cols), smiMaxDevices)}
	}
	index := map[string]int{}
	for i, c := range cols {
		if _, dup := index[c]; dup {
			return nil, &topology.InputError{Path: path, Line: hi + 1, Field: c, Msg: "device column appears twice: is this two captures pasted together?"}
		}
		index[c] = i
	}
	devs := make([]smiDevice, len(cols))
	seen := make([]bool, len(cols))
	li := hi + 1
	for ; li < len(lines); li++ {
		if li%1024 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		f := strings.Fields(lines[li])
		if len(f) == 0 {
			continue
		}
		if f[0] == "Legend:" || f[0] == "NIC" {
			break
		}
		i, isDev := index[f[0]]
		if !isDev {
			if strings.HasPrefix(f[0], "GPU") || strings.HasPrefix(f[0], "NIC") || strings.HasPrefix(f[0], "mlx") {
				return nil, &topology.InputError{Path: path, Line: li + 1, Field: f[0], Msg: fmt.Sprintf("row for a device the header does not list (columns: %s): mixed or damaged capture", strings.Join(cols, " "))}
			}
			break
		}
		if seen[i] {
			return nil, &topology.InputError{Path: path, Line: li + 1, Field: f[0], Msg: "second row for this device: is this two captures pasted together?"}
		}
		seen[i] = true
		f = append(f[:1:1], unglue(f[1:], len(cols))...)
		if len(f) < 1+len(cols) {
			return nil, &topology.InputError{Path: path, Line: li + 1, Field: f[0], Msg: fmt.Sprintf("%d cells, want %d (one per device column): truncated capture", len(f)-1, len(cols))}
		}
		d := smiDevice{name: f[0], gpu: strings.HasPrefix(f[0], "GPU"), line: li + 1, numa: -1, rel: make([]smiRel, len(cols))}
		for j, cell := range f[1 : 1+len(cols)] {
			r, ok := parseSMIRel(cell)
			if !ok {
				return nil, &topology.InputError{Path: path, Line: li + 1, Field: f[0] + "/" + cols[j],
					Msg: fmt.Sprintf("%q is not a path type (want X, PIX, PXB, PHB, NODE, SYS or NV#)", cell)}
			}
			if (r.kind == "X") != (i == j) {
				return nil, &topology.InputError{Path: path, Line: li + 1, Field: f[0] + "/" + cols[j],
					Msg: fmt.Sprintf("%q: X belongs on the diagonal only (the device itself)", cell)}
			}
			d.rel[j] = r
		}
		if err := d.affinity(path, f[1+len(cols):]); err != nil {
			return nil, err
		}
		devs[i] = d
	}
	for i, s := range seen {
		if !s {
			return nil, &topology.InputError{Path: path, Field: cols[i], Msg: fmt.Sprintf("no row for device %s (the header lists %d): truncated capture", cols[i], len(cols))}
		}
	}
	for i := range devs {
		for j := range devs {
			if a, b := devs[i].rel[j], devs[j].rel[i]; a != b {
				return nil, &topology.InputError{Path: path, Line: devs[i].line, Field: cols[i] + "/" + cols[j],
					Msg: fmt.Sprintf("%s one way, %s the other: the matrix must be symmetric (mixed or edited capture)", relString(a), relString(b))}
			}
		}
	}
	// The NIC Legend names the NICs (NIC0: mlx5_0). A second matrix
	// means two captures in one file.
	for ; li < len(lines); li++ {
		if f := strings.Fields(lines[li]); len(f) > 1 && f[0] == "GPU0" && f[1] != "X" {
			return nil, &topology.InputError{Path: path, Line: li + 1, Msg: fmt.Sprintf("a second matrix (the first starts on line %d): give one machine's capture per file", hi+1)}
		}
		if m := smiLegend.FindStringSubmatch(lines[li]); m != nil {
			if i, ok := index[m[1]]; ok {
				devs[i].label = m[2]
			}
		}
	}
	return devs, nil
}

func relString(r smiRel) string {
	if r.kind == "NV" {
		return fmt.Sprintf("NV%d", r.nvlinks)
	}
	return r.kind
}

// affinity reads the cells after the matrix: CPU affinity, NUMA affinity,
// GPU NUMA id. NIC rows leave them empty.
func (d *smiDevice) affinity(path string, rest []string) error {
	if len(rest) == 0 {
		return nil
	}
	d.cpus = rest[0]
	if len(rest) < 2 || rest[1] == "N/A" {
		return nil
	}
	n, err := strconv.Atoi(rest[1])
	if err != nil || n < 0 || n > 1023 {
		if strings.ContainsAny(rest[1], "-,") {
			return nil // a GPU affine to several NUMA nodes: left to its paths
		}
		return &topology.InputError{Path: path, Line: d.line, Field: d.name + " NUMA Affinity", Msg: fmt.Sprintf("%q is not a NUMA node (want 0-1023 or N/A)", rest[1])}
	}
	d.numa, d.numaOK = n, true
	return nil
}

// smiUnion is a union-find over the devices.
type smiUnion []int

func newSMIUnion(n int) smiUnion {
	u := make(smiUnion, n)
	for i := range u {
		u[i] = i
	}
	return u
}

func (u smiUnion) find(i int) int {
	for u[i] != i {
		u[i] = u[u[i]]
		i = u[i]
	}
	return i
}

func (u smiUnion) join(i, j int) {
	a, b := u.find(i), u.find(j)
	if a < b {
		u[b] = a
	} else {
		u[a] = b
	}
}

// groups joins every pair whose relation is in kinds and returns the
// groups, each sorted, in order of their first device.
func smiGroups(devs []smiDevice, members []int, kinds ...string) [][]int {
	u := newSMIUnion(len(devs))
	for _, i := range members {
		for _, j := range members {
			for _, k := range kinds {
				if devs[i].rel[j].kind == k {
					u.join(i, j)
				}
			}
		}
	}
	byRoot := map[int][]int{}
	var roots []int
	for _, i := range members {
		r := u.find(i)
		if _, ok := byRoot[r]; !ok {
			roots = append(roots, r)
		}
		byRoot[r] = append(byRoot[r], i)
	}
	sort.Slice(roots, func(a, b int) bool { return byRoot[roots[a]][0] < byRoot[roots[b]][0] })
	out := make([][]int, len(roots))
	for k, r := range roots {
		out[k] = byRoot[r]
	}
	return out
}

// buildSMIMachine turns the matrix into a machine: NUMA nodes as sockets,
// devices grouped under host bridges (PHB and closer), switch trees (PXB
// and closer) and switches (PIX), and NVLinks as NV# says.
func buildSMIMachine(path string, devs []smiDevice) (*topology.Machine, error) {
	b := topology.NewBuilder(strings.TrimSuffix(filepath.Base(path), ".txt"), "nvidia-smi topo -m:"+path)
	// NUMA: GPUs say theirs; a device without one takes it from a device
	// it reaches without crossing NUMA nodes (PIX, PXB, PHB or NODE).
	for changed := true; changed; {
		changed = false
		for i := range devs {
			if devs[i].numaOK {
				continue
			}
			for j := range devs {
				if k := devs[i].rel[j].kind; devs[j].numaOK && (k == "PIX" || k == "PXB" || k == "PHB" || k == "NODE") {
					devs[i].numa, devs[i].numaOK, changed = devs[j].numa, true, true
					break
				}
			}
		}
	}
	numas := map[int][]int{}
	var numaIDs []int
	unknown := 0
	for i, d := range devs {
		n := d.numa
		if !d.numaOK {
			n, unknown = -1, unknown+1
		}
		if _, ok := numas[n]; !ok {
			numaIDs = append(numaIDs, n)
		}
		numas[n] = append(numas[n], i)
	}
	// Devices of unknown NUMA go on the first socket.
	sort.Ints(numaIDs)
	if len(numaIDs) > 1 && numaIDs[0] == -1 {
		first := numaIDs[1]
		numas[first] = append(numas[-1], numas[first]...)
		sort.Ints(numas[first])
		delete(numas, -1)
		numaIDs = numaIDs[1:]
	}
	ids := make([]string, len(devs))
	switches := 0
	for _, numa := range numaIDs {
		sock := topology.Node{Kind: topology.KindSocket}
		if numa >= 0 {
			n := numa
			sock.NUMANode = &n
		}
		sockID := b.Add(sock)
		for _, hb := range smiGroups(devs, numas[numa], "PIX", "PXB", "PHB") {
			rp := b.Add(topology.Node{Kind: topology.KindRootPort, Parent: sockID, Name: "host bridge (from the PHB/PXB/PIX paths)", NUMANode: sock.NUMANode})
			for _, tree := range smiGroups(devs, hb, "PIX", "PXB") {
				parent := rp
				if len(tree) > 1 {
					parent = b.Add(topology.Node{Kind: topology.KindSwitch, Parent: rp, Name: "PCIe switch (from the PXB/PIX paths)"})
					switches++
				}
				leaves := smiGroups(devs, tree, "PIX")
				for _, leaf := range leaves {
					at := parent
					if len(leaf) > 1 && len(leaves) > 1 {
						at = b.Add(topology.Node{Kind: topology.KindSwitch, Parent: parent, Name: "PCIe switch (from the PIX paths)"})
						switches++
					}
					for _, i := range leaf {
						ids[i] = b.Add(smiNode(devs[i], at))
					}
				}
			}
		}
	}
	nvswitch := addSMINVLinks(b.Add, b.Link, devs, ids)
	gpus, nics := 0, 0
	for _, d := range devs {
		if d.gpu {
			gpus++
		} else {
			nics++
		}
	}
	b.Note("imported from an nvidia-smi topo -m matrix: %d GPUs, %d NICs, %d NUMA nodes, each modelled as a socket (assumed: the matrix does not say which NUMA nodes share a package)", gpus, nics, len(numaIDs))
	b.Note("PCIe generations and widths are not in the matrix: every PCIe link is assumed Gen3 x16 (%g GB/s); GPU and NIC models are unknown", topology.PCIeGBps(3, 16))
	if switches > 0 {
		b.Note("%d PCIe switches inferred from the PIX/PXB paths", switches)
	}
	if nvswitch {
		b.Note("every GPU reaches its peers over more NVLinks than one GPU has: modelled as one NVSwitch fabric, each GPU joined to it by its largest NV# count")
	}
	if hidden := smiHiddenPCIe(devs); hidden > 0 {
		b.Note("%d GPU pairs are shown as NV# only, which hides their PCIe path; they are placed by their other paths", hidden)
	}
	if unknown > 0 {
		b.Note("%d devices have no NUMA affinity in the matrix; they are put on the first NUMA node", unknown)
	}
	arch, _ := topology.InterSocketLink("", 0, 0)
	if len(numaIDs) > 1 {
		b.Note("the CPU is not in the matrix: inter-socket links assume %g GB/s per direction (Skylake-class UPI)", arch.GBps)
	}
	m, err := b.Finish(arch)
	if err != nil {
		return nil, &topology.InputError{Path: path, Msg: "the matrix does not describe a machine", Err: err}
	}
	for i := range m.Links {
		if m.Links[i].Kind == topology.LinkPCIe {
			m.Links[i].Source = topology.SourceAssumed
		}
	}
	return m, nil
}

// smiNode is a device's node; GPUn and NICn keep their numbers as ids
// (gpu3, nic3), so the ids match what nvidia-smi and NCCL call them.
func smiNode(d smiDevice, parent string) topology.Node {
	id := ""
	if n, err := strconv.Atoi(strings.TrimPrefix(strings.TrimPrefix(d.name, "GPU"), "NIC")); err == nil && n >= 0 && len(d.name) > 3 {
		id = strings.ToLower(d.name[:3]) + strconv.Itoa(n)
	}
	if d.gpu {
		return topology.Node{ID: id, Kind: topology.KindGPU, Parent: parent, Name: d.name, Label: d.name}
	}
	name := d.name
	if d.label != "" {
		name = d.label
	}
	return topology.Node{ID: id, Kind: topology.KindNIC, Parent: parent, Name: name, Label: d.name}
}

// addSMINVLinks adds the NV# cells as links, through add (a node) and
// link, and reports whether they went through an NVSwitch fabric.
func addSMINVLinks(add func(topology.Node) string, link func(topology.Link), devs []smiDevice, ids []string) bool {
	rate, _ := topology.NVLinkGBps(0)
	through := false
	for i, d := range devs {
		total := 0
		for j, r := range d.rel {
			if r.kind == "NV" && j != i {
				total += r.nvlinks
			}
		}
		if total > smiMaxNVLinks {
			through = true
		}
	}
	if through {
		sw := add(topology.Node{Kind: topology.KindNVSwitch, Name: "NVSwitch fabric (from the NV# paths)"})
		for i, d := range devs {
			most := 0
			for _, r := range d.rel {
				if r.kind == "NV" {
					most = max(most, r.nvlinks)
				}
			}
			if most > 0 {
				link(topology.Link{From: ids[i], To: sw, Kind: topology.LinkNVLink, Count: most, GBps: float64(most) * rate, Source: topology.SourceAssumed})
			}
		}
		return true
	}
	for i := range devs {
		for j := i + 1; j < len(devs); j++ {
			if r := devs[i].rel[j]; r.kind == "NV" {
				link(topology.Link{From: ids[i], To: ids[j], Kind: topology.LinkNVLink, Count: r.nvlinks, GBps: float64(r.nvlinks) * rate, Source: topology.SourceAssumed})
			}
		}
	}
	return false
}

// smiHiddenPCIe counts the GPU pairs whose PCIe path the matrix hides
// behind NV#.
func smiHiddenPCIe(devs []smiDevice) int {
	n := 0
	for i := range devs {
		for j := i + 1; j < len(devs); j++ {
			if devs[i].rel[j].kind == "NV" {
				n++
			}
		}
	}
	return n
}

// combineSMI adds what an nvidia-smi matrix knows and lspci does not to a
// machine imported from lspci: the NVLinks and the NICs' RDMA names.
// nvidia-smi numbers GPUs in PCI bus order, and the RDMA NICs (mlx5_N) it
// lists follow bus order too, so the k-th GPU of the matrix is the k-th
// GPU by PCI address. Paths the two captures disagree on are noted.
func combineSMI(path string, m *topology.Machine, devs []smiDevice) (*topology.Machine, error) {
	byAddr := func(keep func(n *topology.Node) bool) []string {
		var ids []string
		for i := range m.Nodes {
			if keep(&m.Nodes[i]) {
				ids = append(ids, m.Nodes[i].ID)
			}
		}
		sort.Slice(ids, func(a, b int) bool { return m.Node(ids[a]).PCIAddress < m.Node(ids[b]).PCIAddress })
		return ids
	}
	gpus := byAddr(func(n *topology.Node) bool { return n.Kind == topology.KindGPU })
	nics := byAddr(func(n *topology.Node) bool {
		name := strings.ToLower(n.Name)
		return n.Kind == topology.KindNIC && (n.VendorID == "15b3" || strings.Contains(name, "mellanox") || strings.Contains(name, "connectx") || strings.Contains(name, "bluefield"))
	})
	var smiGPUs, smiNICs int
	for _, d := range devs {
		if d.gpu {
			smiGPUs++
		} else {
			smiNICs++
		}
	}
	if smiGPUs != len(gpus) || smiNICs > len(nics) {
		return nil, &topology.InputError{Path: path, Field: "--from", Msg: fmt.Sprintf("the nvidia-smi matrix lists %d GPUs and %d NICs, the lspci capture has %d GPUs and %d RDMA NIC functions: captures of two machines?",
			smiGPUs, smiNICs, len(gpus), len(nics))}
	}
	ids := make([]string, len(devs))
	g, k := 0, 0
	for i, d := range devs {
		if d.gpu {
			ids[i], g = gpus[g], g+1
			continue
		}
		ids[i], k = nics[k], k+1
		if d.label != "" {
			n := m.Node(ids[i])
			n.Name = d.label + " (" + n.Name + ")"
		}
	}
	used := map[string]bool{}
	for _, n := range m.Nodes {
		used[n.ID] = true
	}
	add := func(n topology.Node) string {
		id := "nvsw0"
		for i := 1; used[id]; i++ {
			id = fmt.Sprintf("nvsw%d", i)
		}
		used[id], n.ID = true, id
		m.Nodes = append(m.Nodes, n)
		return id
	}
	nvlinks := 0
	addSMINVLinks(add, func(l topology.Link) { m.Links = append(m.Links, l); nvlinks++ }, devs, ids)
	var disagree []string
	for i := range devs {
		for j := i + 1; j < len(devs); j++ {
			want := devs[i].rel[j].kind
			if want == "NV" {
				continue
			}
			if got := pathBetween(m, ids[i], ids[j]); got != want {
				disagree = append(disagree, fmt.Sprintf("%s-%s %s in the matrix, %s in lspci", devs[i].name, devs[j].name, want, got))
			}
		}
	}
	m.Notes = append(m.Notes, fmt.Sprintf("combined with the nvidia-smi matrix %s: GPUs and RDMA NICs matched in PCI bus order, %d NVLink links added (counts from NV#, %g GB/s per link assumed)", path, nvlinks, func() float64 { r, _ := topology.NVLinkGBps(0); return r }()))
	if len(disagree) > 0 {
		if len(disagree) > 4 {
			disagree = append(disagree[:4], fmt.Sprintf("and %d more", len(disagree)-4))
		}
		m.Notes = append(m.Notes, "the captures disagree on some paths ("+strings.Join(disagree, "; ")+"): check they are of one machine")
	}
	if err := m.Validate(); err != nil {
		return nil, &topology.InputError{Path: path, Msg: "the combined captures do not describe a machine", Err: err}
	}
	return m, nil
}

// pathBetween classifies the PCIe path between two devices of m as
// nvidia-smi does: PIX (one switch, or functions of one device), PXB (a
// tree of switches), PHB (one host bridge), NODE (one socket), SYS.
func pathBetween(m *topology.Machine, a, b string) string {
	chain := func(id string) []*topology.Node {
		var out []*topology.Node
		for n := m.Node(id); n != nil; n = m.Node(n.Parent) {
			out = append(out, n)
		}
		return out
	}
	ca, cb := chain(a), chain(b)
	onB := map[string]int{}
	for i, n := range cb {
		onB[n.ID] = i
	}
	for i, n := range ca {
		j, ok := onB[n.ID]
		if !ok {
			continue
		}
		switch n.Kind {
		case topology.KindSocket:
			return "NODE"
		case topology.KindRootPort:
			return "PHB"
		case topology.KindSwitch, topology.KindBridge:
			if i <= 1 && j <= 1 {
				return "PIX"
			}
			return "PXB"
		default: // one is a function below the other's device
			return "PIX"
		}
	}
	return "SYS"
}
