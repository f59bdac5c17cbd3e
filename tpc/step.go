package tpc

import "fmt"

// StepWork is one training step's kernel work on a worker, by the classes
// a host backend times apart (kernels.Tally) and a machine's rates price:
// the dense products in GFLOP, the aggregations' source rows read over the
// blocks' edges, the batch's input rows gathered, the in-order passes
// (bias, activations, dropout, zeroing, copies) and the optimizer, in GB.
// It mirrors kernels.KernelWork field for field; tpc keeps its own type so
// that planning does not link the kernels' BLAS.
type StepWork struct {
	ProductGFLOP  float64 `json:"product_GFLOP"`
	AggregationGB float64 `json:"aggregation_GB"`
	RowGatherGB   float64 `json:"row_gather_GB"`
	RowGatherRows float64 `json:"row_gather_rows"`
	ElementwiseGB float64 `json:"elementwise_GB"`
	OptimizerGB   float64 `json:"optimizer_GB"`
}

// flopsPerRowByte is package nn's exchange rate between GEMM FLOPs and the
// aggregation's row bytes when a layer picks whether to transform its
// sources before aggregating them (trainer/nn/order.go); the trainer's
// tests hold the two equal through StepWork.
const flopsPerRowByte = 16

// transformFirst is package nn's choice for a GraphSAGE or GCN layer:
// multiply tfRows rows and aggregate out-wide rows, or aggregate in-wide
// rows and multiply afRows rows, whichever costs less.
func transformFirst(in, out, tfRows, afRows, edges float64) bool {
	tf := 2*2*in*out*tfRows + flopsPerRowByte*4*edges*out
	af := 2*2*in*out*afRows + flopsPerRowByte*4*edges*in
	return tf < af
}

// StepWork is the kernel work of one step of w on blocks (the seeds'
// block first, as Workload.PerBatch and pre-sampling give them) when
// inputRows rows are gathered into the batch's input (0 when a store's
// gather stage copies them outside the step). It follows package nn's
// layers kernel by kernel, with no input dropout (a plan's training): a
// GraphSAGE or GCN model whose first layer widens its input (in <= out)
// then aggregates from the features in place, gathering no input rows
// (ReadsFeaturesInPlace) but GraphSAGE its destinations' own. GCN and GAT
// blocks carry a self loop per destination.
func (w Workload) StepWork(blocks []BlockShape, inputRows float64) (StepWork, error) {
	if len(blocks) != len(w.Fanouts) || len(blocks) == 0 {
		return StepWork{}, fmt.Errorf("step work: %d blocks for %d layers", len(blocks), len(w.Fanouts))
	}
	const f4 = 4.0 // bytes per float32
	var s StepWork
	var flops, agg, elem float64
	in := float64(w.FeatureDim)
	heads := float64(max(w.Heads, 1))
	L := len(blocks)
	inPlace := inputRows > 0 && (w.Model == ModelGraphSAGE || w.Model == ModelGCN) && w.FeatureDim <= w.Hidden && L > 1
	if inPlace {
		s.RowGatherRows = 0
		if w.Model == ModelGraphSAGE {
			s.RowGatherRows = blocks[L-1].Dst
		}
	} else {
		s.RowGatherRows = inputRows
	}
	for l := range L {
		b := blocks[L-1-l]
		last, first := l == L-1, l == 0
		dst, src, edges := b.Dst, b.Src, b.Edges
		out := float64(w.Hidden)
		if last {
			out = float64(w.Classes)
		}
		width := out // the layer's output row
		switch w.Model {
		case ModelGraphSAGE:
			if !(first && inPlace) && transformFirst(in, out, src+dst, 2*dst, edges) {
				flops += 2*src*in*out + 2*dst*in*out // x W_neigh, x_dst W_self
				agg += edges * out * f4              // mean of the transformed sources
				flops += 2*dst*in*out + 2*src*in*out // the weight gradients
				agg += edges * out * f4              // the mean's gradient
				elem += src * out * f4               // zeroing it
				if !first {
					flops += 2*src*out*in + 2*dst*out*in // the input gradient
				}
			} else {
				if !(first && inPlace) {
					elem += 2 * dst * in * f4 // x_dst copied beside the mean (gathered when in place)
				}
				agg += edges * in * f4          // mean of the sources
				flops += 2 * dst * 2 * in * out // [x_dst | mean] W
				flops += 2 * dst * 2 * in * out // the weight gradient
				if !first {
					flops += 2 * dst * out * 2 * in // the stack's gradient
					elem += src*in*f4 + 2*dst*in*f4 // zeroing dx, copying the self part
					agg += edges * in * f4          // the mean's gradient
				}
			}
		case ModelGCN:
			e := edges + dst // self loops
			if !(first && inPlace) && transformFirst(in, out, src, dst, e) {
				flops += 2 * src * in * out
				agg += e * out * f4
				agg += e * out * f4
				elem += src * out * f4
				flops += 2 * src * in * out
				if !first {
					flops += 2 * src * out * in
				}
			} else {
				agg += e * in * f4
				flops += 2 * dst * in * out
				flops += 2 * dst * in * out
				if !first {
					flops += 2 * dst * out * in
					elem += src * in * f4
					agg += e * in * f4
				}
			}
		case ModelGAT:
			e := edges + dst
			heads := heads
			if last {
				heads = 1 // the trainer's output layer: one head (OutHeads)
			}
			hf := heads * out
			flops += 2 * src * in * hf                           // z = x W
			elem += (src + dst) * hf * f4                        // the attention dots
			agg += e*heads*f4 + e*2*heads*f4                     // scores, their softmax
			elem += 2 * e * heads * f4                           // LeakyReLU on the scores
			agg += e * hf * f4                                   // the weighted sum
			elem += src * hf * f4                                // zeroing dz
			agg += e*hf*f4 + e*hf*f4 + e*3*heads*f4 + e*heads*f4 // its gradient, the edge dots, softmax's and the scores' gradients
			elem += 4*e*heads*f4 + 2*(src+dst)*hf*f4             // LeakyReLU's gradient, the attention dots' gradients
			flops += 2 * src * in * hf                           // the weight gradient
			if !first {
				flops += 2 * src * hf * in
			}
			width = hf
			if last {
				elem += 2 * (dst*hf + dst*out) * f4 // the head mean and its gradient
			}
			elem += 4 * e * heads * f4 // attention dropout (the trainer's default), and back
		default:
			return StepWork{}, fmt.Errorf("step work: model %q (want %v)", w.Model, modelNames())
		}
		elem += 2*dst*width*f4 + dst*width*f4 // the bias and its gradient
		if !last {
			elem += 2*dst*width*f4 + 3*dst*width*f4 // activation and dropout, and back
		}
		if w.Model == ModelGAT && !last {
			in = heads * out
		} else {
			in = out
		}
	}
	s.ProductGFLOP = flops / 1e9
	s.AggregationGB = agg / 1e9
	s.ElementwiseGB = elem / 1e9
	s.RowGatherGB = s.RowGatherRows * float64(w.FeatureDim) * f4 / 1e9
	s.OptimizerGB = 7 * float64(w.Params()) * f4 / 1e9
	return s, nil
}

// OuterAggregation is the shape of the aggregation over the outermost
// block (the input layer's, which reads most of a step's source rows):
// the width of the rows it reads, how many rows it reads them among (the
// batch's input rows, the features' whole matrix when the layer reads it
// in place, or its sources transformed first) and its fanout. A profile
// measures the aggregation's rate at this shape.
func (w Workload) OuterAggregation(blocks []BlockShape, inputRows float64) (cols int, tableRows float64, fanout int) {
	if len(blocks) == 0 || len(w.Fanouts) != len(blocks) {
		return w.Hidden, inputRows, 10
	}
	b := blocks[len(blocks)-1]
	fanout = w.Fanouts[len(w.Fanouts)-1]
	in, out := float64(w.FeatureDim), float64(w.Hidden)
	if len(blocks) == 1 {
		out = float64(w.Classes)
	}
	inPlace := (w.Model == ModelGraphSAGE || w.Model == ModelGCN) && w.FeatureDim <= w.Hidden && len(blocks) > 1
	switch {
	case inPlace:
		return w.FeatureDim, float64(w.Vertices), fanout
	case w.Model == ModelGAT:
		return w.Hidden * max(w.Heads, 1), b.Src, fanout
	case w.Model == ModelGraphSAGE && transformFirst(in, out, b.Src+b.Dst, 2*b.Dst, b.Edges),
		w.Model == ModelGCN && transformFirst(in, out, b.Src, b.Dst, b.Edges+b.Dst):
		return int(out), b.Src, fanout
	}
	return w.FeatureDim, b.Src, fanout
}
