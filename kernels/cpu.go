package kernels

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
)

// CPUOptions configure the CPU backend.
type CPUOptions struct {
	// Threads is the number of threads kernels use (GEMM included); 0
	// means GOMAXPROCS.
	Threads int
	// BLAS picks the GEMM provider: "" for OpenBLAS when its shared
	// library loads and gonum's pure-Go BLAS otherwise, "openblas",
	// "gonum", or the path of a shared library exporting cblas_sgemm.
	BLAS string
	// BLASThreads is the number of threads a product runs on; 0 means
	// Threads. Fewer leave cores to work that runs beside the products (a
	// trainer's gather stage): a product waits for its slowest piece, so
	// one thread sharing its core with a busy goroutine slows it all. A
	// product gives the same bits on any count (planGemm).
	BLASThreads int
}

// CPU is the default Backend: matrices in host memory, GEMM in a BLAS,
// every other kernel in Go on Threads goroutines.
type CPU struct {
	threads     int
	blasThreads int
	blas        blasLib
	note        string
}

// NewCPU returns a CPU backend. It fails only when o.BLAS names a library
// that cannot be loaded.
func NewCPU(o CPUOptions) (*CPU, error) {
	if o.Threads < 0 {
		return nil, fmt.Errorf("kernels: %d threads (want >= 1, or 0 for one per core)", o.Threads)
	}
	if o.BLASThreads < 0 {
		return nil, fmt.Errorf("kernels: %d BLAS threads (want >= 1, or 0 for as many as the kernels)", o.BLASThreads)
	}
	t := o.Threads
	if t == 0 {
		t = runtime.GOMAXPROCS(0)
	}
	bt := o.BLASThreads
	if bt == 0 {
		bt = t
	}
	lib, note, err := loadBLAS(o.BLAS)
	if err != nil {
		return nil, err
	}
	return &CPU{threads: t, blasThreads: bt, blas: lib, note: note}, nil
}

// Name implements Backend.
func (c *CPU) Name() string {
	if _, ok := c.blas.(gonumBLAS); !ok && c.blasThreads != c.threads {
		return fmt.Sprintf("cpu: %s, %d threads, products on %d", c.blas.name(), c.threads, c.blasThreads)
	}
	return fmt.Sprintf("cpu: %s, %d threads", c.blas.name(), c.threads)
}

// BLASThreads is the number of threads the products run on.
func (c *CPU) BLASThreads() int { return c.blasThreads }

// SetBLASThreads runs this backend's products on n threads from now on.
// gonum's BLAS splits its own work over every core, whatever n.
func (c *CPU) SetBLASThreads(n int) error {
	if n < 1 {
		return fmt.Errorf("kernels: %d BLAS threads (want >= 1)", n)
	}
	c.blasThreads = n
	return nil
}

// Note says why the preferred BLAS was not used, or "".
func (c *CPU) Note() string { return c.note }

// Threads implements Backend.
func (c *CPU) Threads() int { return c.threads }

// NewMat implements Backend.
func (c *CPU) NewMat(rows, cols int) *Mat {
	checkDims(rows, cols)
	return &Mat{Rows: rows, Cols: cols, Stride: cols, h: make([]float32, rows*cols)}
}

// Resize implements Backend.
func (c *CPU) Resize(m *Mat, rows, cols int) {
	checkDims(rows, cols)
	if m.Stride != m.Cols && m.Rows > 1 {
		panic("kernels: Resize of a view")
	}
	n := rows * cols
	if cap(m.h) < n {
		m.h = make([]float32, n, n+n/8)
	}
	m.h = m.h[:n]
	m.Rows, m.Cols, m.Stride = rows, cols, cols
}

// Upload implements Backend.
func (c *CPU) Upload(m *Mat, rows, cols int, src []float32) {
	if len(src) != rows*cols {
		panic(fmt.Sprintf("kernels: Upload of %d values into %dx%d", len(src), rows, cols))
	}
	c.Resize(m, rows, cols)
	copy(m.h, src)
}

// Download implements Backend.
func (c *CPU) Download(dst []float32, m *Mat) {
	if len(dst) < m.Len() {
		panic(fmt.Sprintf("kernels: Download of %dx%d into %d values", m.Rows, m.Cols, len(dst)))
	}
	for r := 0; r < m.Rows; r++ {
		copy(dst[r*m.Cols:(r+1)*m.Cols], m.row(r))
	}
}

// Wrap implements Backend: the Mat shares data.
func (c *CPU) Wrap(rows, cols int, data []float32) *Mat {
	checkDims(rows, cols)
	if len(data) < rows*cols {
		panic(fmt.Sprintf("kernels: Wrap of %d values as %dx%d", len(data), rows, cols))
	}
	return &Mat{Rows: rows, Cols: cols, Stride: cols, h: data[:rows*cols]}
}

// Host returns m's storage (row r at r*Stride). The CPU backend is host
// resident; code that must also run on a device backend uses Upload and
// Download instead.
func (c *CPU) Host(m *Mat) []float32 { return m.h }

// Zero implements Backend.
func (c *CPU) Zero(m *Mat) {
	if m.Contiguous() {
		c.parallel(m.Len(), 1<<16, func(lo, hi int) { clear(m.h[lo:hi]) })
		return
	}
	c.rows(m.Rows, m.Cols, func(r int) { clear(m.row(r)) })
}

// Copy implements Backend.
func (c *CPU) Copy(dst, src *Mat) {
	sameShape("Copy", dst, src)
	c.rows(dst.Rows, dst.Cols, func(r int) { copy(dst.row(r), src.row(r)) })
}

// NewIndex implements Backend: the Index shares v.
func (c *CPU) NewIndex(v []int32) *Index { return &Index{N: len(v), h: v} }

// NewCSR implements Backend: the CSR shares offsets and srcIdx.
func (c *CPU) NewCSR(offsets, srcIdx []int32, numSrc int) *CSR {
	if len(offsets) < 1 || offsets[0] != 0 || int(offsets[len(offsets)-1]) != len(srcIdx) {
		panic(fmt.Sprintf("kernels: CSR offsets must run from 0 to %d", len(srcIdx)))
	}
	return &CSR{NumDst: len(offsets) - 1, NumSrc: numSrc, NumEdges: len(srcIdx),
		offsets: c.NewIndex(offsets), srcIdx: c.NewIndex(srcIdx)}
}

// row returns row r of a host matrix.
func (m *Mat) row(r int) []float32 {
	o := r * m.Stride
	return m.h[o : o+m.Cols : o+m.Cols]
}

func checkDims(rows, cols int) {
	if rows < 0 || cols < 0 {
		panic(fmt.Sprintf("kernels: %dx%d matrix", rows, cols))
	}
}

func sameShape(op string, a, b *Mat) {
	if a.Rows != b.Rows || a.Cols != b.Cols {
		panic(fmt.Sprintf("kernels: %s of %dx%d and %dx%d", op, a.Rows, a.Cols, b.Rows, b.Cols))
	}
}

// grainElems is the least work, in elements touched, worth handing to
// another goroutine.
const grainElems = 1 << 14

// parallel runs fn over [0, n) split into chunks of at least minChunk on
// up to Threads goroutines. fn must write disjoint outputs per index, so
// the result does not depend on the split.
func (c *CPU) parallel(n, minChunk int, fn func(lo, hi int)) {
	if n <= 0 {
		return
	}
	minChunk = max(minChunk, 1)
	if c.threads <= 1 || n <= minChunk {
		fn(0, n)
		return
	}
	// A few chunks per thread balance uneven rows (hubs).
	chunks := min(4*c.threads, (n+minChunk-1)/minChunk)
	size := (n + chunks - 1) / chunks
	chunks = (n + size - 1) / size
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(c.threads, chunks) {
		wg.Go(func() {
			for {
				k := int(next.Add(1) - 1)
				if k >= chunks {
					return
				}
				lo := k * size
				fn(lo, min(lo+size, n))
			}
		})
	}
	wg.Wait()
}

// rows runs fn on every row index in parallel, rows of cols elements.
func (c *CPU) rows(n, cols int, fn func(r int)) {
	c.parallel(n, grainElems/max(cols, 1), func(lo, hi int) {
		for r := lo; r < hi; r++ {
			fn(r)
		}
	})
}

// reduceChunk is the fixed number of rows a reduction sums before its
// partial sums are added in order: fixed, so results do not depend on the
// number of threads.
const reduceChunk = 256

// chunked runs fn(k, lo, hi) for the fixed chunks k of [0, n) in parallel
// and returns the number of chunks.
func (c *CPU) chunked(n int, fn func(k, lo, hi int)) int {
	chunks := (n + reduceChunk - 1) / reduceChunk
	c.parallel(chunks, 1, func(klo, khi int) {
		for k := klo; k < khi; k++ {
			fn(k, k*reduceChunk, min((k+1)*reduceChunk, n))
		}
	})
	return chunks
}

var _ Backend = (*CPU)(nil)
