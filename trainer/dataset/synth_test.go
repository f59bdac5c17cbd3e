package dataset

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gnnplan/gnnplan/internal/npy"

	"github.com/gnnplan/gnnplan/internal/inputerr"
)

// smallSynth is the graph the unit tests draw: 1000 vertices and 20000
// edges, big enough for a skewed degree distribution, small enough to
// generate in milliseconds.
func smallSynth() SynthOptions {
	o := DefaultSynthOptions()
	o.Nodes, o.Edges, o.FeatureDim, o.Classes = 1000, 20000, 64, 8
	o.TrainFraction, o.ValFraction, o.TestFraction = 0.6, 0.2, 0.2
	o.Seed = 7
	return o
}

func runSynth(t testing.TB, opt SynthOptions, out string) *SynthSummary {
	t.Helper()
	sum, err := Synth(context.Background(), opt, out, nil)
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

// readDirFiles returns every file of dir by name.
func readDirFiles(t testing.TB, dir string) map[string][]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = data
	}
	return files
}

func sameFiles(t *testing.T, a, b string) {
	t.Helper()
	fa, fb := readDirFiles(t, a), readDirFiles(t, b)
	if len(fa) != len(fb) {
		t.Fatalf("%s has %d files, %s has %d", a, len(fa), b, len(fb))
	}
	for name, data := range fa {
		if !bytes.Equal(data, fb[name]) {
			t.Errorf("%s differs between %s and %s", name, a, b)
		}
	}
}

// readFeatures reads the whole feature matrix through FeatureReader.
func readFeatures(t *testing.T, g *Graph) [][]float32 {
	t.Helper()
	fr, err := OpenFeatures(g.Dir, g.Meta)
	if err != nil {
		t.Fatal(err)
	}
	defer fr.Close()
	rows := make([][]float32, g.Meta.NumNodes)
	for v := range rows {
		rows[v] = make([]float32, g.Meta.FeatureDim)
		if err := fr.Row(int64(v), rows[v]); err != nil {
			t.Fatal(err)
		}
	}
	return rows
}

// nearestCentroidAccuracy classifies every vertex by the nearest class
// mean of the features: a floor for what a model can learn from features.
func nearestCentroidAccuracy(g *Graph, feats [][]float32) float64 {
	k, d := g.Meta.NumClasses, g.Meta.FeatureDim
	mean := make([][]float64, k)
	count := make([]float64, k)
	for c := range mean {
		mean[c] = make([]float64, d)
	}
	for v, row := range feats {
		c := g.Labels[v]
		count[c]++
		for j, x := range row {
			mean[c][j] += float64(x)
		}
	}
	for c := range mean {
		for j := range mean[c] {
			mean[c][j] /= max(count[c], 1)
		}
	}
	right := 0
	for v, row := range feats {
		best, bestDist := -1, math.Inf(1)
		for c := range mean {
			dist := 0.0
			for j, x := range row {
				dist += (float64(x) - mean[c][j]) * (float64(x) - mean[c][j])
			}
			if dist < bestDist {
				best, bestDist = c, dist
			}
		}
		if int64(best) == g.Labels[v] {
			right++
		}
	}
	return float64(right) / float64(len(feats))
}

func TestSynthGraphs(t *testing.T) {
	// On 1000 vertices the biggest hub already reaches half the graph
	// after deduplication, so even plain Graph500 R-MAT stops near 20x the
	// mean degree there; 4000 vertices show the tail properly. The
	// power-law model caps the top expected degree at sqrt(mean x nodes),
	// about 14x the mean at 4000 vertices and mean 20.
	bigger := func(o *SynthOptions) { o.Nodes, o.Edges = 4000, 40000 }
	rmat := func(o *SynthOptions) { bigger(o); o.Model = ModelRMAT }
	for _, tc := range []struct {
		name   string
		modify func(*SynthOptions)
		// minSkew bounds max degree / mean degree from below (or, when
		// negative, its negation bounds it from above); learnable checks
		// homophily and features.
		minSkew   float64
		learnable bool
	}{
		{"power law with homophily is heavy tailed and learnable", bigger, 8, true},
		{"graph500 skew with homophily is heavy tailed and learnable", rmat, 20, true},
		{"the issue's 1000 vertices and 20000 edges", func(*SynthOptions) {}, 3, true},
		{"vertex count not a power of two and odd classes", func(o *SynthOptions) { rmat(o); o.Nodes, o.Classes, o.Seed = 3001, 7, 3 }, 20, true},
		{"power law, odd vertex count and classes", func(o *SynthOptions) { bigger(o); o.Nodes, o.Classes, o.Seed = 3001, 7, 3 }, 6, true},
		{"rows sorted in many small buckets", func(o *SynthOptions) { bigger(o); o.SortBufferBytes = 4096 }, 8, true},
		{"uniform quadrants give a flat graph", func(o *SynthOptions) { rmat(o); o.A, o.B, o.C, o.Homophily = 0.25, 0.25, 0.25, 0 }, -3, false},
		{"no features, one class, no splits", func(o *SynthOptions) {
			o.FeatureDim, o.Classes, o.TrainFraction, o.ValFraction, o.TestFraction = 0, 1, 0, 0, 0
		}, 3, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			opt := smallSynth()
			tc.modify(&opt)
			dir := t.TempDir()
			out := filepath.Join(dir, "a")
			sum := runSynth(t, opt, out)
			runSynth(t, opt, filepath.Join(dir, "b"))
			sameFiles(t, out, filepath.Join(dir, "b"))

			g, err := LoadGraph(out)
			if err != nil {
				t.Fatal(err)
			}
			n := opt.Nodes
			if g.Meta.NumNodes != n || sum.Nodes != n || sum.Edges != g.Meta.NumEdges || !g.Meta.Undirected {
				t.Fatalf("meta %+v, summary %+v", g.Meta, sum)
			}
			if drawn := 2 * (opt.Edges - sum.SelfLoopsDropped); sum.Edges+sum.DuplicatesDropped != drawn {
				t.Errorf("%d entries + %d duplicates, want %d drawn", sum.Edges, sum.DuplicatesDropped, drawn)
			}
			maxDeg := int64(0)
			sameClass := 0
			for v := range n {
				row := g.Neighbors(v)
				maxDeg = max(maxDeg, int64(len(row)))
				for i, u := range row {
					if int64(u) == v {
						t.Fatalf("self-loop at %d", v)
					}
					if i > 0 && row[i-1] >= u {
						t.Fatalf("row %d not strictly increasing at %d: %v", v, i, row)
					}
					if _, found := slices.BinarySearch(g.Neighbors(int64(u)), int32(v)); !found {
						t.Fatalf("edge %d-%d stored one way only", v, u)
					}
					if g.Labels[u] == g.Labels[v] {
						sameClass++
					}
				}
			}
			mean := float64(g.Meta.NumEdges) / float64(n)
			t.Logf("%d entries (%d self-loops, %d duplicates dropped), mean degree %.1f, max %d, same-class share %.2f",
				sum.Edges, sum.SelfLoopsDropped, sum.DuplicatesDropped, mean, maxDeg, float64(sameClass)/float64(g.Meta.NumEdges))
			if skew := float64(maxDeg) / mean; (tc.minSkew > 0 && skew <= tc.minSkew) || (tc.minSkew < 0 && skew >= -tc.minSkew) {
				t.Errorf("max degree %d is %.1fx the mean %.1f, want %s %.0fx", maxDeg, skew, mean, map[bool]string{true: "above", false: "below"}[tc.minSkew > 0], math.Abs(tc.minSkew))
			}

			// Splits: exact sizes, disjoint, sorted.
			seen := make([]bool, n)
			for _, s := range []struct {
				ids  []int64
				frac float64
			}{{g.Train, opt.TrainFraction}, {g.Val, opt.ValFraction}, {g.Test, opt.TestFraction}} {
				if want := int64(math.Round(s.frac * float64(n))); int64(len(s.ids)) != want {
					t.Errorf("split of %d vertices, want %d", len(s.ids), want)
				}
				for i, v := range s.ids {
					if seen[v] || (i > 0 && s.ids[i-1] >= v) {
						t.Fatalf("split vertex %d repeated or out of order", v)
					}
					seen[v] = true
				}
			}
			perClass := make([]int, opt.Classes)
			for _, l := range g.Labels {
				perClass[l]++
			}
			for c, k := range perClass {
				if k < int(n)/opt.Classes || k > int(n)/opt.Classes+1 {
					t.Errorf("class %d has %d vertices, want an equal share of %d", c, k, n)
				}
			}

			if !tc.learnable {
				return
			}
			if share, floor := float64(sameClass)/float64(g.Meta.NumEdges), 1/float64(opt.Classes); share < floor+0.5 {
				t.Errorf("same-class share %.2f, want well above chance %.2f", share, floor)
			}
			if acc := nearestCentroidAccuracy(g, readFeatures(t, g)); acc < 0.9 {
				t.Errorf("nearest-centroid accuracy %.3f, want > 0.9", acc)
			} else {
				t.Logf("nearest-centroid accuracy %.3f", acc)
			}
		})
	}
}

func TestSynthDegenerateGraphs(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		nodes, edges          int64
		wantEntries, wantLoop int64
	}{
		{"one vertex: every edge is a self-loop", 1, 10, 0, 10},
		{"no edges", 5, 0, 0, 0},
		{"two vertices collapse to one edge", 2, 50, 2, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opt := smallSynth()
			opt.Nodes, opt.Edges, opt.Classes = tc.nodes, tc.edges, 1
			out := filepath.Join(t.TempDir(), "out")
			sum := runSynth(t, opt, out)
			g, err := LoadGraph(out)
			if err != nil {
				t.Fatal(err)
			}
			if g.Meta.NumEdges != tc.wantEntries || (tc.wantLoop >= 0 && sum.SelfLoopsDropped != tc.wantLoop) {
				t.Errorf("%d entries, %d self-loops; want %d, %d", g.Meta.NumEdges, sum.SelfLoopsDropped, tc.wantEntries, tc.wantLoop)
			}
		})
	}
}

func TestSynthOutputDoesNotDependOnBucketsOrWorkers(t *testing.T) {
	opt := smallSynth()
	dir := t.TempDir()
	runSynth(t, opt, filepath.Join(dir, "one"))
	opt.SortBufferBytes = 1000 // a bucket every few rows
	prev := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(prev)
	runSynth(t, opt, filepath.Join(dir, "many"))
	sameFiles(t, filepath.Join(dir, "one"), filepath.Join(dir, "many"))
}

func TestSynthSeedChangesGraph(t *testing.T) {
	opt := smallSynth()
	dir := t.TempDir()
	runSynth(t, opt, filepath.Join(dir, "a"))
	opt.Seed++
	runSynth(t, opt, filepath.Join(dir, "b"))
	a, b := readDirFiles(t, filepath.Join(dir, "a")), readDirFiles(t, filepath.Join(dir, "b"))
	for _, name := range []string{IndicesFile, FeaturesFile, LabelsFile, TrainFile} {
		if bytes.Equal(a[name], b[name]) {
			t.Errorf("%s identical for seeds %d and %d", name, opt.Seed-1, opt.Seed)
		}
	}
}

// cancelAt cancels a context when a progress line contains a phrase.
type cancelAt struct {
	mu     sync.Mutex
	phrase string
	cancel context.CancelFunc
	lines  []string
}

func (c *cancelAt) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lines = append(c.lines, string(p))
	if strings.Contains(string(p), c.phrase) {
		c.cancel()
	}
	return len(p), nil
}

func TestSynthCancelLeavesNothing(t *testing.T) {
	for _, phrase := range []string{"row buckets\n", "row buckets: 30%", "sorting and deduplicating rows: 10%", "writing features"} {
		t.Run(phrase, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			dir := t.TempDir()
			out := filepath.Join(dir, "out")
			opt := smallSynth()
			opt.Edges = 200_000
			opt.SortBufferBytes = 1 << 14
			w := &cancelAt{phrase: phrase, cancel: cancel}
			_, err := Synth(ctx, opt, out, w)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("error %v, want context.Canceled (progress %q)", err, w.lines)
			}
			entries, _ := os.ReadDir(dir)
			if len(entries) != 0 {
				t.Errorf("left %v behind", entries)
			}
		})
	}
}

func TestSynthProgress(t *testing.T) {
	var buf bytes.Buffer
	if _, err := Synth(context.Background(), smallSynth(), filepath.Join(t.TempDir(), "out"), &buf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"drawing edges into 1 row buckets: 50%", "sorting and deduplicating rows", "features", "synth: wrote"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("progress lacks %q:\n%s", want, buf.String())
		}
	}
	if n := strings.Count(buf.String(), "\n"); n > 80 {
		t.Errorf("%d progress lines, want about one per phase and tenth", n)
	}
}

func TestSynthBadOptions(t *testing.T) {
	for _, tc := range []struct {
		name   string
		modify func(*SynthOptions)
		field  string
	}{
		{"no vertices", func(o *SynthOptions) { o.Nodes = 0 }, "--nodes"},
		{"more vertices than int32 ids", func(o *SynthOptions) { o.Nodes = 1 << 31 }, "--nodes"},
		{"negative edges", func(o *SynthOptions) { o.Edges = -1 }, "--edges"},
		{"more edges than the vertices can have", func(o *SynthOptions) { o.Nodes, o.Classes, o.Edges = 100, 4, 1e12 }, "--edges"},
		{"more draws than ten per possible edge", func(o *SynthOptions) { o.Nodes, o.Classes, o.Edges = 100, 4, 50501 }, "--edges"},
		{"negative feature dim", func(o *SynthOptions) { o.FeatureDim = -1 }, "--feature-dim"},
		{"no classes", func(o *SynthOptions) { o.Classes = 0 }, "--classes"},
		{"more classes than vertices", func(o *SynthOptions) { o.Classes = 2000 }, "--classes"},
		{"fractions over one", func(o *SynthOptions) { o.TrainFraction, o.ValFraction, o.TestFraction = 0.8, 0.2, 0.1 }, "--train-fraction, --val-fraction, --test-fraction"},
		{"negative fraction", func(o *SynthOptions) { o.ValFraction = -0.1 }, "--val-fraction"},
		{"negative probability", func(o *SynthOptions) { o.B = -0.1 }, "--rmat-b"},
		{"NaN probability", func(o *SynthOptions) { o.A = math.NaN() }, "--rmat-a"},
		{"probabilities over one", func(o *SynthOptions) { o.A, o.B, o.C = 0.5, 0.3, 0.3 }, "--rmat-a, --rmat-b, --rmat-c"},
		{"homophily over one", func(o *SynthOptions) { o.Homophily = 1.5 }, "--homophily"},
		{"communities not a multiple of the classes", func(o *SynthOptions) { o.Classes, o.Communities = 4, 6 }, "--communities"},
		{"more communities than vertices", func(o *SynthOptions) { o.Classes, o.Communities = 4, 2000 }, "--communities"},
		{"negative communities", func(o *SynthOptions) { o.Communities = -4 }, "--communities"},
		{"negative noise", func(o *SynthOptions) { o.NoiseSigma = -1 }, "--noise-sigma"},
		{"negative separation", func(o *SynthOptions) { o.Separation = -1 }, "--separation"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opt := smallSynth()
			tc.modify(&opt)
			out := filepath.Join(t.TempDir(), "out")
			_, err := Synth(context.Background(), opt, out, nil)
			var ie *inputerr.Error
			if !errors.As(err, &ie) || ie.Field != tc.field {
				t.Fatalf("error %v, want an InputError naming %s", err, tc.field)
			}
			if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s exists after a bad option", out)
			}
		})
	}
	t.Run("existing output directory", func(t *testing.T) {
		_, err := Synth(context.Background(), smallSynth(), t.TempDir(), nil)
		if !inputerr.Is(err) {
			t.Fatalf("error %v, want a bad-input error", err)
		}
	})
}

func TestFeistelIsABijection(t *testing.T) {
	for _, n := range []uint64{1, 2, 3, 5, 64, 1000, 1 << 12, 4097} {
		f := newFeistel(n, 42)
		seen := make([]bool, n)
		moved := 0
		for x := range n {
			y := f.apply(x)
			if y >= n || seen[y] {
				t.Fatalf("n=%d: %d maps to %d, out of range or taken", n, x, y)
			}
			seen[y] = true
			if f.inverse(y) != x {
				t.Fatalf("n=%d: inverse(%d) = %d, want %d", n, y, f.inverse(y), x)
			}
			if y != x {
				moved++
			}
		}
		if n >= 64 && moved < int(n)/2 {
			t.Errorf("n=%d: only %d of %d ids moved", n, moved, n)
		}
	}
}

func TestRowSortMatchesSlicesSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var rs radixScratch
	for _, tc := range []struct {
		name string
		n    int64
		len  int
	}{
		{"short row sorted by comparison", 1000, 100},
		{"hub row, one radix pass", 4000, 3 * radixMinRow},
		{"hub row, two radix passes", 10_000_000, 5 * radixMinRow},
		{"hub row, three radix passes", math.MaxInt32, 4 * radixMinRow},
		{"hub row with many duplicates", 50, 2 * radixMinRow},
	} {
		t.Run(tc.name, func(t *testing.T) {
			row := make([]int32, tc.len)
			for i := range row {
				row[i] = int32(rng.Int64N(tc.n))
			}
			want := slices.Clone(row)
			slices.Sort(want)
			rs.sort(row, tc.n)
			if !slices.Equal(row, want) {
				t.Fatalf("sorted row differs from slices.Sort")
			}
		})
	}
}

func TestNpyHeaderMatchesCreateArray(t *testing.T) {
	dir := t.TempDir()
	for _, count := range []int64{0, 7, 1234567, 200_000_000_000} {
		path := filepath.Join(dir, "a.npy")
		a, err := CreateArray(path, "<i4", count)
		if err != nil {
			t.Fatal(err)
		}
		a.got = count // header only: Close checks the count, not the bytes
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		data, _ := os.ReadFile(path)
		if h := npy.Encode("<i4", []int64{count}, 0); !bytes.Equal(h, data) {
			t.Errorf("count %d: header %q, CreateArray wrote %q", count, h, data)
		}
		if h := npy.Encode("<i4", []int64{count / 3}, len(data)); len(h) != len(data) || h[len(h)-1] != '\n' {
			t.Errorf("count %d: padded header %q, want %d bytes", count/3, h, len(data))
		}
	}
}

// BenchmarkSynth10M draws the 10M-vertex / 100M-edge graph (about
// 200M CSR entries) with 16-d features, reporting wall time, the sampled
// peak heap, the Go heap's size and the bytes on disk.
func BenchmarkSynth10M(b *testing.B) {
	opt := DefaultSynthOptions()
	opt.Nodes, opt.Edges, opt.FeatureDim, opt.Classes = 10_000_000, 100_000_000, 16, 16
	for i := 0; b.Loop(); i++ {
		out := filepath.Join(b.TempDir(), "synth")
		start := time.Now()
		sum, err := Synth(context.Background(), opt, out, benchLog{b, start})
		if err != nil {
			b.Fatal(err)
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		b.ReportMetric(time.Since(start).Seconds(), "s/graph")
		b.ReportMetric(float64(sum.PeakHeapBytes)/(1<<20), "peak-heap-MiB")
		b.ReportMetric(float64(ms.HeapSys)/(1<<20), "heap-sys-MiB")
		b.ReportMetric(float64(sum.DiskBytes)/(1<<20), "disk-MiB")
		b.ReportMetric(float64(sum.Edges), "csr-entries")
		b.StopTimer()
		os.RemoveAll(out)
		b.StartTimer()
	}
}

// benchLog prints progress lines on stderr (b.Log truncates long logs)
// with the time since start, so the phases' costs show.
type benchLog struct {
	b     *testing.B
	start time.Time
}

func (l benchLog) Write(p []byte) (int, error) {
	fmt.Fprintf(os.Stderr, "%6.1fs %s", time.Since(l.start).Seconds(), p)
	return len(p), nil
}

// The default model looks like a real graph of its kind at a size where
// the tail shows: few isolated vertices, a median degree well above zero,
// and a degree distribution whose tail falls as a power law with the
// exponent asked for. Graph500's R-MAT, for contrast, isolates most of
// the graph at this mean degree.
func TestSynthPowerLawIsRealistic(t *testing.T) {
	if testing.Short() {
		t.Skip("200k-vertex graphs")
	}
	for _, tc := range []struct {
		name     string
		modify   func(*SynthOptions)
		isolated [2]float64 // share of vertices, bounds
		exponent float64    // 0: do not fit
	}{
		{"power law 2.3", func(o *SynthOptions) {}, [2]float64{0, 0.05}, 2.3},
		{"power law 2.1", func(o *SynthOptions) { o.Exponent = 2.1 }, [2]float64{0, 0.08}, 2.1},
		{"power law 2.6", func(o *SynthOptions) { o.Exponent = 2.6 }, [2]float64{0, 0.05}, 2.6},
		{"graph500 R-MAT", func(o *SynthOptions) { o.Model = ModelRMAT }, [2]float64{0.3, 0.9}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opt := DefaultSynthOptions()
			opt.Nodes, opt.Edges, opt.FeatureDim = 200_000, 1_000_000, 0
			tc.modify(&opt)
			out := filepath.Join(t.TempDir(), "g")
			runSynth(t, opt, out)
			info, err := InfoOf(out)
			if err != nil {
				t.Fatal(err)
			}
			d := info.Degree
			t.Logf("isolated %.2f%%, degree p10 %.0f p25 %.0f median %.0f p90 %.0f p99 %.0f max %d, top 1%% hold %.1f%%",
				100*info.IsolatedShare, d.P10, d.P25, d.Median, d.P90, d.P99, d.Max, 100*d.Top1PctShare)
			if info.IsolatedShare < tc.isolated[0] || info.IsolatedShare > tc.isolated[1] {
				t.Errorf("isolated share %.3f, want %.2f to %.2f", info.IsolatedShare, tc.isolated[0], tc.isolated[1])
			}
			if tc.exponent == 0 {
				return
			}
			if d.Median < 3 || d.Top1PctShare < 0.1 || float64(d.Max) < 30*d.Mean {
				t.Errorf("median %v, top 1%% share %.3f, max %d vs mean %.1f: want a median of 3 or more and a heavy tail", d.Median, d.Top1PctShare, d.Max, d.Mean)
			}
			// Fit the complementary CDF's log-log slope between degrees 2x and
			// 20x the mean, where a power law of exponent gamma has slope
			// 1-gamma (below, the weights' floor bends it; above, the cutoff).
			g, err := LoadGraph(out)
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			ccdf := func(k int64) float64 {
				c := 0
				for v := range g.Meta.NumNodes {
					if g.Degree(v) >= k {
						c++
					}
				}
				return float64(c) / float64(g.Meta.NumNodes)
			}
			lo, hi := int64(2*d.Mean), int64(20*d.Mean)
			slope := math.Log(ccdf(hi)/ccdf(lo)) / math.Log(float64(hi)/float64(lo))
			if want := 1 - tc.exponent; math.Abs(slope-want) > 0.3 {
				t.Errorf("degree CCDF slope %.2f between degrees %d and %d, want %.2f +- 0.3 for exponent %v", slope, lo, hi, want, tc.exponent)
			}
		})
	}
}

// TestSynthCommunities checks --communities: with every edge kept in its
// source's community the graph falls apart into one component a
// community (bar a few stray vertices), each of one class.
func TestSynthCommunities(t *testing.T) {
	for _, tc := range []struct {
		name        string
		communities int
		want        int // components of at least 10 vertices
	}{{"one a class", 0, 4}, {"eight a class", 32, 32}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			opt := smallSynth()
			opt.Nodes, opt.Edges, opt.Classes, opt.Homophily, opt.Communities = 4000, 40000, 4, 1, tc.communities
			out := filepath.Join(t.TempDir(), "g")
			runSynth(t, opt, out)
			g, err := LoadGraph(out)
			if err != nil {
				t.Fatal(err)
			}
			seen := make([]bool, g.Meta.NumNodes)
			large := 0
			for v := range g.Meta.NumNodes {
				if seen[v] {
					continue
				}
				seen[v] = true
				size, stack := 0, []int64{v}
				for len(stack) > 0 {
					u := stack[len(stack)-1]
					stack = stack[:len(stack)-1]
					size++
					for _, w := range g.Neighbors(u) {
						if g.Labels[w] != g.Labels[u] {
							t.Fatalf("edge %d-%d joins classes %d and %d at homophily 1", u, w, g.Labels[u], g.Labels[w])
						}
						if !seen[w] {
							seen[w] = true
							stack = append(stack, int64(w))
						}
					}
				}
				if size >= 10 {
					large++
				}
			}
			if large != tc.want {
				t.Errorf("%d components of at least 10 vertices, want %d", large, tc.want)
			}
			if m, _ := os.ReadFile(filepath.Join(out, "meta.json")); tc.communities > 0 && !strings.Contains(string(m), "--communities 32") {
				t.Errorf("meta.json's source does not regenerate the communities: %s", m)
			}
		})
	}
}
