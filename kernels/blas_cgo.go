//go:build cgo

package kernels

/*
#cgo LDFLAGS: -ldl -lpthread
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>

// CBLAS's enum values (cblas.h), spelled out so the build needs no BLAS
// headers: the library is found at run time, never at link time.
enum { gnnplanRowMajor = 101, gnnplanNoTrans = 111, gnnplanTrans = 112 };

typedef void (*gnnplan_sgemm_fn)(int order, int transA, int transB, int m, int n, int k,
	float alpha, const float *a, int lda, const float *b, int ldb,
	float beta, float *c, int ldc);

// A product is cut into pieces (gemm_split.go): tiles of C, and chunks of
// k whose partial products go to scratch. gnnplan_piece makes piece p's
// one call of the library, which runs single-threaded.
typedef struct {
	void *f;
	int transA, transB, m, n, k, rows, cols, kChunk, tm, tn, count;
	float alpha, beta;
	const float *a, *b;
	float *c, *scratch;
	int lda, ldb, ldc;
} gnnplan_gemm;

static void gnnplan_piece(const gnnplan_gemm *g, int p) {
	int q = p / (g->tm * g->tn), r = p % (g->tm * g->tn);
	long i0 = (long)(r / g->tn) * g->rows, j0 = (long)(r % g->tn) * g->cols, l0 = (long)q * g->kChunk;
	int mi = g->m - i0 < g->rows ? g->m - i0 : g->rows;
	int nj = g->n - j0 < g->cols ? g->n - j0 : g->cols;
	int kl = g->k - l0 < g->kChunk ? g->k - l0 : g->kChunk;
	const float *a = g->transA ? g->a + l0 * g->lda + i0 : g->a + i0 * g->lda + l0;
	const float *b = g->transB ? g->b + j0 * g->ldb + l0 : g->b + l0 * g->ldb + j0;
	float *c = g->c + i0 * g->ldc + j0, beta = g->beta;
	int ldc = g->ldc;
	if (q > 0) {
		c = g->scratch + (long)(q - 1) * g->m * g->n + i0 * g->n + j0;
		ldc = g->n;
		beta = 0;
	}
	((gnnplan_sgemm_fn)g->f)(gnnplanRowMajor,
		g->transA ? gnnplanTrans : gnnplanNoTrans, g->transB ? gnnplanTrans : gnnplanNoTrans,
		mi, nj, kl, g->alpha, a, g->lda, b, g->ldb, beta, c, ldc);
}

// gnnplan_pool is one backend's threads for the pieces of its products.
// Threads are C threads, started when first needed, that sleep on a
// condition variable between products (they never spin) and live as long
// as the process, as the backend does. The Go caller
// makes one cgo call per product and works on the pieces too; Go
// goroutines each in a long cgo call would have the runtime's sysmon
// hand their Ps to fresh threads every few tens of microseconds, which
// costs about a sixth of a product's speed on two cores.
typedef struct {
	pthread_mutex_t submit; // one product at a time
	pthread_mutex_t mu;
	pthread_cond_t wake, idle;
	int started;            // threads running
	unsigned long gen;      // products posted
	int slots;              // threads that may still join this product
	int busy;               // threads inside this product
	int next;               // next piece (atomic)
	gnnplan_gemm job;
} gnnplan_pool;

static void gnnplan_pieces(gnnplan_pool *p) {
	for (;;) {
		int i = __atomic_fetch_add(&p->next, 1, __ATOMIC_RELAXED);
		if (i >= p->job.count) return;
		gnnplan_piece(&p->job, i);
	}
}

static void *gnnplan_worker(void *arg) {
	gnnplan_pool *p = arg;
	unsigned long seen = 0;
	pthread_mutex_lock(&p->mu);
	for (;;) {
		while (p->gen == seen) pthread_cond_wait(&p->wake, &p->mu);
		seen = p->gen;
		if (p->slots == 0) continue;
		p->slots--;
		p->busy++;
		pthread_mutex_unlock(&p->mu);
		gnnplan_pieces(p);
		pthread_mutex_lock(&p->mu);
		if (--p->busy == 0) pthread_cond_signal(&p->idle);
	}
	return NULL;
}

static gnnplan_pool *gnnplan_pool_new(void) {
	gnnplan_pool *p = calloc(1, sizeof *p);
	if (p == NULL) return NULL;
	pthread_mutex_init(&p->submit, NULL);
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->wake, NULL);
	pthread_cond_init(&p->idle, NULL);
	return p;
}

// gnnplan_run makes every piece of g on the calling thread and up to
// threads-1 of the pool's. When another product holds the pool, or its
// threads cannot be started, the caller makes them all: the pieces, and
// so the bits, are the same. Returns how many threads worked on it.
static int gnnplan_run(gnnplan_pool *p, const gnnplan_gemm *g, int threads) {
	int helpers = threads - 1 < g->count - 1 ? threads - 1 : g->count - 1;
	if (helpers <= 0 || pthread_mutex_trylock(&p->submit) != 0) {
		for (int i = 0; i < g->count; i++) gnnplan_piece(g, i);
		return 1;
	}
	pthread_mutex_lock(&p->mu);
	if (p->started < helpers) {
		// The threads start with every signal blocked, so that signals
		// sent to the process (Ctrl-C, SIGHUP) reach Go's threads.
		sigset_t all, old;
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		while (p->started < helpers) {
			pthread_t t;
			pthread_attr_t attr;
			pthread_attr_init(&attr);
			pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
			int err = pthread_create(&t, &attr, gnnplan_worker, p);
			pthread_attr_destroy(&attr);
			if (err != 0) break;
			p->started++;
		}
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
	if (helpers > p->started) helpers = p->started;
	p->job = *g;
	p->next = 0;
	p->slots = helpers;
	p->gen++;
	pthread_cond_broadcast(&p->wake);
	pthread_mutex_unlock(&p->mu);
	gnnplan_pieces(p);
	pthread_mutex_lock(&p->mu);
	int joined = helpers - p->slots;
	p->slots = 0;
	while (p->busy > 0) pthread_cond_wait(&p->idle, &p->mu);
	pthread_mutex_unlock(&p->mu);
	pthread_mutex_unlock(&p->submit);
	return joined + 1;
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
	"sync"
	"unsafe"
)

// haveDlopen says whether loadBLAS can open shared libraries.
const haveDlopen = true

// cblas is a C BLAS library opened with dlopen, with a pool of threads of
// its own for the pieces of a product. dlopen counts references, so
// opening the same library twice gives the same code and the same
// process-wide OpenBLAS settings; each cblas has its own pool.
type cblas struct {
	// file is the library's path as the dynamic linker resolved it.
	file string
	// sgemmFn is cblas_sgemm; the others are OpenBLAS extensions and nil
	// when the library lacks them.
	sgemmFn, setThreads, getThreads, getConfig, getParallel, getCorename unsafe.Pointer
	// core says who chose the kernels (coreChoice.describe).
	core coreChoice
	pool *C.gnnplan_pool
	// scratch recycles the partial products of k's chunks (*[]float32).
	scratch sync.Pool
}

// openCBLAS opens the first of names that loads and exports cblas_sgemm,
// and sets its own threading to one thread: gnnplan splits products
// itself. The error lists why each one failed.
func openCBLAS(names []string, probe coreProbe) (blasLib, error) {
	var errs []string
	for _, name := range names {
		lib, err := openOneCBLAS(name, probe)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		if lib.setThreads != nil {
			lib.setThreadCount(1)
		}
		return lib, nil
	}
	return nil, errors.New(strings.Join(errs, "; "))
}

func openOneCBLAS(name string, probe coreProbe) (*cblas, error) {
	// dlerror's state is per thread: keep dlopen, dlsym and dlerror on one.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	// Where the library would fall back to generic kernels, tell it which
	// ones this CPU runs (OPENBLAS_CORETYPE, read by its constructor at
	// load time), then put the environment back for child processes.
	choice := probe.choose(name)
	if choice.set != "" {
		restore := setEnv(coreTypeEnv, choice.set)
		defer restore()
	}
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
		sgemmFn:     sym("cblas_sgemm"),
		setThreads:  sym("openblas_set_num_threads"),
		getThreads:  sym("openblas_get_num_threads"),
		getConfig:   sym("openblas_get_config"),
		getParallel: sym("openblas_get_parallel"),
		getCorename: sym("openblas_get_corename"),
		core:        choice,
	}
	if lib.sgemmFn == nil {
		C.dlclose(h)
		return nil, fmt.Errorf("%s has no cblas_sgemm", name)
	}
	if f := C.gnnplan_file(lib.sgemmFn); f != nil {
		lib.file = C.GoString(f)
	}
	if lib.getCorename != nil {
		lib.core.ran = C.GoString(C.gnnplan_get_str(lib.getCorename))
	}
	if lib.pool = C.gnnplan_pool_new(); lib.pool == nil {
		return nil, fmt.Errorf("%s: no memory for a thread pool", name)
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

// config is OpenBLAS's build configuration ("OpenBLAS 0.3.21 NO_LAPACKE
// DYNAMIC_ARCH ..."), "" for another library.
func (l *cblas) config() string {
	if l.getConfig == nil {
		return ""
	}
	return C.GoString(C.gnnplan_get_str(l.getConfig))
}

func (l *cblas) name() string {
	var s strings.Builder
	if cfg := l.config(); cfg != "" {
		// Its name and version.
		f := strings.Fields(cfg)
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
	if d := l.core.describe(); d != "" {
		attrs = append(attrs, d)
	}
	if len(attrs) > 0 {
		fmt.Fprintf(&s, " (%s)", strings.Join(attrs, ", "))
	}
	fmt.Fprintf(&s, " via dlopen %s", l.file)
	return s.String()
}

// setThreadCount sets OpenBLAS's own thread count (process-wide). gnnplan
// keeps it at 1; benchmarks raise it to compare with the library's own
// threading.
func (l *cblas) setThreadCount(n int) {
	if l.setThreads != nil {
		C.gnnplan_set_int(l.setThreads, C.int(n))
	}
}

// threads returns OpenBLAS's own thread count, 0 when the library does
// not say.
func (l *cblas) threads() int {
	if l.getThreads == nil {
		return 0
	}
	return int(C.gnnplan_get_int(l.getThreads))
}

// sgemm cuts the product as planGemm says and makes its pieces on up to
// threads threads: the calling one and the pool's.
func (l *cblas) sgemm(threads int, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	checkSgemm(transA, transB, m, n, k, a, lda, b, ldb, c, ldc)
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		// A and B are empty, so &a[0] does not exist; C = beta*C.
		scaleC(m, n, beta, c, ldc)
		return
	}
	l.run(planGemm(m, n, k), threads, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// sgemmWhole is the product as one library call on the library's own
// threads (setThreadCount): what benchmarks compare sgemm with.
func (l *cblas) sgemmWhole(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	checkSgemm(transA, transB, m, n, k, a, lda, b, ldb, c, ldc)
	if m == 0 || n == 0 || k == 0 {
		scaleC(m, n, beta, c, ldc)
		return
	}
	l.run(gemmSplit{rows: m, cols: n, kChunk: k}, 1, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// run makes the pieces of split s on up to threads threads, then adds
// k's chunks into C.
func (l *cblas) run(s gemmSplit, threads int, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	tm, tn, tk := ceilDiv(m, s.rows), ceilDiv(n, s.cols), ceilDiv(k, s.kChunk)
	var scratch []float32
	if tk > 1 {
		// Every element is written (beta 0) before it is read.
		need := (tk - 1) * m * n
		if p, ok := l.scratch.Get().(*[]float32); ok && cap(*p) >= need {
			scratch = (*p)[:need]
		} else {
			scratch = make([]float32, need)
		}
		defer l.scratch.Put(&scratch)
	}
	g := C.gnnplan_gemm{
		f: l.sgemmFn, transA: cblasFlag(transA), transB: cblasFlag(transB),
		m: C.int(m), n: C.int(n), k: C.int(k), rows: C.int(s.rows), cols: C.int(s.cols), kChunk: C.int(s.kChunk),
		tm: C.int(tm), tn: C.int(tn), count: C.int(tm * tn * tk),
		alpha: C.float(alpha), beta: C.float(beta),
		a: (*C.float)(unsafe.Pointer(&a[0])), b: (*C.float)(unsafe.Pointer(&b[0])), c: (*C.float)(unsafe.Pointer(&c[0])),
		lda: C.int(lda), ldb: C.int(ldb), ldc: C.int(ldc),
	}
	if scratch != nil {
		g.scratch = (*C.float)(unsafe.Pointer(&scratch[0]))
	}
	// g holds Go pointers, so they are pinned for the call; neither the
	// library nor the pool keeps any of them after it.
	var pin runtime.Pinner
	defer pin.Unpin()
	pin.Pin(&a[0])
	pin.Pin(&b[0])
	pin.Pin(&c[0])
	if scratch != nil {
		pin.Pin(&scratch[0])
	}
	C.gnnplan_run(l.pool, &g, C.int(max(threads, 1)))
	if tk > 1 {
		addChunks(threads, m, n, tk-1, scratch, c, ldc)
	}
}

func cblasFlag(b bool) C.int {
	if b {
		return 1
	}
	return 0
}
