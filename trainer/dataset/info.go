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
	// IsolatedVertices have no edge at all, in or out.
	IsolatedVertices int64 `json:"isolated_vertices"`
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

// DegreeStats summarises a degree sequence. Median and P99 interpolate
// linearly between order statistics, as numpy.percentile does by
// default, so they can be checked against Python tools.
type DegreeStats struct {
	Min    int64   `json:"min"`
	Max    int64   `json:"max"`
	Mean   float64 `json:"mean"`
	Median float64 `json:"median"`
	P99    float64 `json:"p99"`
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
	deg := make([]int64, m.NumNodes)
	for v := range deg {
		deg[v] = g.Indptr[v+1] - g.Indptr[v]
	}
	if m.Undirected {
		for _, d := range deg {
			if d == 0 {
				info.IsolatedVertices++
			}
		}
	} else {
		in := make([]int64, m.NumNodes)
		for _, u := range g.Indices {
			in[u]++
		}
		for v, d := range deg {
			if d == 0 && in[v] == 0 {
				info.IsolatedVertices++
			}
		}
		s := degreeStats(in)
		info.InDegree = &s
	}
	info.Degree = degreeStats(deg) // sorts deg: after the per-vertex uses
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

// degreeStats summarises deg, sorting it in place.
func degreeStats(deg []int64) DegreeStats {
	var s DegreeStats
	if len(deg) == 0 {
		return s
	}
	slices.Sort(deg)
	var total int64
	for _, d := range deg {
		total += d
		if d == 0 {
			s.Zero++
		}
	}
	n := len(deg)
	s.Min, s.Max = deg[0], deg[n-1]
	s.Mean = float64(total) / float64(n)
	s.Median = percentile(deg, 50)
	s.P99 = percentile(deg, 99)
	share := func(pct float64) float64 {
		if total == 0 {
			return 0
		}
		k := max(1, int(math.Ceil(pct/100*float64(n))))
		var top int64
		for _, d := range deg[n-k:] {
			top += d
		}
		return float64(top) / float64(total)
	}
	s.Top1PctShare, s.Top5PctShare, s.Top10PctShare = share(1), share(5), share(10)
	return s
}

// percentile of sorted values, interpolating linearly between the two
// nearest ranks (numpy's default "linear" method).
func percentile(sorted []int64, p float64) float64 {
	pos := p / 100 * float64(len(sorted)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(sorted)-1)
	frac := pos - float64(lo)
	return float64(sorted[lo]) + frac*float64(sorted[hi]-sorted[lo])
}
