package kernels

import (
	"fmt"
	"math"

	"github.com/gnnplan/gnnplan/kernels/internal/vec"
)

// Gemm implements Backend.
func (c *CPU) Gemm(transA, transB bool, alpha float32, a, b *Mat, beta float32, cm *Mat) {
	m, n, k := gemmDims(transA, transB, a, b, cm)
	if gemmEmpty(c, m, n, k, beta, cm) {
		return
	}
	c.blas.sgemm(c.blasThreads, transA, transB, m, n, k, alpha, a.h, a.Stride, b.h, b.Stride, beta, cm.h, cm.Stride)
}

// checkAdam panics unless p, g, m and v have one shape and o's step
// counts from 1.
func checkAdam(p, g, m, v *Mat, o AdamStep) {
	sameShape("Adam", p, g)
	sameShape("Adam", p, m)
	sameShape("Adam", p, v)
	if o.T < 1 {
		panic(fmt.Sprintf("kernels: Adam step %d (steps count from 1)", o.T))
	}
}

// gemmEmpty does a product with nothing to multiply: no output (m or n
// 0), or no inner dimension (k 0: C = beta C, as BLAS defines it). It
// reports whether it did, leaving the rest to the backend's GEMM.
func gemmEmpty(b Backend, m, n, k int, beta float32, cm *Mat) bool {
	if m == 0 || n == 0 {
		return true
	}
	if k == 0 {
		b.Scale(cm, beta)
		return true
	}
	return false
}

// gemmDims returns C = op(A)*op(B)'s m, n and k, and panics when the
// shapes do not fit.
func gemmDims(transA, transB bool, a, b, cm *Mat) (m, n, k int) {
	m, k = a.Rows, a.Cols
	if transA {
		m, k = k, m
	}
	kb, n := b.Rows, b.Cols
	if transB {
		kb, n = n, kb
	}
	if k != kb || cm.Rows != m || cm.Cols != n {
		panic(fmt.Sprintf("kernels: Gemm of %s(%dx%d) and %s(%dx%d) into %dx%d",
			opName(transA), a.Rows, a.Cols, opName(transB), b.Rows, b.Cols, cm.Rows, cm.Cols))
	}
	return m, n, k
}

// groupByTarget groups the positions of idx by their value (a row of
// rows) with a stable counting sort: the positions with value r are
// order[start[r]:start[r+1]], ascending.
func groupByTarget(idx []int32, rows int) (start, order []int32) {
	start = make([]int32, rows+1)
	for _, t := range idx {
		start[t+1]++
	}
	for i := range rows {
		start[i+1] += start[i]
	}
	order = make([]int32, len(idx))
	fill := append([]int32(nil), start[:rows]...)
	for i, t := range idx {
		order[fill[t]] = int32(i)
		fill[t]++
	}
	return start, order
}

func opName(t bool) string {
	if t {
		return "T"
	}
	return "N"
}

// gatherAhead is how many rows ahead GatherRows prefetches.
const gatherAhead = 4

// GatherRows implements Backend.
func (c *CPU) GatherRows(dst, src *Mat, idx *Index) {
	if dst.Rows != idx.N || dst.Cols != src.Cols {
		panic(fmt.Sprintf("kernels: GatherRows of %d rows of %d columns into %dx%d", idx.N, src.Cols, dst.Rows, dst.Cols))
	}
	ix := idx.h
	c.rows(dst.Rows, dst.Cols, func(r int) {
		// Scattered rows: ask for one a few ahead of the copy.
		if r+gatherAhead < len(ix) {
			prefetchRow(src.row(int(ix[r+gatherAhead])))
		}
		copy(dst.row(r), src.row(int(ix[r])))
	})
}

// GatherRowsTwo implements Backend.
func (c *CPU) GatherRowsTwo(dst, a, b *Mat, idx *Index) {
	checkGatherTwo(dst, a, b, idx)
	ix := idx.h
	c.rows(dst.Rows, dst.Cols, func(r int) {
		if i := ix[r]; i >= 0 {
			copy(dst.row(r), a.row(int(i)))
		} else {
			copy(dst.row(r), b.row(int(-1-i)))
		}
	})
}

// checkGatherTwo panics unless GatherRowsTwo's shapes agree (the indices
// are the caller's to keep in range, as GatherRows's are).
func checkGatherTwo(dst, a, b *Mat, idx *Index) {
	if dst.Rows != idx.N || dst.Cols != a.Cols || a.Cols != b.Cols {
		panic(fmt.Sprintf("kernels: GatherRowsTwo of %d rows of %dx%d and %dx%d into %dx%d", idx.N, a.Rows, a.Cols, b.Rows, b.Cols, dst.Rows, dst.Cols))
	}
}

// ScatterAddRows implements Backend. Rows that land on the same dst row
// are added in the order of idx, whatever the number of threads.
func (c *CPU) ScatterAddRows(dst, src *Mat, idx *Index) {
	if src.Rows != idx.N || dst.Cols != src.Cols {
		panic(fmt.Sprintf("kernels: ScatterAddRows of %dx%d by %d indices into %dx%d", src.Rows, src.Cols, idx.N, dst.Rows, dst.Cols))
	}
	// Group src rows by target, then let each target row sum its sources
	// in order.
	start, order := groupByTarget(idx.h, dst.Rows)
	c.rows(dst.Rows, dst.Cols, func(r int) {
		out := dst.row(r)
		for _, i := range order[start[r]:start[r+1]] {
			addTo(out, src.row(int(i)))
		}
	})
}

// AddBias implements Backend.
func (c *CPU) AddBias(m, bias *Mat) {
	if bias.Rows != 1 || bias.Cols != m.Cols {
		panic(fmt.Sprintf("kernels: AddBias of %dx%d to %dx%d", bias.Rows, bias.Cols, m.Rows, m.Cols))
	}
	b := bias.row(0)
	c.rows(m.Rows, m.Cols, func(r int) { addTo(m.row(r), b) })
}

// SumRows implements Backend.
func (c *CPU) SumRows(out, m *Mat, beta float32) {
	if out.Rows != 1 || out.Cols != m.Cols {
		panic(fmt.Sprintf("kernels: SumRows of %dx%d into %dx%d", m.Rows, m.Cols, out.Rows, out.Cols))
	}
	cols := m.Cols
	partial := make([]float32, ((m.Rows+reduceChunk-1)/reduceChunk)*cols)
	chunks := c.chunked(m.Rows, func(k, lo, hi int) {
		p := partial[k*cols : (k+1)*cols]
		for r := lo; r < hi; r++ {
			addTo(p, m.row(r))
		}
	})
	o := out.row(0)
	if beta == 0 {
		clear(o) // 0*NaN is NaN: beta 0 ignores what out held
	}
	for j := range o {
		o[j] *= beta
	}
	for k := range chunks {
		addTo(o, partial[k*cols:(k+1)*cols])
	}
}

// Axpy implements Backend.
func (c *CPU) Axpy(alpha float32, x, y *Mat) {
	sameShape("Axpy", x, y)
	c.rows(y.Rows, y.Cols, func(r int) {
		yr, xr := y.row(r), x.row(r)
		for j, v := range xr {
			yr[j] += alpha * v
		}
	})
}

// Scale implements Backend.
func (c *CPU) Scale(m *Mat, alpha float32) {
	if alpha == 0 {
		c.Zero(m)
		return
	}
	c.rows(m.Rows, m.Cols, func(r int) {
		mr := m.row(r)
		for j := range mr {
			mr[j] *= alpha
		}
	})
}

// Act implements Backend.
func (c *CPU) Act(f Activation, y, x *Mat) {
	sameShape("Act", y, x)
	c.rows(y.Rows, y.Cols, func(r int) { actRow(f, y.row(r), x.row(r)) })
}

// actRow sets yr = f(xr).
func actRow(f Activation, yr, xr []float32) {
	yr = yr[:len(xr)]
	switch f.Kind {
	case Identity:
		copy(yr, xr)
	case ReLU:
		vec.ReLU(yr, xr)
	case LeakyReLU:
		for j, v := range xr {
			yr[j] = v * choose(negative(v), f.Slope, 1)
		}
	case ELU:
		for j, v := range xr {
			if v < 0 {
				v = f.Slope * float32(math.Expm1(float64(v)))
			}
			yr[j] = v
		}
	default:
		panic("kernels: unknown activation " + f.Kind.String())
	}
}

// ActBackward implements Backend.
func (c *CPU) ActBackward(f Activation, dx, dy, x, y *Mat) {
	sameShape("ActBackward", dx, dy)
	c.rows(dx.Rows, dx.Cols, func(r int) {
		dxr, dyr, xr := dx.row(r), dy.row(r), x.row(r)
		switch f.Kind {
		case Identity:
			copy(dxr, dyr)
		case ReLU:
			dxr, dyr = dxr[:len(xr)], dyr[:len(xr)]
			for j, v := range xr {
				dxr[j] = math.Float32frombits(math.Float32bits(dyr[j]) & positive(v))
			}
		case LeakyReLU:
			dxr, dyr = dxr[:len(xr)], dyr[:len(xr)]
			for j, v := range xr {
				dxr[j] = dyr[j] * choose(negative(v), f.Slope, 1)
			}
		case ELU:
			// d/dx alpha*(e^x - 1) = y + alpha for x < 0.
			yr := y.row(r)
			for j, v := range xr {
				if v < 0 {
					dxr[j] = dyr[j] * (yr[j] + f.Slope)
				} else {
					dxr[j] = dyr[j]
				}
			}
		default:
			panic("kernels: unknown activation " + f.Kind.String())
		}
	})
}

// dropBits is the resolution of a dropout decision: element k is kept
// when 16 bits of a hash of (seed, k) reach p's threshold, so p is
// rounded to a multiple of 2^-16 (0.6 becomes 0.600006).
const dropBits = 16

// dropMask returns Dropout's mask for p and seed.
func dropMask(p float32, seed uint64) vec.DropMask {
	th := uint32(math.Round(float64(max(0, min(p, 1))) * (1 << dropBits)))
	m := vec.DropMask{S0: uint32(seed), S1: uint32(seed >> 32), Threshold: th, Scale: 0}
	if th < 1<<dropBits {
		m.Scale = float32(1 / (1 - float64(th)/(1<<dropBits)))
	}
	return m
}

// Dropout implements Backend. Element k is the element's row-major
// position in the matrix given (r*Cols + c): a view drops what a whole
// matrix of its shape would, so Dropout and DropoutBackward agree on
// any storage.
func (c *CPU) Dropout(y, x *Mat, p float32, seed uint64) {
	c.dropout(y, x, p, seed)
}

// DropoutBackward implements Backend.
func (c *CPU) DropoutBackward(dx, dy *Mat, p float32, seed uint64) {
	c.dropout(dx, dy, p, seed)
}

func (c *CPU) dropout(y, x *Mat, p float32, seed uint64) {
	sameShape("Dropout", y, x)
	m := dropMask(p, seed)
	if m.Threshold == 0 {
		c.Copy(y, x)
		return
	}
	c.rows(y.Rows, y.Cols, func(r int) { vec.Dropout(y.row(r), x.row(r), r*y.Cols, m) })
}

// SoftmaxCrossEntropy implements Backend.
func (c *CPU) SoftmaxCrossEntropy(dlogits, logits *Mat, labels *Index, scale float32) (float64, int) {
	if labels.N != logits.Rows {
		panic(fmt.Sprintf("kernels: SoftmaxCrossEntropy of %d rows with %d labels", logits.Rows, labels.N))
	}
	if dlogits != nil {
		sameShape("SoftmaxCrossEntropy", dlogits, logits)
	}
	rowLoss := make([]float64, logits.Rows)
	rowHit := make([]bool, logits.Rows)
	c.rows(logits.Rows, logits.Cols, func(r int) {
		lr := logits.row(r)
		lab := int(labels.h[r])
		if lab < 0 || len(lr) == 0 {
			if dlogits != nil {
				clear(dlogits.row(r))
			}
			return
		}
		best := 0
		mx := lr[0]
		for j, v := range lr {
			if v > mx {
				mx, best = v, j
			}
		}
		// Work relative to the largest logit, so huge logits keep the
		// log-sum term (mx + log(sum) would lose it past 1e15).
		var sum float64
		for _, v := range lr {
			sum += math.Exp(float64(v) - float64(mx))
		}
		logSum := math.Log(sum)
		rowLoss[r] = logSum - (float64(lr[lab]) - float64(mx))
		rowHit[r] = best == lab
		if dlogits != nil {
			dr := dlogits.row(r)
			for j, v := range lr {
				dr[j] = float32(math.Exp(float64(v)-float64(mx))/sum) * scale
			}
			dr[lab] -= scale
		}
	})
	var loss float64
	correct := 0
	for r, l := range rowLoss {
		loss += l
		if rowHit[r] {
			correct++
		}
	}
	return loss, correct
}

// Argmax implements Backend.
func (c *CPU) Argmax(dst []int32, m *Mat) {
	if len(dst) < m.Rows {
		panic(fmt.Sprintf("kernels: Argmax of %d rows into %d", m.Rows, len(dst)))
	}
	c.rows(m.Rows, m.Cols, func(r int) {
		best := 0
		mr := m.row(r)
		for j, v := range mr {
			if v > mr[best] {
				best = j
			}
		}
		dst[r] = int32(best)
	})
}

// Adam implements Backend.
func (c *CPU) Adam(p, g, m, v *Mat, o AdamStep) {
	checkAdam(p, g, m, v, o)
	// PyTorch's formulation: step size lr/(1-b1^t), denominator
	// sqrt(v)/sqrt(1-b2^t) + eps.
	step, bc2sqrt := adamArgs(o)
	b1, b2, wd, eps := o.Beta1, o.Beta2, o.WeightDecay, o.Eps
	c.rows(p.Rows, p.Cols, func(r int) {
		pr, gr, mr, vr := p.row(r), g.row(r), m.row(r), v.row(r)
		for j := range pr {
			gj := gr[j] + wd*pr[j]
			mr[j] = b1*mr[j] + (1-b1)*gj
			vr[j] = b2*vr[j] + (1-b2)*gj*gj
			denom := float32(math.Sqrt(float64(vr[j])))/bc2sqrt + eps
			pr[j] -= step * mr[j] / denom
		}
	})
}

// ActDropout implements Backend.
func (c *CPU) ActDropout(f Activation, y, x *Mat, p float32, seed uint64) {
	sameShape("ActDropout", y, x)
	m := dropMask(p, seed)
	c.rows(y.Rows, y.Cols, func(r int) {
		yr, xr := y.row(r), x.row(r)
		switch {
		case m.Threshold == 0:
			actRow(f, yr, xr)
		case f.Kind == ReLU:
			vec.ReLUDropout(yr, xr, r*y.Cols, m)
		default:
			actRow(f, yr, xr)
			vec.Dropout(yr, yr, r*y.Cols, m)
		}
	})
}

// ActDropoutBackward implements Backend.
func (c *CPU) ActDropoutBackward(f Activation, dx, dy, y *Mat, p float32, seed uint64) {
	sameShape("ActDropoutBackward", dx, dy)
	sameShape("ActDropoutBackward", dx, y)
	m := dropMask(p, seed)
	scale := m.Scale
	if m.Threshold == 0 {
		scale = 1
	}
	c.rows(dx.Rows, dx.Cols, func(r int) {
		dxr, dyr, yr := dx.row(r), dy.row(r), y.row(r)
		if f.Kind == ReLU {
			// A dropped element's y is 0, not > 0: no mask needed.
			vec.ReLUDropoutBackward(dxr, dyr, yr, scale)
			return
		}
		if m.Threshold > 0 {
			vec.Dropout(dxr, dyr, r*dx.Cols, m)
		} else {
			copy(dxr, dyr)
		}
		dxr = dxr[:len(yr)]
		// Where the element was dropped dx is 0 already; where kept, y is
		// f(x)*scale, with f(x)'s sign.
		switch f.Kind {
		case Identity:
		case LeakyReLU:
			for j, v := range yr {
				dxr[j] *= choose(negative(v), f.Slope, 1)
			}
		case ELU:
			// d/dx alpha*(e^x - 1) = f(x) + alpha for x < 0.
			inv := 1 / scale
			for j, v := range yr {
				if v < 0 {
					dxr[j] *= v*inv + f.Slope
				}
			}
		default:
			panic("kernels: unknown activation " + f.Kind.String())
		}
	})
}

// positive and negative are all ones when v > 0 or v < 0 (neither for
// NaN or zeros), without a branch.
func positive(v float32) uint32 { return vec.PositiveMask(v) }
func negative(v float32) uint32 { return vec.NegativeMask(v) }

// choose returns a where mask is all ones and b where it is 0.
func choose(mask uint32, a, b float32) float32 {
	return math.Float32frombits(math.Float32bits(a)&mask | math.Float32bits(b)&^mask)
}

// dot returns the dot product of a and b in float32.
func dot(a, b []float32) float32 {
	n := len(a)
	b = b[:n]
	var s0, s1, s2, s3 float32
	j := 0
	for ; j+4 <= n; j += 4 {
		s0 += a[j] * b[j]
		s1 += a[j+1] * b[j+1]
		s2 += a[j+2] * b[j+2]
		s3 += a[j+3] * b[j+3]
	}
	for ; j < n; j++ {
		s0 += a[j] * b[j]
	}
	return (s0 + s1) + (s2 + s3)
}
