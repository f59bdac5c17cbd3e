package nn

import (
	"math/rand/v2"

	"github.com/gnnplan/gnnplan/kernels"
)

// sage is DGL's SAGEConv with the mean aggregator:
// y_i = W_self x_i + W_neigh mean_{u in N(i)} x_u + b. It transforms the
// sources before aggregating them (DGL's lin_before_mp) where that costs
// less on the block (transformFirst): the same result either way.
type sage struct {
	b       kernels.Backend
	in, out int
	// order forces the order (1: transform first, -1: aggregate first;
	// tests); 0 decides per block.
	order int
	tf    bool // the current block's order, forward's for backward
	// w stacks W_self (rows [0, in)) over W_neigh (rows [in, 2in)), so
	// the aggregate-first path is one GEMM of [x_i | mean] (2in wide).
	w, bias *Param

	// Forward state kept for Backward.
	g      *Block
	x      *kernels.Mat
	z      *kernels.Mat // [x_dst | mean x] (aggregate first)
	p      *kernels.Mat // x W_neigh over the sources (transform first)
	y      *kernels.Mat
	dz, dp *kernels.Mat
	dx     *kernels.Mat
}

func newSAGE(b kernels.Backend, r *rand.Rand, name string, in, out int) *sage {
	// DGL initialises fc_self and fc_neigh apart, each Glorot uniform with
	// ReLU's gain over (in, out).
	init := append(glorotUniform(r, in*out, in, out, reluGain), glorotUniform(r, in*out, in, out, reluGain)...)
	return &sage{b: b, in: in, out: out,
		w:    newParam(b, name+".weight", 2*in, out, init),
		bias: newParam(b, name+".bias", 1, out, nil),
		z:    b.NewMat(0, 0), p: b.NewMat(0, 0), y: b.NewMat(0, 0),
		dz: b.NewMat(0, 0), dp: b.NewMat(0, 0), dx: b.NewMat(0, 0)}
}

func (l *sage) params() []*Param { return []*Param{l.w, l.bias} }

// transformFirst reports whether the layer transforms first on g: never
// when it reads the features in place (its sources are then the whole
// matrix), else as order says or as costs less. Transforming first
// multiplies the sources and the destinations (W_neigh and W_self),
// aggregating first the destinations by a 2in-wide stack.
func (l *sage) transformFirst(g *Block) bool {
	if g.DstRows != nil || l.order != 0 {
		return forcedOrder("GraphSAGE", g, l.order)
	}
	return transformFirst(l.in, l.out, g.NumSrc+g.NumDst, 2*g.NumDst, g.Nbr.NumEdges)
}

func (l *sage) forward(g *Block, x *kernels.Mat, _ bool, _ uint64) *kernels.Mat {
	b := l.b
	l.g, l.x = g, x
	b.Resize(l.y, g.NumDst, l.out)
	wSelf, wNeigh := l.w.W.RowSlice(0, l.in), l.w.W.RowSlice(l.in, 2*l.in)
	xDst := x.RowSlice(0, g.NumDst)
	l.tf = l.transformFirst(g)
	if l.tf {
		b.Resize(l.p, g.NumSrc, l.out)
		b.Gemm(false, false, 1, x, wNeigh, 0, l.p)
		b.SegmentMean(l.y, l.p, g.Nbr)
		b.Gemm(false, false, 1, xDst, wSelf, 1, l.y)
	} else {
		b.Resize(l.z, g.NumDst, 2*l.in)
		if g.DstRows != nil {
			b.GatherRows(l.z.ColSlice(0, l.in), x, g.DstRows)
		} else {
			b.Copy(l.z.ColSlice(0, l.in), xDst)
		}
		b.SegmentMean(l.z.ColSlice(l.in, 2*l.in), x, g.Nbr)
		b.Gemm(false, false, 1, l.z, l.w.W, 0, l.y)
	}
	b.AddBias(l.y, l.bias.W)
	return l.y
}

func (l *sage) backward(dy *kernels.Mat, needInput bool) *kernels.Mat {
	b, g := l.b, l.g
	b.SumRows(l.bias.G, dy, 0)
	if l.tf {
		gSelf, gNeigh := l.w.G.RowSlice(0, l.in), l.w.G.RowSlice(l.in, 2*l.in)
		b.Gemm(true, false, 1, l.x.RowSlice(0, g.NumDst), dy, 0, gSelf)
		b.Resize(l.dp, g.NumSrc, l.out)
		b.Zero(l.dp)
		b.SegmentMeanBackward(l.dp, dy, g.Nbr)
		b.Gemm(true, false, 1, l.x, l.dp, 0, gNeigh)
		if !needInput {
			return nil
		}
		b.Resize(l.dx, g.NumSrc, l.in)
		b.Gemm(false, true, 1, l.dp, l.w.W.RowSlice(l.in, 2*l.in), 0, l.dx)
		b.Gemm(false, true, 1, dy, l.w.W.RowSlice(0, l.in), 1, l.dx.RowSlice(0, g.NumDst))
		return l.dx
	}
	b.Gemm(true, false, 1, l.z, dy, 0, l.w.G)
	if !needInput {
		return nil
	}
	b.Resize(l.dz, g.NumDst, 2*l.in)
	b.Gemm(false, true, 1, dy, l.w.W, 0, l.dz)
	b.Resize(l.dx, g.NumSrc, l.in)
	b.Zero(l.dx)
	b.Copy(l.dx.RowSlice(0, g.NumDst), l.dz.ColSlice(0, l.in))
	b.SegmentMeanBackward(l.dx, l.dz.ColSlice(l.in, 2*l.in), g.Nbr)
	return l.dx
}
