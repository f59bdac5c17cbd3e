package dataset

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/bits"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gnnplan/gnnplan/internal/npy"

	"github.com/gnnplan/gnnplan/internal/rng"

	"github.com/gnnplan/gnnplan/internal/fsutil"
	"github.com/gnnplan/gnnplan/internal/inputerr"
)

// SynthOptions describes a synthetic graph for Synth. Zero values of the
// R-MAT probabilities, Separation and SortBufferBytes take their defaults
// (zero is degenerate for them); every other field is used as given, so
// start from DefaultSynthOptions.
type SynthOptions struct {
	Name       string // meta.json name; empty means "synth"
	Nodes      int64  // vertices, 1 to 2^31-1 (int32 CSR indices)
	Edges      int64  // undirected edges drawn before dropping self-loops and duplicates; the CSR holds about twice as many entries
	FeatureDim int    // float32 features per vertex (0 writes an empty [Nodes, 0] matrix)
	Classes    int    // vertex classes (labels), 1 to min(Nodes, 65536)

	// Disjoint random splits, as fractions of Nodes (rounded); their sum
	// is at most 1.
	TrainFraction, ValFraction, TestFraction float64

	Seed uint64 // every byte written is a function of the options

	// Model picks the edge generator: "powerlaw" (the default, also for
	// "") draws both endpoints of every edge from the same power-law
	// weights, Chung and Lu's model, so degrees follow a power law with
	// Exponent and few vertices are isolated, as in real graphs of this
	// kind; "rmat" is Graph500's recursive matrix, kept for comparison with
	// tools that use it, which isolates about half the vertices at mean
	// degree 20 and gives a staircase degree distribution.
	Model string
	// Exponent is the power law's exponent gamma (P(degree k) ~ k^-gamma)
	// for the powerlaw model, above 2 and at most 4; zero means 2.3.
	Exponent float64

	// R-MAT quadrant probabilities (Chakrabarti et al. 2004): a edge falls
	// in the top-left quadrant with A, top-right with B, bottom-left with
	// C and bottom-right with 1-A-B-C, recursively. All three zero means
	// Graph500's 0.57, 0.19, 0.19.
	A, B, C float64

	// Homophily is the probability that an edge's destination is moved to
	// a vertex of the source's class (same id block, so the degree skew
	// survives); the share of same-class edges is then about
	// Homophily + (1-Homophily)/Classes. 0 gives plain R-MAT.
	Homophily float64
	// Communities splits the classes into that many communities in all,
	// Communities/Classes a class (rank r is in community r mod
	// Communities, of class r mod Classes), and homophily moves an edge's
	// destination into the source's community: a class is then many small
	// communities, as a citation graph's subject is many fields, rather
	// than one spanning the graph. 0 means Classes, one a class;
	// otherwise a multiple of Classes, at most Nodes.
	Communities int

	// Features are the class centroid, a seeded random direction of norm
	// Separation (orthogonal to the other centroids when Classes <=
	// FeatureDim), plus Gaussian noise of standard deviation NoiseSigma in
	// every dimension. Nearest-centroid accuracy is then about
	// 1 - (Classes-1)·Q(Separation/(√2·NoiseSigma)): 98% for 10 classes at
	// the defaults 4 and 1. Zero Separation means 4.
	Separation float64
	NoiseSigma float64

	// SortBufferBytes is the heap for sorting one range of CSR rows at a
	// time, 4 bytes per drawn entry. Ranges are planned from the expected
	// entries, so one may exceed it by the randomness of the draw. Zero
	// means max(64 MiB, 8 bytes per vertex), which keeps the heap
	// proportional to Nodes however many edges are drawn.
	SortBufferBytes int64
}

// communities is the number of communities edges keep to.
func (o *SynthOptions) communities() int {
	if o.Communities == 0 {
		return o.Classes
	}
	return o.Communities
}

// communitiesFlag is the source's --communities, where set.
func (o *SynthOptions) communitiesFlag() string {
	if o.Communities == 0 {
		return ""
	}
	return fmt.Sprintf(" --communities %d", o.Communities)
}

// communitiesNote names what homophily keeps an edge in.
func (o *SynthOptions) communitiesNote() string {
	if o.Communities == 0 || o.Communities == o.Classes {
		return "class"
	}
	return fmt.Sprintf("community (%d communities, %d a class)", o.Communities, o.Communities/o.Classes)
}

// Synthetic graph models (SynthOptions.Model).
const (
	ModelPowerLaw = "powerlaw"
	ModelRMAT     = "rmat"
)

// DefaultSynthOptions returns the options `gnnplan dataset synth` starts
// from: a 100k-vertex power-law graph (exponent 2.3), 0.8 homophily,
// 128-d features and training vertices 1% of the graph (docs/architecture.md
// section 12).
func DefaultSynthOptions() SynthOptions {
	return SynthOptions{
		Name:          "synth",
		Nodes:         100_000,
		Edges:         1_000_000,
		FeatureDim:    128,
		Classes:       16,
		TrainFraction: 0.01,
		ValFraction:   0.01,
		TestFraction:  0.02,
		Seed:          1,
		Model:         ModelPowerLaw,
		Exponent:      defaultExponent,
		A:             0.57,
		B:             0.19,
		C:             0.19,
		Homophily:     0.8,
		Separation:    4,
		NoiseSigma:    1,
	}
}

// SynthSummary reports what Synth wrote.
type SynthSummary struct {
	Nodes int64 `json:"nodes"`
	// Edges counts CSR entries (each undirected edge twice), as
	// meta.json's num_edges does.
	Edges int64 `json:"edges"`
	// SelfLoopsDropped counts drawn undirected edges whose endpoints
	// coincided; DuplicatesDropped counts CSR entries removed because the
	// row already held that neighbor.
	SelfLoopsDropped  int64   `json:"self_loops_dropped"`
	DuplicatesDropped int64   `json:"duplicates_dropped"`
	DiskBytes         int64   `json:"disk_bytes"`
	Seconds           float64 `json:"seconds"`
	// PeakHeapBytes is the largest live-heap size sampled during the run
	// (runtime/metrics heap objects, like MemStats.HeapAlloc).
	PeakHeapBytes uint64 `json:"peak_heap_bytes"`
}

// Graph500's R-MAT parameters (Graph500 specification, Kronecker
// generator), used when A, B and C are all zero.
const (
	graph500A = 0.57
	graph500B = 0.19
	graph500C = 0.19
)

const (
	defaultSeparation = 4.0
	defaultExponent   = 2.3
	maxSynthClasses   = 1 << 16
	maxSynthEdges     = 1 << 40
	maxSynthDim       = 1 << 16
	// rmatMaxTries bounds the redraws of an edge that fell outside
	// [0, Nodes) when Nodes is not a power of two; the last try folds
	// the ids with a modulo so every edge index yields an edge.
	rmatMaxTries = 64
	// synthChunkEdges is the unit of parallel work and of cancellation
	// checks: small enough to stop within milliseconds, large enough to
	// amortise the scheduling.
	synthChunkEdges = 1 << 16
	// maxSynthBuckets caps the row buckets, each an open temporary file
	// with a buffer per worker, below common open-file limits.
	maxSynthBuckets = 1024
)

// Synth writes a synthetic graph dataset to the directory out (which must
// not exist): an undirected power-law (or R-MAT) graph with permuted vertex ids,
// homophilous classes and class-centroid features.
//
// It streams. Edge i is a pure function of (seed, i), so workers draw
// chunks of edges in any order and append both CSR entries of each, as
// (row, column) pairs, to the temporary bucket file of the row's range.
// Then, one bucket at a time (about SortBufferBytes), a first read counts
// the rows' degrees into indptr (8 bytes per vertex), a second places
// every column at its row's slot, and the rows are sorted, deduplicated
// and compacted in place and appended to indices.npy; its header, written
// for the drawn count, is patched with the final count and indptr holds
// the compacted offsets. Features, labels and splits are written row by
// row. The Go heap is O(Nodes), not O(Edges); the buckets take 8 bytes of
// disk per drawn entry until their turn.
//
// The dataset is built in a staging directory renamed to out at the end,
// so a failed or cancelled run leaves nothing under out. progress, if not
// nil, gets one line per phase and one per 10% of the long phases.
func Synth(ctx context.Context, opt SynthOptions, out string, progress io.Writer) (*SynthSummary, error) {
	start := time.Now()
	if err := opt.resolve(); err != nil {
		return nil, err
	}
	stage, err := StageDir(out)
	if err != nil {
		return nil, err
	}
	r := &synthRun{ctx: ctx, opt: opt, stage: stage.Dir, workers: max(1, runtime.GOMAXPROCS(0)), log: newSynthLog(progress)}
	sum, err := r.run()
	if err != nil {
		stage.Abort()
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		stage.Abort()
		return nil, fmt.Errorf("synth %s: %w", out, err)
	}
	if err := stage.Commit(); err != nil {
		return nil, err
	}
	sum.Seconds = time.Since(start).Seconds()
	r.log.printf("synth: wrote %s: %d vertices, %d CSR entries (dropped %d self-loops, %d duplicate entries), %d bytes, %.1f s",
		out, sum.Nodes, sum.Edges, sum.SelfLoopsDropped, sum.DuplicatesDropped, sum.DiskBytes, sum.Seconds)
	return sum, nil
}

// modelString describes the edge model for logs and notes.
func (o *SynthOptions) modelString() string {
	if o.Model == ModelRMAT {
		return fmt.Sprintf("R-MAT a=%v b=%v c=%v d=%.6g", o.A, o.B, o.C, max(0, 1-o.A-o.B-o.C))
	}
	return fmt.Sprintf("power law (Chung-Lu) exponent %v", o.Exponent)
}

// modelFlags are the synth flags that select the edge model.
func (o *SynthOptions) modelFlags() string {
	if o.Model == ModelRMAT {
		return fmt.Sprintf("--model rmat --rmat-a %v --rmat-b %v --rmat-c %v", o.A, o.B, o.C)
	}
	return fmt.Sprintf("--model powerlaw --exponent %v", o.Exponent)
}

// resolve fills the defaults and checks the options, naming the flag of
// `gnnplan dataset synth` a bad value came from.
func (o *SynthOptions) resolve() error {
	bad := func(field, format string, args ...any) error {
		return &inputerr.Error{Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	prob := func(x float64) bool { return x >= 0 && x <= 1 } // false for NaN
	if o.Name == "" {
		o.Name = "synth"
	}
	if o.Model == "" {
		o.Model = ModelPowerLaw
	}
	if o.Exponent == 0 {
		o.Exponent = defaultExponent
	}
	if o.A == 0 && o.B == 0 && o.C == 0 {
		o.A, o.B, o.C = graph500A, graph500B, graph500C
	}
	if o.Separation == 0 {
		o.Separation = defaultSeparation
	}
	if o.SortBufferBytes == 0 {
		o.SortBufferBytes = max(64<<20, 8*o.Nodes)
	}
	switch {
	case o.Model != ModelPowerLaw && o.Model != ModelRMAT:
		return bad("--model", "%q (want %s or %s)", o.Model, ModelPowerLaw, ModelRMAT)
	case !(o.Exponent > 2 && o.Exponent <= 4):
		return bad("--exponent", "%v (want above 2 and at most 4; real graphs are about 2 to 2.5)", o.Exponent)
	case o.Nodes < 1 || o.Nodes > math.MaxInt32:
		return bad("--nodes", "%d (want 1 to %d: CSR indices are int32)", o.Nodes, math.MaxInt32)
	case o.Edges < 0 || o.Edges > maxSynthEdges:
		return bad("--edges", "%d (want 0 to %d)", o.Edges, int64(maxSynthEdges))
	case o.Nodes < 1<<30 && o.Edges > 10*(o.Nodes*(o.Nodes-1)/2)+1000: // (larger: maxSynthEdges binds first)
		// Edges are draws, duplicates merged: past ten draws per possible
		// edge more add nothing but bucket files.
		return bad("--edges", "%d (want at most %d: %d vertices have %d distinct edges)", o.Edges, 10*(o.Nodes*(o.Nodes-1)/2)+1000, o.Nodes, o.Nodes*(o.Nodes-1)/2)
	case o.FeatureDim < 0 || o.FeatureDim > maxSynthDim:
		return bad("--feature-dim", "%d (want 0 to %d)", o.FeatureDim, maxSynthDim)
	case o.Classes < 1 || o.Classes > maxSynthClasses || int64(o.Classes) > o.Nodes:
		return bad("--classes", "%d (want 1 to min(nodes, %d))", o.Classes, maxSynthClasses)
	case !prob(o.TrainFraction):
		return bad("--train-fraction", "%v (want 0 to 1)", o.TrainFraction)
	case !prob(o.ValFraction):
		return bad("--val-fraction", "%v (want 0 to 1)", o.ValFraction)
	case !prob(o.TestFraction):
		return bad("--test-fraction", "%v (want 0 to 1)", o.TestFraction)
	case o.TrainFraction+o.ValFraction+o.TestFraction > 1+1e-9:
		return bad("--train-fraction, --val-fraction, --test-fraction", "%v + %v + %v = %v (want a sum of at most 1: the splits are disjoint)",
			o.TrainFraction, o.ValFraction, o.TestFraction, o.TrainFraction+o.ValFraction+o.TestFraction)
	case !prob(o.A):
		return bad("--rmat-a", "%v (want a probability, 0 to 1)", o.A)
	case !prob(o.B):
		return bad("--rmat-b", "%v (want a probability, 0 to 1)", o.B)
	case !prob(o.C):
		return bad("--rmat-c", "%v (want a probability, 0 to 1)", o.C)
	case o.A+o.B+o.C > 1+1e-9:
		return bad("--rmat-a, --rmat-b, --rmat-c", "%v + %v + %v = %v (want at most 1: d = 1-a-b-c)", o.A, o.B, o.C, o.A+o.B+o.C)
	case !prob(o.Homophily):
		return bad("--homophily", "%v (want a probability, 0 to 1)", o.Homophily)
	case o.Communities < 0 || (o.Communities > 0 && (o.Communities%o.Classes != 0 || int64(o.Communities) > o.Nodes)):
		return bad("--communities", "%d (want 0, one a class, or a multiple of --classes %d up to --nodes %d)", o.Communities, o.Classes, o.Nodes)
	case !(o.Separation > 0) || math.IsInf(o.Separation, 0):
		return bad("--separation", "%v (want > 0)", o.Separation)
	case !(o.NoiseSigma >= 0) || math.IsInf(o.NoiseSigma, 0):
		return bad("--noise-sigma", "%v (want >= 0)", o.NoiseSigma)
	case o.SortBufferBytes < 0:
		return bad("--sort-buffer-bytes", "%d (want >= 0; 0 picks a default)", o.SortBufferBytes)
	}
	return nil
}

// Stream keys: every random decision is synthMix of one of these, xored with
// the seed, and a counter, so each chunk of edges or rows can be redrawn
// alone and in any order.
const (
	keyPermutation = 0x7065726d75746174 // "permutat"
	keyEdges       = 0x6564676573656467 // "edgesedg"
	keySplits      = 0x73706c6974737370 // "splitssp"
	keyFeatures    = 0x6665617475726573 // "features"
	keyCentroids   = 0x63656e74726f6964 // "centroid"
)

// feistel is a seeded bijection of [0, n): a 4-round unbalanced Feistel
// network on the smallest k-bit domain holding n, with cycle walking
// (Black and Rogaway 2002) to stay below n. Halves alternate between
// floor(k/2) and ceil(k/2) bits, adding round values modulo their width,
// so any k works; since 2^k < 2n, a walk takes under two steps on average.
type feistel struct {
	n      uint64
	la, lb uint // widths of the high and low half
	keys   [4]uint64
}

func newFeistel(n, seed uint64) feistel {
	k := uint(max(2, bits.Len64(n-1)))
	f := feistel{n: n, la: k / 2, lb: k - k/2}
	for i := range f.keys {
		f.keys[i] = rng.Mix(seed + uint64(i+1)*rng.Golden)
	}
	return f
}

func (f *feistel) once(x uint64) uint64 {
	wl, wr := f.la, f.lb
	l, r := x>>wr, x&(1<<wr-1)
	for i := range 4 {
		l, r = r, (l+feistelRound(f.keys[i], r))&(1<<wl-1)
		wl, wr = wr, wl
	}
	return l<<wr | r
}

func (f *feistel) onceInverse(y uint64) uint64 {
	wl, wr := f.la, f.lb
	l, r := y>>wr, y&(1<<wr-1)
	for i := 3; i >= 0; i-- {
		l, r = (r-feistelRound(f.keys[i], l))&(1<<wr-1), l
		wl, wr = wr, wl
	}
	return l<<wr | r
}

// feistelRound is the round function: one multiply, whose bits 40 and up
// depend on every bit of the (at most 16-bit) half and the key. It runs
// for both endpoints of every edge, so it is kept cheaper than synthMix.
func feistelRound(key, half uint64) uint64 { return ((half ^ key) * 0xbf58476d1ce4e5b9) >> 40 }

// apply maps x in [0, n) to its image in [0, n).
func (f *feistel) apply(x uint64) uint64 {
	y := f.once(x)
	for y >= f.n {
		y = f.once(y)
	}
	return y
}

// inverse undoes apply.
func (f *feistel) inverse(y uint64) uint64 {
	x := f.onceInverse(y)
	for x >= f.n {
		x = f.onceInverse(x)
	}
	return x
}

// edgeGen draws edge i of the graph as a pure function of i. A model
// (rankDrawer) draws both endpoints as ranks, where rank r has class
// r mod Classes and the hubs sit at low ranks; homophily then moves the
// destination into the source's community (by default its class) within
// its block of that many neighbouring ranks (so its expected degree
// barely changes), and ids maps ranks to their final, scattered vertex
// ids.
type edgeGen struct {
	n         uint64
	model     rankDrawer
	homophily uint64 // threshold on 53 bits
	groups    uint64 // communities: rank r is in community r mod groups
	key       uint64
	ids       feistel // rank -> vertex id
}

// rankDrawer draws an edge's endpoints as ranks in [0, n), advancing the
// edge's SplitMix64 stream s.
type rankDrawer interface {
	ranks(s *uint64) (ru, rv uint64)
}

func newEdgeGen(opt *SynthOptions) *edgeGen {
	n := uint64(opt.Nodes)
	g := &edgeGen{
		n:         n,
		homophily: uint64(math.Round(opt.Homophily * (1 << 53))),
		groups:    uint64(opt.communities()),
		key:       rng.Mix(opt.Seed ^ keyEdges),
		ids:       newFeistel(n, opt.Seed^keyPermutation),
	}
	if opt.Model == ModelRMAT {
		g.model = newRmatGen(opt)
	} else {
		g.model = newPowerLawGen(opt)
	}
	return g
}

// edge returns edge i's endpoints as vertex ids; ok is false for a
// self-loop, which the CSR drops.
func (g *edgeGen) edge(i uint64) (u, v int32, ok bool) {
	s := rng.Mix(g.key ^ i*rng.Golden) // SplitMix64 stream of this edge
	ru, rv := g.model.ranks(&s)
	if g.homophily > 0 {
		s += rng.Golden
		if rng.Mix(s)>>11 < g.homophily {
			// Keep rv's block of consecutive ranks, one a community (so
			// its popularity), but take the source's community's member.
			rv = rv - rv%g.groups + ru%g.groups
			if rv >= g.n {
				rv -= g.groups // rv's block is not the first, so this stays >= 0
			}
		}
	}
	if ru == rv {
		return 0, 0, false
	}
	return int32(g.ids.apply(ru)), int32(g.ids.apply(rv)), true
}

// powerLawGen is Chung and Lu's model (Chung & Lu 2002, "The average
// distances in random graphs with given expected degrees"): both
// endpoints of every edge are drawn independently with probability
// proportional to a weight, so a vertex's expected degree is
// proportional to its weight. Rank x has weight (x + x0)^-alpha with
// alpha = 1/(gamma-1), which gives degrees a power law of exponent gamma.
// Ranks are drawn by inverting the weight's integral in closed form (one
// Log and one Exp per endpoint, no table), so the generator needs no
// memory. The offset x0 caps the top expected degree at the structural
// cutoff sqrt(mean degree x Nodes), above which a Chung-Lu hub would
// need more than one edge to some other hub and duplicates would eat
// its degree.
type powerLawGen struct {
	n          uint64
	x0         float64
	base, span float64 // (x0)^(1-alpha) and (n+x0)^(1-alpha) - base
	inv        float64 // 1/(1-alpha)
}

func newPowerLawGen(opt *SynthOptions) *powerLawGen {
	alpha := 1 / (opt.Exponent - 1)
	n := float64(opt.Nodes)
	meanDeg := 2 * float64(opt.Edges) / n
	x0 := powerLawOffset(n, alpha, meanDeg)
	e := 1 - alpha
	base := math.Pow(x0, e)
	return &powerLawGen{n: uint64(opt.Nodes), x0: x0, base: base, span: math.Pow(n+x0, e) - base, inv: 1 / e}
}

// powerLawOffset finds x0 such that rank 0's expected degree,
// meanDeg·n·w(0)/W for weights w(x) = (x+x0)^-alpha and their integral W
// over [0, n), is the cutoff sqrt(meanDeg·n), by bisection on log x0. If
// even x0 = 1/2 stays below the cutoff (small or sparse graphs), it
// returns 1/2.
func powerLawOffset(n, alpha, meanDeg float64) float64 {
	e := 1 - alpha
	top := func(x0 float64) float64 {
		w := (math.Pow(n+x0, e) - math.Pow(x0, e)) / e
		return meanDeg * n * math.Pow(x0, -alpha) / w
	}
	cutoff := math.Sqrt(meanDeg * n)
	lo, hi := math.Log(0.5), math.Log(n)
	if top(0.5) <= cutoff {
		return 0.5
	}
	for range 100 {
		mid := (lo + hi) / 2
		if top(math.Exp(mid)) > cutoff {
			lo = mid
		} else {
			hi = mid
		}
	}
	return math.Exp(hi)
}

func (g *powerLawGen) ranks(s *uint64) (ru, rv uint64) {
	*s += rng.Golden
	ru = g.rank(rng.Mix(*s))
	*s += rng.Golden
	rv = g.rank(rng.Mix(*s))
	return ru, rv
}

// rank maps 53 uniform bits of x to a rank by the inverse of the
// weights' cumulative distribution.
func (g *powerLawGen) rank(x uint64) uint64 {
	u := float64(x>>11) * 0x1p-53
	r := math.Exp(math.Log(g.base+u*g.span)*g.inv) - g.x0
	if r <= 0 {
		return 0
	}
	return min(uint64(r), g.n-1)
}

// rmatGen is Graph500's R-MAT: a rank's bits are chosen one level at a
// time by the quadrant probabilities, so the hubs sit at ranks with few
// one bits.
type rmatGen struct {
	n             uint64
	levels        int
	ta, tab, tabc uint64 // cumulative quadrant thresholds on 32 bits
}

func newRmatGen(opt *SynthOptions) *rmatGen {
	n := uint64(opt.Nodes)
	th := func(p float64) uint64 { return uint64(math.Round(min(p, 1) * (1 << 32))) }
	return &rmatGen{
		n:      n,
		levels: bits.Len64(n - 1),
		ta:     th(opt.A),
		tab:    th(opt.A + opt.B),
		tabc:   th(opt.A + opt.B + opt.C),
	}
}

// quadrant returns R-MAT's choice for one level from a 32-bit uniform t:
// the source's bit is set in quadrants c and d, the destination's in b
// and d. It is branch-free because the choice is a coin flip the CPU
// cannot predict.
func (g *rmatGen) quadrant(t uint64) (ub, vb uint64) {
	// (t-x)>>63 is 1 exactly when t < x, as both are below 2^33.
	geA := (t-g.ta)>>63 ^ 1
	geAB := (t-g.tab)>>63 ^ 1
	geABC := (t-g.tabc)>>63 ^ 1
	return geAB, geA ^ geAB ^ geABC
}

// ranks draws R-MAT ranks, redrawing ranks beyond n-1 (when n is not a
// power of two) up to rmatMaxTries times and then folding them.
func (g *rmatGen) ranks(s *uint64) (ru, rv uint64) {
	for try := 0; ; try++ {
		ru, rv = 0, 0
		// Each level needs one 32-bit uniform, so one draw serves two.
		for l := 0; l < g.levels; l += 2 {
			*s += rng.Golden
			x := rng.Mix(*s)
			ub, vb := g.quadrant(x & 0xffffffff)
			ru |= ub << l
			rv |= vb << l
			if l+1 < g.levels {
				ub, vb = g.quadrant(x >> 32)
				ru |= ub << (l + 1)
				rv |= vb << (l + 1)
			}
		}
		if ru < g.n && rv < g.n {
			return ru, rv
		}
		if try == rmatMaxTries-1 {
			return ru % g.n, rv % g.n
		}
	}
}

// synthRun holds one Synth call's state.
type synthRun struct {
	ctx     context.Context
	opt     SynthOptions
	stage   string
	workers int
	log     *synthLog

	// ptr holds the CSR's offsets through their life: per bucket, the
	// rows' degrees, then their drawn starts in the sort buffer, then
	// placement cursors (ending at the drawn ends), and finally the
	// compacted row starts, which are the indptr.
	ptr []int64

	selfLoops, duplicates int64
	peakHeap              uint64
	heapSample            []metrics.Sample
}

func (r *synthRun) run() (*SynthSummary, error) {
	r.heapSample = []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	n := r.opt.Nodes
	r.log.printf("synth: %d vertices, %d edges to draw, %s, %d classes, homophily %v, seed %d, %d workers",
		n, r.opt.Edges, r.opt.modelString(), r.opt.Classes, r.opt.Homophily, r.opt.Seed, r.workers)
	r.ptr = make([]int64, n+1)
	if err := r.buildCSR(); err != nil {
		return nil, err
	}
	if err := r.writeInt64s(IndptrFile, r.ptr); err != nil {
		return nil, err
	}
	numEdges := r.ptr[n]
	r.ptr = nil
	split, err := r.writeVertices()
	if err != nil {
		return nil, err
	}
	m := Meta{
		Name:         r.opt.Name,
		NumNodes:     n,
		NumEdges:     numEdges,
		Undirected:   true,
		FeatureDim:   r.opt.FeatureDim,
		FeatureDType: "float32",
		IndexDType:   "int32",
		NumClasses:   r.opt.Classes,
		NumTrain:     split[0],
		NumVal:       split[1],
		NumTest:      split[2],
		// The options regenerate the same bytes.
		Source: fmt.Sprintf("gnnplan dataset synth --nodes %d --edges %d --feature-dim %d --classes %d --train-fraction %v --val-fraction %v --test-fraction %v --seed %d %s --homophily %v --separation %v --noise-sigma %v",
			n, r.opt.Edges, r.opt.FeatureDim, r.opt.Classes, r.opt.TrainFraction, r.opt.ValFraction, r.opt.TestFraction, r.opt.Seed,
			r.opt.modelFlags(), r.opt.Homophily, r.opt.Separation, r.opt.NoiseSigma) + r.opt.communitiesFlag(),
		Notes: []string{
			fmt.Sprintf("%s over %d vertices with seeded-permuted ids; %d undirected edges drawn, each stored both ways",
				r.opt.modelString(), n, r.opt.Edges),
			fmt.Sprintf("dropped %d self-loops and %d duplicate CSR entries", r.selfLoops, r.duplicates),
			fmt.Sprintf("homophily %v: that share of edges has its destination moved into the source's %s", r.opt.Homophily, r.opt.communitiesNote()),
			fmt.Sprintf("features: class centroid of norm %v plus N(0, %v^2) noise per dimension", r.opt.Separation, r.opt.NoiseSigma),
		},
	}
	if err := WriteMeta(r.stage, m); err != nil {
		return nil, err
	}
	r.sampleHeap()
	disk, err := dirBytes(r.stage)
	if err != nil {
		return nil, err
	}
	return &SynthSummary{Nodes: n, Edges: numEdges, SelfLoopsDropped: r.selfLoops, DuplicatesDropped: r.duplicates,
		DiskBytes: disk, PeakHeapBytes: r.peakHeap}, nil
}

// sampleHeap records the live heap; called at phase boundaries and from
// progress ticks, which is where the big arrays are alive.
func (r *synthRun) sampleHeap() {
	metrics.Read(r.heapSample)
	if s := r.heapSample[0].Value; s.Kind() == metrics.KindUint64 {
		r.peakHeap = max(r.peakHeap, s.Uint64())
	}
}

// parallel runs fn over [0, total) in chunks on r.workers goroutines,
// stopping at the first error or when the context is cancelled, and
// reports progress for the named phase.
func (r *synthRun) parallel(phase string, total, chunk int64, fn func(worker int, lo, hi int64) error) error {
	tick := r.log.phase(phase, total)
	// Small jobs get smaller chunks, so both workers get some and the
	// progress lines still come about every tenth.
	chunk = max(1, min(chunk, total/int64(16*r.workers)))
	var next atomic.Int64
	var firstErr error
	var mu sync.Mutex
	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := range r.workers {
		wg.Go(func() {
			for !stop.Load() {
				lo := next.Add(chunk) - chunk
				if lo >= total {
					return
				}
				err := r.ctx.Err()
				if err == nil {
					err = fn(w, lo, min(lo+chunk, total))
				}
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					stop.Store(true)
					return
				}
				if tick(min(lo+chunk, total) - lo) {
					mu.Lock()
					r.sampleHeap()
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	r.sampleHeap()
	if firstErr != nil && r.ctx.Err() != nil {
		return fmt.Errorf("synth: %s: %w", phase, r.ctx.Err())
	}
	return firstErr
}

// bucketPlan splits the rows into 2^shift-row ranges expected to hold at
// most SortBufferBytes of entries each. Permuted ids spread the hubs, so
// the entries of equal ranges are about equal and can be planned before
// any edge is drawn.
type bucketPlan struct {
	shift uint
	n     int // buckets
}

func (r *synthRun) planBuckets() bucketPlan {
	rows := uint64(r.opt.Nodes)
	perRow := 2 * float64(r.opt.Edges) / float64(rows)
	budget := float64(max(r.opt.SortBufferBytes/4, 1))
	shift := uint(bits.Len64(rows)) // one bucket holds every row
	if perRow*float64(rows) > budget {
		shift = uint(max(0, bits.Len64(uint64(budget/perRow))-1))
	}
	for (rows+1<<shift-1)>>shift > maxSynthBuckets {
		shift++
	}
	return bucketPlan{shift: shift, n: int((rows + 1<<shift - 1) >> shift)}
}

// bucketFile collects the (row, column) entries of one row range, written
// by all workers in whatever order they come: sorting the rows later
// makes the result independent of it.
type bucketFile struct {
	mu    sync.Mutex
	f     *os.File
	wrote int64 // entries
	err   error
}

// buildCSR draws the edges once, sending every CSR entry to a bucket
// file by row range, then loads one bucket at a time, sorts and
// deduplicates its rows and appends them to indices.npy. It leaves the
// final row offsets in r.ptr.
func (r *synthRun) buildCSR() error {
	path := filepath.Join(r.stage, IndicesFile)
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	defer f.Close()
	// The header is sized for every drawn entry and patched to the final
	// count at the end, padded to the same length.
	hdr := npy.Encode("<i4", []int64{2 * r.opt.Edges}, 0)
	out := bufio.NewWriterSize(f, 1<<20)
	if _, err := out.Write(hdr); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	plan := r.planBuckets()
	buckets, err := r.drawIntoBuckets(plan)
	defer func() {
		for _, b := range buckets {
			if b != nil && b.f != nil {
				b.f.Close()
				os.Remove(b.f.Name())
			}
		}
	}()
	if err != nil {
		return err
	}
	written, err := r.sortBuckets(plan, buckets, out, path)
	if err != nil {
		return err
	}
	r.ptr[r.opt.Nodes] = written
	r.duplicates = 2*(r.opt.Edges-r.selfLoops) - written
	if err := out.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := f.WriteAt(npy.Encode("<i4", []int64{written}, len(hdr)), 0); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

func (r *synthRun) drawIntoBuckets(plan bucketPlan) ([]*bucketFile, error) {
	gen := newEdgeGen(&r.opt)
	buckets := make([]*bucketFile, plan.n)
	for b := range buckets {
		f, err := fsutil.CreateTemp(r.stage, fmt.Sprintf(".bucket-%05d-*.tmp", b))
		if err != nil {
			return buckets, fmt.Errorf("create bucket: %w", err)
		}
		buckets[b] = &bucketFile{f: f}
	}
	// Per-worker, per-bucket buffers: 32 MiB in all, 4 KiB to 1 MiB each.
	bufBytes := min(1<<20, max(4<<10, (32<<20)/(r.workers*plan.n))) &^ 7
	bufs := make([][][]byte, r.workers)
	flush := func(b int, buf []byte) error {
		bf := buckets[b]
		bf.mu.Lock()
		defer bf.mu.Unlock()
		if bf.err != nil {
			return bf.err
		}
		if _, err := bf.f.Write(buf); err != nil {
			bf.err = fmt.Errorf("write bucket %s: %w", bf.f.Name(), err)
			return bf.err
		}
		bf.wrote += int64(len(buf) / 8)
		return nil
	}
	var loops atomic.Int64
	err := r.parallel(fmt.Sprintf("drawing edges into %d row buckets", plan.n), r.opt.Edges, synthChunkEdges, func(w int, lo, hi int64) error {
		if bufs[w] == nil {
			bufs[w] = make([][]byte, plan.n)
			for b := range bufs[w] {
				bufs[w][b] = make([]byte, 0, bufBytes)
			}
		}
		mine := bufs[w]
		put := func(row, col int32) error {
			b := int(uint32(row) >> plan.shift)
			buf := binary.LittleEndian.AppendUint32(mine[b], uint32(row))
			buf = binary.LittleEndian.AppendUint32(buf, uint32(col))
			if len(buf) == cap(buf) {
				if err := flush(b, buf); err != nil {
					return err
				}
				buf = buf[:0]
			}
			mine[b] = buf
			return nil
		}
		var l int64
		for i := lo; i < hi; i++ {
			u, v, ok := gen.edge(uint64(i))
			if !ok {
				l++
				continue
			}
			if err := put(u, v); err != nil {
				return err
			}
			if err := put(v, u); err != nil {
				return err
			}
		}
		loops.Add(l)
		return nil
	})
	r.selfLoops = loops.Load()
	if err != nil {
		return buckets, err
	}
	for _, wb := range bufs {
		for b, buf := range wb {
			if len(buf) > 0 {
				if err := flush(b, buf); err != nil {
					return buckets, err
				}
			}
		}
	}
	return buckets, nil
}

// sortBuckets turns each bucket into CSR rows: it reads the bucket twice,
// first counting the rows' degrees, then placing each column at its row's
// next slot (a counting sort by row), sorts and deduplicates the rows,
// and writes the compacted rows. It leaves r.ptr[v] at row v's final
// offset and returns the entries written.
func (r *synthRun) sortBuckets(plan bucketPlan, buckets []*bucketFile, out *bufio.Writer, path string) (int64, error) {
	most, total := int64(0), int64(0)
	for _, bf := range buckets {
		most, total = max(most, bf.wrote), total+bf.wrote
	}
	r.log.printf("synth: %d CSR entries drawn, at most %d in a bucket", total, most)
	buf := make([]int32, most)
	raw := make([]byte, 1<<20)
	n := r.opt.Nodes
	var written int64
	tick := r.log.phase("sorting and deduplicating rows", total)
	for b, bf := range buckets {
		if err := r.ctx.Err(); err != nil {
			return 0, fmt.Errorf("synth: sorting rows: %w", err)
		}
		lo, hi := int64(b)<<plan.shift, min(int64(b+1)<<plan.shift, n)
		rows := r.ptr[lo:hi] // zero: nothing has touched these rows yet
		err := readPairs(bf, raw, func(pairs []byte) error {
			for j := 0; j < len(pairs); j += 8 {
				row := int64(binary.LittleEndian.Uint32(pairs[j:]))
				if row < lo || row >= hi {
					return fmt.Errorf("read bucket %s: row %d outside [%d, %d)", bf.f.Name(), row, lo, hi)
				}
				rows[row-lo]++
			}
			return nil
		})
		if err != nil {
			return 0, err
		}
		// Degrees to drawn starts within buf; placing advances them to
		// the drawn ends, which compactRows expects.
		var at int64
		for i, d := range rows {
			rows[i] = at
			at += d
		}
		if err := readPairs(bf, raw, func(pairs []byte) error {
			for j := 0; j < len(pairs); j += 8 {
				i := int64(binary.LittleEndian.Uint32(pairs[j:])) - lo
				buf[rows[i]] = int32(binary.LittleEndian.Uint32(pairs[j+4:]))
				rows[i]++
			}
			return nil
		}); err != nil {
			return 0, err
		}
		bf.f.Close()
		os.Remove(bf.f.Name())
		bf.f = nil
		kept := r.compactRows(buf[:bf.wrote], lo, hi, written)
		if err := writeInt32s(out, buf[:kept], raw); err != nil {
			return 0, fmt.Errorf("write %s: %w", path, err)
		}
		written += kept
		if tick(bf.wrote) {
			r.sampleHeap()
		}
	}
	return written, nil
}

// readPairs reads a bucket from the start, handing fn its (row, column)
// pairs a buffer at a time.
func readPairs(bf *bucketFile, raw []byte, fn func(pairs []byte) error) error {
	if _, err := bf.f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("read bucket %s: %w", bf.f.Name(), err)
	}
	raw = raw[:len(raw)&^7]
	for left := bf.wrote * 8; left > 0; {
		k, err := io.ReadFull(bf.f, raw[:min(int64(len(raw)), left)])
		if err != nil {
			return fmt.Errorf("read bucket %s: %w", bf.f.Name(), err)
		}
		left -= int64(k)
		if err := fn(raw[:k]); err != nil {
			return err
		}
	}
	return nil
}

// compactRows sorts and deduplicates rows [lo, hi), whose entries fill
// buf in order (row v ends at ptr[v]), and moves them to the front of buf.
// It sets ptr[v] to row v's final offset, written + its start in buf, and
// returns how many entries remain. Blocks of rows with about equal entries
// are compacted in parallel, each at its own start, then slid together.
func (r *synthRun) compactRows(buf []int32, lo, hi, written int64) int64 {
	type block struct{ lo, hi, start, kept int64 }
	target := max(int64(len(buf))/int64(4*r.workers), 1<<16)
	var blocks []block
	start := int64(0)
	for v := lo; v < hi; {
		bl := block{lo: v, start: start}
		for v < hi && (v == bl.lo || r.ptr[v]-bl.start <= target) {
			v++
		}
		bl.hi = v
		start = r.ptr[v-1]
		blocks = append(blocks, bl)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(r.workers, len(blocks)) {
		wg.Go(func() {
			var rs radixScratch
			for {
				i := next.Add(1) - 1
				if i >= int64(len(blocks)) {
					return
				}
				bl := &blocks[i]
				s, w := bl.start, bl.start
				for v := bl.lo; v < bl.hi; v++ {
					e := r.ptr[v]
					row := buf[s:e]
					rs.sort(row, r.opt.Nodes)
					k := 0
					for j, x := range row {
						if j == 0 || x != row[k-1] {
							row[k] = x
							k++
						}
					}
					copy(buf[w:], row[:k])
					r.ptr[v] = w // start in buf, made absolute below
					w += int64(k)
					s = e
				}
				bl.kept = w - bl.start
			}
		})
	}
	wg.Wait()
	kept := int64(0)
	for _, bl := range blocks {
		copy(buf[kept:], buf[bl.start:bl.start+bl.kept])
		for v := bl.lo; v < bl.hi; v++ {
			r.ptr[v] += written + kept - bl.start
		}
		kept += bl.kept
	}
	return kept
}

// radixMinRow is the row length from which an LSD radix sort beats
// pdqsort: below it, clearing the digit counts costs more than comparing.
const radixMinRow = 512

// radixScratch is one worker's buffers for sorting rows. Hub rows hold a
// large share of an R-MAT graph's entries, and comparison sorting them
// dominated the row phase.
type radixScratch struct {
	tmp    []int32
	counts []int
}

// sort sorts row, whose values lie in [0, n), ascending.
func (rs *radixScratch) sort(row []int32, n int64) {
	if len(row) < radixMinRow {
		slices.Sort(row)
		return
	}
	// Digits of at most 12 bits keep the counts within L1.
	width := bits.Len64(uint64(n - 1))
	passes := max(1, (width+11)/12)
	digit := (width + passes - 1) / passes
	if cap(rs.tmp) < len(row) {
		rs.tmp = make([]int32, len(row))
	}
	if len(rs.counts) != 1<<digit {
		rs.counts = make([]int, 1<<digit)
	}
	src, dst := row, rs.tmp[:len(row)]
	mask := uint32(1)<<digit - 1
	for p := range passes {
		shift := uint(p * digit)
		clear(rs.counts)
		for _, x := range src {
			rs.counts[uint32(x)>>shift&mask]++
		}
		at := 0
		for d, c := range rs.counts {
			rs.counts[d] = at
			at += c
		}
		for _, x := range src {
			d := uint32(x) >> shift & mask
			dst[rs.counts[d]] = x
			rs.counts[d]++
		}
		src, dst = dst, src
	}
	if passes%2 == 1 {
		copy(row, src)
	}
}

// writeInt32s writes xs little-endian through scratch.
func writeInt32s(w io.Writer, xs []int32, scratch []byte) error {
	for len(xs) > 0 {
		k := min(len(xs), len(scratch)/4)
		for i, x := range xs[:k] {
			binary.LittleEndian.PutUint32(scratch[4*i:], uint32(x))
		}
		if _, err := w.Write(scratch[:4*k]); err != nil {
			return err
		}
		xs = xs[k:]
	}
	return nil
}

// writeInt64s streams xs to an int64 array in the staging directory,
// in pieces so the writer's encoding buffer stays small.
func (r *synthRun) writeInt64s(name string, xs []int64) error {
	a, err := CreateArray(filepath.Join(r.stage, name), "<i8", int64(len(xs)))
	if err != nil {
		return err
	}
	for len(xs) > 0 {
		k := min(len(xs), 1<<16)
		if err := a.Write(xs[:k]); err != nil {
			a.Abort()
			return err
		}
		xs = xs[k:]
	}
	return a.Close()
}

// writeVertices writes features, labels and the three splits in one pass
// over the vertices, chunk by chunk. A vertex's class is its R-MAT id mod
// Classes (so the homophilous redraw can aim at a class by arithmetic);
// its split is decided by a second seeded permutation: the first
// NumTrain images are training vertices, the next NumVal validation, and
// so on, which gives exact counts and sorted index files without holding
// any list. It returns the split sizes.
func (r *synthRun) writeVertices() ([3]int64, error) {
	n, dim := r.opt.Nodes, r.opt.FeatureDim
	split, cuts := r.splitSizes()
	writers, err := r.createVertexArrays(split)
	if err != nil {
		return split, err
	}
	defer func() {
		for _, a := range writers {
			if a != nil {
				a.Abort()
			}
		}
	}()
	gen := newSynthVertexGen(r.opt)
	rows := max(int64(1024), int64((1<<20)/max(dim, 1)))
	chunk := &synthVertexChunk{
		feats:  make([]float32, rows*int64(dim)),
		labels: make([]int64, rows),
		ranks:  make([]int64, rows),
	}
	tick := r.log.phase("writing features, labels and splits", n)
	for lo := int64(0); lo < n; lo += rows {
		if err := r.ctx.Err(); err != nil {
			return split, fmt.Errorf("synth: writing features: %w", err)
		}
		k := min(lo+rows, n) - lo
		r.fillVertices(gen, chunk, lo, k)
		if err := chunk.write(writers, lo, k, dim, cuts); err != nil {
			return split, err
		}
		if tick(k) {
			r.sampleHeap()
		}
	}
	for i, a := range writers {
		writers[i] = nil // Close cleans up after itself; the rest are aborted by the defer
		if err := a.Close(); err != nil {
			return split, err
		}
	}
	return split, nil
}

// splitSizes rounds the fractions to vertex counts that never exceed
// Nodes, and returns them with their running sums, the split ranks'
// cut points.
func (r *synthRun) splitSizes() (split, cuts [3]int64) {
	n := r.opt.Nodes
	for i, f := range []float64{r.opt.TrainFraction, r.opt.ValFraction, r.opt.TestFraction} {
		split[i] = min(int64(math.Round(f*float64(n))), n-split[0]-split[1])
	}
	cuts = [3]int64{split[0], split[0] + split[1], split[0] + split[1] + split[2]}
	return split, cuts
}

// createVertexArrays creates the features, labels, train, val and test
// arrays in the staging directory, in that order; on failure none is
// left.
func (r *synthRun) createVertexArrays(split [3]int64) ([]*ArrayWriter, error) {
	n, dim := r.opt.Nodes, r.opt.FeatureDim
	names := []string{FeaturesFile, LabelsFile, TrainFile, ValFile, TestFile}
	shapes := [][]int64{{n, int64(dim)}, {n}, {split[0]}, {split[1]}, {split[2]}}
	writers := make([]*ArrayWriter, len(names))
	for i, name := range names {
		dtype := "<i8"
		if name == FeaturesFile {
			dtype = "<f4"
		}
		a, err := CreateArray(filepath.Join(r.stage, name), dtype, shapes[i]...)
		if err != nil {
			for _, w := range writers[:i] {
				w.Abort()
			}
			return nil, err
		}
		writers[i] = a
	}
	return writers, nil
}

// synthVertexGen draws a vertex's class, split rank and features as a
// pure function of its id; it is safe for concurrent use.
type synthVertexGen struct {
	ids, splitPerm feistel
	featKey        uint64
	centroids      []float64 // [classes, dim], see synthCentroids
	classes        int64
	dim            int64
	noiseSigma     float64
}

func newSynthVertexGen(opt SynthOptions) *synthVertexGen {
	n := uint64(opt.Nodes)
	return &synthVertexGen{
		ids:        newFeistel(n, opt.Seed^keyPermutation),
		splitPerm:  newFeistel(n, opt.Seed^keySplits),
		featKey:    rng.Mix(opt.Seed ^ keyFeatures),
		centroids:  synthCentroids(opt),
		classes:    int64(opt.Classes),
		dim:        int64(opt.FeatureDim),
		noiseSigma: opt.NoiseSigma,
	}
}

// synthVertexChunk holds one chunk of vertices' rows on their way to the
// arrays.
type synthVertexChunk struct {
	feats         []float32 // [rows, dim]
	labels, ranks []int64
	lists         [3][]int64 // the chunk's train, val and test vertices
}

// fillVertices fills the chunk's first k rows, for vertices lo to
// lo+k-1. Workers fill disjoint slices of the chunk, each vertex seeded
// by its id, so the bytes do not depend on the worker count.
func (r *synthRun) fillVertices(gen *synthVertexGen, c *synthVertexChunk, lo, k int64) {
	per := (k + int64(r.workers) - 1) / int64(r.workers)
	var wg sync.WaitGroup
	for w0 := int64(0); w0 < k; w0 += per {
		w1 := min(w0+per, k)
		wg.Go(func() { gen.fill(c, lo, w0, w1) })
	}
	wg.Wait()
}

// fill fills the chunk's rows j0 to j1-1, for vertices lo+j0 to lo+j1-1.
func (gen *synthVertexGen) fill(c *synthVertexChunk, lo, j0, j1 int64) {
	src := rand.NewPCG(0, 0)
	gauss := rand.New(src)
	dim := gen.dim
	for j := j0; j < j1; j++ {
		v := lo + j
		class := int64(gen.ids.inverse(uint64(v))) % gen.classes
		c.labels[j] = class
		c.ranks[j] = int64(gen.splitPerm.apply(uint64(v)))
		if dim == 0 {
			continue
		}
		src.Seed(gen.featKey, uint64(v))
		row := c.feats[j*dim : (j+1)*dim]
		cen := gen.centroids[class*dim : (class+1)*dim]
		for d := range row {
			row[d] = float32(cen[d] + gen.noiseSigma*gauss.NormFloat64())
		}
	}
}

// write appends the chunk's first k rows, vertices lo to lo+k-1, to the
// arrays of createVertexArrays: features and labels, then each vertex to
// the split its rank falls in, so the split files come out sorted.
func (c *synthVertexChunk) write(writers []*ArrayWriter, lo, k int64, dim int, cuts [3]int64) error {
	if err := writers[0].Write(c.feats[:k*int64(dim)]); err != nil {
		return err
	}
	if err := writers[1].Write(c.labels[:k]); err != nil {
		return err
	}
	for i := range c.lists {
		c.lists[i] = c.lists[i][:0]
	}
	for j := range k {
		for s, cut := range cuts {
			if c.ranks[j] < cut {
				c.lists[s] = append(c.lists[s], lo+j)
				break
			}
		}
	}
	for s := range c.lists {
		if len(c.lists[s]) > 0 {
			if err := writers[2+s].Write(c.lists[s]); err != nil {
				return err
			}
		}
	}
	return nil
}

// synthCentroids returns the class centroids, row-major [Classes,
// FeatureDim]: seeded Gaussian directions, orthonormalised by Gram-Schmidt
// while there are dimensions left (so classes are equally separable), then
// scaled to norm Separation.
func synthCentroids(opt SynthOptions) []float64 {
	c, d := opt.Classes, opt.FeatureDim
	out := make([]float64, c*d)
	if d == 0 {
		return out
	}
	rng := rand.New(rand.NewPCG(rng.Mix(opt.Seed^keyCentroids), 0))
	for i := range c {
		row := out[i*d : (i+1)*d]
		for {
			for j := range row {
				row[j] = rng.NormFloat64()
			}
			if i < d {
				for p := range i {
					prev := out[p*d : (p+1)*d]
					dot := 0.0
					for j := range row {
						dot += row[j] * prev[j]
					}
					for j := range row {
						row[j] -= dot * prev[j]
					}
				}
			}
			norm := 0.0
			for _, x := range row {
				norm += x * x
			}
			if norm = math.Sqrt(norm); norm > 1e-6 {
				for j := range row {
					row[j] /= norm
				}
				break
			}
		}
	}
	for i := range out {
		out[i] *= opt.Separation
	}
	return out
}

// dirBytes sums the sizes of the files in dir.
func dirBytes(dir string) (int64, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("list %s: %w", dir, err)
	}
	var total int64
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			return 0, fmt.Errorf("stat %s: %w", filepath.Join(dir, e.Name()), err)
		}
		total += info.Size()
	}
	return total, nil
}

// synthLog prints progress lines: one per phase, and one per 10% of a
// phase's work. Workers report from any goroutine.
type synthLog struct {
	mu sync.Mutex
	w  io.Writer
	p  Progress // w as a Progress, or nil for plain lines
}

func newSynthLog(w io.Writer) *synthLog { return &synthLog{w: w, p: AsProgress(w)} }

func (l *synthLog) printf(format string, args ...any) {
	if l.w == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, format+"\n", args...)
}

// phase announces a phase of total units and returns the function that
// counts units done; it reports true when it printed a percentage.
func (l *synthLog) phase(name string, total int64) func(done int64) bool {
	add := func(int64) {}
	if l.p != nil {
		add = l.p.Phase("synth: "+name, total)
	} else {
		l.printf("synth: %s", name)
	}
	var done, printed atomic.Int64
	return func(k int64) bool {
		add(k)
		if total <= 0 {
			return false
		}
		d := done.Add(k)
		tenth := d * 10 / total
		for {
			p := printed.Load()
			if tenth <= p {
				return false
			}
			if printed.CompareAndSwap(p, tenth) {
				if l.p == nil {
					l.printf("synth: %s: %d%%", name, tenth*10)
				}
				return true
			}
		}
	}
}
