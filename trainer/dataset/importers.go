package dataset

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gnnplan/gnnplan/internal/inputerr"
)

// OriginalIDsFile maps the dense vertex ids of a SNAP import back to the
// ids in the edge list: int64 [num_nodes], vertex v was original_ids[v].
// Readers that do not know it ignore it.
const OriginalIDsFile = "original_ids.npy"

// ImportOptions tunes an import; the zero value suits every format.
type ImportOptions struct {
	// Undirected stores every SNAP edge both ways. LINQS and Geom-GCN
	// graphs are always undirected (their GNN benchmarks use them so).
	Undirected bool
	// SplitFile names a train/val/test split: LINQS
	// planetoid_split_linqs_ids.tsv (split, paper_id, label,
	// planetoid_index) or a Geom-GCN splits tsv (split_id, set,
	// node_id|paper_id, ...). Columns are found by the header's names.
	SplitFile string
	// SplitID picks one split of a file holding several (Geom-GCN's ten,
	// told apart by split_id); 0 is the first.
	SplitID int
	// Header says whether a SNAP edge list's first line is an "N M"
	// count header rather than an edge; the zero value decides from the
	// file (see HeaderMode).
	Header HeaderMode
	// LabelFile gives SNAP vertex labels, "node label" lines with the
	// edge list's ids (email-Eu-core's departments).
	LabelFile string
	// Name is meta.json's name; by default it comes from the input's
	// file or directory name.
	Name string
	// Progress, if not nil, gets a phase per input file read (its bytes)
	// when it is a Progress (a bar on a terminal); nothing otherwise.
	Progress io.Writer
}

// ImportSummary says what an import read, kept and dropped.
type ImportSummary struct {
	Format string
	Nodes  int64
	// Edges counts CSR entries: an undirected edge stored both ways
	// counts twice.
	Edges int64
	// UndirectedEdges counts distinct unordered vertex pairs, for
	// directed graphs too.
	UndirectedEdges int64
	Features        int
	Classes         int
	// DroppedEdges counts input edges naming a vertex the node file does
	// not hold (citations of papers absent from the content file).
	DroppedEdges int64
	SelfLoops    int64
	// Duplicates counts input edges repeating one already kept: the same
	// ordered pair for a directed graph, the same unordered pair (either
	// direction) for an undirected one.
	Duplicates       int64
	Train, Val, Test int64
	Notes            []string
}

// maxImportLineBytes bounds one input line, so a binary file fed by mistake is
// refused instead of read whole into memory.
const maxImportLineBytes = 1 << 28

// importCtxCheckLines is how often line loops look for cancellation.
const importCtxCheckLines = 1 << 12

// importLines reads a text file line by line, tracking line numbers (for
// errors) and byte offsets (for a second pass that seeks to a line).
type importLines struct {
	ctx  context.Context
	path string
	r    *bufio.Reader
	buf  []byte
	line []byte // the current line without its "\n" or "\r\n"
	n    int    // 1-based number of the current line
	off  int64  // byte offset where the current line starts
	pos  int64  // byte offset of the next line
	err  error
}

func newImportLines(ctx context.Context, path string, r io.Reader) *importLines {
	return &importLines{ctx: ctx, path: path, r: bufio.NewReaderSize(r, 1<<20)}
}

// Scan advances to the next line; it returns false at the end of the
// input or on an error (see Err).
func (s *importLines) Scan() bool {
	if s.err != nil {
		return false
	}
	if s.n%importCtxCheckLines == 0 {
		if err := s.ctx.Err(); err != nil {
			s.err = err
			return false
		}
	}
	s.off = s.pos
	chunk, err := s.r.ReadSlice('\n')
	line := chunk
	if errors.Is(err, bufio.ErrBufferFull) {
		// A line longer than the reader's buffer: gather it in s.buf.
		s.buf = append(s.buf[:0], chunk...)
		for errors.Is(err, bufio.ErrBufferFull) {
			if len(s.buf) > maxImportLineBytes {
				s.err = &inputerr.Error{Path: s.path, Line: s.n + 1, Msg: fmt.Sprintf("line longer than %d bytes: not a text file of this format", maxImportLineBytes)}
				return false
			}
			chunk, err = s.r.ReadSlice('\n')
			s.buf = append(s.buf, chunk...)
		}
		line = s.buf
	}
	if err != nil && !errors.Is(err, io.EOF) {
		if inputerr.Is(err) {
			s.err = err // already names the file (a corrupt gzip stream)
		} else {
			s.err = fmt.Errorf("read %s: %w", s.path, err)
		}
		return false
	}
	if len(line) == 0 {
		return false
	}
	s.pos += int64(len(line))
	s.n++
	line = line[:len(line)-boolInt(line[len(line)-1] == '\n')]
	line = line[:len(line)-boolInt(len(line) > 0 && line[len(line)-1] == '\r')]
	s.line = line
	return true
}

// Err returns the error that stopped Scan, or nil at a clean end.
func (s *importLines) Err() error { return s.err }

// bad makes a bad-input error for the current line.
func (s *importLines) bad(err error) error {
	var ie *inputerr.Error
	if errors.As(err, &ie) {
		return err
	}
	return &inputerr.Error{Path: s.path, Line: s.n, Msg: err.Error()}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// blankLine reports whether a line holds only spaces and tabs.
func blankLine(line []byte) bool {
	for _, c := range line {
		if c != ' ' && c != '\t' {
			return false
		}
	}
	return true
}

// scanLines opens path (plain or gzip text; see openInput) and calls fn
// for every line that is not blank, passing the scanner so fn can see the
// line number and offset. field names the flag path came from.
func scanLines(ctx context.Context, path, field string, fn func(s *importLines) error) error {
	f, err := openInput(ctx, path, field)
	if err != nil {
		return err
	}
	defer f.Close()
	s := newImportLines(ctx, path, f)
	for s.Scan() {
		if blankLine(s.line) {
			continue
		}
		if err := fn(s); err != nil {
			return err
		}
	}
	return s.Err()
}

// parseNonNegInt parses a decimal integer in [0, 2^63-1] without
// allocating, for the per-edge hot path of SNAP lists.
func parseNonNegInt(b []byte) (int64, error) {
	if len(b) == 0 {
		return 0, errors.New("empty number")
	}
	b0 := b
	if b[0] == '+' {
		b = b[1:]
		if len(b) == 0 {
			return 0, fmt.Errorf("%q is not a non-negative integer", b0)
		}
	}
	var v int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%q is not a non-negative integer", b0)
		}
		d := int64(c - '0')
		if v > (math.MaxInt64-d)/10 {
			return 0, fmt.Errorf("%q is larger than 2^63-1", b0)
		}
		v = v*10 + d
	}
	return v, nil
}

// nextField returns the first whitespace-separated field of b and the
// rest after it.
func nextField(b []byte) (field, rest []byte) {
	i := 0
	for i < len(b) && (b[i] == ' ' || b[i] == '\t') {
		i++
	}
	j := i
	for j < len(b) && b[j] != ' ' && b[j] != '\t' {
		j++
	}
	return b[i:j], b[j:]
}

// parseSNAPLine parses one line of a SNAP edge list: "u v", whitespace
// separated, optionally followed by more columns (weights or timestamps,
// which are ignored: extra reports them). Comment lines ('#' or '%') and
// blank lines give skip.
func parseSNAPLine(line []byte) (u, v int64, extra, skip bool, err error) {
	first, rest := nextField(line)
	if len(first) == 0 || first[0] == '#' || first[0] == '%' {
		return 0, 0, false, true, nil
	}
	second, rest := nextField(rest)
	if len(second) == 0 {
		return 0, 0, false, false, fmt.Errorf("%q: want two vertex ids", line)
	}
	if u, err = parseNonNegInt(first); err != nil {
		return 0, 0, false, false, fmt.Errorf("source vertex: %w", err)
	}
	if v, err = parseNonNegInt(second); err != nil {
		return 0, 0, false, false, fmt.Errorf("target vertex: %w", err)
	}
	third, _ := nextField(rest)
	return u, v, len(third) > 0, false, nil
}

// importEdges gathers edges for CSR construction. Keys pack src<<32|dst (an
// undirected edge as min<<32|max), so sorting them orders CSR rows and
// brings duplicates together.
type importEdges struct {
	undirected bool
	keys       []uint64
	selfLoops  int64
}

func (e *importEdges) add(u, v uint32) {
	if u == v {
		e.selfLoops++
		return
	}
	if e.undirected && u > v {
		u, v = v, u
	}
	e.keys = append(e.keys, uint64(u)<<32|uint64(v))
}

// importCSR is a built adjacency with its counts.
type importCSR struct {
	indptr          []int64
	indices         []int32
	undirectedEdges int64
	duplicates      int64
}

// build sorts and deduplicates the edges and lays them out as CSR over n
// vertices, every row sorted by neighbor id.
func (e *importEdges) build(ctx context.Context, n int64) (*importCSR, error) {
	if err := sortKeys(ctx, e.keys); err != nil {
		return nil, err
	}
	uniq := slices.Compact(e.keys)
	g := &importCSR{duplicates: int64(len(e.keys) - len(uniq))}
	e.keys = uniq
	g.indptr = make([]int64, n+1)
	for _, k := range uniq {
		g.indptr[(k>>32)+1]++
		if e.undirected {
			g.indptr[(k&0xffffffff)+1]++
		}
	}
	for v := int64(0); v < n; v++ {
		g.indptr[v+1] += g.indptr[v]
	}
	g.indices = make([]int32, g.indptr[n])
	fill := slices.Clone(g.indptr[:n])
	// With keys sorted by (min, max), row r receives its smaller
	// neighbors (as the max of a pair) in increasing order before its
	// larger ones (as the min), so every row comes out sorted.
	for i, k := range uniq {
		if i%(1<<20) == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		u, v := k>>32, k&0xffffffff
		g.indices[fill[u]] = int32(v)
		fill[u]++
		if e.undirected {
			g.indices[fill[v]] = int32(u)
			fill[v]++
		}
	}
	if e.undirected {
		g.undirectedEdges = int64(len(uniq))
		return g, nil
	}
	// A directed pair u->v and its reverse make one unordered pair;
	// count each reverse-present pair once, from its smaller end.
	for i, k := range uniq {
		if i%(1<<20) == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		u, v := k>>32, k&0xffffffff
		if u < v {
			g.undirectedEdges++
		} else if _, found := slices.BinarySearch(uniq, v<<32|u); !found {
			g.undirectedEdges++
		}
	}
	return g, nil
}

// sortKeys sorts keys in increasing order: a least-significant-digit
// radix sort, 16 bits a pass, that skips the digits every key shares and
// checks ctx every 2^20 keys, so Ctrl-C stops an import of a billion
// edges within a second, which a library sort would not.
func sortKeys(ctx context.Context, keys []uint64) error {
	const bits, mask = 16, 1<<16 - 1
	if len(keys) < 1<<16 {
		slices.Sort(keys)
		return nil
	}
	tmp := make([]uint64, len(keys))
	var count [1 << bits]int
	src, dst := keys, tmp
	for shift := uint(0); shift < 64; shift += bits {
		clear(count[:])
		for i, k := range src {
			if i%(1<<20) == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			count[(k>>shift)&mask]++
		}
		if count[(src[0]>>shift)&mask] == len(src) {
			continue // every key has this digit
		}
		sum := 0
		for d, c := range count {
			count[d] = sum
			sum += c
		}
		for i, k := range src {
			if i%(1<<20) == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			d := (k >> shift) & mask
			dst[count[d]] = k
			count[d]++
		}
		src, dst = dst, src
	}
	if &src[0] != &keys[0] {
		copy(keys, src)
	}
	return nil
}

// importDataset is everything an importer writes besides the features.
type importDataset struct {
	meta             Meta
	g                *importCSR
	labels           []int64
	train, val, test []int64
	// writeFeatures streams features.npy ([num_nodes, feature_dim]
	// float32) into path; nil writes an empty [num_nodes, 0] matrix.
	writeFeatures func(path string) error
	extra         map[string][]int64 // further int64 arrays by file name
}

// write stages the dataset under out's name, writes every array and
// meta.json, and commits it; on failure nothing is left at out.
func (d *importDataset) write(out string) (err error) {
	stage, err := StageDir(out)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			stage.Abort()
		}
	}()
	n := d.meta.NumNodes
	d.meta.NumEdges = int64(len(d.g.indices))
	d.meta.IndexDType = "int32"
	d.meta.FeatureDType = "float32"
	d.meta.NumTrain, d.meta.NumVal, d.meta.NumTest = int64(len(d.train)), int64(len(d.val)), int64(len(d.test))
	type array struct {
		file, dtype string
		data        any
		n           int64
	}
	arrays := []array{
		{IndptrFile, "<i8", d.g.indptr, n + 1},
		{IndicesFile, "<i4", d.g.indices, d.meta.NumEdges},
		{LabelsFile, "<i8", d.labels, n},
		{TrainFile, "<i8", d.train, int64(len(d.train))},
		{ValFile, "<i8", d.val, int64(len(d.val))},
		{TestFile, "<i8", d.test, int64(len(d.test))},
	}
	for _, name := range slices.Sorted(maps.Keys(d.extra)) {
		arrays = append(arrays, array{name, "<i8", d.extra[name], int64(len(d.extra[name]))})
	}
	for _, a := range arrays {
		if err := WriteArray(filepath.Join(stage.Dir, a.file), a.dtype, a.data, a.n); err != nil {
			return err
		}
	}
	fpath := filepath.Join(stage.Dir, FeaturesFile)
	if d.writeFeatures != nil {
		err = d.writeFeatures(fpath)
	} else {
		err = WriteArray(fpath, "<f4", []float32{}, n, 0)
	}
	if err != nil {
		return err
	}
	if err := WriteMeta(stage.Dir, d.meta); err != nil {
		return err
	}
	return stage.Commit()
}

// summary fills the counts an ImportSummary shares with the dataset.
func (d *importDataset) summary(format string, el *importEdges, dropped int64) *ImportSummary {
	return &ImportSummary{
		Format:          format,
		Nodes:           d.meta.NumNodes,
		Edges:           int64(len(d.g.indices)),
		UndirectedEdges: d.g.undirectedEdges,
		Features:        d.meta.FeatureDim,
		Classes:         d.meta.NumClasses,
		DroppedEdges:    dropped,
		SelfLoops:       el.selfLoops,
		Duplicates:      d.g.duplicates,
		Train:           int64(len(d.train)),
		Val:             int64(len(d.val)),
		Test:            int64(len(d.test)),
		Notes:           d.meta.Notes,
	}
}

// checkOutFree refuses an existing --out before any input is read, so
// the user hears of it at once rather than after a long parse; StageDir
// checks again when writing starts.
func checkOutFree(out string) error {
	if _, err := os.Stat(out); err == nil {
		return &inputerr.Error{Path: out, Field: "--out", Msg: "already exists (remove it or choose another directory)"}
	}
	return nil
}

// beginImport is every importer's first step: progress goes on ctx, and
// an existing out is refused before any input is read.
func beginImport(ctx context.Context, out string, opt ImportOptions) (context.Context, error) {
	ctx = withImportProgress(ctx, opt.Progress)
	return ctx, checkOutFree(out)
}

// finish is every importer's last step: write the dataset to out and
// summarise what was read.
func (d *importDataset) finish(out, format string, el *importEdges, dropped int64) (*ImportSummary, error) {
	if err := d.write(out); err != nil {
		return nil, err
	}
	return d.summary(format, el, dropped), nil
}

// applySplit reads split opt.SplitID of opt.SplitFile into d's
// train/val/test (see readSplit for lookup and labelOf), noting where it
// came from; without a split file the sets stay empty, as a note says.
func (d *importDataset) applySplit(ctx context.Context, opt ImportOptions, lookup func(string) (int64, bool), labelOf func(int64) string) error {
	if opt.SplitFile == "" {
		d.meta.Notes = append(d.meta.Notes, "no split file given: train/val/test are empty")
		return nil
	}
	sp, err := readSplit(ctx, opt.SplitFile, opt.SplitID, lookup, labelOf)
	if err != nil {
		return err
	}
	d.train, d.val, d.test = sp.train, sp.val, sp.test
	d.meta.Notes = append(d.meta.Notes, sp.notes...)
	return nil
}

// noLabels returns n labels of -1, the mark of an unlabelled vertex.
func noLabels(n int64) []int64 {
	labels := make([]int64, n)
	for v := range labels {
		labels[v] = -1
	}
	return labels
}

// writeFeatureRows streams an [n, dim] float32 features.npy to path, row
// v filled by fill in vertex order, so no importer holds its features in
// memory. It checks ctx every importCtxCheckLines rows; on any failure
// the partial file is removed.
func writeFeatureRows(ctx context.Context, path string, n, dim int64, fill func(v int64, row []float32) error) error {
	aw, err := CreateArray(path, "<f4", n, dim)
	if err != nil {
		return err
	}
	row := make([]float32, dim)
	for v := range n {
		if v%importCtxCheckLines == 0 {
			if err := ctx.Err(); err != nil {
				aw.Abort()
				return err
			}
		}
		if err := fill(v, row); err != nil {
			aw.Abort()
			return err
		}
		if err := aw.Write(row); err != nil {
			aw.Abort()
			return err
		}
	}
	return aw.Close()
}

// ---- LINQS (Cora, CiteSeer) ----

// linqsContentLine splits a LINQS content line into its paper id, its
// feature fields and its class name.
func linqsContentLine(line string) (id string, feats []string, class string, err error) {
	f := strings.Fields(line)
	if len(f) < 3 {
		return "", nil, "", fmt.Errorf("%d columns: want paper_id, word features, class_label", len(f))
	}
	return f[0], f[1 : len(f)-1], f[len(f)-1], nil
}

// parseFeatureValues parses feature fields into row (len(feats) long).
func parseFeatureValues(feats []string, row []float32) error {
	for i, s := range feats {
		switch s {
		case "0":
			row[i] = 0
		case "1":
			row[i] = 1
		default:
			x, err := strconv.ParseFloat(s, 32)
			if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
				return fmt.Errorf("feature %d: %q is not a finite number", i+1, s)
			}
			row[i] = float32(x)
		}
	}
	return nil
}

// findBySuffix returns the one file in dir whose name ends in suffix, or
// in suffix+".gz".
func findBySuffix(dir, suffix string) (string, error) {
	if err := requireDir(dir, "a directory holding NAME.content and NAME.cites"); err != nil {
		return "", err
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "", &inputerr.Error{Path: dir, Field: "--from", Msg: "cannot read the input directory", Err: pathless(err)}
	}
	var found []string
	for _, e := range ents {
		if !e.IsDir() && (strings.HasSuffix(e.Name(), suffix) || strings.HasSuffix(e.Name(), suffix+".gz")) {
			found = append(found, e.Name())
		}
	}
	switch len(found) {
	case 0:
		return "", &inputerr.Error{Path: dir, Field: "--from", Msg: fmt.Sprintf("no *%s file", suffix)}
	case 1:
		return filepath.Join(dir, found[0]), nil
	}
	return "", &inputerr.Error{Path: dir, Field: "--from", Msg: fmt.Sprintf("%d *%s files (%s): keep one", len(found), suffix, strings.Join(found, ", "))}
}

// ImportLINQS imports a LINQS citation dataset (Cora, CiteSeer): srcDir
// holds <name>.content (paper_id, 0/1 word features, class_label per
// line) and <name>.cites ("cited<TAB>citing" per line).
//
// Vertex ids follow the content file's line order. Class names become
// labels 0..K-1 in sorted (byte-wise) name order, listed in meta.json's
// notes. The graph is undirected, deduplicated and without self-loops;
// citations naming a paper absent from the content file are dropped and
// counted. With opt.SplitFile the split is read from it (see
// ImportOptions); otherwise there is none.
//
// The content file is read twice, so features stream to disk rather than
// being held in memory.
func ImportLINQS(ctx context.Context, srcDir, out string, opt ImportOptions) (*ImportSummary, error) {
	ctx, err := beginImport(ctx, out, opt)
	if err != nil {
		return nil, err
	}
	contentPath, err := findBySuffix(srcDir, ".content")
	if err != nil {
		return nil, err
	}
	citesPath, err := findBySuffix(srcDir, ".cites")
	if err != nil {
		return nil, err
	}
	c, err := readLINQSContent(ctx, contentPath)
	if err != nil {
		return nil, err
	}
	n := int64(len(c.ids))
	labels, names := c.labels()
	el, dropped, missing, err := readLINQSCites(ctx, citesPath, c.ids)
	if err != nil {
		return nil, err
	}
	g, err := el.build(ctx, n)
	if err != nil {
		return nil, err
	}

	d := &importDataset{g: g, labels: labels}
	d.meta = Meta{Name: orDefault(opt.Name, strings.TrimSuffix(trimGz(filepath.Base(contentPath)), ".content")), NumNodes: n,
		Undirected: true, FeatureDim: c.dim, NumClasses: len(names), Source: "linqs:" + absPath(srcDir)}
	d.meta.Notes = append(d.meta.Notes, "labels (class names in sorted order): "+strings.Join(names, ", "))
	if dropped > 0 {
		d.meta.Notes = append(d.meta.Notes, fmt.Sprintf("dropped %d citations naming papers absent from %s (e.g. %s)", dropped, filepath.Base(contentPath), strings.Join(missing, ", ")))
	}
	lookup := func(id string) (int64, bool) {
		v, ok := c.ids[id]
		return int64(v), ok
	}
	labelOf := func(v int64) string { return c.classOf[v] }
	if err := d.applySplit(ctx, opt, lookup, labelOf); err != nil {
		return nil, err
	}
	d.writeFeatures = func(path string) error {
		return writeLINQSFeatures(ctx, contentPath, path, n, c.dim)
	}
	return d.finish(out, "linqs", el, dropped)
}

// linqsContent is pass 1 over a LINQS content file: every line checked,
// paper ids numbered in line order (the vertex ids), and their classes.
type linqsContent struct {
	ids     map[string]int32
	classOf []string // vertex -> class name
	dim     int      // feature columns, -1 before the first line
	row     []float32
}

func readLINQSContent(ctx context.Context, path string) (*linqsContent, error) {
	c := &linqsContent{ids: map[string]int32{}, dim: -1, row: []float32{}}
	if err := scanLines(ctx, path, "--from", c.line); err != nil {
		return nil, err
	}
	if len(c.ids) == 0 {
		return nil, &inputerr.Error{Path: path, Msg: "empty: no papers"}
	}
	return c, nil
}

func (c *linqsContent) line(s *importLines) error {
	id, feats, class, err := linqsContentLine(string(s.line))
	if err != nil {
		return s.bad(err)
	}
	if c.dim < 0 {
		c.dim = len(feats)
		c.row = make([]float32, c.dim)
	} else if len(feats) != c.dim {
		return s.bad(fmt.Errorf("%d feature columns, want %d as on the first line", len(feats), c.dim))
	}
	if err := parseFeatureValues(feats, c.row); err != nil {
		return s.bad(fmt.Errorf("paper %s: %w", id, err))
	}
	if _, dup := c.ids[id]; dup {
		return s.bad(fmt.Errorf("paper %s appears twice", id))
	}
	if len(c.ids) >= math.MaxInt32 {
		return s.bad(errors.New("more than 2^31-1 papers"))
	}
	c.ids[id] = int32(len(c.ids))
	c.classOf = append(c.classOf, class)
	return nil
}

// labels numbers the class names 0..K-1 in sorted (byte-wise) order and
// returns every vertex's label and the "i=name" list for the notes.
func (c *linqsContent) labels() (labels []int64, names []string) {
	classes := slices.Compact(slices.Sorted(slices.Values(c.classOf)))
	classIdx := make(map[string]int64, len(classes))
	names = make([]string, len(classes))
	for i, name := range classes {
		classIdx[name] = int64(i)
		names[i] = fmt.Sprintf("%d=%s", i, name)
	}
	labels = make([]int64, len(c.ids))
	for v, name := range c.classOf {
		labels[v] = classIdx[name]
	}
	return labels, names
}

// readLINQSCites reads the citations as undirected edges between the
// papers of ids; a citation naming an unknown paper is dropped and
// counted, and missing keeps up to three such ids for the notes.
func readLINQSCites(ctx context.Context, path string, ids map[string]int32) (el *importEdges, dropped int64, missing []string, err error) {
	el = &importEdges{undirected: true}
	var lines int64
	err = scanLines(ctx, path, "--from", func(s *importLines) error {
		f := strings.Fields(string(s.line))
		if len(f) != 2 {
			return s.bad(fmt.Errorf("%d columns: want cited_paper_id<TAB>citing_paper_id", len(f)))
		}
		lines++
		u, ok1 := ids[f[0]]
		v, ok2 := ids[f[1]]
		if !ok1 || !ok2 {
			dropped++
			for _, id := range []string{f[0], f[1]} {
				if _, ok := ids[id]; !ok && len(missing) < 3 && !slices.Contains(missing, id) {
					missing = append(missing, id)
				}
			}
			return nil
		}
		el.add(uint32(u), uint32(v))
		return nil
	})
	if err != nil {
		return nil, 0, nil, err
	}
	if lines == 0 {
		return nil, 0, nil, &inputerr.Error{Path: path, Msg: "empty: no citations"}
	}
	return el, dropped, missing, nil
}

// writeLINQSFeatures is the content file's second pass: rows in line
// order, which is vertex order.
func writeLINQSFeatures(ctx context.Context, contentPath, path string, n int64, dim int) error {
	aw, err := CreateArray(path, "<f4", n, int64(dim))
	if err != nil {
		return err
	}
	row := make([]float32, dim)
	err = scanLines(ctx, contentPath, "--from", func(s *importLines) error {
		_, feats, _, err := linqsContentLine(string(s.line))
		if err == nil && len(feats) != dim {
			err = fmt.Errorf("%d feature columns, want %d (did the file change during the import?)", len(feats), dim)
		}
		if err == nil {
			err = parseFeatureValues(feats, row)
		}
		if err != nil {
			return s.bad(err)
		}
		return aw.Write(row)
	})
	if err != nil {
		aw.Abort()
		return err
	}
	return aw.Close()
}

// ---- splits ----

// split is a train/val/test split as sorted vertex ids.
type importSplit struct {
	train, val, test []int64
	notes            []string
}

// splitHeader locates a split file's columns by name.
type splitHeader struct {
	set, id, splitID, label int // column indices, -1 when absent
	idName                  string
}

func parseSplitHeader(line string) (splitHeader, error) {
	h := splitHeader{set: -1, id: -1, splitID: -1, label: -1}
	for i, c := range strings.Fields(line) {
		switch c {
		case "split", "set":
			h.set = i
		case "paper_id", "node_id", "paper_id|label_index":
			h.id, h.idName = i, c
		case "split_id":
			h.splitID = i
		case "label":
			h.label = i
		}
	}
	if h.set < 0 || h.id < 0 {
		return h, fmt.Errorf("header %q: want columns named split (or set) and paper_id (or node_id), optionally split_id and label", line)
	}
	return h, nil
}

// splitRow is one row of a split file.
type splitRow struct {
	set     string // "train", "val" or "test"
	id      string
	splitID int
	label   string // "" without a label column
}

func parseSplitRow(h splitHeader, line string) (splitRow, error) {
	f := strings.Fields(line)
	need := max(h.set, h.id, h.splitID, h.label) + 1
	if len(f) < need {
		return splitRow{}, fmt.Errorf("%d columns, the header names %d", len(f), need)
	}
	r := splitRow{id: f[h.id]}
	switch f[h.set] {
	case "train":
		r.set = "train"
	case "val", "valid", "validation":
		r.set = "val"
	case "test":
		r.set = "test"
	default:
		return splitRow{}, fmt.Errorf("set %q: want train, val or test", f[h.set])
	}
	if h.splitID >= 0 {
		id, err := strconv.Atoi(f[h.splitID])
		if err != nil || id < 0 {
			return splitRow{}, fmt.Errorf("split_id %q: want a non-negative integer", f[h.splitID])
		}
		r.splitID = id
	}
	if h.label >= 0 {
		r.label = f[h.label]
	}
	return r, nil
}

// readSplit reads split splitID of path. lookup maps the file's ids to
// vertices; labelOf, when the file has a label column, gives a vertex's
// label as the file writes it, so a split from another dataset is caught.
func readSplit(ctx context.Context, path string, splitID int, lookup func(string) (int64, bool), labelOf func(int64) string) (*importSplit, error) {
	sr := &splitReader{splitID: splitID, lookup: lookup, labelOf: labelOf, seen: map[int64]int{}, ids: map[int]bool{}}
	if err := scanLines(ctx, path, "--split", sr.line); err != nil {
		return nil, err
	}
	if err := sr.check(path); err != nil {
		return nil, err
	}
	sp := &sr.sp
	for _, s := range [][]int64{sp.train, sp.val, sp.test} {
		slices.Sort(s)
	}
	if sr.h.splitID >= 0 {
		sp.notes = append(sp.notes, fmt.Sprintf("split %d of %d from %s", splitID, len(sr.ids), filepath.Base(path)))
	} else {
		sp.notes = append(sp.notes, "split from "+filepath.Base(path))
	}
	if sr.skipped > 0 {
		sp.notes = append(sp.notes, fmt.Sprintf("skipped %d split rows naming no node (\"-\")", sr.skipped))
	}
	if sr.absent > 0 {
		sp.notes = append(sp.notes, fmt.Sprintf("skipped %d split rows naming ids absent from the graph (e.g. %s)", sr.absent, strings.Join(sr.absentIDs, ", ")))
	}
	return sp, nil
}

// splitReader is readSplit's state while it reads the file's rows.
type splitReader struct {
	splitID int
	lookup  func(string) (int64, bool)
	labelOf func(int64) string

	h         *splitHeader // nil until the header line
	sp        importSplit
	seen      map[int64]int // vertex -> line, within the chosen split
	ids       map[int]bool  // every split id in the file
	skipped   int64         // rows of "-"
	absent    int64         // Geom-GCN rows naming nodes the graph lacks
	absentIDs []string      // up to three of them, for messages
}

func (sr *splitReader) line(s *importLines) error {
	if sr.h == nil {
		hh, err := parseSplitHeader(string(s.line))
		if err != nil {
			return s.bad(err)
		}
		sr.h = &hh
		return nil
	}
	r, err := parseSplitRow(*sr.h, string(s.line))
	if err != nil {
		return s.bad(err)
	}
	sr.ids[r.splitID] = true
	if r.splitID != sr.splitID {
		return nil
	}
	if r.id == "-" { // Geom-GCN rows for nodes that no file describes
		sr.skipped++
		return nil
	}
	return sr.add(s, r)
}

// add puts a row of the chosen split into its set.
func (sr *splitReader) add(s *importLines, r splitRow) error {
	h := sr.h
	v, ok := sr.lookup(r.id)
	if !ok && h.splitID >= 0 {
		// Geom-GCN's published splits name nodes that some copies of
		// the graph lack: skip them, counted, as its loaders do.
		sr.absent++
		if len(sr.absentIDs) < 3 {
			sr.absentIDs = append(sr.absentIDs, r.id)
		}
		return nil
	}
	if !ok {
		return s.bad(fmt.Errorf("%s %s is not in the dataset", h.idName, r.id))
	}
	if r.label != "" && sr.labelOf != nil && sr.labelOf(v) != r.label {
		return s.bad(fmt.Errorf("%s %s has label %s here but %s in the dataset: is this split for another dataset?", h.idName, r.id, r.label, sr.labelOf(v)))
	}
	if prev, dup := sr.seen[v]; dup {
		return s.bad(fmt.Errorf("%s %s is already in the split on line %d", h.idName, r.id, prev))
	}
	sr.seen[v] = s.n
	switch r.set {
	case "train":
		sr.sp.train = append(sr.sp.train, v)
	case "val":
		sr.sp.val = append(sr.sp.val, v)
	default:
		sr.sp.test = append(sr.sp.test, v)
	}
	return nil
}

// check refuses a file that gave the chosen split no rows, saying why.
func (sr *splitReader) check(path string) error {
	if sr.h == nil {
		return &inputerr.Error{Path: path, Field: "--split", Msg: "empty: no header and no rows"}
	}
	if len(sr.seen) == 0 && sr.absent > 0 {
		return &inputerr.Error{Path: path, Field: "--split", Msg: fmt.Sprintf("none of the %d ids of split %d is in the dataset (e.g. %s): is this split for another dataset?", sr.absent, sr.splitID, strings.Join(sr.absentIDs, ", "))}
	}
	if len(sr.seen) == 0 && sr.skipped == 0 {
		if sr.h.splitID < 0 && sr.splitID != 0 {
			return &inputerr.Error{Path: path, Field: "--split-id", Msg: fmt.Sprintf("%d: the file has no split_id column, so it holds one split", sr.splitID)}
		}
		if len(sr.ids) > 0 {
			return &inputerr.Error{Path: path, Field: "--split-id", Msg: fmt.Sprintf("%d: the file holds split ids %s", sr.splitID, splitIDList(sr.ids))}
		}
		return &inputerr.Error{Path: path, Field: "--split", Msg: "empty: a header but no rows"}
	}
	return nil
}

func splitIDList(m map[int]bool) string {
	ks := make([]int, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Ints(ks)
	s := make([]string, len(ks))
	for i, k := range ks {
		s[i] = strconv.Itoa(k)
	}
	if len(s) > 3 {
		return s[0] + " to " + s[len(s)-1]
	}
	return strings.Join(s, ", ")
}

// absPath records where a dataset came from in a form that stays true
// when the dataset directory is moved or read from elsewhere.
func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

func orDefault(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// ---- SNAP ----

// ImportSNAP imports a SNAP edge list: "u v" lines, whitespace
// separated, '#' comments, ids arbitrary non-negative integers. Ids are
// remapped densely in order of first appearance reading the file top to
// bottom, u before v on a line (so the result does not depend on how
// ids were numbered, only on the file); original_ids.npy keeps the map.
// Self-loops are dropped and duplicates merged, both counted. The graph is
// directed unless opt.Undirected. There are no features (feature_dim 0).
// With opt.LabelFile ("node label" lines, non-negative integer labels
// kept as they are) vertices get labels; the rest get -1.
func ImportSNAP(ctx context.Context, srcFile, out string, opt ImportOptions) (*ImportSummary, error) {
	ctx, err := beginImport(ctx, out, opt)
	if err != nil {
		return nil, err
	}
	if opt.SplitFile != "" {
		return nil, &inputerr.Error{Field: "--split", Msg: "SNAP edge lists have no split"}
	}
	im := &snapImport{ctx: ctx, opt: opt, remap: map[int64]uint32{}, el: &importEdges{undirected: opt.Undirected}}
	if err := im.readEdges(srcFile); err != nil {
		return nil, err
	}
	labels, numClasses, err := im.readLabels()
	if err != nil {
		return nil, err
	}
	n := int64(len(im.orig))
	g, err := im.el.build(ctx, n)
	if err != nil {
		return nil, err
	}
	notes := append(im.notes, "vertex ids are the edge list's ids in order of first appearance; "+OriginalIDsFile+" maps them back")
	if !opt.Undirected {
		notes = append(notes, "directed: each row lists a vertex's out-neighbors")
	}
	base := filepath.Base(srcFile)
	d := &importDataset{g: g, labels: labels, extra: map[string][]int64{OriginalIDsFile: im.orig}}
	d.meta = Meta{Name: orDefault(opt.Name, strings.TrimSuffix(base, filepath.Ext(base))), NumNodes: n,
		Undirected: opt.Undirected, NumClasses: numClasses, Source: "snap:" + absPath(srcFile), Notes: notes}
	return d.finish(out, "snap", im.el, 0)
}

// snapImport is one SNAP import's state: the dense renumbering of the
// input's ids, the edges, and the notes so far.
type snapImport struct {
	ctx   context.Context
	opt   ImportOptions
	remap map[int64]uint32 // input id -> vertex
	orig  []int64          // vertex -> input id
	el    *importEdges
	notes []string
}

// vertex returns id's vertex, numbering it next if it is new.
func (im *snapImport) vertex(id int64) (uint32, error) {
	if v, ok := im.remap[id]; ok {
		return v, nil
	}
	if len(im.orig) >= math.MaxInt32 {
		return 0, errors.New("more than 2^31-1 vertices")
	}
	v := uint32(len(im.orig))
	im.remap[id] = v
	im.orig = append(im.orig, id)
	return v, nil
}

// readEdges reads the edge list, then settles whether its first line was
// a count header or an edge.
func (im *snapImport) readEdges(srcFile string) error {
	lines, extraCols, first, err := im.scanEdges(srcFile)
	if err != nil {
		return err
	}
	if lines == 0 {
		return &inputerr.Error{Path: srcFile, Msg: "empty: no edges (only comments or blank lines)"}
	}
	header, note := first.decide(im.opt.Header, lines-1)
	im.notes = append(im.notes, note...)
	if header {
		if lines == 1 {
			return &inputerr.Error{Path: srcFile, Msg: "empty: a count header and no edges"}
		}
		if first.extra {
			extraCols--
		}
		im.orig = first.dropPhantoms(im.el, im.remap, im.orig)
	} else {
		im.el.add(first.u, first.v)
	}
	if extraCols > 0 {
		im.notes = append(im.notes, fmt.Sprintf("ignored columns after the second on %d lines (weights or timestamps)", extraCols))
	}
	return nil
}

// scanEdges adds every edge but the first line's, which it holds back
// until the whole file has shown whether it is an edge or an "N M" count
// header (see snapFirstLine). It counts edge lines and those with extra
// columns.
func (im *snapImport) scanEdges(srcFile string) (lines, extraCols int64, first snapFirstLine, err error) {
	err = scanLines(im.ctx, srcFile, "--from", func(s *importLines) error {
		a, b, extra, skip, err := parseSNAPLine(s.line)
		if err != nil {
			return s.bad(err)
		}
		if skip {
			return nil
		}
		lines++
		if extra {
			extraCols++
		}
		knownA := len(im.orig)
		u, err := im.vertex(a)
		if err != nil {
			return s.bad(err)
		}
		if lines > 1 {
			first.see(a, u, int(u) >= knownA)
		}
		knownB := len(im.orig)
		v, err := im.vertex(b)
		if err != nil {
			return s.bad(err)
		}
		if lines == 1 {
			first = newSNAPFirstLine(a, b, u, v, extra, string(s.line))
			return nil
		}
		first.see(b, v, int(v) >= knownB)
		im.el.add(u, v)
		return nil
	})
	return lines, extraCols, first, err
}

// readLabels returns every vertex's label from opt.LabelFile, -1 for
// those it omits (all of them without one) and the class count. A
// labelled node in no edge becomes an isolated vertex.
func (im *snapImport) readLabels() (labels []int64, numClasses int, err error) {
	if im.opt.LabelFile == "" {
		return noLabels(int64(len(im.orig))), 0, nil
	}
	labelOf, numClasses, added, err := im.scanLabels()
	if err != nil {
		return nil, 0, err
	}
	if len(labelOf) == 0 {
		return nil, 0, &inputerr.Error{Path: im.opt.LabelFile, Field: "--labels", Msg: "empty: no labels"}
	}
	labels = noLabels(int64(len(im.orig)))
	for v, l := range labelOf {
		labels[v] = l
	}
	im.notes = append(im.notes, fmt.Sprintf("labels for %d of %d vertices from %s", len(labelOf), len(im.orig), filepath.Base(im.opt.LabelFile)))
	if added > 0 {
		im.notes = append(im.notes, fmt.Sprintf("%d labelled nodes are in no edge: added as isolated vertices", added))
	}
	return labels, numClasses, nil
}

// scanLabels reads opt.LabelFile's "node label" lines; added counts the
// nodes it numbered as new vertices.
func (im *snapImport) scanLabels() (labelOf map[uint32]int64, numClasses int, added int64, err error) {
	labelOf = map[uint32]int64{}
	err = scanLines(im.ctx, im.opt.LabelFile, "--labels", func(s *importLines) error {
		a, l, _, skip, err := parseSNAPLine(s.line)
		if err != nil {
			return s.bad(fmt.Errorf("want \"node label\" with non-negative integers: %w", err))
		}
		if skip {
			return nil
		}
		if l > math.MaxInt32 {
			return s.bad(fmt.Errorf("label %d is too large", l))
		}
		_, known := im.remap[a]
		v, err := im.vertex(a)
		if err != nil {
			return s.bad(err)
		}
		if !known {
			added++
		}
		if _, dup := labelOf[v]; dup {
			return s.bad(fmt.Errorf("node %d is labelled twice", a))
		}
		labelOf[v] = l
		numClasses = max(numClasses, int(l)+1)
		return nil
	})
	return labelOf, numClasses, added, err
}

// ---- Geom-GCN (film/Actor, chameleon, squirrel, cornell, texas, wisconsin) ----

// Geom-GCN's new_data/<name>/ file names.
const (
	geomNodesFile = "out1_node_feature_label.txt"
	geomEdgesFile = "out1_graph_edges.txt"
)

// geomFormat is how a Geom-GCN node file writes features, told by its
// header: "feature(feature_amount:N)" marks a sparse list of active
// indices (film), anything else dense comma-separated values (the
// WebKB sets).
type geomFormat struct {
	sparse   bool
	declared int // feature_amount from the header, 0 if none
}

func parseGeomHeader(line string) (geomFormat, bool) {
	f := strings.Fields(line)
	if len(f) == 0 || f[0] != "node_id" {
		return geomFormat{}, false
	}
	var g geomFormat
	if len(f) > 1 {
		if i := strings.Index(f[1], "feature_amount:"); i >= 0 {
			g.sparse = true
			num := strings.TrimRight(f[1][i+len("feature_amount:"):], ")")
			if n, err := strconv.Atoi(num); err == nil && n > 0 {
				g.declared = n
			}
		}
	}
	return g, true
}

// parseGeomNodeLine splits "node_id<TAB>features<TAB>label".
func parseGeomNodeLine(line string) (id int64, feats string, label int64, err error) {
	f := strings.Split(line, "\t")
	if len(f) != 3 {
		return 0, "", 0, fmt.Errorf("%d tab-separated columns: want node_id, features, label", len(f))
	}
	if id, err = parseNonNegInt([]byte(strings.TrimSpace(f[0]))); err != nil {
		return 0, "", 0, fmt.Errorf("node_id: %w", err)
	}
	if label, err = parseNonNegInt([]byte(strings.TrimSpace(f[2]))); err != nil {
		return 0, "", 0, fmt.Errorf("label: %w", err)
	}
	if label > math.MaxInt32 {
		return 0, "", 0, fmt.Errorf("label %d is too large", label)
	}
	return id, strings.TrimSpace(f[1]), label, nil
}

// geomFeatureWidth checks a features field and returns the width it
// needs: the largest index + 1 for a sparse list, the value count for
// dense values.
func geomFeatureWidth(feats string, sparse bool) (int, error) {
	if feats == "" {
		return 0, nil
	}
	parts := strings.Split(feats, ",")
	if !sparse {
		for i, p := range parts {
			x, err := strconv.ParseFloat(strings.TrimSpace(p), 32)
			if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
				return 0, fmt.Errorf("feature %d: %q is not a finite number", i+1, p)
			}
		}
		return len(parts), nil
	}
	width := 0
	for _, p := range parts {
		k, err := parseNonNegInt([]byte(strings.TrimSpace(p)))
		if err != nil || k >= 1<<24 {
			return 0, fmt.Errorf("feature index %q: want an integer in [0, 2^24)", p)
		}
		width = max(width, int(k)+1)
	}
	return width, nil
}

// fillGeomRow writes a features field into row (len dim, zeroed here).
func fillGeomRow(feats string, sparse bool, row []float32) error {
	clear(row)
	if feats == "" {
		return nil
	}
	for i, p := range strings.Split(feats, ",") {
		p = strings.TrimSpace(p)
		if sparse {
			k, err := parseNonNegInt([]byte(p))
			if err != nil || k >= int64(len(row)) {
				return fmt.Errorf("feature index %q out of range [0, %d)", p, len(row))
			}
			row[k] = 1
			continue
		}
		if i >= len(row) {
			return fmt.Errorf("more than %d feature values", len(row))
		}
		x, err := strconv.ParseFloat(p, 32)
		if err != nil {
			return fmt.Errorf("feature %d: %q is not a number", i+1, p)
		}
		row[i] = float32(x)
	}
	return nil
}

// ImportGeomGCN imports a Geom-GCN dataset directory (new_data/<name>/):
// out1_node_feature_label.txt ("node_id<TAB>features<TAB>label" after a
// header) and out1_graph_edges.txt ("node_id<TAB>node_id" after a
// header). Node ids must run densely from 0, as Geom-GCN's loader
// assumes; they are kept as vertex ids. Features are a sparse list of
// active indices when the header says feature_amount (film), else dense
// comma-separated values. The graph is undirected, deduplicated and
// without self-loops; edges naming an unknown node are dropped and
// counted. Labels are kept as given. The split, if any, is split
// opt.SplitID of opt.SplitFile.
func ImportGeomGCN(ctx context.Context, srcDir, out string, opt ImportOptions) (*ImportSummary, error) {
	ctx, err := beginImport(ctx, out, opt)
	if err != nil {
		return nil, err
	}
	in, err := openGeomInputs(ctx, srcDir, out)
	if err != nil {
		return nil, err
	}
	defer in.cleanup()
	nodes, err := readGeomNodes(ctx, in.nodesPath, in.nodesBytes)
	if err != nil {
		return nil, err
	}
	n := int64(len(nodes.at))
	dim, notes := nodes.featureDim()
	el, dropped, err := readGeomEdges(ctx, in.edgesPath, n)
	if err != nil {
		return nil, err
	}
	g, err := el.build(ctx, n)
	if err != nil {
		return nil, err
	}
	if dropped > 0 {
		notes = append(notes, fmt.Sprintf("dropped %d edges naming nodes absent from %s", dropped, geomNodesFile))
	}
	d := &importDataset{g: g, labels: nodes.labels}
	d.meta = Meta{Name: orDefault(opt.Name, filepath.Base(filepath.Clean(srcDir))), NumNodes: n, Undirected: true,
		FeatureDim: dim, NumClasses: nodes.numClasses, Source: "geomgcn:" + absPath(srcDir), Notes: notes}
	lookup := func(id string) (int64, bool) {
		v, err := parseNonNegInt([]byte(id))
		return v, err == nil && v < n
	}
	if err := d.applySplit(ctx, opt, lookup, nil); err != nil {
		return nil, err
	}
	d.writeFeatures = func(path string) error {
		return writeGeomFeatures(ctx, in, nodes, dim, path)
	}
	return d.finish(out, "geomgcn", el, dropped)
}

// geomInputs are a Geom-GCN directory's two files. The features pass
// seeks to each node's line, which a gzip stream cannot do, so featPath
// is the node file or, when that is gzipped, a decompressed copy (temp,
// which cleanup removes).
type geomInputs struct {
	nodesPath, edgesPath string
	featPath, temp       string
	nodesBytes           int64 // featPath's size
}

func openGeomInputs(ctx context.Context, srcDir, out string) (*geomInputs, error) {
	want := fmt.Sprintf("a Geom-GCN directory holding %s and %s, plain or .gz", geomNodesFile, geomEdgesFile)
	if err := requireDir(srcDir, want); err != nil {
		return nil, err
	}
	in := &geomInputs{nodesPath: findInput(srcDir, geomNodesFile), edgesPath: findInput(srcDir, geomEdgesFile)}
	for _, p := range []string{in.edgesPath, in.nodesPath} {
		if _, err := os.Stat(p); err != nil {
			return nil, &inputerr.Error{Path: srcDir, Field: "--from", Msg: "want " + want, Err: pathless(err)}
		}
	}
	in.featPath = in.nodesPath
	if isGzip(in.nodesPath) {
		parent := filepath.Dir(filepath.Clean(out))
		if err := os.MkdirAll(parent, 0o755); err != nil {
			return nil, fmt.Errorf("create %s: %w", parent, err)
		}
		plain, err := decompressToTemp(ctx, in.nodesPath, parent)
		if err != nil {
			return nil, err
		}
		in.featPath, in.temp = plain, plain
	}
	st, err := os.Stat(in.featPath)
	if err != nil {
		in.cleanup()
		return nil, &inputerr.Error{Path: in.nodesPath, Field: "--from", Msg: "cannot read", Err: pathless(err)}
	}
	in.nodesBytes = st.Size()
	return in, nil
}

func (in *geomInputs) cleanup() {
	if in.temp != "" {
		os.Remove(in.temp)
	}
}

// geomNodeAt is where a node's features field lies in the node file.
type geomNodeAt struct {
	off  int64 // byte offset of the features field
	size int32
	line int32
}

// geomNodes is pass 1 over a Geom-GCN node file: it checks every line,
// finds the width, and remembers where each node's features are so pass
// 2 can write rows in id order however the file orders them.
type geomNodes struct {
	nodesBytes int64 // the file's size, which bounds the ids
	header     bool  // whether the next line may be the header
	format     geomFormat
	at         []geomNodeAt // by node id
	labels     []int64
	seen       []bool
	width      int
	denseLine  int // the first dense row's line, whose width all must share
	numClasses int
}

func readGeomNodes(ctx context.Context, path string, nodesBytes int64) (*geomNodes, error) {
	gn := &geomNodes{nodesBytes: nodesBytes, header: true, seen: []bool{}}
	if err := scanLines(ctx, path, "--from", gn.line); err != nil {
		return nil, err
	}
	n := int64(len(gn.seen))
	if n == 0 {
		return nil, &inputerr.Error{Path: path, Msg: "empty: no nodes"}
	}
	if i := slices.Index(gn.seen, false); i >= 0 {
		return nil, &inputerr.Error{Path: path, Msg: fmt.Sprintf("node ids must run densely from 0 to %d: %d is missing", n-1, i)}
	}
	return gn, nil
}

func (gn *geomNodes) line(s *importLines) error {
	line := string(s.line)
	if gn.header {
		gn.header = false
		if h, ok := parseGeomHeader(line); ok {
			gn.format = h
			return nil
		}
	}
	id, feats, label, err := parseGeomNodeLine(line)
	if err != nil {
		return s.bad(err)
	}
	// Dense ids need a line each, so an id beyond the file's size is
	// a typo; refusing it keeps a bad id from sizing the arrays.
	if id >= gn.nodesBytes || id >= math.MaxInt32 {
		return s.bad(fmt.Errorf("node_id %d: ids must run densely from 0", id))
	}
	if err := gn.checkWidth(s, id, feats); err != nil {
		return err
	}
	for int64(len(gn.seen)) <= id {
		gn.seen = append(gn.seen, false)
		gn.labels = append(gn.labels, -1)
		gn.at = append(gn.at, geomNodeAt{})
	}
	if gn.seen[id] {
		return s.bad(fmt.Errorf("node %d appears twice (first on line %d)", id, gn.at[id].line))
	}
	gn.seen[id] = true
	gn.labels[id] = label
	gn.numClasses = max(gn.numClasses, int(label)+1)
	// The features field starts after the first tab of the line.
	tab := strings.IndexByte(line, '\t')
	gn.at[id] = geomNodeAt{off: s.off + int64(tab) + 1, size: int32(strings.LastIndexByte(line, '\t') - tab - 1), line: int32(s.n)}
	return nil
}

// checkWidth checks node id's features field and widens gn.width to it;
// dense rows must all have the first one's width.
func (gn *geomNodes) checkWidth(s *importLines, id int64, feats string) error {
	w, err := geomFeatureWidth(feats, gn.format.sparse)
	if err != nil {
		return s.bad(fmt.Errorf("node %d: %w", id, err))
	}
	if !gn.format.sparse {
		if gn.denseLine == 0 {
			gn.denseLine, gn.width = s.n, w
		} else if w != gn.width {
			return s.bad(fmt.Errorf("node %d has %d feature values, line %d has %d (a sparse index list needs a header naming feature_amount)", id, w, gn.denseLine, gn.width))
		}
	}
	gn.width = max(gn.width, w)
	return nil
}

// featureDim returns feature_dim and notes on how sparse rows gave it.
func (gn *geomNodes) featureDim() (int, []string) {
	dim := gn.width
	var notes []string
	if gn.format.sparse {
		// film's header says 931 while its indices reach 931; Geom-GCN's
		// loader uses 932 columns, as the widest of the two does here.
		dim = max(gn.width, gn.format.declared)
		if gn.width > gn.format.declared && gn.format.declared > 0 {
			notes = append(notes, fmt.Sprintf("the header declares %d features but indices run from 0 to %d: feature_dim is %d, as in Geom-GCN's loader", gn.format.declared, gn.width-1, dim))
		}
		notes = append(notes, "features were sparse index lists, stored as dense 0/1 rows")
	}
	return dim, notes
}

// readGeomEdges reads the edge file (after an optional header) as
// undirected edges among n nodes; an edge naming an unknown node is
// dropped and counted.
func readGeomEdges(ctx context.Context, path string, n int64) (*importEdges, int64, error) {
	el := &importEdges{undirected: true}
	var dropped, lines int64
	first := true
	err := scanLines(ctx, path, "--from", func(s *importLines) error {
		a, b, _, skip, err := parseSNAPLine(s.line)
		if first {
			first = false
			if f, _ := nextField(s.line); string(f) == "node_id" {
				return nil
			}
		}
		if err != nil {
			return s.bad(err)
		}
		if skip {
			return nil
		}
		lines++
		if a >= n || b >= n {
			dropped++
			return nil
		}
		el.add(uint32(a), uint32(b))
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	if lines == 0 {
		return nil, 0, &inputerr.Error{Path: path, Msg: "empty: no edges"}
	}
	return el, dropped, nil
}

// writeGeomFeatures is the node file's second pass: each node's features
// field read where pass 1 found it, rows in id order.
func writeGeomFeatures(ctx context.Context, in *geomInputs, nodes *geomNodes, dim int, path string) error {
	f, err := os.Open(in.featPath)
	if err != nil {
		return fmt.Errorf("read %s: %w", in.nodesPath, err)
	}
	defer f.Close()
	var buf []byte
	return writeFeatureRows(ctx, path, int64(len(nodes.at)), int64(dim), func(v int64, row []float32) error {
		a := nodes.at[v]
		buf = slices.Grow(buf[:0], int(a.size))[:a.size]
		if _, err := f.ReadAt(buf, a.off); err != nil {
			return fmt.Errorf("read %s: line %d: %w", in.nodesPath, a.line, err)
		}
		if err := fillGeomRow(strings.TrimSpace(string(buf)), nodes.format.sparse, row); err != nil {
			return &inputerr.Error{Path: in.nodesPath, Line: int(a.line), Msg: fmt.Sprintf("node %d: %v (did the file change during the import?)", v, err)}
		}
		return nil
	})
}
