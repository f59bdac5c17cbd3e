package dataset

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/gnnplan/gnnplan/internal/fsutil"
	"github.com/gnnplan/gnnplan/internal/inputerr"

	"github.com/gnnplan/gnnplan/trainer/internal/fslock"
)

// SchemaVersion versions meta.json.
const SchemaVersion = 1

// File names of a dataset directory (docs/architecture.md section 8): NumPy .npy
// arrays, the format IGB and most Python GNN tools use, plus meta.json.
const (
	MetaFile     = "meta.json"
	IndptrFile   = "indptr.npy"   // int64 [num_nodes+1]: CSR row offsets
	IndicesFile  = "indices.npy"  // int32 or int64 [num_edges]: CSR column ids
	FeaturesFile = "features.npy" // float32 [num_nodes, feature_dim], row-major
	LabelsFile   = "labels.npy"   // int64 (or int32) [num_nodes]
	TrainFile    = "train_idx.npy"
	ValFile      = "val_idx.npy"
	TestFile     = "test_idx.npy"
)

// Meta is a dataset's meta.json.
type Meta struct {
	SchemaVersion int    `json:"schema_version"`
	Name          string `json:"name"`
	NumNodes      int64  `json:"num_nodes"`
	// NumEdges counts CSR entries: an undirected edge stored both ways
	// counts twice.
	NumEdges   int64 `json:"num_edges"`
	Undirected bool  `json:"undirected"` // every edge is stored both ways
	FeatureDim int   `json:"feature_dim"`
	// FeatureDType is the features' element type; only "float32" is read.
	FeatureDType string   `json:"feature_dtype"`
	IndexDType   string   `json:"index_dtype"` // "int32" or "int64"
	NumClasses   int      `json:"num_classes"`
	NumTrain     int64    `json:"num_train"`
	NumVal       int64    `json:"num_val"`
	NumTest      int64    `json:"num_test"`
	Source       string   `json:"source"`
	Notes        []string `json:"notes,omitempty"`
}

// Graph is a dataset's structure, labels and splits (not its features,
// which can be far larger; see FeatureReader). LoadGraph memory-maps the
// arrays read-only rather than copying them, so the slices must not be
// written, and must not be used after Close.
type Graph struct {
	Dir     string
	Meta    Meta
	Indptr  []int64 // len NumNodes+1
	Indices []int32 // len NumEdges; vertex ids fit int32 in memory
	Labels  []int64 // len NumNodes
	Train   []int64
	Val     []int64
	Test    []int64

	arrays []*mappedArray // mappings to release on Close
}

// Degree returns the out-degree of v.
func (g *Graph) Degree(v int64) int64 { return g.Indptr[v+1] - g.Indptr[v] }

// Neighbors returns v's neighbor list (a view into Indices).
func (g *Graph) Neighbors(v int64) []int32 { return g.Indices[g.Indptr[v]:g.Indptr[v+1]] }

// Close releases the graph's memory maps. The graph's slices must not be
// used afterwards. A Graph built by hand has nothing to release.
func (g *Graph) Close() error {
	var first error
	for _, a := range g.arrays {
		if err := a.unmap(); err != nil && first == nil {
			first = err
		}
	}
	g.arrays = nil
	return first
}

// ReadMeta reads and checks dir/meta.json.
func ReadMeta(dir string) (Meta, error) {
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return Meta{}, &inputerr.Error{Path: dir, Field: "--dataset", Msg: "is a file (want a dataset directory holding meta.json)"}
	}
	path := filepath.Join(dir, MetaFile)
	data, err := fsutil.ReadRegularFile(path)
	if err != nil {
		return Meta{}, &inputerr.Error{Path: dir, Field: "--dataset", Msg: "not a dataset directory (no readable meta.json)", Err: err}
	}
	var m Meta
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return Meta{}, &inputerr.Error{Path: path, Msg: "malformed meta.json", Err: err}
	}
	if m.SchemaVersion != SchemaVersion {
		return Meta{}, &inputerr.Error{Path: path, Field: "schema_version", Msg: fmt.Sprintf("%d (want %d)", m.SchemaVersion, SchemaVersion)}
	}
	switch {
	case m.NumNodes <= 0:
		return Meta{}, &inputerr.Error{Path: path, Field: "num_nodes", Msg: fmt.Sprintf("%d (want > 0)", m.NumNodes)}
	case m.NumNodes > math.MaxInt32:
		return Meta{}, &inputerr.Error{Path: path, Field: "num_nodes", Msg: fmt.Sprintf("%d: graphs beyond 2^31-1 vertices are not held in memory", m.NumNodes)}
	case m.NumEdges < 0:
		return Meta{}, &inputerr.Error{Path: path, Field: "num_edges", Msg: fmt.Sprintf("%d (want >= 0)", m.NumEdges)}
	case m.FeatureDim < 0:
		return Meta{}, &inputerr.Error{Path: path, Field: "feature_dim", Msg: fmt.Sprintf("%d (want >= 0)", m.FeatureDim)}
	case m.FeatureDim > 0 && m.FeatureDType != "float32":
		return Meta{}, &inputerr.Error{Path: path, Field: "feature_dtype", Msg: fmt.Sprintf("%q (want float32)", m.FeatureDType)}
	case m.IndexDType != "int32" && m.IndexDType != "int64":
		return Meta{}, &inputerr.Error{Path: path, Field: "index_dtype", Msg: fmt.Sprintf("%q (want int32 or int64)", m.IndexDType)}
	case m.NumTrain < 0 || m.NumVal < 0 || m.NumTest < 0:
		return Meta{}, &inputerr.Error{Path: path, Field: "num_train, num_val, num_test", Msg: fmt.Sprintf("%d, %d, %d (want >= 0)", m.NumTrain, m.NumVal, m.NumTest)}
	}
	return m, nil
}

// LoadGraph opens a dataset's meta, CSR, labels and splits and validates
// them once, the same way for every command: every array has the length
// meta.json says (and exactly the bytes its header promises), offsets
// run from 0 to num_edges without decreasing, every index, label and
// split entry is in range, no split lists a vertex twice, and a graph
// marked undirected stores every edge both ways. The arrays are
// memory-mapped, not copied (int64 column ids are narrowed to int32, the
// one copy made); call Close when done.
func LoadGraph(dir string) (_ *Graph, err error) {
	m, err := ReadMeta(dir)
	if err != nil {
		return nil, err
	}
	g := &Graph{Dir: dir, Meta: m}
	defer func() {
		if err != nil {
			g.Close()
		}
	}()
	open := func(file string, n int64) (*mappedArray, error) {
		a, err := mapInts(filepath.Join(dir, file), n)
		if err != nil {
			return nil, err
		}
		g.arrays = append(g.arrays, a)
		return a, nil
	}
	ptr, err := open(IndptrFile, m.NumNodes+1)
	if err != nil {
		return nil, err
	}
	g.Indptr, _ = ptr.int64s()
	if g.Indptr[0] != 0 || g.Indptr[m.NumNodes] != m.NumEdges {
		return nil, &inputerr.Error{Path: ptr.path, Msg: fmt.Sprintf("offsets run from %d to %d (want 0 to num_edges %d)", g.Indptr[0], g.Indptr[m.NumNodes], m.NumEdges)}
	}
	for v := int64(0); v < m.NumNodes; v++ {
		if g.Indptr[v+1] < g.Indptr[v] {
			return nil, &inputerr.Error{Path: ptr.path, Msg: fmt.Sprintf("offsets decrease at vertex %d", v)}
		}
	}
	idx, err := open(IndicesFile, m.NumEdges)
	if err != nil {
		return nil, err
	}
	var bad, badValue int64
	if g.Indices, bad, badValue = idx.vertexIDs(m.NumNodes); bad >= 0 {
		return nil, &inputerr.Error{Path: idx.path, Msg: fmt.Sprintf("entry %d is vertex %d, out of range [0, %d)", bad, badValue, m.NumNodes)}
	}
	lab, err := open(LabelsFile, m.NumNodes)
	if err != nil {
		return nil, err
	}
	g.Labels, _ = lab.int64s()
	for i, l := range g.Labels {
		if l < -1 || (m.NumClasses > 0 && l >= int64(m.NumClasses)) {
			return nil, &inputerr.Error{Path: lab.path, Msg: fmt.Sprintf("vertex %d has label %d (want -1 for none, or 0 to %d)", i, l, m.NumClasses-1)}
		}
	}
	seen := newBitset(m.NumNodes)
	for _, s := range []struct {
		file string
		n    int64
		dst  *[]int64
	}{{TrainFile, m.NumTrain, &g.Train}, {ValFile, m.NumVal, &g.Val}, {TestFile, m.NumTest, &g.Test}} {
		a, err := open(s.file, s.n)
		if err != nil {
			return nil, err
		}
		*s.dst, _ = a.int64s()
		if err := checkSplit(a.path, *s.dst, m.NumNodes, seen); err != nil {
			return nil, err
		}
	}
	if m.Undirected {
		if err := checkSymmetric(g); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// checkSplit refuses a split entry out of range or listed twice. seen is
// scratch of NumNodes bits, all clear on entry and on return.
func checkSplit(path string, ids []int64, n int64, seen bitset) error {
	defer func() {
		for _, v := range ids {
			if v >= 0 && v < n {
				seen.clear(v)
			}
		}
	}()
	for i, v := range ids {
		if v < 0 || v >= n {
			return &inputerr.Error{Path: path, Msg: fmt.Sprintf("entry %d is vertex %d, out of range [0, %d)", i, v, n)}
		}
		if seen.has(v) {
			return &inputerr.Error{Path: path, Msg: fmt.Sprintf("vertex %d is listed twice (entry %d); a split lists each vertex once", v, i)}
		}
		seen.set(v)
	}
	return nil
}

// bitset is a fixed-size set of vertex ids.
type bitset []uint64

func newBitset(n int64) bitset    { return make(bitset, (n+63)/64) }
func (b bitset) has(v int64) bool { return b[v>>6]&(1<<(v&63)) != 0 }
func (b bitset) set(v int64)      { b[v>>6] |= 1 << (v & 63) }
func (b bitset) clear(v int64)    { b[v>>6] &^= 1 << (v & 63) }

// WriteMeta writes dir/meta.json atomically.
func WriteMeta(dir string, m Meta) error {
	m.SchemaVersion = SchemaVersion
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("encode meta: %w", err)
	}
	return fsutil.WriteFileAtomic(filepath.Join(dir, MetaFile), append(data, '\n'))
}

// Stage is a dataset being built in a temporary directory next to its
// final name; Commit renames it there, so a failed or interrupted build
// never leaves a half-written dataset under the name asked for. The
// directory is locked while it is built, which tells a later StageDir
// for the same name whether a run is still writing it.
type Stage struct {
	// Dir is where the dataset's files are written.
	Dir  string
	out  string
	lock *fslock.Lock
}

// StageDir makes the staging directory for out (out.partial-N) and locks
// it. It first removes the staging directories of out that no process
// holds: those of runs that were killed before they could clean up.
func StageDir(out string) (*Stage, error) {
	if _, err := os.Stat(out); err == nil {
		return nil, &inputerr.Error{Path: out, Field: "--out", Msg: "already exists (remove it or choose another directory)"}
	}
	parent := filepath.Dir(filepath.Clean(out))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", parent, err)
	}
	prefix := filepath.Base(filepath.Clean(out)) + ".partial-"
	if old, err := filepath.Glob(filepath.Join(parent, globEscape(prefix)+"*")); err == nil {
		for _, d := range old {
			if lk, err := fslock.TryLock(d); err == nil {
				os.RemoveAll(d)
				lk.Unlock()
			}
		}
	}
	dir, err := fsutil.MkdirTemp(parent, prefix)
	if err != nil {
		return nil, err
	}
	lk, err := fslock.TryLock(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	return &Stage{Dir: dir, out: out, lock: lk}, nil
}

// globEscape quotes the characters filepath.Match gives a meaning.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Commit moves the staged dataset to its final name; on failure the
// staging directory is removed.
func (s *Stage) Commit() error {
	defer s.lock.Unlock()
	if err := os.Rename(s.Dir, s.out); err != nil {
		os.RemoveAll(s.Dir)
		return fmt.Errorf("finish %s: %w", s.out, err)
	}
	return nil
}

// Abort removes the staging directory and what was written in it.
func (s *Stage) Abort() {
	os.RemoveAll(s.Dir)
	s.lock.Unlock()
}

// FeatureReader reads feature rows of a dataset from features.npy without
// loading the whole matrix.
type FeatureReader struct {
	f      *os.File
	offset int64 // where row 0 starts
	dim    int
}

// OpenFeatures opens dir/features.npy for row reads.
func OpenFeatures(dir string, m Meta) (*FeatureReader, error) {
	path := filepath.Join(dir, FeaturesFile)
	f, err := fsutil.OpenRegular(path)
	if err != nil {
		return nil, &inputerr.Error{Path: path, Msg: "cannot read features", Err: err}
	}
	h, err := ReadArrayHeader(f)
	if err != nil {
		f.Close()
		return nil, &inputerr.Error{Path: path, Msg: "not a .npy array", Err: err}
	}
	shape := h.Shape
	if h.DType != "<f4" || len(shape) != 2 || int64(shape[0]) != m.NumNodes || shape[1] != m.FeatureDim || h.Fortran {
		f.Close()
		return nil, &inputerr.Error{Path: path, Msg: fmt.Sprintf("dtype %s shape %v (want <f4 [%d, %d], row-major)", h.DType, shape, m.NumNodes, m.FeatureDim)}
	}
	// The rows start where the header says, and the file must end where
	// the rows do: a truncated or padded file is refused, not read shifted.
	if err := h.CheckDataSize(f, path, m.NumNodes, int64(m.FeatureDim)*4); err != nil {
		f.Close()
		return nil, err
	}
	off := h.DataOffset
	return &FeatureReader{f: f, offset: off, dim: m.FeatureDim}, nil
}

// Row reads row v into dst (len >= dim).
func (r *FeatureReader) Row(v int64, dst []float32) error {
	buf := make([]byte, 4*r.dim)
	if _, err := r.f.ReadAt(buf, r.offset+v*int64(len(buf))); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("read feature row %d: %w", v, err)
	}
	for i := range dst[:r.dim] {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(buf[4*i:]))
	}
	return nil
}

// Close closes the features file.
func (r *FeatureReader) Close() error { return r.f.Close() }
