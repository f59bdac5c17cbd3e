package dataset

import (
	"archive/zip"
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/gnnplan/gnnplan/internal/inputerr"
	"github.com/gnnplan/gnnplan/internal/npy"
)

// OGB's node-property layout (snap-stanford/ogb, ogb/io/read_graph_raw.py
// and ogb/nodeproppred/dataset.py): DIR/raw holds either CSV files
// (edge.csv.gz "src,dst" lines, num-node-list.csv.gz and
// num-edge-list.csv.gz with one count each, node-feat.csv.gz with one
// comma-separated row per node, node-label.csv.gz with one label per node)
// or, for the "binary" datasets, data.npz (edge_index [2, E],
// num_nodes_list, num_edges_list, node_feat [N, d]) and node-label.npz
// (node_label [N, 1]); DIR/split/NAME/{train,valid,test}.csv.gz list
// vertex ids.

// ogbWant describes the layout for error messages.
const ogbWant = "an OGB node-property directory: raw/ with edge.csv.gz, num-node-list.csv.gz, num-edge-list.csv.gz, node-feat.csv.gz, node-label.csv.gz (or data.npz and node-label.npz), and split/NAME/{train,valid,test}.csv.gz"

// ImportOGB imports an OGB node-property dataset directory (as OGB's
// loaders leave it under dataset/ogbn_NAME). Vertex ids are OGB's. The
// graph is directed unless opt.Undirected (OGB's add_inverse_edge, set for
// ogbn-products and ogbn-proteins; PyG users often make ogbn-arxiv
// undirected too). Self-loops are dropped and duplicates merged, both
// counted; an edge naming a vertex beyond num-node-list is refused. Labels
// must be one column (multi-task labels such as ogbn-proteins' are
// refused); NaN (ogbn-papers100M's unlabelled nodes) becomes -1. The split
// is split/opt.SplitFile (a name, or a directory path), or the only
// directory under split/.
func ImportOGB(ctx context.Context, from, out string, opt ImportOptions) (*ImportSummary, error) {
	ctx, err := beginImport(ctx, out, opt)
	if err != nil {
		return nil, err
	}
	if err := requireDir(from, ogbWant); err != nil {
		return nil, err
	}
	raw := filepath.Join(from, "raw")
	if st, err := os.Stat(raw); err != nil || !st.IsDir() {
		return nil, &inputerr.Error{Path: from, Field: "--from", Msg: "no raw/ directory (want " + ogbWant + ")"}
	}
	var src *ogbGraph
	if npz := filepath.Join(raw, "data.npz"); fileExists(npz) {
		src, err = readOGBNPZ(ctx, raw)
	} else {
		src, err = readOGBCSV(ctx, raw)
	}
	if err != nil {
		return nil, err
	}
	n := src.n
	el := &importEdges{undirected: opt.Undirected}
	for i := range src.srcs {
		el.add(uint32(src.srcs[i]), uint32(src.dsts[i]))
	}
	src.srcs, src.dsts = nil, nil
	g, err := el.build(ctx, n)
	if err != nil {
		return nil, err
	}
	d := &importDataset{g: g, labels: src.labels}
	numClasses := 0
	for _, l := range src.labels {
		numClasses = max(numClasses, int(l)+1)
	}
	name := orDefault(opt.Name, filepath.Base(filepath.Clean(from)))
	d.meta = Meta{Name: name, NumNodes: n, Undirected: opt.Undirected, FeatureDim: src.dim, NumClasses: numClasses,
		Source: "ogb:" + absPath(from)}
	notes := []string{"vertex ids are OGB's node ids (" + src.format + ")"}
	if !opt.Undirected {
		notes = append(notes, "directed: each row lists a vertex's out-neighbors (--undirected stores edges both ways, as OGB's add_inverse_edge does)")
	}
	if src.unlabelled > 0 {
		notes = append(notes, fmt.Sprintf("%d vertices have no label (NaN): label -1", src.unlabelled))
	}
	if src.labels == nil {
		d.labels = noLabels(n)
		notes = append(notes, "no node-label file: every label is -1")
	}
	if src.dim == 0 {
		notes = append(notes, "no node features: feature_dim 0")
	}
	splitDir, splitNote, err := findOGBSplit(from, opt.SplitFile)
	if err != nil {
		return nil, err
	}
	if splitDir != "" {
		for _, s := range []struct {
			file string
			dst  *[]int64
		}{{"train.csv", &d.train}, {"valid.csv", &d.val}, {"test.csv", &d.test}} {
			if *s.dst, err = readOGBIDs(ctx, findInput(splitDir, s.file), n); err != nil {
				return nil, err
			}
		}
	}
	notes = append(notes, splitNote)
	d.meta.Notes = notes
	d.writeFeatures = src.writeFeatures
	return d.finish(out, "ogb", el, 0)
}

// ogbGraph is what an OGB raw directory holds, features left on disk.
type ogbGraph struct {
	format     string // "csv" or "npz"
	n          int64
	srcs, dsts []int64
	labels     []int64 // nil without a label file
	unlabelled int64
	dim        int
	// writeFeatures streams the features into features.npy; nil when
	// there are none.
	writeFeatures func(path string) error
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// ogbCount reads a num-*-list.csv.gz: one count, for the one graph of a
// node-property dataset.
func ogbCount(ctx context.Context, path string) (int64, error) {
	var counts []int64
	err := scanLines(ctx, path, "--from", func(s *importLines) error {
		v, err := parseNonNegInt([]byte(strings.TrimSpace(string(s.line))))
		if err != nil {
			return s.bad(fmt.Errorf("want one count: %w", err))
		}
		counts = append(counts, v)
		return nil
	})
	if err != nil {
		return 0, ogbMissing(path, err)
	}
	if len(counts) != 1 {
		return 0, &inputerr.Error{Path: path, Msg: fmt.Sprintf("%d counts: want one (a node-property dataset is one graph)", len(counts))}
	}
	return counts[0], nil
}

// ogbMissing names a missing required file with the layout wanted.
func ogbMissing(path string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return &inputerr.Error{Path: path, Field: "--from", Msg: "missing (want " + ogbWant + ")"}
	}
	return err
}

// checkVertexCount bounds n so that arrays sized by it are sane.
func checkVertexCount(path string, n int64) error {
	if n <= 0 || n > math.MaxInt32 {
		return &inputerr.Error{Path: path, Msg: fmt.Sprintf("%d vertices: want 1 to 2^31-1", n)}
	}
	return nil
}

// readOGBCSV reads raw/'s CSV files; the features stay on disk until
// they are written.
func readOGBCSV(ctx context.Context, raw string) (*ogbGraph, error) {
	nodesPath := findInput(raw, "num-node-list.csv")
	n, err := ogbCount(ctx, nodesPath)
	if err != nil {
		return nil, err
	}
	if err := checkVertexCount(nodesPath, n); err != nil {
		return nil, err
	}
	edgeCountPath := findInput(raw, "num-edge-list.csv")
	m, err := ogbCount(ctx, edgeCountPath)
	if err != nil {
		return nil, err
	}
	g := &ogbGraph{format: "csv", n: n}
	if err := g.readCSVEdges(ctx, findInput(raw, "edge.csv"), m); err != nil {
		return nil, err
	}
	if labelPath := findInput(raw, "node-label.csv"); fileExists(labelPath) {
		if err := g.readCSVLabels(ctx, labelPath); err != nil {
			return nil, err
		}
	}
	featPath := findInput(raw, "node-feat.csv")
	if !fileExists(featPath) {
		return g, nil
	}
	// The width comes from the first row; every row is checked against it
	// while the features stream out.
	first, err := firstLine(ctx, featPath)
	if err != nil {
		return nil, err
	}
	g.dim = strings.Count(first, ",") + 1
	g.writeFeatures = func(path string) error {
		return writeOGBCSVFeatures(ctx, featPath, path, n, g.dim)
	}
	return g, nil
}

// readCSVEdges reads edge.csv.gz's "src,dst" lines, which must number m
// and name vertices below g.n.
func (g *ogbGraph) readCSVEdges(ctx context.Context, path string, m int64) error {
	n := g.n
	err := scanLines(ctx, path, "--from", func(s *importLines) error {
		f := strings.Split(string(s.line), ",")
		if len(f) != 2 {
			return s.bad(fmt.Errorf("%d comma-separated columns: want src,dst", len(f)))
		}
		var uv [2]int64
		for i, x := range f {
			v, err := parseNonNegInt([]byte(strings.TrimSpace(x)))
			if err != nil {
				return s.bad(err)
			}
			if v >= n {
				return s.bad(fmt.Errorf("vertex %d: num-node-list.csv.gz says ids run from 0 to %d", v, n-1))
			}
			uv[i] = v
		}
		g.srcs, g.dsts = append(g.srcs, uv[0]), append(g.dsts, uv[1])
		return nil
	})
	if err != nil {
		return ogbMissing(path, err)
	}
	if int64(len(g.srcs)) != m {
		return &inputerr.Error{Path: path, Msg: fmt.Sprintf("%d edges, num-edge-list.csv.gz says %d", len(g.srcs), m)}
	}
	return nil
}

// writeOGBCSVFeatures streams node-feat.csv.gz into features.npy at path,
// checking that it holds n rows of dim finite numbers.
func writeOGBCSVFeatures(ctx context.Context, featPath, path string, n int64, dim int) error {
	aw, err := CreateArray(path, "<f4", n, int64(dim))
	if err != nil {
		return err
	}
	row := make([]float32, dim)
	var rows int64
	err = scanLines(ctx, featPath, "--from", func(s *importLines) error {
		f := strings.Split(string(s.line), ",")
		if len(f) != dim {
			return s.bad(fmt.Errorf("%d features, want %d as on the first line", len(f), dim))
		}
		if rows++; rows > n {
			return s.bad(fmt.Errorf("more than %d rows (num-node-list.csv.gz)", n))
		}
		for i, x := range f {
			v, err := strconv.ParseFloat(strings.TrimSpace(x), 32)
			if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
				return s.bad(fmt.Errorf("feature %d: %q is not a finite number", i+1, x))
			}
			row[i] = float32(v)
		}
		return aw.Write(row)
	})
	if err == nil && rows != n {
		err = &inputerr.Error{Path: featPath, Msg: fmt.Sprintf("%d rows, want one per node (%d)", rows, n)}
	}
	if err != nil {
		aw.Abort()
		return err
	}
	return aw.Close()
}

// firstLine returns the first line of path that is not blank.
func firstLine(ctx context.Context, path string) (string, error) {
	f, err := openInput(ctx, path, "--from")
	if err != nil {
		return "", err
	}
	defer f.Close()
	s := newImportLines(ctx, path, f)
	for s.Scan() {
		if !blankLine(s.line) {
			return string(s.line), nil
		}
	}
	if err := s.Err(); err != nil {
		return "", err
	}
	return "", &inputerr.Error{Path: path, Msg: "empty"}
}

// parseOGBLabel reads one label: an integer, a float with no fraction
// ("3.0", as pandas writes an int column holding NaN), or NaN for none.
func parseOGBLabel(s string) (int64, bool, error) {
	if v, err := parseNonNegInt([]byte(s)); err == nil {
		if v > math.MaxInt32 {
			return 0, false, fmt.Errorf("label %d is too large", v)
		}
		return v, true, nil
	}
	x, err := strconv.ParseFloat(s, 64)
	switch {
	case err == nil && math.IsNaN(x):
		return -1, false, nil
	case s == "":
		return -1, false, nil
	case err != nil || x < 0 || x > math.MaxInt32 || x != math.Trunc(x):
		return 0, false, fmt.Errorf("label %q: want a non-negative integer (or NaN for none)", s)
	}
	return int64(x), true, nil
}

func (g *ogbGraph) readCSVLabels(ctx context.Context, path string) error {
	g.labels = make([]int64, 0, g.n)
	err := scanLines(ctx, path, "--from", func(s *importLines) error {
		line := string(s.line)
		if strings.Contains(line, ",") {
			return s.bad(fmt.Errorf("%d label columns: only single-task labels are imported (ogbn-proteins' 112 binary tasks are not)", strings.Count(line, ",")+1))
		}
		if int64(len(g.labels)) >= g.n {
			return s.bad(fmt.Errorf("more than %d labels (num-node-list.csv.gz)", g.n))
		}
		l, ok, err := parseOGBLabel(strings.TrimSpace(line))
		if err != nil {
			return s.bad(err)
		}
		if !ok {
			g.unlabelled++
		}
		g.labels = append(g.labels, l)
		return nil
	})
	if err != nil {
		return err
	}
	if int64(len(g.labels)) != g.n {
		return &inputerr.Error{Path: path, Msg: fmt.Sprintf("%d labels, want one per node (%d)", len(g.labels), g.n)}
	}
	return nil
}

// readOGBIDs reads a split file: one vertex id per line.
func readOGBIDs(ctx context.Context, path string, n int64) ([]int64, error) {
	var ids []int64
	seen := map[int64]int{}
	err := scanLines(ctx, path, "--split", func(s *importLines) error {
		v, err := parseNonNegInt([]byte(strings.TrimSpace(string(s.line))))
		if err != nil {
			return s.bad(fmt.Errorf("want one vertex id per line: %w", err))
		}
		if v >= n {
			return s.bad(fmt.Errorf("vertex %d: the graph has vertices 0 to %d", v, n-1))
		}
		if prev, dup := seen[v]; dup {
			return s.bad(fmt.Errorf("vertex %d is already on line %d", v, prev))
		}
		seen[v] = s.n
		ids = append(ids, v)
		return nil
	})
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &inputerr.Error{Path: path, Field: "--split", Msg: "missing: an OGB split directory holds train.csv.gz, valid.csv.gz and test.csv.gz"}
		}
		return nil, err
	}
	slices.Sort(ids)
	return ids, nil
}

// findOGBSplit picks the split directory: --split as a directory path or
// a name under split/, else the only one there. It returns "" and a note
// when the dataset has none.
func findOGBSplit(from, want string) (string, string, error) {
	root := filepath.Join(from, "split")
	if want != "" {
		dir := want
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			dir = filepath.Join(root, want)
		}
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return "", "", &inputerr.Error{Path: dir, Field: "--split", Msg: "not a split directory (want a name under the dataset's split/ or a directory holding train.csv.gz, valid.csv.gz, test.csv.gz)"}
		}
		return dir, "split from " + dir, nil
	}
	ents, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return "", "no split/ directory: train/val/test are empty", nil
	}
	if err != nil {
		return "", "", &inputerr.Error{Path: root, Msg: "cannot read", Err: pathless(err)}
	}
	var names []string
	for _, e := range ents {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	switch len(names) {
	case 0:
		return "", "split/ holds no split: train/val/test are empty", nil
	case 1:
		return filepath.Join(root, names[0]), "split " + names[0] + " from split/", nil
	}
	return "", "", &inputerr.Error{Path: root, Field: "--split", Msg: fmt.Sprintf("holds %d splits (%s): pick one with --split", len(names), strings.Join(names, ", "))}
}

// ---- the npz variant ----

// npzArray is one .npy member of an .npz archive, open for streaming.
type npzArray struct {
	path  string // archive path and member, for messages
	dtype *npDType
	elem  int64
	shape []int64
	r     io.Reader
	close func() error
}

// openNPZArray opens member name (without ".npy") of the archive zr.
func openNPZArray(zr *zip.Reader, archive, name string) (*npzArray, error) {
	where := archive + "[" + name + "]"
	var zf *zip.File
	for _, f := range zr.File {
		if f.Name == name+".npy" {
			zf = f
		}
	}
	if zf == nil {
		return nil, &inputerr.Error{Path: archive, Msg: fmt.Sprintf("no %s array (want %s)", name, ogbWant)}
	}
	rc, err := zf.Open()
	if err != nil {
		return nil, &inputerr.Error{Path: where, Msg: "cannot read", Err: pathless(err)}
	}
	a, err := readNPYHeader(bufio.NewReaderSize(rc, 1<<20), int64(zf.UncompressedSize64))
	if err != nil {
		rc.Close()
		return nil, &inputerr.Error{Path: where, Msg: "not a .npy array", Err: err}
	}
	a.path, a.close = where, rc.Close
	return a, nil
}

func (a *npzArray) len() int64 {
	n := int64(1)
	for _, d := range a.shape {
		n *= d
	}
	return n
}

// readNPYHeader parses a .npy header from br, checking its length and the
// data size against size, the member's byte count (npyio trusts the
// header's length field and panics on a cut header).
func readNPYHeader(br *bufio.Reader, size int64) (a *npzArray, err error) {
	pre, err := br.Peek(12)
	if err != nil || string(pre[:6]) != "\x93NUMPY" {
		return nil, errors.New("no .npy magic")
	}
	hdr := int64(10 + binary.LittleEndian.Uint16(pre[8:10]))
	if pre[6] >= 2 {
		hdr = int64(12 + binary.LittleEndian.Uint32(pre[8:12]))
	}
	if hdr > size {
		return nil, fmt.Errorf("header of %d bytes in a member of %d", hdr, size)
	}
	h, err := npy.Decode(br)
	if err != nil {
		return nil, fmt.Errorf("malformed header: %w", err)
	}
	if h.DType == "" {
		return nil, errors.New("malformed header: empty descr")
	}
	if h.Fortran && len(h.Shape) > 1 {
		return nil, errors.New("column-major (Fortran) order: want C order")
	}
	dt := &npDType{str: h.DType, order: h.DType[0]}
	elem, err := dt.size()
	if err != nil {
		return nil, err
	}
	a = &npzArray{dtype: dt, elem: elem, r: br}
	n := int64(1)
	for _, d := range h.Shape {
		if d < 0 {
			return nil, fmt.Errorf("shape %v", h.Shape)
		}
		a.shape = append(a.shape, d)
		n *= d
	}
	if hdr+n*elem != size {
		return nil, fmt.Errorf("%d bytes of data for shape %v of %s (want %d): truncated or padded", size-hdr, h.Shape, h.DType, n*elem)
	}
	return a, nil
}

// next reads the next k elements as an npArray view.
func (a *npzArray) next(k int64, buf []byte) (*npArray, error) {
	buf = buf[:k*a.elem]
	if _, err := io.ReadFull(a.r, buf); err != nil {
		return nil, &inputerr.Error{Path: a.path, Msg: "truncated array data", Err: err}
	}
	return &npArray{shape: []int64{k}, dtype: a.dtype, data: buf}, nil
}

// readInts reads the whole array as int64.
func (a *npzArray) readInts() ([]int64, error) {
	n := a.len()
	out := make([]int64, 0, n)
	const chunk = 1 << 16
	buf := make([]byte, chunk*a.elem)
	for len(out) < int(n) {
		k := min(chunk, n-int64(len(out)))
		v, err := a.next(k, buf)
		if err != nil {
			return nil, err
		}
		for i := range k {
			out = append(out, v.int(i))
		}
	}
	return out, nil
}

// readOGBNPZ reads raw/data.npz and node-label.npz; the features stay
// on disk until they are written.
func readOGBNPZ(ctx context.Context, raw string) (*ogbGraph, error) {
	dataPath := filepath.Join(raw, "data.npz")
	zr, err := zip.OpenReader(dataPath)
	if err != nil {
		return nil, &inputerr.Error{Path: dataPath, Msg: "not an .npz (zip) archive", Err: pathless(err)}
	}
	defer zr.Close()
	n, m, err := readNPZCounts(&zr.Reader, dataPath)
	if err != nil {
		return nil, err
	}
	flat, err := readNPZEdges(&zr.Reader, dataPath, n, m)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	g := &ogbGraph{format: "npz", n: n, srcs: flat[:m], dsts: flat[m:]}
	labelPath := filepath.Join(raw, "node-label.npz")
	if fileExists(labelPath) {
		if err := g.readNPZLabels(labelPath); err != nil {
			return nil, err
		}
	}
	hasFeat := slices.ContainsFunc(zr.File, func(f *zip.File) bool { return f.Name == "node_feat.npy" })
	if !hasFeat {
		return g, nil
	}
	fa, err := openNPZArray(&zr.Reader, dataPath, "node_feat")
	if err != nil {
		return nil, err
	}
	fa.close()
	if len(fa.shape) != 2 || fa.shape[0] != n {
		return nil, &inputerr.Error{Path: fa.path, Msg: fmt.Sprintf("shape %v: want [%d, feature_dim]", fa.shape, n)}
	}
	g.dim = int(fa.shape[1])
	g.writeFeatures = func(path string) error {
		return writeOGBNPZFeatures(ctx, dataPath, path, n, g.dim)
	}
	return g, nil
}

// readNPZCounts reads num_nodes_list and num_edges_list, one count each
// for the one graph of a node-property dataset.
func readNPZCounts(zr *zip.Reader, dataPath string) (n, m int64, err error) {
	counts := map[string]int64{}
	for _, name := range []string{"num_nodes_list", "num_edges_list"} {
		a, err := openNPZArray(zr, dataPath, name)
		if err != nil {
			return 0, 0, err
		}
		v, err := a.readInts()
		a.close()
		if err != nil {
			return 0, 0, err
		}
		if len(v) != 1 {
			return 0, 0, &inputerr.Error{Path: a.path, Msg: fmt.Sprintf("%d counts: want one (a node-property dataset is one graph)", len(v))}
		}
		counts[name] = v[0]
	}
	n, m = counts["num_nodes_list"], counts["num_edges_list"]
	if err := checkVertexCount(dataPath+"[num_nodes_list]", n); err != nil {
		return 0, 0, err
	}
	return n, m, nil
}

// readNPZEdges reads edge_index [2, m]: the m sources, then the m
// targets, every one a vertex below n.
func readNPZEdges(zr *zip.Reader, dataPath string, n, m int64) ([]int64, error) {
	ei, err := openNPZArray(zr, dataPath, "edge_index")
	if err != nil {
		return nil, err
	}
	if len(ei.shape) != 2 || ei.shape[0] != 2 || ei.shape[1] != m {
		ei.close()
		return nil, &inputerr.Error{Path: ei.path, Msg: fmt.Sprintf("shape %v: want [2, %d] (num_edges_list)", ei.shape, m)}
	}
	flat, err := ei.readInts()
	ei.close()
	if err != nil {
		return nil, err
	}
	for i, v := range flat {
		if v < 0 || v >= n {
			return nil, &inputerr.Error{Path: ei.path, Msg: fmt.Sprintf("edge %d names vertex %d: num_nodes_list says ids run from 0 to %d", i%int(m), v, n-1)}
		}
	}
	return flat, nil
}

// writeOGBNPZFeatures streams data.npz's node_feat [n, dim] into
// features.npy at path, reopening the archive so nothing is held open
// between the passes.
func writeOGBNPZFeatures(ctx context.Context, dataPath, path string, n int64, dim int) error {
	zr, err := zip.OpenReader(dataPath)
	if err != nil {
		return fmt.Errorf("read %s: %w", dataPath, err)
	}
	defer zr.Close()
	fa, err := openNPZArray(&zr.Reader, dataPath, "node_feat")
	if err != nil {
		return err
	}
	defer fa.close()
	buf := make([]byte, int64(dim)*fa.elem)
	return writeFeatureRows(ctx, path, n, int64(dim), func(_ int64, row []float32) error {
		a, err := fa.next(int64(dim), buf)
		if err != nil {
			return err
		}
		for i := range row {
			row[i] = float32(a.float(int64(i)))
		}
		return nil
	})
}

func (g *ogbGraph) readNPZLabels(path string) error {
	zr, err := zip.OpenReader(path)
	if err != nil {
		return &inputerr.Error{Path: path, Msg: "not an .npz (zip) archive", Err: pathless(err)}
	}
	defer zr.Close()
	a, err := openNPZArray(&zr.Reader, path, "node_label")
	if err != nil {
		return err
	}
	defer a.close()
	if a.len() != g.n || (len(a.shape) == 2 && a.shape[1] != 1) || len(a.shape) > 2 {
		return &inputerr.Error{Path: a.path, Msg: fmt.Sprintf("shape %v: want [%d] or [%d, 1] (single-task labels)", a.shape, g.n, g.n)}
	}
	buf := make([]byte, a.elem*g.n)
	v, err := a.next(g.n, buf)
	if err != nil {
		return err
	}
	g.labels = make([]int64, g.n)
	for i := range g.n {
		x := v.float(i)
		switch {
		case math.IsNaN(x):
			g.labels[i] = -1
			g.unlabelled++
		case x < 0 || x > math.MaxInt32 || x != math.Trunc(x):
			return &inputerr.Error{Path: a.path, Msg: fmt.Sprintf("node %d has label %v: want a non-negative integer or NaN", i, x)}
		default:
			g.labels[i] = int64(x)
		}
	}
	return nil
}
