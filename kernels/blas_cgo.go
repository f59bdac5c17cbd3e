//go:build cgo

package kernels

/*
#cgo LDFLAGS: -ldl -lpthread
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>

// CBLAS's enum values (cblas.h), spelled out so the build needs no BLAS
// headers: the library is found at run time, never at link time.
enum { gnnplanRowMajor = 101, gnnplanNoTrans = 111, gnnplanTrans = 112 };

typedef void (*gnnplan_sgemm_fn)(int order, int transA, int transB, int m, int n, int k,
	float alpha, const float *a, int lda, const float *b, int ldb,
	float beta, float *c, int ldc);

// OpenBLAS's pthread build keeps one pool of worker threads per process,
// and after each product they spin (sched_yield) for 2^28 cycles, about a
// tenth of a second, before they sleep: through the Go kernels that follow
// a product they hold a core the kernels' goroutines need. gnnplan_park
// stops them (blas_thread_shutdown_, OpenBLAS's own fork handler; the next
// product starts them again, exec_blas's lazy re-init). The pool is the
// process's, so the lock and the flag are too: a park never runs while any
// product does (products hold the lock shared, a park tries it exclusive
// and gives up when it cannot have it at once), and only after a product
// has run since the last one.
static pthread_rwlock_t gnnplan_blas_lock = PTHREAD_RWLOCK_INITIALIZER;
static int gnnplan_blas_warm;

static void gnnplan_sgemm(void *f, int transA, int transB, int m, int n, int k,
	float alpha, const float *a, int lda, const float *b, int ldb,
	float beta, float *c, int ldc) {
	pthread_rwlock_rdlock(&gnnplan_blas_lock);
	((gnnplan_sgemm_fn)f)(gnnplanRowMajor,
		transA ? gnnplanTrans : gnnplanNoTrans, transB ? gnnplanTrans : gnnplanNoTrans,
		m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
	__atomic_store_n(&gnnplan_blas_warm, 1, __ATOMIC_RELEASE);
	pthread_rwlock_unlock(&gnnplan_blas_lock);
}

// gnnplan_park stops the library's idle workers (shutdown is
// blas_thread_shutdown_) and returns 1, or returns 0 when no product ran
// since the last park or one is running now.
static int gnnplan_park(void *shutdown) {
	if (!__atomic_load_n(&gnnplan_blas_warm, __ATOMIC_ACQUIRE)) return 0;
	if (pthread_rwlock_trywrlock(&gnnplan_blas_lock) != 0) return 0;
	int parked = __atomic_load_n(&gnnplan_blas_warm, __ATOMIC_ACQUIRE);
	if (parked) {
		((int (*)(void))shutdown)();
		__atomic_store_n(&gnnplan_blas_warm, 0, __ATOMIC_RELEASE);
	}
	pthread_rwlock_unlock(&gnnplan_blas_lock);
	return parked;
}

static void gnnplan_set_int(void *f, int v) { ((void (*)(int))f)(v); }
static int gnnplan_get_int(void *f) { return ((int (*)(void))f)(); }
static const char *gnnplan_get_str(void *f) { return ((const char *(*)(void))f)(); }

// gnnplan_file names the file a symbol was loaded from, or NULL.
static const char *gnnplan_file(void *sym) {
	Dl_info info;
	if (dladdr(sym, &info) == 0) return NULL;
	return info.dli_fname;
}

// gnnplan_dlerror copies dlerror's message (it lives in thread-local
// storage, and a cgo call may be followed by another on the same thread).
static char *gnnplan_dlerror(void) {
	const char *e = dlerror();
	if (e == NULL) return NULL;
	size_t n = 0;
	while (e[n]) n++;
	char *s = malloc(n + 1);
	if (s == NULL) return NULL;
	for (size_t i = 0; i <= n; i++) s[i] = e[i];
	return s;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"unsafe"
)

// haveDlopen says whether loadBLAS can open shared libraries.
const haveDlopen = true

// cblas is a C BLAS library opened with dlopen. It holds the library's
// entry points; dlopen counts references, so opening the same library
// twice gives the same code and the same process-wide OpenBLAS settings.
type cblas struct {
	// file is the library's path as the dynamic linker resolved it.
	file string
	// kAlign, when > 0, splits a product whose k is not a multiple of it
	// in two calls (see the constant kAlign).
	kAlign int
	// sgemmFn is cblas_sgemm; the others are OpenBLAS extensions and nil
	// when the library lacks them.
	sgemmFn, setThreads, getThreads, getConfig, getParallel, getCorename unsafe.Pointer
	// shutdownFn is blas_thread_shutdown_ in OpenBLAS's pthread build
	// (the one whose idle workers spin), else nil.
	shutdownFn unsafe.Pointer
}

// openCBLAS opens the first of names that loads and exports cblas_sgemm.
// The error lists why each one failed.
func openCBLAS(names []string, threads int) (blasLib, error) {
	var errs []string
	for _, name := range names {
		lib, err := openOneCBLAS(name)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		if threads > 0 {
			if err := lib.setThreadCount(threads); err != nil {
				return nil, err
			}
		}
		return lib, nil
	}
	return nil, errors.New(strings.Join(errs, "; "))
}

func openOneCBLAS(name string) (*cblas, error) {
	// dlerror's state is per thread: keep dlopen, dlsym and dlerror on one.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	// RTLD_LOCAL keeps the library's symbols out of the global namespace;
	// the process never links against it.
	h := C.dlopen(cname, C.RTLD_NOW|C.RTLD_LOCAL)
	if h == nil {
		// dlerror's message usually starts with the name already.
		msg := dlerrorString()
		if !strings.Contains(msg, name) {
			msg = name + ": " + msg
		}
		return nil, fmt.Errorf("dlopen %s", msg)
	}
	sym := func(s string) unsafe.Pointer {
		cs := C.CString(s)
		defer C.free(unsafe.Pointer(cs))
		return C.dlsym(h, cs)
	}
	lib := &cblas{
		file:        name,
		kAlign:      kAlign,
		sgemmFn:     sym("cblas_sgemm"),
		setThreads:  sym("openblas_set_num_threads"),
		getThreads:  sym("openblas_get_num_threads"),
		getConfig:   sym("openblas_get_config"),
		getParallel: sym("openblas_get_parallel"),
		getCorename: sym("openblas_get_corename"),
	}
	if lib.sgemmFn == nil {
		C.dlclose(h)
		return nil, fmt.Errorf("%s has no cblas_sgemm", name)
	}
	if lib.getParallel != nil && C.gnnplan_get_int(lib.getParallel) == 1 {
		lib.shutdownFn = sym("blas_thread_shutdown_")
	}
	if f := C.gnnplan_file(lib.sgemmFn); f != nil {
		lib.file = C.GoString(f)
	}
	// The handle stays open for the life of the process: the function
	// pointers are only valid while it is.
	return lib, nil
}

func dlerrorString() string {
	e := C.gnnplan_dlerror()
	if e == nil {
		return "unknown error"
	}
	defer C.free(unsafe.Pointer(e))
	return C.GoString(e)
}

func (l *cblas) name() string {
	var s strings.Builder
	if l.getConfig != nil {
		// "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH ...": name and version.
		f := strings.Fields(C.GoString(C.gnnplan_get_str(l.getConfig)))
		s.WriteString(strings.Join(f[:min(2, len(f))], " "))
	} else {
		s.WriteString("cblas_sgemm")
	}
	var attrs []string
	if l.getParallel != nil {
		switch C.gnnplan_get_int(l.getParallel) {
		case 0:
			attrs = append(attrs, "sequential")
		case 1:
			attrs = append(attrs, "pthread")
		case 2:
			attrs = append(attrs, "OpenMP")
		}
	}
	if l.getCorename != nil {
		attrs = append(attrs, C.GoString(C.gnnplan_get_str(l.getCorename))+" kernels")
	}
	if n := l.threads(); n > 0 {
		unit := "threads"
		if n == 1 {
			unit = "thread"
		}
		attrs = append(attrs, fmt.Sprintf("%d %s", n, unit))
	}
	if len(attrs) > 0 {
		fmt.Fprintf(&s, " (%s)", strings.Join(attrs, ", "))
	}
	fmt.Fprintf(&s, " via dlopen %s", l.file)
	return s.String()
}

// setThreadCount sets OpenBLAS's thread count (process-wide), when the
// library can.
func (l *cblas) setThreadCount(n int) error {
	if l.setThreads == nil {
		return fmt.Errorf("%s: cannot set %d threads: no openblas_set_num_threads", l.file, n)
	}
	C.gnnplan_set_int(l.setThreads, C.int(n))
	return nil
}

// threads returns OpenBLAS's current thread count, 0 when the library
// does not say.
func (l *cblas) threads() int {
	if l.getThreads == nil {
		return 0
	}
	return int(C.gnnplan_get_int(l.getThreads))
}

// parkWorkers stops OpenBLAS's idle worker threads, which would otherwise
// spin beside the Go kernels for a tenth of a second after each product,
// and reports whether it did. It does nothing (false) for a build without
// such workers, when no product ran since the last park, or while one is
// running (on any goroutine: the pool is the process's). The next product
// starts the workers again.
func (l *cblas) parkWorkers() bool {
	if l.shutdownFn == nil {
		return false
	}
	return C.gnnplan_park(l.shutdownFn) == 1
}

func (l *cblas) sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	checkSgemm(transA, transB, m, n, k, a, lda, b, ldb, c, ldc)
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		// A and B are empty, so &a[0] does not exist; C = beta*C.
		scaleC(m, n, beta, c, ldc)
		return
	}
	// Sum k in [0, k1) then [k1, k) (see kAlign).
	k1 := k
	if l.kAlign > 0 && k > l.kAlign {
		k1 = k - k%l.kAlign
	}
	l.call(transA, transB, m, n, k1, alpha, a, lda, b, ldb, beta, c, ldc)
	if k1 == k {
		return
	}
	// Columns k1.. of op(A) and rows k1.. of op(B).
	var ak, bk []float32
	if transA {
		ak = a[k1*lda:]
	} else {
		ak = a[k1:]
	}
	if transB {
		bk = b[k1:]
	} else {
		bk = b[k1*ldb:]
	}
	l.call(transA, transB, m, n, k-k1, alpha, ak, lda, bk, ldb, 1, c, ldc)
}

// call is one cblas_sgemm on checked, non-empty operands.
func (l *cblas) call(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	// The slices hold no Go pointers, and the library keeps none of them
	// after the call: cgo's pointer rules allow passing them.
	C.gnnplan_sgemm(l.sgemmFn, cblasFlag(transA), cblasFlag(transB), C.int(m), C.int(n), C.int(k),
		C.float(alpha), (*C.float)(unsafe.Pointer(&a[0])), C.int(lda),
		(*C.float)(unsafe.Pointer(&b[0])), C.int(ldb),
		C.float(beta), (*C.float)(unsafe.Pointer(&c[0])), C.int(ldc))
}

func cblasFlag(b bool) C.int {
	if b {
		return 1
	}
	return 0
}
