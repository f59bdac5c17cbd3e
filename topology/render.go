package topology

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Describe returns a short description of a node for people: its kind and
// the facts that matter for planning (model, width, memory, NUMA node).
func (m *Machine) Describe(n *Node) string {
	var parts []string
	add := func(s string) {
		if s != "" {
			parts = append(parts, s)
		}
	}
	switch n.Kind {
	case KindSocket:
		add(n.CPUModel)
		if n.NUMANode != nil {
			add(fmt.Sprintf("NUMA %d", *n.NUMANode))
		}
		if n.Cores > 0 {
			add(fmt.Sprintf("%d cores", n.Cores))
		}
		if n.Threads > 0 {
			add(fmt.Sprintf("%d threads", n.Threads))
		}
		if n.MemoryGiB > 0 {
			add(fmt.Sprintf("%s GiB memory", fmtNum2(n.MemoryGiB)))
		}
	case KindSlot:
		add(n.Label)
		if n.Lanes > 0 {
			w := fmt.Sprintf("x%d", n.Lanes)
			if n.PCIeGen > 0 {
				w += fmt.Sprintf(" Gen%d", n.PCIeGen)
			}
			add(w)
		}
		if n.DoubleWidth {
			add("double-width")
		}
		if n.Occupied {
			add("occupied")
		} else {
			add("empty")
		}
	default:
		add(n.Name)
		if n.Name == "" {
			add(n.Model)
		}
		if n.MemoryGiB > 0 {
			add(fmt.Sprintf("%s GiB", fmtNum2(n.MemoryGiB)))
		}
		if n.ReadGBps > 0 {
			add(fmt.Sprintf("read %s GB/s", fmtNum(n.ReadGBps)))
		}
		for _, b := range n.BlockDevices {
			add(fmt.Sprintf("/dev/%s %s GB", b.Name, fmtNum2(float64(b.SizeBytes)/1e9)))
		}
		if n.PCIAddress != "" {
			add(n.PCIAddress)
		}
		if n.NUMANode != nil && n.Kind != KindRootPort {
			add(fmt.Sprintf("NUMA %d", *n.NUMANode))
		}
	}
	return strings.Join(parts, ", ")
}

// DescribeLink returns "x16 Gen4 24 GB/s" style text for a link.
func DescribeLink(l *Link) string {
	var parts []string
	switch l.Kind {
	case LinkPCIe:
		if l.Lanes > 0 {
			w := fmt.Sprintf("x%d", l.Lanes)
			if l.PCIeGen > 0 {
				w += fmt.Sprintf(" Gen%d", l.PCIeGen)
			}
			parts = append(parts, w)
		} else {
			parts = append(parts, "PCIe")
		}
	case LinkOnDie:
		parts = append(parts, "on-die")
	case LinkInterSocket:
		parts = append(parts, "inter-socket")
	case LinkNVLink, LinkXGMI:
		s := "NVLink"
		if l.Kind == LinkXGMI {
			s = "xGMI"
		}
		if l.Count > 0 {
			s += fmt.Sprintf(" x%d", l.Count)
		}
		parts = append(parts, s)
	}
	parts = append(parts, fmtNum(l.GBps)+" GB/s")
	if l.Label != "" {
		parts = append(parts, l.Label)
	}
	if l.Source == SourceAssumed {
		parts = append(parts, "(assumed)")
	}
	return strings.Join(parts, " ")
}

// fmtNum prints a number with at most two decimals and no trailing zeros.
// fmtNum prints a rate to at most three decimals, without trailing zeros:
// sums of link shares carry float noise (0.1 + 0.2 is 0.30000000000000004)
// that a view should not show.
func fmtNum(v float64) string {
	return strconv.FormatFloat(math.Round(v*1000)/1000, 'f', -1, 64)
}

func fmtNum2(v float64) string {
	s := strconv.FormatFloat(v, 'f', 2, 64)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s
}

// WriteTree prints the machine as an indented tree: sockets, then each
// node's children with the capacity of the link to its parent, then the
// links that are not tree edges (inter-socket, NVLink, xGMI).
func WriteTree(w io.Writer, m *Machine) error {
	ew := &errWriter{w: w}
	ew.printf("%s  (%s)\n", m.Name, m.Source)
	roots := m.Roots()
	for i, id := range roots {
		writeSubtree(ew, m, id, "", i == len(roots)-1)
	}
	var cross []*Link
	for i := range m.Links {
		l := &m.Links[i]
		if to := m.Node(l.To); to != nil && to.Parent == l.From {
			continue
		}
		cross = append(cross, l)
	}
	if len(cross) > 0 {
		ew.printf("links outside the tree:\n")
		for _, l := range cross {
			ew.printf("  %s <-> %s  %s\n", l.From, l.To, DescribeLink(l))
		}
	}
	for _, n := range m.Notes {
		ew.printf("note: %s\n", n)
	}
	return ew.err
}

func writeSubtree(ew *errWriter, m *Machine, id, prefix string, last bool) {
	n := m.Node(id)
	branch, next := "├─ ", "│  "
	if last {
		branch, next = "└─ ", "   "
	}
	line := prefix + branch + n.ID + " [" + string(n.Kind) + "]"
	if d := m.Describe(n); d != "" {
		line += " " + d
	}
	if up := m.UplinkOf(id); up != nil {
		line += "  <= " + DescribeLink(up)
	}
	ew.printf("%s\n", line)
	kids := m.Children(id)
	for i, k := range kids {
		writeSubtree(ew, m, k, prefix+next, i == len(kids)-1)
	}
}

// TableView is the machine as rows for a table; the command line lays
// them out to the terminal's width.
type TableView struct {
	// NodeHeader names Nodes' columns: id, kind, parent, description,
	// the uplink and its capacity.
	NodeHeader []string
	Nodes      [][]string
	// CrossHeader names Cross's columns: one row per link outside the
	// tree (NVLink, inter-socket), its ends, kind and capacity.
	CrossHeader []string
	Cross       [][]string
}

// Table returns the machine's rows: one per node, then one per link
// outside the tree.
func Table(m *Machine) TableView {
	v := TableView{NodeHeader: []string{"ID", "KIND", "PARENT", "DESCRIPTION", "UPLINK", "UPLINK GB/s"},
		CrossHeader: []string{"FROM", "TO", "KIND", "LINK", "GB/s"}}
	for i := range m.Nodes {
		n := &m.Nodes[i]
		up, gbps := "", ""
		if l := m.UplinkOf(n.ID); l != nil {
			up = DescribeLink(l)
			gbps = fmtNum2(l.GBps)
		}
		v.Nodes = append(v.Nodes, []string{n.ID, string(n.Kind), n.Parent, m.Describe(n), up, gbps})
	}
	for i := range m.Links {
		l := &m.Links[i]
		if to := m.Node(l.To); to != nil && to.Parent == l.From {
			continue
		}
		v.Cross = append(v.Cross, []string{l.From, l.To, string(l.Kind), DescribeLink(l), fmtNum2(l.GBps)})
	}
	return v
}

// WriteDOT prints the machine as a Graphviz digraph: tree links point down,
// links outside the tree are undirected-looking (dir=both); every edge is
// labelled with its capacity in GB/s.
func WriteDOT(w io.Writer, m *Machine) error {
	return WriteDOTStyled(w, m, DOTStyle{})
}

// DOTStyle adds Graphviz attributes to some nodes and links of WriteDOT's
// graph (a report marks saturated links and placed devices): Nodes by node
// id, Links by "from>to" (either direction matches), each a list of
// attributes such as `color="red", penwidth=2`.
type DOTStyle struct {
	Nodes map[string]string
	Links map[string]string
	// Title, when set, labels the graph.
	Title string
	// RankDir is Graphviz's rankdir: "TB" (the default) or "LR".
	RankDir string
}

// WriteDOTStyled is WriteDOT with extra attributes.
func WriteDOTStyled(w io.Writer, m *Machine, st DOTStyle) error {
	ew := &errWriter{w: w}
	ew.printf("digraph %s {\n", strconv.Quote(m.Name))
	dir := st.RankDir
	if dir != "LR" {
		dir = "TB"
	}
	ew.printf("  rankdir=%s;\n  node [fontname=\"Helvetica\", fontsize=10];\n  edge [fontname=\"Helvetica\", fontsize=9];\n", dir)
	if st.Title != "" {
		ew.printf("  label=\"%s\"; labelloc=t; fontname=\"Helvetica\";\n", dotEscape(st.Title))
	}
	shape := map[Kind]string{
		KindSocket: "box3d", KindRootPort: "box", KindSwitch: "box", KindBridge: "box",
		KindSlot: "box", KindGPU: "component", KindAccelerator: "component", KindNVSwitch: "hexagon",
		KindNVMe: "cylinder", KindStorage: "cylinder", KindNIC: "cds", KindOther: "ellipse",
	}
	for i := range m.Nodes {
		n := &m.Nodes[i]
		label := n.ID + "\\n" + dotEscape(m.Describe(n))
		style := ""
		if n.Kind == KindSlot && !n.Occupied {
			style = ", style=dashed"
		}
		if extra := st.Nodes[n.ID]; extra != "" {
			style += ", " + extra
		}
		ew.printf("  %s [shape=%s, label=\"%s\"%s];\n", strconv.Quote(n.ID), shape[n.Kind], label, style)
	}
	for i := range m.Links {
		l := &m.Links[i]
		attrs := fmt.Sprintf("label=\"%s\"", dotEscape(DescribeLink(l)))
		if to := m.Node(l.To); to == nil || to.Parent != l.From {
			attrs += ", dir=both, style=bold, constraint=false"
		}
		if extra := st.Links[l.From+">"+l.To]; extra != "" {
			attrs += ", " + extra
		} else if extra := st.Links[l.To+">"+l.From]; extra != "" {
			attrs += ", " + extra
		}
		ew.printf("  %s -> %s [%s];\n", strconv.Quote(l.From), strconv.Quote(l.To), attrs)
	}
	ew.printf("}\n")
	return ew.err
}

func dotEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

// WriteSummary prints what was found in a few lines, and says plainly when
// there is no GPU or NVMe SSD.
func WriteSummary(w io.Writer, m *Machine) error {
	s := m.Summarize()
	ew := &errWriter{w: w}
	mem := "memory size unknown"
	if s.MemoryGiB > 0 {
		mem = fmtNum2(s.MemoryGiB) + " GiB memory"
	}
	ew.printf("%d socket(s), %s, %d root port(s), %d PCIe switch(es), %d slot(s) (%d empty)\n",
		s.Sockets, mem, s.RootPorts, s.Switches, s.Slots, s.EmptySlots)
	ew.printf("%d GPU(s), %d accelerator(s), %d NVMe SSD(s), %d other storage controller(s), %d NIC(s), %d NVLink/xGMI link(s)\n",
		s.GPUs, s.Accelerators, s.NVMe, s.Storage, s.NICs, s.NVLinks+s.XGMILinks)
	var missing []string
	if s.GPUs == 0 {
		missing = append(missing, "GPU")
	}
	if s.NVMe == 0 {
		missing = append(missing, "NVMe SSD")
	}
	if len(missing) > 0 {
		ew.printf("no %s found on this machine", strings.Join(missing, " or "))
		if s.GPUs == 0 {
			ew.printf(": a plan for it trains on the CPU sockets")
		}
		ew.printf("\n")
	}
	return ew.err
}

// errWriter keeps the first write error so rendering code stays linear.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err != nil {
		return
	}
	_, e.err = fmt.Fprintf(e.w, format, args...)
}
