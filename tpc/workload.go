package tpc

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/gnnplan/gnnplan/topology"
)

// Degree laws accepted in Workload.Degrees.
const (
	DegreesHeavyTailed = "heavy-tailed"
	DegreesUniform     = "uniform"
)

// Model names accepted in Workload.Model.
const (
	ModelGraphSAGE = "graphsage"
	ModelGCN       = "gcn"
	ModelGAT       = "gat"
)

// Workload is one GNN training job: dataset size, model and sampling.
type Workload struct {
	Name          string  `json:"name"`
	Vertices      int64   `json:"vertices"`
	Edges         int64   `json:"edges"`         // directed edges as stored in CSR (an undirected edge counts twice)
	FeatureDim    int     `json:"feature_dim"`   // values per feature row
	FeatureBytes  int     `json:"feature_bytes"` // bytes per feature value: 4 for float32, 2 for float16
	Classes       int     `json:"classes"`
	TrainFraction float64 `json:"train_fraction"` // share of vertices that are training seeds
	Model         string  `json:"model"`          // "graphsage", "gcn", "gat"
	Hidden        int     `json:"hidden"`         // hidden width; per head for GAT
	Heads         int     `json:"heads"`          // GAT only; 1 otherwise
	Fanouts       []int   `json:"fanouts"`        // per hop, seeds outward, e.g. [25, 10]
	BatchSize     int     `json:"batch_size"`     // training seeds per mini-batch
	// Degrees is how the vertices' degrees spread around the average:
	// "" or DegreesHeavyTailed (real graphs) or DegreesUniform (every
	// vertex near the average, as in a uniform random graph).
	Degrees string `json:"degrees,omitempty"`
	Source  string `json:"source"` // where the figures come from
}

// TrainFlags are the flags of `gnnplan train` that train exactly this
// workload's model: its architecture, widths, layers, fanouts and batch,
// so that a command printed beside a prediction runs what was predicted
// rather than train's own defaults.
func (w Workload) TrainFlags() []string {
	fan := make([]string, len(w.Fanouts))
	for i, f := range w.Fanouts {
		fan[i] = strconv.Itoa(f)
	}
	flags := []string{"--model", w.Model, "--hidden", strconv.Itoa(w.Hidden), "--layers", strconv.Itoa(len(w.Fanouts)),
		"--fanouts", strings.Join(fan, ","), "--batch", strconv.Itoa(w.BatchSize)}
	if w.Model == ModelGAT {
		flags = append(flags, "--heads", strconv.Itoa(w.Heads))
	}
	return flags
}

// BatchEstimate is the expected cost of one full mini-batch under the
// uniform sampling model of Workload.PerBatch.
type BatchEstimate struct {
	// Hops[k] is the expected number of distinct vertices first reached at
	// hop k (Hops[0] = seeds); len(Hops) = len(Fanouts)+1.
	Hops []float64 `json:"hops"`
	// SampledEdges[k] is the number of edges in the block sampled at hop
	// k+1, i.e. from the frontier of hop k outward; len = len(Fanouts).
	SampledEdges   []float64 `json:"sampled_edges"`
	UniqueVertices float64   `json:"unique_vertices"` // all hops, deduplicated
	FeatureBytes   float64   `json:"feature_bytes"`   // UniqueVertices * row bytes
	// TopologyBytes is the CSR read while sampling: per frontier vertex its
	// indptr pair (16 B) and per sampled neighbor one index (4 or 8 B). This
	// is the read pattern of GPU sampling over UVA that Moment and Hyperion
	// assume (only the touched words cross PCIe); rounding to PCIe or SSD
	// transaction sizes is the transaction model's job (Hyperion III-B).
	TopologyBytes float64 `json:"topology_bytes"`
	// Blocks are the batch's sampled blocks, the seeds' first, and Work
	// the step's kernel work on them (StepWork, the input rows gathered
	// in the step); FLOPs is Work's products, forward and backward.
	Blocks []BlockShape `json:"blocks"`
	Work   StepWork     `json:"work"`
	FLOPs  float64      `json:"flops"`
}

// Byte widths of the CSR arrays (docs/architecture.md section 8): indptr holds edge
// offsets, which pass 2^31 on every large dataset, so it is always int64.
const (
	indptrBytes     = 8
	indptrPairBytes = 2 * indptrBytes // indptr[v] and indptr[v+1]
)

// modelDefaults are the hidden width and head count the papers train with
// (docs/architecture.md section 12): GraphSAGE and GCN hidden 256; GAT 64 per head x 8
// heads.
func modelDefaults(model string) (hidden, heads int, ok bool) {
	switch model {
	case ModelGraphSAGE, ModelGCN:
		return 256, 1, true
	case ModelGAT:
		return 64, 8, true
	}
	return 0, 0, false
}

func modelNames() []string { return []string{ModelGraphSAGE, ModelGCN, ModelGAT} }

// builtinTable builds the built-in workloads afresh on every call, so callers
// may modify what they get.
//
// The four large graphs are the ones Moment (table 2) and Hyperion (table II)
// train on; both papers pick 1% of vertices at random as training seeds
// ("following [Legion]") and use batch 8000, fanout [25, 10], GraphSAGE
// hidden 256 (docs/architecture.md section 12). Edge counts are the directed counts as
// the CSR stores them; their topology sizes (14 GB, 34 GB, 384 GB, 348 GB) are
// (V+1)*8 + E*8 for these E, i.e. no reverse edges were added.
func builtinTable() []Workload {
	large := func(name string, v, e int64, dim, classes int, source string) Workload {
		return Workload{
			Name: name, Vertices: v, Edges: e, FeatureDim: dim, FeatureBytes: 4,
			Classes: classes, TrainFraction: 0.01, Model: ModelGraphSAGE,
			Hidden: 256, Heads: 1, Fanouts: []int{25, 10}, BatchSize: 8000,
			Source: source,
		}
	}
	return []Workload{
		large("ogbn-papers100M", 111_059_956, 1_615_685_872, 128, 172,
			"OGB ogbn-papers100M (ogb.stanford.edu/docs/nodeprop): 111,059,956 vertices, "+
				"1,615,685,872 directed citation edges as OGB stores them (DGL and DiskGNN add reverse "+
				"edges, ~3.2B), 128-d float32, 172 classes. OGB's split has 1,207,179 training vertices "+
				"(1.09%); train_fraction is the papers' 1% random seeds (Moment table 2, Hyperion table II: "+
				"111M/1.6B, 56 GB features)."),
		large("igb-hom", 269_346_174, 3_995_777_033, 1024, 19,
			"IGB260M homogeneous, size full (IGB dataloader: 269,346,174 paper vertices; "+
				"3,995,777,033 edges per the GIDS/CAM dataset tables), 1024-d float32 (1.1 TB), the "+
				"19-class label set (node_label_19; 2983 classes in node_label_2K). train_fraction is the "+
				"papers' 1% (Moment table 2, Hyperion table II: 269M/4B); DiskGNN instead uses the 128-d "+
				"variant with 5.06% training vertices."),
		large("uk-2014", 787_801_471, 47_284_178_505, 1024, 19,
			"LAW/WebGraph uk-2014 web crawl: 787,801,471 vertices, 47,284,178,505 arcs as listed in "+
				"the Legion/Hyperion artifact scripts (Moment table 2 and Hyperion table II round to "+
				"0.79B/47.2B). No features or labels: 1024-d float32 features are synthetic as in "+
				"Moment/Hyperion, and 19 random classes mirror IGB (classes only size the output layer)."),
		large("clueweb", 978_408_098, 42_574_107_469, 1024, 19,
			"LAW/WebGraph clueweb12: 978,408,098 vertices, 42,574,107,469 arcs (the Legion/Hyperion "+
				"artifact scripts list 955,207,488 vertices with the same arcs; the papers round to "+
				"1B/42.5B). Synthetic 1024-d float32 features and 19 random classes, as for uk-2014."),
		{
			Name: "cora", Vertices: 2708, Edges: 10_556, FeatureDim: 1433, FeatureBytes: 4,
			Classes: 7, TrainFraction: 140.0 / 2708.0, Model: ModelGraphSAGE,
			Hidden: 256, Heads: 1, Fanouts: []int{25, 10}, BatchSize: 1024,
			Source: "LINQS Cora (trainer/dataset/testdata/cora): 2708 papers, 5278 undirected citations stored " +
				"both ways (10,556), 1433 binary word features, 7 classes, the Planetoid split's 140 " +
				"training seeds (so one batch per epoch). A small built-in for tests and demos.",
		},
	}
}

// BuiltinWorkloads returns the built-in workloads, fresh copies each call.
func BuiltinWorkloads() []Workload { return builtinTable() }

// BuiltinWorkload returns the built-in workload with the given name (case
// does not matter). An unknown name is a bad-input error listing the known
// names.
func BuiltinWorkload(name string) (Workload, error) {
	table := builtinTable()
	names := make([]string, 0, len(table))
	for _, w := range table {
		if strings.EqualFold(w.Name, name) {
			return w, nil
		}
		names = append(names, w.Name)
	}
	return Workload{}, &topology.InputError{Field: "workload",
		Msg: fmt.Sprintf("unknown workload %q (known: %s)", name, strings.Join(names, ", "))}
}

// WithModel returns a copy of w that trains model with the papers' defaults
// for it: GraphSAGE and GCN hidden 256; GAT 64 per head x 8 heads (docs/architecture.md
// section 12). Case does not matter. An unknown model is a bad-input error.
func (w Workload) WithModel(model string) (Workload, error) {
	m := strings.ToLower(strings.TrimSpace(model))
	hidden, heads, ok := modelDefaults(m)
	if !ok {
		return Workload{}, &topology.InputError{Field: "model",
			Msg: fmt.Sprintf("unknown model %q (valid: %s)", model, strings.Join(modelNames(), ", "))}
	}
	w.Model, w.Hidden, w.Heads = m, hidden, heads
	w.Fanouts = slices.Clone(w.Fanouts) // the copy must not share the caller's array
	return w, nil
}

// Validate reports the first field a user must fix, as a
// *topology.InputError whose Field is the JSON key.
func (w Workload) Validate() error {
	bad := func(field, format string, args ...any) error {
		msg := fmt.Sprintf(format, args...)
		if w.Name != "" {
			msg += fmt.Sprintf(" (workload %q)", w.Name)
		}
		return &topology.InputError{Field: field, Msg: msg}
	}
	switch {
	case w.Vertices < 1:
		return bad("vertices", "must be at least 1, got %d", w.Vertices)
	case w.Edges < 0:
		return bad("edges", "must not be negative, got %d", w.Edges)
	case w.FeatureDim < 1:
		return bad("feature_dim", "must be at least 1, got %d", w.FeatureDim)
	case !slices.Contains([]int{1, 2, 4, 8}, w.FeatureBytes):
		return bad("feature_bytes", "must be 1, 2, 4 or 8 (bytes per value: 4 for float32, 2 for float16), got %d", w.FeatureBytes)
	case w.Classes < 1:
		return bad("classes", "must be at least 1, got %d", w.Classes)
	case !(w.TrainFraction > 0 && w.TrainFraction <= 1): // also rejects NaN
		return bad("train_fraction", "must be in (0, 1] (a share, not a percentage), got %g", w.TrainFraction)
	case !slices.Contains(modelNames(), w.Model):
		return bad("model", "unknown model %q (valid: %s)", w.Model, strings.Join(modelNames(), ", "))
	case w.Hidden < 1:
		return bad("hidden", "must be at least 1, got %d", w.Hidden)
	case w.Model == ModelGAT && w.Heads < 1:
		return bad("heads", "must be at least 1 for gat, got %d", w.Heads)
	case w.Model != ModelGAT && w.Heads != 0 && w.Heads != 1:
		return bad("heads", "applies to gat only: must be 1 (or 0) for %s, got %d", w.Model, w.Heads)
	case len(w.Fanouts) == 0:
		return bad("fanouts", "must list at least one hop, e.g. [25, 10]")
	case w.BatchSize < 1:
		return bad("batch_size", "must be at least 1, got %d", w.BatchSize)
	case w.Degrees != "" && w.Degrees != DegreesHeavyTailed && w.Degrees != DegreesUniform:
		return bad("degrees", "%q (valid: %s, %s)", w.Degrees, DegreesHeavyTailed, DegreesUniform)
	}
	for i, f := range w.Fanouts {
		if f < 1 {
			return bad("fanouts", "hop %d fanout must be at least 1, got %d", i+1, f)
		}
	}
	// The byte counts are int64; refuse sizes that would wrap rather than
	// report a negative dataset.
	if w.Vertices > math.MaxInt64/max(w.FeatureRowBytes(), indptrBytes)-1 {
		return bad("vertices", "%d rows of %d bytes overflow a 64-bit byte count", w.Vertices, w.FeatureRowBytes())
	}
	if w.Edges > (math.MaxInt64-(w.Vertices+1)*indptrBytes)/indexBytes(w.Vertices) {
		return bad("edges", "%d edges overflow a 64-bit byte count", w.Edges)
	}
	return nil
}

// FeatureRowBytes is the size of one vertex's feature row.
func (w Workload) FeatureRowBytes() int64 { return int64(w.FeatureDim) * int64(w.FeatureBytes) }

// indexBytes is the width of a CSR column index: vertex ids run to V-1, so
// int32 holds them while V <= 2^31 and int64 is needed beyond. All built-in
// graphs fit int32 (the largest, clueweb, has 0.98B vertices).
func indexBytes(vertices int64) int64 {
	if vertices > 1<<31 {
		return 8
	}
	return 4
}

// DatasetBytes is the size of the dataset at rest. features = V x row
// bytes. topology is the CSR: (V+1) int64 offsets plus E column indices of 4
// bytes (8 bytes once V > 2^31, when ids no longer fit int32). Moment table 2
// and Hyperion table II size topology with 8-byte indices throughout
// (e.g. 34 GB for IGB-HOM); with 4-byte indices the same graph takes about
// half, which is what a loader that narrows ids actually holds.
func (w Workload) DatasetBytes() (features, topology int64) {
	features = w.Vertices * w.FeatureRowBytes()
	topology = (w.Vertices+1)*indptrBytes + w.Edges*indexBytes(w.Vertices)
	return features, topology
}

// trainVertices is the number of training seeds, V x TrainFraction rounded
// up; a product within 1e-6 of an integer counts as that integer, so that a
// fraction written as count/V (140/2708) gives back the count exactly.
func (w Workload) trainVertices() int64 {
	t := float64(w.Vertices) * w.TrainFraction
	if r := math.Round(t); math.Abs(t-r) < 1e-6 {
		t = r
	}
	return int64(math.Ceil(t))
}

// BatchesPerEpoch is ceil(V x TrainFraction / BatchSize): every training
// seed once per epoch, the last batch possibly short.
func (w Workload) BatchesPerEpoch() int64 {
	if w.BatchSize < 1 {
		return 0
	}
	b := int64(w.BatchSize)
	return (w.trainVertices() + b - 1) / b
}

// block is one sampled bipartite block: dst is the frontier it samples
// from, src = dst plus the distinct neighbors drawn (layers read src and
// write dst), edges the draws.
type block struct{ dst, src, edges float64 }

// PerBatch estimates one full mini-batch: BatchSize seeds (fewer when the
// graph has fewer training vertices), sampled hop by hop with Fanouts. At
// hop k each frontier vertex draws min(f_k, D) neighbours for its degree
// D, lognormal with mean E/V and spread DegreeSpread (size-biased after
// the seeds; Degrees "uniform" takes every degree at the average); every
// vertex the previous hop drew is expanded again, as a layered sampler
// does. Draws are deduplicated as uniform over the V vertices, an upper
// bound on a skewed graph's distinct rows (presample.Shapes measures a
// dataset at hand instead). The step's kernels on these blocks are
// StepWork's, the batch's distinct vertices its input rows: the counts the
// CPU trainer's kernels do. The derivation and the counts it was checked
// on: docs/epoch-model.md, "Distinct rows per batch".
//
// PerBatch expects a valid workload (Validate); on an invalid one it returns
// zeros where the inputs make no sense, never NaN or a panic.
func (w Workload) PerBatch() BatchEstimate {
	hops := len(w.Fanouts)
	est := BatchEstimate{Hops: make([]float64, hops+1), SampledEdges: make([]float64, hops)}
	if w.Vertices < 1 || w.BatchSize < 1 {
		return est
	}
	n := float64(w.Vertices)
	deg := float64(max(w.Edges, 0)) / n
	seeds := min(float64(w.BatchSize), float64(w.trainVertices()), n)
	seeds = max(seeds, 0)
	// logMiss is log(1 - 1/N): one uniform draw misses a given vertex.
	logMiss := math.Log1p(-1 / n)
	// missExpm1(m) = (1-1/N)^m - 1, exactly 0 for no draws (avoids 0 x -Inf
	// when N = 1).
	missExpm1 := func(m float64) float64 {
		if m <= 0 {
			return 0
		}
		return math.Expm1(m * logMiss)
	}
	idx := float64(indexBytes(w.Vertices))
	spread := DegreeSpread
	if w.Degrees == DegreesUniform {
		spread = 0
	}

	var buf [8]block // no allocation for the usual 2-3 hops
	blocks := buf[:0]
	est.Hops[0] = seeds
	frontier, reached, draws := seeds, seeds, 0.0
	for k, f := range w.Fanouts {
		// Seeds are uniform vertices; every later frontier was reached
		// through an edge, so its degrees are size-biased.
		m := frontier * expectedDraws(float64(max(f, 0)), deg, spread, k > 0)
		draws += m
		// Distinct vertices after this hop: the seeds plus the unreached
		// rest hit at least once by all draws so far.
		u := seeds - (n-seeds)*missExpm1(draws)
		est.Hops[k+1] = max(u-reached, 0)
		est.SampledEdges[k] = m
		est.TopologyBytes += frontier*indptrPairBytes + m*idx
		blocks = append(blocks, block{
			dst:   frontier,
			src:   frontier - (n-frontier)*missExpm1(m),
			edges: m,
		})
		reached = u
		frontier = -n * missExpm1(m)
	}
	est.UniqueVertices = reached
	est.FeatureBytes = reached * float64(w.FeatureRowBytes())
	est.Blocks = make([]BlockShape, len(blocks))
	for i, b := range blocks {
		est.Blocks[i] = BlockShape{Dst: b.dst, Src: b.src, Edges: b.edges}
	}
	if work, err := w.StepWork(est.Blocks, reached); err == nil {
		est.Work, est.FLOPs = work, work.ProductGFLOP*1e9
	}
	return est
}

// Params is the model's number of learnable scalars, as package nn builds
// it: GraphSAGE-mean a self and a neighbour weight per layer and a bias;
// GCN one weight and a bias; GAT per layer heads x width projections, two
// attention vectors and a bias (output heads averaged, as the FLOPs
// count). What the all-reduce moves each step.
func (w Workload) Params() int64 {
	in := int64(w.FeatureDim)
	hidden, classes := int64(w.Hidden), int64(w.Classes)
	heads := int64(max(w.Heads, 1))
	var n int64
	for l := range w.Fanouts {
		last := l == len(w.Fanouts)-1
		out := hidden
		if last {
			out = classes
		}
		switch w.Model {
		case ModelGraphSAGE:
			n += 2*in*out + out
		case ModelGCN:
			n += in*out + out
		case ModelGAT:
			h := heads
			if last {
				h = 1 // one output head, as the trainer's OutHeads
			}
			n += in*h*out + 2*h*out + h*out
			out *= h
		}
		in = out
	}
	return n
}

// DegreeSpread is the spread s (the log-scale standard deviation) of the
// lognormal degree law PerBatch samples with. 2.2 reproduces the distinct
// input vertices per batch DGL counted on four real graphs (ogbn-papers100M,
// MAG240M, Friendster, IGB260M; fanouts 10,15,20, batch 1024) within -22% to
// +10%, where the average degree alone (s = 0) overcounts them 1.9-2.6x
// (docs/epoch-model.md).
const DegreeSpread = 2.2

// expectedDraws is E[min(f, D)] for a lognormal degree D of mean d and
// spread s, size-biased when biased (a vertex reached through an edge);
// min(f, d) when s is 0.
func expectedDraws(f, d, s float64, biased bool) float64 {
	if s <= 0 || d <= 0 || f <= 0 {
		return min(f, d)
	}
	mu := math.Log(d) - s*s/2
	if biased {
		mu += s * s
	}
	mean := math.Exp(mu + s*s/2)
	lf := math.Log(f)
	below := mean * normalCDF((lf-mu-s*s)/s) // E[D; D < f]
	return below + f*normalCDF((mu-lf)/s)    // + f P(D >= f)
}

func normalCDF(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }
