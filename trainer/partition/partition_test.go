package partition

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gnnplan/gnnplan/trainer/dataset"
	"github.com/gnnplan/gnnplan/trainer/internal/testcora/coraset"
)

// communities is a graph of k cliques of size s joined in a ring by one
// edge each, its vertices numbered across the cliques so that the stream
// order does not give them away; the first half of each clique is
// training, labelled by its position.
func communities(k, s int) *dataset.Graph {
	n := k * s
	id := func(c, i int) int64 { return int64(i*k + c) } // interleaved
	adj := make([][]int64, n)
	link := func(a, b int64) { adj[a] = append(adj[a], b); adj[b] = append(adj[b], a) }
	for c := range k {
		for i := range s {
			for j := i + 1; j < s; j++ {
				link(id(c, i), id(c, j))
			}
		}
		link(id(c, 0), id((c+1)%k, 1))
	}
	g := &dataset.Graph{Indptr: []int64{0}, Labels: make([]int64, n)}
	for v := range n {
		slices.Sort(adj[v])
		g.Indices = append(g.Indices, make([]int32, len(adj[v]))...)
		for j, u := range adj[v] {
			g.Indices[len(g.Indices)-len(adj[v])+j] = int32(u)
		}
		g.Indptr = append(g.Indptr, int64(len(g.Indices)))
	}
	for c := range k {
		for i := range s / 2 {
			v := id(c, i)
			g.Train = append(g.Train, v)
			g.Labels[v] = int64(i % 2)
		}
	}
	g.Meta.NumNodes = int64(n)
	return g
}

func TestPartitionFindsCommunities(t *testing.T) {
	g := communities(4, 20)
	r, err := Partition(context.Background(), g, Options{Parts: 4, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	// 4 ring edges of 4*190+4 undirected edges cross at best.
	if r.EdgeCut > 0.02 {
		t.Errorf("edge cut %.3f, want the 4 ring edges' %.3f (random: %.3f)", r.EdgeCut, 4.0/764, r.RandomEdgeCut)
	}
	if r.RandomEdgeCut < 0.6 {
		t.Errorf("random edge cut %.3f, want about 3/4", r.RandomEdgeCut)
	}
	for p, n := range r.Sizes {
		if n != 20 {
			t.Errorf("part %d holds %d vertices, want 20", p, n)
		}
	}
}

// TestPartitionCora checks the real graph: a cut well below random, parts
// within their size bound, every class's training vertices spread evenly,
// and the same result for the same seed.
func TestPartitionCora(t *testing.T) {
	g, err := dataset.LoadGraph(coraset.Dir(t))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	for _, k := range []int{2, 8} {
		r, err := Partition(context.Background(), g, Options{Parts: k, Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("k=%d: edge cut %.3f (random %.3f), sizes %v, training %v, label imbalance %.2f", k, r.EdgeCut, r.RandomEdgeCut, r.Sizes, r.TrainSizes, r.LabelImbalance)
		if r.EdgeCut > r.RandomEdgeCut/2 {
			t.Errorf("k=%d: edge cut %.3f, random %.3f: want under half", k, r.EdgeCut, r.RandomEdgeCut)
		}
		bound := int(1.1*float64(g.Meta.NumNodes)/float64(k)) + 1
		for p, n := range r.Sizes {
			if n > bound {
				t.Errorf("k=%d: part %d holds %d vertices, bound %d", k, p, n, bound)
			}
		}
		if r.LabelImbalance > 1.1+float64(k)*7/140+0.01 { // a class's share plus one vertex
			t.Errorf("k=%d: label imbalance %.2f", k, r.LabelImbalance)
		}
		again, _ := Partition(context.Background(), g, Options{Parts: k, Seed: 3})
		if !slices.Equal(again.Part, r.Part) {
			t.Errorf("k=%d: a second run differs", k)
		}
	}
}

func TestPartitionRejects(t *testing.T) {
	g := communities(2, 4)
	if _, err := Partition(context.Background(), g, Options{Parts: 0}); err == nil {
		t.Error("0 parts: no error")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Partition(ctx, g, Options{Parts: 2}); err == nil {
		t.Error("canceled: no error")
	}
}

// TestSaveLoad keeps a partition for the next run of the same graph and
// refuses it for another.
func TestSaveLoad(t *testing.T) {
	g := communities(3, 6)
	r, err := Partition(context.Background(), g, Options{Parts: 3, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := Save(dir, g, r, 2); err != nil {
		t.Fatal(err)
	}
	got, ok, err := Load(dir, g, 3, 2)
	if err != nil || !ok || !slices.Equal(got.Part, r.Part) || got.EdgeCut != r.EdgeCut {
		t.Fatalf("Load: %v, %v, %v", got, ok, err)
	}
	if _, ok, _ := Load(dir, g, 2, 2); ok {
		t.Error("loaded a partition into 3 parts for 2")
	}
	other := communities(3, 7)
	if _, ok, _ := Load(dir, other, 3, 2); ok {
		t.Error("loaded a partition of another graph")
	}
}

// TestHalos checks a part's halo on Cora cut into 8 parts: vertices
// outside the part, each adjacent to some of its training vertices, the
// most adjacent ones kept (ties to the lower id), at most the fraction of
// the part's size, none skipped; a fraction of 0 keeps none, and a
// negative one is refused naming the flag.
func TestHalos(t *testing.T) {
	g, err := dataset.LoadGraph(coraset.Dir(t))
	if err != nil {
		t.Fatal(err)
	}
	n := len(g.Indptr) - 1
	r, err := Partition(context.Background(), g, Options{Parts: 8, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	skip := func(v int32) bool { return v%10 == 0 }
	for _, tc := range []struct {
		fraction float64
		skip     func(int32) bool
	}{{0, nil}, {0.01, nil}, {0.05, skip}, {10, nil}} {
		halos, err := Halos(context.Background(), g, r.Part, 8, tc.fraction, tc.skip)
		if err != nil {
			t.Fatal(err)
		}
		for p, h := range halos {
			// count[v]: p's training vertices adjacent to v, outside p.
			count := make([]int, n)
			for _, v := range g.Train {
				if r.Part[v] != int32(p) {
					continue
				}
				for _, u := range g.Neighbors(v) {
					if r.Part[u] != int32(p) && (tc.skip == nil || !tc.skip(u)) {
						count[u]++
					}
				}
			}
			candidates := 0
			for _, c := range count {
				if c > 0 {
					candidates++
				}
			}
			limit := int(math.Ceil(tc.fraction * float64(r.Sizes[p])))
			if len(h) != min(limit, candidates) || !slices.IsSorted(h) {
				t.Fatalf("fraction %g, part %d: %d halo vertices (sorted %v), want min(%d, %d candidates)", tc.fraction, p, len(h), slices.IsSorted(h), limit, candidates)
			}
			kept := make([]bool, n)
			least := math.MaxInt
			for _, v := range h {
				if count[v] == 0 {
					t.Fatalf("fraction %g, part %d: halo vertex %d (part %d) is no neighbour of its training vertices outside it, or skipped", tc.fraction, p, v, r.Part[v])
				}
				kept[v] = true
				least = min(least, count[v])
			}
			for v, c := range count {
				if !kept[v] && c > least {
					t.Fatalf("fraction %g, part %d: vertex %d adjacent to %d training vertices left out, one adjacent to %d kept", tc.fraction, p, v, c, least)
				}
			}
		}
	}
	for _, f := range []float64{-0.5, math.NaN(), math.Inf(1)} {
		if _, err := Halos(context.Background(), g, r.Part, 8, f, nil); err == nil || !strings.Contains(err.Error(), "halo-fraction") {
			t.Errorf("fraction %g: %v, want an error naming halo-fraction", f, err)
		}
	}
}

// TestKept: the share of a training vertex's sampled neighbourhood its
// macro-batch holds. Six vertices in three parts of two; training vertices
// 0 (part 0, neighbours 1, 2, 4) and 2 (part 1, neighbours 0, 3, 5): each
// has one neighbour in its part and one in each other part; 1 and 4 have
// the one neighbour 0, 3 and 5 the one neighbour 2.
func TestKept(t *testing.T) {
	g := &dataset.Graph{Indptr: []int64{0, 3, 4, 7, 8, 9, 10}, Indices: []int32{1, 2, 4, 0, 0, 3, 5, 2, 0, 2}, Train: []int64{0, 2}}
	g.Meta.NumNodes = 6
	part := []int32{0, 0, 1, 1, 2, 2}
	for _, tc := range []struct {
		name        string
		macro, hops int
		hub         func(int32) bool
		halos       [][]int32
		want        float64
	}{
		{"a part a macro-batch", 1, 1, nil, nil, 1.0 / 3},
		{"every part in the macro-batch", 3, 1, nil, nil, 1},
		{"every part, two hops", 3, 2, nil, nil, 1},
		{"two of three parts: another part's neighbour half the time", 2, 1, nil, nil, 2.0 / 3},
		{"vertex 4 a hub", 1, 1, func(v int32) bool { return v == 4 }, nil, (2.0/3 + 1.0/3) / 2},
		{"halos 2 and 5", 1, 1, nil, [][]int32{{2}, {5}, nil}, 2.0 / 3},
		// Two hops: through 1 and 4 every path of vertex 0 is in part
		// 0, through 2 a third; 2's paths through 3 and 5 stay.
		{"a part a macro-batch, two hops", 1, 2, nil, nil, 1.0 / 3},
		// Vertex 0's halo 2 holds its own neighbour 0 only: 4/9 of 0's
		// paths; vertex 2's halo 5 leads back to 2: 2/3.
		{"halos 2 and 5, two hops", 1, 2, nil, [][]int32{{2}, {5}, nil}, (4.0/9 + 2.0/3) / 2},
	} {
		got, err := Kept(g, part, 3, tc.macro, tc.hops, tc.hub, tc.halos)
		if err != nil || math.Abs(got-tc.want) > 1e-6 {
			t.Errorf("%s: kept %v (err %v), want %v", tc.name, got, err, tc.want)
		}
	}
	for _, bad := range []struct {
		macro, hops int
		halos       [][]int32
	}{{4, 1, nil}, {1, 0, nil}, {1, 1, [][]int32{{2}}}} {
		if _, err := Kept(g, part, 3, bad.macro, bad.hops, nil, bad.halos); err == nil {
			t.Errorf("%d parts a macro-batch of 3, %d hops, halos for %d parts: no error", bad.macro, bad.hops, len(bad.halos))
		}
	}
}
