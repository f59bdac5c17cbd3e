package nn

import (
	"fmt"
	"math/rand/v2"

	"github.com/gnnplan/gnnplan/internal/rng"

	"github.com/gnnplan/gnnplan/kernels"
)

// Kind names a model.
type Kind string

// The models gnnplan trains.
const (
	GraphSAGE Kind = "graphsage"
	GCN       Kind = "gcn"
	GAT       Kind = "gat"
)

// Kinds lists the models, in a fixed order.
func Kinds() []Kind { return []Kind{GraphSAGE, GCN, GAT} }

// ParseKind returns the model named s (case as written in Kinds).
func ParseKind(s string) (Kind, error) {
	for _, k := range Kinds() {
		if string(k) == s {
			return k, nil
		}
	}
	return "", fmt.Errorf("unknown model %q (want graphsage, gcn or gat)", s)
}

// Config describes a model's shape and regularisation.
type Config struct {
	Kind    Kind `json:"kind"`
	InDim   int  `json:"in_dim"` // feature width
	Classes int  `json:"classes"`
	// Layers is the number of graph layers, one per sampled hop.
	Layers int `json:"layers"`
	// Hidden is the width of hidden layers (per head for GAT).
	Hidden int `json:"hidden"`
	// Heads is GAT's number of heads on hidden layers (concatenated);
	// OutHeads on the output layer (averaged).
	Heads    int `json:"heads,omitempty"`
	OutHeads int `json:"out_heads,omitempty"`
	// InputDropout applies to the features (the first layer's input),
	// Dropout to every other layer's input, AttnDropout to GAT's
	// attention weights.
	InputDropout float32 `json:"input_dropout"`
	Dropout      float32 `json:"dropout"`
	AttnDropout  float32 `json:"attn_dropout,omitempty"`
	// Slope is GAT's LeakyReLU negative slope.
	Slope float32 `json:"slope,omitempty"`
}

// Check returns an error naming the first field out of range.
func (c Config) Check() error {
	switch {
	case c.Kind != GraphSAGE && c.Kind != GCN && c.Kind != GAT:
		return fmt.Errorf("unknown model %q (want graphsage, gcn or gat)", c.Kind)
	case c.InDim < 1:
		return fmt.Errorf("feature width %d (want >= 1)", c.InDim)
	case c.Classes < 2:
		return fmt.Errorf("%d classes (want >= 2)", c.Classes)
	case c.Layers < 1:
		return fmt.Errorf("%d layers (want >= 1)", c.Layers)
	case c.Layers > 1 && c.Hidden < 1:
		return fmt.Errorf("hidden width %d (want >= 1)", c.Hidden)
	case c.Kind == GAT && (c.Heads < 1 || c.OutHeads < 1):
		return fmt.Errorf("GAT heads %d, output heads %d (want >= 1)", c.Heads, c.OutHeads)
	case c.Dropout < 0 || c.Dropout >= 1 || c.InputDropout < 0 || c.InputDropout >= 1 || c.AttnDropout < 0 || c.AttnDropout >= 1:
		return fmt.Errorf("dropout %g, input dropout %g, attention dropout %g (want [0, 1))", c.Dropout, c.InputDropout, c.AttnDropout)
	}
	return nil
}

// layer is one graph convolution over a block. forward reads x (the
// block's sources) and returns the destinations' output, owned by the
// layer until its next forward; backward takes the output's gradient,
// sets the parameters' gradients, and returns the input's gradient when
// needInput (also owned by the layer).
type layer interface {
	forward(g *Block, x *kernels.Mat, train bool, seed uint64) *kernels.Mat
	backward(dy *kernels.Mat, needInput bool) *kernels.Mat
	params() []*Param
}

// Model is a stack of graph layers with dropout before each (InputDropout
// on the features, Dropout on hidden layers) and an activation between
// them (ReLU; ELU for GAT, as its paper).
type Model struct {
	cfg    Config
	b      kernels.Backend
	layers []layer
	act    kernels.Activation
	params []*Param

	// The dropped features (layer 0's input) and, per hidden layer, its
	// activated and dropped output, kept for Backward.
	dropped, post []*kernels.Mat
	seeds         []uint64 // dropout seeds of the last forward
	train         bool
}

// New builds a model with Glorot-initialised weights drawn from seed.
func New(b kernels.Backend, cfg Config, seed uint64) (*Model, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	r := rand.New(rand.NewPCG(seed, 0x676e6e706c616e)) // "gnnplan"
	m := &Model{cfg: cfg, b: b, act: kernels.Activation{Kind: kernels.ReLU}}
	if cfg.Kind == GAT {
		m.act = kernels.Activation{Kind: kernels.ELU, Slope: 1}
	}
	in := cfg.InDim
	for l := range cfg.Layers {
		last := l == cfg.Layers-1
		out := cfg.Hidden
		if last {
			out = cfg.Classes
		}
		name := fmt.Sprintf("layers.%d", l)
		var ly layer
		switch cfg.Kind {
		case GraphSAGE:
			ly = newSAGE(b, r, name, in, out)
		case GCN:
			ly = newGCN(b, r, name, in, out)
		case GAT:
			heads := cfg.Heads
			if last {
				heads = cfg.OutHeads
			}
			ly = newGAT(b, r, name, in, heads, out, cfg.Slope, cfg.AttnDropout, last)
			out *= heads
			if last {
				out = cfg.Classes
			}
		}
		m.layers = append(m.layers, ly)
		m.params = append(m.params, ly.params()...)
		m.dropped = append(m.dropped, b.NewMat(0, 0))
		m.post = append(m.post, b.NewMat(0, 0))
		in = out
	}
	m.seeds = make([]uint64, 2*cfg.Layers)
	return m, nil
}

// Config returns the model's configuration.
func (m *Model) Config() Config { return m.cfg }

// Params returns the learnable parameters in a fixed order.
func (m *Model) Params() []*Param { return m.params }

// NumParams returns the number of learnable scalars.
func (m *Model) NumParams() int {
	n := 0
	for _, p := range m.params {
		n += p.W.Len()
	}
	return n
}

// ReadsFeaturesInPlace reports whether the first layer can aggregate
// straight from the whole feature matrix (an input block, NewInputBlock)
// in a forward with or without training: GraphSAGE and GCN layers that
// aggregate before they transform, with no dropout on the features.
func (m *Model) ReadsFeaturesInPlace(train bool) bool {
	if train && m.cfg.InputDropout > 0 {
		return false
	}
	// With in <= out every block aggregates first (transformFirst).
	switch l := m.layers[0].(type) {
	case *sage:
		return l.in <= l.out && l.order <= 0
	case *gcn:
		return l.in <= l.out && l.order <= 0
	}
	return false
}

// Forward computes the logits of the innermost block's destinations (the
// batch's seeds). blocks are ordered as the sampler returns them,
// innermost hop first (one per layer); x holds the features of the
// outermost block's sources, or the whole feature matrix when the
// outermost block is an input block (see ReadsFeaturesInPlace). With train, dropout is applied with masks
// drawn from seed (one seed per step makes steps differ and runs repeat).
func (m *Model) Forward(blocks []*Block, x *kernels.Mat, train bool, seed uint64) *kernels.Mat {
	L := len(m.layers)
	if len(blocks) != L {
		panic(fmt.Sprintf("nn: %d blocks for %d layers", len(blocks), L))
	}
	m.train = train
	b := m.b
	for i := range m.seeds {
		m.seeds[i] = mixSeed(seed, uint64(i))
	}
	h := x
	for l, ly := range m.layers {
		g := blocks[L-1-l]
		in := h
		if p := m.cfg.InputDropout; l == 0 && train && p > 0 {
			b.Resize(m.dropped[0], h.Rows, h.Cols)
			b.Dropout(m.dropped[0], h, p, m.seeds[0])
			in = m.dropped[0]
		}
		y := ly.forward(g, in, train, m.seeds[2*l+1])
		if l == L-1 {
			return y
		}
		// The activation and the next layer's dropout in one pass.
		p := float32(0)
		if train {
			p = m.cfg.Dropout
		}
		b.Resize(m.post[l], y.Rows, y.Cols)
		b.ActDropout(m.act, m.post[l], y, p, m.seeds[2*(l+1)])
		h = m.post[l]
	}
	return h
}

// Backward takes the gradient of the loss with respect to the logits of
// the last Forward and sets every parameter's gradient.
func (m *Model) Backward(dlogits *kernels.Mat) {
	b := m.b
	dy := dlogits
	for l := len(m.layers) - 1; l >= 0; l-- {
		dx := m.layers[l].backward(dy, l > 0)
		if l == 0 {
			return
		}
		// Back through the next layer's dropout and the activation.
		p := float32(0)
		if m.train {
			p = m.cfg.Dropout
		}
		b.ActDropoutBackward(m.act, dx, dx, m.post[l-1], p, m.seeds[2*l])
		dy = dx
	}
}

// mixSeed derives an independent stream key (splitmix64's finalizer).
func mixSeed(seed, x uint64) uint64 { return rng.Mix(seed ^ (x+1)*rng.Golden) }
