package trainer

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gnnplan/gnnplan/kernels"
	"github.com/gnnplan/gnnplan/trainer/dataset"
	"github.com/gnnplan/gnnplan/trainer/nn"
)

// gemmCall is the shape of one GEMM the model ran.
type gemmCall struct {
	transA, transB bool
	m, n, k        int
}

// countingBackend records the GEMMs a step runs, so the benchmark can
// count the model's FLOPs and time the same GEMMs alone; keeps one
// first-layer block, so it can time that layer's mean alone too; and times
// each kernel where it runs, inside the steps of the timed epoch.
type countingBackend struct {
	kernels.Backend
	record bool // the recorded step: its GEMMs' shapes
	calls  []gemmCall
	// timing times the kernels (the timed epoch's steps); steps counts
	// the steps timed (one cross-entropy each).
	timing bool
	steps  int
	// featRows is the feature matrix's row count: a SegmentMean over a
	// matrix of that many rows is the first layer's, reading it in place.
	featRows int

	mu sync.Mutex
	// recent holds copies of the blocks built lately (the sampler builds
	// them a batch ahead and reuses their storage), by the CSR returned.
	recent map[*kernels.CSR]blockCopy
	order  []*kernels.CSR
	// keepMean asks for the next first-layer SegmentMean's operands to be
	// kept in mean.
	keepMean bool
	mean     *meanCall

	// times is each kernel's time in the timed steps (the steps' own
	// goroutine calls them), by method name.
	times map[string]*kernelTime
}

// kernelTime is one kernel's calls and their time within a step.
type kernelTime struct {
	calls   int
	seconds float64
}

// timed runs f, adding its time to name's while the steps are timed.
func (c *countingBackend) timed(name string, f func()) {
	if !c.timing {
		f()
		return
	}
	start := time.Now()
	f()
	if c.times == nil {
		c.times = map[string]*kernelTime{}
	}
	kt := c.times[name]
	if kt == nil {
		kt = &kernelTime{}
		c.times[name] = kt
	}
	kt.calls++
	kt.seconds += time.Since(start).Seconds()
}

// stepKernels lists the timed steps' kernels, slowest first, in ms and
// calls per step, and returns the time per step of those that run in the
// forward and backward passes (all but Adam).
func (c *countingBackend) stepKernels() (string, float64) {
	steps := float64(max(c.steps, 1))
	fb := 0.0
	names := make([]string, 0, len(c.times))
	for n := range c.times {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int { return cmp.Compare(c.times[b].seconds, c.times[a].seconds) })
	var sb strings.Builder
	for i, n := range names {
		if i > 0 {
			sb.WriteString(", ")
		}
		fmt.Fprintf(&sb, "%s %.1f ms (%.0f)", n, 1e3*c.times[n].seconds/steps, float64(c.times[n].calls)/steps)
		if n != "Adam" {
			fb += c.times[n].seconds / steps
		}
	}
	return sb.String(), fb
}

func (c *countingBackend) SegmentMeanBackward(dx, dout *kernels.Mat, g *kernels.CSR) {
	c.timed("SegmentMeanBackward", func() { c.Backend.SegmentMeanBackward(dx, dout, g) })
}
func (c *countingBackend) GatherRows(dst, src *kernels.Mat, idx *kernels.Index) {
	c.timed("GatherRows", func() { c.Backend.GatherRows(dst, src, idx) })
}
func (c *countingBackend) Copy(dst, src *kernels.Mat) {
	c.timed("Copy", func() { c.Backend.Copy(dst, src) })
}
func (c *countingBackend) Zero(m *kernels.Mat) { c.timed("Zero", func() { c.Backend.Zero(m) }) }
func (c *countingBackend) AddBias(m, bias *kernels.Mat) {
	c.timed("AddBias", func() { c.Backend.AddBias(m, bias) })
}
func (c *countingBackend) SumRows(out, m *kernels.Mat, beta float32) {
	c.timed("SumRows", func() { c.Backend.SumRows(out, m, beta) })
}
func (c *countingBackend) Act(f kernels.Activation, y, x *kernels.Mat) {
	c.timed("Act", func() { c.Backend.Act(f, y, x) })
}
func (c *countingBackend) ActBackward(f kernels.Activation, dx, dy, x, y *kernels.Mat) {
	c.timed("ActBackward", func() { c.Backend.ActBackward(f, dx, dy, x, y) })
}
func (c *countingBackend) ActDropout(f kernels.Activation, y, x *kernels.Mat, p float32, seed uint64) {
	c.timed("ActDropout", func() { c.Backend.ActDropout(f, y, x, p, seed) })
}
func (c *countingBackend) ActDropoutBackward(f kernels.Activation, dx, dy, y *kernels.Mat, p float32, seed uint64) {
	c.timed("ActDropoutBackward", func() { c.Backend.ActDropoutBackward(f, dx, dy, y, p, seed) })
}
func (c *countingBackend) Dropout(y, x *kernels.Mat, p float32, seed uint64) {
	c.timed("Dropout", func() { c.Backend.Dropout(y, x, p, seed) })
}
func (c *countingBackend) DropoutBackward(dx, dy *kernels.Mat, p float32, seed uint64) {
	c.timed("DropoutBackward", func() { c.Backend.DropoutBackward(dx, dy, p, seed) })
}
func (c *countingBackend) SoftmaxCrossEntropy(dlogits, logits *kernels.Mat, labels *kernels.Index, scale float32) (loss float64, correct int) {
	if c.timing && dlogits != nil {
		c.steps++
	}
	c.timed("SoftmaxCrossEntropy", func() { loss, correct = c.Backend.SoftmaxCrossEntropy(dlogits, logits, labels, scale) })
	return loss, correct
}
func (c *countingBackend) Adam(p, g, m, v *kernels.Mat, o kernels.AdamStep) {
	c.timed("Adam", func() { c.Backend.Adam(p, g, m, v, o) })
}

// blockCopy is a block's adjacency, copied.
type blockCopy struct {
	offsets, srcIdx []int32
	numSrc          int
}

// meanCall is one first-layer SegmentMean: its block and the matrix it read.
type meanCall struct {
	g blockCopy
	x *kernels.Mat
}

// recentBlocks is how many blocks countingBackend keeps copies of.
const recentBlocks = 16

func (c *countingBackend) NewCSR(offsets, srcIdx []int32, numSrc int) *kernels.CSR {
	g := c.Backend.NewCSR(offsets, srcIdx, numSrc)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mean != nil {
		return g // kept one already
	}
	if c.recent == nil {
		c.recent = map[*kernels.CSR]blockCopy{}
	}
	if len(c.order) == recentBlocks {
		delete(c.recent, c.order[0])
		c.order = c.order[1:]
	}
	c.recent[g] = blockCopy{slices.Clone(offsets), slices.Clone(srcIdx), numSrc}
	c.order = append(c.order, g)
	return g
}

func (c *countingBackend) SegmentMean(out, x *kernels.Mat, g *kernels.CSR) {
	if x.Rows == c.featRows {
		c.mu.Lock()
		if bc, ok := c.recent[g]; ok && c.keepMean && c.mean == nil {
			c.mean = &meanCall{bc, x}
			c.recent, c.order = nil, nil
		}
		c.mu.Unlock()
	}
	c.timed("SegmentMean", func() { c.Backend.SegmentMean(out, x, g) })
}

func (c *countingBackend) Gemm(transA, transB bool, alpha float32, a, b *kernels.Mat, beta float32, m *kernels.Mat) {
	if c.record {
		k := a.Cols
		if transA {
			k = a.Rows
		}
		c.calls = append(c.calls, gemmCall{transA, transB, m.Rows, m.Cols, k})
	}
	c.timed("Gemm", func() { c.Backend.Gemm(transA, transB, alpha, a, b, beta, m) })
}

// meanSeconds times the kept first-layer mean, reps times: run back to
// back (warm: the rows the last run read are partly still in the caches,
// the least time that layer's aggregation takes on this machine), and run
// each after evictCaches (cold: as in a step, where
// the block's rows were last read a batch or more ago). Medians.
func meanSeconds(b kernels.Backend, m *meanCall, reps int) (warm, cold float64) {
	g := b.NewCSR(m.g.offsets, m.g.srcIdx, m.g.numSrc)
	out := b.NewMat(len(m.g.offsets)-1, m.x.Cols)
	var warmTimes, coldTimes []float64
	for range reps {
		start := time.Now()
		b.SegmentMean(out, m.x, g)
		warmTimes = append(warmTimes, time.Since(start).Seconds())
	}
	evict := make([]byte, evictBytes)
	for r := range reps {
		evictCaches(evict, r)
		start := time.Now()
		b.SegmentMean(out, m.x, g)
		coldTimes = append(coldTimes, time.Since(start).Seconds())
	}
	return median(warmTimes), median(coldTimes)
}

// evictBytes is what meanSeconds writes to push a block's rows out of the
// caches: eight times this machine's 32 MiB L3, and more than the last-level
// cache of most servers' sockets.
const evictBytes = 256 << 20

// evictCaches writes a byte of every cache line of buf (evictBytes long),
// pushing what the caches held out of them; r varies the byte so no pass
// is a no-op.
func evictCaches(buf []byte, r int) {
	for i := 0; i < len(buf); i += 64 {
		buf[i] = byte(r)
	}
}

// stepRecorder records one step of the second epoch, times the kernels of
// all its steps, and has the first layer's block of one step of the first
// kept.
type stepRecorder struct{ c *countingBackend }

func (r stepRecorder) Batch(p BatchProgress) {
	// The step after this one.
	r.c.record = p.Epoch == 2 && p.Batch == 1
	r.c.timing = p.Epoch == 1 && p.Batch == p.Batches || p.Epoch == 2 && p.Batch < p.Batches
	if p.Epoch == 1 && p.Batch == 1 {
		r.c.mu.Lock()
		r.c.keepMean = true
		r.c.mu.Unlock()
	}
}
func (r stepRecorder) Epoch(EpochStats) {}

// gemmSeconds times calls run back to back on random matrices of their
// shapes (warm: the least time the step's dense compute can take on this
// BLAS, the compute bound) and each after evicting the caches (cold).
// Medians of reps.
func gemmSeconds(b kernels.Backend, calls []gemmCall, reps int) (warm, cold float64) {
	r := rand.New(rand.NewPCG(1, 2))
	type operands struct{ a, b, c *kernels.Mat }
	ops := make([]operands, len(calls))
	rnd := func(rows, cols int) *kernels.Mat {
		v := make([]float32, rows*cols)
		for i := range v {
			v[i] = r.Float32() - 0.5
		}
		m := b.NewMat(0, 0)
		b.Upload(m, rows, cols, v)
		return m
	}
	for i, c := range calls {
		ar, ac := c.m, c.k
		if c.transA {
			ar, ac = ac, ar
		}
		br, bc := c.k, c.n
		if c.transB {
			br, bc = bc, br
		}
		ops[i] = operands{rnd(ar, ac), rnd(br, bc), rnd(c.m, c.n)}
	}
	var times []float64
	for range reps {
		start := time.Now()
		for i, c := range calls {
			b.Gemm(c.transA, c.transB, 1, ops[i].a, ops[i].b, 0, ops[i].c)
		}
		times = append(times, time.Since(start).Seconds())
	}
	// Cold: each product after evicting the caches, as in a step, where
	// its operands were last touched a few kernels before.
	evict := make([]byte, evictBytes)
	var coldTimes []float64
	for r := range reps {
		var t float64
		for i, c := range calls {
			evictCaches(evict, r)
			start := time.Now()
			b.Gemm(c.transA, c.transB, 1, ops[i].a, ops[i].b, 0, ops[i].c)
			t += time.Since(start).Seconds()
		}
		coldTimes = append(coldTimes, t)
	}
	return median(times), median(coldTimes)
}

// torchResult is what trainer/testdata/torch_sage.py prints.
type torchResult struct {
	SamplesPerSecond float64 `json:"samples_per_s"`
	Sample           float64 `json:"sample_s"`
	Gather           float64 `json:"gather_s"`
	ForwardBackward  float64 `json:"forward_backward_s"`
	Optimizer        float64 `json:"optimizer_s"`
	FirstMean        float64 `json:"first_mean_s"`
	Batches          int     `json:"batches"`
	TorchVersion     string  `json:"torch_version"`
}

// python returns Debian's python3 with torch, or "".
func python() string {
	py := os.Getenv("GNNPLAN_PYTHON")
	if py == "" {
		py = "/usr/bin/python3"
	}
	if err := exec.Command(py, "-c", "import torch, numpy").Run(); err != nil {
		return ""
	}
	return py
}

// BenchmarkGraphSAGE trains GraphSAGE-mean (fanouts 25,10, hidden 256,
// batches of 1024 seeds, 128-d features) on a synthetic graph in memory
// (GNNPLAN_BENCH_NODES vertices, default 2M; or GNNPLAN_BENCH_DATASET),
// and reports samples/s, seconds per stage per batch, the model's GEMM
// FLOPs per batch, the compute bound (those GEMMs timed alone on this
// BLAS) and end-to-end throughput as a share of it, and the first layer's
// mean over the feature matrix timed alone, warm (back to back) and cold
// (after evicting the caches, as in a step): a batch cannot take less than
// the GEMMs and that mean (both keep every core busy), so
// bound-over-gemms+mean and bound-over-gemms+cold-mean cap share-of-bound,
// the warm one loosely. With Debian's python3-torch
// present it runs the same workload in PyTorch (testdata/torch_sage.py,
// its first layer reading the feature matrix in place as ours does, the
// faster of its two modes here) in alternating turns and reports both, the
// ratios, and PyTorch's first-layer mean (embedding_bag) alone. Each turn
// also logs the kernels as timed inside the timed epoch's steps.
//
//	go test -ldflags=-checklinkname=0 -run '^$' -bench GraphSAGE -benchtime 1x -timeout 60m ./trainer/
func BenchmarkGraphSAGE(b *testing.B) {
	dir := os.Getenv("GNNPLAN_BENCH_DATASET")
	if dir == "" {
		nodes := int64(2_000_000)
		if s := os.Getenv("GNNPLAN_BENCH_NODES"); s != "" {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				b.Fatalf("GNNPLAN_BENCH_NODES=%q: %v", s, err)
			}
			nodes = n
		}
		so := dataset.DefaultSynthOptions()
		so.Nodes, so.Edges = nodes, 10*nodes
		dir = filepath.Join(b.TempDir(), "synth")
		if _, err := dataset.Synth(context.Background(), so, dir, io.Discard); err != nil {
			b.Fatal(err)
		}
	}
	d := load(b, dir)
	turns := 3
	if s := os.Getenv("GNNPLAN_BENCH_TURNS"); s != "" {
		turns, _ = strconv.Atoi(s)
	}
	const batches = 20
	o := Defaults(nn.GraphSAGE)
	o.Model.Hidden, o.Model.InputDropout, o.Model.Dropout = 256, 0, 0.5
	o.Fanouts, o.BatchSize, o.LR = []int{25, 10}, 1024, 0.003
	o.Epochs, o.EvalEvery, o.RowNormalize = 2, 0, false
	// An epoch of exactly `batches` batches: the first epoch warms up.
	g := *d.g
	g.Train = g.Train[:min(len(g.Train), batches*o.BatchSize)]
	py := python()
	script, _ := filepath.Abs(filepath.Join("testdata", "torch_sage.py"))

	var ours, bound, torch, torchFB, oursFB, mean, ceiling, meanCold, ceilingCold, torchMean []float64
	var last EpochStats
	var flops float64
	for turn := range turns {
		be, err := kernels.NewCPU(kernels.CPUOptions{})
		if err != nil {
			b.Fatal(err)
		}
		cb := &countingBackend{Backend: be, featRows: len(g.Indptr) - 1}
		tr, err := New(cb, &g, d.feat, o) // features are not normalised: shared
		if err != nil {
			b.Fatal(err)
		}
		res, err := tr.Run(context.Background(), stepRecorder{cb})
		if err != nil {
			b.Fatal(err)
		}
		last = res.Epochs[1]
		perBatch := last.Seconds / float64(last.Batches)
		flops = 0
		for _, c := range cb.calls {
			flops += 2 * float64(c.m) * float64(c.n) * float64(c.k)
		}
		gs, gsCold := gemmSeconds(be, cb.calls, 5)
		if cb.mean == nil {
			b.Fatal("no first-layer block reading the features in place was kept: the benchmark's model no longer reads them in place")
		}
		ms, msCold := meanSeconds(be, cb.mean, 5)
		ours = append(ours, last.SamplesPerSecond)
		oursFB = append(oursFB, last.ComputeSeconds/float64(last.Batches))
		bound = append(bound, gs)
		// The first layer's mean cannot overlap the GEMMs (both keep the
		// cores busy), so a batch takes at least both: that caps the
		// share of the bound end to end.
		mean = append(mean, ms)
		ceiling = append(ceiling, gs/(gs+ms))
		meanCold = append(meanCold, msCold)
		ceilingCold = append(ceilingCold, gs/(gs+msCold))
		b.Logf("turn %d gnnplan: %.0f samples/s, %.1f ms/batch (wait %.1f, gather %.1f, fwd+bwd %.1f, optim %.1f ms); GEMMs alone %.1f ms (%.1f GFLOP/s): %.0f%% of the bound; first layer's mean alone %.1f ms warm, %.1f ms cold: GEMMs + mean alone are %.0f%% of the bound warm, %.0f%% cold; sampler busy %.1f ms/batch beside the step; %s",
			turn+1, last.SamplesPerSecond, 1e3*perBatch, 1e3*last.WaitSeconds/float64(last.Batches), 1e3*last.GatherSeconds/float64(last.Batches),
			1e3*last.ComputeSeconds/float64(last.Batches), 1e3*last.OptimizerSeconds/float64(last.Batches), 1e3*gs, flops/gs/1e9, 100*gs/perBatch,
			1e3*ms, 1e3*msCold, 100*gs/(gs+ms), 100*gs/(gs+msCold), 1e3*last.Stages.Sample.BusySeconds/float64(last.Batches), be.Name())
		b.Logf("turn %d gnnplan: GEMMs alone %.1f ms warm (the bound), %.1f ms cold", turn+1, 1e3*gs, 1e3*gsCold)
		kern, kernFB := cb.stepKernels()
		b.Logf("turn %d gnnplan: kernels in the steps, per step: %s; forward and backward's kernels %.1f ms of the stage's %.1f", turn+1, kern, 1e3*kernFB, 1e3*last.ComputeSeconds/float64(last.Batches))
		if py == "" {
			continue
		}
		cmd := exec.Command(py, script, "--dataset", dir, "--fanouts", "25,10", "--batch", "1024", "--hidden", "256",
			"--dropout", "0.5", "--lr", "0.003", "--weight-decay", "5e-4", "--threads", strconv.Itoa(be.Threads()),
			"--warmup", "3", "--batches", strconv.Itoa(batches), "--seed", strconv.Itoa(turn+1), "--gather", "in-place")
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			b.Fatalf("%s: %v", script, err)
		}
		var tr2 torchResult
		if err := json.Unmarshal(out, &tr2); err != nil {
			b.Fatalf("%s printed %q: %v", script, out, err)
		}
		torch = append(torch, tr2.SamplesPerSecond)
		torchFB = append(torchFB, tr2.ForwardBackward/float64(tr2.Batches))
		torchMean = append(torchMean, tr2.FirstMean)
		b.Logf("turn %d PyTorch %s: %.0f samples/s (sample %.1f, gather %.1f, fwd+bwd %.1f, optim %.1f ms/batch); first layer's mean (embedding_bag) alone %.1f ms", turn+1, tr2.TorchVersion,
			tr2.SamplesPerSecond, 1e3*tr2.Sample/float64(tr2.Batches), 1e3*tr2.Gather/float64(tr2.Batches),
			1e3*tr2.ForwardBackward/float64(tr2.Batches), 1e3*tr2.Optimizer/float64(tr2.Batches), 1e3*tr2.FirstMean)
	}
	perBatch := float64(o.BatchSize) / median(ours)
	b.ReportMetric(median(ours), "samples/s")
	b.ReportMetric(flops/1e9, "GFLOP/batch")
	b.ReportMetric(1e3*median(bound), "bound-ms/batch")
	b.ReportMetric(median(bound)/perBatch, "share-of-bound")
	b.ReportMetric(1e3*median(oursFB), "fwd+bwd-ms/batch")
	b.ReportMetric(1e3*median(mean), "mean-alone-ms/batch")
	b.ReportMetric(median(ceiling), "bound-over-gemms+mean")
	b.ReportMetric(1e3*median(meanCold), "mean-cold-ms/batch")
	b.ReportMetric(median(ceilingCold), "bound-over-gemms+cold-mean")
	if len(torch) > 0 {
		b.ReportMetric(1e3*median(torchMean), "torch-mean-alone-ms/batch")
		b.ReportMetric(median(torch), "torch-samples/s")
		b.ReportMetric(median(ours)/median(torch), "speedup-vs-torch")
		b.ReportMetric(median(torchFB)/median(oursFB), "fwd+bwd-speedup-vs-torch")
	} else {
		b.Log("PyTorch comparison skipped: no /usr/bin/python3 with torch (make bench-deps installs Debian's python3-torch)")
	}
}
