package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// gemmCase is one sgemm call: shapes as in CBLAS (op(A) m x k, op(B)
// k x n), and how many elements each stored row is padded with beyond
// its length (a leading dimension larger than the row, as a column view
// of a wider matrix has).
type gemmCase struct {
	name                   string
	transA, transB         bool
	m, n, k                int
	padA, padB, padC       int
	alpha, beta            float32
	nanC                   bool // C starts as NaN (beta must be 0)
	shortA, shortB, shortC int  // slice shorter than needed by this much
}

// gemmOperands builds random A, B and C for c, with the padding filled
// with a sentinel so a write outside the matrix shows.
func gemmOperands(c gemmCase, rng *rand.Rand) (a []float32, lda int, b []float32, ldb int, cm []float32, ldc int) {
	aRows, aCols := c.m, c.k
	if c.transA {
		aRows, aCols = c.k, c.m
	}
	bRows, bCols := c.k, c.n
	if c.transB {
		bRows, bCols = c.n, c.k
	}
	fill := func(rows, cols, pad, short int, nan bool) ([]float32, int) {
		ld := max(1, cols+pad)
		s := make([]float32, max(0, rows*ld-pad-short))
		for i := range s {
			switch {
			case i%ld >= cols:
				s[i] = gemmSentinel
			case nan:
				s[i] = float32(math.NaN())
			default:
				s[i] = float32(rng.NormFloat64())
			}
		}
		return s, ld
	}
	a, lda = fill(aRows, aCols, c.padA, c.shortA, false)
	b, ldb = fill(bRows, bCols, c.padB, c.shortB, false)
	cm, ldc = fill(c.m, c.n, c.padC, c.shortC, c.nanC)
	return a, lda, b, ldb, cm, ldc
}

const gemmSentinel = 12345.5

// naiveGemm is the oracle: the triple loop in float64, with the bound on
// a float32 implementation's rounding error for each element of C (the
// standard bound for a k-term dot product, doubled, plus beta*C's
// rounding).
func naiveGemm(c gemmCase, a []float32, lda int, b []float32, ldb int, cm []float32, ldc int) (want, bound []float64) {
	const eps = 1.0 / (1 << 24)
	want = make([]float64, c.m*c.n)
	bound = make([]float64, c.m*c.n)
	for i := 0; i < c.m; i++ {
		for j := 0; j < c.n; j++ {
			var sum, abs float64
			for l := 0; l < c.k; l++ {
				var av, bv float32
				if c.transA {
					av = a[l*lda+i]
				} else {
					av = a[i*lda+l]
				}
				if c.transB {
					bv = b[j*ldb+l]
				} else {
					bv = b[l*ldb+j]
				}
				p := float64(av) * float64(bv)
				sum += p
				abs += math.Abs(p)
			}
			w := float64(c.alpha) * sum
			e := 2 * float64(c.k+2) * eps * math.Abs(float64(c.alpha)) * abs
			if c.beta != 0 {
				old := float64(cm[i*ldc+j])
				w += float64(c.beta) * old
				e += 4 * eps * math.Abs(float64(c.beta)*old)
			}
			want[i*c.n+j] = w
			bound[i*c.n+j] = e + 1e-30
		}
	}
	return want, bound
}

// gemmCases are the fixed cases; randomGemmCases adds random ones.
var gemmCases = []gemmCase{
	{name: "plain product", m: 7, n: 5, k: 3, alpha: 1},
	{name: "A transposed", transA: true, m: 9, n: 6, k: 11, alpha: 1},
	{name: "B transposed", transB: true, m: 9, n: 6, k: 11, alpha: 1},
	{name: "both transposed", transA: true, transB: true, m: 9, n: 6, k: 11, alpha: 1},
	{name: "alpha and beta scale and accumulate", m: 13, n: 17, k: 19, alpha: -0.75, beta: 1.5},
	{name: "beta 1 accumulates", transA: true, m: 13, n: 17, k: 19, alpha: 2, beta: 1},
	{name: "beta 0 ignores NaN in C", m: 13, n: 17, k: 19, alpha: 1, beta: 0, nanC: true},
	{name: "alpha 0 only scales C", m: 8, n: 8, k: 8, alpha: 0, beta: 0.5},
	{name: "column views: every leading dimension padded", m: 21, n: 10, k: 14, padA: 5, padB: 3, padC: 7, alpha: 1.25, beta: -0.5},
	{name: "column views transposed", transA: true, transB: true, m: 21, n: 10, k: 14, padA: 2, padB: 9, padC: 1, alpha: 1, beta: 1},
	{name: "m is 0", m: 0, n: 5, k: 4, alpha: 1, beta: 1},
	{name: "n is 0", m: 5, n: 0, k: 4, alpha: 1, beta: 1},
	{name: "k is 0 scales C by beta", m: 5, n: 6, k: 0, alpha: 1, beta: 3},
	{name: "k is 0 with beta 0 clears C", m: 5, n: 6, k: 0, alpha: 1, beta: 0, nanC: true},
	{name: "k is 0 transposed with padded C", transA: true, transB: true, m: 5, n: 6, k: 0, padC: 4, alpha: 1, beta: 0.5},
	{name: "all sizes 0", m: 0, n: 0, k: 0, alpha: 1},
	{name: "m is 1", m: 1, n: 33, k: 17, alpha: 1, beta: 0.25},
	{name: "n is 1: matrix-vector", m: 33, n: 1, k: 17, padC: 3, alpha: 1},
	{name: "k is 1: outer product", m: 33, n: 29, k: 1, alpha: 1, beta: 1},
	{name: "1 x 1 x 1", transA: true, transB: true, m: 1, n: 1, k: 1, alpha: 2, beta: 3},
	{name: "large enough to run threaded", m: 300, n: 260, k: 200, alpha: 1},
	{name: "large transposed with views", transA: true, m: 256, n: 192, k: 300, padA: 64, padB: 32, padC: 16, alpha: 0.5, beta: 2},
	{name: "k over several chunks", m: 40, n: 24, k: 700, padA: 3, padB: 2, padC: 1, alpha: 1, beta: 0.5},
	{name: "k over several chunks, A transposed", transA: true, m: 40, n: 24, k: 700, padA: 3, padB: 2, padC: 1, alpha: 1, beta: 0.5},
	{name: "k over several chunks, B transposed", transB: true, m: 40, n: 24, k: 700, padA: 3, padB: 2, padC: 1, alpha: 1, beta: 0},
	{name: "k over several chunks, both transposed", transA: true, transB: true, m: 40, n: 24, k: 513, padA: 3, padB: 2, alpha: -1, beta: 1},
	{name: "trainer's N of 16", m: 520, n: 16, k: 256, alpha: 1},
	{name: "cut into row tiles, the last ragged", m: 2100, n: 300, k: 64, padA: 3, padC: 5, alpha: 1, beta: 0.5},
	{name: "cut into row tiles transposed", transA: true, transB: true, m: 2090, n: 70, k: 96, padA: 1, padB: 2, alpha: -1, beta: 0},
	{name: "cut into column tiles", m: 300, n: 1100, k: 40, padB: 7, alpha: 1, beta: 1},
	{name: "cut into chunks of k with beta", transA: true, m: 100, n: 90, k: 9000, padA: 2, padB: 1, padC: 3, alpha: 0.5, beta: -2},
	{name: "cut into chunks of k with NaN in C", transB: true, m: 64, n: 70, k: 8500, alpha: 1, beta: 0, nanC: true},
}

func randomGemmCases(rng *rand.Rand, count int) []gemmCase {
	size := func() int {
		// Mostly small, with the degenerate 0 and 1 and blocking edges.
		switch rng.IntN(6) {
		case 0:
			return rng.IntN(2)
		case 1:
			return 60 + rng.IntN(10)
		}
		return rng.IntN(40)
	}
	scalars := []float32{0, 1, -1, 0.5, 2.5}
	var cs []gemmCase
	for i := range count {
		c := gemmCase{
			transA: rng.IntN(2) == 1, transB: rng.IntN(2) == 1,
			m: size(), n: size(), k: size(),
			alpha: scalars[rng.IntN(len(scalars))], beta: scalars[rng.IntN(len(scalars))],
		}
		if rng.IntN(2) == 1 {
			c.padA, c.padB, c.padC = rng.IntN(5), rng.IntN(5), rng.IntN(5)
		}
		c.name = fmt.Sprintf("random %d: %s", i, c.shape())
		cs = append(cs, c)
	}
	return cs
}

func (c gemmCase) shape() string {
	op := func(t bool) string {
		if t {
			return "T"
		}
		return "N"
	}
	return fmt.Sprintf("%s%s m=%d n=%d k=%d pads=%d,%d,%d alpha=%g beta=%g",
		op(c.transA), op(c.transB), c.m, c.n, c.k, c.padA, c.padB, c.padC, c.alpha, c.beta)
}

// cLib is what tests reach of a C library beyond blasLib (a cblas where
// cgo is on: a type assertion to it fails nowhere that one loads).
type cLib interface {
	blasLib
	threads() int
	config() string
	setThreadCount(n int)
	sgemmWhole(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int)
}

// testLib is a provider under test; err says why it did not load.
type testLib struct {
	name string
	lib  blasLib
	err  error
}

// testBLASLibs returns the providers to test: OpenBLAS, which may not
// load, and gonum.
func testBLASLibs() []testLib {
	lib, _, err := loadBLAS("openblas")
	return []testLib{{"openblas", lib, err}, {"gonum", gonumBLAS{}, nil}}
}

// skipUnloaded skips a test of a provider that did not load.
func (l testLib) skipUnloaded(t *testing.T) {
	t.Helper()
	if l.err != nil {
		t.Skipf("%s not tested: %v (install Debian's libopenblas0-pthread: make setup)", l.name, l.err)
	}
}

func TestSgemmMatchesNaiveFloat64(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	cases := append(append([]gemmCase(nil), gemmCases...), randomGemmCases(rng, 300)...)
	for _, l := range testBLASLibs() {
		t.Run(l.name, func(t *testing.T) {
			l.skipUnloaded(t)
			for i, c := range cases {
				a, lda, b, ldb, cm, ldc := gemmOperands(c, rand.New(rand.NewPCG(uint64(i), 7)))
				want, bound := naiveGemm(c, a, lda, b, ldb, cm, ldc)
				l.lib.sgemm(1+i%3, c.transA, c.transB, c.m, c.n, c.k, c.alpha, a, lda, b, ldb, c.beta, cm, ldc)
				bad := 0
				for r := 0; r < c.m; r++ {
					for j := 0; j < ldc && r*ldc+j < len(cm); j++ {
						got := cm[r*ldc+j]
						if j >= c.n {
							if got != gemmSentinel {
								t.Errorf("%s: C padding (%d, %d) written: %g", c.name, r, j, got)
								bad++
							}
							continue
						}
						w, e := want[r*c.n+j], bound[r*c.n+j]
						if d := math.Abs(float64(got) - w); !(d <= e) {
							t.Errorf("%s: C(%d, %d) = %g, want %g (error %.3g > bound %.3g)", c.name, r, j, got, w, d, e)
							bad++
						}
						if bad > 5 {
							t.Fatalf("%s: too many errors", c.name)
						}
					}
				}
			}
		})
	}
}

func TestSgemmPanicsOnImpossibleArguments(t *testing.T) {
	cases := []struct {
		gemmCase
		ldA, ldB, ldC int // override the leading dimension when > 0
		want          string
	}{
		{gemmCase: gemmCase{name: "lda below k", m: 4, n: 4, k: 4}, ldA: 3, want: "leading dimension of A is 3"},
		{gemmCase: gemmCase{name: "lda below m when A is transposed", transA: true, m: 6, n: 4, k: 4}, ldA: 5, want: "leading dimension of A is 5"},
		{gemmCase: gemmCase{name: "ldb below n", m: 4, n: 4, k: 4}, ldB: 2, want: "leading dimension of B is 2"},
		{gemmCase: gemmCase{name: "ldc below n", m: 4, n: 4, k: 4}, ldC: 1, want: "leading dimension of C is 1"},
		{gemmCase: gemmCase{name: "A short by one", m: 4, n: 4, k: 4, shortA: 1}, want: "A (4 x 4, leading dimension 4) needs 16 elements, slice has 15"},
		{gemmCase: gemmCase{name: "B short", transB: true, m: 4, n: 3, k: 4, padB: 2, shortB: 1}, want: "B (3 x 4, leading dimension 6) needs 16 elements, slice has 15"},
		{gemmCase: gemmCase{name: "C short", m: 4, n: 4, k: 4, shortC: 4}, want: "C (4 x 4, leading dimension 4) needs 16 elements, slice has 12"},
		{gemmCase: gemmCase{name: "negative size", m: -1, n: 4, k: 4}, want: "negative size"},
	}
	for _, l := range testBLASLibs() {
		for _, c := range cases {
			t.Run(l.name+"/"+c.name, func(t *testing.T) {
				l.skipUnloaded(t)
				a, lda, b, ldb, cm, ldc := gemmOperands(c.gemmCase, rand.New(rand.NewPCG(1, 1)))
				if c.ldA > 0 {
					lda = c.ldA
				}
				if c.ldB > 0 {
					ldb = c.ldB
				}
				if c.ldC > 0 {
					ldc = c.ldC
				}
				defer func() {
					r := recover()
					if r == nil {
						t.Fatalf("no panic, want one saying %q", c.want)
					}
					if msg := fmt.Sprint(r); !strings.Contains(msg, c.want) {
						t.Fatalf("panic %q, want it to say %q", msg, c.want)
					}
				}()
				l.lib.sgemm(2, c.transA, c.transB, c.m, c.n, c.k, 1, a, lda, b, ldb, 0, cm, ldc)
			})
		}
	}
}

func TestLoadBLAS(t *testing.T) {
	_, _, openBLASErr := loadBLAS("openblas")
	openBLASLoads := openBLASErr == nil
	cases := []struct {
		name, choice string
		// wantName is a substring of the library's name; wantErr of the
		// error (the choice fails when it is set).
		wantName, wantErr string
		dlopen            bool // the case needs cgo's dlopen
	}{
		{name: "gonum by name", choice: "gonum", wantName: "gonum pure-Go BLAS"},
		{name: "missing library path fails naming it", choice: "/nonexistent.so", wantErr: "/nonexistent.so"},
		{name: "missing library soname fails naming it", choice: "libnosuchblas.so.3", wantErr: "libnosuchblas.so.3"},
		{name: "library without cblas_sgemm fails saying so", choice: "libm.so.6", wantErr: "no cblas_sgemm", dlopen: true},
		{name: "unknown choice lists the valid ones", choice: "mkl", wantErr: "want openblas, gonum, or the path"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.dlopen && !haveDlopen {
				t.Skip("built without cgo: no dlopen")
			}
			lib, _, err := loadBLAS(c.choice)
			if c.wantErr != "" {
				if err == nil {
					t.Fatalf("loadBLAS(%q) = %s, want an error saying %q", c.choice, lib.name(), c.wantErr)
				}
				if !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("loadBLAS(%q) error %q, want it to say %q", c.choice, err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("loadBLAS(%q): %v", c.choice, err)
			}
			if !strings.Contains(lib.name(), c.wantName) {
				t.Fatalf("loadBLAS(%q) name %q, want it to contain %q", c.choice, lib.name(), c.wantName)
			}
		})
	}

	t.Run("default never fails and says why it fell back", func(t *testing.T) {
		lib, note, err := loadBLAS("")
		if err != nil {
			t.Fatalf(`loadBLAS(""): %v`, err)
		}
		t.Logf("default BLAS: %s; note %q", lib.name(), note)
		switch {
		case openBLASLoads && (!strings.HasPrefix(lib.name(), "OpenBLAS") || note != ""):
			t.Fatalf("OpenBLAS loads but the default is %q with note %q", lib.name(), note)
		case !openBLASLoads && (lib.name() != "gonum pure-Go BLAS" || note == ""):
			t.Fatalf("OpenBLAS does not load but the default is %q with note %q", lib.name(), note)
		}
	})

	t.Run("machine without OpenBLAS runs on gonum", func(t *testing.T) {
		missing := []string{"libnosuchblas.so.0", "/nonexistent/libnosuchblas.so.0"}
		lib, note, err := loadBLASFrom("", missing, hostCoreProbe())
		if err != nil || lib.name() != "gonum pure-Go BLAS" || !strings.Contains(note, "OpenBLAS not used") {
			t.Fatalf(`loadBLASFrom("") = %v, %q, %v; want gonum with a note`, lib, note, err)
		}
		if haveDlopen && !strings.Contains(note, missing[1]) {
			t.Errorf("note %q: want every library tried named", note)
		}
		if _, _, err := loadBLASFrom("openblas", missing, hostCoreProbe()); err == nil || (haveDlopen && !strings.Contains(err.Error(), missing[0])) {
			t.Errorf(`loadBLASFrom("openblas") error %v: want one naming %s`, err, missing[0])
		}
	})

	t.Run("OpenBLAS by path, its own threading off", func(t *testing.T) {
		if !openBLASLoads {
			t.Skipf("OpenBLAS not tested: %v (install Debian's libopenblas0-pthread: make setup)", openBLASErr)
		}
		lib, _, err := loadBLAS("openblas")
		if err != nil {
			t.Fatal(err)
		}
		_, path, _ := strings.Cut(lib.name(), " via dlopen ")
		if !strings.HasPrefix(path, "/") {
			t.Errorf("name %q: want the resolved path of the library", lib.name())
		}
		byPath, _, err := loadBLAS(path)
		if err != nil {
			t.Fatalf("loadBLAS(%q): %v", path, err)
		}
		for _, l := range []blasLib{lib, byPath} {
			if n := l.(cLib).threads(); n != 1 {
				t.Errorf("%s: the library runs its calls on %d threads of its own, want 1 (gnnplan splits products itself)", l.name(), n)
			}
		}
	})
}

func TestIsLibraryPath(t *testing.T) {
	cases := []struct {
		in   string
		want bool
	}{
		{"libopenblas.so.0", true},
		{"libblis.so", true},
		{"./lib.so.3.1", true},
		{"/opt/x/libcblas", true},
		{"openblas", false},
		{"gonum", false},
		{"gonum.solver", false},
		{".so", false},
	}
	for _, c := range cases {
		if got := isLibraryPath(c.in); got != c.want {
			t.Errorf("isLibraryPath(%q) = %v, want %v", c.in, got, c.want)
		}
	}
}

// TestOpenBLASDeterministic checks the property the trainer's bitwise
// reproducibility rests on: a product gives the same bits on any thread
// count (planGemm's pieces are the same calls on 1 thread or 8). Run with
// GNNPLAN_TEST_CORETYPE set (as TestOpenBLASDeterministicEveryCore does)
// it also checks that the library runs those kernels.
func TestOpenBLASDeterministic(t *testing.T) {
	lib, _, err := loadBLAS("openblas")
	if err != nil {
		t.Skipf("OpenBLAS not tested: %v (install Debian's libopenblas0-pthread: make setup)", err)
	}
	if want := os.Getenv("GNNPLAN_TEST_CORETYPE"); want != "" && !strings.Contains(lib.name(), want+" kernels") {
		t.Fatalf("%s=%s: the library is %s", coreTypeEnv, want, lib.name())
	}
	t.Log(lib.name())
	cases := []gemmCase{
		{name: "forward 1024x256x16", m: 1024, n: 16, k: 256, alpha: 1},
		{name: "forward 2048x128x256", m: 2048, n: 256, k: 128, alpha: 1},
		{name: "weight gradient A^T*B over 2048 rows", transA: true, m: 256, n: 256, k: 2048, alpha: 1, beta: 1},
		{name: "input gradient A*B^T", transB: true, m: 2048, n: 128, k: 256, alpha: 1},
		{name: "k of 500", m: 333, n: 77, k: 500, alpha: 1},
		{name: "weight gradient over 9999 rows", transA: true, m: 256, n: 256, k: 9999, alpha: 1, beta: 0.5},
		{name: "odd shape with views", transA: true, transB: true, m: 333, n: 77, k: 999, padA: 3, padB: 5, padC: 7, alpha: 0.5, beta: 0.25},
		{name: "hidden layer over 9000 rows, views", m: 9000, n: 256, k: 256, padA: 1, padC: 3, alpha: 1},
		{name: "wide C", transB: true, m: 600, n: 2000, k: 300, alpha: 1, beta: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, lda, b, ldb, c0, ldc := gemmOperands(c, rand.New(rand.NewPCG(3, 4)))
			run := func(threads int) []float32 {
				out := append([]float32(nil), c0...)
				lib.sgemm(threads, c.transA, c.transB, c.m, c.n, c.k, c.alpha, a, lda, b, ldb, c.beta, out, ldc)
				return out
			}
			ref := run(2)
			for _, threads := range []int{2, 1, 3, 8} {
				if got := run(threads); !bitwiseEqual(got, ref) {
					t.Errorf("threads=%d: %d of %d elements differ from the first run with threads=2", threads, countDiffering(got, ref), len(ref))
				}
			}
		})
	}
}

// TestOpenBLASDeterministicEveryCore runs TestOpenBLASDeterministic under
// each core type of OpenBLAS 0.3.21's x86-64 build that this CPU can run,
// each in a process of its own (the library reads OPENBLAS_CORETYPE once,
// when it is loaded).
func TestOpenBLASDeterministicEveryCore(t *testing.T) {
	if os.Getenv("GNNPLAN_TEST_CORETYPE") != "" {
		t.Skip("in a child process")
	}
	lib, _, err := loadBLAS("openblas")
	if err != nil {
		t.Skipf("OpenBLAS not tested: %v (install Debian's libopenblas0-pthread: make setup)", err)
	}
	if cfg := lib.(cLib).config(); !strings.Contains(cfg, "DYNAMIC_ARCH") {
		t.Skipf("%s: built for one core type (%q), OPENBLAS_CORETYPE does nothing", lib.name(), cfg)
	}
	host := hostCPU()
	cores := []struct {
		name string
		runs bool
	}{
		{"Prescott", true},
		{"Sandybridge", host.avx},
		{"Haswell", host.avx2 && host.fma},
		{"Zen", host.avx2 && host.fma},
		{"SkylakeX", host.avx512},
	}
	for _, c := range cores {
		t.Run(c.name, func(t *testing.T) {
			if !c.runs {
				t.Skipf("this CPU (%s) cannot run the %s kernels", host, c.name)
			}
			cmd := exec.Command(os.Args[0], "-test.run", "^TestOpenBLASDeterministic$", "-test.v")
			cmd.Env = append(os.Environ(), coreTypeEnv+"="+c.name, "GNNPLAN_TEST_CORETYPE="+c.name)
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "--- PASS: TestOpenBLASDeterministic") {
				t.Fatalf("%s=%s: %v\n%s", coreTypeEnv, c.name, err, out)
			}
		})
	}
}

func bitwiseEqual(x, y []float32) bool { return countDiffering(x, y) == 0 }

func countDiffering(x, y []float32) int {
	n := 0
	for i := range x {
		if math.Float32bits(x[i]) != math.Float32bits(y[i]) {
			n++
		}
	}
	return n
}

// TestOpenBLASConcurrentProducts: products from several goroutines on one
// library at once (the pool busy with one while the others run on their
// callers' threads) come out bit for bit as alone, and nothing hangs.
func TestOpenBLASConcurrentProducts(t *testing.T) {
	lib, _, err := loadBLAS("openblas")
	if err != nil {
		t.Skipf("OpenBLAS not tested: %v (install Debian's libopenblas0-pthread: make setup)", err)
	}
	c := gemmCase{m: 3000, n: 256, k: 384, alpha: 1}
	a, lda, b, ldb, c0, ldc := gemmOperands(c, rand.New(rand.NewPCG(5, 6)))
	product := func(threads int) []float32 {
		out := append([]float32(nil), c0...)
		lib.sgemm(threads, false, false, c.m, c.n, c.k, 1, a, lda, b, ldb, 0, out, ldc)
		return out
	}
	ref := product(1)
	var wg sync.WaitGroup
	var bad atomic.Int64
	for g := range 4 {
		wg.Go(func() {
			for range 20 {
				if !bitwiseEqual(product(1+g), ref) {
					bad.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if n := bad.Load(); n > 0 {
		t.Fatalf("%d of 80 products on 4 goroutines differ from one alone", n)
	}
}
