package trainer

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/gnnplan/gnnplan/topology"
)

// DatasetSchemaVersion versions meta.json.
const DatasetSchemaVersion = 1

// File names of a dataset directory (DESIGN.md section 8): NumPy .npy
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

// Graph is a dataset's structure, labels and splits held in memory (not
// its features, which can be far larger; see FeatureReader).
type Graph struct {
	Dir     string
	Meta    Meta
	Indptr  []int64 // len NumNodes+1
	Indices []int32 // len NumEdges; vertex ids fit int32 in memory
	Labels  []int64 // len NumNodes
	Train   []int64
	Val     []int64
	Test    []int64
}

// Degree returns the out-degree of v.
func (g *Graph) Degree(v int64) int64 { return g.Indptr[v+1] - g.Indptr[v] }

// Neighbors returns v's neighbor list (a view into Indices).
func (g *Graph) Neighbors(v int64) []int32 { return g.Indices[g.Indptr[v]:g.Indptr[v+1]] }

// ReadMeta reads and checks dir/meta.json.
func ReadMeta(dir string) (Meta, error) {
	path := filepath.Join(dir, MetaFile)
	data, err := os.ReadFile(path)
	if err != nil {
		return Meta{}, &topology.InputError{Path: dir, Field: "--dataset", Msg: "not a dataset directory (no readable meta.json)", Err: err}
	}
	var m Meta
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return Meta{}, &topology.InputError{Path: path, Msg: "malformed meta.json", Err: err}
	}
	if m.SchemaVersion != DatasetSchemaVersion {
		return Meta{}, &topology.InputError{Path: path, Field: "schema_version", Msg: fmt.Sprintf("%d (want %d)", m.SchemaVersion, DatasetSchemaVersion)}
	}
	switch {
	case m.NumNodes <= 0:
		return Meta{}, &topology.InputError{Path: path, Field: "num_nodes", Msg: fmt.Sprintf("%d (want > 0)", m.NumNodes)}
	case m.NumNodes > math.MaxInt32:
		return Meta{}, &topology.InputError{Path: path, Field: "num_nodes", Msg: fmt.Sprintf("%d: graphs beyond 2^31-1 vertices are not held in memory", m.NumNodes)}
	case m.NumEdges < 0:
		return Meta{}, &topology.InputError{Path: path, Field: "num_edges", Msg: fmt.Sprintf("%d (want >= 0)", m.NumEdges)}
	case m.FeatureDim < 0:
		return Meta{}, &topology.InputError{Path: path, Field: "feature_dim", Msg: fmt.Sprintf("%d (want >= 0)", m.FeatureDim)}
	case m.FeatureDim > 0 && m.FeatureDType != "float32":
		return Meta{}, &topology.InputError{Path: path, Field: "feature_dtype", Msg: fmt.Sprintf("%q (want float32)", m.FeatureDType)}
	case m.IndexDType != "int32" && m.IndexDType != "int64":
		return Meta{}, &topology.InputError{Path: path, Field: "index_dtype", Msg: fmt.Sprintf("%q (want int32 or int64)", m.IndexDType)}
	}
	return m, nil
}

// LoadGraph reads a dataset's meta, CSR, labels and splits, checking that
// every array has the length meta.json says and every index is in range.
func LoadGraph(dir string) (*Graph, error) {
	m, err := ReadMeta(dir)
	if err != nil {
		return nil, err
	}
	g := &Graph{Dir: dir, Meta: m}
	if g.Indptr, err = readInt64s(filepath.Join(dir, IndptrFile), m.NumNodes+1); err != nil {
		return nil, err
	}
	if g.Indptr[0] != 0 || g.Indptr[m.NumNodes] != m.NumEdges {
		return nil, &topology.InputError{Path: filepath.Join(dir, IndptrFile), Msg: fmt.Sprintf("offsets run from %d to %d (want 0 to num_edges %d)", g.Indptr[0], g.Indptr[m.NumNodes], m.NumEdges)}
	}
	for v := int64(0); v < m.NumNodes; v++ {
		if g.Indptr[v+1] < g.Indptr[v] {
			return nil, &topology.InputError{Path: filepath.Join(dir, IndptrFile), Msg: fmt.Sprintf("offsets decrease at vertex %d", v)}
		}
	}
	idx, err := readInt64s(filepath.Join(dir, IndicesFile), m.NumEdges)
	if err != nil {
		return nil, err
	}
	g.Indices = make([]int32, len(idx))
	for i, v := range idx {
		if v < 0 || v >= m.NumNodes {
			return nil, &topology.InputError{Path: filepath.Join(dir, IndicesFile), Msg: fmt.Sprintf("entry %d is vertex %d, out of range [0, %d)", i, v, m.NumNodes)}
		}
		g.Indices[i] = int32(v)
	}
	if g.Labels, err = readInt64s(filepath.Join(dir, LabelsFile), m.NumNodes); err != nil {
		return nil, err
	}
	for i, l := range g.Labels {
		if l < -1 || (m.NumClasses > 0 && l >= int64(m.NumClasses)) {
			return nil, &topology.InputError{Path: filepath.Join(dir, LabelsFile), Msg: fmt.Sprintf("vertex %d has label %d (want -1 for none, or 0 to %d)", i, l, m.NumClasses-1)}
		}
	}
	for _, s := range []struct {
		file string
		n    int64
		dst  *[]int64
	}{{TrainFile, m.NumTrain, &g.Train}, {ValFile, m.NumVal, &g.Val}, {TestFile, m.NumTest, &g.Test}} {
		if *s.dst, err = readInt64s(filepath.Join(dir, s.file), s.n); err != nil {
			return nil, err
		}
		for _, v := range *s.dst {
			if v < 0 || v >= m.NumNodes {
				return nil, &topology.InputError{Path: filepath.Join(dir, s.file), Msg: fmt.Sprintf("vertex %d out of range [0, %d)", v, m.NumNodes)}
			}
		}
	}
	return g, nil
}

// readInt64s reads a 1-d integer .npy of any integer dtype into int64,
// checking its length. A missing file is an error unless want is 0.
func readInt64s(path string, want int64) ([]int64, error) {
	f, err := os.Open(path)
	if err != nil {
		if want == 0 && errors.Is(err, os.ErrNotExist) {
			return []int64{}, nil
		}
		return nil, &topology.InputError{Path: path, Msg: "cannot read array", Err: err}
	}
	defer f.Close()
	r, err := newNpyReader(f)
	if err != nil {
		return nil, &topology.InputError{Path: path, Msg: "not a .npy array", Err: err}
	}
	shape := r.Header.Descr.Shape
	n := int64(1)
	for _, d := range shape {
		n *= int64(d)
	}
	if len(shape) != 1 || n != want {
		return nil, &topology.InputError{Path: path, Msg: fmt.Sprintf("shape %v (want [%d], from meta.json)", shape, want)}
	}
	elem := map[string]int64{"<i8": 8, "<i4": 4, "<u4": 4}[r.Header.Descr.Type]
	if elem == 0 {
		return nil, &topology.InputError{Path: path, Msg: fmt.Sprintf("dtype %s (want <i8, <i4 or <u4)", r.Header.Descr.Type)}
	}
	off, err := checkDataSize(f, path, n, elem)
	if err != nil {
		return nil, err
	}
	// Decode the little-endian data ourselves, in large buffered reads:
	// npyio reads 4-byte types an element at a time.
	out := make([]int64, n)
	br := bufio.NewReaderSize(io.NewSectionReader(f, off, n*elem), 1<<20)
	var buf [8]byte
	for i := range out {
		if _, err := io.ReadFull(br, buf[:elem]); err != nil {
			return nil, &topology.InputError{Path: path, Msg: "truncated or unreadable array data", Err: err}
		}
		switch r.Header.Descr.Type {
		case "<i8":
			out[i] = int64(binary.LittleEndian.Uint64(buf[:8]))
		case "<i4":
			out[i] = int64(int32(binary.LittleEndian.Uint32(buf[:4])))
		default:
			out[i] = int64(binary.LittleEndian.Uint32(buf[:4]))
		}
	}
	return out, nil
}

// checkDataSize compares the file's size with its header plus n elements
// of elem bytes, so a truncated array is refused before it is read, and
// returns where the data starts.
func checkDataSize(f *os.File, path string, n, elem int64) (int64, error) {
	var pre [12]byte
	if _, err := f.ReadAt(pre[:], 0); err != nil {
		return 0, &topology.InputError{Path: path, Msg: "not a .npy array", Err: err}
	}
	off := int64(10 + binary.LittleEndian.Uint16(pre[8:10]))
	if pre[6] >= 2 { // version 2 and 3: 4-byte header length
		off = int64(12 + binary.LittleEndian.Uint32(pre[8:12]))
	}
	st, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("stat %s: %w", path, err)
	}
	if want := off + n*elem; st.Size() != want {
		return 0, &topology.InputError{Path: path, Msg: fmt.Sprintf("%d bytes, want %d for %d elements: truncated or padded", st.Size(), want, n)}
	}
	return off, nil
}

// ArrayWriter streams a .npy array of known shape to disk, so arrays
// larger than memory can be written chunk by chunk. The file appears
// under its name only when Close has checked that every element came.
type ArrayWriter struct {
	path, tmp string
	f         *os.File
	w         *bufio.Writer
	want, got int64
	elem      int
}

// CreateArray starts path as a little-endian .npy of dtype ("<f4", "<i4",
// "<i8", "<u4") and shape.
func CreateArray(path, dtype string, shape ...int64) (*ArrayWriter, error) {
	elem := map[string]int{"<f4": 4, "<i4": 4, "<u4": 4, "<i8": 8, "<f8": 8, "|u1": 1}[dtype]
	if elem == 0 {
		return nil, fmt.Errorf("create %s: unsupported dtype %s", path, dtype)
	}
	dims := make([]string, len(shape))
	n := int64(1)
	for i, d := range shape {
		dims[i] = fmt.Sprint(d)
		n *= d
	}
	shapeStr := strings.Join(dims, ", ")
	if len(shape) == 1 {
		shapeStr += ","
	}
	hdr := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", dtype, shapeStr)
	// Version 1.0: magic, version, 2-byte header length; the header is
	// padded with spaces and a newline so the data starts 64-aligned.
	total := 10 + len(hdr) + 1
	pad := (64 - total%64) % 64
	hdr += strings.Repeat(" ", pad) + "\n"
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	aw := &ArrayWriter{path: path, tmp: f.Name(), f: f, w: bufio.NewWriterSize(f, 1<<20), want: n, elem: elem}
	aw.w.Write([]byte("\x93NUMPY\x01\x00"))
	var l [2]byte
	binary.LittleEndian.PutUint16(l[:], uint16(len(hdr)))
	aw.w.Write(l[:])
	aw.w.WriteString(hdr)
	return aw, nil
}

// Write appends elements: a []float32, []int32, []uint32, []int64,
// []float64 or []uint8 matching the dtype's width.
func (a *ArrayWriter) Write(data any) error {
	var n int64
	var err error
	switch d := data.(type) {
	case []float32:
		n, err = int64(len(d)), binary.Write(a.w, binary.LittleEndian, d)
	case []int32:
		n, err = int64(len(d)), binary.Write(a.w, binary.LittleEndian, d)
	case []uint32:
		n, err = int64(len(d)), binary.Write(a.w, binary.LittleEndian, d)
	case []int64:
		n, err = int64(len(d)), binary.Write(a.w, binary.LittleEndian, d)
	case []float64:
		n, err = int64(len(d)), binary.Write(a.w, binary.LittleEndian, d)
	case []uint8:
		n, err = int64(len(d)), binary.Write(a.w, binary.LittleEndian, d)
	default:
		return fmt.Errorf("write %s: unsupported element type %T", a.path, data)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", a.path, err)
	}
	a.got += n
	return nil
}

// Close finishes the array: it checks the element count, syncs and
// renames the file into place. On any error the partial file is removed.
func (a *ArrayWriter) Close() error {
	fail := func(err error) error {
		a.f.Close()
		os.Remove(a.tmp)
		return err
	}
	if a.got != a.want {
		return fail(fmt.Errorf("write %s: %d elements written, shape says %d", a.path, a.got, a.want))
	}
	if err := a.w.Flush(); err != nil {
		return fail(fmt.Errorf("write %s: %w", a.path, err))
	}
	if err := a.f.Sync(); err != nil {
		return fail(fmt.Errorf("write %s: %w", a.path, err))
	}
	if err := a.f.Close(); err != nil {
		os.Remove(a.tmp)
		return fmt.Errorf("write %s: %w", a.path, err)
	}
	if err := os.Rename(a.tmp, a.path); err != nil {
		os.Remove(a.tmp)
		return fmt.Errorf("write %s: %w", a.path, err)
	}
	return nil
}

// Abort removes the partial file.
func (a *ArrayWriter) Abort() {
	a.f.Close()
	os.Remove(a.tmp)
}

// WriteArray writes a whole in-memory array to path atomically.
func WriteArray(path, dtype string, data any, shape ...int64) error {
	a, err := CreateArray(path, dtype, shape...)
	if err != nil {
		return err
	}
	if err := a.Write(data); err != nil {
		a.Abort()
		return err
	}
	return a.Close()
}

// WriteMeta writes dir/meta.json atomically.
func WriteMeta(dir string, m Meta) error {
	m.SchemaVersion = DatasetSchemaVersion
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("encode meta: %w", err)
	}
	return topology.WriteFileAtomic(filepath.Join(dir, MetaFile), append(data, '\n'))
}

// StageDir makes a temporary directory next to out for building a
// dataset; Commit renames it to out, so a failed or interrupted build
// never leaves a half-written dataset under the name asked for.
func StageDir(out string) (string, error) {
	if _, err := os.Stat(out); err == nil {
		return "", &topology.InputError{Path: out, Field: "--out", Msg: "already exists (remove it or choose another directory)"}
	}
	parent := filepath.Dir(filepath.Clean(out))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", fmt.Errorf("create %s: %w", parent, err)
	}
	return os.MkdirTemp(parent, filepath.Base(out)+".partial-")
}

// CommitDir moves a staged dataset directory to its final name.
func CommitDir(stage, out string) error {
	if err := os.Rename(stage, out); err != nil {
		os.RemoveAll(stage)
		return fmt.Errorf("finish %s: %w", out, err)
	}
	return nil
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
	f, err := os.Open(path)
	if err != nil {
		return nil, &topology.InputError{Path: path, Msg: "cannot read features", Err: err}
	}
	r, err := newNpyReader(f)
	if err != nil {
		f.Close()
		return nil, &topology.InputError{Path: path, Msg: "not a .npy array", Err: err}
	}
	shape := r.Header.Descr.Shape
	if r.Header.Descr.Type != "<f4" || len(shape) != 2 || int64(shape[0]) != m.NumNodes || shape[1] != m.FeatureDim || r.Header.Descr.Fortran {
		f.Close()
		return nil, &topology.InputError{Path: path, Msg: fmt.Sprintf("dtype %s shape %v (want <f4 [%d, %d], row-major)", r.Header.Descr.Type, shape, m.NumNodes, m.FeatureDim)}
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("stat %s: %w", path, err)
	}
	rowBytes := int64(m.FeatureDim) * 4
	off := st.Size() - m.NumNodes*rowBytes
	if off < 10 {
		f.Close()
		return nil, &topology.InputError{Path: path, Msg: fmt.Sprintf("file holds %d bytes, too few for %d rows of %d float32", st.Size(), m.NumNodes, m.FeatureDim)}
	}
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
