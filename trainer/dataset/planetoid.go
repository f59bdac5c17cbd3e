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
	ctx = withImportProgress(ctx, opt.Progress)
	if err := checkOutFree(out); err != nil {
		return nil, err
	}
	if opt.SplitFile != "" {
		return nil, &inputerr.Error{Field: "--split", Msg: "Planetoid files imply their split (train = y's rows, val = the next 500, test = test.index)"}
	}
	f, err := findPlanetoid(from)
	if err != nil {
		return nil, err
	}
	parts := map[string]any{}
	for _, part := range planetoidPickleParts() {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if parts[part], err = loadPlanetoidPart(ctx, f, part); err != nil {
			return nil, err
		}
	}
	mats := map[string]featureMatrix{}
	for _, part := range []string{"x", "tx", "allx"} {
		if mats[part], err = planetoidMatrix(f, part, parts[part]); err != nil {
			return nil, err
		}
	}
	labels := map[string][]int64{}
	classes := map[string]int64{}
	for _, part := range []string{"y", "ty", "ally"} {
		if labels[part], classes[part], err = planetoidLabels(f, part, parts[part]); err != nil {
			return nil, err
		}
	}
	xRows, dim := mats["x"].dims()
	txRows, txCols := mats["tx"].dims()
	allRows, allCols := mats["allx"].dims()
	switch {
	case txCols != dim || allCols != dim:
		return nil, &inputerr.Error{Path: f.path("tx"), Msg: fmt.Sprintf("x, tx and allx have %d, %d and %d columns: want one feature width", dim, txCols, allCols)}
	case classes["ty"] != classes["y"] || classes["ally"] != classes["y"]:
		return nil, &inputerr.Error{Path: f.path("ty"), Msg: fmt.Sprintf("y, ty and ally have %d, %d and %d columns: want one class count", classes["y"], classes["ty"], classes["ally"])}
	case int64(len(labels["y"])) != xRows:
		return nil, &inputerr.Error{Path: f.path("y"), Msg: fmt.Sprintf("%d rows for x's %d", len(labels["y"]), xRows)}
	case int64(len(labels["ally"])) != allRows:
		return nil, &inputerr.Error{Path: f.path("ally"), Msg: fmt.Sprintf("%d rows for allx's %d", len(labels["ally"]), allRows)}
	case int64(len(labels["ty"])) != txRows:
		return nil, &inputerr.Error{Path: f.path("ty"), Msg: fmt.Sprintf("%d rows for tx's %d", len(labels["ty"]), txRows)}
	case xRows+planetoidValSize > allRows:
		return nil, &inputerr.Error{Path: f.path("allx"), Msg: fmt.Sprintf("%d rows: the standard split needs y's %d training rows and %d validation rows", allRows, xRows, planetoidValSize)}
	}

	// test.index: tx's row i is vertex testIdx[i].
	indexPath := f.path("test.index")
	var testIdx []int64
	testLine := map[int64]int{}
	err = scanLines(ctx, indexPath, "--from", func(s *importLines) error {
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
		testIdx = append(testIdx, v)
		return nil
	})
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &inputerr.Error{Path: indexPath, Field: "--from", Msg: fmt.Sprintf("missing: a Planetoid dataset needs ind.%s.{%s, test.index}", f.name, planetoidPicklePartsDoc)}
		}
		return nil, err
	}
	if int64(len(testIdx)) != txRows {
		return nil, &inputerr.Error{Path: indexPath, Msg: fmt.Sprintf("%d test ids for tx's %d rows", len(testIdx), txRows)}
	}
	n := allRows
	for _, v := range testIdx {
		n = max(n, v+1)
	}
	missing := n - allRows - txRows

	// Per vertex: where its features and label come from.
	const noRow = -1
	txRow := make([]int64, n-allRows)
	for i := range txRow {
		txRow[i] = noRow
	}
	lab := make([]int64, n)
	copy(lab, labels["ally"])
	for i := range lab[allRows:] {
		lab[allRows+int64(i)] = -1
	}
	for i, v := range testIdx {
		txRow[v-allRows] = int64(i)
		lab[v] = labels["ty"][i]
	}

	graph, ok := parts["graph"].(*pyDefaultDict)
	if !ok {
		return nil, &inputerr.Error{Path: f.path("graph"), Msg: fmt.Sprintf("holds a %T: want a defaultdict(list) adjacency", parts["graph"])}
	}
	el := &importEdges{undirected: true}
	var directed []uint64 // the lists' ordered pairs, to tell listings from both ends from repeats
	for _, k := range slices.Sorted(maps.Keys(graph.items)) {
		if k < 0 || k >= n {
			return nil, &inputerr.Error{Path: f.path("graph"), Msg: fmt.Sprintf("node %d: features cover vertices 0 to %d", k, n-1)}
		}
		nbrs, ok := graph.items[k].(*types.List)
		if !ok {
			return nil, &inputerr.Error{Path: f.path("graph"), Msg: fmt.Sprintf("node %d: neighbours are a %T, want a list", k, graph.items[k])}
		}
		for _, x := range *nbrs {
			nb, ok := x.(int)
			if !ok || nb < 0 || int64(nb) >= n {
				return nil, &inputerr.Error{Path: f.path("graph"), Msg: fmt.Sprintf("node %d: neighbour %v is not a vertex id in 0 to %d", k, x, n-1)}
			}
			el.add(uint32(k), uint32(nb))
			if int64(nb) != k {
				directed = append(directed, uint64(k)<<32|uint64(nb))
			}
		}
	}
	g, err := el.build(ctx, n)
	if err != nil {
		return nil, err
	}
	// The dict lists an edge from both ends; only a pair listed twice from
	// the same end is a duplicate.
	total := int64(len(directed))
	slices.Sort(directed)
	distinct := int64(len(slices.Compact(directed)))
	g.duplicates = total - distinct
	oneEnd := 2*g.undirectedEdges - distinct

	d := &importDataset{g: g, labels: lab}
	d.meta = Meta{Name: orDefault(opt.Name, f.name), NumNodes: n, Undirected: true, FeatureDim: int(dim),
		NumClasses: int(classes["y"]), Source: "planetoid:" + absPath(filepath.Join(f.dir, "ind."+f.name))}
	for v := range xRows {
		d.train = append(d.train, v)
	}
	for v := xRows; v < xRows+planetoidValSize; v++ {
		d.val = append(d.val, v)
	}
	d.test = slices.Sorted(slices.Values(testIdx))
	notes := []string{
		"labels are the one-hot columns of ally/ty (Planetoid's class order)",
		fmt.Sprintf("standard Planetoid split: train = vertices 0 to %d (y's rows), val = %d to %d, test = the %d ids of test.index", xRows-1, xRows, xRows+planetoidValSize-1, len(testIdx)),
	}
	if oneEnd > 0 {
		notes = append(notes, fmt.Sprintf("%d of %d edges are listed from one end only in the graph dict: stored both ways", oneEnd, g.undirectedEdges))
	}
	if missing > 0 {
		notes = append(notes, fmt.Sprintf("%d ids between %d and %d are not in test.index (isolated, featureless nodes): zero features, label -1, in no split, as Kipf's and PyG's loaders pad them", missing, allRows, n-1))
	}
	d.meta.Notes = notes
	d.writeFeatures = func(path string) error {
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
			switch {
			case v < allRows:
				mats["allx"].row(v, row)
			case txRow[v-allRows] != noRow:
				mats["tx"].row(txRow[v-allRows], row)
			default:
				clear(row)
			}
			if err := aw.Write(row); err != nil {
				aw.Abort()
				return err
			}
		}
		return aw.Close()
	}
	if err := d.write(out); err != nil {
		return nil, err
	}
	return d.summary("planetoid", el, 0), nil
}
