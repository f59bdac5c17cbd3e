package dataset

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
)

// InfoSchemaVersion versions Info's JSON.
const InfoSchemaVersion = 1

// Info describes a dataset directory: sizes, splits, degree
// statistics and skew, for `gnnplan dataset info`.
type Info struct {
	SchemaVersion int    `json:"schema_version"`
	Dir           string `json:"dir"`
	Name          string `json:"name"`
	Source        string `json:"source"`
	NumNodes      int64  `json:"num_nodes"`
	// NumEdges counts CSR entries (an undirected edge twice).
	NumEdges   int64  `json:"num_edges"`
	Undirected bool   `json:"undirected"`
	NumClasses int    `json:"num_classes"`
	FeatureDim int    `json:"feature_dim"`
	NumLabeled int64  `json:"num_labeled"` // vertices with a label (not -1)
	NumTrain   int64  `json:"num_train"`
	NumVal     int64  `json:"num_val"`
	NumTest    int64  `json:"num_test"`
	IndexDType string `json:"index_dtype"`
	// IsolatedVertices have no edge at all, in or out; IsolatedShare is
	// their share of NumNodes.
	IsolatedVertices int64   `json:"isolated_vertices"`
	IsolatedShare    float64 `json:"isolated_share"`
	// Degree is over CSR rows: the degree of an undirected graph, the
	// out-degree of a directed one.
	Degree DegreeStats `json:"degree"`
	// InDegree is given for directed graphs only: how often a vertex is
	// someone's neighbor, which is what neighbor sampling reads.
	InDegree *DegreeStats `json:"in_degree,omitempty"`
	// FeatureBytes is features.npy's size on disk; TopologyBytes is
	// indptr.npy's plus indices.npy's.
	FeatureBytes  int64    `json:"feature_bytes"`
	TopologyBytes int64    `json:"topology_bytes"`
	Notes         []string `json:"notes,omitempty"`
}

// DegreeStats summarises a degree sequence. The percentiles interpolate
// linearly between order statistics, as numpy.percentile does by
// default, so they can be checked against Python tools.
type DegreeStats struct {
	Min    int64   `json:"min"`
	Max    int64   `json:"max"`
	Mean   float64 `json:"mean"`
	P10    float64 `json:"p10"`
	P25    float64 `json:"p25"`
	Median float64 `json:"median"`
	P75    float64 `json:"p75"`
	P90    float64 `json:"p90"`
	P99    float64 `json:"p99"`
	P999   float64 `json:"p99_9"`
	Zero   int64   `json:"zero"` // vertices of degree 0 in this sequence
	// The skew: the share of the degree sum (num_edges, CSR entries)
	// held by the highest-degree 1%, 5% and 10% of vertices (rounded up,
	// at least one vertex), the measure DiskGNN tabulates for access
	// hotness.
	Top1PctShare  float64 `json:"top_1pct_edge_share"`
	Top5PctShare  float64 `json:"top_5pct_edge_share"`
	Top10PctShare float64 `json:"top_10pct_edge_share"`
}

// InfoOf reads a dataset's structure (not its features) and describes it.
func InfoOf(dir string) (*Info, error) {
	g, err := LoadGraph(dir)
	if err != nil {
		return nil, err
	}
	defer g.Close()
	m := g.Meta
	info := &Info{SchemaVersion: InfoSchemaVersion, Dir: dir, Name: m.Name, Source: m.Source,
		NumNodes: m.NumNodes, NumEdges: m.NumEdges, Undirected: m.Undirected, NumClasses: m.NumClasses,
		FeatureDim: m.FeatureDim, NumTrain: m.NumTrain, NumVal: m.NumVal, NumTest: m.NumTest,
		IndexDType: m.IndexDType, Notes: m.Notes}
	for _, l := range g.Labels {
		if l >= 0 {
			info.NumLabeled++
		}
	}
	// Degree histograms, not per-vertex arrays: memory grows with the
	// largest degree, not with the graph.
	deg := newDegreeHistogram()
	if m.Undirected {
		for v := int64(0); v < m.NumNodes; v++ {
			deg.add(g.Indptr[v+1] - g.Indptr[v])
		}
		info.IsolatedVertices = deg.count(0)
	} else {
		in := make([]uint32, m.NumNodes) // in-degrees below 2^32: NumNodes < 2^31 and no multi-edge counts past it in practice
		for _, u := range g.Indices {
			in[u]++
		}
		inDeg := newDegreeHistogram()
		for v := int64(0); v < m.NumNodes; v++ {
			d := g.Indptr[v+1] - g.Indptr[v]
			deg.add(d)
			inDeg.add(int64(in[v]))
			if d == 0 && in[v] == 0 {
				info.IsolatedVertices++
			}
		}
		s := inDeg.stats()
		info.InDegree = &s
	}
	info.IsolatedShare = float64(info.IsolatedVertices) / float64(m.NumNodes)
	info.Degree = deg.stats()
	if info.FeatureBytes, err = fileSize(filepath.Join(dir, FeaturesFile)); err != nil {
		return nil, err
	}
	for _, f := range []string{IndptrFile, IndicesFile} {
		n, err := fileSize(filepath.Join(dir, f))
		if err != nil {
			return nil, err
		}
		info.TopologyBytes += n
	}
	return info, nil
}

// fileSize is a file's size, 0 if it does not exist (features.npy is
// optional for a featureless graph).
func fileSize(path string) (int64, error) {
	st, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("stat %s: %w", path, err)
	}
	return st.Size(), nil
}

// degreeHistogram counts vertices by degree: densely up to
// denseDegrees, in a map above, so a star graph's one huge degree costs
// an entry, not an array as long as the graph.
type degreeHistogram struct {
	dense  []int64         // dense[d] vertices of degree d < denseDegrees
	sparse map[int64]int64 // degree >= denseDegrees -> vertices
	n      int64
}

const denseDegrees = 1 << 16

func newDegreeHistogram() *degreeHistogram {
	return &degreeHistogram{dense: make([]int64, denseDegrees), sparse: map[int64]int64{}}
}

func (h *degreeHistogram) add(d int64) {
	if d < denseDegrees {
		h.dense[d]++
	} else {
		h.sparse[d]++
	}
	h.n++
}

func (h *degreeHistogram) count(d int64) int64 {
	if d < denseDegrees {
		return h.dense[d]
	}
	return h.sparse[d]
}

// each calls fn for every degree present, ascending, until fn returns
// false.
func (h *degreeHistogram) each(fn func(d, count int64) bool) {
	for d, c := range h.dense {
		if c > 0 && !fn(int64(d), c) {
			return
		}
	}
	big := make([]int64, 0, len(h.sparse))
	for d := range h.sparse {
		big = append(big, d)
	}
	slices.Sort(big)
	for _, d := range big {
		if !fn(d, h.sparse[d]) {
			return
		}
	}
}

// at returns the degree of rank i (0-based) in ascending order.
func (h *degreeHistogram) at(i int64) int64 {
	var deg int64
	h.each(func(d, c int64) bool {
		deg = d
		if i < c {
			return false
		}
		i -= c
		return true
	})
	return deg
}

// percentile interpolates linearly between the two nearest ranks
// (numpy's default "linear" method).
func (h *degreeHistogram) percentile(p float64) float64 {
	pos := p / 100 * float64(h.n-1)
	lo := int64(math.Floor(pos))
	hi := min(lo+1, h.n-1)
	a, b := h.at(lo), h.at(hi)
	return float64(a) + (pos-float64(lo))*float64(b-a)
}

// stats summarises the histogram.
func (h *degreeHistogram) stats() DegreeStats {
	var s DegreeStats
	if h.n == 0 {
		return s
	}
	var total int64
	var byDeg [][2]int64 // (degree, count) ascending
	h.each(func(d, c int64) bool {
		total += d * c
		byDeg = append(byDeg, [2]int64{d, c})
		return true
	})
	s.Min, s.Max = byDeg[0][0], byDeg[len(byDeg)-1][0]
	s.Zero = h.count(0)
	s.Mean = float64(total) / float64(h.n)
	s.P10, s.P25, s.Median = h.percentile(10), h.percentile(25), h.percentile(50)
	s.P75, s.P90, s.P99, s.P999 = h.percentile(75), h.percentile(90), h.percentile(99), h.percentile(99.9)
	// The edge share of the top k vertices: walk down from the largest
	// degree, taking a partial count at the boundary.
	share := func(pct float64) float64 {
		if total == 0 {
			return 0
		}
		k := max(1, int64(math.Ceil(pct/100*float64(h.n))))
		var top int64
		for i := len(byDeg) - 1; i >= 0 && k > 0; i-- {
			take := min(k, byDeg[i][1])
			top += take * byDeg[i][0]
			k -= take
		}
		return float64(top) / float64(total)
	}
	s.Top1PctShare, s.Top5PctShare, s.Top10PctShare = share(1), share(5), share(10)
	return s
}
