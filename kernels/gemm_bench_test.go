package kernels

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"
)

var (
	gemmTurns   = flag.Int("gemm-turns", 30, "BenchmarkGemmVsNumpy: turns of each side per shape")
	gemmSeconds = flag.Float64("gemm-seconds", 0.1, "BenchmarkGemmVsNumpy: seconds each side times a shape per turn")
)

// benchGemmShapes are the trainer's products, named OPS_MxKxN: op(A) is
// M x K, op(B) is K x N, and OPS says which operand is transposed (a T
// operand is stored transposed, row-major). testdata/gemm_numpy.py reads
// the same names.
var benchGemmShapes = []string{
	"NN_8192x128x256",  // first layer forward: 8192 rows of 128 features times W
	"NN_8192x256x256",  // hidden layer forward
	"NN_1024x256x16",   // last layer forward: 16 classes
	"NN_26624x256x256", // hidden layer over the sampled sources of a batch
	"TN_256x8192x256",  // weight gradient: X^T * dY, X and dY 8192 x 256
	"NT_8192x256x128",  // input gradient: dY * W^T, W 128 x 256
	"TN_256x1024x16",   // last layer's weight gradient: H^T * dLogits
	"NT_1024x16x256",   // last layer's input gradient: dLogits * W^T
}

var gemmShapeRE = regexp.MustCompile(`^([NT])([NT])_(\d+)x(\d+)x(\d+)$`)

// gemmProblem is one product with its operands, C = op(A)*op(B).
type gemmProblem struct {
	transA, transB bool
	m, k, n        int
	a, b, c        []float32
	lda, ldb, ldc  int
}

func newGemmProblem(tb testing.TB, shape string) *gemmProblem {
	tb.Helper()
	g := gemmShapeRE.FindStringSubmatch(shape)
	if g == nil {
		tb.Fatalf("gemm shape %q: want OPS_MxKxN", shape)
	}
	p := &gemmProblem{transA: g[1] == "T", transB: g[2] == "T"}
	p.m, _ = strconv.Atoi(g[3])
	p.k, _ = strconv.Atoi(g[4])
	p.n, _ = strconv.Atoi(g[5])
	rng := rand.New(rand.NewPCG(1, 2))
	random := func(n int) []float32 {
		s := make([]float32, n)
		for i := range s {
			s[i] = float32(rng.NormFloat64())
		}
		return s
	}
	p.a, p.lda = random(p.m*p.k), p.k
	if p.transA {
		p.lda = p.m
	}
	p.b, p.ldb = random(p.k*p.n), p.n
	if p.transB {
		p.ldb = p.k
	}
	p.c, p.ldc = make([]float32, p.m*p.n), p.n
	return p
}

func (p *gemmProblem) run(lib blasLib) {
	lib.sgemm(runtime.GOMAXPROCS(0), p.transA, p.transB, p.m, p.n, p.k, 1, p.a, p.lda, p.b, p.ldb, 0, p.c, p.ldc)
}

func (p *gemmProblem) flops() float64 { return 2 * float64(p.m) * float64(p.n) * float64(p.k) }

// BenchmarkGemm times each provider on the trainer's shapes, in GFLOP/s
// (2*M*N*K flops per product), on GOMAXPROCS threads: OpenBLAS as gnnplan
// runs it (planGemm's pieces on its own threads), OpenBLAS as one call on
// the library's own threads, and gonum.
func BenchmarkGemm(b *testing.B) {
	type provider struct {
		name string
		run  func(p *gemmProblem)
	}
	providers := []provider{{"gonum", func(p *gemmProblem) { p.run(gonumBLAS{}) }}}
	if lib, _, err := loadBLAS("openblas"); err == nil {
		cb := lib.(cLib)
		threads := runtime.GOMAXPROCS(0)
		providers = append([]provider{
			{"openblas", func(p *gemmProblem) { p.run(lib) }},
			{"openblas-own-threads", func(p *gemmProblem) {
				cb.setThreadCount(threads)
				defer cb.setThreadCount(1)
				cb.sgemmWhole(p.transA, p.transB, p.m, p.n, p.k, 1, p.a, p.lda, p.b, p.ldb, 0, p.c, p.ldc)
			}},
		}, providers...)
		b.Logf("openblas: %s", lib.name())
	} else {
		b.Logf("openblas not benchmarked: %v", err)
	}
	for _, shape := range benchGemmShapes {
		for _, l := range providers {
			b.Run(shape+"/"+l.name, func(b *testing.B) {
				p := newGemmProblem(b, shape)
				l.run(p) // warm-up: the threads, C's pages
				for b.Loop() {
					l.run(p)
				}
				b.ReportMetric(p.flops()*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// numpyServer is testdata/gemm_numpy.py --serve: one Python process the
// benchmark sends shapes to, one turn at a time.
type numpyServer struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Scanner
	info numpyInfo
}

// numpyInfo is the server's first line.
type numpyInfo struct {
	SchemaVersion int    `json:"schema_version"`
	NumpyVersion  string `json:"numpy_version"`
	BLAS          struct {
		Libraries       []string `json:"libraries"`
		OpenBLASConfig  string   `json:"openblas_config"`
		OpenBLASThreads int      `json:"openblas_threads"`
	} `json:"blas"`
}

// numpyTurn is the server's answer to one request.
type numpyTurn struct {
	Shape   string  `json:"shape"`
	Repeats int     `json:"repeats"`
	Seconds float64 `json:"seconds"`
	GFLOPs  float64 `json:"gflops"`
}

// startNumpy starts the server with the Python that has numpy:
// $GNNPLAN_PYTHON, else Debian's /usr/bin/python3 (python3-numpy, linked
// against the system's libblas.so.3, which Debian's alternatives point at
// OpenBLAS). It skips the benchmark when that Python has no numpy.
func startNumpy(b *testing.B) *numpyServer {
	b.Helper()
	py := os.Getenv("GNNPLAN_PYTHON")
	if py == "" {
		py = "/usr/bin/python3"
	}
	if out, err := exec.Command(py, "-c", "import numpy").CombinedOutput(); err != nil {
		b.Skipf("numpy not available to %s (%v: %s); install Debian's python3-numpy (make bench-deps) or set GNNPLAN_PYTHON", py, err, bytes.TrimSpace(out))
	}
	s := &numpyServer{cmd: exec.Command(py, "testdata/gemm_numpy.py", "--serve")}
	// numpy runs the kernels this CPU runs best (bestCore), unless
	// GNNPLAN_NUMPY_CORETYPE names others.
	core := os.Getenv("GNNPLAN_NUMPY_CORETYPE")
	if core == "" {
		core = bestCore(hostCPU())
	}
	s.cmd.Env = os.Environ()
	if core != "" {
		s.cmd.Env = append(s.cmd.Env, coreTypeEnv+"="+core)
	}
	b.Logf("numpy with %s=%s", coreTypeEnv, core)
	s.cmd.Stderr = os.Stderr
	var err error
	if s.in, err = s.cmd.StdinPipe(); err != nil {
		b.Fatal(err)
	}
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		b.Fatalf("start gemm_numpy.py: %v", err)
	}
	b.Cleanup(func() {
		s.in.Close()
		s.cmd.Wait()
	})
	s.out = bufio.NewScanner(stdout)
	s.read(b, &s.info)
	if s.info.SchemaVersion != 1 {
		b.Fatalf("gemm_numpy.py: schema_version %d, want 1", s.info.SchemaVersion)
	}
	return s
}

func (s *numpyServer) read(b *testing.B, v any) {
	b.Helper()
	if !s.out.Scan() {
		b.Fatalf("gemm_numpy.py stopped: %v", s.out.Err())
	}
	if err := json.Unmarshal(s.out.Bytes(), v); err != nil {
		b.Fatalf("gemm_numpy.py: line %q: %v", s.out.Bytes(), err)
	}
}

// turn times shape in numpy for at least seconds and returns GFLOP/s.
func (s *numpyServer) turn(b *testing.B, shape string, seconds float64) float64 {
	b.Helper()
	if _, err := fmt.Fprintf(s.in, "%s %g\n", shape, seconds); err != nil {
		b.Fatalf("gemm_numpy.py: %v", err)
	}
	var t numpyTurn
	s.read(b, &t)
	if t.Shape != shape {
		b.Fatalf("gemm_numpy.py answered for %q, asked %q", t.Shape, shape)
	}
	return t.GFLOPs
}

// timeGemm times p on lib for at least seconds (and 3 products) after a
// warm-up product, as gemm_numpy.py times numpy, and returns GFLOP/s.
func timeGemm(p *gemmProblem, lib blasLib, seconds float64) float64 {
	p.run(lib)
	repeats := 0
	start := time.Now()
	for {
		p.run(lib)
		repeats++
		if el := time.Since(start).Seconds(); el >= seconds && repeats >= 3 {
			return p.flops() * float64(repeats) / el / 1e9
		}
	}
}

// BenchmarkGemmVsNumpy compares our OpenBLAS GEMM with numpy's matmul on
// the same OpenBLAS, shape by shape, in alternating short turns
// (-gemm-turns of -gemm-seconds each side, the side that goes first
// alternating too) so that load from other work on the machine falls on
// both alike. It reports the median GFLOP/s of each side, the ratio of
// the medians, and the median of the turns' ratios; the per-turn figures
// are logged. One iteration is the whole comparison: run it with
// -benchtime 1x.
func BenchmarkGemmVsNumpy(b *testing.B) {
	lib, _, err := loadBLAS("openblas")
	if err != nil {
		b.Skipf("OpenBLAS does not load: %v (install Debian's libopenblas0-pthread: make setup)", err)
	}
	np := startNumpy(b)
	b.Logf("ours: %s", lib.name())
	b.Logf("numpy %s on %v (%s, %d threads)", np.info.NumpyVersion, np.info.BLAS.Libraries, np.info.BLAS.OpenBLASConfig, np.info.BLAS.OpenBLASThreads)
	for _, shape := range benchGemmShapes {
		b.Run(shape, func(b *testing.B) {
			p := newGemmProblem(b, shape)
			var ours, numpy, ratios []float64
			for turn := range *gemmTurns {
				var o, n float64
				if turn%2 == 0 {
					o = timeGemm(p, lib, *gemmSeconds)
					n = np.turn(b, shape, *gemmSeconds)
				} else {
					n = np.turn(b, shape, *gemmSeconds)
					o = timeGemm(p, lib, *gemmSeconds)
				}
				ours, numpy, ratios = append(ours, o), append(numpy, n), append(ratios, o/n)
			}
			mo, mn := median(ours), median(numpy)
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(mo, "ours-GFLOP/s")
			b.ReportMetric(mn, "numpy-GFLOP/s")
			b.ReportMetric(mo/mn, "ours/numpy")
			b.ReportMetric(median(ratios), "turn-ratio-median")
			b.Logf("ours  GFLOP/s by turn: %s (min %.1f, max %.1f)", formatGFLOPs(ours), slices.Min(ours), slices.Max(ours))
			b.Logf("numpy GFLOP/s by turn: %s (min %.1f, max %.1f)", formatGFLOPs(numpy), slices.Min(numpy), slices.Max(numpy))
		})
	}
}

func median(x []float64) float64 {
	s := slices.Sorted(slices.Values(x))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func formatGFLOPs(x []float64) string {
	var buf bytes.Buffer
	for i, v := range x {
		if i > 0 {
			buf.WriteByte(' ')
		}
		fmt.Fprintf(&buf, "%.1f", v)
	}
	return buf.String()
}
