package placement

import (
	"context"
	"crypto/sha256"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

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
		if placedCard(m, n) == nil {
			continue
		}
		remove[n.ID] = true
		for _, c := range m.Children(n.ID) {
			remove[c] = true // the card's own functions (placedCard)
		}
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
func fits(card topology.Node, lanes int, doubleWidth bool, takes topology.Kind) bool {
	need := card.Lanes
	if need == 0 {
		need = 1
	}
	if takes != "" && takes != card.Kind {
		return false
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
		key := fmt.Sprintf("%s|%d|%d|%v|%s", s.Parent, s.Lanes, s.PCIeGen, s.DoubleWidth, s.Takes)
		i, ok := idx[key]
		if !ok {
			i = len(groups)
			idx[key] = i
			groups = append(groups, slotGroup{parent: s.Parent, lanes: s.Lanes, gen: s.PCIeGen, doubleWidth: s.DoubleWidth,
				takesGPU: fits(inv.GPU, s.Lanes, s.DoubleWidth, s.Takes), takesSSD: fits(inv.SSD, s.Lanes, s.DoubleWidth, s.Takes)})
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
	counts     [][2]int // per group; the search's walk order breaks the last ties
}

// SearchResult is the ranked outcome of a placement search.
type SearchResult struct {
	Machine   *topology.Machine `json:"-"` // stripped: every searched slot empty
	Inventory Inventory         `json:"-"`
	Tiers     Tiers             `json:"-"`
	// Raw counts the assignments of the devices to free slots that tell
	// GPUs from SSDs but not one GPU from another; Distinct counts the
	// placements the search timed, up to symmetry (interchangeable slots
	// and identical sibling subtrees): branch and bound skips the rest
	// unseen, because a bound shows none of them makes the top.
	Raw        float64      `json:"raw_candidates"`
	Distinct   int          `json:"distinct_candidates"`
	Candidates []*Candidate `json:"candidates"` // best first, at most Options.Top
	// Classic holds Moment's four classic placements, evaluated, by name;
	// empty with ClassicNote saying why when the machine has no switch. A
	// classic placement outside the top has Rank 0.
	Classic     map[string]*Candidate `json:"-"`
	ClassicNote string                `json:"classic_note,omitempty"`
	// Installed is the placement the machine was built with, when
	// SearchOptions.Installed gave one: a kept candidate when it is among
	// them, else evaluated on its own with Rank 0.
	Installed *Candidate `json:"-"`
	// Truncated says the search stopped at Options.MaxNodes before it
	// had ruled out everything it skipped; UnexploredSeconds is then a
	// lower bound on the epoch IO time of every placement it did not look
	// at (none of them is faster), so the result is exact when
	// UnexploredSeconds is not below the best time.
	Truncated         bool    `json:"truncated,omitempty"`
	UnexploredSeconds float64 `json:"unexplored_epoch_io_s_at_least,omitempty"`
}

// SearchOptions bounds a placement search.
type SearchOptions struct {
	// Top is how many of the best placements to keep; <= 0 keeps every
	// distinct placement (exhaustive: no pruning).
	Top int
	// MaxNodes, when > 0, stops the search after it has bounded or timed
	// that many partial and complete placements; the result then says
	// it is truncated and what the unexplored part could still reach.
	MaxNodes int
	// Workers is how many goroutines search; <= 0 means one per core.
	// Callers that run many searches in parallel (recommendation) pass 1.
	Workers int
	// Installed, when it names slots, is where the devices sit now (see
	// Installed): Search evaluates it too and reports it as
	// SearchResult.Installed, ranked or not, so a user sees how far the
	// machine as built is from the best.
	Installed Placement
}

// DefaultTop is how many placements Search keeps.
const DefaultTop = 10

// Search finds the best placements of inv's GPUs and SSDs in the free slots
// of m (a stripped machine, see Strip) up to symmetry, evaluates them with
// the flow model and ranks them, fastest epoch IO first; ties break by
// fabric headroom, then by a canonical form of the placement, so the order
// is deterministic. It keeps the DefaultTop best; see SearchWith.
func Search(ctx context.Context, m *topology.Machine, inv Inventory, tiers Tiers) (*SearchResult, error) {
	return SearchWith(ctx, m, inv, tiers, SearchOptions{Top: DefaultTop})
}

// SearchWith is Search with the number of placements to keep and a limit
// on the work.
func SearchWith(ctx context.Context, m *topology.Machine, inv Inventory, tiers Tiers, opts SearchOptions) (*SearchResult, error) {
	return search(ctx, m, inv, tiers, opts, true)
}

// SearchTimes finds the fastest placement only, predicting its time and
// fabric headroom; Detail fills in its full evaluation on demand.
// Recommendation runs it for every GPU and SSD count, where only the best
// placement of each is shown.
func SearchTimes(ctx context.Context, m *topology.Machine, inv Inventory, tiers Tiers) (*SearchResult, error) {
	// One worker: recommendation already runs one search per core.
	return search(ctx, m, inv, tiers, SearchOptions{Top: 1, Workers: 1}, false)
}

func search(ctx context.Context, m *topology.Machine, inv Inventory, tiers Tiers, opts SearchOptions, detail bool) (*SearchResult, error) {
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
		fix := fmt.Sprintf("give --ssds N (%d free slot(s) take one beside the %d GPU(s))", min(ssdRoom, free-inv.GPUs), inv.GPUs)
		if min(ssdRoom, free-inv.GPUs) <= 0 {
			fix = fmt.Sprintf("no free slot takes an SSD beside the %d GPU(s), so describe the machine's NVMe bays in its file (slot nodes with lanes and pcie_gen)", inv.GPUs)
		}
		return nil, &topology.InputError{Field: m.Name, Msg: fmt.Sprintf(
			"cannot serve the epoch: %.0f%% of it is to come from SSDs and no SSD is placed: %s, or serve it from memory (--host-share and --gpu-cache-share summing to 1)", 100*ssdShare, fix)}
	}
	canon := newCanonicalizer(m, groups)
	res := &SearchResult{Machine: m, Inventory: inv, Tiers: tiers, Raw: rawCount(groups, inv)}
	b := &bnb{ctx: ctx, m: m, inv: inv, tiers: tiers, groups: groups, canon: canon, top: opts.Top, maxNodes: int64(opts.MaxNodes), workers: opts.Workers,
		seen: map[[16]byte][][2]int{}, unexplored: math.Inf(1), fabric: detail}
	if err := b.run(); err != nil {
		return nil, err
	}
	cands := b.best
	rankCandidates(cands)
	res.Candidates, res.Distinct = cands, len(b.seen)
	if b.truncated {
		res.Truncated, res.UnexploredSeconds = true, b.unexplored
	}
	if !detail {
		// Only the winner's fabric headroom is shown by recommendation.
		if len(cands) > 0 && inv.GPUs > 0 {
			_, fab, err := b.ev0.fe.times(cands[0].Placement, true)
			if err != nil {
				return nil, err
			}
			cands[0].FabricGBps = tiers.DemandGB / fab
		}
		// Recommendation shows the winner only: Moment's classic
		// placements are not timed here (Search does).
		return res, nil
	}
	for _, c := range cands {
		if c.Eval == nil {
			if err := detailCandidate(m, inv, tiers, c, false); err != nil {
				return nil, err
			}
		}
	}
	res.Classic, res.ClassicNote = b.classics(cands, true)
	if len(opts.Installed.GPUSlots)+len(opts.Installed.SSDSlots) > 0 {
		c, err := b.installed(cands, res.Classic, opts.Installed)
		if err != nil {
			return nil, err
		}
		res.Installed = c
	}
	return res, nil
}

// Installed returns where m's GPUs and NVMe SSDs sit: the slots of the
// devices Strip takes out, GPUs and SSDs each in slot order.
func Installed(m *topology.Machine) Placement {
	var p Placement
	for _, n := range m.Nodes {
		s := placedCard(m, n)
		switch {
		case s == nil:
		case n.Kind == topology.KindGPU:
			p.GPUSlots = append(p.GPUSlots, s.ID)
		default:
			p.SSDSlots = append(p.SSDSlots, s.ID)
		}
	}
	p.sortSlots()
	return p
}

// placedCard returns the slot n sits in when n is what placement search
// moves: a GPU or NVMe SSD in a slot with no board below it (a plain
// card, its own functions aside: hasBoard); nil otherwise.
func placedCard(m *topology.Machine, n topology.Node) *topology.Node {
	if n.Kind != topology.KindGPU && n.Kind != topology.KindNVMe {
		return nil
	}
	s := m.Node(n.Parent)
	if s == nil || s.Kind != topology.KindSlot || hasBoard(m, n.ID) {
		return nil
	}
	return s
}

// sortSlots puts each kind's slots in natural order.
func (p *Placement) sortSlots() {
	sort.SliceStable(p.GPUSlots, func(i, j int) bool { return topology.NaturalLess(p.GPUSlots[i], p.GPUSlots[j]) })
	sort.SliceStable(p.SSDSlots, func(i, j int) bool { return topology.NaturalLess(p.SSDSlots[i], p.SSDSlots[j]) })
}

// installed evaluates the placement p the machine was built with: the kept
// or classic candidate with the same canonical form when there is one, else
// p timed on its own (Rank 0). Its device counts must be the search's.
func (b *bnb) installed(ranked []*Candidate, classic map[string]*Candidate, p Placement) (*Candidate, error) {
	if len(p.GPUSlots) != b.inv.GPUs || len(p.SSDSlots) != b.inv.SSDs {
		return nil, &topology.InputError{Field: "installed placement", Msg: fmt.Sprintf(
			"%d GPUs and %d SSDs, but the search places %d and %d", len(p.GPUSlots), len(p.SSDSlots), b.inv.GPUs, b.inv.SSDs)}
	}
	group := map[string]int{}
	for i, g := range b.groups {
		for _, s := range g.slots {
			group[s] = i
		}
	}
	counts := make([][2]int, len(b.groups))
	key := ""
	inGroups := true
	for k, slots := range [][]string{p.GPUSlots, p.SSDSlots} {
		for _, s := range slots {
			i, ok := group[s]
			if !ok || (k == 0 && !b.groups[i].takesGPU) || (k == 1 && !b.groups[i].takesSSD) {
				inGroups = false // a slot the search would not use for it
				continue
			}
			counts[i][k]++
		}
	}
	if inGroups {
		key = b.canon.key(counts)
		for _, c := range ranked {
			if c.key == key {
				return c, nil
			}
		}
		for _, n := range ClassicNames {
			if c := classic[n]; c != nil && c.key == key {
				return c, nil
			}
		}
	} else {
		counts = nil
	}
	c := &Candidate{Placement: p, key: key, counts: counts}
	if err := detailCandidate(b.m, b.inv, b.tiers, c, true); err != nil {
		return nil, fmt.Errorf("installed placement: %w", err)
	}
	return c, nil
}

// rawCount is the number of assignments of the devices to the groups'
// slots that tell GPUs from SSDs, by dynamic programming over the groups.
func rawCount(groups []slotGroup, inv Inventory) float64 {
	// ways[g][s]: assignments of the groups so far that place g GPUs and s SSDs.
	ways := make([][]float64, inv.GPUs+1)
	for g := range ways {
		ways[g] = make([]float64, inv.SSDs+1)
	}
	ways[0][0] = 1
	for _, gr := range groups {
		next := make([][]float64, inv.GPUs+1)
		for g := range next {
			next[g] = make([]float64, inv.SSDs+1)
		}
		n := len(gr.slots)
		for g := 0; g <= inv.GPUs; g++ {
			for s := 0; s <= inv.SSDs; s++ {
				if ways[g][s] == 0 {
					continue
				}
				for a := 0; a <= n && g+a <= inv.GPUs; a++ {
					if a > 0 && !gr.takesGPU {
						break
					}
					for c := 0; a+c <= n && s+c <= inv.SSDs; c++ {
						if c > 0 && !gr.takesSSD {
							break
						}
						next[g+a][s+c] += ways[g][s] * binom(n, a) * binom(n-a, c)
					}
				}
			}
		}
		ways = next
	}
	return ways[inv.GPUs][inv.SSDs]
}

// bnb is a branch-and-bound placement search. It decides the groups one at
// a time (how many GPUs and SSDs each gets). A partial placement's bound is
// the least epoch IO time of the machine with every undecided slot holding
// a GPU and an SSD at once, with what the devices left to place can move
// capped in aggregate: their SSDs' reads, their GPUs' link inflow, their
// caches and their share of the demand (see evaluator). Every real
// completion's flow is a flow of that relaxation, so no completion is
// faster than the bound (admissible), and a child's relaxation is tighter
// than its parent's. A subtree whose bound is worse than the Top-th best so
// far (beyond the ranking's tie tolerance) is skipped; one whose bound ties
// it is skipped when it comes after it in walk order (and, in Search, can
// not have more fabric headroom). The kept set does not depend on the
// order workers finish in: a placement is dropped only when Top others
// rank above it, and of placements equal up to symmetry the first in walk
// order is the one kept.
type bnb struct {
	ctx      context.Context
	m        *topology.Machine
	inv      Inventory
	tiers    Tiers
	groups   []slotGroup
	canon    *canonicalizer
	top      int
	maxNodes int64
	workers  int        // <= 0: one per core
	fabric   bool       // time every kept placement's fabric headroom (the tie-break)
	ev0      *evaluator // the first worker's, free again once run returns

	nodes atomic.Int64
	kth   atomic.Pointer[Candidate] // the Top-th best so far; nil until Top are kept
	stop  atomic.Bool

	mu         sync.Mutex
	best       []*Candidate
	seen       map[[16]byte][][2]int // canonical keys timed: the first placement in walk order
	truncated  bool
	unexplored float64
	err        error
}

// tieSlack widens pruning and cutoffs past the ranking's 1e-9 tie
// tolerance, so a placement that ties the Top-th is never dropped.
const tieSlack = 1e-8

// task is a partial placement: counts of the first depth groups.
type task struct {
	counts [][2]int
	depth  int
	g, s   int // devices left to place
}

func (b *bnb) run() error {
	workers := b.workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	// Ctrl-C and SIGTERM stop the search from here on, each worker at its
	// next node.
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-b.ctx.Done():
			b.stop.Store(true)
		case <-done:
		}
	}()
	// The whole tree's bound: every subtree starts from it, so once a
	// placement ties it the rest are settled by walk order alone.
	root := task{counts: make([][2]int, len(b.groups)), g: b.inv.GPUs, s: b.inv.SSDs}
	ev0, err := b.newEvaluator()
	if err != nil {
		return err
	}
	b.ev0 = ev0
	rootLB, err := ev0.bound(root, 0, math.Inf(1))
	if err != nil {
		return err
	}
	// Split the tree into enough subtrees to keep the workers busy; they
	// are handed out in order, so good placements found early (the walk
	// tries more devices in the earlier groups first) prune the rest.
	tasks := []task{root}
	for len(tasks) < 8*workers && !b.stop.Load() {
		var next []task
		grew := false
		for _, t := range tasks {
			if t.depth == len(b.groups) || t.g == 0 && t.s == 0 {
				next = append(next, t)
				continue
			}
			grew = true
			b.children(t, func(c task) { next = append(next, c) })
		}
		tasks = next
		if !grew {
			break
		}
	}
	var wg sync.WaitGroup
	work := make(chan task)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			ev, err := ev0, error(nil)
			if w > 0 {
				ev, err = b.newEvaluator()
			}
			for t := range work {
				if err != nil {
					b.fail(err)
					continue
				}
				if err := ev.explore(t, rootLB); err != nil {
					b.fail(err)
				}
			}
		}(w)
	}
	for _, t := range tasks {
		work <- t
	}
	close(work)
	wg.Wait()
	if err := b.ctx.Err(); err != nil {
		return err
	}
	return b.err
}

func (b *bnb) fail(err error) {
	b.mu.Lock()
	if b.err == nil {
		b.err = err
	}
	b.mu.Unlock()
	b.stop.Store(true)
}

// children calls f with each way to fill group t.depth, more GPUs and SSDs
// first, skipping those that leave the later groups too little room.
func (b *bnb) children(t task, f func(task)) {
	i := t.depth
	gr := b.groups[i]
	roomG, roomS, room := 0, 0, 0
	for _, g := range b.groups[i+1:] {
		room += len(g.slots)
		if g.takesGPU {
			roomG += len(g.slots)
		}
		if g.takesSSD {
			roomS += len(g.slots)
		}
	}
	maxG := 0
	if gr.takesGPU {
		maxG = min(t.g, len(gr.slots))
	}
	for a := maxG; a >= 0 && t.g-a <= roomG; a-- {
		maxS := 0
		if gr.takesSSD {
			maxS = min(t.s, len(gr.slots)-a)
		}
		for c := maxS; c >= 0 && t.s-c <= roomS; c-- {
			if t.g-a+t.s-c > room {
				break
			}
			counts := append([][2]int(nil), t.counts...)
			counts[i] = [2]int{a, c}
			f(task{counts: counts, depth: i + 1, g: t.g - a, s: t.s - c})
		}
	}
}

// evaluator is one worker's flow model: a Network is not safe for
// concurrent use.
type evaluator struct {
	b     *bnb
	fe    *fastEvaluator // nil without GPUs: the compute nodes are the sockets, which the universal graph does not model
	edges [][]*slotEdges // per group, per slot
	// The bound's counts: undecided slots read their SSDs through a
	// sub-pool that carries at most what the SSDs left to place can
	// read, and feed their GPUs into a sub-sink that takes at most the
	// share of the GPUs left to place. What reaches those GPUs over
	// their links passes one edge that carries at most what the GPUs
	// left to place take in through their links. Their caches together
	// hold at most the share of the GPUs left to place: one cache pool
	// feeds every undecided slot's GPU memory, and the sub-sink
	// directly (what a GPU's own cache serves it needs no link).
	subPool, subSink int     // edges pool -> sub-pool, sub-sink -> sink
	linkCap          int     // edge GPU links -> sub-sink
	cachePool        int     // edge source -> cache pool (-1 if no cache share)
	ssdAlt, gpuAlt   [][]int // per group, per slot: sub-pool -> SSD, GPU -> GPU links (-1 if none)
	cacheAlt         [][]int // per group, per slot: cache pool -> GPU memory (-1 if none)
	// Per depth: the most one SSD moves (its read rate or its link,
	// whichever is less) and the fastest GPU link, over the undecided
	// groups.
	ssdMax, gpuLinkMax []float64
	cacheRate          float64   // one GPU's cache read rate
	rate, volume       []float64 // every edge's as built, the bound's included
}

func (b *bnb) newEvaluator() (*evaluator, error) {
	ev := &evaluator{b: b}
	if b.inv.GPUs == 0 {
		return ev, nil
	}
	fe, err := newFastEvaluator(b.m, b.inv, b.groups, b.tiers)
	if err != nil {
		return nil, err
	}
	ev.fe = fe
	n := fe.net
	ev.edges = make([][]*slotEdges, len(b.groups))
	ev.ssdAlt, ev.gpuAlt = make([][]int, len(b.groups)), make([][]int, len(b.groups))
	ev.subPool, ev.subSink, ev.cachePool = -1, -1, -1
	ev.cacheAlt = make([][]int, len(b.groups))
	ev.ssdMax, ev.gpuLinkMax = make([]float64, len(b.groups)+1), make([]float64, len(b.groups)+1)
	subPool := -1
	subSink := n.AddNode("bound:gpus-left")
	ev.subSink = n.AddCappedEdge(subSink, fe.sink, math.Inf(1), 0)
	links := n.AddNode("bound:gpu-links-left")
	ev.linkCap = n.AddEdge(links, subSink, 0)
	for i, g := range b.groups {
		for _, s := range g.slots {
			se := fe.slot[s]
			ev.edges[i] = append(ev.edges[i], se)
			alt := -1
			if se.ssdRead >= 0 {
				if subPool < 0 {
					subPool = n.AddNode("bound:ssds-left")
					ev.subPool = n.AddEdge(n.From(se.ssdRead), subPool, 0)
				}
				alt = n.AddEdge(subPool, n.To(se.ssdRead), n.Rate(se.ssdRead))
				r := n.Rate(se.ssdRead)
				if se.ssdLinks[0] >= 0 {
					r = math.Min(r, n.Rate(se.ssdLinks[0]))
				}
				ev.ssdMax[i] = math.Max(ev.ssdMax[i], r)
			}
			ev.ssdAlt[i] = append(ev.ssdAlt[i], alt)
			alt = -1
			if se.gpuSink >= 0 {
				alt = n.AddCappedEdge(n.From(se.gpuSink), links, math.Inf(1), 0)
				r := math.Inf(1) // a GPU with no link of its own: no cap
				if se.gpuLink >= 0 {
					r = n.Rate(se.gpuLink)
				}
				ev.gpuLinkMax[i] = math.Max(ev.gpuLinkMax[i], r)
			}
			ev.gpuAlt[i] = append(ev.gpuAlt[i], alt)
			alt = -1
			if se.gpuCache >= 0 {
				if ev.cachePool < 0 {
					ev.cacheRate = n.Rate(se.gpuCache)
					pool := n.AddNode("bound:caches-left")
					ev.cachePool = n.AddCappedEdge(fe.src, pool, 0, 0)
					n.AddEdge(pool, subSink, math.Inf(1))
				}
				alt = n.AddEdge(n.To(ev.cachePool), n.To(se.gpuCache), ev.cacheRate)
			}
			ev.cacheAlt[i] = append(ev.cacheAlt[i], alt)
		}
	}
	for i := len(b.groups) - 1; i >= 0; i-- {
		ev.ssdMax[i] = math.Max(ev.ssdMax[i], ev.ssdMax[i+1])
		ev.gpuLinkMax[i] = math.Max(ev.gpuLinkMax[i], ev.gpuLinkMax[i+1])
	}
	ev.rate, ev.volume = n.Rates(), n.Volumes()
	return ev, nil
}

// set switches devices on as t says: in a decided group the GPUs take the
// first slots and the SSDs the next; an undecided group holds a GPU and an
// SSD in every slot that takes one, while any are left to place.
func (ev *evaluator) set(t task) {
	fe := ev.fe
	n := fe.net
	D := fe.tiers.DemandGB
	n.SetRates(ev.rate)
	n.SetVolumes(ev.volume)
	sink := D / float64(fe.nGPU)
	cache := fe.tiers.GPUCacheShare * D / float64(fe.nGPU)
	n.SetVolume(ev.subSink, float64(t.g)*sink)
	n.SetRate(ev.linkCap, 0)
	if t.g > 0 {
		n.SetRate(ev.linkCap, float64(t.g)*ev.gpuLinkMax[t.depth])
	}
	if ev.cachePool >= 0 {
		n.SetRate(ev.cachePool, float64(t.g)*ev.cacheRate)
		n.SetVolume(ev.cachePool, float64(t.g)*cache)
	}
	if ev.subPool >= 0 {
		n.SetRate(ev.subPool, float64(t.s)*ev.ssdMax[t.depth])
	}
	for i, ses := range ev.edges {
		for k, se := range ses {
			var gpu, ssd bool
			undecided := i >= t.depth
			if !undecided {
				c := t.counts[i]
				gpu, ssd = k < c[0], k >= c[0] && k < c[0]+c[1]
			}
			if a := ev.gpuAlt[i][k]; a >= 0 {
				n.SetVolume(a, 0)
				if undecided && t.g > 0 {
					n.SetVolume(a, sink)
				}
			}
			if a := ev.cacheAlt[i][k]; a >= 0 {
				n.SetRate(a, 0)
				if undecided && t.g > 0 {
					n.SetRate(a, ev.cacheRate)
				}
			}
			if a := ev.ssdAlt[i][k]; a >= 0 {
				n.SetRate(a, 0)
				if undecided && t.s > 0 {
					n.SetRate(a, fe.base[se.ssdRead])
				}
			}
			if undecided {
				if se.gpuCache >= 0 {
					n.SetVolume(se.gpuCache, 0)
				}
				if se.gpuSink >= 0 {
					n.SetVolume(se.gpuSink, 0)
				}
				if se.ssdRead >= 0 {
					n.SetRate(se.ssdRead, 0)
				}
				continue
			}
			if se.gpuSink >= 0 {
				n.SetVolume(se.gpuSink, 0)
				if gpu {
					n.SetVolume(se.gpuSink, sink)
				}
			}
			if se.gpuCache >= 0 {
				n.SetVolume(se.gpuCache, 0)
				if gpu {
					n.SetVolume(se.gpuCache, cache)
				}
			}
			if se.ssdRead >= 0 && !ssd {
				n.SetRate(se.ssdRead, 0)
			}
		}
	}
}

// bound returns a lower bound on the time of every completion of t, or
// one at least cutoff when that is all it needs to know. lb is the
// parent's bound (0 at the root): t's relaxation is tighter than its
// parent's, so its least time is at least lb and Newton starts there.
func (ev *evaluator) bound(t task, lb, cutoff float64) (float64, error) {
	if ev.fe == nil {
		return 0, nil
	}
	ev.set(t)
	return ev.fe.net.LeastTimeFrom(ev.fe.src, ev.fe.sink, ev.fe.tiers.DemandGB, lb, cutoff)
}

// explore searches the subtree of t, whose parent's bound is lb.
func (ev *evaluator) explore(t task, lb float64) error {
	b := ev.b
	if b.stop.Load() {
		return nil
	}
	if b.maxNodes > 0 && b.nodes.Add(1) > b.maxNodes {
		// What this subtree could still reach: its own bound, tighter
		// than its parent's.
		if own, err := ev.bound(t, lb, math.Inf(1)); err == nil && t.depth > 0 {
			lb = math.Max(lb, own)
		}
		b.mu.Lock()
		b.truncated = true
		b.unexplored = math.Min(b.unexplored, lb)
		b.mu.Unlock()
		return nil
	}
	kth := b.kth.Load()
	cutoff := math.Inf(1)
	if kth != nil {
		cutoff = kth.Seconds * (1 + tieSlack)
	}
	if lb >= cutoff {
		return nil
	}
	if !b.fabric {
		// The parent's bound may already tie the best: then the walk
		// order decides, at no max flow (ties among the placements
		// recommendation shows are the norm: every SSD-bound placement
		// of a count takes the same time).
		if prune, _ := ev.tiesAtBest(t, lb, kth); prune {
			return nil
		}
	}
	if t.g == 0 && t.s == 0 {
		t.depth = len(b.groups) // the rest stay empty
	}
	if t.depth == len(b.groups) {
		return ev.leaf(t, cutoff)
	}
	own, err := ev.bound(t, lb, cutoff)
	if err != nil {
		return err
	}
	if lb = math.Max(lb, own); lb >= cutoff {
		return nil
	}
	if prune, err := ev.tiesAtBest(t, lb, kth); prune || err != nil {
		return err
	}
	b.children(t, func(c task) {
		if err == nil {
			err = ev.explore(c, lb)
		}
	})
	return err
}

// tiesAtBest reports whether every completion of t ranks after kth when
// none can beat its time (the bound lb is within the tie tolerance of it):
// then only fabric headroom (bounded from above the way the time is
// bounded from below) and the walk order can rank them, and the walk
// order of t's completions is that of its prefix.
func (ev *evaluator) tiesAtBest(t task, lb float64, kth *Candidate) (bool, error) {
	if kth == nil || lb < kth.Seconds*(1-tieSlack/20) {
		return false, nil
	}
	if ev.b.fabric && ev.fe != nil {
		ev.set(t)
		ev.unboundSSDs(t)
		fab, err := ev.fe.net.LeastTime(ev.fe.src, ev.fe.sink, ev.fe.tiers.DemandGB)
		if err != nil {
			return false, err
		}
		// fab is a lower bound on the fabric time, so D/fab bounds the
		// headroom from above.
		ub := ev.fe.tiers.DemandGB / fab
		if ub < kth.FabricGBps*(1-tieSlack/5) {
			return true, nil
		}
		if ub > kth.FabricGBps*(1+tieSlack/5) {
			return false, nil
		}
	}
	return walkAfter(t.counts[:t.depth], kth.counts[:t.depth]), nil
}

// unboundSSDs lifts the read rate and private links of every SSD that t
// switches on (set must have run for t): a completion's fabric headroom is
// at most what is left binding.
func (ev *evaluator) unboundSSDs(t task) {
	n := ev.fe.net
	if ev.subPool >= 0 && t.s > 0 {
		n.SetRate(ev.subPool, fastUnbounded*float64(t.s))
	}
	for i, ses := range ev.edges {
		for k, se := range ses {
			if a := ev.ssdAlt[i][k]; a >= 0 && i >= t.depth && t.s > 0 {
				n.SetRate(a, fastUnbounded)
			}
			on := t.s > 0
			if i < t.depth {
				c := t.counts[i]
				on = k >= c[0] && k < c[0]+c[1]
			}
			if !on || se.ssdRead < 0 && se.ssdLinks[0] < 0 {
				continue
			}
			for _, e := range [...]int{se.ssdRead, se.ssdLinks[0], se.ssdLinks[1], se.slotUp[0], se.slotUp[1]} {
				if e >= 0 {
					n.SetRate(e, fastUnbounded)
				}
			}
		}
	}
}

// walkAfter reports whether counts a come strictly after b in the search's
// walk order (per group, more GPUs first, then more SSDs).
func walkAfter(a, b [][2]int) bool {
	for i := range a {
		if a[i][0] != b[i][0] {
			return a[i][0] < b[i][0]
		}
		if a[i][1] != b[i][1] {
			return a[i][1] < b[i][1]
		}
	}
	return false
}

// leaf times a complete placement and keeps it if it ranks in the top.
func (ev *evaluator) leaf(t task, cutoff float64) error {
	b := ev.b
	key := b.canon.key(t.counts)
	sum := sha256.Sum256([]byte(key))
	var h [16]byte
	copy(h[:], sum[:])
	// Of placements with one canonical key, the first in walk order
	// represents them, whichever a worker reaches first.
	b.mu.Lock()
	first, dup := b.seen[h]
	if !dup || walkAfter(first, t.counts) {
		b.seen[h] = t.counts
	}
	b.mu.Unlock()
	if dup && !walkAfter(first, t.counts) {
		return nil
	}
	c := &Candidate{Placement: placementFor(b.groups, t.counts), key: key, counts: t.counts}
	if ev.fe == nil {
		if err := detailCandidate(b.m, b.inv, b.tiers, c, true); err != nil {
			return err
		}
	} else {
		ev.set(t)
		secs, below, err := ev.fe.net.LeastTimeBelow(ev.fe.src, ev.fe.sink, b.tiers.DemandGB, cutoff)
		if err != nil || !below {
			return err
		}
		c.Seconds, c.AggregateGBps = secs, b.tiers.DemandGB/secs
		if b.fabric {
			_, fab, err := ev.fe.times(c.Placement, true)
			if err != nil {
				return err
			}
			c.FabricGBps = b.tiers.DemandGB / fab
		}
	}
	b.keep(c)
	return nil
}

// keep adds c to the best placements (of placements with one canonical
// key, the first in walk order), dropping the worst when there are more
// than Top, and updates the pruning reference.
func (b *bnb) keep(c *Candidate) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, o := range b.best {
		if o.key == c.key {
			if walkAfter(c.counts, o.counts) {
				return
			}
			b.best[i] = c
			b.updateKth()
			return
		}
	}
	b.best = append(b.best, c)
	if b.top > 0 && len(b.best) > b.top {
		w := 0
		for i := range b.best {
			if ranksBefore(b.best[w], b.best[i]) {
				w = i
			}
		}
		b.best = append(b.best[:w], b.best[w+1:]...)
	}
	b.updateKth()
}

func (b *bnb) updateKth() {
	if b.top <= 0 || len(b.best) < b.top {
		return
	}
	w := b.best[0]
	for _, c := range b.best[1:] {
		if ranksBefore(w, c) {
			w = c
		}
	}
	b.kth.Store(w)
}

// classics finds Moment's classic placements, timing (and with detail,
// evaluating) those outside the kept ones; they get Rank 0.
func (b *bnb) classics(ranked []*Candidate, detail bool) (map[string]*Candidate, string) {
	switches := b.m.SortedKind(topology.KindSwitch)
	if len(switches) == 0 {
		return classicPlacements(b.m, b.inv, b.groups, b.tiers, b.canon, ranked)
	}
	under := map[string]string{}
	for _, g := range b.groups {
		sw := ""
		for p := b.m.Node(g.parent); p != nil; p = b.m.Node(p.Parent) {
			if p.Kind == topology.KindSwitch {
				sw = p.ID
				break
			}
		}
		for _, s := range g.slots {
			under[s] = sw
		}
	}
	have := map[string]bool{}
	for _, c := range ranked {
		have[c.key] = true
	}
	all := append([]*Candidate(nil), ranked...)
	for _, name := range ClassicNames {
		counts, ok := classicCounts(b.groups, under, switches, b.inv, name == "a" || name == "c", name == "c" || name == "d")
		if !ok {
			break // classicPlacements says why
		}
		key := b.canon.key(counts)
		if have[key] {
			continue
		}
		have[key] = true
		c := &Candidate{Placement: placementFor(b.groups, counts), key: key, counts: counts}
		if err := detailCandidate(b.m, b.inv, b.tiers, c, true); err != nil {
			return nil, fmt.Sprintf("classic placement (%s): %v", name, err)
		}
		if !detail {
			c.Eval = nil
		}
		all = append(all, c)
	}
	return classicPlacements(b.m, b.inv, b.groups, b.tiers, b.canon, all)
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

// rankCandidates sorts by epoch IO time (shorter first); times within
// 1e-9 relative are a tie, broken by more fabric headroom, then by the
// canonical key.
func rankCandidates(c []*Candidate) {
	sort.SliceStable(c, func(i, j int) bool { return ranksBefore(c[i], c[j]) })
	for i := range c {
		c[i].Rank = i + 1
	}
}

// ranksBefore is the ranking's order: a ranks before b.
func ranksBefore(a, b *Candidate) bool {
	differ := func(x, y float64) bool { return math.Abs(x-y) > 1e-9*math.Max(x, y) }
	if differ(a.Seconds, b.Seconds) {
		return a.Seconds < b.Seconds
	}
	if differ(a.FabricGBps, b.FabricGBps) {
		return a.FabricGBps > b.FabricGBps
	}
	if a.counts != nil && b.counts != nil && !slices.Equal(a.counts, b.counts) {
		return walkAfter(b.counts, a.counts)
	}
	return a.key < b.key
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
	p.sortSlots()
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
// sorted). The tree is indexed once, and the codes of subtrees without a
// free slot are computed once: a key costs one walk over the nodes above
// the free slots.
type canonicalizer struct {
	nodes  []canonNode
	roots  []int
	groups []slotGroup
	cross  string
}

type canonNode struct {
	head     string // "(kind:uplink GB/s[:memory GiB]"
	kids     []int  // children that are not free slots
	groupsAt []int  // groups of free slots under it
	static   string // the whole code when no free slot is below it, else ""
}

func newCanonicalizer(m *topology.Machine, groups []slotGroup) *canonicalizer {
	c := &canonicalizer{groups: groups}
	idx := make(map[string]int, len(m.Nodes))
	for i, n := range m.Nodes {
		idx[n.ID] = i
	}
	inGroup := map[string]bool{}
	c.nodes = make([]canonNode, len(m.Nodes))
	for gi, g := range groups {
		if p, ok := idx[g.parent]; ok {
			c.nodes[p].groupsAt = append(c.nodes[p].groupsAt, gi)
		}
		for _, s := range g.slots {
			inGroup[s] = true
		}
	}
	uplink := map[string]float64{}
	hasUp := map[string]bool{}
	for _, l := range m.Links {
		if p, ok := idx[l.To]; ok && m.Nodes[p].Parent == l.From && !hasUp[l.To] {
			uplink[l.To], hasUp[l.To] = l.GBps, true
		}
	}
	for i, n := range m.Nodes {
		var b strings.Builder
		b.WriteString("(")
		b.WriteString(string(n.Kind))
		if hasUp[n.ID] && n.Parent != "" {
			b.WriteString(":" + strconv.FormatFloat(uplink[n.ID], 'g', -1, 64))
		}
		if n.Kind == topology.KindSocket {
			b.WriteString(":" + strconv.FormatFloat(n.MemoryGiB, 'g', -1, 64))
		}
		c.nodes[i].head = b.String()
		if n.Parent == "" {
			c.roots = append(c.roots, i)
		} else if p, ok := idx[n.Parent]; ok && !inGroup[n.ID] {
			c.nodes[p].kids = append(c.nodes[p].kids, i)
		}
	}
	for _, r := range c.roots {
		c.fillStatic(r)
	}
	// Links outside the tree (inter-socket, NVLink) by kind and capacity:
	// they are the same for every placement of one machine, but they keep
	// keys of different machines apart.
	var cross []string
	for _, l := range m.Links {
		if p, ok := idx[l.To]; ok && m.Nodes[p].Parent == l.From {
			continue
		}
		cross = append(cross, string(l.Kind)+strconv.FormatFloat(l.GBps, 'g', -1, 64))
	}
	sort.Strings(cross)
	c.cross = strings.Join(cross, ",")
	return c
}

// fillStatic sets the static code of every subtree without free slots and
// reports whether i's subtree is one.
func (c *canonicalizer) fillStatic(i int) bool {
	n := &c.nodes[i]
	static := len(n.groupsAt) == 0
	for _, k := range n.kids {
		if !c.fillStatic(k) {
			static = false
		}
	}
	if static {
		n.static = c.code(i, nil)
	}
	return static
}

func (c *canonicalizer) key(counts [][2]int) string {
	roots := make([]string, 0, len(c.roots))
	for _, r := range c.roots {
		roots = append(roots, c.code(r, counts))
	}
	sort.Strings(roots)
	return strings.Join(roots, "") + "|" + c.cross
}

func (c *canonicalizer) code(i int, counts [][2]int) string {
	n := &c.nodes[i]
	if n.static != "" {
		return n.static
	}
	kids := make([]string, 0, len(n.kids)+len(n.groupsAt))
	for _, k := range n.kids {
		kids = append(kids, c.code(k, counts))
	}
	for _, gi := range n.groupsAt {
		g := c.groups[gi]
		kids = append(kids, fmt.Sprintf("[%d,%d,%v:%dg%ds%d]", g.lanes, g.gen, g.doubleWidth, len(g.slots), counts[gi][0], counts[gi][1]))
	}
	sort.Strings(kids)
	var b strings.Builder
	b.WriteString(n.head)
	for _, k := range kids {
		b.WriteString(k)
	}
	b.WriteString(")")
	return b.String()
}
