package kernels

import (
	"sync"
	"time"
)

// KernelClass groups a Backend's kernels by what bounds them, the terms an
// epoch-time model prices apart.
type KernelClass int

// The kernel classes a Tally times.
const (
	// ClassProduct is the dense products (Gemm): bound by FLOPs.
	ClassProduct KernelClass = iota
	// ClassAggregate is the message passing over a block's edges
	// (SegmentMean, WeightedSum, the edge kernels and their gradients):
	// one source row read per edge, in the sampler's order.
	ClassAggregate
	// ClassGather is row gathers and scatters by index (the batch's input
	// rows, a cache's rows).
	ClassGather
	// ClassElementwise is every pass over whole matrices in order: zeroing,
	// copies, bias, activations, dropout, scaling, head means.
	ClassElementwise
	// ClassLoss is the softmax cross-entropy and argmax.
	ClassLoss
	// ClassOptimizer is the Adam step.
	ClassOptimizer
	numKernelClasses
)

// String names the class as the JSON reports it.
func (c KernelClass) String() string {
	switch c {
	case ClassProduct:
		return "products"
	case ClassAggregate:
		return "aggregation"
	case ClassGather:
		return "row_gather"
	case ClassElementwise:
		return "elementwise"
	case ClassLoss:
		return "loss"
	case ClassOptimizer:
		return "optimizer"
	}
	return "unknown"
}

// KernelTimes is the wall time a host backend's kernels took by class,
// and the work they did.
type KernelTimes struct {
	ProductsS    float64    `json:"products_s"`
	AggregationS float64    `json:"aggregation_s"`
	RowGatherS   float64    `json:"row_gather_s"`
	ElementwiseS float64    `json:"elementwise_s"`
	LossS        float64    `json:"loss_s"`
	OptimizerS   float64    `json:"optimizer_s"`
	Work         KernelWork `json:"work"`
}

// KernelWork is the work each class did, in the units its rate is
// measured in (kernels.MeasureGemm, MeasureRowGather, MeasureAggregation,
// MeasureStream).
type KernelWork struct {
	// ProductGFLOP is 2mnk summed over the products, in 1e9.
	ProductGFLOP float64 `json:"product_GFLOP"`
	// AggregationGB is the source rows read over the blocks' edges: an
	// edge's row width in bytes, per edge and per pass.
	AggregationGB float64 `json:"aggregation_GB"`
	// RowGatherGB and RowGatherRows are the rows gathered or scattered by
	// index and their bytes.
	RowGatherGB   float64 `json:"row_gather_GB"`
	RowGatherRows float64 `json:"row_gather_rows"`
	// ElementwiseGB is the bytes the in-order passes read and wrote.
	ElementwiseGB float64 `json:"elementwise_GB"`
	// OptimizerGB is the bytes the optimizer read and wrote.
	OptimizerGB float64 `json:"optimizer_GB"`
}

// TotalS is the kernels' time summed over the classes.
func (k KernelTimes) TotalS() float64 {
	return k.ProductsS + k.AggregationS + k.RowGatherS + k.ElementwiseS + k.LossS + k.OptimizerS
}

// Add returns k + o, class by class.
func (k KernelTimes) Add(o KernelTimes) KernelTimes { return k.axpy(1, o) }

// Sub returns k - o, class by class.
func (k KernelTimes) Sub(o KernelTimes) KernelTimes { return k.axpy(-1, o) }

// Scale returns k with every figure multiplied by f.
func (k KernelTimes) Scale(f float64) KernelTimes { return KernelTimes{}.axpy(f, k) }

func (k KernelTimes) axpy(a float64, o KernelTimes) KernelTimes {
	w, v := k.Work, o.Work
	return KernelTimes{
		ProductsS: k.ProductsS + a*o.ProductsS, AggregationS: k.AggregationS + a*o.AggregationS,
		RowGatherS: k.RowGatherS + a*o.RowGatherS, ElementwiseS: k.ElementwiseS + a*o.ElementwiseS,
		LossS: k.LossS + a*o.LossS, OptimizerS: k.OptimizerS + a*o.OptimizerS,
		Work: KernelWork{
			ProductGFLOP: w.ProductGFLOP + a*v.ProductGFLOP, AggregationGB: w.AggregationGB + a*v.AggregationGB,
			RowGatherGB: w.RowGatherGB + a*v.RowGatherGB, RowGatherRows: w.RowGatherRows + a*v.RowGatherRows,
			ElementwiseGB: w.ElementwiseGB + a*v.ElementwiseGB, OptimizerGB: w.OptimizerGB + a*v.OptimizerGB,
		},
	}
}

// Tally is a host Backend that times every kernel of the Backend it wraps
// by class, so a trainer can report what its step is made of next to what
// a model predicts for each part. A host backend's kernels run to the end
// before they return, so the wall time around a call is the kernel's. It
// is safe for concurrent use; calls on several goroutines at once each
// count their own wall time.
type Tally struct {
	Backend
	mu sync.Mutex
	t  [numKernelClasses]time.Duration
	w  KernelWork
}

// NewTally returns b timed by class. b must be a host backend (the CPU):
// a device's kernels return before they run.
func NewTally(b Backend) *Tally { return &Tally{Backend: b} }

// Times returns the time each class has taken since NewTally.
func (t *Tally) Times() KernelTimes {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := func(c KernelClass) float64 { return t.t[c].Seconds() }
	return KernelTimes{ProductsS: s(ClassProduct), AggregationS: s(ClassAggregate), RowGatherS: s(ClassGather),
		ElementwiseS: s(ClassElementwise), LossS: s(ClassLoss), OptimizerS: s(ClassOptimizer), Work: t.w}
}

// Unwrap returns the timed backend.
func (t *Tally) Unwrap() Backend { return t.Backend }

// add counts a call of class c that started at t0 and did work units of
// its class's work (bytes, or FLOPs for products; rows besides for row
// gathers).
func (t *Tally) add(c KernelClass, t0 time.Time, work, rows float64) {
	d := time.Since(t0)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.t[c] += d
	switch c {
	case ClassProduct:
		t.w.ProductGFLOP += work / 1e9
	case ClassAggregate:
		t.w.AggregationGB += work / 1e9
	case ClassGather:
		t.w.RowGatherGB += work / 1e9
		t.w.RowGatherRows += rows
	case ClassElementwise:
		t.w.ElementwiseGB += work / 1e9
	case ClassOptimizer:
		t.w.OptimizerGB += work / 1e9
	}
}

// passBytes is passes over m's elements in bytes.
func passBytes(passes int, ms ...*Mat) float64 {
	var n float64
	for _, m := range ms {
		n += float64(m.Len())
	}
	return 4 * float64(passes) * n
}

// edgeBytes is a pass over g's edges reading a row of cols values each.
func edgeBytes(g *CSR, cols int) float64 { return 4 * float64(g.NumEdges) * float64(cols) }

// Zero implements Backend.
func (t *Tally) Zero(m *Mat) {
	defer t.add(ClassElementwise, time.Now(), passBytes(1, m), 0)
	t.Backend.Zero(m)
}

// Copy implements Backend.
func (t *Tally) Copy(dst, src *Mat) {
	defer t.add(ClassElementwise, time.Now(), passBytes(2, dst), 0)
	t.Backend.Copy(dst, src)
}

// Gemm implements Backend.
func (t *Tally) Gemm(transA, transB bool, alpha float32, a, b *Mat, beta float32, c *Mat) {
	defer t.add(ClassProduct, time.Now(), gemmFLOPs(transA, transB, a, b), 0)
	t.Backend.Gemm(transA, transB, alpha, a, b, beta, c)
}

// GatherRows implements Backend.
func (t *Tally) GatherRows(dst, src *Mat, idx *Index) {
	defer t.add(ClassGather, time.Now(), passBytes(1, dst), float64(dst.Rows))
	t.Backend.GatherRows(dst, src, idx)
}

// GatherRowsTwo implements Backend.
func (t *Tally) GatherRowsTwo(dst, a, b *Mat, idx *Index) {
	defer t.add(ClassGather, time.Now(), passBytes(1, dst), float64(dst.Rows))
	t.Backend.GatherRowsTwo(dst, a, b, idx)
}

// ScatterAddRows implements Backend.
func (t *Tally) ScatterAddRows(dst, src *Mat, idx *Index) {
	defer t.add(ClassGather, time.Now(), passBytes(1, src), float64(src.Rows))
	t.Backend.ScatterAddRows(dst, src, idx)
}

// SegmentMean implements Backend.
func (t *Tally) SegmentMean(out, x *Mat, g *CSR) {
	defer t.add(ClassAggregate, time.Now(), edgeBytes(g, x.Cols), 0)
	t.Backend.SegmentMean(out, x, g)
}

// SegmentMeanBackward implements Backend.
func (t *Tally) SegmentMeanBackward(dx, dout *Mat, g *CSR) {
	defer t.add(ClassAggregate, time.Now(), edgeBytes(g, dx.Cols), 0)
	t.Backend.SegmentMeanBackward(dx, dout, g)
}

// WeightedSum implements Backend.
func (t *Tally) WeightedSum(out, x, w *Mat, g *CSR) {
	defer t.add(ClassAggregate, time.Now(), edgeBytes(g, x.Cols), 0)
	t.Backend.WeightedSum(out, x, w, g)
}

// WeightedSumBackward implements Backend.
func (t *Tally) WeightedSumBackward(dx, dout, w *Mat, g *CSR) {
	defer t.add(ClassAggregate, time.Now(), edgeBytes(g, dx.Cols), 0)
	t.Backend.WeightedSumBackward(dx, dout, w, g)
}

// EdgeDot implements Backend.
func (t *Tally) EdgeDot(s, a, b *Mat, g *CSR) {
	defer t.add(ClassAggregate, time.Now(), edgeBytes(g, b.Cols), 0)
	t.Backend.EdgeDot(s, a, b, g)
}

// HeadDot implements Backend.
func (t *Tally) HeadDot(out, x, a *Mat) {
	defer t.add(ClassElementwise, time.Now(), passBytes(1, x), 0)
	t.Backend.HeadDot(out, x, a)
}

// HeadDotBackward implements Backend.
func (t *Tally) HeadDotBackward(dx, da, dout, x, a *Mat) {
	defer t.add(ClassElementwise, time.Now(), passBytes(2, x), 0)
	t.Backend.HeadDotBackward(dx, da, dout, x, a)
}

// EdgeAdd implements Backend.
func (t *Tally) EdgeAdd(s, el, er *Mat, g *CSR) {
	defer t.add(ClassAggregate, time.Now(), edgeBytes(g, s.Cols), 0)
	t.Backend.EdgeAdd(s, el, er, g)
}

// EdgeAddBackward implements Backend.
func (t *Tally) EdgeAddBackward(del, der, ds *Mat, g *CSR) {
	defer t.add(ClassAggregate, time.Now(), edgeBytes(g, ds.Cols), 0)
	t.Backend.EdgeAddBackward(del, der, ds, g)
}

// EdgeSoftmax implements Backend.
func (t *Tally) EdgeSoftmax(a, e *Mat, g *CSR) {
	defer t.add(ClassAggregate, time.Now(), edgeBytes(g, 2*e.Cols), 0)
	t.Backend.EdgeSoftmax(a, e, g)
}

// EdgeSoftmaxBackward implements Backend.
func (t *Tally) EdgeSoftmaxBackward(de, da, a *Mat, g *CSR) {
	defer t.add(ClassAggregate, time.Now(), edgeBytes(g, 3*a.Cols), 0)
	t.Backend.EdgeSoftmaxBackward(de, da, a, g)
}

// HeadMean implements Backend.
func (t *Tally) HeadMean(out, x *Mat) {
	defer t.add(ClassElementwise, time.Now(), passBytes(1, out, x), 0)
	t.Backend.HeadMean(out, x)
}

// HeadMeanBackward implements Backend.
func (t *Tally) HeadMeanBackward(dx, dout *Mat) {
	defer t.add(ClassElementwise, time.Now(), passBytes(1, dx, dout), 0)
	t.Backend.HeadMeanBackward(dx, dout)
}

// AddBias implements Backend.
func (t *Tally) AddBias(m, bias *Mat) {
	defer t.add(ClassElementwise, time.Now(), passBytes(2, m), 0)
	t.Backend.AddBias(m, bias)
}

// SumRows implements Backend.
func (t *Tally) SumRows(out, m *Mat, beta float32) {
	defer t.add(ClassElementwise, time.Now(), passBytes(1, m), 0)
	t.Backend.SumRows(out, m, beta)
}

// Axpy implements Backend.
func (t *Tally) Axpy(alpha float32, x, y *Mat) {
	defer t.add(ClassElementwise, time.Now(), passBytes(3, x), 0)
	t.Backend.Axpy(alpha, x, y)
}

// Scale implements Backend.
func (t *Tally) Scale(m *Mat, alpha float32) {
	defer t.add(ClassElementwise, time.Now(), passBytes(2, m), 0)
	t.Backend.Scale(m, alpha)
}

// Act implements Backend.
func (t *Tally) Act(f Activation, y, x *Mat) {
	defer t.add(ClassElementwise, time.Now(), passBytes(2, x), 0)
	t.Backend.Act(f, y, x)
}

// ActBackward implements Backend.
func (t *Tally) ActBackward(f Activation, dx, dy, x, y *Mat) {
	defer t.add(ClassElementwise, time.Now(), passBytes(4, dy), 0)
	t.Backend.ActBackward(f, dx, dy, x, y)
}

// ActDropout implements Backend.
func (t *Tally) ActDropout(f Activation, y, x *Mat, p float32, seed uint64) {
	defer t.add(ClassElementwise, time.Now(), passBytes(2, x), 0)
	t.Backend.ActDropout(f, y, x, p, seed)
}

// ActDropoutBackward implements Backend.
func (t *Tally) ActDropoutBackward(f Activation, dx, dy, y *Mat, p float32, seed uint64) {
	defer t.add(ClassElementwise, time.Now(), passBytes(3, dy), 0)
	t.Backend.ActDropoutBackward(f, dx, dy, y, p, seed)
}

// Dropout implements Backend.
func (t *Tally) Dropout(y, x *Mat, p float32, seed uint64) {
	defer t.add(ClassElementwise, time.Now(), passBytes(2, x), 0)
	t.Backend.Dropout(y, x, p, seed)
}

// DropoutBackward implements Backend.
func (t *Tally) DropoutBackward(dx, dy *Mat, p float32, seed uint64) {
	defer t.add(ClassElementwise, time.Now(), passBytes(2, dy), 0)
	t.Backend.DropoutBackward(dx, dy, p, seed)
}

// SoftmaxCrossEntropy implements Backend.
func (t *Tally) SoftmaxCrossEntropy(dlogits, logits *Mat, labels *Index, scale float32) (float64, int) {
	defer t.add(ClassLoss, time.Now(), 0, 0)
	return t.Backend.SoftmaxCrossEntropy(dlogits, logits, labels, scale)
}

// Argmax implements Backend.
func (t *Tally) Argmax(dst []int32, m *Mat) {
	defer t.add(ClassLoss, time.Now(), 0, 0)
	t.Backend.Argmax(dst, m)
}

// Adam implements Backend.
func (t *Tally) Adam(p, g, m, v *Mat, o AdamStep) {
	defer t.add(ClassOptimizer, time.Now(), passBytes(7, p), 0)
	t.Backend.Adam(p, g, m, v, o)
}

// gemmFLOPs is 2mnk for op(a) (m x k) times op(b) (k x n).
func gemmFLOPs(transA, transB bool, a, b *Mat) float64 {
	m, k := a.Rows, a.Cols
	if transA {
		m, k = k, m
	}
	n := b.Cols
	if transB {
		n = b.Rows
	}
	return 2 * float64(m) * float64(k) * float64(n)
}
