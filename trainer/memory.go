package trainer

import (
	"fmt"

	"github.com/gnnplan/gnnplan/trainer/nn"
)

// hostBytes estimates, from the options alone and before anything is
// allocated, what training takes in host memory beyond the features: each
// worker's model (values, gradients and Adam's two moments, 16 bytes a
// parameter) and one batch's activations (its sources, at most every
// vertex, times the widest layer, in the eight or so matrices a pass
// keeps; GAT adds its edges' scores per head). It errs high: it refuses
// what cannot fit, not what might be tight.
func hostBytes(cfg nn.Config, o Options, numNodes, numEdges int64, numTrain int) (bytes float64, params float64, rows float64, width int) {
	heads, outHeads := 1, 1
	if cfg.Kind == nn.GAT {
		heads, outHeads = cfg.Heads, cfg.OutHeads
	}
	in := float64(cfg.InDim)
	widest := in
	for l := range cfg.Layers {
		out := float64(cfg.Hidden) * float64(heads)
		if l == cfg.Layers-1 {
			out = float64(cfg.Classes) * float64(outHeads)
		}
		params += 2*in*out + 3*out
		in = out
		widest = max(widest, out)
	}
	workers := float64(max(o.Workers, 1))
	batch := float64(o.BatchSize)
	if batch == 0 {
		batch = float64(numTrain)
	}
	rows, edges := batch, 0.0
	for _, f := range o.Fanouts {
		if f < 0 {
			edges += float64(numEdges)
			rows = float64(numNodes)
			continue
		}
		edges += min(rows*float64(f), float64(numEdges))
		rows = min(rows*float64(f+1), float64(numNodes))
	}
	act := rows * widest * 4 * 8
	if cfg.Kind == nn.GAT {
		act += edges * float64(heads) * 4 * 6
	}
	return workers * (16*params + act), params, rows, int(min(widest, 1<<62))
}

// checkHostMemory refuses, as bad input, options whose model and batch
// cannot fit this machine's available memory (keeping a tenth free), so
// that the run ends with a line saying so instead of the kernel or Go's
// allocator killing it. Where /proc/meminfo cannot be read it does not
// check.
func checkHostMemory(cfg nn.Config, o Options, numNodes, numEdges int64, numTrain int) error {
	avail, ok := memAvailable()
	if !ok {
		return nil
	}
	need, params, rows, width := hostBytes(cfg, o, numNodes, numEdges, numTrain)
	if need <= float64(avail-avail/10) {
		return nil
	}
	gib := func(b float64) float64 { return b / (1 << 30) }
	return fmt.Errorf("the model (%.3g parameters) and a batch's activations (up to %.3g rows %d wide) need about %.1f GiB, and this machine has %.1f GiB available (lower --hidden, --heads, --batch or --fanouts)",
		params, rows, width, gib(need), gib(float64(avail)))
}
