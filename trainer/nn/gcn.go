package nn

import (
	"math/rand/v2"

	"github.com/gnnplan/gnnplan/kernels"
)

// gcn is DGL's GraphConv with norm "both" on a graph with self-loops:
// y_i = W^T sum_{u in N(i) + i} x_u / sqrt((d_i+1)(d_u+1)) + b (see the
// package comment for sampled blocks). It multiplies the sources by W
// before aggregating them where that costs less on the block
// (transformFirst), as DGL does on whole graphs.
type gcn struct {
	b       kernels.Backend
	in, out int
	// order forces the order (1: transform first, -1: aggregate first;
	// tests); 0 decides per block.
	order   int
	tf      bool // the current block's order, forward's for backward
	w, bias *Param

	g          *Block
	x          *kernels.Mat
	a          *kernels.Mat // aggregated input (aggregate first)
	p          *kernels.Mat // x W (transform first)
	y          *kernels.Mat
	da, dp, dx *kernels.Mat
}

func newGCN(b kernels.Backend, r *rand.Rand, name string, in, out int) *gcn {
	return &gcn{b: b, in: in, out: out,
		w:    newParam(b, name+".weight", in, out, glorotUniform(r, in*out, in, out, 1)),
		bias: newParam(b, name+".bias", 1, out, nil),
		a:    b.NewMat(0, 0), p: b.NewMat(0, 0), y: b.NewMat(0, 0),
		da: b.NewMat(0, 0), dp: b.NewMat(0, 0), dx: b.NewMat(0, 0)}
}

func (l *gcn) params() []*Param { return []*Param{l.w, l.bias} }

// transformFirst reports whether the layer transforms first on g (see
// sage.transformFirst): the product covers the sources that way, the
// destinations the other.
func (l *gcn) transformFirst(g *Block) bool {
	if g.DstRows != nil || l.order != 0 {
		return forcedOrder("GCN", g, l.order)
	}
	return transformFirst(l.in, l.out, g.NumSrc, g.NumDst, g.Self.NumEdges)
}

func (l *gcn) forward(g *Block, x *kernels.Mat, _ bool, _ uint64) *kernels.Mat {
	b := l.b
	l.g, l.x = g, x
	b.Resize(l.y, g.NumDst, l.out)
	l.tf = l.transformFirst(g)
	if l.tf {
		b.Resize(l.p, g.NumSrc, l.out)
		b.Gemm(false, false, 1, x, l.w.W, 0, l.p)
		b.WeightedSum(l.y, l.p, g.GCNWeight, g.Self)
	} else {
		b.Resize(l.a, g.NumDst, l.in)
		b.WeightedSum(l.a, x, g.GCNWeight, g.Self)
		b.Gemm(false, false, 1, l.a, l.w.W, 0, l.y)
	}
	b.AddBias(l.y, l.bias.W)
	return l.y
}

func (l *gcn) backward(dy *kernels.Mat, needInput bool) *kernels.Mat {
	b, g := l.b, l.g
	b.SumRows(l.bias.G, dy, 0)
	if l.tf {
		b.Resize(l.dp, g.NumSrc, l.out)
		b.Zero(l.dp)
		b.WeightedSumBackward(l.dp, dy, g.GCNWeight, g.Self)
		b.Gemm(true, false, 1, l.x, l.dp, 0, l.w.G)
		if !needInput {
			return nil
		}
		b.Resize(l.dx, g.NumSrc, l.in)
		b.Gemm(false, true, 1, l.dp, l.w.W, 0, l.dx)
		return l.dx
	}
	b.Gemm(true, false, 1, l.a, dy, 0, l.w.G)
	if !needInput {
		return nil
	}
	b.Resize(l.da, g.NumDst, l.in)
	b.Gemm(false, true, 1, dy, l.w.W, 0, l.da)
	b.Resize(l.dx, g.NumSrc, l.in)
	b.Zero(l.dx)
	b.WeightedSumBackward(l.dx, l.da, g.GCNWeight, g.Self)
	return l.dx
}
