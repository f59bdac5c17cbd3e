package trainer

import (
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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
// count the model's FLOPs and time the same GEMMs alone.
type countingBackend struct {
	kernels.Backend
	record bool
	calls  []gemmCall
}

func (c *countingBackend) Gemm(transA, transB bool, alpha float32, a, b *kernels.Mat, beta float32, m *kernels.Mat) {
	if c.record {
		k := a.Cols
		if transA {
			k = a.Rows
		}
		c.calls = append(c.calls, gemmCall{transA, transB, m.Rows, m.Cols, k})
	}
	c.Backend.Gemm(transA, transB, alpha, a, b, beta, m)
}

// stepRecorder turns recording on for one step of the second epoch.
type stepRecorder struct{ c *countingBackend }

func (r stepRecorder) Batch(p BatchProgress) {
	r.c.record = p.Epoch == 2 && p.Batch == 1 // the step after this one
}
func (r stepRecorder) Epoch(EpochStats) {}

// gemmSeconds times calls run back to back on random matrices of their
// shapes: the least time the step's dense compute can take on this BLAS.
func gemmSeconds(b kernels.Backend, calls []gemmCall, reps int) float64 {
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
	return median(times)
}

// torchResult is what trainer/testdata/torch_sage.py prints.
type torchResult struct {
	SamplesPerSecond float64 `json:"samples_per_s"`
	Sample           float64 `json:"sample_s"`
	Gather           float64 `json:"gather_s"`
	ForwardBackward  float64 `json:"forward_backward_s"`
	Optimizer        float64 `json:"optimizer_s"`
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
// BLAS) and end-to-end throughput as a share of it. With Debian's
// python3-torch present it runs the same workload in PyTorch
// (testdata/torch_sage.py) in alternating turns and reports both and the
// ratios.
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

	var ours, bound, torch, torchFB, oursFB []float64
	var last EpochStats
	var flops float64
	for turn := range turns {
		be, err := kernels.NewCPU(kernels.CPUOptions{})
		if err != nil {
			b.Fatal(err)
		}
		cb := &countingBackend{Backend: be}
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
		gs := gemmSeconds(be, cb.calls, 5)
		ours = append(ours, last.SamplesPerSecond)
		oursFB = append(oursFB, last.ComputeSeconds/float64(last.Batches))
		bound = append(bound, gs)
		b.Logf("turn %d gnnplan: %.0f samples/s, %.1f ms/batch (wait %.1f, gather %.1f, fwd+bwd %.1f, optim %.1f ms); GEMMs alone %.1f ms (%.1f GFLOP/s): %.0f%% of the bound; %s",
			turn+1, last.SamplesPerSecond, 1e3*perBatch, 1e3*last.WaitSeconds/float64(last.Batches), 1e3*last.GatherSeconds/float64(last.Batches),
			1e3*last.ComputeSeconds/float64(last.Batches), 1e3*last.OptimizerSeconds/float64(last.Batches), 1e3*gs, flops/gs/1e9, 100*gs/perBatch, be.Name())
		if py == "" {
			continue
		}
		cmd := exec.Command(py, script, "--dataset", dir, "--fanouts", "25,10", "--batch", "1024", "--hidden", "256",
			"--dropout", "0.5", "--lr", "0.003", "--weight-decay", "5e-4", "--threads", strconv.Itoa(be.Threads()),
			"--warmup", "3", "--batches", strconv.Itoa(batches), "--seed", strconv.Itoa(turn+1))
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
		b.Logf("turn %d PyTorch %s: %.0f samples/s (sample %.1f, gather %.1f, fwd+bwd %.1f, optim %.1f ms/batch)", turn+1, tr2.TorchVersion,
			tr2.SamplesPerSecond, 1e3*tr2.Sample/float64(tr2.Batches), 1e3*tr2.Gather/float64(tr2.Batches),
			1e3*tr2.ForwardBackward/float64(tr2.Batches), 1e3*tr2.Optimizer/float64(tr2.Batches))
	}
	perBatch := float64(o.BatchSize) / median(ours)
	b.ReportMetric(median(ours), "samples/s")
	b.ReportMetric(flops/1e9, "GFLOP/batch")
	b.ReportMetric(1e3*median(bound), "bound-ms/batch")
	b.ReportMetric(median(bound)/perBatch, "share-of-bound")
	b.ReportMetric(1e3*median(oursFB), "fwd+bwd-ms/batch")
	if len(torch) > 0 {
		b.ReportMetric(median(torch), "torch-samples/s")
		b.ReportMetric(median(ours)/median(torch), "speedup-vs-torch")
		b.ReportMetric(median(torchFB)/median(oursFB), "fwd+bwd-speedup-vs-torch")
	} else {
		b.Log("PyTorch comparison skipped: no /usr/bin/python3 with torch (make bench-deps installs Debian's python3-torch)")
	}
}
