package maxflow

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/gnnplan/gnnplan/topology"
)

// A Placement says which slot each GPU and each SSD goes in.
type Placement struct {
	GPUSlots []string `json:"gpu_slots"` // slot ids, one per GPU
	SSDSlots []string `json:"ssd_slots"` // slot ids, one per SSD
}

// Inventory is what placement search moves: how many GPUs and SSDs, and
// what each looks like (model, lanes, memory, read rate).
type Inventory struct {
	GPUs, SSDs int
	GPU, SSD   topology.Node
}

// DefaultGPU and DefaultSSD are used when a machine holds no device to copy:
// a double-width PCIe 4.0 x16 GPU and a PCIe 4.0 x4 NVMe SSD.
func DefaultGPU() topology.Node {
	return topology.Node{Kind: topology.KindGPU, Name: "GPU (PCIe 4.0 x16, double-width)", Lanes: 16, PCIeGen: 4}
}

// DefaultSSD is a PCIe 4.0 x4 NVMe SSD.
func DefaultSSD() topology.Node {
	return topology.Node{Kind: topology.KindNVMe, Name: "NVMe SSD (PCIe 4.0 x4)", Lanes: 4, PCIeGen: 4}
}

// Strip returns a copy of m with every GPU and NVMe SSD that sits in a slot
// taken out (the slots become empty), and an inventory of what was there,
// copying the first GPU and SSD as templates.
func Strip(m *topology.Machine) (*topology.Machine, Inventory) {
	inv := Inventory{GPU: DefaultGPU(), SSD: DefaultSSD()}
	remove := map[string]bool{}
	haveGPU, haveSSD := false, false
	for _, n := range m.Nodes {
		p := m.Node(n.Parent)
		if p == nil || p.Kind != topology.KindSlot || (n.Kind != topology.KindGPU && n.Kind != topology.KindNVMe) {
			continue
		}
		if len(m.Children(n.ID)) > 0 {
			continue // something hangs below it: not a plain card
		}
		remove[n.ID] = true
		t := n
		t.ID, t.Parent, t.PCIAddress, t.BlockDevices, t.NUMANode = "", "", "", nil, nil
		if n.Kind == topology.KindGPU {
			inv.GPUs++
			if !haveGPU {
				inv.GPU, haveGPU = t, true
			}
		} else {
			inv.SSDs++
			if !haveSSD {
				inv.SSD, haveSSD = t, true
			}
		}
	}
	out := &topology.Machine{SchemaVersion: m.SchemaVersion, Name: m.Name, Source: m.Source,
		Notes: append([]string(nil), m.Notes...), Nodes: []topology.Node{}, Links: []topology.Link{}}
	for _, n := range m.Nodes {
		if remove[n.ID] {
			continue
		}
		if n.Kind == topology.KindSlot {
			occupied := false
			for _, c := range m.Children(n.ID) {
				if !remove[c] {
					occupied = true
				}
			}
			n.Occupied = occupied
		}
		out.Nodes = append(out.Nodes, n)
	}
	for _, l := range m.Links {
		if !remove[l.From] && !remove[l.To] {
			out.Links = append(out.Links, l)
		}
	}
	return out, inv
}

// Apply returns a copy of the stripped machine m with the inventory's
// devices installed as p says: GPUs named gpu0.., SSDs nvme0.. in order.
func Apply(m *topology.Machine, inv Inventory, p Placement) (*topology.Machine, error) {
	out := &topology.Machine{SchemaVersion: m.SchemaVersion, Name: m.Name, Source: m.Source,
		Notes: m.Notes, Nodes: make([]topology.Node, len(m.Nodes), len(m.Nodes)+len(p.GPUSlots)+len(p.SSDSlots)),
		Links: make([]topology.Link, len(m.Links), len(m.Links)+len(p.GPUSlots)+len(p.SSDSlots))}
	copy(out.Nodes, m.Nodes)
	copy(out.Links, m.Links)
	used := map[string]bool{}
	for _, n := range m.Nodes {
		used[n.ID] = true
	}
	install := func(slotID string, tmpl topology.Node, stem string, i int) error {
		s := out.Node(slotID)
		if s == nil || s.Kind != topology.KindSlot {
			return &topology.InputError{Field: "placement", Msg: fmt.Sprintf("%q is not a slot of %s", slotID, m.Name)}
		}
		if s.Occupied {
			return &topology.InputError{Field: "placement", Msg: fmt.Sprintf("slot %s is taken", slotID)}
		}
		s.Occupied = true
		id := fmt.Sprintf("%s%d", stem, i)
		for used[id] {
			id += "'"
		}
		used[id] = true
		n := tmpl
		n.ID, n.Parent = id, slotID
		gen, lanes := topology.MinKnown(n.PCIeGen, s.PCIeGen), topology.MinKnown(n.Lanes, s.Lanes)
		gbps := topology.PCIeGBps(gen, lanes)
		src := topology.SourceDerived
		if gbps == 0 {
			gbps, src = topology.PCIeGBps(3, 16), topology.SourceAssumed
		}
		out.Nodes = append(out.Nodes, n)
		out.Links = append(out.Links, topology.Link{From: slotID, To: id, Kind: topology.LinkPCIe, GBps: gbps,
			PCIeGen: gen, Lanes: lanes, Source: src})
		return nil
	}
	for i, s := range p.GPUSlots {
		if err := install(s, inv.GPU, "gpu", i); err != nil {
			return nil, err
		}
	}
	for i, s := range p.SSDSlots {
		if err := install(s, inv.SSD, "nvme", i); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// slotGroup is a set of interchangeable free slots: same parent, same
// width, generation and double-width flag.
type slotGroup struct {
	parent             string
	slots              []string
	lanes, gen         int
	doubleWidth        bool
	takesGPU, takesSSD bool
}

// fits reports whether a card of the template's width goes in a slot: an
// electrical width at least the card's (a narrower slot would run it at
// fewer lanes; planners do not choose that), and room for a double-width
// GPU.
func fits(card topology.Node, lanes int, doubleWidth bool) bool {
	need := card.Lanes
	if need == 0 {
		need = 1
	}
	if card.Kind == topology.KindGPU && !doubleWidth {
		return false
	}
	return lanes == 0 || lanes >= need
}

func groupSlots(m *topology.Machine, inv Inventory) []slotGroup {
	idx := map[string]int{}
	var groups []slotGroup
	for _, id := range m.SortedKind(topology.KindSlot) {
		s := m.Node(id)
		if s.Occupied {
			continue
		}
		key := fmt.Sprintf("%s|%d|%d|%v", s.Parent, s.Lanes, s.PCIeGen, s.DoubleWidth)
		i, ok := idx[key]
		if !ok {
			i = len(groups)
			idx[key] = i
			groups = append(groups, slotGroup{parent: s.Parent, lanes: s.Lanes, gen: s.PCIeGen, doubleWidth: s.DoubleWidth,
				takesGPU: fits(inv.GPU, s.Lanes, s.DoubleWidth), takesSSD: fits(inv.SSD, s.Lanes, s.DoubleWidth)})
		}
		groups[i].slots = append(groups[i].slots, id)
	}
	return groups
}

// Candidate is one distinct placement and what the flow model predicts.
type Candidate struct {
	Rank      int       `json:"rank"`
	Classic   string    `json:"classic,omitempty"` // "a".."d" for Moment's classic placements
	Placement Placement `json:"placement"`
	// Seconds is the predicted epoch IO time, AggregateGBps the demand
	// over it.
	Seconds       float64 `json:"epoch_io_s"`
	AggregateGBps float64 `json:"aggregate_GBps"`
	// Eval is the full prediction (per-GPU inlets, storage traffic,
	// bottlenecks); nil from SearchTimes until Detail fills it.
	Eval *Evaluation `json:"evaluation,omitempty"`
	// LowerBound marks a SearchTimes candidate that was not timed because
	// a lower bound on its time already exceeded the fastest: Seconds is
	// that bound.
	LowerBound bool `json:"time_is_lower_bound,omitempty"`
	// FabricGBps is the aggregate the placement would reach if the SSDs
	// never bound: the headroom its switches, root ports and socket link
	// leave. It breaks ties between placements with equal predicted time.
	FabricGBps float64 `json:"fabric_GBps"`
	key        string
}

// SearchResult is the ranked outcome of a placement search.
type SearchResult struct {
	Machine   *topology.Machine `json:"-"` // stripped: every searched slot empty
	Inventory Inventory         `json:"-"`
	Tiers     Tiers             `json:"-"`
	// Raw counts the assignments of the devices to free slots that tell
	// GPUs from SSDs but not one GPU from another; Distinct counts them up
	// to symmetry (interchangeable slots and identical sibling subtrees).
	Raw        float64      `json:"raw_candidates"`
	Distinct   int          `json:"distinct_candidates"`
	Candidates []*Candidate `json:"candidates"` // best first
	// Classic holds Moment's four classic placements, evaluated, by name;
	// empty with ClassicNote saying why when the machine has no switch.
	Classic     map[string]*Candidate `json:"-"`
	ClassicNote string                `json:"classic_note,omitempty"`
}

// Search enumerates the placements of inv's GPUs and SSDs in the free slots
// of m (a stripped machine, see Strip) up to symmetry, evaluates each with
// the flow model and ranks them, fastest epoch IO first; ties break by a
// canonical form of the placement, so the order is deterministic.
func Search(ctx context.Context, m *topology.Machine, inv Inventory, tiers Tiers) (*SearchResult, error) {
	return search(ctx, m, inv, tiers, true)
}

// SearchTimes is Search that predicts only each candidate's time and
// fabric headroom; Detail fills in a candidate's full evaluation on demand.
// Recommendation runs it for every GPU and SSD count, where only the best
// placement of each is shown.
func SearchTimes(ctx context.Context, m *topology.Machine, inv Inventory, tiers Tiers) (*SearchResult, error) {
	return search(ctx, m, inv, tiers, false)
}

func search(ctx context.Context, m *topology.Machine, inv Inventory, tiers Tiers, detail bool) (*SearchResult, error) {
	if err := tiers.Validate(); err != nil {
		return nil, err
	}
	if inv.GPUs < 0 || inv.SSDs < 0 {
		return nil, &topology.InputError{Field: "--gpus/--ssds", Msg: "counts must be >= 0"}
	}
	groups := groupSlots(m, inv)
	gpuRoom, ssdRoom, free := 0, 0, 0
	for _, g := range groups {
		free += len(g.slots)
		if g.takesGPU {
			gpuRoom += len(g.slots)
		}
		if g.takesSSD {
			ssdRoom += len(g.slots)
		}
	}
	switch {
	case inv.GPUs > gpuRoom:
		if gpuRoom == 0 {
			return nil, &topology.InputError{Field: "--gpus", Msg: fmt.Sprintf("no free slot of %s takes a GPU of %d lanes (want an x%d or wider double-width slot)", m.Name, inv.GPU.Lanes, inv.GPU.Lanes)}
		}
		return nil, &topology.InputError{Field: "--gpus", Msg: fmt.Sprintf("%d GPUs but %s has only %d free slots that take one", inv.GPUs, m.Name, gpuRoom)}
	case inv.SSDs > ssdRoom:
		return nil, &topology.InputError{Field: "--ssds", Msg: fmt.Sprintf("%d SSDs but %s has only %d free slots that take one", inv.SSDs, m.Name, ssdRoom)}
	case inv.GPUs+inv.SSDs > free:
		return nil, &topology.InputError{Field: "--gpus/--ssds", Msg: fmt.Sprintf("%d devices but %s has only %d free slots", inv.GPUs+inv.SSDs, m.Name, free)}
	}
	if ssdShare := 1 - tiers.HostShare - tiers.GPUCacheShare; inv.SSDs == 0 && ssdShare > 1e-12 && len(m.SortedKind(topology.KindNVMe)) == 0 {
		return nil, &topology.InputError{Field: m.Name, Msg: fmt.Sprintf(
			"cannot serve the epoch: %.0f%% of it is to come from SSDs and no SSD is placed (give --ssds N, or raise the memory shares to 100%%)", 100*ssdShare)}
	}
	canon := newCanonicalizer(m, groups)
	res := &SearchResult{Machine: m, Inventory: inv, Tiers: tiers}
	var reps []rep
	seen := map[string]bool{}
	counts := make([][2]int, len(groups))
	var walk func(i, g, s int)
	walk = func(i, g, s int) {
		if i == len(groups) {
			if g != 0 || s != 0 {
				return
			}
			ways := 1.0
			for j, c := range counts {
				ways *= binom(len(groups[j].slots), c[0]) * binom(len(groups[j].slots)-c[0], c[1])
			}
			res.Raw += ways
			key := canon.key(counts)
			if !seen[key] {
				seen[key] = true
				reps = append(reps, rep{key, append([][2]int(nil), counts...)})
			}
			return
		}
		// Prune: the groups left must have room for what is left.
		roomG, roomS, room := 0, 0, 0
		for _, gr := range groups[i:] {
			room += len(gr.slots)
			if gr.takesGPU {
				roomG += len(gr.slots)
			}
			if gr.takesSSD {
				roomS += len(gr.slots)
			}
		}
		if g > roomG || s > roomS || g+s > room {
			return
		}
		gr := groups[i]
		maxG := 0
		if gr.takesGPU {
			maxG = min(g, len(gr.slots))
		}
		for a := maxG; a >= 0; a-- {
			maxS := 0
			if gr.takesSSD {
				maxS = min(s, len(gr.slots)-a)
			}
			for b := maxS; b >= 0; b-- {
				counts[i] = [2]int{a, b}
				walk(i+1, g-a, s-b)
			}
		}
		counts[i] = [2]int{}
	}
	walk(0, inv.GPUs, inv.SSDs)
	res.Distinct = len(reps)

	if !detail && inv.GPUs > 0 {
		cands, err := timesOnly(ctx, m, inv, groups, tiers, reps)
		if err != nil {
			return nil, err
		}
		rankCandidates(cands)
		res.Candidates = cands
		res.Classic, res.ClassicNote = classicPlacements(m, inv, groups, tiers, canon, cands)
		return res, nil
	}
	cands := make([]*Candidate, len(reps))
	errs := make([]error, len(reps))
	var wg sync.WaitGroup
	work := make(chan int)
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// One evaluator per worker: a Network is not safe for
			// concurrent use. Without GPUs the compute nodes are the
			// sockets, which the universal graph does not model.
			var fe *fastEvaluator
			var ferr error
			if inv.GPUs > 0 {
				fe, ferr = newFastEvaluator(m, inv, groups, tiers)
			}
			for i := range work {
				if ferr != nil {
					errs[i] = ferr
					continue
				}
				p := placementFor(groups, reps[i].counts)
				c := &Candidate{Placement: p, key: reps[i].key}
				if fe != nil {
					secs, fab, err := fe.times(p, detail)
					if err != nil {
						errs[i] = err
						continue
					}
					c.Seconds, c.AggregateGBps = secs, tiers.DemandGB/secs
					if detail {
						c.FabricGBps = tiers.DemandGB / fab
					}
				} else if errs[i] = detailCandidate(m, inv, tiers, c, true); errs[i] != nil {
					continue
				}
				if detail && c.Eval == nil {
					errs[i] = detailCandidate(m, inv, tiers, c, false)
				}
				cands[i] = c
			}
		}()
	}
	for i := range reps {
		if ctx.Err() != nil {
			break
		}
		work <- i
	}
	close(work)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	rankCandidates(cands)
	res.Candidates = cands
	res.Classic, res.ClassicNote = classicPlacements(m, inv, groups, tiers, canon, cands)
	return res, nil
}

// timesOnly finds the fastest placement exactly while timing as few as it
// can: one max flow per candidate gives a lower bound on its time (the
// demand over its rates-only max flow); candidates are timed in order of
// that bound until the bound reaches the best time found. The rest keep
// their bound as Seconds, marked LowerBound: none of them is faster, and
// of placements tied with the best the first in bound order wins (the
// order is deterministic). The winner's fabric headroom is computed too.
func timesOnly(ctx context.Context, m *topology.Machine, inv Inventory, groups []slotGroup, tiers Tiers, reps []rep) ([]*Candidate, error) {
	fe, err := newFastEvaluator(m, inv, groups, tiers)
	if err != nil {
		return nil, err
	}
	cands := make([]*Candidate, len(reps))
	lbs := make([]float64, len(reps))
	order := make([]int, len(reps))
	for i, r := range reps {
		if i%256 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		cands[i] = &Candidate{Placement: placementFor(groups, r.counts), key: r.key}
		if lbs[i], err = fe.lowerBound(cands[i].Placement); err != nil {
			return nil, err
		}
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return lbs[order[a]] < lbs[order[b]] })
	best := math.Inf(1)
	for _, i := range order {
		c := cands[i]
		if lbs[i] >= best*(1-1e-12) {
			c.Seconds, c.LowerBound = lbs[i], true
		} else {
			secs, below, err := fe.timeBelow(c.Placement, best*(1-1e-12))
			if err != nil {
				return nil, err
			}
			c.Seconds, c.LowerBound = secs, !below
			if below {
				best = secs
			}
		}
		c.AggregateGBps = tiers.DemandGB / c.Seconds
	}
	if len(order) > 0 {
		w := cands[order[0]]
		for _, c := range cands {
			if !c.LowerBound && c.Seconds < w.Seconds {
				w = c
			}
		}
		_, fab, err := fe.times(w.Placement, true)
		if err != nil {
			return nil, err
		}
		w.FabricGBps = tiers.DemandGB / fab
	}
	return cands, nil
}

// detailCandidate fills c.Eval with the full evaluation of its placement;
// withTimes also sets its times and fabric headroom from the same model.
func detailCandidate(m *topology.Machine, inv Inventory, tiers Tiers, c *Candidate, withTimes bool) error {
	pm, err := Apply(m, inv, c.Placement)
	if err != nil {
		return err
	}
	ev, err := Evaluate(pm, tiers)
	if err != nil {
		return err
	}
	c.Eval = ev
	if withTimes {
		fabric, err := Evaluate(unboundSSDs(pm), tiers)
		if err != nil {
			return err
		}
		c.Seconds, c.AggregateGBps, c.FabricGBps = ev.EpochIOSeconds, ev.AggregateGBps, fabric.AggregateGBps
	}
	return nil
}

// Detail returns c's full evaluation, computing it if SearchTimes left it out.
func (r *SearchResult) Detail(c *Candidate) (*Evaluation, error) {
	if c.Eval == nil {
		if err := detailCandidate(r.Machine, r.Inventory, r.Tiers, c, false); err != nil {
			return nil, err
		}
	}
	return c.Eval, nil
}

// unboundSSDs returns a copy of m whose SSDs read infinitely fast over
// links of their own that never bind: what is left binding is the shared
// fabric (switch uplinks, root ports, the socket link, GPU links).
func unboundSSDs(m *topology.Machine) *topology.Machine {
	const fast = 1e6
	out := *m
	out.Nodes = append([]topology.Node(nil), m.Nodes...)
	out.Links = append([]topology.Link(nil), m.Links...)
	private := map[string]bool{}
	for i := range out.Nodes {
		n := &out.Nodes[i]
		if n.Kind != topology.KindNVMe {
			continue
		}
		n.ReadGBps = fast
		private[n.ID] = true
		if p := m.Node(n.Parent); p != nil && p.Kind == topology.KindSlot && len(m.Children(p.ID)) == 1 {
			private[p.ID] = true
		}
	}
	for i := range out.Links {
		if l := &out.Links[i]; private[l.To] && l.Kind == topology.LinkPCIe {
			l.GBps = fast
		}
	}
	return &out
}

// rep is one distinct placement: its canonical key and per-group counts.
type rep struct {
	key    string
	counts [][2]int
}

// rankCandidates sorts by epoch IO time (shorter first); times within
// 1e-9 relative are a tie, broken by more fabric headroom, then by the
// canonical key.
func rankCandidates(c []*Candidate) {
	differ := func(a, b float64) bool { return math.Abs(a-b) > 1e-9*math.Max(a, b) }
	sort.SliceStable(c, func(i, j int) bool {
		a, b := c[i].Seconds, c[j].Seconds
		if differ(a, b) {
			return a < b
		}
		if fa, fb := c[i].FabricGBps, c[j].FabricGBps; differ(fa, fb) {
			return fa > fb
		}
		return c[i].key < c[j].key
	})
	for i := range c {
		c[i].Rank = i + 1
	}
}

// placementFor turns per-group counts into slots: in each group the GPUs
// take the first slots, the SSDs the next (the slots of a group are
// interchangeable).
func placementFor(groups []slotGroup, counts [][2]int) Placement {
	var p Placement
	for i, c := range counts {
		p.GPUSlots = append(p.GPUSlots, groups[i].slots[:c[0]]...)
		p.SSDSlots = append(p.SSDSlots, groups[i].slots[c[0]:c[0]+c[1]]...)
	}
	sort.SliceStable(p.GPUSlots, func(i, j int) bool { return topology.NaturalLess(p.GPUSlots[i], p.GPUSlots[j]) })
	sort.SliceStable(p.SSDSlots, func(i, j int) bool { return topology.NaturalLess(p.SSDSlots[i], p.SSDSlots[j]) })
	return p
}

func binom(n, k int) float64 {
	if k < 0 || k > n {
		return 0
	}
	r := 1.0
	for i := 1; i <= k; i++ {
		r = r * float64(n-k+i) / float64(i)
	}
	return math.Round(r)
}

// canonicalizer computes a canonical form of the machine tree with a
// placement's per-group counts, so placements that differ only by swapping
// identical sibling subtrees get the same key (the AHU tree-isomorphism
// encoding: a node's code is its own signature and its children's codes,
// sorted).
type canonicalizer struct {
	m        *topology.Machine
	groupsAt map[string][]int // parent id -> group indexes
	groups   []slotGroup
	inGroup  map[string]bool
	cross    string
}

func newCanonicalizer(m *topology.Machine, groups []slotGroup) *canonicalizer {
	c := &canonicalizer{m: m, groupsAt: map[string][]int{}, groups: groups, inGroup: map[string]bool{}}
	for i, g := range groups {
		c.groupsAt[g.parent] = append(c.groupsAt[g.parent], i)
		for _, s := range g.slots {
			c.inGroup[s] = true
		}
	}
	// Links outside the tree (inter-socket, NVLink) by kind and capacity:
	// they are the same for every placement of one machine, but they keep
	// keys of different machines apart.
	var cross []string
	for _, l := range m.Links {
		if to := m.Node(l.To); to != nil && to.Parent == l.From {
			continue
		}
		cross = append(cross, string(l.Kind)+strconv.FormatFloat(l.GBps, 'g', -1, 64))
	}
	sort.Strings(cross)
	c.cross = strings.Join(cross, ",")
	return c
}

func (c *canonicalizer) key(counts [][2]int) string {
	var roots []string
	for _, r := range c.m.Roots() {
		roots = append(roots, c.code(r, counts))
	}
	sort.Strings(roots)
	return strings.Join(roots, "") + "|" + c.cross
}

func (c *canonicalizer) code(id string, counts [][2]int) string {
	n := c.m.Node(id)
	var b strings.Builder
	b.WriteString("(")
	b.WriteString(string(n.Kind))
	if up := c.m.UplinkOf(id); up != nil {
		b.WriteString(":" + strconv.FormatFloat(up.GBps, 'g', -1, 64))
	}
	if n.Kind == topology.KindSocket {
		b.WriteString(":" + strconv.FormatFloat(n.MemoryGiB, 'g', -1, 64))
	}
	var kids []string
	for _, ch := range c.m.Children(id) {
		if c.inGroup[ch] {
			continue // free slots are summarised by their group below
		}
		kids = append(kids, c.code(ch, counts))
	}
	for _, gi := range c.groupsAt[id] {
		g := c.groups[gi]
		kids = append(kids, fmt.Sprintf("[%d,%d,%v:%dg%ds%d]", g.lanes, g.gen, g.doubleWidth, len(g.slots), counts[gi][0], counts[gi][1]))
	}
	sort.Strings(kids)
	for _, k := range kids {
		b.WriteString(k)
	}
	b.WriteString(")")
	return b.String()
}
