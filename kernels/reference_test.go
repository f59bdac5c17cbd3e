package kernels

// Float64 references for every Backend method, written from the doc
// comments in kernels.go, and checkBackend, which runs them against any
// Backend: the CPU backend now, a device backend later.

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"runtime/debug"
	"testing"
)

// refTol is the relative tolerance of a float32 kernel against its float64
// reference, relative to the largest magnitude of the expected matrix (so
// sums are judged by their scale, not by a cancelled element).
const refTol = 1e-4

// dmat is a float64 matrix for the references, row-major and packed.
type dmat struct {
	rows, cols int
	v          []float64
}

func newDmat(rows, cols int) dmat { return dmat{rows, cols, make([]float64, rows*cols)} }

func (m dmat) at(r, c int) float64     { return m.v[r*m.cols+c] }
func (m dmat) set(r, c int, x float64) { m.v[r*m.cols+c] = x }
func (m dmat) add(r, c int, x float64) { m.v[r*m.cols+c] += x }

func (m dmat) clone() dmat {
	return dmat{m.rows, m.cols, append([]float64(nil), m.v...)}
}

func (m dmat) f32() []float32 {
	s := make([]float32, len(m.v))
	for i, x := range m.v {
		s[i] = float32(x)
	}
	return s
}

func dmatOf(rows, cols int, s []float32) dmat {
	m := newDmat(rows, cols)
	for i := range m.v {
		m.v[i] = float64(s[i])
	}
	return m
}

// colSlice returns a copy of columns [c0, c1).
func (m dmat) colSlice(c0, c1 int) dmat {
	o := newDmat(m.rows, c1-c0)
	for r := range m.rows {
		for c := c0; c < c1; c++ {
			o.set(r, c-c0, m.at(r, c))
		}
	}
	return o
}

// rowSlice returns a copy of rows [r0, r1).
func (m dmat) rowSlice(r0, r1 int) dmat {
	return dmat{r1 - r0, m.cols, append([]float64(nil), m.v[r0*m.cols:r1*m.cols]...)}
}

func (m dmat) maxAbs() float64 {
	var mx float64
	for _, x := range m.v {
		mx = max(mx, math.Abs(x))
	}
	return mx
}

// nanDmat is the content of an output a kernel must overwrite entirely.
func nanDmat(rows, cols int) dmat {
	m := newDmat(rows, cols)
	for i := range m.v {
		m.v[i] = math.NaN()
	}
	return m
}

// refBlock is a sampled block on the host: destination i reaches sources
// src[off[i]:off[i+1]].
type refBlock struct {
	off, src []int32
	numSrc   int
}

func (g refBlock) numDst() int   { return len(g.off) - 1 }
func (g refBlock) numEdges() int { return len(g.src) }

// edges calls fn for every edge j from source u into destination i.
func (g refBlock) edges(fn func(i, j, u int)) {
	for i := range g.numDst() {
		for j := g.off[i]; j < g.off[i+1]; j++ {
			fn(i, int(j), int(g.src[j]))
		}
	}
}

func (g refBlock) degree(i int) int { return int(g.off[i+1] - g.off[i]) }

// randBlock draws a block whose destinations have 0 to maxDeg edges (some
// exactly 0 and 1, when numDst allows), sources repeated within a
// destination and one hub source that many destinations reach.
func randBlock(rng *rand.Rand, numDst, numSrc, maxDeg int) refBlock {
	g := refBlock{off: make([]int32, 1, numDst+1), numSrc: numSrc}
	for i := range numDst {
		var deg int
		switch {
		case i == 0 || numSrc == 0:
			deg = 0
		case i == 1:
			deg = 1
		case i == 2:
			deg = min(3, maxDeg) // with a repeated source, below
		default:
			switch rng.IntN(6) {
			case 0:
				deg = 0
			case 1:
				deg = 1
			default:
				deg = rng.IntN(maxDeg + 1)
			}
		}
		first := len(g.src)
		for k := range deg {
			var u int
			switch {
			case k > 0 && (i == 2 || rng.IntN(5) == 0):
				u = int(g.src[first+rng.IntN(k)])
			case rng.IntN(8) == 0:
				u = 0
			default:
				u = rng.IntN(numSrc)
			}
			g.src = append(g.src, int32(u))
		}
		g.off = append(g.off, int32(len(g.src)))
	}
	return g
}

// blockShapes are the blocks the graph kernels run on.
var blockShapes = []struct {
	name                  string
	numDst, numSrc, deg   int
	wantEmptyDestinations bool
}{
	{"small block", 9, 7, 5, true},
	{"medium block with hub", 300, 500, 12, true},
	{"more destinations than sources", 200, 40, 8, true},
	{"no destinations", 0, 5, 3, false},
	{"no sources", 6, 0, 0, true},
}

// headShapes are (heads, features per head) for the per-head kernels.
var headShapes = []struct{ h, f int }{{1, 1}, {1, 13}, {4, 1}, {4, 16}}

// fixture places a case's operands on a backend, either as whole matrices
// or as column views of wider ones whose other columns must survive every
// kernel untouched.
type fixture struct {
	t *testing.T
	b Backend
	// path names the case below checkBackend, whatever the backend, so
	// every backend sees the same inputs.
	path   string
	rng    *rand.Rand
	views  bool
	guards []viewGuard
}

// viewGuard remembers the parent of a view and what it held at upload.
type viewGuard struct {
	parent *Mat
	c0, c1 int
	before dmat
}

func nameSeed(name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return h.Sum64()
}

// run runs fn as a subtest with its own fixture, seeded by the case's
// path.
func (f *fixture) run(name string, fn func(f *fixture)) {
	f.t.Helper()
	f.t.Run(name, func(t *testing.T) {
		path := f.path + "/" + name
		g := &fixture{t: t, b: f.b, path: path, views: f.views, rng: rand.New(rand.NewPCG(nameSeed(path), 0x9e3779b9))}
		// A kernel's panic fails its case, not the whole run.
		defer func() {
			if r := recover(); r != nil {
				t.Errorf("panic: %v\n%s", r, debug.Stack())
			}
		}()
		fn(g)
		g.checkGuards()
	})
}

// whole returns a matrix holding m, never a view.
func (f *fixture) whole(m dmat) *Mat {
	x := f.b.NewMat(0, 0)
	f.b.Upload(x, m.rows, m.cols, m.f32())
	return x
}

// up returns an operand holding m: a whole matrix, or in views mode a
// column view of a wider matrix.
func (f *fixture) up(m dmat) *Mat {
	if !f.views {
		// No view of a matrix without rows: ColSlice of one is checked
		// once, in caseStorage.
		return f.whole(m)
	}
	left, right := 1+f.rng.IntN(3), 1+f.rng.IntN(3)
	full := f.uniform(m.rows, m.cols+left+right, -9, 9)
	for r := range m.rows {
		for c := range m.cols {
			full.set(r, left+c, m.at(r, c))
		}
	}
	p := f.b.NewMat(0, 0)
	f.b.Upload(p, full.rows, full.cols, full.f32())
	f.guards = append(f.guards, viewGuard{parent: p, c0: left, c1: left + m.cols, before: full})
	return p.ColSlice(left, left+m.cols)
}

// checkGuards fails when a kernel wrote outside one of its view operands.
func (f *fixture) checkGuards() {
	f.t.Helper()
	for _, g := range f.guards {
		now := f.get(g.parent)
		for r := range now.rows {
			for c := range now.cols {
				if c >= g.c0 && c < g.c1 {
					continue
				}
				if math.Float64bits(now.at(r, c)) != math.Float64bits(g.before.at(r, c)) {
					f.t.Errorf("wrote outside a view of columns [%d, %d): parent[%d,%d] = %g, was %g",
						g.c0, g.c1, r, c, now.at(r, c), g.before.at(r, c))
					return
				}
			}
		}
	}
}

func (f *fixture) get(m *Mat) dmat {
	s := make([]float32, m.Len())
	f.b.Download(s, m)
	return dmatOf(m.Rows, m.Cols, s)
}

// uniform returns values in [lo, hi) that are exactly float32.
func (f *fixture) uniform(rows, cols int, lo, hi float64) dmat {
	m := newDmat(rows, cols)
	for i := range m.v {
		m.v[i] = float64(float32(lo + (hi-lo)*f.rng.Float64()))
	}
	return m
}

func (f *fixture) rand(rows, cols int) dmat { return f.uniform(rows, cols, -1, 1) }

// awayFromZero returns values in ±[0.05, 2), where every activation has
// a derivative whatever convention it takes at 0.
func (f *fixture) awayFromZero(rows, cols int) dmat {
	m := f.uniform(rows, cols, 0.05, 2)
	for i := range m.v {
		if f.rng.IntN(2) == 0 {
			m.v[i] = -m.v[i]
		}
	}
	return m
}

func (f *fixture) csr(g refBlock) *CSR { return f.b.NewCSR(g.off, g.src, g.numSrc) }

func (f *fixture) index(v []int32) *Index { return f.b.NewIndex(v) }

// near checks m against want within tol of want's largest magnitude.
func (f *fixture) near(what string, m *Mat, want dmat, tol float64) {
	f.t.Helper()
	assertNear(f.t, what, f.get(m), want, tol)
}

func assertNear(t testing.TB, what string, got, want dmat, tol float64) {
	t.Helper()
	if got.rows != want.rows || got.cols != want.cols {
		t.Errorf("%s is %dx%d, want %dx%d", what, got.rows, got.cols, want.rows, want.cols)
		return
	}
	bound := tol * want.maxAbs()
	bad := 0
	for k, w := range want.v {
		g := got.v[k]
		if math.Abs(g-w) <= bound || (math.IsNaN(w) && math.IsNaN(g)) {
			continue
		}
		if bad < 4 {
			t.Errorf("%s[%d,%d] = %.9g, want %.9g (±%.3g)", what, k/want.cols, k%want.cols, g, w, bound)
		}
		bad++
	}
	if bad >= 4 {
		t.Errorf("%s: %d of %d elements wrong", what, bad, len(want.v))
	}
}

// assertSame requires bitwise-equal float32 contents.
func assertSame(t testing.TB, what string, got, want dmat) {
	t.Helper()
	if got.rows != want.rows || got.cols != want.cols {
		t.Errorf("%s is %dx%d, want %dx%d", what, got.rows, got.cols, want.rows, want.cols)
		return
	}
	for k, w := range want.v {
		if math.Float32bits(float32(got.v[k])) != math.Float32bits(float32(w)) {
			t.Errorf("%s[%d,%d] = %.9g, want exactly %.9g", what, k/want.cols, k%want.cols, got.v[k], w)
			return
		}
	}
}

// The references. Each follows its method's doc comment in kernels.go.

func refGemm(transA, transB bool, alpha float64, a, b dmat, beta float64, c dmat) dmat {
	opA := func(i, k int) float64 {
		if transA {
			return a.at(k, i)
		}
		return a.at(i, k)
	}
	opB := func(k, j int) float64 {
		if transB {
			return b.at(j, k)
		}
		return b.at(k, j)
	}
	k := a.cols
	if transA {
		k = a.rows
	}
	out := c.clone()
	for i := range c.rows {
		for j := range c.cols {
			var s float64
			for l := range k {
				s += opA(i, l) * opB(l, j)
			}
			if beta == 0 {
				// BLAS: beta 0 means C is not read, so NaN in C does not
				// survive.
				out.set(i, j, alpha*s)
			} else {
				out.set(i, j, alpha*s+beta*c.at(i, j))
			}
		}
	}
	return out
}

func refGatherRows(src dmat, idx []int32) dmat {
	out := newDmat(len(idx), src.cols)
	for i, r := range idx {
		copy(out.v[i*out.cols:(i+1)*out.cols], src.v[int(r)*src.cols:(int(r)+1)*src.cols])
	}
	return out
}

func refScatterAddRows(dst, src dmat, idx []int32) dmat {
	out := dst.clone()
	for i, r := range idx {
		for c := range src.cols {
			out.add(int(r), c, src.at(i, c))
		}
	}
	return out
}

func refSegmentMean(x dmat, g refBlock) dmat {
	out := newDmat(g.numDst(), x.cols)
	g.edges(func(i, _, u int) {
		for c := range x.cols {
			out.add(i, c, x.at(u, c)/float64(g.degree(i)))
		}
	})
	return out
}

func refSegmentMeanBackward(dx, dout dmat, g refBlock) dmat {
	out := dx.clone()
	g.edges(func(i, _, u int) {
		for c := range dx.cols {
			out.add(u, c, dout.at(i, c)/float64(g.degree(i)))
		}
	})
	return out
}

func refWeightedSum(x, w dmat, g refBlock) dmat {
	H := w.cols
	F := x.cols / H
	out := newDmat(g.numDst(), x.cols)
	g.edges(func(i, j, u int) {
		for h := range H {
			for f := range F {
				out.add(i, h*F+f, w.at(j, h)*x.at(u, h*F+f))
			}
		}
	})
	return out
}

func refWeightedSumBackward(dx, dout, w dmat, g refBlock) dmat {
	H := w.cols
	F := dx.cols / H
	out := dx.clone()
	g.edges(func(i, j, u int) {
		for h := range H {
			for f := range F {
				out.add(u, h*F+f, w.at(j, h)*dout.at(i, h*F+f))
			}
		}
	})
	return out
}

func refEdgeDot(a, b dmat, H int, g refBlock) dmat {
	F := a.cols / H
	s := newDmat(g.numEdges(), H)
	g.edges(func(i, j, u int) {
		for h := range H {
			for f := range F {
				s.add(j, h, a.at(i, h*F+f)*b.at(u, h*F+f))
			}
		}
	})
	return s
}

func refHeadDot(x, a dmat, H int) dmat {
	F := x.cols / H
	out := newDmat(x.rows, H)
	for n := range x.rows {
		for h := range H {
			for f := range F {
				out.add(n, h, x.at(n, h*F+f)*a.at(0, h*F+f))
			}
		}
	}
	return out
}

// refHeadDotBackward returns dx and da with dout's gradient added.
func refHeadDotBackward(dx, da, dout, x, a dmat) (dmat, dmat) {
	H := dout.cols
	F := x.cols / H
	dx, da = dx.clone(), da.clone()
	for n := range x.rows {
		for h := range H {
			for f := range F {
				dx.add(n, h*F+f, dout.at(n, h)*a.at(0, h*F+f))
				da.add(0, h*F+f, dout.at(n, h)*x.at(n, h*F+f))
			}
		}
	}
	return dx, da
}

func refEdgeAdd(el, er dmat, g refBlock) dmat {
	s := newDmat(g.numEdges(), el.cols)
	g.edges(func(i, j, u int) {
		for h := range el.cols {
			s.set(j, h, el.at(u, h)+er.at(i, h))
		}
	})
	return s
}

func refEdgeAddBackward(del, der, ds dmat, g refBlock) (dmat, dmat) {
	del, der = del.clone(), der.clone()
	g.edges(func(i, j, u int) {
		for h := range ds.cols {
			del.add(u, h, ds.at(j, h))
			der.add(i, h, ds.at(j, h))
		}
	})
	return del, der
}

func refEdgeSoftmax(e dmat, g refBlock) dmat {
	a := newDmat(e.rows, e.cols)
	for i := range g.numDst() {
		lo, hi := int(g.off[i]), int(g.off[i+1])
		for h := range e.cols {
			mx := math.Inf(-1)
			for j := lo; j < hi; j++ {
				mx = max(mx, e.at(j, h))
			}
			var sum float64
			for j := lo; j < hi; j++ {
				sum += math.Exp(e.at(j, h) - mx)
			}
			for j := lo; j < hi; j++ {
				a.set(j, h, math.Exp(e.at(j, h)-mx)/sum)
			}
		}
	}
	return a
}

// refEdgeSoftmaxBackward is the softmax Jacobian-vector product per
// destination and head: de_j = a_j (da_j - sum_k a_k da_k).
func refEdgeSoftmaxBackward(da, a dmat, g refBlock) dmat {
	de := newDmat(a.rows, a.cols)
	for i := range g.numDst() {
		lo, hi := int(g.off[i]), int(g.off[i+1])
		for h := range a.cols {
			var s float64
			for j := lo; j < hi; j++ {
				s += a.at(j, h) * da.at(j, h)
			}
			for j := lo; j < hi; j++ {
				de.set(j, h, a.at(j, h)*(da.at(j, h)-s))
			}
		}
	}
	return de
}

func refHeadMean(x dmat, F int) dmat {
	H := x.cols / F
	out := newDmat(x.rows, F)
	for n := range x.rows {
		for h := range H {
			for f := range F {
				out.add(n, f, x.at(n, h*F+f)/float64(H))
			}
		}
	}
	return out
}

func refHeadMeanBackward(dout dmat, H int) dmat {
	F := dout.cols
	dx := newDmat(dout.rows, H*F)
	for n := range dout.rows {
		for h := range H {
			for f := range F {
				dx.set(n, h*F+f, dout.at(n, f)/float64(H))
			}
		}
	}
	return dx
}

func refAddBias(m, bias dmat) dmat {
	out := m.clone()
	for r := range m.rows {
		for c := range m.cols {
			out.add(r, c, bias.at(0, c))
		}
	}
	return out
}

func refSumRows(out, m dmat, beta float64) dmat {
	o := newDmat(1, m.cols)
	for c := range m.cols {
		if beta != 0 {
			o.set(0, c, beta*out.at(0, c))
		}
		for r := range m.rows {
			o.add(0, c, m.at(r, c))
		}
	}
	return o
}

func refAxpy(alpha float64, x, y dmat) dmat {
	out := y.clone()
	for i := range out.v {
		out.v[i] += alpha * x.v[i]
	}
	return out
}

func refScale(m dmat, alpha float64) dmat {
	out := m.clone()
	for i := range out.v {
		out.v[i] *= alpha
	}
	return out
}

func refAct(f Activation, x dmat) dmat {
	y := x.clone()
	s := float64(f.Slope)
	for i, v := range x.v {
		switch f.Kind {
		case ReLU:
			y.v[i] = max(v, 0)
		case LeakyReLU:
			if v < 0 {
				y.v[i] = s * v
			}
		case ELU:
			if v < 0 {
				y.v[i] = s * (math.Exp(v) - 1)
			}
		}
	}
	return y
}

func refActBackward(f Activation, dy, x dmat) dmat {
	dx := dy.clone()
	s := float64(f.Slope)
	for i, v := range x.v {
		if v > 0 {
			continue
		}
		switch f.Kind {
		case ReLU:
			dx.v[i] = 0
		case LeakyReLU:
			dx.v[i] *= s
		case ELU:
			dx.v[i] *= s * math.Exp(v)
		}
	}
	return dx
}

// refSoftmaxCE returns the summed loss, the rows whose largest logit is
// the label, the gradient of scale*loss, and the sum of the rows' losses'
// magnitudes (the scale a float32 kernel's error is judged by).
func refSoftmaxCE(logits dmat, labels []int32, scale float64) (loss float64, correct int, grad dmat, lossMag float64) {
	grad = newDmat(logits.rows, logits.cols)
	for r := range logits.rows {
		lab := int(labels[r])
		if lab < 0 {
			continue
		}
		mx, best := math.Inf(-1), 0
		for c := range logits.cols {
			if v := logits.at(r, c); v > mx {
				mx, best = v, c
			}
		}
		var sum float64
		for c := range logits.cols {
			sum += math.Exp(logits.at(r, c) - mx)
		}
		l := math.Log(sum) - (logits.at(r, lab) - mx)
		loss += l
		lossMag += math.Abs(l)
		if best == lab {
			correct++
		}
		for c := range logits.cols {
			p := math.Exp(logits.at(r, c)-mx) / sum
			if c == lab {
				p--
			}
			grad.set(r, c, scale*p)
		}
	}
	return loss, correct, grad, lossMag
}

func refArgmax(m dmat) []int32 {
	out := make([]int32, m.rows)
	for r := range m.rows {
		best := 0
		for c := range m.cols {
			if m.at(r, c) > m.at(r, best) {
				best = c
			}
		}
		out[r] = int32(best)
	}
	return out
}

// refAdam is PyTorch's Adam with L2 weight decay: g += wd*p;
// m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
// p -= lr/(1-b1^t) * m / (sqrt(v)/sqrt(1-b2^t) + eps).
func refAdam(p, g, m, v dmat, o AdamStep) {
	b1, b2 := float64(o.Beta1), float64(o.Beta2)
	lr, eps, wd := float64(o.LR), float64(o.Eps), float64(o.WeightDecay)
	bc1 := 1 - math.Pow(b1, float64(o.T))
	bc2 := 1 - math.Pow(b2, float64(o.T))
	for i := range p.v {
		gi := g.v[i] + wd*p.v[i]
		m.v[i] = b1*m.v[i] + (1-b1)*gi
		v.v[i] = b2*v.v[i] + (1-b2)*gi*gi
		p.v[i] -= lr / bc1 * m.v[i] / (math.Sqrt(v.v[i])/math.Sqrt(bc2) + eps)
	}
}

// backendCases are the behaviours checkBackend requires of every Backend.
var backendCases = []struct {
	name string
	run  func(f *fixture)
}{
	{"Gemm", caseGemm},
	{"GatherRows", caseGatherRows},
	{"GatherRowsTwo", caseGatherRowsTwo},
	{"ScatterAddRows", caseScatterAddRows},
	{"SegmentMean", caseSegmentMean},
	{"WeightedSum", caseWeightedSum},
	{"HeadDot", caseHeadDot},
	{"EdgeAdd", caseEdgeAdd},
	{"EdgeSoftmax", caseEdgeSoftmax},
	{"HeadMean", caseHeadMean},
	{"AddBias", caseAddBias},
	{"SumRows", caseSumRows},
	{"Axpy and Scale", caseAxpyScale},
	{"Act", caseAct},
	{"Dropout", caseDropout},
	{"ActDropout", caseActDropout},
	{"SoftmaxCrossEntropy", caseSoftmaxCrossEntropy},
	{"Argmax", caseArgmax},
	{"Adam", caseAdam},
	{"storage", caseStorage},
}

// checkBackend runs every case against b, once on whole matrices and once
// with every operand a column view of a wider matrix.
func checkBackend(t *testing.T, b Backend) {
	t.Helper()
	if b.Threads() < 1 {
		t.Errorf("Threads() = %d, want >= 1", b.Threads())
	}
	if b.Name() == "" {
		t.Error("Name() is empty")
	}
	for _, views := range []bool{false, true} {
		mode := "whole matrices"
		if views {
			mode = "column views"
		}
		t.Run(mode, func(t *testing.T) {
			root := &fixture{t: t, b: b, views: views}
			for _, c := range backendCases {
				root.run(c.name, c.run)
			}
		})
	}
}

func caseGemm(f *fixture) {
	shapes := []struct{ m, n, k int }{{1, 1, 1}, {7, 5, 9}, {37, 29, 65}, {64, 3, 1}, {4, 3, 0}, {0, 3, 4}, {5, 0, 2}}
	scalars := []struct{ alpha, beta float32 }{{1, 0}, {-0.5, 1}, {2, 0.25}}
	for _, s := range shapes {
		for _, ab := range scalars {
			for _, tr := range []struct{ a, b bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
				name := fmt.Sprintf("%s%s m=%d n=%d k=%d alpha=%g beta=%g", opName(tr.a), opName(tr.b), s.m, s.n, s.k, ab.alpha, ab.beta)
				f.run(name, func(f *fixture) {
					a := f.rand(s.m, s.k)
					if tr.a {
						a = f.rand(s.k, s.m)
					}
					b := f.rand(s.k, s.n)
					if tr.b {
						b = f.rand(s.n, s.k)
					}
					c := f.rand(s.m, s.n)
					if ab.beta == 0 {
						c = nanDmat(s.m, s.n) // beta 0 ignores C
					}
					want := refGemm(tr.a, tr.b, float64(ab.alpha), a, b, float64(ab.beta), c)
					cm := f.up(c)
					f.b.Gemm(tr.a, tr.b, ab.alpha, f.up(a), f.up(b), ab.beta, cm)
					f.near("C", cm, want, refTol)
				})
			}
		}
	}
}

func caseGatherRows(f *fixture) {
	cases := []struct {
		name string
		rows int
		idx  []int32
	}{
		{"permutation with repeats", 6, []int32{5, 0, 0, 3, 2, 5, 1, 4, 4, 4}},
		{"one row", 3, []int32{2}},
		{"no rows", 3, nil},
	}
	for _, tc := range cases {
		f.run(tc.name, func(f *fixture) {
			src := f.rand(tc.rows, 13)
			dst := f.up(nanDmat(len(tc.idx), 13))
			f.b.GatherRows(dst, f.up(src), f.index(tc.idx))
			assertSame(f.t, "dst", f.get(dst), refGatherRows(src, tc.idx))
		})
	}
	f.run("random 500 of 300", func(f *fixture) {
		idx := make([]int32, 500)
		for i := range idx {
			idx[i] = int32(f.rng.IntN(300))
		}
		src := f.rand(300, 37)
		dst := f.up(nanDmat(500, 37))
		f.b.GatherRows(dst, f.up(src), f.index(idx))
		assertSame(f.t, "dst", f.get(dst), refGatherRows(src, idx))
	})
}

func caseGatherRowsTwo(f *fixture) {
	ref := func(a, b dmat, idx []int32) dmat {
		out := newDmat(len(idx), a.cols)
		for i, r := range idx {
			src, row := a, int(r)
			if r < 0 {
				src, row = b, int(-1-r)
			}
			copy(out.v[i*out.cols:(i+1)*out.cols], src.v[row*src.cols:(row+1)*src.cols])
		}
		return out
	}
	cases := []struct {
		name         string
		arows, brows int
		idx          []int32
	}{
		{"both, with repeats", 4, 3, []int32{3, -1, 0, -3, -3, 2, 1, -2, 0}},
		{"only copied rows", 3, 0, []int32{2, 0, 1}},
		{"only resident rows", 0, 5, []int32{-5, -1, -4}},
		{"no rows", 2, 2, nil},
	}
	for _, tc := range cases {
		f.run(tc.name, func(f *fixture) {
			a, b := f.rand(tc.arows, 11), f.rand(tc.brows, 11)
			dst := f.up(nanDmat(len(tc.idx), 11))
			f.b.GatherRowsTwo(dst, f.up(a), f.up(b), f.index(tc.idx))
			assertSame(f.t, "dst", f.get(dst), ref(a, b, tc.idx))
		})
	}
	f.run("random 700 of 200 and 300", func(f *fixture) {
		idx := make([]int32, 700)
		for i := range idx {
			if f.rng.IntN(2) == 0 {
				idx[i] = int32(f.rng.IntN(200))
			} else {
				idx[i] = -1 - int32(f.rng.IntN(300))
			}
		}
		a, b := f.rand(200, 29), f.rand(300, 29)
		dst := f.up(nanDmat(700, 29))
		f.b.GatherRowsTwo(dst, f.up(a), f.up(b), f.index(idx))
		assertSame(f.t, "dst", f.get(dst), ref(a, b, idx))
	})
}

func caseScatterAddRows(f *fixture) {
	cases := []struct {
		name       string
		rows, cols int
		idx        []int32
	}{
		{"repeated targets", 5, 13, []int32{4, 0, 4, 4, 2, 0, 1, 4}},
		{"everything into one row", 3, 7, []int32{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}},
		{"no sources", 3, 7, nil},
	}
	for _, tc := range cases {
		f.run(tc.name, func(f *fixture) {
			dst, src := f.rand(tc.rows, tc.cols), f.rand(len(tc.idx), tc.cols)
			dm := f.up(dst)
			f.b.ScatterAddRows(dm, f.up(src), f.index(tc.idx))
			f.near("dst", dm, refScatterAddRows(dst, src, tc.idx), refTol)
		})
	}
	f.run("random 2000 into 300", func(f *fixture) {
		idx := make([]int32, 2000)
		for i := range idx {
			idx[i] = int32(f.rng.IntN(300))
		}
		dst, src := f.rand(300, 64), f.rand(2000, 64)
		dm := f.up(dst)
		f.b.ScatterAddRows(dm, f.up(src), f.index(idx))
		f.near("dst", dm, refScatterAddRows(dst, src, idx), refTol)
	})
}

func caseSegmentMean(f *fixture) {
	for _, bs := range blockShapes {
		for _, cols := range []int{1, 5, 64} {
			f.run(fmt.Sprintf("%s, %d columns", bs.name, cols), func(f *fixture) {
				g := randBlock(f.rng, bs.numDst, bs.numSrc, bs.deg)
				x := f.rand(g.numSrc, cols)
				out := f.up(nanDmat(g.numDst(), cols))
				gc := f.csr(g)
				f.b.SegmentMean(out, f.up(x), gc)
				got := f.get(out)
				assertNear(f.t, "out", got, refSegmentMean(x, g), refTol)
				empty := 0
				for i := range g.numDst() {
					if g.degree(i) > 0 {
						continue
					}
					empty++
					for c := range cols {
						if got.at(i, c) != 0 {
							f.t.Errorf("out[%d,%d] = %g for a destination without edges, want 0", i, c, got.at(i, c))
						}
					}
				}
				if bs.wantEmptyDestinations && empty == 0 {
					f.t.Error("block has no destination without edges")
				}

				dx, dout := f.rand(g.numSrc, cols), f.rand(g.numDst(), cols)
				dxm := f.up(dx)
				f.b.SegmentMeanBackward(dxm, f.up(dout), gc)
				f.near("SegmentMeanBackward dx", dxm, refSegmentMeanBackward(dx, dout, g), refTol)
			})
		}
	}
}

func caseWeightedSum(f *fixture) {
	for _, bs := range blockShapes {
		for _, hs := range headShapes {
			f.run(fmt.Sprintf("%s, H=%d F=%d", bs.name, hs.h, hs.f), func(f *fixture) {
				g := randBlock(f.rng, bs.numDst, bs.numSrc, bs.deg)
				cols := hs.h * hs.f
				x, w := f.rand(g.numSrc, cols), f.rand(g.numEdges(), hs.h)
				gc := f.csr(g)
				xm, wm := f.up(x), f.up(w)
				out := f.up(nanDmat(g.numDst(), cols))
				f.b.WeightedSum(out, xm, wm, gc)
				got := f.get(out)
				assertNear(f.t, "WeightedSum out", got, refWeightedSum(x, w, g), refTol)
				for i := range g.numDst() {
					for c := range cols {
						if g.degree(i) == 0 && got.at(i, c) != 0 {
							f.t.Errorf("out[%d,%d] = %g for a destination without edges, want 0", i, c, got.at(i, c))
						}
					}
				}

				dx, dout := f.rand(g.numSrc, cols), f.rand(g.numDst(), cols)
				dxm, doutm := f.up(dx), f.up(dout)
				f.b.WeightedSumBackward(dxm, doutm, wm, gc)
				f.near("WeightedSumBackward dx", dxm, refWeightedSumBackward(dx, dout, w, g), refTol)

				s := f.up(nanDmat(g.numEdges(), hs.h))
				f.b.EdgeDot(s, doutm, xm, gc)
				f.near("EdgeDot s", s, refEdgeDot(dout, x, hs.h, g), refTol)
			})
		}
	}
}

func caseHeadDot(f *fixture) {
	grads := []struct {
		name   string
		dx, da bool
	}{{"dx and da", true, true}, {"dx only", true, false}, {"da only", false, true}}
	for _, rows := range []int{1, 50, 700} {
		for _, hs := range headShapes {
			for _, gr := range grads {
				f.run(fmt.Sprintf("N=%d H=%d F=%d, %s", rows, hs.h, hs.f, gr.name), func(f *fixture) {
					cols := hs.h * hs.f
					x, a := f.rand(rows, cols), f.rand(1, cols)
					xm, am := f.up(x), f.up(a)
					out := f.up(nanDmat(rows, hs.h))
					f.b.HeadDot(out, xm, am)
					f.near("HeadDot out", out, refHeadDot(x, a, hs.h), refTol)

					dx, da, dout := f.rand(rows, cols), f.rand(1, cols), f.rand(rows, hs.h)
					var dxm, dam *Mat
					if gr.dx {
						dxm = f.up(dx)
					}
					if gr.da {
						dam = f.up(da)
					}
					f.b.HeadDotBackward(dxm, dam, f.up(dout), xm, am)
					wantDx, wantDa := refHeadDotBackward(dx, da, dout, x, a)
					if gr.dx {
						f.near("HeadDotBackward dx", dxm, wantDx, refTol)
					}
					if gr.da {
						f.near("HeadDotBackward da", dam, wantDa, refTol)
					}
				})
			}
		}
	}
}

func caseEdgeAdd(f *fixture) {
	for _, bs := range blockShapes {
		for _, h := range []int{1, 4} {
			f.run(fmt.Sprintf("%s, H=%d", bs.name, h), func(f *fixture) {
				g := randBlock(f.rng, bs.numDst, bs.numSrc, bs.deg)
				gc := f.csr(g)
				el, er := f.rand(g.numSrc, h), f.rand(g.numDst(), h)
				s := f.up(nanDmat(g.numEdges(), h))
				f.b.EdgeAdd(s, f.up(el), f.up(er), gc)
				f.near("EdgeAdd s", s, refEdgeAdd(el, er, g), refTol)

				del, der, ds := f.rand(g.numSrc, h), f.rand(g.numDst(), h), f.rand(g.numEdges(), h)
				delm, derm := f.up(del), f.up(der)
				f.b.EdgeAddBackward(delm, derm, f.up(ds), gc)
				wantDel, wantDer := refEdgeAddBackward(del, der, ds, g)
				f.near("EdgeAddBackward del", delm, wantDel, refTol)
				f.near("EdgeAddBackward der", derm, wantDer, refTol)
			})
		}
	}
}

func caseEdgeSoftmax(f *fixture) {
	scores := []struct {
		name string
		// offset is added to all of a destination's scores, with a random
		// sign when bothSigns: without subtracting the maximum, exp
		// overflows float32 or every term underflows.
		offset, spread float64
		bothSigns      bool
	}{
		{"scores in ±3", 0, 3, false},
		{"scores near ±5000", 5000, 20, true},
		{"scores near 100", 100, 1, false},
	}
	for _, bs := range blockShapes {
		for _, sc := range scores {
			for _, h := range []int{1, 4} {
				f.run(fmt.Sprintf("%s, %s, H=%d", bs.name, sc.name, h), func(f *fixture) {
					g := randBlock(f.rng, bs.numDst, bs.numSrc, bs.deg)
					gc := f.csr(g)
					e := f.uniform(g.numEdges(), h, -sc.spread, sc.spread)
					for i := range g.numDst() {
						off := sc.offset
						if sc.bothSigns && f.rng.IntN(2) == 0 {
							off = -off
						}
						for j := g.off[i]; j < g.off[i+1]; j++ {
							for c := range h {
								e.set(int(j), c, float64(float32(e.at(int(j), c)+off)))
							}
						}
					}
					a := f.up(nanDmat(g.numEdges(), h))
					f.b.EdgeSoftmax(a, f.up(e), gc)
					want := refEdgeSoftmax(e, g)
					got := f.get(a)
					assertNear(f.t, "a", got, want, refTol)
					for i := range g.numDst() {
						if g.degree(i) != 1 {
							continue
						}
						for c := range h {
							if v := got.at(int(g.off[i]), c); v != 1 {
								f.t.Errorf("a = %g for destination %d's only edge, want 1", v, i)
							}
						}
					}

					da := f.rand(g.numEdges(), h)
					de := f.up(nanDmat(g.numEdges(), h))
					f.b.EdgeSoftmaxBackward(de, f.up(da), f.up(want), gc)
					f.near("de", de, refEdgeSoftmaxBackward(da, want, g), refTol)
				})
			}
		}
	}
}

func caseHeadMean(f *fixture) {
	for _, hs := range headShapes {
		for _, rows := range []int{0, 1, 40} {
			f.run(fmt.Sprintf("N=%d H=%d F=%d", rows, hs.h, hs.f), func(f *fixture) {
				x := f.rand(rows, hs.h*hs.f)
				out := f.up(nanDmat(rows, hs.f))
				f.b.HeadMean(out, f.up(x))
				f.near("HeadMean out", out, refHeadMean(x, hs.f), refTol)

				dout := f.rand(rows, hs.f)
				dx := f.up(nanDmat(rows, hs.h*hs.f))
				f.b.HeadMeanBackward(dx, f.up(dout))
				f.near("HeadMeanBackward dx", dx, refHeadMeanBackward(dout, hs.h), refTol)
			})
		}
	}
}

func caseAddBias(f *fixture) {
	for _, s := range []struct{ rows, cols int }{{1, 1}, {30, 7}, {500, 64}, {0, 5}} {
		f.run(fmt.Sprintf("%dx%d", s.rows, s.cols), func(f *fixture) {
			m, bias := f.rand(s.rows, s.cols), f.rand(1, s.cols)
			mm := f.up(m)
			f.b.AddBias(mm, f.up(bias))
			f.near("m", mm, refAddBias(m, bias), refTol)
		})
	}
}

func caseSumRows(f *fixture) {
	for _, s := range []struct{ rows, cols int }{{0, 3}, {1, 1}, {300, 7}, {1000, 64}} {
		for _, beta := range []float32{0, 1, 0.5} {
			f.run(fmt.Sprintf("%dx%d beta=%g", s.rows, s.cols, beta), func(f *fixture) {
				m, out := f.rand(s.rows, s.cols), f.rand(1, s.cols)
				if beta == 0 {
					out = nanDmat(1, s.cols) // beta 0 ignores what out held
				}
				om := f.up(out)
				f.b.SumRows(om, f.up(m), beta)
				f.near("out", om, refSumRows(out, m, float64(beta)), refTol)
			})
		}
	}
}

func caseAxpyScale(f *fixture) {
	for _, alpha := range []float32{0, 1, -2.5} {
		f.run(fmt.Sprintf("alpha=%g", alpha), func(f *fixture) {
			x, y := f.rand(40, 9), f.rand(40, 9)
			ym := f.up(y)
			f.b.Axpy(alpha, f.up(x), ym)
			f.near("Axpy y", ym, refAxpy(float64(alpha), x, y), refTol)

			mm := f.up(x)
			f.b.Scale(mm, alpha)
			f.near("Scale m", mm, refScale(x, float64(alpha)), refTol)
		})
	}
}

func caseAct(f *fixture) {
	acts := []Activation{{Kind: Identity}, {Kind: ReLU}, {Kind: LeakyReLU, Slope: 0.2}, {Kind: ELU, Slope: 1}}
	for _, act := range acts {
		for _, inPlace := range []bool{false, true} {
			name := fmt.Sprintf("%v(%g)", act.Kind, act.Slope)
			if inPlace {
				name += " in place"
			}
			f.run(name, func(f *fixture) {
				x := f.awayFromZero(60, 11)
				want := refAct(act, x)
				xm := f.up(x)
				y := xm
				if !inPlace {
					y = f.up(nanDmat(60, 11))
				}
				f.b.Act(act, y, xm)
				f.near("y", y, want, refTol)

				// Backward from fresh x and y (x is gone when in place).
				dy := f.rand(60, 11)
				xm, ym := f.up(x), f.up(dmatOf(60, 11, want.f32()))
				dym := f.up(dy)
				dx := dym
				if !inPlace {
					dx = f.up(nanDmat(60, 11))
				}
				f.b.ActBackward(act, dx, dym, xm, ym)
				f.near("dx", dx, refActBackward(act, dy, x), refTol)
			})
		}
	}
}

// dropoutKept returns which elements of y a dropout kept, checking that
// each is either 0 or x*scale. A backend may round p to a multiple of
// 2^-16 (and scale by one over its rounded keep probability, to stay
// unbiased), so the scale is checked to that precision.
func dropoutKept(t *testing.T, what string, y, x dmat, p float64) []bool {
	t.Helper()
	scale := 1 / (1 - p)
	tol := 1e-6 + 0x1p-16/(1-p)
	kept := make([]bool, len(y.v))
	for k, v := range y.v {
		switch {
		case v == 0:
		case math.Abs(v-x.v[k]*scale) <= tol*math.Abs(x.v[k]*scale):
			kept[k] = true
		default:
			t.Errorf("%s[%d,%d] = %g: neither 0 nor x*%g = %g", what, k/y.cols, k%y.cols, v, scale, x.v[k]*scale)
			return kept
		}
	}
	return kept
}

// caseDropout uses whole matrices even in views mode: which elements a
// view drops depends on where it lies in its parent, checked last.
func caseDropout(f *fixture) {
	const rows, cols = 100, 120
	for _, p := range []float32{0, 0.25, 0.5, 0.9, 1} {
		f.run(fmt.Sprintf("p=%g", p), func(f *fixture) {
			x := f.awayFromZero(rows, cols)
			y := f.whole(nanDmat(rows, cols))
			f.b.Dropout(y, f.whole(x), p, 42)
			got := f.get(y)
			if p == 0 {
				assertSame(f.t, "y", got, x)
				return
			}
			kept := dropoutKept(f.t, "y", got, x, float64(p))
			n := 0
			for _, k := range kept {
				if k {
					n++
				}
			}
			// Binomial(12000, 1-p): 6 standard deviations.
			mean := float64(len(kept)) * (1 - float64(p))
			sd := math.Sqrt(float64(len(kept)) * float64(p) * (1 - float64(p)))
			if math.Abs(float64(n)-mean) > 6*sd+0.5 {
				f.t.Errorf("kept %d of %d elements, want about %.0f", n, len(kept), mean)
			}

			again := f.whole(nanDmat(rows, cols))
			f.b.Dropout(again, f.whole(x), p, 42)
			assertSame(f.t, "y with the same seed", f.get(again), got)

			dy := f.awayFromZero(rows, cols)
			dx := f.whole(nanDmat(rows, cols))
			f.b.DropoutBackward(dx, f.whole(dy), p, 42)
			bkept := dropoutKept(f.t, "dx", f.get(dx), dy, float64(p))
			for k := range kept {
				if kept[k] != bkept[k] {
					f.t.Errorf("element %d: forward kept %v, backward kept %v", k, kept[k], bkept[k])
					break
				}
			}

			if p < 1 {
				other := f.whole(nanDmat(rows, cols))
				f.b.Dropout(other, f.whole(x), p, 43)
				okept := dropoutKept(f.t, "y with seed 43", f.get(other), x, float64(p))
				same := 0
				for k := range kept {
					if kept[k] == okept[k] {
						same++
					}
				}
				if same == len(kept) {
					f.t.Error("seeds 42 and 43 give the same mask")
				}
			}
		})
	}
	f.run("zeros in x do not change the mask", func(f *fixture) {
		const p = 0.5
		x := f.awayFromZero(rows, cols)
		sparse := x.clone()
		for k := range sparse.v {
			if f.rng.IntN(3) == 0 {
				sparse.v[k] = 0
			}
		}
		y, ys := f.whole(nanDmat(rows, cols)), f.whole(nanDmat(rows, cols))
		f.b.Dropout(y, f.whole(x), p, 5)
		f.b.Dropout(ys, f.whole(sparse), p, 5)
		kept := dropoutKept(f.t, "y", f.get(y), x, p)
		want := newDmat(rows, cols)
		for k := range kept {
			if kept[k] {
				want.v[k] = 2 * sparse.v[k]
			}
		}
		assertSame(f.t, "y of x with zeros", f.get(ys), want)
		// The gradient flows through every kept element, zero in x or not.
		dy := f.awayFromZero(rows, cols)
		dx := f.whole(nanDmat(rows, cols))
		f.b.DropoutBackward(dx, f.whole(dy), p, 5)
		for k := range kept {
			want.v[k] = 0
			if kept[k] {
				want.v[k] = 2 * dy.v[k]
			}
		}
		assertSame(f.t, "dx", f.get(dx), want)
	})
	// A view drops by its own positions (r*Cols + c within the view):
	// what a whole matrix of the view's shape and values would drop, so
	// forward and backward agree whatever storage they use.
	views := []struct {
		name           string
		r0, r1, c0, c1 int
	}{
		{"column view", 0, 50, 30, 57},
		{"row view", 20, 50, 0, 64},
		{"row and column view", 10, 40, 5, 21},
	}
	for _, v := range views {
		f.run(v.name+" drops what a whole matrix of its shape does", func(f *fixture) {
			const p = 0.5
			x := f.awayFromZero(50, 64)
			xm := f.whole(x)
			sub := x.rowSlice(v.r0, v.r1).colSlice(v.c0, v.c1)
			whole := f.whole(nanDmat(sub.rows, sub.cols))
			f.b.Dropout(whole, f.whole(sub), p, 7)
			want := f.get(whole)

			yfull := f.whole(nanDmat(50, 64))
			yv := yfull.RowSlice(v.r0, v.r1).ColSlice(v.c0, v.c1)
			f.b.Dropout(yv, xm.RowSlice(v.r0, v.r1).ColSlice(v.c0, v.c1), p, 7)
			assertSame(f.t, "Dropout of the view", f.get(yv), want)

			dxv := f.whole(nanDmat(50, 64)).RowSlice(v.r0, v.r1).ColSlice(v.c0, v.c1)
			f.b.DropoutBackward(dxv, xm.RowSlice(v.r0, v.r1).ColSlice(v.c0, v.c1), p, 7)
			assertSame(f.t, "DropoutBackward of the view", f.get(dxv), want)
		})
	}
}

func caseSoftmaxCrossEntropy(f *fixture) {
	cases := []struct {
		name         string
		rows, cols   int
		logitScale   float64
		ignoreShare  int // one row in ignoreShare has label -1; 0 for none
		scale        float32
		withGradient bool
	}{
		{"random logits", 40, 7, 3, 0, 1, true},
		{"mean scale, some labels ignored", 64, 10, 3, 4, 1.0 / 64, true},
		{"loss only", 30, 5, 3, 5, 1, false},
		{"huge logits", 50, 6, 1e4, 5, 0.5, true},
		{"one class", 8, 1, 3, 3, 1, true},
		{"every label ignored", 6, 4, 3, 1, 1, true},
		{"no rows", 0, 4, 3, 0, 1, true},
	}
	for _, tc := range cases {
		f.run(tc.name, func(f *fixture) {
			logits := f.uniform(tc.rows, tc.cols, -tc.logitScale, tc.logitScale)
			labels := make([]int32, tc.rows)
			for r := range labels {
				labels[r] = int32(f.rng.IntN(tc.cols))
				if tc.ignoreShare > 0 && f.rng.IntN(tc.ignoreShare) == 0 {
					labels[r] = -1
				}
			}
			if tc.name == "every label ignored" {
				for r := range labels {
					labels[r] = -1
				}
			}
			checkSoftmaxCE(f, logits, labels, tc.scale, tc.withGradient)
		})
	}
	f.run("ties at 1e30 (near float32's range)", func(f *fixture) {
		logits := dmat{3, 4, []float64{
			1e30, 1e30, -1e30, 0,
			-1e30, 3e38, 0, -3e38,
			1e30, 1e30, 1e30, 1e30,
		}}
		// Labels at the first of tied maxima, so that "largest logit is
		// the label" holds however ties are broken.
		checkSoftmaxCE(f, logits, []int32{0, 1, 0}, 1, true)
	})
}

func checkSoftmaxCE(f *fixture, logits dmat, labels []int32, scale float32, withGradient bool) {
	f.t.Helper()
	wantLoss, wantCorrect, wantGrad, mag := refSoftmaxCE(logits, labels, float64(scale))
	var dl *Mat
	if withGradient {
		dl = f.up(nanDmat(logits.rows, logits.cols))
	}
	loss, correct := f.b.SoftmaxCrossEntropy(dl, f.up(logits), f.index(labels), scale)
	if math.IsNaN(loss) || math.Abs(loss-wantLoss) > 1e-5*max(1, mag) {
		f.t.Errorf("loss = %.9g, want %.9g", loss, wantLoss)
	}
	if correct != wantCorrect {
		f.t.Errorf("correct = %d, want %d", correct, wantCorrect)
	}
	if !withGradient {
		return
	}
	got := f.get(dl)
	assertNear(f.t, "dlogits", got, wantGrad, refTol)
	for r, lab := range labels {
		for c := range logits.cols {
			if lab < 0 && got.at(r, c) != 0 {
				f.t.Errorf("dlogits[%d,%d] = %g for an ignored row, want 0", r, c, got.at(r, c))
			}
		}
	}
}

func caseArgmax(f *fixture) {
	for _, s := range []struct{ rows, cols int }{{50, 9}, {20, 1}, {3, 100}, {0, 4}} {
		f.run(fmt.Sprintf("%dx%d", s.rows, s.cols), func(f *fixture) {
			m := f.rand(s.rows, s.cols)
			dst := make([]int32, s.rows+2)
			dst[s.rows], dst[s.rows+1] = -7, -7
			f.b.Argmax(dst, f.up(m))
			want := refArgmax(m)
			for r := range want {
				if dst[r] != want[r] {
					f.t.Errorf("row %d: argmax %d, want %d", r, dst[r], want[r])
				}
			}
			if dst[s.rows] != -7 || dst[s.rows+1] != -7 {
				f.t.Errorf("Argmax wrote past row %d: %v", s.rows, dst[s.rows:])
			}
		})
	}
}

func caseAdam(f *fixture) {
	steps := []struct {
		name string
		o    AdamStep
	}{
		{"defaults", AdamStep{LR: 0.01, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}},
		{"weight decay", AdamStep{LR: 0.01, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 5e-4}},
		{"large decay, short memory", AdamStep{LR: 0.1, Beta1: 0.5, Beta2: 0.9, Eps: 1e-6, WeightDecay: 0.1}},
	}
	for _, st := range steps {
		f.run(st.name, func(f *fixture) {
			const rows, cols = 30, 17
			p, m, v := f.rand(rows, cols), newDmat(rows, cols), newDmat(rows, cols)
			pm, mm, vm := f.up(p), f.up(m), f.up(v)
			for t := 1; t <= 6; t++ {
				g := f.rand(rows, cols)
				o := st.o
				o.T = t
				f.b.Adam(pm, f.up(g), mm, vm, o)
				refAdam(p, g, m, v, o)
				f.near(fmt.Sprintf("step %d p", t), pm, p, 1e-5)
				f.near(fmt.Sprintf("step %d m", t), mm, m, refTol)
				f.near(fmt.Sprintf("step %d v", t), vm, v, refTol)
				// Continue from the backend's state, as training does.
				p, m, v = f.get(pm), f.get(mm), f.get(vm)
			}
		})
	}
}

func caseStorage(f *fixture) {
	b := f.b
	f.run("NewMat is zeroed", func(f *fixture) {
		m := b.NewMat(7, 5)
		if m.Rows != 7 || m.Cols != 5 || m.Len() != 35 || !m.Contiguous() {
			f.t.Errorf("NewMat(7, 5) is %dx%d stride %d", m.Rows, m.Cols, m.Stride)
		}
		assertSame(f.t, "NewMat", f.get(m), newDmat(7, 5))
	})
	f.run("Upload and Download round trip", func(f *fixture) {
		x := f.rand(6, 9)
		m := b.NewMat(2, 3)
		b.Upload(m, 6, 9, x.f32())
		if m.Rows != 6 || m.Cols != 9 {
			f.t.Fatalf("Upload left %dx%d, want 6x9", m.Rows, m.Cols)
		}
		assertSame(f.t, "Download", f.get(m), x)
		// Download leaves dst past Len alone.
		dst := make([]float32, 60)
		for i := range dst {
			dst[i] = -3
		}
		b.Download(dst, m)
		for i := 54; i < 60; i++ {
			if dst[i] != -3 {
				f.t.Fatalf("Download wrote dst[%d] = %g past Len 54", i, dst[i])
			}
		}
		// Smaller, then larger again.
		y := f.rand(2, 4)
		b.Upload(m, 2, 4, y.f32())
		assertSame(f.t, "after smaller Upload", f.get(m), y)
		z := f.rand(30, 20)
		b.Upload(m, 30, 20, z.f32())
		assertSame(f.t, "after larger Upload", f.get(m), z)
	})
	f.run("Resize", func(f *fixture) {
		m := b.NewMat(4, 4)
		for _, s := range []struct{ rows, cols int }{{2, 3}, {10, 10}, {0, 5}, {3, 0}, {5, 7}} {
			b.Resize(m, s.rows, s.cols)
			if m.Rows != s.rows || m.Cols != s.cols || !m.Contiguous() {
				f.t.Errorf("Resize(%d, %d) left %dx%d stride %d", s.rows, s.cols, m.Rows, m.Cols, m.Stride)
			}
			x := f.rand(s.rows, s.cols)
			b.Upload(m, s.rows, s.cols, x.f32())
			assertSame(f.t, fmt.Sprintf("%dx%d after Resize", s.rows, s.cols), f.get(m), x)
		}
	})
	f.run("Wrap", func(f *fixture) {
		x := f.rand(5, 3)
		m := b.Wrap(5, 3, x.f32())
		if m.Rows != 5 || m.Cols != 3 {
			f.t.Errorf("Wrap(5, 3) is %dx%d", m.Rows, m.Cols)
		}
		assertSame(f.t, "Wrap", f.get(m), x)
	})
	f.run("Zero", func(f *fixture) {
		for _, s := range []struct{ rows, cols int }{{1, 1}, {7, 9}, {300, 70}, {0, 4}} {
			m := f.up(f.rand(s.rows, s.cols))
			b.Zero(m)
			assertSame(f.t, fmt.Sprintf("%dx%d after Zero", s.rows, s.cols), f.get(m), newDmat(s.rows, s.cols))
		}
	})
	f.run("Copy", func(f *fixture) {
		for _, s := range []struct{ rows, cols int }{{1, 1}, {7, 9}, {300, 70}, {0, 4}} {
			x := f.rand(s.rows, s.cols)
			dst := f.up(nanDmat(s.rows, s.cols))
			b.Copy(dst, f.up(x))
			assertSame(f.t, fmt.Sprintf("%dx%d Copy", s.rows, s.cols), f.get(dst), x)
		}
	})
	f.run("views read and write their parent", func(f *fixture) {
		x := f.rand(8, 10)
		m := f.up(x)
		cases := []struct {
			name           string
			view           *Mat
			r0, r1, c0, c1 int
		}{
			{"ColSlice", m.ColSlice(3, 7), 0, 8, 3, 7},
			{"RowSlice", m.RowSlice(2, 5), 2, 5, 0, 10},
			{"RowSlice of ColSlice", m.ColSlice(1, 9).RowSlice(4, 8), 4, 8, 1, 9},
			{"ColSlice of RowSlice", m.RowSlice(1, 2).ColSlice(0, 10), 1, 2, 0, 10},
			{"one column", m.ColSlice(9, 10), 0, 8, 9, 10},
			{"no columns", m.ColSlice(4, 4), 0, 8, 4, 4},
			{"no rows", m.RowSlice(8, 8), 8, 8, 0, 10},
		}
		for _, c := range cases {
			if c.view.Rows != c.r1-c.r0 || c.view.Cols != c.c1-c.c0 {
				f.t.Errorf("%s is %dx%d, want %dx%d", c.name, c.view.Rows, c.view.Cols, c.r1-c.r0, c.c1-c.c0)
				continue
			}
			assertSame(f.t, c.name, f.get(c.view), x.rowSlice(c.r0, c.r1).colSlice(c.c0, c.c1))
		}
		// Writing through a view changes exactly those elements.
		y := f.rand(3, 4)
		b.Copy(m.RowSlice(2, 5).ColSlice(5, 9), f.up(y))
		b.Zero(m.ColSlice(0, 2).RowSlice(6, 8))
		want := x.clone()
		for r := range 3 {
			for c := range 4 {
				want.set(2+r, 5+c, y.at(r, c))
			}
		}
		for r := 6; r < 8; r++ {
			want.set(r, 0, 0)
			want.set(r, 1, 0)
		}
		assertSame(f.t, "parent after writes through views", f.get(m), want)
	})
	f.run("views of a matrix without rows", func(f *fixture) {
		m := b.NewMat(0, 6)
		v := m.ColSlice(2, 5)
		if v.Rows != 0 || v.Cols != 3 || v.Len() != 0 {
			f.t.Errorf("ColSlice(2, 5) of 0x6 is %dx%d", v.Rows, v.Cols)
		}
		b.Zero(v)
		if w := m.RowSlice(0, 0).ColSlice(6, 6); w.Len() != 0 {
			f.t.Errorf("RowSlice(0, 0).ColSlice(6, 6) of 0x6 is %dx%d", w.Rows, w.Cols)
		}
	})
	f.run("bad slices panic", func(f *fixture) {
		m := b.NewMat(4, 5)
		for _, c := range []struct {
			name string
			fn   func()
		}{
			{"ColSlice past the end", func() { m.ColSlice(2, 6) }},
			{"ColSlice reversed", func() { m.ColSlice(3, 2) }},
			{"ColSlice negative", func() { m.ColSlice(-1, 2) }},
			{"RowSlice past the end", func() { m.RowSlice(0, 5) }},
			{"RowSlice reversed", func() { m.RowSlice(3, 1) }},
		} {
			func() {
				defer func() {
					if recover() == nil {
						f.t.Errorf("%s did not panic", c.name)
					}
				}()
				c.fn()
			}()
		}
	})
}

// caseActDropout checks the fused activation and dropout against Act then
// Dropout, and its backward, which reads only the output, against
// DropoutBackward then ActBackward.
func caseActDropout(f *fixture) {
	const rows, cols = 60, 70
	acts := []Activation{{Kind: Identity}, {Kind: ReLU}, {Kind: LeakyReLU, Slope: 0.2}, {Kind: ELU, Slope: 1}}
	for _, act := range acts {
		for _, p := range []float32{0, 0.5, 1} {
			f.run(fmt.Sprintf("%s p=%g", act.Kind, p), func(f *fixture) {
				x := f.awayFromZero(rows, cols)
				const seed = 77
				a := f.whole(nanDmat(rows, cols))
				f.b.Act(act, a, f.whole(x))
				want := f.whole(nanDmat(rows, cols))
				f.b.Dropout(want, a, p, seed)
				y := f.up(nanDmat(rows, cols))
				f.b.ActDropout(act, y, f.up(x), p, seed)
				f.near("y", y, f.get(want), 1e-6)

				dy := f.awayFromZero(rows, cols)
				dd := f.whole(nanDmat(rows, cols))
				f.b.DropoutBackward(dd, f.whole(dy), p, seed)
				wantDx := f.whole(nanDmat(rows, cols))
				f.b.ActBackward(act, wantDx, dd, f.whole(x), a)
				dx := f.up(nanDmat(rows, cols))
				f.b.ActDropoutBackward(act, dx, f.up(dy), y, p, seed)
				f.near("dx", dx, f.get(wantDx), 1e-5)
			})
		}
	}
}
