package ddak

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/gnnplan/gnnplan/maxflow/placement"
	"github.com/gnnplan/gnnplan/topology"
)

// checkLayout checks the invariants every layout must hold: each vertex in
// exactly one existing bin at a row of its own, rows 0..n-1 within each bin,
// capacities respected, stats that add up, and the hierarchy GPU > CPU >
// SSD (no vertex in a slower tier is hotter than one in a faster tier).
// With hotnessOrder, rows within each bin also follow descending hotness.
// rankKey is what the order is descending in at the least: the hotness
// below 2^16, its quantized value above (exact there too unless the order
// quantizes).
func rankKey(h uint32) uint32 {
	if h < denseLimit {
		return h
	}
	return denseLimit + uint32(quantKey(h))
}

func checkLayout(t *testing.T, l *Layout, hot []uint32, bins []Bin, hotnessOrder bool) {
	t.Helper()
	if len(l.Bin) != len(hot) || len(l.Row) != len(hot) || len(l.Stats) != len(bins) {
		t.Fatalf("layout sizes %d/%d/%d for %d vertices, %d bins", len(l.Bin), len(l.Row), len(l.Stats), len(hot), len(bins))
	}
	byBin := make([][]int, len(bins)) // row -> vertex, -1 unset
	for b := range bins {
		if l.Stats[b].Rows > usableRows(bins[b]) {
			t.Fatalf("bin %s holds %d rows, capacity %d", bins[b].ID, l.Stats[b].Rows, bins[b].CapacityRows)
		}
		byBin[b] = slices.Repeat([]int{-1}, int(l.Stats[b].Rows))
	}
	acc := make([]uint64, len(bins))
	tierMin := [3]uint32{math.MaxUint32, math.MaxUint32, math.MaxUint32}
	tierMax := [3]uint32{}
	for v, b := range l.Bin {
		if int(b) >= len(bins) {
			t.Fatalf("vertex %d in bin %d of %d", v, b, len(bins))
		}
		r := int(l.Row[v])
		if r >= len(byBin[b]) {
			t.Fatalf("vertex %d at row %d of bin %s, which has %d rows", v, r, bins[b].ID, len(byBin[b]))
		}
		if byBin[b][r] >= 0 {
			t.Fatalf("vertices %d and %d share row %d of bin %s", byBin[b][r], v, r, bins[b].ID)
		}
		byBin[b][r] = v
		acc[b] += uint64(hot[v])
		tr := tierRank(bins[b].Kind)
		tierMin[tr] = min(tierMin[tr], rankKey(hot[v]))
		tierMax[tr] = max(tierMax[tr], rankKey(hot[v]))
	}
	for b := range bins {
		if acc[b] != l.Stats[b].Accesses {
			t.Errorf("bin %s: stats say %d accesses, rows sum to %d", bins[b].ID, l.Stats[b].Accesses, acc[b])
		}
		if hotnessOrder {
			for r := 1; r < len(byBin[b]); r++ {
				if rankKey(hot[byBin[b][r]]) > rankKey(hot[byBin[b][r-1]]) {
					t.Fatalf("bin %s: row %d (hotness %d) hotter than row %d (hotness %d)", bins[b].ID, r, hot[byBin[b][r]], r-1, hot[byBin[b][r-1]])
				}
			}
		}
	}
	for tr := 1; tr < 3; tr++ {
		for up := range tr {
			if tierMax[tr] > tierMin[up] && tierMin[up] != math.MaxUint32 {
				t.Errorf("tier %d holds hotness %d, hotter than tier %d's coldest %d", tr, tierMax[tr], up, tierMin[up])
			}
		}
	}
}

func TestPlaceBothPriorities(t *testing.T) {
	cases := []struct {
		name     string
		n        int
		s        float64
		priority Priority
		pool     int
	}{
		{"sum priority, zipf 1.0", 200_000, 1.0, PrioritySum, 100},
		{"product priority, zipf 1.0", 200_000, 1.0, PriorityProduct, 100},
		{"sum priority, zipf 0.8, one vertex per step", 100_000, 0.8, PrioritySum, 1},
		{"product priority, zipf 0.8, pools of 7", 100_000, 0.8, PriorityProduct, 7},
		{"default options", 50_000, 1.0, "", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			hot := zipfHotness(tc.n, tc.s, float64(tc.n), 1)
			bins, _ := testBins(hot)
			l, err := Place(hot, bins, Options{Priority: tc.priority, Pool: tc.pool})
			if err != nil {
				t.Fatal(err)
			}
			checkLayout(t, l, hot, bins, true)
			want := tc.priority
			if want == "" {
				want = DefaultPriority
			}
			if l.Priority != want || l.Policy != PolicyDDAK {
				t.Errorf("layout says %s/%s, want ddak/%s", l.Policy, l.Priority, want)
			}
		})
	}
}

// TestDefaultPriorityIsTheCloser decides docs/architecture.md section 7's question:
// on skewed hotness the default priority lands per-bin traffic closer to
// the targets than the other.
func TestDefaultPriorityIsTheCloser(t *testing.T) {
	for _, s := range []float64{1.0, 0.8} {
		t.Run(fmt.Sprintf("zipf %.1f", s), func(t *testing.T) {
			hot := zipfHotness(1_000_000, s, 1e6, 7)
			bins, gpus := testBins(hot)
			dist := map[Priority]Evaluation{}
			for _, p := range []Priority{PriorityNeed, PrioritySum, PriorityProduct} {
				l, err := Place(hot, bins, Options{Priority: p})
				if err != nil {
					t.Fatal(err)
				}
				dist[p] = Evaluate(l, hot, bins, gpus)
				t.Logf("%-7s target distance %.5f, SSD max imbalance %.4f", p, dist[p].TargetDistance, dist[p].SSDMaxImbalance)
			}
			d := dist[DefaultPriority]
			for p, o := range dist {
				if p != DefaultPriority && d.TargetDistance >= o.TargetDistance {
					t.Errorf("default priority %s lands %.5f from the targets, %s %.5f", DefaultPriority, d.TargetDistance, p, o.TargetDistance)
				}
			}
		})
	}
}

// TestDDAKBeatsHash is the acceptance: on a skewed graph DDAK's
// per-bin traffic is closer to the targets than hash placement's, and it
// sends less traffic across the socket link on a 2-socket machine whose
// targets favor the GPUs' socket.
func TestDDAKBeatsHash(t *testing.T) {
	cases := []struct {
		name string
		n    int
		s    float64
	}{
		{"zipf 1.0, 1M vertices", 1_000_000, 1.0},
		{"zipf 0.8, 1M vertices", 1_000_000, 0.8},
		{"zipf 1.0, 100k vertices", 100_000, 1.0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			hot := zipfHotness(tc.n, tc.s, float64(tc.n), 3)
			bins, gpus := testBins(hot)
			d, err := Place(hot, bins, Options{})
			if err != nil {
				t.Fatal(err)
			}
			h, err := PlaceHash(hot, bins, 42)
			if err != nil {
				t.Fatal(err)
			}
			checkLayout(t, h, hot, bins, false)
			de, he := Evaluate(d, hot, bins, gpus), Evaluate(h, hot, bins, gpus)
			t.Logf("distance ddak %.5f hash %.5f; SSD max imbalance ddak %.4f hash %.4f (mean %.4f / %.4f); cross-socket ddak %.4f hash %.4f (%.1f%% less)",
				de.TargetDistance, he.TargetDistance, de.SSDMaxImbalance, he.SSDMaxImbalance, de.SSDMeanImbalance, he.SSDMeanImbalance,
				de.CrossSocketShare, he.CrossSocketShare, 100*(1-de.CrossSocketShare/he.CrossSocketShare))
			if de.TargetDistance >= he.TargetDistance {
				t.Errorf("DDAK lands %.5f from the targets, hash %.5f", de.TargetDistance, he.TargetDistance)
			}
			if de.SSDMaxImbalance >= he.SSDMaxImbalance {
				t.Errorf("DDAK's worst SSD gets %.4f x its target, hash's %.4f", de.SSDMaxImbalance, he.SSDMaxImbalance)
			}
			if de.CrossSocketShare >= he.CrossSocketShare {
				t.Errorf("DDAK sends %.4f of the traffic across the socket link, hash %.4f", de.CrossSocketShare, he.CrossSocketShare)
			}
			// The caches are the same for both: only the SSD tier differs.
			for b := range bins {
				if bins[b].Kind != placement.StorageSSD && d.Stats[b] != h.Stats[b] {
					t.Errorf("cache bin %s: ddak %+v, hash %+v", bins[b].ID, d.Stats[b], h.Stats[b])
				}
			}
		})
	}
}

func TestPoolSizesGiveSimilarTraffic(t *testing.T) {
	hot := zipfHotness(500_000, 1.0, 5e5, 11)
	bins, gpus := testBins(hot)
	var ev [2]Evaluation
	for i, pool := range []int{1, 100} {
		l, err := Place(hot, bins, Options{Pool: pool})
		if err != nil {
			t.Fatal(err)
		}
		ev[i] = Evaluate(l, hot, bins, gpus)
	}
	for b := range bins {
		if d := math.Abs(ev[0].Bins[b].Share - ev[1].Bins[b].Share); d > 0.002 {
			t.Errorf("bin %s: share %.5f with pool 1, %.5f with pool 100", bins[b].ID, ev[0].Bins[b].Share, ev[1].Bins[b].Share)
		}
	}
	t.Logf("target distance: pool 1 %.5f, pool 100 %.5f", ev[0].TargetDistance, ev[1].TargetDistance)
}

func TestPlaceIsDeterministic(t *testing.T) {
	// From 2^20 vertices on, spare cores fault the output in while the
	// decisions are made (prefault): with 1 and 4 Ps the layout is the same
	// and whole.
	for _, n := range []int{300_000, 2_500_000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			hot := zipfHotness(n, 0.9, float64(n), 5)
			bins, _ := testBins(hot)
			prev := runtime.GOMAXPROCS(4)
			a, err := Place(hot, bins, Options{})
			runtime.GOMAXPROCS(prev)
			if err != nil {
				t.Fatal(err)
			}
			checkLayout(t, a, hot, bins, true)
			// One worker instead of several must not change anything either.
			prev = runtime.GOMAXPROCS(1)
			b, err := Place(hot, bins, Options{})
			hb, herr := PlaceHash(hot, bins, 9)
			runtime.GOMAXPROCS(prev)
			if err != nil || herr != nil {
				t.Fatal(err, herr)
			}
			ha, err := PlaceHash(hot, bins, 9)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(a.Bin, b.Bin) || !slices.Equal(a.Row, b.Row) || !slices.Equal(a.Stats, b.Stats) {
				t.Error("DDAK gave two different layouts for the same input")
			}
			if !slices.Equal(ha.Bin, hb.Bin) || !slices.Equal(ha.Row, hb.Row) {
				t.Error("hash placement gave two different layouts for the same input and seed")
			}
		})
	}
}

func TestBinsTooSmall(t *testing.T) {
	cases := []struct {
		name    string
		n       int
		capRows int64 // per bin, 3 bins
		want    string
	}{
		{"millions", 2_000_000, 400_000, "bins hold 1.2 M rows, dataset has 2.0 M"},
		{"small counts are exact", 1000, 300, "bins hold 900 rows, dataset has 1000"},
		{"equal when rounded: exact", 1_000_050, 333_340, "bins hold 1000020 rows, dataset has 1000050"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			hot := make([]uint32, tc.n)
			bins := []Bin{
				{ID: "gpu0", Kind: placement.StorageGPUMem, CapacityRows: tc.capRows, TargetShare: 0.5},
				{ID: "socket0", Kind: placement.StorageHostMem, CapacityRows: tc.capRows, TargetShare: 0.2},
				{ID: "nvme0", Kind: placement.StorageSSD, CapacityRows: tc.capRows, TargetShare: 0.3},
			}
			for name, place := range map[string]func() error{
				"ddak": func() error { _, err := Place(hot, bins, Options{}); return err },
				"hash": func() error { _, err := PlaceHash(hot, bins, 1); return err },
			} {
				err := place()
				var ie *topology.InputError
				if !errors.As(err, &ie) || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("%s: error %v, want an InputError saying %q", name, err, tc.want)
				}
			}
		})
	}
}

func TestBadOptionsAndBins(t *testing.T) {
	hot := []uint32{3, 2, 1}
	ok := []Bin{{ID: "nvme0", Kind: placement.StorageSSD, CapacityRows: 10, TargetShare: 1}}
	cases := []struct {
		name string
		bins []Bin
		opt  Options
		want string
	}{
		{"unknown priority", ok, Options{Priority: "max"}, "priority"},
		{"negative pool", ok, Options{Pool: -1}, "pool"},
		{"no bins", nil, Options{}, "no bins"},
		{"unknown kind", []Bin{{ID: "x", Kind: "tape", CapacityRows: 10}}, Options{}, "kind"},
		{"negative capacity", []Bin{{ID: "x", Kind: placement.StorageSSD, CapacityRows: -1}}, Options{}, "capacity_rows"},
		{"NaN target", []Bin{{ID: "x", Kind: placement.StorageSSD, CapacityRows: 10, TargetShare: math.NaN()}}, Options{}, "target_share"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Place(hot, tc.bins, tc.opt)
			if !topology.IsBadInput(err) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want a bad-input error naming %q", err, tc.want)
			}
		})
	}
}

// TestZeroTargetBinIsOverflow: a bin the flow gives nothing takes rows only
// once the other bins of its tier are full.
func TestZeroTargetBinIsOverflow(t *testing.T) {
	hot := zipfHotness(10_000, 1, 1e4, 2)
	for _, p := range []Priority{PrioritySum, PriorityProduct} {
		bins := []Bin{
			{ID: "nvme0", Kind: placement.StorageSSD, CapacityRows: 6000, TargetShare: 0.6},
			{ID: "nvme1", Kind: placement.StorageSSD, CapacityRows: 3000, TargetShare: 0.4},
			{ID: "nvme2", Kind: placement.StorageSSD, CapacityRows: 5000, TargetShare: 0},
		}
		l, err := Place(hot, bins, Options{Priority: p})
		if err != nil {
			t.Fatal(err)
		}
		checkLayout(t, l, hot, bins, true)
		if l.Stats[2].Rows != 10_000-l.Stats[0].Rows-l.Stats[1].Rows || l.Stats[1].Rows+l.Stats[0].Rows != 9000 && l.Stats[2].Rows > 0 {
			t.Errorf("%s: rows %v: the zero-target bin took rows before the others were full", p, l.Stats)
		}
	}
}

func TestEvaluateCrossSocket(t *testing.T) {
	// One vertex per bin, each read 100 times: a bin on socket 0 read by
	// 2 GPUs on socket 0 and 2 on socket 1 sends half of its reads across.
	hot := []uint32{100, 100, 100, 100}
	bins := []Bin{
		{ID: "gpu0", Kind: placement.StorageGPUMem, Socket: 0, CapacityRows: 1, TargetShare: 0.25},
		{ID: "socket1", Kind: placement.StorageHostMem, Socket: 1, CapacityRows: 1, TargetShare: 0.25},
		{ID: "nvme0", Kind: placement.StorageSSD, Socket: 0, CapacityRows: 1, TargetShare: 0.25},
		{ID: "nvme1", Kind: placement.StorageSSD, Socket: -1, CapacityRows: 1, TargetShare: 0.25},
	}
	l := &Layout{Bin: []uint8{0, 1, 2, 3}, Row: make([]uint32, 4), Stats: []BinStats{{Rows: 1, Accesses: 100}, {Rows: 1, Accesses: 100}, {Rows: 1, Accesses: 100}, {Rows: 1, Accesses: 100}}}
	cases := []struct {
		name  string
		gpus  []int
		cross float64
	}{
		{"2 GPUs per socket: half of each host-side bin crosses, GPU caches and unknown sockets never", []int{0, 0, 1, 1}, 0.25*0.5 + 0.25*0.5},
		{"all GPUs on socket 0: only socket 1's bin crosses", []int{0, 0, 0, 0}, 0.25},
		{"no GPUs listed: nothing to cross", nil, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ev := Evaluate(l, hot, bins, tc.gpus)
			if math.Abs(ev.CrossSocketShare-tc.cross) > 1e-12 || ev.TargetDistance > 1e-12 {
				t.Errorf("cross-socket %.4f (want %.4f), distance %.4f (want 0)", ev.CrossSocketShare, tc.cross, ev.TargetDistance)
			}
		})
	}
}

func TestHashWithoutCaches(t *testing.T) {
	hot := zipfHotness(20_000, 1, 2e4, 8)
	bins := []Bin{
		{ID: "nvme0", Kind: placement.StorageSSD, CapacityRows: 12_000, TargetShare: 0.5},
		{ID: "nvme1", Kind: placement.StorageSSD, CapacityRows: 9_000, TargetShare: 0.5},
	}
	l, err := PlaceHash(hot, bins, 3)
	if err != nil {
		t.Fatal(err)
	}
	checkLayout(t, l, hot, bins, false)
	// Half the rows hash to each SSD; the smaller one fills up and spills.
	if l.Stats[1].Rows != 9_000 || l.Stats[0].Rows != 11_000 {
		t.Errorf("rows per SSD %d, %d: want 11000 and a full 9000", l.Stats[0].Rows, l.Stats[1].Rows)
	}
}

// TestStatesWalkTheRuns: a bucket's state hands out each run's rows in
// order and moves to the next run when one is used up, including a run
// longer than a state counts at once (stateLeftMax), which it takes in
// parts, and a worker that starts in the middle of a run.
func TestStatesWalkTheRuns(t *testing.T) {
	long := int64(stateLeftMax) + 5
	rs := runs{
		{start: 0, row: 7, bin: 3},
		{start: long, row: 0, bin: 5},
		{start: long + 10, row: 100, bin: 3},
		{start: math.MaxInt64},
	}
	want := func(p int64) (uint8, uint32) {
		switch {
		case p < long:
			return 3, uint32(7 + p)
		case p < long+10:
			return 5, uint32(p - long)
		default:
			return 3, uint32(100 + p - long - 10)
		}
	}
	for _, from := range []int64{0, 3, long - 1, long + 9} {
		st, at := startStates(rs, []int64{from})
		for p := from; p < long+20; p++ {
			b, w := next(rs, st, at, 0)
			if wb, ww := want(p); b != wb || w != ww {
				t.Fatalf("from %d: position %d got bin %d row %d, want bin %d row %d", from, p, b, w, wb, ww)
			}
		}
	}
}
