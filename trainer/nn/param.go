package nn

import (
	"math"
	"math/rand/v2"

	"github.com/gnnplan/gnnplan/kernels"
)

// Param is one learnable tensor with its gradient and Adam's moments.
type Param struct {
	Name string
	// W is the value; G the gradient of the last Backward (overwritten,
	// not accumulated, by each Backward); M and V Adam's first and
	// second moments.
	W, G, M, V *kernels.Mat
}

func newParam(b kernels.Backend, name string, rows, cols int, init []float32) *Param {
	p := &Param{Name: name, W: b.NewMat(rows, cols), G: b.NewMat(rows, cols), M: b.NewMat(rows, cols), V: b.NewMat(rows, cols)}
	if init != nil {
		b.Upload(p.W, rows, cols, init)
	}
	return p
}

// glorotUniform returns n values uniform in +-gain*sqrt(6/(fanIn+fanOut))
// (PyTorch's xavier_uniform_).
func glorotUniform(r *rand.Rand, n, fanIn, fanOut int, gain float64) []float32 {
	bound := gain * math.Sqrt(6/float64(fanIn+fanOut))
	out := make([]float32, n)
	for i := range out {
		out[i] = float32((2*r.Float64() - 1) * bound)
	}
	return out
}

// glorotNormal returns n values from N(0, gain^2 * 2/(fanIn+fanOut))
// (PyTorch's xavier_normal_).
func glorotNormal(r *rand.Rand, n, fanIn, fanOut int, gain float64) []float32 {
	std := gain * math.Sqrt(2/float64(fanIn+fanOut))
	out := make([]float32, n)
	for i := range out {
		out[i] = float32(r.NormFloat64() * std)
	}
	return out
}

// reluGain is PyTorch's calculate_gain("relu").
const reluGain = math.Sqrt2

// Adam is the optimizer: PyTorch's torch.optim.Adam with L2 weight decay
// added to the gradient.
type Adam struct {
	LR, Beta1, Beta2, Eps, WeightDecay float32
	// Steps counts the updates made so far (checkpointed with the
	// moments, so a resumed run continues the same sequence).
	Steps int
}

// NewAdam returns Adam with PyTorch's defaults (betas 0.9, 0.999, eps 1e-8).
func NewAdam(lr, weightDecay float32) *Adam {
	return &Adam{LR: lr, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: weightDecay}
}

// Step updates every parameter from its gradient.
func (a *Adam) Step(b kernels.Backend, params []*Param) {
	a.Steps++
	o := kernels.AdamStep{LR: a.LR, Beta1: a.Beta1, Beta2: a.Beta2, Eps: a.Eps, WeightDecay: a.WeightDecay, T: a.Steps}
	for _, p := range params {
		b.Adam(p.W, p.G, p.M, p.V, o)
	}
}
