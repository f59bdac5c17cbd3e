package kernels

import (
	"fmt"
	"math"
)

// Gemm implements Backend.
func (c *CPU) Gemm(transA, transB bool, alpha float32, a, b *Mat, beta float32, cm *Mat) {
	m, k := a.Rows, a.Cols
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
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		c.Scale(cm, beta)
		return
	}
	c.blas.sgemm(transA, transB, m, n, k, alpha, a.h, a.Stride, b.h, b.Stride, beta, cm.h, cm.Stride)
}

func opName(t bool) string {
	if t {
		return "T"
	}
	return "N"
}

// GatherRows implements Backend.
func (c *CPU) GatherRows(dst, src *Mat, idx *Index) {
	if dst.Rows != idx.N || dst.Cols != src.Cols {
		panic(fmt.Sprintf("kernels: GatherRows of %d rows of %d columns into %dx%d", idx.N, src.Cols, dst.Rows, dst.Cols))
	}
	ix := idx.h
	c.rows(dst.Rows, dst.Cols, func(r int) { copy(dst.row(r), src.row(int(ix[r]))) })
}

// ScatterAddRows implements Backend. Rows that land on the same dst row
// are added in the order of idx, whatever the number of threads.
func (c *CPU) ScatterAddRows(dst, src *Mat, idx *Index) {
	if src.Rows != idx.N || dst.Cols != src.Cols {
		panic(fmt.Sprintf("kernels: ScatterAddRows of %dx%d by %d indices into %dx%d", src.Rows, src.Cols, idx.N, dst.Rows, dst.Cols))
	}
	// Group src rows by target with a stable counting sort, then let each
	// target row sum its sources in order.
	start := make([]int32, dst.Rows+1)
	for _, t := range idx.h {
		start[t+1]++
	}
	for i := range dst.Rows {
		start[i+1] += start[i]
	}
	order := make([]int32, idx.N)
	fill := append([]int32(nil), start[:dst.Rows]...)
	for i, t := range idx.h {
		order[fill[t]] = int32(i)
		fill[t]++
	}
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
		for j, v := range xr {
			yr[j] = math.Float32frombits(math.Float32bits(v) & positive(v))
		}
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

// dropBits is the resolution of a dropout decision: each 64-bit hash of
// (seed, k/4) decides four consecutive elements with 16 bits each, so p
// is rounded to a multiple of 2^-16 (0.6 becomes 0.600006).
const dropBits = 16

// dropHash is splitmix64's finalizer of (seed, group): the random bits of
// elements 4*group to 4*group+3.
func dropHash(seed uint64, group int) uint64 {
	z := seed ^ (uint64(group)+1)*0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// dropThreshold is p as a 16-bit threshold: element k is dropped when its
// 16 bits are below it.
func dropThreshold(p float32) uint32 {
	return uint32(math.Round(float64(max(0, min(p, 1))) * (1 << dropBits)))
}

// Dropout implements Backend. Element k is the element's row-major
// position in the matrix given (r*Cols + c): a view drops what a whole
// matrix of its shape would, so Dropout and DropoutBackward agree on
// any storage.
// Elements of x that are 0 stay 0 without a draw (sparse inputs such as
// bag-of-words features cost little).
func (c *CPU) Dropout(y, x *Mat, p float32, seed uint64) {
	c.dropout(y, x, p, seed, true)
}

// DropoutBackward implements Backend.
func (c *CPU) DropoutBackward(dx, dy *Mat, p float32, seed uint64) {
	c.dropout(dx, dy, p, seed, false)
}

func (c *CPU) dropout(y, x *Mat, p float32, seed uint64, skipZeros bool) {
	sameShape("Dropout", y, x)
	th := dropThreshold(p)
	if th == 0 {
		c.Copy(y, x)
		return
	}
	if th >= 1<<dropBits {
		c.Zero(y)
		return
	}
	scale := float32(1 / (1 - float64(th)/(1<<dropBits)))
	c.rows(y.Rows, y.Cols, func(r int) {
		dropRow(y.row(r), x.row(r), r*y.Cols, seed, th, scale, skipZeros)
	})
}

// dropRow applies dropout to one row whose first element is element base.
// The select is arithmetic: a branch on a coin flip mispredicts half the
// time.
func dropRow(yr, xr []float32, base int, seed uint64, th uint32, scale float32, skipZeros bool) {
	yr = yr[:len(xr)]
	one := func(v float32, bits uint64, lane int) float32 {
		d := int32(uint32(bits>>(dropBits*lane))&(1<<dropBits-1)) - int32(th)
		return math.Float32frombits(math.Float32bits(v*scale) & ^uint32(d>>31))
	}
	j := 0
	// Up to the first element of a group of four, then whole groups (one
	// hash each), then the rest.
	if head := (4 - base&3) & 3; head > 0 {
		h := dropHash(seed, base>>2)
		for ; j < head && j < len(xr); j++ {
			yr[j] = one(xr[j], h, (base+j)&3)
		}
	}
	for ; j+4 <= len(xr); j += 4 {
		x4, y4 := xr[j:j+4:j+4], yr[j:j+4:j+4]
		if skipZeros && x4[0] == 0 && x4[1] == 0 && x4[2] == 0 && x4[3] == 0 {
			y4[0], y4[1], y4[2], y4[3] = 0, 0, 0, 0
			continue
		}
		h := dropHash(seed, (base+j)>>2)
		y4[0] = one(x4[0], h, 0)
		y4[1] = one(x4[1], h, 1)
		y4[2] = one(x4[2], h, 2)
		y4[3] = one(x4[3], h, 3)
	}
	if j < len(xr) {
		h := dropHash(seed, (base+j)>>2)
		for ; j < len(xr); j++ {
			yr[j] = one(xr[j], h, (base+j)&3)
		}
	}
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
	sameShape("Adam", p, g)
	sameShape("Adam", p, m)
	sameShape("Adam", p, v)
	if o.T < 1 {
		panic(fmt.Sprintf("kernels: Adam step %d (steps count from 1)", o.T))
	}
	// PyTorch's formulation: step size lr/(1-b1^t), denominator
	// sqrt(v)/sqrt(1-b2^t) + eps.
	bc1 := 1 - math.Pow(float64(o.Beta1), float64(o.T))
	bc2 := 1 - math.Pow(float64(o.Beta2), float64(o.T))
	step := float32(float64(o.LR) / bc1)
	bc2sqrt := float32(math.Sqrt(bc2))
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
	th := dropThreshold(p)
	if th >= 1<<dropBits {
		c.Zero(y)
		return
	}
	scale := float32(1 / (1 - float64(th)/(1<<dropBits)))
	c.rows(y.Rows, y.Cols, func(r int) {
		yr := y.row(r)
		actRow(f, yr, x.row(r))
		if th > 0 {
			dropRow(yr, yr, r*y.Cols, seed, th, scale, false)
		}
	})
}

// ActDropoutBackward implements Backend.
func (c *CPU) ActDropoutBackward(f Activation, dx, dy, y *Mat, p float32, seed uint64) {
	sameShape("ActDropoutBackward", dx, dy)
	sameShape("ActDropoutBackward", dx, y)
	th := dropThreshold(p)
	if th >= 1<<dropBits {
		c.Zero(dx)
		return
	}
	scale := float32(1 / (1 - float64(th)/(1<<dropBits)))
	c.rows(dx.Rows, dx.Cols, func(r int) {
		dxr, yr := dx.row(r), y.row(r)
		if th > 0 {
			dropRow(dxr, dy.row(r), r*dx.Cols, seed, th, scale, false)
		} else {
			copy(dxr, dy.row(r))
		}
		dxr = dxr[:len(yr)]
		// Where the element was dropped dx is 0 already; where kept, y is
		// f(x)*scale, with f(x)'s sign.
		switch f.Kind {
		case Identity:
		case ReLU:
			for j, v := range yr {
				dxr[j] = math.Float32frombits(math.Float32bits(dxr[j]) & positive(v))
			}
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

// positive returns all ones when v > 0 (NaN with the sign bit clear
// included) and 0 otherwise (-0 and +0 included), without a branch: the
// float's bits read as an int32 are > 0 exactly then.
func positive(v float32) uint32 {
	return uint32(-int64(int32(math.Float32bits(v))) >> 63)
}

// negative returns all ones when v < 0 and 0 otherwise (-0 included).
func negative(v float32) uint32 {
	return positive(-v)
}

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
