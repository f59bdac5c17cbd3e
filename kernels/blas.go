package kernels

import (
	"fmt"
	"math"
	"strings"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// blasLib is a row-major single-precision GEMM provider.
type blasLib interface {
	// sgemm computes C = alpha*op(A)*op(B) + beta*C on row-major data
	// with leading dimensions lda, ldb, ldc (CBLAS semantics,
	// CblasRowMajor): op(A) is m x k, op(B) is k x n, C is m x n. When
	// beta is 0, C's contents on input are ignored (NaNs included).
	sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int)
	// name says what computes the products, e.g. "OpenBLAS 0.3.21
	// (pthread, SkylakeX kernels, 2 threads) via dlopen
	// /usr/lib/x86_64-linux-gnu/libopenblas.so.0" or "gonum pure-Go BLAS".
	name() string
}

// openBLASCandidates returns the names loadBLAS("") and
// loadBLAS("openblas") try, in order: the soname Debian's libopenblas0
// provides through alternatives, the development symlink, and Debian's
// pthread variant by path, for a machine where the alternatives link is
// missing.
func openBLASCandidates() []string {
	return []string{
		"libopenblas.so.0",
		"libopenblas.so",
		"/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0",
	}
}

// kAlign makes OpenBLAS's results independent of its thread count: a
// product whose k is not a multiple of kAlign is computed as two calls,
// the largest multiple of kAlign first and the rest (fewer than kAlign
// terms) added into C with beta = 1.
//
// Why: OpenBLAS cuts k into blocks of GEMM_Q (448 for sgemm on SkylakeX,
// 320 on Haswell and Zen), each block's products added into C in turn, and
// halves a remainder between GEMM_Q and 2*GEMM_Q; its single-threaded
// driver (driver/level3/level3.c) rounds the half up to a multiple of
// GEMM_UNROLL_M, its threaded one (level3_thread.c) does not, so for k
// such as 500 or 999 one thread and two cut k differently and most of C
// differs in its last bits (measured on 0.3.21 with SkylakeX kernels: 894
// of the k in 1..1400 differ, the first at 449). Threads split C, never
// k, so when the cuts agree the bits do. With k a multiple of 32, every
// remainder is a multiple of 2*GEMM_UNROLL_M (GEMM_Q is, on the x86-64
// targets of 0.3.21 but AMD's first Bulldozer, GEMM_Q 168), its half a
// multiple of GEMM_UNROLL_M, and both drivers cut alike; a k below 32 is
// one block. TestOpenBLASDeterministic checks it on the machine it runs
// on. The extra call costs one pass over C for fewer than 32 terms, where
// cutting k into blocks no longer than GEMM_Q would add a call per block.
const kAlign = 32

// loadBLAS picks the GEMM provider.
//
//   - "": OpenBLAS when its shared library loads, else gonum's pure-Go
//     BLAS, with note saying why OpenBLAS was not used (err is always nil).
//   - "openblas": OpenBLAS, or an error naming every library tried.
//   - "gonum": gonum's pure-Go BLAS.
//   - a path (containing '/' or ending in ".so" or ".so.N"): that shared
//     library, which must export cblas_sgemm.
//
// threads > 0 sets OpenBLAS's thread count (openblas_set_num_threads, when
// the library has it); 0 leaves its default (OPENBLAS_NUM_THREADS, else
// the number of cores). The count is the library's process-wide setting,
// shared by every blasLib loaded from the same library.
func loadBLAS(choice string, threads int) (lib blasLib, note string, err error) {
	return loadBLASFrom(choice, threads, openBLASCandidates())
}

// loadBLASFrom is loadBLAS looking for OpenBLAS under the given names.
func loadBLASFrom(choice string, threads int, openBLASNames []string) (lib blasLib, note string, err error) {
	if threads < 0 {
		return nil, "", fmt.Errorf("BLAS threads %d: want 0 (library default) or more", threads)
	}
	switch {
	case choice == "gonum":
		return gonumBLAS{}, "", nil
	case choice == "":
		lib, err := openCBLAS(openBLASNames, threads)
		if err != nil {
			return gonumBLAS{}, fmt.Sprintf("OpenBLAS not used: %v", err), nil
		}
		return lib, "", nil
	case choice == "openblas":
		lib, err := openCBLAS(openBLASNames, threads)
		if err != nil {
			return nil, "", fmt.Errorf("load OpenBLAS: %w", err)
		}
		return lib, "", nil
	case isLibraryPath(choice):
		lib, err := openCBLAS([]string{choice}, threads)
		if err != nil {
			return nil, "", fmt.Errorf("load BLAS %s: %w", choice, err)
		}
		return lib, "", nil
	}
	return nil, "", fmt.Errorf("BLAS %q: want openblas, gonum, or the path of a shared library exporting cblas_sgemm", choice)
}

// isLibraryPath reports whether a BLAS choice names a shared library file:
// anything with a '/', or a name ending in ".so" or ".so.<version>".
func isLibraryPath(s string) bool {
	if strings.Contains(s, "/") {
		return true
	}
	i := strings.LastIndex(s, ".so")
	if i <= 0 {
		return false
	}
	rest := s[i+len(".so"):]
	return rest == "" || rest[0] == '.'
}

// gonumBLAS is gonum's pure-Go BLAS: parallel over 64 x 64 blocks of C,
// each block summed along k in one fixed order, so its results do not
// depend on the number of threads.
type gonumBLAS struct{}

func (gonumBLAS) name() string { return "gonum pure-Go BLAS" }

func (gonumBLAS) sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	checkSgemm(transA, transB, m, n, k, a, lda, b, ldb, c, ldc)
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		scaleC(m, n, beta, c, ldc)
		return
	}
	gonum.Implementation{}.Sgemm(blasTrans(transA), blasTrans(transB), m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

func blasTrans(t bool) blas.Transpose {
	if t {
		return blas.Trans
	}
	return blas.NoTrans
}

// scaleC sets C = beta*C, the whole product when k is 0; beta 0 clears C
// (NaNs included), as BLAS does.
func scaleC(m, n int, beta float32, c []float32, ldc int) {
	for i := 0; i < m; i++ {
		row := c[i*ldc : i*ldc+n]
		switch beta {
		case 1:
		case 0:
			clear(row)
		default:
			for j := range row {
				row[j] *= beta
			}
		}
	}
}

// checkSgemm panics unless the arguments describe matrices inside their
// slices: op(A) m x k, op(B) k x n and C m x n, row-major, each stored
// row's length at most its leading dimension. A bad call is a programming
// error of the caller, and C BLAS would otherwise read or write outside
// the slices (or print an xerbla message and return).
func checkSgemm(transA, transB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	if m < 0 || n < 0 || k < 0 {
		panic(fmt.Sprintf("kernels: sgemm: negative size m=%d n=%d k=%d", m, n, k))
	}
	// Stored shapes: A is m x k, or k x m when transposed; B k x n or n x k.
	aRows, aCols := m, k
	if transA {
		aRows, aCols = k, m
	}
	bRows, bCols := k, n
	if transB {
		bRows, bCols = n, k
	}
	checkOperand("A", aRows, aCols, a, lda)
	checkOperand("B", bRows, bCols, b, ldb)
	checkOperand("C", m, n, c, ldc)
	// The C library takes 32-bit ints (LP64 OpenBLAS).
	for _, v := range [...]int{m, n, k, lda, ldb, ldc} {
		if v > math.MaxInt32 {
			panic(fmt.Sprintf("kernels: sgemm: dimension %d exceeds the 32-bit BLAS interface", v))
		}
	}
}

func checkOperand(what string, rows, cols int, s []float32, ld int) {
	if ld < max(1, cols) {
		panic(fmt.Sprintf("kernels: sgemm: leading dimension of %s is %d, want >= max(1, %d columns)", what, ld, cols))
	}
	if rows == 0 || cols == 0 {
		return
	}
	if need := (rows-1)*ld + cols; len(s) < need {
		panic(fmt.Sprintf("kernels: sgemm: %s (%d x %d, leading dimension %d) needs %d elements, slice has %d", what, rows, cols, ld, need, len(s)))
	}
}
