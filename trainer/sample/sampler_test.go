package sample

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gnnplan/gnnplan/internal/inputerr"
	"github.com/gnnplan/gnnplan/trainer/dataset"
)

// graphOfAdj builds a Graph from adjacency lists, neighbors in the order given.
func graphOfAdj(adj [][]int32, train []int64) *dataset.Graph {
	g := &dataset.Graph{Indptr: make([]int64, len(adj)+1), Train: train}
	for v, nb := range adj {
		g.Indptr[v+1] = g.Indptr[v] + int64(len(nb))
		g.Indices = append(g.Indices, nb...)
	}
	g.Meta.NumNodes, g.Meta.NumEdges = int64(len(adj)), int64(len(g.Indices))
	return g
}

// randomTestGraph makes a graph of n vertices with the degrees a sampler must
// handle: isolated vertices, degrees below, at and just above a fanout, a
// hub far above it, self-loops and repeated neighbors (a multigraph).
// About half the vertices are training seeds.
func randomTestGraph(r *rand.Rand, n int) *dataset.Graph {
	adj := make([][]int32, n)
	for v := range adj {
		var deg int
		switch x := r.IntN(10); {
		case x == 0:
			deg = 0
		case x < 5:
			deg = 1 + r.IntN(5)
		case x < 8:
			deg = 8 + r.IntN(20)
		default:
			deg = r.IntN(3 * n)
		}
		for range deg {
			adj[v] = append(adj[v], int32(r.IntN(n)))
		}
	}
	hub := r.IntN(n)
	for range 150 + r.IntN(100) {
		adj[hub] = append(adj[hub], int32(r.IntN(n)))
	}
	var train []int64
	for _, v := range r.Perm(n) {
		if r.IntN(2) == 0 {
			train = append(train, int64(v))
		}
	}
	if len(train) == 0 {
		train = []int64{int64(hub)}
	}
	return graphOfAdj(adj, train)
}

// checkBatch checks the block invariants of mb against g's CSR, which is
// the oracle for "every sampled neighbor is a real one".
func checkBatch(g *dataset.Graph, fanouts []int, seeds []int32, mb *MiniBatch) error {
	if !slices.Equal(mb.Seeds, seeds) {
		return fmt.Errorf("seeds %v, want %v", mb.Seeds, seeds)
	}
	if len(mb.Blocks) != len(fanouts) {
		return fmt.Errorf("%d blocks for %d fanouts", len(mb.Blocks), len(fanouts))
	}
	prev := mb.Seeds
	for h, b := range mb.Blocks {
		k := fanouts[h]
		if !slices.Equal(b.Dst, prev) {
			return fmt.Errorf("hop %d: Dst is not the previous hop's Src", h+1)
		}
		if len(b.Src) < len(b.Dst) || !slices.Equal(b.Src[:len(b.Dst)], b.Dst) {
			return fmt.Errorf("hop %d: Src does not start with Dst", h+1)
		}
		seen := map[int32]bool{}
		for _, v := range b.Src {
			if seen[v] {
				return fmt.Errorf("hop %d: vertex %d twice in Src", h+1, v)
			}
			seen[v] = true
		}
		if len(b.Offsets) != len(b.Dst)+1 || b.Offsets[0] != 0 || int(b.Offsets[len(b.Dst)]) != len(b.SrcIdx) {
			return fmt.Errorf("hop %d: offsets %d long from %d to %d for %d dst and %d edges", h+1, len(b.Offsets), b.Offsets[0], b.Offsets[len(b.Offsets)-1], len(b.Dst), len(b.SrcIdx))
		}
		used := make([]bool, len(b.Src))
		for i, v := range b.Dst {
			lo, hi := b.Offsets[i], b.Offsets[i+1]
			if hi < lo {
				return fmt.Errorf("hop %d: offsets decrease at %d", h+1, i)
			}
			nbrs := g.Neighbors(int64(v))
			want := min(len(nbrs), k)
			if k == AllNeighbors {
				want = len(nbrs)
			}
			if int(hi-lo) != want {
				return fmt.Errorf("hop %d: vertex %d (degree %d) got %d neighbors, want %d", h+1, v, len(nbrs), hi-lo, want)
			}
			// Multiset check: a neighbor may come back only as often as
			// it is listed (repeated edges), which is "no position drawn
			// twice" seen from outside.
			left := map[int32]int{}
			for _, u := range nbrs {
				left[u]++
			}
			for _, li := range b.SrcIdx[lo:hi] {
				if li < 0 || int(li) >= len(b.Src) {
					return fmt.Errorf("hop %d: local index %d out of [0, %d)", h+1, li, len(b.Src))
				}
				used[li] = true
				u := b.Src[li]
				if left[u] == 0 {
					return fmt.Errorf("hop %d: vertex %d sampled %d, not a neighbor or drawn more often than listed", h+1, v, u)
				}
				left[u]--
			}
		}
		for i := len(b.Dst); i < len(b.Src); i++ {
			if !used[i] {
				return fmt.Errorf("hop %d: Src vertex %d reached by no edge", h+1, b.Src[i])
			}
		}
		prev = b.Src
	}
	if !slices.Equal(mb.Input(), prev) {
		return fmt.Errorf("Input is not the outermost Src")
	}
	return nil
}

func TestSamplerProperties(t *testing.T) {
	fanoutSets := [][]int{{25, 10}, {1}, {3, 3, 3}, {70, 5}, {130}, {-1, 4}, {4, -1}}
	for trial := range 200 {
		r := rand.New(rand.NewPCG(uint64(trial), 7))
		g := randomTestGraph(r, 1+r.IntN(80))
		opt := SamplerOptions{
			Fanouts:   fanoutSets[trial%len(fanoutSets)],
			BatchSize: 1 + r.IntN(12),
			Seed:      r.Uint64(),
			Workers:   1 + r.IntN(3),
			Shuffle:   trial%3 != 0,
		}
		s, err := NewSampler(g, opt)
		if err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		for epoch := range 2 {
			var covered []int64
			err := s.Epoch(context.Background(), epoch, func(mb *MiniBatch) error {
				want := s.order(epoch)[mb.Index*opt.BatchSize : min((mb.Index+1)*opt.BatchSize, len(g.Train))]
				if err := checkBatch(g, opt.Fanouts, want, mb); err != nil {
					return fmt.Errorf("epoch %d batch %d: %w", epoch, mb.Index, err)
				}
				for _, v := range mb.Seeds {
					covered = append(covered, int64(v))
				}
				return nil
			})
			if err != nil {
				t.Fatalf("trial %d (%d vertices, %+v): %v", trial, len(g.Indptr)-1, opt, err)
			}
			slices.Sort(covered)
			train := slices.Sorted(slices.Values(g.Train))
			if !slices.Equal(covered, train) {
				t.Fatalf("trial %d epoch %d: batches cover %v, want every seed once: %v", trial, epoch, covered, train)
			}
		}
	}
}

// hopsFrom returns the vertices within hops steps of seeds along CSR
// edges, sorted: the oracle for a batch sampled with every neighbor.
func hopsFrom(g *dataset.Graph, seeds []int32, hops int) []int32 {
	seen := map[int32]bool{}
	frontier := slices.Clone(seeds)
	for _, v := range seeds {
		seen[v] = true
	}
	for range hops {
		var next []int32
		for _, v := range frontier {
			for _, u := range g.Neighbors(int64(v)) {
				if !seen[u] {
					seen[u] = true
					next = append(next, u)
				}
			}
		}
		frontier = next
	}
	out := make([]int32, 0, len(seen))
	for v := range seen {
		out = append(out, v)
	}
	slices.Sort(out)
	return out
}

func TestSamplerAllNeighbors(t *testing.T) {
	small := graphOfAdj([][]int32{{1, 2, 2}, {0, 3}, {0, 0, 2}, {}, {3}}, []int64{0, 4})
	for _, tc := range []struct {
		name      string
		g         *dataset.Graph
		fanouts   []int
		batchSize int
	}{
		{"every neighbor at both hops, multigraph with self-loop", small, []int{-1, -1}, 1},
		{"every neighbor at both hops, one full batch", small, []int{-1, -1}, 2},
		{"every neighbor at both hops, random graph with a hub", randomTestGraph(rand.New(rand.NewPCG(5, 6)), 60), []int{-1, -1}, 4},
		{"every neighbor then 5", randomTestGraph(rand.New(rand.NewPCG(7, 8)), 60), []int{-1, 5}, 4},
		{"5 then every neighbor", randomTestGraph(rand.New(rand.NewPCG(9, 10)), 60), []int{5, -1}, 4},
		{"three hops of every neighbor, full batch", randomTestGraph(rand.New(rand.NewPCG(11, 12)), 40), []int{-1, -1, -1}, 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := tc.g
			// whole: no hop draws at random, every one takes all neighbors.
			whole := !slices.ContainsFunc(tc.fanouts, func(f int) bool { return f != AllNeighbors })
			opt := func(seed uint64, workers int, shuffle bool) SamplerOptions {
				return SamplerOptions{Fanouts: tc.fanouts, BatchSize: tc.batchSize, Seed: seed, Workers: workers, Shuffle: shuffle}
			}
			epochOf := func(o SamplerOptions, epoch int) []*MiniBatch {
				t.Helper()
				s, err := NewSampler(g, o)
				if err != nil {
					t.Fatal(err)
				}
				var out []*MiniBatch
				err = s.Epoch(context.Background(), epoch, func(mb *MiniBatch) error {
					want := s.order(epoch)[mb.Index*tc.batchSize : min((mb.Index+1)*tc.batchSize, len(g.Train))]
					if err := checkBatch(g, tc.fanouts, want, mb); err != nil {
						return fmt.Errorf("batch %d: %w", mb.Index, err)
					}
					out = append(out, mb)
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				return out
			}

			batches := epochOf(opt(3, 1, true), 2)
			for _, mb := range batches {
				// Every neighbor list of every Dst is the CSR list, as a
				// multiset (repeated edges and self-loops included).
				for h, b := range mb.Blocks {
					if tc.fanouts[h] != AllNeighbors {
						continue
					}
					for i, v := range b.Dst {
						var got []int32
						for _, li := range b.SrcIdx[b.Offsets[i]:b.Offsets[i+1]] {
							got = append(got, b.Src[li])
						}
						slices.Sort(got)
						want := slices.Sorted(slices.Values(g.Neighbors(int64(v))))
						if !slices.Equal(got, want) {
							t.Fatalf("batch %d hop %d: vertex %d has neighbors %v, CSR lists %v", mb.Index, h+1, v, got, want)
						}
					}
				}
				// With every hop whole, the input is exactly the seeds'
				// L-hop neighborhood.
				if whole {
					got := slices.Sorted(slices.Values(mb.Input()))
					if want := hopsFrom(g, mb.Seeds, len(tc.fanouts)); !slices.Equal(got, want) {
						t.Fatalf("batch %d: input %v, want the %d-hop neighborhood %v", mb.Index, got, len(tc.fanouts), want)
					}
				}
			}

			if again := epochOf(opt(3, 4, true), 2); !reflect.DeepEqual(again, batches) {
				t.Fatal("batches differ between 1 and 4 workers")
			}
			s, err := NewSampler(g, opt(3, 2, true))
			if err != nil {
				t.Fatal(err)
			}
			for i, want := range batches {
				if got := s.Sample(2, i); !reflect.DeepEqual(got, want) {
					t.Fatalf("Sample(2, %d) differs from Epoch's batch", i)
				}
			}
			if whole {
				// No hop draws at random, so without a shuffle the seed
				// changes nothing.
				if a, b := epochOf(opt(3, 2, false), 0), epochOf(opt(4, 2, false), 0); !reflect.DeepEqual(a, b) {
					t.Fatal("seeds 3 and 4 give different batches though no hop draws")
				}
			}
		})
	}
}

func TestSamplerDrawsUniformly(t *testing.T) {
	// Vertex 0's neighbors are 1..deg; every k-subset of them must be
	// equally likely. Each case exercises one path of choose: Floyd with
	// a scan, Floyd with a set, and drawing the left-out positions.
	for _, tc := range []struct {
		name    string
		deg, k  int
		subsets bool // also check each k-subset's frequency (small cases)
	}{
		{"few of many by Floyd", 5, 2, true},
		{"most of few by leaving some out", 5, 4, true},
		{"k just below degree", 26, 25, false},
		{"large fanout uses a set", 200, 70, false},
		{"large left-out draw uses a set", 200, 130, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := starSampler(t, tc.deg, tc.k)
			const draws = 20000
			freq := make([]int, tc.deg+1)
			subsets := map[string]int{}
			for e := range draws {
				tally(s.Sample(e, 0).Blocks[0], freq, subsets)
			}
			all := make([]int32, tc.deg)
			for i := range all {
				all[i] = int32(i + 1)
			}
			checkUniform(t, draws, tc.k, all, freq, subsets, tc.subsets)
		})
	}
}

// starSampler samples k neighbours of vertex 0, whose neighbours are
// the leaves 1 to deg, one batch of it an epoch.
func starSampler(t *testing.T, deg, k int) *Sampler {
	t.Helper()
	adj := [][]int32{make([]int32, deg)}
	for i := range deg {
		adj[0][i] = int32(i + 1)
		adj = append(adj, nil)
	}
	s, err := NewSampler(graphOfAdj(adj, []int64{0}), SamplerOptions{Fanouts: []int{k}, BatchSize: 1, Seed: 42})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// tally counts the vertices block b drew in freq and the set of them in
// subsets (by its sorted vertices printed), and returns how many it drew.
func tally(b Block, freq []int, subsets map[string]int) int {
	var got []int32
	for _, li := range b.SrcIdx {
		freq[b.Src[li]]++
		got = append(got, b.Src[li])
	}
	slices.Sort(got)
	subsets[fmt.Sprint(got)]++
	return len(got)
}

// checkUniform fails t unless draws draws of k of from drew each of from
// equally often (freq, by vertex) and, with bySubset, each k-subset
// (subsets, by its sorted vertices printed), within 5 standard
// deviations.
func checkUniform(t *testing.T, draws, k int, from []int32, freq []int, subsets map[string]int, bySubset bool) {
	t.Helper()
	p := float64(k) / float64(len(from))
	want := float64(draws) * p
	sd := math.Sqrt(want * (1 - p))
	for _, u := range from {
		if d := math.Abs(float64(freq[u]) - want); d > 5*sd+1 {
			t.Errorf("neighbor %d drawn %d times, want %.0f +- %.0f", u, freq[u], want, 5*sd)
		}
	}
	if !bySubset {
		return
	}
	n := binomialCoef(len(from), k)
	if len(subsets) != n {
		t.Fatalf("%d distinct subsets drawn, want all %d", len(subsets), n)
	}
	want = float64(draws) / float64(n)
	sd = math.Sqrt(want * (1 - 1/float64(n)))
	for set, c := range subsets {
		if math.Abs(float64(c)-want) > 5*sd {
			t.Errorf("subset %s drawn %d times, want %.0f +- %.0f", set, c, want, 5*sd)
		}
	}
}

func binomialCoef(n, k int) int {
	c := 1
	for i := range k {
		c = c * (n - i) / (i + 1)
	}
	return c
}

func TestSamplerDeterminism(t *testing.T) {
	g := randomTestGraph(rand.New(rand.NewPCG(1, 2)), 300)
	opts := func(seed uint64, workers int) SamplerOptions {
		return SamplerOptions{Fanouts: []int{5, 3}, BatchSize: 7, Seed: seed, Workers: workers, Shuffle: true}
	}
	epochOf := func(t *testing.T, opt SamplerOptions, epoch int) []*MiniBatch {
		t.Helper()
		s, err := NewSampler(g, opt)
		if err != nil {
			t.Fatal(err)
		}
		var out []*MiniBatch
		if err := s.Epoch(context.Background(), epoch, func(mb *MiniBatch) error { out = append(out, mb); return nil }); err != nil {
			t.Fatal(err)
		}
		return out
	}

	t.Run("same seed, 1 or 4 workers, same batches", func(t *testing.T) {
		a, b := epochOf(t, opts(9, 1), 3), epochOf(t, opts(9, 4), 3)
		if !reflect.DeepEqual(a, b) {
			t.Fatal("batches differ between 1 and 4 workers")
		}
	})
	t.Run("Sample in reverse order and concurrently matches Epoch", func(t *testing.T) {
		want := epochOf(t, opts(9, 4), 3)
		s, _ := NewSampler(g, opts(9, 2))
		// Touch other epochs first so the permutation cache turns over.
		for e := range 2 * keptOrders {
			s.Sample(100+e, 0)
		}
		got := make([]*MiniBatch, len(want))
		done := make(chan struct{})
		for i := len(want) - 1; i >= 0; i-- {
			go func() { got[i] = s.Sample(3, i); done <- struct{}{} }()
		}
		for range want {
			<-done
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatal("Sample differs from Epoch's batches")
		}
	})
	t.Run("different seed, different batches", func(t *testing.T) {
		if reflect.DeepEqual(epochOf(t, opts(9, 2), 3), epochOf(t, opts(10, 2), 3)) {
			t.Fatal("seeds 9 and 10 sample the same epoch")
		}
	})
	t.Run("different epoch, different shuffle", func(t *testing.T) {
		a, b := epochOf(t, opts(9, 2), 0), epochOf(t, opts(9, 2), 1)
		if slices.Equal(a[0].Seeds, b[0].Seeds) {
			t.Fatal("epochs 0 and 1 start with the same seeds")
		}
	})
	t.Run("no shuffle takes seeds in order", func(t *testing.T) {
		o := opts(9, 2)
		o.Shuffle = false
		mb := epochOf(t, o, 5)[1]
		for i, v := range mb.Seeds {
			if int64(v) != g.Train[7+i] {
				t.Fatalf("batch 1 seeds %v, want train[7:14] %v", mb.Seeds, g.Train[7:14])
			}
		}
	})
}

func TestSamplerEpochOrderAndStop(t *testing.T) {
	g := randomTestGraph(rand.New(rand.NewPCG(3, 4)), 400)
	s, err := NewSampler(g, SamplerOptions{Fanouts: []int{4, 4}, BatchSize: 3, Seed: 1, Workers: 4, Shuffle: true})
	if err != nil {
		t.Fatal(err)
	}
	nb := s.Batches(0)
	if nb < 20 {
		t.Fatalf("only %d batches; the test wants many in flight", nb)
	}
	errBoom := errors.New("boom")
	for _, tc := range []struct {
		name    string
		stopAt  int // batch index at which fn stops the epoch; -1 never
		cancel  bool
		wantErr error
	}{
		{"runs every batch in order", -1, false, nil},
		{"stops on cancel", 4, true, context.Canceled},
		{"stops on fn error", 6, false, errBoom},
		{"stops on error at the first batch", 0, false, errBoom},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := runtime.NumGoroutine()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var seen []int
			err := s.Epoch(ctx, 0, func(mb *MiniBatch) error {
				seen = append(seen, mb.Index)
				if mb.Index == tc.stopAt {
					if tc.cancel {
						cancel()
						return nil
					}
					return errBoom
				}
				return nil
			})
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			last := nb - 1
			if tc.stopAt >= 0 {
				last = tc.stopAt
			}
			for i, b := range seen {
				if b != i {
					t.Fatalf("fn saw batches %v, want 0..%d in order", seen, last)
				}
			}
			if len(seen) != last+1 {
				t.Fatalf("fn saw %d batches, want %d", len(seen), last+1)
			}
			// The workers must be gone when Epoch returns (allow the
			// runtime a moment to reap them).
			for i := 0; runtime.NumGoroutine() > before && i < 100; i++ {
				time.Sleep(time.Millisecond)
			}
			if n := runtime.NumGoroutine(); n > before {
				t.Errorf("%d goroutines left running after Epoch, %d before", n, before)
			}
		})
	}
	t.Run("canceled before start", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		for _, w := range []int{1, 4} {
			s, _ := NewSampler(g, SamplerOptions{BatchSize: 3, Workers: w})
			err := s.Epoch(ctx, 0, func(*MiniBatch) error { t.Fatal("fn called after cancel"); return nil })
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("workers %d: err = %v, want context.Canceled", w, err)
			}
		}
	})
}

func TestNewSamplerRejects(t *testing.T) {
	g := graphOfAdj([][]int32{{1}, {0, 2}, {1}}, []int64{0, 2})
	for _, tc := range []struct {
		name  string
		g     *dataset.Graph
		opt   SamplerOptions
		field string
	}{
		{"zero fanout", g, SamplerOptions{Fanouts: []int{25, 0}}, "fanouts"},
		{"fanout below -1", g, SamplerOptions{Fanouts: []int{-1, -2}}, "fanouts"},
		{"negative batch size", g, SamplerOptions{BatchSize: -5}, "batch_size"},
		{"negative workers", g, SamplerOptions{Workers: -1}, "workers"},
		{"seed out of range", g, SamplerOptions{Seeds: []int64{0, 3}}, "seeds"},
		{"negative seed", g, SamplerOptions{Seeds: []int64{-1}}, "seeds"},
		{"seed listed twice", g, SamplerOptions{Seeds: []int64{1, 2, 1}}, "seeds"},
		{"explicitly empty seeds", g, SamplerOptions{Seeds: []int64{}}, "seeds"},
		{"no training split", graphOfAdj([][]int32{{}}, nil), SamplerOptions{}, dataset.TrainFile},
		{"empty graph", &dataset.Graph{Indptr: []int64{0}}, SamplerOptions{}, "num_nodes"},
		{"offsets not matching indices", &dataset.Graph{Indptr: []int64{0, 2}, Indices: []int32{0}, Train: []int64{0}}, SamplerOptions{}, "indptr"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewSampler(tc.g, tc.opt)
			var ie *inputerr.Error
			if !errors.As(err, &ie) || ie.Field != tc.field {
				t.Fatalf("err = %v, want an InputError on field %q", err, tc.field)
			}
			if tc.field == "fanouts" && !strings.Contains(err.Error(), "want >= 1, or -1 for every neighbour") {
				t.Fatalf("err = %v, want it to say what is valid", err)
			}
		})
	}
	t.Run("train split error names the file", func(t *testing.T) {
		g := graphOfAdj([][]int32{{}}, []int64{5})
		g.Dir = "/data/x"
		_, err := NewSampler(g, SamplerOptions{})
		var ie *inputerr.Error
		if !errors.As(err, &ie) || ie.Path != "/data/x/"+dataset.TrainFile {
			t.Fatalf("err = %v, want an InputError on %s", err, "/data/x/"+dataset.TrainFile)
		}
	})
}

func TestMaxBlockEdges(t *testing.T) {
	// A graph of 8 billion entries cannot be built in a test, so the
	// bound NewSampler refuses by is checked on its own.
	for _, tc := range []struct {
		name          string
		seeds, n, nnz int
		fanouts       []int
		wantHop       int
		wantEdges     float64
	}{
		{"papers workload stays small", 8000, 111e6, 1.6e9, []int{25, 10}, 1, 8000 * 26 * 10},
		{"bounded by the graph's entries", 1024, 100, 500, []int{25, 10}, 0, 500},
		{"huge fanouts on a huge graph overflow", 8000, 2e9, 8e9, []int{1000, 1000}, 1, 8e9},
		{"every neighbor is bounded by the graph's entries", 1024, 100, 500, []int{-1, -1}, 0, 500},
		{"every neighbor after a small hop", 10, 1000, 5000, []int{5, -1}, 1, 5000},
		{"small hop after every neighbor", 10, 1000, 5000, []int{-1, 5}, 0, 5000},
		{"every neighbor of a huge graph overflows", 1, 2e9, 8e9, []int{-1}, 0, 8e9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, e := maxBlockEdges(tc.seeds, tc.fanouts, tc.n, tc.nnz)
			if h != tc.wantHop || e != tc.wantEdges {
				t.Fatalf("maxBlockEdges = hop %d, %.0f edges; want hop %d, %.0f", h, e, tc.wantHop, tc.wantEdges)
			}
		})
	}
}

func TestSamplerDefaults(t *testing.T) {
	g := graphOfAdj([][]int32{{1}, {0}}, []int64{0, 1})
	s, err := NewSampler(g, SamplerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.Fanouts(), []int{25, 10}) || s.BatchSize() != DefaultBatchSize || s.Workers() != runtime.GOMAXPROCS(0) {
		t.Fatalf("defaults: fanouts %v batch %d workers %d", s.Fanouts(), s.BatchSize(), s.Workers())
	}
	if d := DefaultSamplerOptions(); !d.Shuffle || !slices.Equal(d.Fanouts, []int{25, 10}) {
		t.Fatalf("DefaultSamplerOptions = %+v", d)
	}
}

// benchPowerLawGraph is a power-law graph: each undirected edge joins two
// vertices drawn with density proportional to rank^(-2/3), relabeled at
// random so hubs are spread over the id space (and over memory). A
// dataset directory in GNNPLAN_BENCH_DATASET replaces it, so the same
// benchmark runs on a synthetic graph written by `gnnplan dataset synth`.
func benchPowerLawGraph(b *testing.B) *dataset.Graph {
	if dir := os.Getenv("GNNPLAN_BENCH_DATASET"); dir != "" {
		g, err := dataset.LoadGraph(dir)
		if err != nil {
			b.Fatal(err)
		}
		return g
	}
	const n, pairs = 1 << 20, 10_000_000
	r := rand.New(rand.NewPCG(1, 1))
	relabel := make([]int32, n)
	for i, v := range r.Perm(n) {
		relabel[i] = int32(v)
	}
	ends := make([]int32, 0, 2*pairs)
	for len(ends) < 2*pairs {
		u := relabel[int(n*math.Pow(r.Float64(), 3))]
		v := relabel[int(n*math.Pow(r.Float64(), 3))]
		if u != v {
			ends = append(ends, u, v)
		}
	}
	g := &dataset.Graph{Indptr: make([]int64, n+1), Indices: make([]int32, 2*pairs)}
	for _, v := range ends {
		g.Indptr[v+1]++
	}
	for v := range n {
		g.Indptr[v+1] += g.Indptr[v]
	}
	fill := slices.Clone(g.Indptr[:n])
	for i := 0; i < len(ends); i += 2 {
		u, v := ends[i], ends[i+1]
		g.Indices[fill[u]], g.Indices[fill[v]] = v, u
		fill[u]++
		fill[v]++
	}
	// 10% of the vertices train: about 100 batches of 1024, enough to
	// keep two workers busy for a measurable epoch.
	for _, v := range r.Perm(n)[:n/10] {
		g.Train = append(g.Train, int64(v))
	}
	return g
}

// baselineSample is the plain sampler the optimized one is compared with:
// one goroutine, a map for deduplication, and a permutation of the whole
// neighbor list to pick from. It returns the number of edges sampled.
func baselineSample(g *dataset.Graph, seeds []int32, fanouts []int, r *rand.Rand) int {
	local := map[int32]int32{}
	var all []int32
	for _, v := range seeds {
		local[v] = int32(len(all))
		all = append(all, v)
	}
	edges := 0
	for _, k := range fanouts {
		nd := len(all)
		var srcIdx []int32
		for _, v := range all[:nd] {
			nbrs := g.Neighbors(int64(v))
			pick := func(u int32) {
				l, ok := local[u]
				if !ok {
					l = int32(len(all))
					local[u] = l
					all = append(all, u)
				}
				srcIdx = append(srcIdx, l)
			}
			if len(nbrs) <= k {
				for _, u := range nbrs {
					pick(u)
				}
				continue
			}
			for _, p := range r.Perm(len(nbrs))[:k] {
				pick(nbrs[p])
			}
		}
		edges += len(srcIdx)
	}
	return edges
}

// BenchmarkSampleEpoch samples one epoch of (25, 10) with batches of 1024
// and reports sampled edges per second: the sampler with one worker and
// with GOMAXPROCS, and the plain baseline, on the same graph.
func BenchmarkSampleEpoch(b *testing.B) {
	start := time.Now()
	g := benchPowerLawGraph(b)
	b.Logf("graph: %d vertices, %d CSR entries, %d seeds, built in %s, GOMAXPROCS %d",
		len(g.Indptr)-1, len(g.Indices), len(g.Train), time.Since(start).Round(time.Millisecond), runtime.GOMAXPROCS(0))
	fanouts := []int{25, 10}
	for _, w := range []int{1, runtime.GOMAXPROCS(0)} {
		b.Run(fmt.Sprintf("workers=%d", w), func(b *testing.B) {
			s, err := NewSampler(g, SamplerOptions{Fanouts: fanouts, BatchSize: 1024, Seed: 1, Workers: w, Shuffle: true})
			if err != nil {
				b.Fatal(err)
			}
			edges := 0
			for i := 0; b.Loop(); i++ {
				if err := s.Epoch(context.Background(), i, func(mb *MiniBatch) error { edges += mb.NumEdges(); return nil }); err != nil {
					b.Fatal(err)
				}
			}
			eps := float64(edges) / b.Elapsed().Seconds()
			b.ReportMetric(eps, "edges/s")
			b.ReportMetric(eps/float64(w), "edges/s/worker")
		})
	}
	b.Run("baseline", func(b *testing.B) {
		r := rand.New(rand.NewPCG(1, 2))
		seeds := make([]int32, len(g.Train))
		edges := 0
		for b.Loop() {
			for i, v := range r.Perm(len(g.Train)) {
				seeds[i] = int32(g.Train[v])
			}
			for lo := 0; lo < len(seeds); lo += 1024 {
				edges += baselineSample(g, seeds[lo:min(lo+1024, len(seeds))], fanouts, r)
			}
		}
		b.ReportMetric(float64(edges)/b.Elapsed().Seconds(), "edges/s")
	})
}

// TestEpochWithin checks the second stage's sampler: within every vertex
// it draws exactly the batches Epoch draws from the same seeds in the
// same order; within a subset, every vertex a batch reaches past its
// seeds is in the subset, and a vertex with neighbours in it gets up to
// its fanout of them.
func TestEpochWithin(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	g := randomTestGraph(r, 600)
	s, err := NewSampler(g, SamplerOptions{Fanouts: []int{4, 3}, BatchSize: 50, Seed: 9, Shuffle: true, Workers: 3})
	if err != nil {
		t.Fatal(err)
	}
	all := NewBitmap(600)
	for v := range 600 {
		all.Set(int32(v))
	}
	var want []*MiniBatch
	if err := s.Epoch(context.Background(), 2, func(mb *MiniBatch) error { want = append(want, mb); return nil }); err != nil {
		t.Fatal(err)
	}
	// Whole batches only: EpochWithin splits seeds into equal batches.
	full := len(s.order(2)) / 50
	i := 0
	err = s.EpochWithin(context.Background(), 2, s.order(2)[:50*full], all, 0, 0, func(mb *MiniBatch) error {
		if !reflect.DeepEqual(mb, want[i]) {
			t.Errorf("batch %d differs from Epoch's", i)
		}
		i++
		return nil
	})
	if err != nil || i != full || full == 0 {
		t.Fatalf("%d batches, want %d: %v", i, full, err)
	}
	sizes := map[int]bool{}
	err = s.EpochWithin(context.Background(), 2, s.order(2)[:50*full+1], all, 0, 0, func(mb *MiniBatch) error {
		sizes[len(mb.Seeds)] = true
		return nil
	})
	if err != nil || len(sizes) > 2 {
		t.Errorf("batches of %v seeds for %d: want sizes a seed apart (%v)", sizes, 50*full+1, err)
	}
	half := NewBitmap(600)
	for v := range 300 {
		half.Set(int32(v))
	}
	seeds := []int32{1, 2, 3, 500, 501, 7, 8, 9}
	var got int
	err = s.EpochWithin(context.Background(), 0, seeds, half, 10, 0, func(mb *MiniBatch) error {
		if mb.Index != 10+got {
			t.Errorf("batch index %d, want %d", mb.Index, 10+got)
		}
		got++
		for _, v := range mb.Input()[len(mb.Seeds):] {
			if !half.Has(v) {
				t.Errorf("vertex %d reached outside the set", v)
			}
		}
		b := mb.Blocks[0]
		for i, v := range b.Dst {
			var in int
			for _, u := range g.Indices[g.Indptr[v]:g.Indptr[v+1]] {
				if half.Has(u) {
					in++
				}
			}
			if n := int(b.Offsets[i+1] - b.Offsets[i]); n != min(in, 4) {
				t.Errorf("vertex %d: %d neighbours drawn, %d within (fanout 4)", v, n, in)
			}
		}
		return nil
	})
	if err != nil || got != 1 {
		t.Fatalf("%d batches: %v", got, err)
	}
}

// TestEpochWithinDrawsUniformly: vertex 0's neighbours are 1..deg, those
// within every step-th; each within must be drawn equally often, none
// outside, and with few within every k-subset of them equally often.
// The cases take each path of drawWithin: a short list passed over, a
// hub's list drawn at random (a small fanout, and one over 64 that keeps
// its draws in a set), and a hub whose few within the random draws give
// up on.
func TestEpochWithinDrawsUniformly(t *testing.T) {
	for _, tc := range []struct {
		name         string
		deg, step, k int
		subsets      bool
	}{
		{"short list", 12, 2, 2, true},
		{"hub, half within", 400, 2, 5, false},
		{"hub, a third within, fanout over 64", 2000, 3, 70, false},
		{"hub, few within", 400, 80, 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			within := NewBitmap(tc.deg + 1)
			var in []int32
			for u := int32(1); u <= int32(tc.deg); u += int32(tc.step) {
				within.Set(u)
				in = append(in, u)
			}
			s := starSampler(t, tc.deg, tc.k)
			const draws = 20000
			freq := make([]int, tc.deg+1)
			subsets := map[string]int{}
			for e := range draws {
				err := s.EpochWithin(context.Background(), e, []int32{0}, within, 0, 0, func(mb *MiniBatch) error {
					if n := tally(mb.Blocks[0], freq, subsets); n != min(tc.k, len(in)) {
						t.Fatalf("epoch %d: %d drawn, want %d", e, n, min(tc.k, len(in)))
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			for u := 1; u <= tc.deg; u++ {
				if !within.Has(int32(u)) && freq[u] != 0 {
					t.Fatalf("neighbour %d, not within, drawn %d times", u, freq[u])
				}
			}
			checkUniform(t, draws, tc.k, in, freq, subsets, tc.subsets)
		})
	}
}
