package kernels

import (
	"fmt"
	"math"
)

// kernelID names one of the CUDA kernels in internal/cudac/kernels.cu.
type kernelID int

// The kernels, in kernelNames' order.
const (
	kFill kernelID = iota
	kCopy
	kGatherRows
	kScatterAddRows
	kAddBias
	kColumnPartials
	kAddPartials
	kAxpy
	kScale
	kActDropout
	kActBackward
	kActDropoutBackward
	kSoftmaxXent
	kArgmax
	kAdam
	kSegmentMean
	kSegmentMeanBackward
	kWeightedSum
	kWeightedSumBackward
	kEdgeDot
	kHeadDot
	kHeadDotBackwardDx
	kEdgeAdd
	kEdgeAddBackwardDst
	kEdgeAddBackwardSrc
	kEdgeSoftmax
	kEdgeSoftmaxBackward
	kHeadMean
	kHeadMeanBackward
	kGatherRowsTwo
	numKernels
)

// kernelNames are the kernels' entry points in the PTX.
var kernelNames = [numKernels]string{
	"gp_fill", "gp_copy", "gp_gather_rows", "gp_scatter_add_rows", "gp_add_bias",
	"gp_column_partials", "gp_add_partials", "gp_axpy", "gp_scale", "gp_act_dropout",
	"gp_act_backward", "gp_act_dropout_backward", "gp_softmax_xent", "gp_argmax", "gp_adam",
	"gp_segment_mean", "gp_segment_mean_backward", "gp_weighted_sum", "gp_weighted_sum_backward",
	"gp_edge_dot", "gp_head_dot", "gp_head_dot_backward_dx", "gp_edge_add",
	"gp_edge_add_backward_dst", "gp_edge_add_backward_src", "gp_edge_softmax",
	"gp_edge_softmax_backward", "gp_head_mean", "gp_head_mean_backward", "gp_gather_rows2",
}

func (k kernelID) String() string {
	if k < 0 || k >= numKernels {
		return fmt.Sprintf("kernelID(%d)", int(k))
	}
	return kernelNames[k]
}

// gpArgs is every kernel's parameters, gp_args in
// internal/cudac/kernels.cu: device pointers, integers and floating-point
// values, each 8 bytes, so the Go and C layouts agree with no padding
// (192 bytes). A launch passes its 24 fields as 24 parameters.
type gpArgs struct {
	P [8]uint64
	N [8]int64
	F [8]float64
}

// gpArgsFields is the number of parameters every kernel takes, and
// gpArgsBytes gp_args' size.
const (
	gpArgsFields = 8 + 8 + 8
	gpArgsBytes  = 8 * gpArgsFields
)

// Launch geometry. Kernels walk their work with a grid-stride loop, so
// any geometry covers it; these keep the GPU full without launching a
// thread per element of a billion-element matrix.
const (
	// launchBlock is the threads per block: a multiple of the warp (32)
	// that every GPU since compute capability 3.0 runs at full occupancy
	// for kernels of this register use.
	launchBlock = 256
	// launchMaxGrid caps the blocks of one launch: 4096 x 256 threads is
	// about four times what the largest GPUs keep resident (an H100's
	// 132 SMs x 2048 threads), and far below the 2^31-1 blocks the x
	// dimension allows.
	launchMaxGrid = 4096
)

// launchGeometry returns the blocks and threads per block for a kernel
// whose grid-stride loop runs over total items; grid 0 means nothing to
// launch.
func launchGeometry(total int64) (grid, block uint32) {
	if total <= 0 {
		return 0, launchBlock
	}
	blocks := (total + launchBlock - 1) / launchBlock
	return uint32(min(blocks, launchMaxGrid)), launchBlock
}

// reduceChunks is the number of GP_REDUCE_CHUNK-row chunks a column
// reduction over rows cuts into (the same chunks as the CPU's
// reduceChunk, so the sums are the same).
func reduceChunks(rows int) int { return (rows + reduceChunk - 1) / reduceChunk }

// dropArgs returns a dropout's threshold, seed and scale as the kernels
// take them: scale is 1 when nothing is dropped, as the CPU backend's
// backward passes use.
func dropArgs(p float32, seed uint64) (threshold int64, seedBits int64, scale float64) {
	m := dropMask(p, seed)
	if m.Threshold == 0 {
		return 0, int64(seed), 1
	}
	return int64(m.Threshold), int64(seed), float64(m.Scale)
}

// adamArgs returns Adam's per-step constants as gp_adam takes them: the
// step size lr/(1-b1^t) and sqrt(1-b2^t), computed as the CPU backend
// computes them.
func adamArgs(o AdamStep) (step, bc2sqrt float32) {
	bc1 := 1 - math.Pow(float64(o.Beta1), float64(o.T))
	bc2 := 1 - math.Pow(float64(o.Beta2), float64(o.T))
	return float32(float64(o.LR) / bc1), float32(math.Sqrt(bc2))
}

// cublasGemm is one cublasSgemm call in cuBLAS's column-major terms.
type cublasGemm struct {
	TransA, TransB bool
	M, N, K        int
	// A and B say which row-major operand goes in cuBLAS's A and B slot:
	// swapped is true when cuBLAS's A is the caller's B.
	Swapped       bool
	LDA, LDB, LDC int
}

// rowMajorToCublas maps a row-major C = op(A)*op(B) (C m x n, leading
// dimensions lda, ldb, ldc) onto column-major cuBLAS: a row-major matrix
// is its transpose in column-major, so C^T = op(B)^T * op(A)^T is one
// column-major product with the operands swapped, m and n swapped, and
// each operand's transpose flag unchanged.
func rowMajorToCublas(transA, transB bool, m, n, k, lda, ldb, ldc int) cublasGemm {
	return cublasGemm{TransA: transB, TransB: transA, M: n, N: m, K: k, Swapped: true, LDA: ldb, LDB: lda, LDC: ldc}
}
