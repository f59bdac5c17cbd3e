package dataset

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gnnplan/gnnplan/internal/inputerr"
	"github.com/nlpodyssey/gopickle/types"
)

// planetoidPicklePartsDoc lists the pickled parts of a Planetoid dataset
// (ind.NAME.PART) for messages; test.index is text.
const planetoidPicklePartsDoc = "x, y, tx, ty, allx, ally, graph"

func planetoidPickleParts() []string {
	return []string{"x", "y", "tx", "ty", "allx", "ally", "graph"}
}

// planetoidValSize is the validation set of the standard split: the 500
// vertices after the training ones (Kipf & Welling's utils.load_data,
// PyG's Planetoid split="public").
const planetoidValSize = 500

// featureMatrix is a 2-d feature block read row by row: a CSR matrix or a
// dense array.
type featureMatrix interface {
	dims() (rows, cols int64)
	row(r int64, dst []float32)
}

func (m *pyCSR) dims() (int64, int64) { return m.rows, m.cols }

func (a *npArray) dims() (int64, int64) {
	if len(a.shape) != 2 {
		return -1, -1
	}
	return a.shape[0], a.shape[1]
}

func (a *npArray) row(r int64, dst []float32) {
	cols := a.shape[1]
	for c := range cols {
		dst[c] = float32(a.float(r*cols + c))
	}
}

// planetoidFiles names a Planetoid dataset's files: dir/ind.NAME.PART.
type planetoidFiles struct{ dir, name string }

func (f planetoidFiles) path(part string) string {
	return findInput(f.dir, "ind."+f.name+"."+part)
}

// findPlanetoid resolves --from: a directory holding one dataset's
// ind.NAME.* files, or the path of any of them (or the ind.NAME prefix),
// which picks NAME in a directory holding several (Planetoid's data/
// holds cora, citeseer and pubmed).
func findPlanetoid(from string) (planetoidFiles, error) {
	want := "a directory holding ind.NAME.{" + planetoidPicklePartsDoc + ", test.index}, or DIR/ind.NAME to pick one of several"
	st, err := os.Stat(from)
	if err == nil && st.IsDir() {
		ents, err := os.ReadDir(from)
		if err != nil {
			return planetoidFiles{}, &inputerr.Error{Path: from, Field: "--from", Msg: "cannot read the input directory", Err: pathless(err)}
		}
		var names []string
		for _, e := range ents {
			n := trimGz(e.Name())
			if strings.HasPrefix(n, "ind.") && strings.HasSuffix(n, ".graph") {
				names = append(names, strings.TrimSuffix(strings.TrimPrefix(n, "ind."), ".graph"))
			}
		}
		switch len(names) {
		case 0:
			return planetoidFiles{}, &inputerr.Error{Path: from, Field: "--from", Msg: "no ind.NAME.graph file (want " + want + ")"}
		case 1:
			return planetoidFiles{dir: from, name: names[0]}, nil
		}
		return planetoidFiles{}, &inputerr.Error{Path: from, Field: "--from", Msg: fmt.Sprintf("holds %d Planetoid datasets (%s): pass --from DIR/ind.NAME to pick one", len(names), strings.Join(names, ", "))}
	}
	base := trimGz(filepath.Base(from))
	if !strings.HasPrefix(base, "ind.") {
		if err != nil {
			return planetoidFiles{}, &inputerr.Error{Path: from, Field: "--from", Msg: "cannot read (want " + want + ")", Err: pathless(err)}
		}
		return planetoidFiles{}, &inputerr.Error{Path: from, Field: "--from", Msg: "is not a Planetoid file (want " + want + ")"}
	}
	name := strings.TrimPrefix(base, "ind.")
	for _, part := range append(planetoidPickleParts(), "test.index") {
		name = strings.TrimSuffix(name, "."+part)
	}
	if name == "" {
		return planetoidFiles{}, &inputerr.Error{Path: from, Field: "--from", Msg: "want " + want}
	}
	return planetoidFiles{dir: filepath.Dir(from), name: name}, nil
}

// loadPlanetoidPart decodes dir/ind.NAME.part; a missing or undecodable
// file is bad input naming it.
func loadPlanetoidPart(ctx context.Context, f planetoidFiles, part string) (any, error) {
	p := f.path(part)
	in, err := openInput(ctx, p, "--from")
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &inputerr.Error{Path: p, Field: "--from", Msg: fmt.Sprintf("missing: a Planetoid dataset needs ind.%s.{%s, test.index}", f.name, planetoidPicklePartsDoc)}
		}
		return nil, err
	}
	defer in.Close()
	v, err := loadPickle(in)
	if err != nil {
		if inputerr.Is(err) {
			return nil, err
		}
		return nil, &inputerr.Error{Path: p, Msg: "not a Planetoid pickle", Err: err}
	}
	return v, nil
}

// planetoidMatrix checks that part decoded to a 2-d matrix.
func planetoidMatrix(f planetoidFiles, part string, v any) (featureMatrix, error) {
	switch m := v.(type) {
	case *pyCSR:
		if err := m.check(); err != nil {
			return nil, &inputerr.Error{Path: f.path(part), Msg: err.Error()}
		}
		return m, nil
	case *npArray:
		if m.built() && len(m.shape) == 2 {
			return m, nil
		}
		return nil, &inputerr.Error{Path: f.path(part), Msg: fmt.Sprintf("array of shape %v: want a 2-d matrix", m.shape)}
	}
	return nil, &inputerr.Error{Path: f.path(part), Msg: fmt.Sprintf("holds a %T: want a scipy CSR matrix or a 2-d NumPy array", v)}
}

// planetoidLabels turns a one-hot label matrix into class indices; an
// all-zero row (CiteSeer's featureless test nodes) is -1, no label.
func planetoidLabels(f planetoidFiles, part string, v any) ([]int64, int64, error) {
	a, ok := v.(*npArray)
	if !ok || !a.built() || len(a.shape) != 2 {
		return nil, 0, &inputerr.Error{Path: f.path(part), Msg: fmt.Sprintf("holds a %T: want a 2-d one-hot NumPy array", v)}
	}
	rows, cols := a.shape[0], a.shape[1]
	out := make([]int64, rows)
	for r := range rows {
		out[r] = -1
		for c := range cols {
			x := a.float(r*cols + c)
			if x == 0 {
				continue
			}
			if x != 1 || out[r] >= 0 {
				return nil, 0, &inputerr.Error{Path: f.path(part), Msg: fmt.Sprintf("row %d is not one-hot (want a single 1 per row)", r)}
			}
			out[r] = c
		}
	}
	return out, cols, nil
}

// ImportPlanetoid imports the Planetoid files of Yang et al. (2016), as
// Kipf & Welling's GCN code and PyG's Planetoid read them: from is a
// directory holding ind.NAME.{x,y,tx,ty,allx,ally,graph,test.index} (or
// the path ind.NAME in a directory holding several datasets).
//
// Vertex ids are Planetoid's indices: allx's rows first, then the test
// vertices at the ids test.index gives them (tx's row i is vertex
// test.index[i]). Ids between len(allx) and max(test.index) that
// test.index lacks (CiteSeer's isolated, featureless papers) get zero
// features and label -1, as the loaders' zero rows do. Labels are the
// one-hot columns' indices. The graph is the adjacency dict, undirected,
// deduplicated and without self-loops. The split is the standard one:
// train = range(len(y)), val = the next 500, test = sorted test.index.
func ImportPlanetoid(ctx context.Context, from, out string, opt ImportOptions) (*ImportSummary, error) {
	ctx, err := beginImport(ctx, out, opt)
	if err != nil {
		return nil, err
	}
	if opt.SplitFile != "" {
		return nil, &inputerr.Error{Field: "--split", Msg: "Planetoid files imply their split (train = y's rows, val = the next 500, test = test.index)"}
	}
	f, err := findPlanetoid(from)
	if err != nil {
		return nil, err
	}
	p := &planetoidImport{ctx: ctx, f: f}
	if err := p.load(); err != nil {
		return nil, err
	}
	if err := p.checkShapes(); err != nil {
		return nil, err
	}
	if err := p.readTestIndex(); err != nil {
		return nil, err
	}
	p.placeVertices()
	el, g, oneEnd, err := p.readGraph()
	if err != nil {
		return nil, err
	}
	d := p.dataset(g, oneEnd, opt.Name)
	d.writeFeatures = p.writeFeatures
	return d.finish(out, "planetoid", el, 0)
}

// planetoidNoRow marks a vertex that no row of tx describes.
const planetoidNoRow = -1

// planetoidImport is one Planetoid import's state: the decoded parts and
// their sizes, then test.index and where each vertex's features and label
// come from.
type planetoidImport struct {
	ctx     context.Context
	f       planetoidFiles
	parts   map[string]any
	mats    map[string]featureMatrix // x, tx, allx
	labels  map[string][]int64       // y, ty, ally as class indices
	classes map[string]int64         // their column counts

	xRows, txRows, allRows, dim int64

	testIdx []int64 // tx's row i is vertex testIdx[i]
	n       int64
	txRow   []int64 // vertex allRows+i's row of tx, or planetoidNoRow
	lab     []int64 // by vertex
}

// load decodes every pickled part and checks each is the kind of matrix
// its role needs.
func (p *planetoidImport) load() error {
	p.parts = map[string]any{}
	for _, part := range planetoidPickleParts() {
		if err := p.ctx.Err(); err != nil {
			return err
		}
		var err error
		if p.parts[part], err = loadPlanetoidPart(p.ctx, p.f, part); err != nil {
			return err
		}
	}
	p.mats = map[string]featureMatrix{}
	for _, part := range []string{"x", "tx", "allx"} {
		var err error
		if p.mats[part], err = planetoidMatrix(p.f, part, p.parts[part]); err != nil {
			return err
		}
	}
	p.labels = map[string][]int64{}
	p.classes = map[string]int64{}
	for _, part := range []string{"y", "ty", "ally"} {
		var err error
		if p.labels[part], p.classes[part], err = planetoidLabels(p.f, part, p.parts[part]); err != nil {
			return err
		}
	}
	return nil
}

// checkShapes checks that the parts agree on the feature width, the class
// count and their row counts, and leave room for the standard split.
func (p *planetoidImport) checkShapes() error {
	f, labels, classes := p.f, p.labels, p.classes
	xRows, dim := p.mats["x"].dims()
	txRows, txCols := p.mats["tx"].dims()
	allRows, allCols := p.mats["allx"].dims()
	p.xRows, p.dim, p.txRows, p.allRows = xRows, dim, txRows, allRows
	switch {
	case txCols != dim || allCols != dim:
		return &inputerr.Error{Path: f.path("tx"), Msg: fmt.Sprintf("x, tx and allx have %d, %d and %d columns: want one feature width", dim, txCols, allCols)}
	case classes["ty"] != classes["y"] || classes["ally"] != classes["y"]:
		return &inputerr.Error{Path: f.path("ty"), Msg: fmt.Sprintf("y, ty and ally have %d, %d and %d columns: want one class count", classes["y"], classes["ty"], classes["ally"])}
	case int64(len(labels["y"])) != xRows:
		return &inputerr.Error{Path: f.path("y"), Msg: fmt.Sprintf("%d rows for x's %d", len(labels["y"]), xRows)}
	case int64(len(labels["ally"])) != allRows:
		return &inputerr.Error{Path: f.path("ally"), Msg: fmt.Sprintf("%d rows for allx's %d", len(labels["ally"]), allRows)}
	case int64(len(labels["ty"])) != txRows:
		return &inputerr.Error{Path: f.path("ty"), Msg: fmt.Sprintf("%d rows for tx's %d", len(labels["ty"]), txRows)}
	case xRows+planetoidValSize > allRows:
		return &inputerr.Error{Path: f.path("allx"), Msg: fmt.Sprintf("%d rows: the standard split needs y's %d training rows and %d validation rows", allRows, xRows, planetoidValSize)}
	}
	return nil
}

// readTestIndex reads test.index: one vertex id per tx row, each after
// allx's rows.
func (p *planetoidImport) readTestIndex() error {
	indexPath := p.f.path("test.index")
	allRows := p.allRows
	testLine := map[int64]int{}
	err := scanLines(p.ctx, indexPath, "--from", func(s *importLines) error {
		v, err := parseNonNegInt([]byte(strings.TrimSpace(string(s.line))))
		if err != nil {
			return s.bad(fmt.Errorf("want one vertex id per line: %w", err))
		}
		if v < allRows {
			return s.bad(fmt.Errorf("test vertex %d is one of allx's %d rows (test ids follow them)", v, allRows))
		}
		if v >= allRows+1<<24 {
			return s.bad(fmt.Errorf("test vertex %d is far beyond allx's %d rows", v, allRows))
		}
		if prev, dup := testLine[v]; dup {
			return s.bad(fmt.Errorf("test vertex %d is already on line %d", v, prev))
		}
		testLine[v] = s.n
		p.testIdx = append(p.testIdx, v)
		return nil
	})
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return &inputerr.Error{Path: indexPath, Field: "--from", Msg: fmt.Sprintf("missing: a Planetoid dataset needs ind.%s.{%s, test.index}", p.f.name, planetoidPicklePartsDoc)}
		}
		return err
	}
	if int64(len(p.testIdx)) != p.txRows {
		return &inputerr.Error{Path: indexPath, Msg: fmt.Sprintf("%d test ids for tx's %d rows", len(p.testIdx), p.txRows)}
	}
	return nil
}

// placeVertices numbers the vertices (allx's rows, then up to the largest
// test id) and records each one's tx row and label.
func (p *planetoidImport) placeVertices() {
	allRows := p.allRows
	p.n = allRows
	for _, v := range p.testIdx {
		p.n = max(p.n, v+1)
	}
	p.txRow = make([]int64, p.n-allRows)
	for i := range p.txRow {
		p.txRow[i] = planetoidNoRow
	}
	p.lab = make([]int64, p.n)
	copy(p.lab, p.labels["ally"])
	for i := range p.lab[allRows:] {
		p.lab[allRows+int64(i)] = -1
	}
	for i, v := range p.testIdx {
		p.txRow[v-allRows] = int64(i)
		p.lab[v] = p.labels["ty"][i]
	}
}

// readGraph builds the CSR from the adjacency dict. The dict lists an
// edge from both ends, so only a pair listed twice from the same end is a
// duplicate; oneEnd counts the edges listed from one end only.
func (p *planetoidImport) readGraph() (el *importEdges, g *importCSR, oneEnd int64, err error) {
	el, directed, err := p.graphEdges()
	if err != nil {
		return nil, nil, 0, err
	}
	g, err = el.build(p.ctx, p.n)
	if err != nil {
		return nil, nil, 0, err
	}
	total := int64(len(directed))
	slices.Sort(directed)
	distinct := int64(len(slices.Compact(directed)))
	g.duplicates = total - distinct
	oneEnd = 2*g.undirectedEdges - distinct
	return el, g, oneEnd, nil
}

// graphEdges checks the adjacency dict and gathers its edges, and also
// its ordered pairs (self-loops aside) to tell listings from both ends
// from repeats.
func (p *planetoidImport) graphEdges() (*importEdges, []uint64, error) {
	n, path := p.n, p.f.path("graph")
	graph, ok := p.parts["graph"].(*pyDefaultDict)
	if !ok {
		return nil, nil, &inputerr.Error{Path: path, Msg: fmt.Sprintf("holds a %T: want a defaultdict(list) adjacency", p.parts["graph"])}
	}
	el := &importEdges{undirected: true}
	var directed []uint64
	for _, k := range slices.Sorted(maps.Keys(graph.items)) {
		if k < 0 || k >= n {
			return nil, nil, &inputerr.Error{Path: path, Msg: fmt.Sprintf("node %d: features cover vertices 0 to %d", k, n-1)}
		}
		nbrs, ok := graph.items[k].(*types.List)
		if !ok {
			return nil, nil, &inputerr.Error{Path: path, Msg: fmt.Sprintf("node %d: neighbours are a %T, want a list", k, graph.items[k])}
		}
		for _, x := range *nbrs {
			nb, ok := x.(int)
			if !ok || nb < 0 || int64(nb) >= n {
				return nil, nil, &inputerr.Error{Path: path, Msg: fmt.Sprintf("node %d: neighbour %v is not a vertex id in 0 to %d", k, x, n-1)}
			}
			el.add(uint32(k), uint32(nb))
			if int64(nb) != k {
				directed = append(directed, uint64(k)<<32|uint64(nb))
			}
		}
	}
	return el, directed, nil
}

// dataset assembles the import around g: labels, the standard split and
// the notes.
func (p *planetoidImport) dataset(g *importCSR, oneEnd int64, name string) *importDataset {
	f, n, xRows, allRows := p.f, p.n, p.xRows, p.allRows
	d := &importDataset{g: g, labels: p.lab}
	d.meta = Meta{Name: orDefault(name, f.name), NumNodes: n, Undirected: true, FeatureDim: int(p.dim),
		NumClasses: int(p.classes["y"]), Source: "planetoid:" + absPath(filepath.Join(f.dir, "ind."+f.name))}
	for v := range xRows {
		d.train = append(d.train, v)
	}
	for v := xRows; v < xRows+planetoidValSize; v++ {
		d.val = append(d.val, v)
	}
	d.test = slices.Sorted(slices.Values(p.testIdx))
	notes := []string{
		"labels are the one-hot columns of ally/ty (Planetoid's class order)",
		fmt.Sprintf("standard Planetoid split: train = vertices 0 to %d (y's rows), val = %d to %d, test = the %d ids of test.index", xRows-1, xRows, xRows+planetoidValSize-1, len(p.testIdx)),
	}
	if oneEnd > 0 {
		notes = append(notes, fmt.Sprintf("%d of %d edges are listed from one end only in the graph dict: stored both ways", oneEnd, g.undirectedEdges))
	}
	if missing := n - allRows - p.txRows; missing > 0 {
		notes = append(notes, fmt.Sprintf("%d ids between %d and %d are not in test.index (isolated, featureless nodes): zero features, label -1, in no split, as Kipf's and PyG's loaders pad them", missing, allRows, n-1))
	}
	d.meta.Notes = notes
	return d
}

// writeFeatures writes allx's rows, then each test vertex's tx row, and
// zeros for the ids test.index lacks.
func (p *planetoidImport) writeFeatures(path string) error {
	allx, tx, allRows := p.mats["allx"], p.mats["tx"], p.allRows
	return writeFeatureRows(p.ctx, path, p.n, p.dim, func(v int64, row []float32) error {
		switch {
		case v < allRows:
			allx.row(v, row)
		case p.txRow[v-allRows] != planetoidNoRow:
			tx.row(p.txRow[v-allRows], row)
		default:
			clear(row)
		}
		return nil
	})
}
