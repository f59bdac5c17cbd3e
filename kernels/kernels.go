package kernels

import "fmt"

// Mat is a row-major float32 matrix of Rows x Cols living on a Backend.
// Row r starts Stride elements after row r-1 (Stride >= Cols), so a block
// of columns of a wider matrix is a Mat too (ColSlice). A Mat's contents
// are reached only through its Backend.
type Mat struct {
	Rows, Cols, Stride int
	// h is the storage of host-resident backends (the CPU): element
	// (r, c) is h[r*Stride+c].
	h []float32
	// d is a device address, for device backends, and buf the
	// allocation it lies in (views share their matrix's, which keeps it
	// alive while any of them is).
	d   uintptr
	buf *devBuf
}

// Len returns Rows*Cols.
func (m *Mat) Len() int { return m.Rows * m.Cols }

// Contiguous reports whether the rows are packed (Stride == Cols).
func (m *Mat) Contiguous() bool { return m.Stride == m.Cols || m.Rows <= 1 }

// ColSlice returns the view of columns [c0, c1) of m, sharing its storage.
func (m *Mat) ColSlice(c0, c1 int) *Mat {
	if c0 < 0 || c1 < c0 || c1 > m.Cols {
		panic(fmt.Sprintf("kernels: ColSlice [%d, %d) of %d columns", c0, c1, m.Cols))
	}
	v := &Mat{Rows: m.Rows, Cols: c1 - c0, Stride: m.Stride}
	if m.h != nil {
		v.h = m.h[:0]
		if m.Rows > 0 {
			v.h = m.h[c0 : (m.Rows-1)*m.Stride+c1]
		}
	}
	if m.d != 0 {
		v.d, v.buf = m.d+uintptr(4*c0), m.buf
	}
	return v
}

// RowSlice returns the view of rows [r0, r1) of m, sharing its storage.
func (m *Mat) RowSlice(r0, r1 int) *Mat {
	if r0 < 0 || r1 < r0 || r1 > m.Rows {
		panic(fmt.Sprintf("kernels: RowSlice [%d, %d) of %d rows", r0, r1, m.Rows))
	}
	v := &Mat{Rows: r1 - r0, Cols: m.Cols, Stride: m.Stride}
	if m.h != nil {
		if v.Rows > 0 {
			v.h = m.h[r0*m.Stride : (r1-1)*m.Stride+m.Cols]
		} else {
			v.h = m.h[:0]
		}
	}
	if m.d != 0 {
		v.d, v.buf = m.d+uintptr(4*r0*m.Stride), m.buf
	}
	return v
}

// Index is a vector of int32 (vertex rows, labels) on a Backend.
type Index struct {
	N int
	// h holds the values on the host: the storage of host backends, a
	// copy kept by device backends (which group and transpose on the
	// host).
	h   []int32
	d   uintptr
	buf *devBuf
}

// CSR is a sampled block's adjacency on a Backend: the sources of
// destination i are rows SrcIdx[j] of the source matrix for j in
// [Offsets[i], Offsets[i+1]); edge j's per-edge values (weights, scores)
// are row j of an E x H matrix. A backend builds the transposed view it
// needs for backward passes on first use.
type CSR struct {
	NumDst, NumSrc, NumEdges int
	offsets, srcIdx          *Index
	// t is the backend's transposed form (by source), built lazily.
	t any
}

// Backend runs the kernels. Methods panic on shape mismatches, which are
// programming errors of the caller, never input errors: the trainer checks
// inputs before it builds matrices.
//
// Unless a method says it accumulates, it overwrites its output.
type Backend interface {
	// Name says what runs the kernels, e.g. "cpu: OpenBLAS 0.3.21
	// (pthread), 2 threads".
	Name() string
	// Threads returns the number of threads kernels use.
	Threads() int

	// NewMat returns a zeroed rows x cols matrix.
	NewMat(rows, cols int) *Mat
	// Resize makes m rows x cols, reusing its storage when it is large
	// enough; the contents are then undefined. m must not be a view.
	Resize(m *Mat, rows, cols int)
	// Upload copies src (row-major, len rows*cols) into m, resizing it.
	Upload(m *Mat, rows, cols int, src []float32)
	// Download copies m into dst (len >= m.Len()), row-major packed.
	Download(dst []float32, m *Mat)
	// Wrap makes a matrix of host data: a host backend shares data (no
	// copy; the caller must not change it while the Mat is in use), a
	// device backend copies it.
	Wrap(rows, cols int, data []float32) *Mat
	// Zero sets every element of m to 0.
	Zero(m *Mat)
	// Copy copies src into dst (same shape).
	Copy(dst, src *Mat)
	// NewIndex returns an index holding v; a host backend shares v.
	NewIndex(v []int32) *Index
	// NewCSR returns a block adjacency over numSrc source rows; a host
	// backend shares offsets and srcIdx. offsets has numDst+1 entries,
	// starts at 0, never decreases, and ends at len(srcIdx); every srcIdx
	// is in [0, numSrc).
	NewCSR(offsets, srcIdx []int32, numSrc int) *CSR

	// Gemm computes C = alpha*op(A)*op(B) + beta*C, op transposing when
	// asked.
	Gemm(transA, transB bool, alpha float32, a, b *Mat, beta float32, c *Mat)

	// GatherRows sets dst row i to src row idx[i].
	GatherRows(dst, src *Mat, idx *Index)
	// GatherRowsTwo sets dst row i to a's row idx[i] when idx[i] >= 0,
	// else to b's row -1-idx[i]: a batch's input from rows copied in (a)
	// and rows resident on the device (b, a cache).
	GatherRowsTwo(dst, a, b *Mat, idx *Index)
	// ScatterAddRows adds src row i to dst row idx[i] (accumulates).
	ScatterAddRows(dst, src *Mat, idx *Index)

	// SegmentMean sets out row i (i < g.NumDst) to the mean of x's rows
	// g's destination i reaches, or to 0 when it reaches none
	// (GraphSAGE's mean aggregator).
	SegmentMean(out, x *Mat, g *CSR)
	// SegmentMeanBackward adds to dx the gradient of SegmentMean for
	// dout (accumulates).
	SegmentMeanBackward(dx, dout *Mat, g *CSR)
	// WeightedSum sets out row i, for each of H heads, to the sum over
	// i's edges j of w[j, h] times x's source row's columns of head h:
	// x and out have H*F columns, w is NumEdges x H (GCN's normalised
	// aggregation with H = 1, GAT's attention with H heads).
	WeightedSum(out, x, w *Mat, g *CSR)
	// WeightedSumBackward adds to dx the gradient of WeightedSum with
	// respect to x (accumulates).
	WeightedSumBackward(dx, dout, w *Mat, g *CSR)
	// EdgeDot sets s[j, h] to the dot product of a's row of j's
	// destination and b's row of j's source over head h's F columns:
	// the gradient of WeightedSum with respect to w when a = dout, b = x.
	EdgeDot(s, a, b *Mat, g *CSR)

	// HeadDot sets out[n, h] to the dot product of x's row n over head
	// h's F columns with a's head h (a is 1 x H*F): GAT's e_l and e_r.
	HeadDot(out, x, a *Mat)
	// HeadDotBackward adds dout's gradient to dx and da (accumulates).
	HeadDotBackward(dx, da, dout, x, a *Mat)
	// EdgeAdd sets s[j, h] = el[src(j), h] + er[dst(j), h].
	EdgeAdd(s, el, er *Mat, g *CSR)
	// EdgeAddBackward adds ds's gradient to del and der (accumulates).
	EdgeAddBackward(del, der, ds *Mat, g *CSR)
	// EdgeSoftmax sets a to the softmax of e over each destination's
	// edges, per head (both NumEdges x H).
	EdgeSoftmax(a, e *Mat, g *CSR)
	// EdgeSoftmaxBackward sets de from da, given the softmax output a.
	EdgeSoftmaxBackward(de, da, a *Mat, g *CSR)
	// HeadMean sets out (N x F) to the mean of x's H heads (N x H*F).
	HeadMean(out, x *Mat)
	// HeadMeanBackward sets dx to dout's gradient broadcast to H heads.
	HeadMeanBackward(dx, dout *Mat)

	// AddBias adds the 1 x C row bias to every row of m.
	AddBias(m, bias *Mat)
	// SumRows sets out (1 x C) to the column sums of m, plus beta*out.
	SumRows(out, m *Mat, beta float32)
	// Axpy computes y += alpha*x.
	Axpy(alpha float32, x, y *Mat)
	// Scale computes m *= alpha.
	Scale(m *Mat, alpha float32)
	// Act sets y = f(x) (y may be x).
	Act(f Activation, y, x *Mat)
	// ActBackward sets dx = dy * f'(x), given x and y = f(x) (dx may be
	// dy).
	ActBackward(f Activation, dx, dy, x, y *Mat)
	// ActDropout sets y = Dropout(f(x), p, seed) in one pass (y may be
	// x): an activation and the next layer's dropout.
	ActDropout(f Activation, y, x *Mat, p float32, seed uint64)
	// ActDropoutBackward sets dx from dy through ActDropout, given only
	// its output y: f's derivative is read from y, which keeps x's sign
	// for ReLU, LeakyReLU and ELU with a positive slope (dx may be dy).
	ActDropoutBackward(f Activation, dx, dy, y *Mat, p float32, seed uint64)
	// Dropout sets y to x with each element zeroed with probability p and
	// the rest scaled by 1/(1-p); element k's fate is a hash of (seed, k),
	// so DropoutBackward with the same seed needs no stored mask.
	Dropout(y, x *Mat, p float32, seed uint64)
	// DropoutBackward sets dx from dy with Dropout's mask for seed.
	DropoutBackward(dx, dy *Mat, p float32, seed uint64)

	// SoftmaxCrossEntropy computes, for each row of logits, the softmax
	// and the cross-entropy against labels (an entry < 0 is ignored), and
	// returns the summed loss and the number of rows whose largest logit
	// is the label. When dlogits is not nil it is set to the gradient of
	// scale * summed loss.
	SoftmaxCrossEntropy(dlogits, logits *Mat, labels *Index, scale float32) (loss float64, correct int)
	// Argmax writes each row's largest column into dst.
	Argmax(dst []int32, m *Mat)

	// Adam applies one step of Adam (Kingma and Ba) with L2 weight decay
	// added to the gradient, as PyTorch's torch.optim.Adam does:
	// g += wd*p; m = b1*m + (1-b1)*g; v = b2*v + (1-b2)*g^2;
	// p -= lr * (m/(1-b1^t)) / (sqrt(v/(1-b2^t)) + eps).
	Adam(p, g, m, v *Mat, o AdamStep)
}

// AdamStep holds one Adam update's hyper-parameters; T counts steps from 1.
type AdamStep struct {
	LR, Beta1, Beta2, Eps, WeightDecay float32
	T                                  int
}

// Activation is an elementwise nonlinearity.
type Activation struct {
	Kind ActKind
	// Slope is LeakyReLU's negative slope; ELU's alpha.
	Slope float32
}

// ActKind names an activation.
type ActKind uint8

// The activations the models use.
const (
	Identity ActKind = iota
	ReLU
	LeakyReLU
	ELU
)

func (k ActKind) String() string {
	switch k {
	case Identity:
		return "identity"
	case ReLU:
		return "relu"
	case LeakyReLU:
		return "leaky_relu"
	case ELU:
		return "elu"
	}
	return fmt.Sprintf("ActKind(%d)", uint8(k))
}
