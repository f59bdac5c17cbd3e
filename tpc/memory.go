package tpc

import "fmt"

// WorkingSet is what training holds in one GPU's memory besides the
// caches, by part, as package nn's layers and the trainer's pipeline
// allocate it on the GPU backend (docs/tpc-nlp.md, "GPU memory").
type WorkingSet struct {
	// ParamsGiB is the weights, their gradients and Adam's two moments.
	ParamsGiB float64 `json:"params_GiB"`
	// ActivationsGiB is the layers' matrices for one batch: outputs,
	// aggregations, the gradients kept for the backward pass, the
	// logits and their gradient.
	ActivationsGiB float64 `json:"activations_GiB"`
	// InputGiB is the batch's input rows on the device: InputBuffers
	// copies in flight (one computed on, one uploading), and one more
	// gathered in the batch's order when a feature cache is resident.
	InputGiB float64 `json:"input_GiB"`
	// BlocksGiB is the sampled blocks' CSR (with the transposes the
	// backward pass builds) of the batches the pipeline holds.
	BlocksGiB float64 `json:"blocks_GiB"`
	// ContextGiB is the assumption GPUContextGiB: the CUDA context,
	// cuBLAS's workspace and the allocator's slack.
	ContextGiB float64 `json:"context_GiB"`
	TotalGiB   float64 `json:"total_GiB"`
}

// The trainer's pipeline on a GPU (trainer/prefetch.go): two device
// buffers take the batches' input rows in turn, and the blocks of up to
// pipelineBatches batches are on the device at once (the step's, two
// gathered ahead, two prepared for the gather stage).
const (
	InputBuffers    = 2
	pipelineBatches = 5
	// growthFactor is the GPU backend's allowance: it grows a buffer to
	// an eighth beyond what is asked, so a larger batch later reuses it.
	growthFactor = 9.0 / 8
)

// GPUWorkingSet is w's working set on one GPU for a batch of the given
// block shapes (the seeds' block first) with inputRows input rows, where
// cached says whether a feature cache is resident on the GPU. It follows
// package nn's layers matrix by matrix, with no input dropout (a plan's
// training) and the input gathered from a feature source (never read in
// place, as out-of-core training on a GPU does).
func (w Workload) GPUWorkingSet(blocks []BlockShape, inputRows float64, cached bool, a Assumptions) (WorkingSet, error) {
	if len(blocks) != len(w.Fanouts) || len(blocks) == 0 {
		return WorkingSet{}, fmt.Errorf("working set: %d blocks for %d layers", len(blocks), len(w.Fanouts))
	}
	const f4 = 4.0
	var act, csr float64
	in := float64(w.FeatureDim)
	L := len(blocks)
	for l := range L {
		b := blocks[L-1-l]
		last, first := l == L-1, l == 0
		dst, src, edges := b.Dst, b.Src, b.Edges
		out := float64(w.Hidden)
		if last {
			out = float64(w.Classes)
		}
		width := out
		dx := 0.0 // the input's gradient, which the first layer skips
		if !first {
			dx = src * in
		}
		switch w.Model {
		case ModelGraphSAGE:
			csr += (dst+1)*f4 + edges*f4 + (src+1)*f4 + 2*edges*f4 // Nbr and its transpose
			act += dst * out                                       // y
			if transformFirst(in, out, src+dst, 2*dst, edges) {
				act += 2*src*out + dx // p, dp
			} else {
				act += dst * 2 * in // z
				if !first {
					act += dst*2*in + dx // dz
				}
			}
		case ModelGCN:
			e := edges + dst
			csr += (dst+1)*f4 + e*f4 + (src+1)*f4 + 2*e*f4 + e*f4 // Self, its transpose, the weights
			act += dst * out
			if transformFirst(in, out, src, dst, e) {
				act += 2*src*out + dx
			} else {
				act += dst * in
				if !first {
					act += dst*in + dx
				}
			}
		case ModelGAT:
			e := edges + dst
			csr += (dst+1)*f4 + e*f4 + (src+1)*f4 + 2*e*f4
			heads := float64(max(w.Heads, 1))
			if last {
				heads = 1
			}
			hf := heads * out
			act += src*hf + src*heads + dst*heads // z, el, er
			act += 4 * e * heads                  // scores, LeakyReLU, softmax, dropped
			act += dst * hf                       // y
			act += src*hf + 2*e*heads             // dz, dalpha, de
			act += src*heads + dst*heads + dx     // del, der, dx
			if last {
				act += dst*out + dst*hf // the head mean, its gradient's spread
			} else {
				width = hf
			}
		default:
			return WorkingSet{}, fmt.Errorf("working set: model %q (want %v)", w.Model, modelNames())
		}
		if !last {
			act += dst * width // the activation and dropout's output
		}
		in = width
	}
	seeds := blocks[0].Dst
	act += seeds * float64(w.Classes) // the loss's gradient
	gib := func(bytes float64) float64 { return bytes * growthFactor / (1 << 30) }
	inputs := float64(InputBuffers)
	if cached {
		inputs++
	}
	ws := WorkingSet{
		ParamsGiB:      gib(4 * f4 * float64(w.Params())),
		ActivationsGiB: gib(f4 * act),
		InputGiB:       gib(inputs * inputRows * float64(w.FeatureDim) * f4),
		BlocksGiB:      gib(pipelineBatches * (csr + seeds*f4)),
		ContextGiB:     a.GPUContextGiB,
	}
	ws.TotalGiB = ws.ParamsGiB + ws.ActivationsGiB + ws.InputGiB + ws.BlocksGiB + ws.ContextGiB
	return ws, nil
}
