package kernels

import (
	"fmt"
	"math"
)

// cpuTranspose is a CSR by source: the edges leaving source u are
// edge[start[u]:start[u+1]] (ascending edge ids), and dst[k] is the
// destination of edge edge[k].
type cpuTranspose struct {
	start, edge, dst []int32
}

// transpose returns g's transposed form, building it on first use with a
// stable counting sort, so each source lists its edges in edge order and
// the backward sums run in an order fixed by g alone.
func (c *CPU) transpose(g *CSR) *cpuTranspose {
	if t, ok := g.t.(*cpuTranspose); ok {
		return t
	}
	off, src := g.offsets.h, g.srcIdx.h
	t := &cpuTranspose{start: make([]int32, g.NumSrc+1), edge: make([]int32, g.NumEdges), dst: make([]int32, g.NumEdges)}
	for _, u := range src {
		t.start[u+1]++
	}
	for u := range g.NumSrc {
		t.start[u+1] += t.start[u]
	}
	fill := append([]int32(nil), t.start[:g.NumSrc]...)
	for i := range g.NumDst {
		for j := off[i]; j < off[i+1]; j++ {
			u := src[j]
			k := fill[u]
			t.edge[k], t.dst[k] = j, int32(i)
			fill[u]++
		}
	}
	g.t = t
	return t
}

func checkCSR(op string, g *CSR, dstRows, srcRows int) {
	if dstRows != g.NumDst || srcRows != g.NumSrc {
		panic(fmt.Sprintf("kernels: %s over a block of %d destinations and %d sources with %d and %d rows", op, g.NumDst, g.NumSrc, dstRows, srcRows))
	}
}

// overDst runs fn for every destination in parallel, in chunks sized by
// the edges and columns they touch.
func (c *CPU) overDst(g *CSR, cols int, fn func(i int, edges []int32, first int32)) {
	off, src := g.offsets.h, g.srcIdx.h
	per := max(1, cols*(1+g.NumEdges/max(g.NumDst, 1)))
	c.parallel(g.NumDst, grainElems/per, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			fn(i, src[off[i]:off[i+1]], off[i])
		}
	})
}

// overSrc is overDst for the transposed block: fn gets source u's edge
// ids and their destinations.
func (c *CPU) overSrc(g *CSR, cols int, fn func(u int, edges, dsts []int32)) {
	t := c.transpose(g)
	per := max(1, cols*(1+g.NumEdges/max(g.NumSrc, 1)))
	c.parallel(g.NumSrc, grainElems/per, func(lo, hi int) {
		for u := lo; u < hi; u++ {
			a, b := t.start[u], t.start[u+1]
			fn(u, t.edge[a:b], t.dst[a:b])
		}
	})
}

// prefetchNext asks for the source rows of destination i+1 while i sums
// its own: they are scattered rows, each a cache miss otherwise.
func prefetchNext(g *CSR, x *Mat, i int) {
	if i+1 >= g.NumDst {
		return
	}
	off, idx := g.offsets.h, g.srcIdx.h
	for _, u := range idx[off[i+1]:off[i+2]] {
		prefetchRow(x.row(int(u)))
	}
}

// SegmentMean implements Backend.
func (c *CPU) SegmentMean(out, x *Mat, g *CSR) {
	checkCSR("SegmentMean", g, out.Rows, x.Rows)
	if out.Cols != x.Cols {
		panic(fmt.Sprintf("kernels: SegmentMean of %d columns into %d", x.Cols, out.Cols))
	}
	c.overDst(g, out.Cols, func(i int, srcs []int32, _ int32) {
		prefetchNext(g, x, i)
		o := out.row(i)
		if len(srcs) == 0 {
			clear(o)
			return
		}
		copy(o, x.row(int(srcs[0])))
		rest := srcs[1:]
		// Four rows a pass: one load and store of o per four rows read.
		for ; len(rest) >= 4; rest = rest[4:] {
			add4To(o, x.row(int(rest[0])), x.row(int(rest[1])), x.row(int(rest[2])), x.row(int(rest[3])))
		}
		for _, u := range rest {
			addTo(o, x.row(int(u)))
		}
		inv := 1 / float32(len(srcs))
		for j := range o {
			o[j] *= inv
		}
	})
}

// SegmentMeanBackward implements Backend.
func (c *CPU) SegmentMeanBackward(dx, dout *Mat, g *CSR) {
	checkCSR("SegmentMeanBackward", g, dout.Rows, dx.Rows)
	off := g.offsets.h
	c.overSrc(g, dx.Cols, func(u int, _, dsts []int32) {
		d := dx.row(u)
		for _, i := range dsts {
			axpyTo(d, 1/float32(off[i+1]-off[i]), dout.row(int(i)))
		}
	})
}

// heads returns H and F for a matrix of H*F columns and per-edge values
// of H columns.
func heads(op string, cols, h int) int {
	if h < 1 || cols%h != 0 {
		panic(fmt.Sprintf("kernels: %s with %d columns over %d heads", op, cols, h))
	}
	return cols / h
}

// checkWeightedSum panics unless WeightedSum's operands fit g, and
// returns the columns per head.
func checkWeightedSum(out, x, w *Mat, g *CSR) int {
	checkCSR("WeightedSum", g, out.Rows, x.Rows)
	F := heads("WeightedSum", x.Cols, w.Cols)
	if out.Cols != x.Cols || w.Rows != g.NumEdges {
		panic(fmt.Sprintf("kernels: WeightedSum of %dx%d by %dx%d into %dx%d", x.Rows, x.Cols, w.Rows, w.Cols, out.Rows, out.Cols))
	}
	return F
}

// WeightedSum implements Backend.
func (c *CPU) WeightedSum(out, x, w *Mat, g *CSR) {
	F := checkWeightedSum(out, x, w, g)
	H := w.Cols
	c.overDst(g, out.Cols, func(i int, srcs []int32, first int32) {
		prefetchNext(g, x, i)
		o := out.row(i)
		clear(o)
		for k, u := range srcs {
			xr, wr := x.row(int(u)), w.row(int(first)+k)
			for h := range H {
				axpyTo(o[h*F:(h+1)*F], wr[h], xr[h*F:(h+1)*F])
			}
		}
	})
}

// WeightedSumBackward implements Backend.
func (c *CPU) WeightedSumBackward(dx, dout, w *Mat, g *CSR) {
	checkCSR("WeightedSumBackward", g, dout.Rows, dx.Rows)
	H := w.Cols
	F := heads("WeightedSumBackward", dx.Cols, H)
	c.overSrc(g, dx.Cols, func(u int, edges, dsts []int32) {
		d := dx.row(u)
		for k, j := range edges {
			dr, wr := dout.row(int(dsts[k])), w.row(int(j))
			for h := range H {
				axpyTo(d[h*F:(h+1)*F], wr[h], dr[h*F:(h+1)*F])
			}
		}
	})
}

// EdgeDot implements Backend.
func (c *CPU) EdgeDot(s, a, b *Mat, g *CSR) {
	checkCSR("EdgeDot", g, a.Rows, b.Rows)
	H := s.Cols
	F := heads("EdgeDot", a.Cols, H)
	if s.Rows != g.NumEdges || b.Cols != a.Cols {
		panic(fmt.Sprintf("kernels: EdgeDot of %dx%d and %dx%d into %dx%d", a.Rows, a.Cols, b.Rows, b.Cols, s.Rows, s.Cols))
	}
	c.overDst(g, a.Cols, func(i int, srcs []int32, first int32) {
		ar := a.row(i)
		for k, u := range srcs {
			br, sr := b.row(int(u)), s.row(int(first)+k)
			for h := range H {
				sr[h] = dot(ar[h*F:(h+1)*F], br[h*F:(h+1)*F])
			}
		}
	})
}

// HeadDot implements Backend.
func (c *CPU) HeadDot(out, x, a *Mat) {
	H := out.Cols
	F := heads("HeadDot", x.Cols, H)
	if out.Rows != x.Rows || a.Rows != 1 || a.Cols != x.Cols {
		panic(fmt.Sprintf("kernels: HeadDot of %dx%d with %dx%d into %dx%d", x.Rows, x.Cols, a.Rows, a.Cols, out.Rows, out.Cols))
	}
	av := a.row(0)
	c.rows(x.Rows, x.Cols, func(n int) {
		xr, or := x.row(n), out.row(n)
		for h := range H {
			or[h] = dot(xr[h*F:(h+1)*F], av[h*F:(h+1)*F])
		}
	})
}

// HeadDotBackward implements Backend.
func (c *CPU) HeadDotBackward(dx, da, dout, x, a *Mat) {
	H := dout.Cols
	F := heads("HeadDotBackward", x.Cols, H)
	av := a.row(0)
	if dx != nil {
		c.rows(x.Rows, x.Cols, func(n int) {
			dxr, dr := dx.row(n), dout.row(n)
			for h := range H {
				axpyTo(dxr[h*F:(h+1)*F], dr[h], av[h*F:(h+1)*F])
			}
		})
	}
	if da != nil {
		cols := x.Cols
		partial := make([]float32, ((x.Rows+reduceChunk-1)/reduceChunk)*cols)
		chunks := c.chunked(x.Rows, func(k, lo, hi int) {
			p := partial[k*cols : (k+1)*cols]
			for n := lo; n < hi; n++ {
				xr, dr := x.row(n), dout.row(n)
				for h := range H {
					axpyTo(p[h*F:(h+1)*F], dr[h], xr[h*F:(h+1)*F])
				}
			}
		})
		d := da.row(0)
		for k := range chunks {
			addTo(d, partial[k*cols:(k+1)*cols])
		}
	}
}

// EdgeAdd implements Backend.
func (c *CPU) EdgeAdd(s, el, er *Mat, g *CSR) {
	checkCSR("EdgeAdd", g, er.Rows, el.Rows)
	H := s.Cols
	if s.Rows != g.NumEdges || el.Cols != H || er.Cols != H {
		panic(fmt.Sprintf("kernels: EdgeAdd of %dx%d and %dx%d into %dx%d", el.Rows, el.Cols, er.Rows, er.Cols, s.Rows, s.Cols))
	}
	c.overDst(g, H, func(i int, srcs []int32, first int32) {
		rr := er.row(i)
		for k, u := range srcs {
			lr, sr := el.row(int(u)), s.row(int(first)+k)
			for h := range H {
				sr[h] = lr[h] + rr[h]
			}
		}
	})
}

// EdgeAddBackward implements Backend.
func (c *CPU) EdgeAddBackward(del, der, ds *Mat, g *CSR) {
	H := ds.Cols
	if der != nil {
		checkCSR("EdgeAddBackward", g, der.Rows, g.NumSrc)
		c.overDst(g, H, func(i int, srcs []int32, first int32) {
			d := der.row(i)
			for k := range srcs {
				addTo(d, ds.row(int(first)+k))
			}
		})
	}
	if del != nil {
		checkCSR("EdgeAddBackward", g, g.NumDst, del.Rows)
		c.overSrc(g, H, func(u int, edges, _ []int32) {
			d := del.row(u)
			for _, j := range edges {
				addTo(d, ds.row(int(j)))
			}
		})
	}
}

// EdgeSoftmax implements Backend.
func (c *CPU) EdgeSoftmax(a, e *Mat, g *CSR) {
	sameShape("EdgeSoftmax", a, e)
	if e.Rows != g.NumEdges {
		panic(fmt.Sprintf("kernels: EdgeSoftmax of %d edge rows over a block of %d edges", e.Rows, g.NumEdges))
	}
	H := e.Cols
	c.overDst(g, H, func(_ int, srcs []int32, first int32) {
		if len(srcs) == 0 {
			return
		}
		lo, hi := int(first), int(first)+len(srcs)
		for h := range H {
			mx := float32(math.Inf(-1))
			for j := lo; j < hi; j++ {
				mx = max(mx, e.h[j*e.Stride+h])
			}
			var sum float32
			for j := lo; j < hi; j++ {
				v := float32(math.Exp(float64(e.h[j*e.Stride+h] - mx)))
				a.h[j*a.Stride+h] = v
				sum += v
			}
			inv := 1 / sum
			for j := lo; j < hi; j++ {
				a.h[j*a.Stride+h] *= inv
			}
		}
	})
}

// EdgeSoftmaxBackward implements Backend.
func (c *CPU) EdgeSoftmaxBackward(de, da, a *Mat, g *CSR) {
	sameShape("EdgeSoftmaxBackward", de, da)
	sameShape("EdgeSoftmaxBackward", de, a)
	H := a.Cols
	c.overDst(g, H, func(_ int, srcs []int32, first int32) {
		lo, hi := int(first), int(first)+len(srcs)
		for h := range H {
			var s float32
			for j := lo; j < hi; j++ {
				s += a.h[j*a.Stride+h] * da.h[j*da.Stride+h]
			}
			for j := lo; j < hi; j++ {
				de.h[j*de.Stride+h] = a.h[j*a.Stride+h] * (da.h[j*da.Stride+h] - s)
			}
		}
	})
}

// HeadMean implements Backend.
func (c *CPU) HeadMean(out, x *Mat) {
	if out.Rows != x.Rows || out.Cols == 0 || x.Cols%out.Cols != 0 {
		panic(fmt.Sprintf("kernels: HeadMean of %dx%d into %dx%d", x.Rows, x.Cols, out.Rows, out.Cols))
	}
	F := out.Cols
	H := x.Cols / F
	inv := 1 / float32(H)
	c.rows(x.Rows, x.Cols, func(n int) {
		o, xr := out.row(n), x.row(n)
		copy(o, xr[:F])
		for h := 1; h < H; h++ {
			addTo(o, xr[h*F:(h+1)*F])
		}
		for j := range o {
			o[j] *= inv
		}
	})
}

// HeadMeanBackward implements Backend.
func (c *CPU) HeadMeanBackward(dx, dout *Mat) {
	if dout.Rows != dx.Rows || dout.Cols == 0 || dx.Cols%dout.Cols != 0 {
		panic(fmt.Sprintf("kernels: HeadMeanBackward of %dx%d into %dx%d", dout.Rows, dout.Cols, dx.Rows, dx.Cols))
	}
	F := dout.Cols
	H := dx.Cols / F
	inv := 1 / float32(H)
	c.rows(dx.Rows, dx.Cols, func(n int) {
		d, dr := dx.row(n), dout.row(n)
		for h := range H {
			for f, v := range dr {
				d[h*F+f] = v * inv
			}
		}
	})
}
