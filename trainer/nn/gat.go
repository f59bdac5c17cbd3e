package nn

import (
	"math/rand/v2"

	"github.com/gnnplan/gnnplan/kernels"
)

// gat is DGL's GATConv (no residual): per head h, z = x W_h, scores
// e_iu = LeakyReLU(a_l,h . z_u + a_r,h . z_i) over i's neighbours and
// itself, softmax over them, attention dropout, y_i,h = sum_u alpha_iu z_u
// + b. Hidden layers concatenate the heads; the output layer averages
// them (meanHeads).
type gat struct {
	b                  kernels.Backend
	in, heads, out     int // out per head
	slope, attnDropout float32
	meanHeads          bool
	w, attnL, attnR    *Param
	bias               *Param

	g                   *Block
	x                   *kernels.Mat
	z                   *kernels.Mat // x W: NumSrc x heads*out
	el, er              *kernels.Mat // a_l . z_u (sources), a_r . z_i (destinations)
	s, e, alpha, alphaD *kernels.Mat // per edge x heads: el+er, LeakyReLU, softmax, dropped
	seed                uint64
	dropped             bool         // attention dropout ran in the last forward
	y, ym               *kernels.Mat // heads concatenated; averaged
	dy, dz, dalpha, de  *kernels.Mat
	del, der, dx        *kernels.Mat
}

func newGAT(b kernels.Backend, r *rand.Rand, name string, in, heads, out int, slope, attnDropout float32, meanHeads bool) *gat {
	hf := heads * out
	// DGL: Glorot normal with ReLU's gain; attention vectors of shape
	// (1, heads, out) have fan-in heads*out and fan-out out in PyTorch's
	// convention.
	l := &gat{b: b, in: in, heads: heads, out: out, slope: slope, attnDropout: attnDropout, meanHeads: meanHeads,
		w:     newParam(b, name+".weight", in, hf, glorotNormal(r, in*hf, in, hf, reluGain)),
		attnL: newParam(b, name+".attn_l", 1, hf, glorotNormal(r, hf, hf, out, reluGain)),
		attnR: newParam(b, name+".attn_r", 1, hf, glorotNormal(r, hf, hf, out, reluGain)),
		bias:  newParam(b, name+".bias", 1, hf, nil),
	}
	for _, m := range []**kernels.Mat{&l.z, &l.el, &l.er, &l.s, &l.e, &l.alpha, &l.alphaD, &l.y, &l.ym, &l.dy, &l.dz, &l.dalpha, &l.de, &l.del, &l.der, &l.dx} {
		*m = b.NewMat(0, 0)
	}
	return l
}

func (l *gat) params() []*Param { return []*Param{l.w, l.attnL, l.attnR, l.bias} }

func (l *gat) forward(g *Block, x *kernels.Mat, train bool, seed uint64) *kernels.Mat {
	b := l.b
	hf := l.heads * l.out
	ne := g.Self.NumEdges
	l.g, l.x, l.seed = g, x, seed
	b.Resize(l.z, g.NumSrc, hf)
	b.Gemm(false, false, 1, x, l.w.W, 0, l.z)
	b.Resize(l.el, g.NumSrc, l.heads)
	b.Resize(l.er, g.NumDst, l.heads)
	b.HeadDot(l.el, l.z, l.attnL.W)
	b.HeadDot(l.er, l.z.RowSlice(0, g.NumDst), l.attnR.W)
	for _, m := range []*kernels.Mat{l.s, l.e, l.alpha, l.alphaD} {
		b.Resize(m, ne, l.heads)
	}
	b.EdgeAdd(l.s, l.el, l.er, g.Self)
	b.Act(kernels.Activation{Kind: kernels.LeakyReLU, Slope: l.slope}, l.e, l.s)
	b.EdgeSoftmax(l.alpha, l.e, g.Self)
	att := l.alpha
	l.dropped = train && l.attnDropout > 0
	if l.dropped {
		b.Dropout(l.alphaD, l.alpha, l.attnDropout, seed)
		att = l.alphaD
	}
	b.Resize(l.y, g.NumDst, hf)
	b.WeightedSum(l.y, l.z, att, g.Self)
	b.AddBias(l.y, l.bias.W)
	if !l.meanHeads {
		return l.y
	}
	b.Resize(l.ym, g.NumDst, l.out)
	b.HeadMean(l.ym, l.y)
	return l.ym
}

func (l *gat) backward(dout *kernels.Mat, needInput bool) *kernels.Mat {
	b, g := l.b, l.g
	hf := l.heads * l.out
	dy := dout
	if l.meanHeads {
		b.Resize(l.dy, g.NumDst, hf)
		b.HeadMeanBackward(l.dy, dout)
		dy = l.dy
	}
	b.SumRows(l.bias.G, dy, 0)
	att := l.alpha
	if l.dropped {
		att = l.alphaD
	}
	// Through the weighted sum: to z, and to the attention weights.
	b.Resize(l.dz, g.NumSrc, hf)
	b.Zero(l.dz)
	b.WeightedSumBackward(l.dz, dy, att, g.Self)
	b.Resize(l.dalpha, g.Self.NumEdges, l.heads)
	b.EdgeDot(l.dalpha, dy, l.z, g.Self)
	if l.dropped {
		b.DropoutBackward(l.dalpha, l.dalpha, l.attnDropout, l.seed)
	}
	// Through softmax and LeakyReLU to the scores, then to el and er.
	b.Resize(l.de, g.Self.NumEdges, l.heads)
	b.EdgeSoftmaxBackward(l.de, l.dalpha, l.alpha, g.Self)
	b.ActBackward(kernels.Activation{Kind: kernels.LeakyReLU, Slope: l.slope}, l.de, l.de, l.s, l.e)
	b.Resize(l.del, g.NumSrc, l.heads)
	b.Resize(l.der, g.NumDst, l.heads)
	b.Zero(l.del)
	b.Zero(l.der)
	b.EdgeAddBackward(l.del, l.der, l.de, g.Self)
	b.Zero(l.attnL.G)
	b.Zero(l.attnR.G)
	b.HeadDotBackward(l.dz, l.attnL.G, l.del, l.z, l.attnL.W)
	b.HeadDotBackward(l.dz.RowSlice(0, g.NumDst), l.attnR.G, l.der, l.z.RowSlice(0, g.NumDst), l.attnR.W)
	b.Gemm(true, false, 1, l.x, l.dz, 0, l.w.G)
	if !needInput {
		return nil
	}
	b.Resize(l.dx, g.NumSrc, l.in)
	b.Gemm(false, true, 1, l.dz, l.w.W, 0, l.dx)
	return l.dx
}
