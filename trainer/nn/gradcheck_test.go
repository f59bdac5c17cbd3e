package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gnnplan/gnnplan/kernels"
)

// The gradient checks compare each layer's float32 forward with a float64
// reference written from the papers' formulas, then the float32 backward
// with central finite differences of the float64 reference, for every
// parameter element and every input element.

func cpuBackend(t testing.TB, threads int) kernels.Backend {
	t.Helper()
	b, err := kernels.NewCPU(kernels.CPUOptions{Threads: threads})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// testBlock is a random block with sampler semantics: nd destinations
// that are the first nd of ns sources; some destinations have no
// neighbours, some list themselves (a self-loop in the graph), some list
// a source twice.
type testBlock struct {
	nd, ns   int
	off, idx []int32
	src, deg []int32 // vertex ids of sources; degree by vertex id
}

func newTestBlock(r *rand.Rand, nd, ns int) testBlock {
	tb := testBlock{nd: nd, ns: ns, off: make([]int32, nd+1)}
	for i := range nd {
		k := r.IntN(5)
		if i == 1 {
			k = 0
		}
		for range k {
			tb.idx = append(tb.idx, int32(r.IntN(ns)))
		}
		if i == 2 {
			tb.idx = append(tb.idx, int32(i), int32(ns-1), int32(ns-1))
		}
		tb.off[i+1] = int32(len(tb.idx))
	}
	// Vertex ids are a shuffled range; global degrees at least the
	// sampled count (some destinations sampled fewer than they have).
	tb.src = make([]int32, ns)
	for i, p := range r.Perm(ns) {
		tb.src[i] = int32(p + 100)
	}
	tb.deg = make([]int32, ns+100)
	for i := range ns {
		tb.deg[tb.src[i]] = int32(r.IntN(6))
	}
	for i := range nd {
		k := int32(0)
		for _, u := range tb.idx[tb.off[i]:tb.off[i+1]] {
			if int(u) != i {
				k++
			}
		}
		tb.deg[tb.src[i]] = k + int32(r.IntN(2))*3
	}
	return tb
}

func (tb testBlock) block(b kernels.Backend, kind Kind) *Block {
	return NewBlock(b, tb.off, tb.idx, tb.src, tb.deg, Forms(kind))
}

// selfEdges returns, per destination, the sources of the Self form and
// GCN's weight of each, computed from the definition.
func (tb testBlock) selfEdges() (srcs [][]int, w [][]float64) {
	srcs = make([][]int, tb.nd)
	w = make([][]float64, tb.nd)
	for i := range tb.nd {
		di := float64(tb.deg[tb.src[i]])
		srcs[i] = []int{i}
		w[i] = []float64{1 / (di + 1)}
		var nb []int
		for _, u := range tb.idx[tb.off[i]:tb.off[i+1]] {
			if int(u) != i {
				nb = append(nb, int(u))
			}
		}
		scale := 1.0
		if len(nb) > 0 && float64(len(nb)) < di {
			scale = di / float64(len(nb))
		}
		for _, u := range nb {
			srcs[i] = append(srcs[i], u)
			w[i] = append(w[i], scale/math.Sqrt((di+1)*(float64(tb.deg[tb.src[u]])+1)))
		}
	}
	return srcs, w
}

type mat64 struct {
	r, c int
	v    []float64
}

func (m mat64) at(i, j int) float64 { return m.v[i*m.c+j] }

func newMat64(r, c int) mat64 { return mat64{r, c, make([]float64, r*c)} }

func randMat64(r *rand.Rand, rows, cols int) mat64 {
	m := newMat64(rows, cols)
	for i := range m.v {
		m.v[i] = r.Float64()*2 - 1
	}
	return m
}

func toMat(b kernels.Backend, m mat64) *kernels.Mat {
	v := make([]float32, len(m.v))
	for i, x := range m.v {
		v[i] = float32(x)
	}
	out := b.NewMat(0, 0)
	b.Upload(out, m.r, m.c, v)
	return out
}

func fromMat(b kernels.Backend, m *kernels.Mat) mat64 {
	v := make([]float32, m.Len())
	b.Download(v, m)
	out := newMat64(m.Rows, m.Cols)
	for i, x := range v {
		out.v[i] = float64(x)
	}
	return out
}

// refLayer computes a layer's output from float64 parameters (in the
// order of the layer's params()) and input.
type refLayer func(params []mat64, x mat64) mat64

func refSAGE(tb testBlock, in, out int) refLayer {
	return func(p []mat64, x mat64) mat64 {
		w, bias := p[0], p[1]
		y := newMat64(tb.nd, out)
		for i := range tb.nd {
			nb := tb.idx[tb.off[i]:tb.off[i+1]]
			for o := range out {
				s := bias.v[o]
				for f := range in {
					s += x.at(i, f) * w.at(f, o)
					if len(nb) > 0 {
						var m float64
						for _, u := range nb {
							m += x.at(int(u), f)
						}
						s += m / float64(len(nb)) * w.at(in+f, o)
					}
				}
				y.v[i*out+o] = s
			}
		}
		return y
	}
}

func refGCN(tb testBlock, in, out int) refLayer {
	srcs, wts := tb.selfEdges()
	return func(p []mat64, x mat64) mat64 {
		w, bias := p[0], p[1]
		y := newMat64(tb.nd, out)
		for i := range tb.nd {
			for o := range out {
				s := bias.v[o]
				for k, u := range srcs[i] {
					for f := range in {
						s += wts[i][k] * x.at(u, f) * w.at(f, o)
					}
				}
				y.v[i*out+o] = s
			}
		}
		return y
	}
}

// refGAT follows Velickovic et al. eq. 3-6 per head, with DGL's
// attention dropout given as a per-edge, per-head multiplier (mask, in
// the Self form's edge order; nil for none).
func refGAT(tb testBlock, in, heads, out int, slope float64, mask mat64, meanHeads bool) refLayer {
	srcs, _ := tb.selfEdges()
	return func(p []mat64, x mat64) mat64 {
		w, al, ar, bias := p[0], p[1], p[2], p[3]
		hf := heads * out
		z := newMat64(tb.ns, hf)
		for u := range tb.ns {
			for c := range hf {
				for f := range in {
					z.v[u*hf+c] += x.at(u, f) * w.at(f, c)
				}
			}
		}
		y := newMat64(tb.nd, hf)
		e := 0
		for i := range tb.nd {
			for h := range heads {
				score := make([]float64, len(srcs[i]))
				mx := math.Inf(-1)
				for k, u := range srcs[i] {
					var s float64
					for f := range out {
						s += al.v[h*out+f]*z.at(u, h*out+f) + ar.v[h*out+f]*z.at(i, h*out+f)
					}
					if s < 0 {
						s *= slope
					}
					score[k] = s
					mx = max(mx, s)
				}
				var sum float64
				for k := range score {
					score[k] = math.Exp(score[k] - mx)
					sum += score[k]
				}
				for k, u := range srcs[i] {
					a := score[k] / sum
					if mask.v != nil {
						a *= mask.at(e+k, h)
					}
					for f := range out {
						y.v[i*hf+h*out+f] += a * z.at(u, h*out+f)
					}
				}
			}
			e += len(srcs[i])
		}
		for i := range tb.nd {
			for c := range hf {
				y.v[i*hf+c] += bias.v[c]
			}
		}
		if !meanHeads {
			return y
		}
		ym := newMat64(tb.nd, out)
		for i := range tb.nd {
			for h := range heads {
				for f := range out {
					ym.v[i*out+f] += y.at(i, h*out+f) / float64(heads)
				}
			}
		}
		return ym
	}
}

// weightedSum returns sum(y .* r): a loss whose gradient is r.
func weightedSum(y, r mat64) float64 {
	var s float64
	for i := range y.v {
		s += y.v[i] * r.v[i]
	}
	return s
}

// checkClose fails when analytic and numeric gradients differ by more
// than float32 arithmetic explains.
func checkClose(t *testing.T, what string, analytic, numeric mat64) {
	t.Helper()
	worst, at := 0.0, -1
	for i := range numeric.v {
		d := math.Abs(analytic.v[i]-numeric.v[i]) / (1e-3 + math.Abs(numeric.v[i]))
		if d > worst {
			worst, at = d, i
		}
	}
	if worst > 2e-3 {
		t.Errorf("%s: element %d analytic %.7g, finite difference %.7g (relative error %.2g)", what, at, analytic.v[at], numeric.v[at], worst)
	}
}

// finiteDiff returns d f / d m.v[k] for every k by central differences.
func finiteDiff(m mat64, f func() float64) mat64 {
	const h = 1e-5
	g := newMat64(m.r, m.c)
	for k := range m.v {
		old := m.v[k]
		m.v[k] = old + h
		up := f()
		m.v[k] = old - h
		down := f()
		m.v[k] = old
		g.v[k] = (up - down) / (2 * h)
	}
	return g
}

func TestLayerGradients(t *testing.T) {
	type tc struct {
		name      string
		kind      Kind
		in, out   int
		heads     int
		attnDrop  float32
		meanHeads bool
		order     int // GraphSAGE and GCN: 1 transforms first, -1 aggregates first, 0 decides
	}
	cases := []tc{
		{"graphsage aggregates first when the output is wider", GraphSAGE, 5, 7, 0, 0, false, 0},
		{"graphsage transforms first", GraphSAGE, 9, 3, 0, 0, false, 1},
		{"graphsage aggregates first though the input is wider", GraphSAGE, 9, 3, 0, 0, false, -1},
		{"gcn aggregates first when the output is wider", GCN, 4, 6, 0, 0, false, 0},
		{"gcn transforms first", GCN, 8, 3, 0, 0, false, 1},
		{"gcn aggregates first though the input is wider", GCN, 8, 3, 0, 0, false, -1},
		{"gat hidden layer concatenates heads", GAT, 6, 3, 4, 0, false, 0},
		{"gat output layer averages heads", GAT, 5, 3, 2, 0, true, 0},
		{"gat with attention dropout", GAT, 5, 2, 3, 0.4, false, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(7, uint64(len(c.name))))
			b := cpuBackend(t, 2)
			tb := newTestBlock(r, 6, 14)
			blk := tb.block(b, c.kind)
			var ly layer
			var ref refLayer
			switch c.kind {
			case GraphSAGE:
				l := newSAGE(b, r, "l", c.in, c.out)
				l.order = c.order
				ly, ref = l, refSAGE(tb, c.in, c.out)
			case GCN:
				l := newGCN(b, r, "l", c.in, c.out)
				l.order = c.order
				ly, ref = l, refGCN(tb, c.in, c.out)
			case GAT:
				ly = newGAT(b, r, "l", c.in, c.heads, c.out, 0.2, c.attnDrop, c.meanHeads)
			}
			params := make([]mat64, len(ly.params()))
			for i, p := range ly.params() {
				// Random biases too, so their paths are exercised.
				params[i] = randMat64(r, p.W.Rows, p.W.Cols)
				b.Upload(p.W, p.W.Rows, p.W.Cols, toHost32(params[i]))
			}
			x := randMat64(r, tb.ns, c.in)
			const seed = 99
			y32 := fromMat(b, ly.forward(blk, toMat(b, x), true, seed))
			if c.kind == GAT {
				var mask mat64
				if c.attnDrop > 0 {
					ones := b.NewMat(blk.Self.NumEdges, c.heads)
					b.Upload(ones, ones.Rows, ones.Cols, onesOf(ones.Len()))
					b.Dropout(ones, ones, c.attnDrop, seed)
					mask = fromMat(b, ones)
				}
				ref = refGAT(tb, c.in, c.heads, c.out, 0.2, mask, c.meanHeads)
			}
			y64 := ref(params, x)
			checkClose(t, "forward", y32, y64)

			rw := randMat64(r, y64.r, y64.c)
			dx := fromMat(b, ly.backward(toMat(b, rw), true))
			loss := func() float64 { return weightedSum(ref(params, x), rw) }
			for i, p := range ly.params() {
				checkClose(t, p.Name, fromMat(b, p.G), finiteDiff(params[i], loss))
			}
			checkClose(t, "input", dx, finiteDiff(x, loss))
		})
	}
}

func toHost32(m mat64) []float32 {
	v := make([]float32, len(m.v))
	for i, x := range m.v {
		v[i] = float32(x)
	}
	return v
}

func onesOf(n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = 1
	}
	return v
}

// TestModelGradients checks a two-layer model end to end, dropout and
// activations included, through softmax cross-entropy (the loss the
// trainer minimises), against the composition of the float64 references.
func TestModelGradients(t *testing.T) {
	for _, kind := range Kinds() {
		t.Run(string(kind), func(t *testing.T) {
			r := rand.New(rand.NewPCG(11, uint64(len(kind))))
			b := cpuBackend(t, 2)
			// Inner block: 4 seeds among 8 sources; outer: those 8
			// among 15.
			outer := newTestBlock(r, 8, 15)
			inner := newTestBlock(r, 4, 8)
			inner.src = outer.src[:8]
			inner.deg = outer.deg
			cfg := Config{Kind: kind, InDim: 6, Classes: 3, Layers: 2, Hidden: 5, Heads: 2, OutHeads: 2, InputDropout: 0.35, Dropout: 0.3, AttnDropout: 0.25, Slope: 0.2}
			m, err := New(b, cfg, 5)
			if err != nil {
				t.Fatal(err)
			}
			blocks := []*Block{inner.block(b, kind), outer.block(b, kind)}
			params := make([]mat64, len(m.Params()))
			for i, p := range m.Params() {
				params[i] = randMat64(r, p.W.Rows, p.W.Cols)
				b.Upload(p.W, p.W.Rows, p.W.Cols, toHost32(params[i]))
			}
			x := randMat64(r, outer.ns, cfg.InDim)
			labels := []int32{2, -1, 0, 1}
			const seed = 1234
			logits := m.Forward(blocks, toMat(b, x), true, seed)
			dl := b.NewMat(logits.Rows, logits.Cols)
			loss32, _ := b.SoftmaxCrossEntropy(dl, logits, b.NewIndex(labels), 1.0/3)
			m.Backward(dl)

			// The masks the model drew, read back by dropping ones.
			maskOf := func(rows, cols int, p float32, s uint64) mat64 {
				ones := b.NewMat(rows, cols)
				b.Upload(ones, rows, cols, onesOf(rows*cols))
				b.Dropout(ones, ones, p, s)
				return fromMat(b, ones)
			}
			drop0 := maskOf(outer.ns, cfg.InDim, cfg.InputDropout, m.seeds[0])
			hiddenCols := cfg.Hidden
			if kind == GAT {
				hiddenCols *= cfg.Heads
			}
			drop1 := maskOf(inner.ns, hiddenCols, cfg.Dropout, m.seeds[2])
			var ref0, ref1 refLayer
			n0 := len(m.layers[0].params())
			switch kind {
			case GraphSAGE:
				ref0, ref1 = refSAGE(outer, 6, 5), refSAGE(inner, 5, 3)
			case GCN:
				ref0, ref1 = refGCN(outer, 6, 5), refGCN(inner, 5, 3)
			case GAT:
				ref0 = refGAT(outer, 6, 2, 5, 0.2, maskOf(blocks[1].Self.NumEdges, 2, cfg.AttnDropout, m.seeds[1]), false)
				ref1 = refGAT(inner, 10, 2, 3, 0.2, maskOf(blocks[0].Self.NumEdges, 2, cfg.AttnDropout, m.seeds[3]), true)
			}
			loss := func() float64 {
				h := newMat64(x.r, x.c)
				for i := range h.v {
					h.v[i] = x.v[i] * drop0.v[i]
				}
				h = ref0(params[:n0], h)
				for i, v := range h.v {
					if kind == GAT {
						if v < 0 {
							v = math.Expm1(v)
						}
					} else {
						v = max(v, 0)
					}
					h.v[i] = v * drop1.v[i]
				}
				z := ref1(params[n0:], h)
				var l float64
				for i, lab := range labels {
					if lab < 0 {
						continue
					}
					mx := math.Inf(-1)
					for j := range z.c {
						mx = max(mx, z.at(i, j))
					}
					var s float64
					for j := range z.c {
						s += math.Exp(z.at(i, j) - mx)
					}
					l += mx + math.Log(s) - z.at(i, int(lab))
				}
				return l / 3
			}
			if d := math.Abs(loss32/3 - loss()); d > 1e-4 {
				t.Errorf("loss %.7g, reference %.7g", loss32/3, loss())
			}
			for i, p := range m.Params() {
				checkClose(t, fmt.Sprintf("%s %s", kind, p.Name), fromMat(b, p.G), finiteDiff(params[i], loss))
			}
		})
	}
}

// TestTransformFirst: a layer transforms its sources first only where
// that costs less on the block: on a whole graph whenever its input is
// wider (as DGL), on a sampled block with many more sources than
// destinations not even then, and never when its output is wider.
func TestTransformFirst(t *testing.T) {
	cases := []struct {
		name                         string
		in, out, tfRows, afRows, edg int
		want                         bool
	}{
		// GCN on Cora, full graph: sources are the destinations.
		{"gcn, whole graph, 1433 into 16", 1433, 16, 2708, 2708, 13264, true},
		{"gcn, whole graph, 16 into 7", 16, 7, 2708, 2708, 13264, true},
		{"graphsage, whole graph, 1433 into 16", 1433, 16, 2 * 2708, 2 * 2708, 10556, true},
		// The 4 KiB rows' first layer: 11k destinations of 96k sources.
		{"graphsage, sampled, 1024 into 256", 1024, 256, 96_000 + 11_000, 2 * 11_000, 275_000, false},
		{"gcn, sampled, 1024 into 256", 1024, 256, 96_000, 11_000, 286_000, false},
		// A sampled block a little wider at its sources still transforms
		// first when the output is much narrower.
		{"graphsage, sampled, 1024 into 16", 1024, 16, 12_000 + 11_000, 2 * 11_000, 275_000, true},
		{"output wider", 128, 256, 58_000 + 25_000, 2 * 25_000, 250_000, false},
		{"equal widths, whole graph: a tie aggregates first", 64, 64, 1000, 1000, 5000, false},
	}
	for _, c := range cases {
		if got := transformFirst(c.in, c.out, c.tfRows, c.afRows, c.edg); got != c.want {
			t.Errorf("%s: transformFirst = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestInputBlockMatchesGather checks that a model reading the features in
// place (an input block) computes bitwise what it computes on gathered
// rows, gradients included.
func TestInputBlockMatchesGather(t *testing.T) {
	for _, kind := range []Kind{GraphSAGE, GCN, GAT} {
		t.Run(string(kind), func(t *testing.T) {
			r := rand.New(rand.NewPCG(3, uint64(len(kind))))
			b := cpuBackend(t, 2)
			outer := newTestBlock(r, 8, 15)
			inner := newTestBlock(r, 4, 8)
			inner.src = outer.src[:8]
			inner.deg = outer.deg
			numNodes := len(outer.deg)
			cfg := Config{Kind: kind, InDim: 4, Classes: 3, Layers: 2, Hidden: 6, Heads: 2, OutHeads: 1, Dropout: 0.3, Slope: 0.2}
			feat := randMat64(r, numNodes, cfg.InDim)
			gathered := newMat64(outer.ns, cfg.InDim)
			for i, v := range outer.src {
				copy(gathered.v[i*cfg.InDim:(i+1)*cfg.InDim], feat.v[int(v)*cfg.InDim:(int(v)+1)*cfg.InDim])
			}
			run := func(inPlace bool) (mat64, []mat64) {
				m, err := New(b, cfg, 9)
				if err != nil {
					t.Fatal(err)
				}
				if !m.ReadsFeaturesInPlace(true) {
					t.Fatalf("ReadsFeaturesInPlace = false for %s without input dropout", kind)
				}
				forms := Forms(kind)
				blocks := []*Block{NewBlock(b, inner.off, inner.idx, inner.src, inner.deg, forms), nil}
				x := toMat(b, gathered)
				if inPlace {
					blocks[1] = NewInputBlock(b, outer.off, outer.idx, outer.src, outer.deg, numNodes, forms)
					x = toMat(b, feat)
				} else {
					blocks[1] = NewBlock(b, outer.off, outer.idx, outer.src, outer.deg, forms)
				}
				logits := m.Forward(blocks, x, true, 17)
				out := fromMat(b, logits)
				dl := b.NewMat(logits.Rows, logits.Cols)
				b.SoftmaxCrossEntropy(dl, logits, b.NewIndex([]int32{0, 1, 2, 1}), 0.25)
				m.Backward(dl)
				var grads []mat64
				for _, p := range m.Params() {
					grads = append(grads, fromMat(b, p.G))
				}
				return out, grads
			}
			if kind == GAT {
				m, _ := New(b, cfg, 9)
				if m.ReadsFeaturesInPlace(false) {
					t.Fatal("GAT transforms every source first: it cannot read the features in place")
				}
				return
			}
			y1, g1 := run(false)
			y2, g2 := run(true)
			if !slices.Equal(y1.v, y2.v) {
				t.Fatal("in-place forward differs from the gathered one")
			}
			for i := range g1 {
				if !slices.Equal(g1[i].v, g2[i].v) {
					t.Fatalf("gradient %d differs between in-place and gathered inputs", i)
				}
			}
		})
	}
}
