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
	// beta is 0, C's contents on input are ignored (NaNs included). It
	// runs on up to threads threads, and its result does not depend on
	// how many.
	sgemm(threads int, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int)
	// name says what computes the products and who chose its kernels,
	// e.g. "OpenBLAS 0.3.21 (pthread, Cooperlake kernels, the library's
	// choice) via dlopen /usr/lib/x86_64-linux-gnu/libopenblas.so.0" or
	// "gonum pure-Go BLAS".
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

// loadBLAS picks the GEMM provider.
//
//   - "": OpenBLAS when its shared library loads, else gonum's pure-Go
//     BLAS, with note saying why OpenBLAS was not used (err is always nil).
//   - "openblas": OpenBLAS, or an error naming every library tried.
//   - "gonum": gonum's pure-Go BLAS.
//   - a path (containing '/' or ending in ".so" or ".so.N"): that shared
//     library, which must export cblas_sgemm.
//
// A C library runs every call on one thread of its own (OpenBLAS's
// openblas_set_num_threads(1)); gnnplan cuts products into pieces and
// runs them on threads of its own (planGemm), so that the bits do not
// depend on the thread count. Before an OpenBLAS is loaded, its kernels
// are chosen where its own detection would fall back to generic ones
// (coreProbe.choose).
func loadBLAS(choice string) (lib blasLib, note string, err error) {
	return loadBLASFrom(choice, openBLASCandidates(), hostCoreProbe())
}

// loadBLASFrom is loadBLAS looking for OpenBLAS under the given names,
// with the CPU, environment and versions probe reads.
func loadBLASFrom(choice string, openBLASNames []string, probe coreProbe) (lib blasLib, note string, err error) {
	switch {
	case choice == "gonum":
		return gonumBLAS{}, "", nil
	case choice == "":
		lib, err := openCBLAS(openBLASNames, probe)
		if err != nil {
			return gonumBLAS{}, fmt.Sprintf("OpenBLAS not used: %v", err), nil
		}
		return lib, "", nil
	case choice == "openblas":
		lib, err := openCBLAS(openBLASNames, probe)
		if err != nil {
			return nil, "", fmt.Errorf("load OpenBLAS: %w", err)
		}
		return lib, "", nil
	case isLibraryPath(choice):
		lib, err := openCBLAS([]string{choice}, probe)
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

// gonumBLAS is gonum's pure-Go BLAS: parallel over 64 x 64 blocks of C
// on its own goroutines, each block summed along k in one fixed order, so
// its results do not depend on the number of threads.
type gonumBLAS struct{}

func (gonumBLAS) name() string { return "gonum pure-Go BLAS" }

func (gonumBLAS) sgemm(_ int, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
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
