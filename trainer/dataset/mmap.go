package dataset

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"sync"
	"syscall"
	"unsafe"

	"github.com/gnnplan/gnnplan/internal/fsutil"
	"github.com/gnnplan/gnnplan/internal/inputerr"
)

// mappedArray is the data of a 1-d .npy array, memory-mapped read-only:
// the pages come from the page cache on first touch and the kernel can
// drop them again, so an array larger than memory can be opened.
type mappedArray struct {
	path  string
	dtype string // "<i8", "<i4" or "<u4"
	n     int64  // elements
	data  []byte // n elements, little-endian; a view into mem
	mem   []byte // the whole mapping, for munmap; nil for an empty file
}

// elemSize is the width of the integer dtypes the loader reads.
func elemSize(dtype string) int64 {
	switch dtype {
	case "<i8":
		return 8
	case "<i4", "<u4":
		return 4
	}
	return 0
}

// mapInts opens path as a 1-d integer .npy of want elements and maps its
// data. The data offset comes from the header, and the file must hold
// exactly the header plus want elements: a truncated or padded array is
// refused. A missing file is an empty array when want is 0.
func mapInts(path string, want int64) (*mappedArray, error) {
	f, err := fsutil.OpenRegular(path)
	if err != nil {
		if want == 0 && errors.Is(err, os.ErrNotExist) {
			return &mappedArray{path: path, dtype: "<i8"}, nil
		}
		return nil, &inputerr.Error{Path: path, Msg: "cannot read array", Err: err}
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.IsDir() {
		return nil, &inputerr.Error{Path: path, Msg: "is a directory (want a .npy file)"}
	}
	h, err := ReadArrayHeader(f)
	if err != nil {
		return nil, &inputerr.Error{Path: path, Msg: "not a .npy array", Err: err}
	}
	n := int64(1)
	for _, d := range h.Shape {
		n *= int64(d)
	}
	if len(h.Shape) != 1 || n != want {
		return nil, &inputerr.Error{Path: path, Msg: fmt.Sprintf("shape %v (want [%d], from meta.json)", h.Shape, want)}
	}
	elem := elemSize(h.DType)
	if elem == 0 {
		return nil, &inputerr.Error{Path: path, Msg: fmt.Sprintf("dtype %s (want <i8, <i4 or <u4)", h.DType)}
	}
	if err := h.CheckDataSize(f, path, n, elem); err != nil {
		return nil, err
	}
	a := &mappedArray{path: path, dtype: h.DType, n: n}
	size := h.DataOffset + n*elem
	if n == 0 {
		return a, nil
	}
	if size > math.MaxInt {
		return nil, &inputerr.Error{Path: path, Msg: fmt.Sprintf("%d bytes, too large to map", size)}
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map %s: %w", path, err)
	}
	a.mem, a.data = mem, mem[h.DataOffset:]
	return a, nil
}

// unmap releases the mapping; views of it must not be used afterwards.
func (a *mappedArray) unmap() error {
	if a == nil || a.mem == nil {
		return nil
	}
	mem := a.mem
	a.mem, a.data = nil, nil
	if err := syscall.Munmap(mem); err != nil {
		return fmt.Errorf("unmap %s: %w", a.path, err)
	}
	return nil
}

// aligned reports whether the data can be viewed as elements of width w
// in place.
func (a *mappedArray) aligned(w uintptr) bool {
	return len(a.data) == 0 || uintptr(unsafe.Pointer(&a.data[0]))%w == 0
}

// int64s returns the array as []int64: a view of the mapping when it is
// stored as aligned int64 (what gnnplan writes), otherwise a converted
// copy (8 bytes per element). view says which it is.
func (a *mappedArray) int64s() (xs []int64, view bool) {
	if a.n == 0 {
		return []int64{}, false
	}
	if a.dtype == "<i8" && a.aligned(8) && littleEndian() {
		return unsafe.Slice((*int64)(unsafe.Pointer(&a.data[0])), a.n), true
	}
	xs = make([]int64, a.n)
	parallelChunks(a.n, func(lo, hi int64) {
		for i := lo; i < hi; i++ {
			xs[i] = a.at(i)
		}
	})
	return xs, false
}

// at decodes element i.
func (a *mappedArray) at(i int64) int64 {
	switch a.dtype {
	case "<i8":
		return int64(binary.LittleEndian.Uint64(a.data[8*i:]))
	case "<i4":
		return int64(int32(binary.LittleEndian.Uint32(a.data[4*i:])))
	default:
		return int64(binary.LittleEndian.Uint32(a.data[4*i:]))
	}
}

// vertexIDs returns the array as []int32 after checking every entry is
// in [0, n): a view of the mapping when it is stored as aligned int32 or
// uint32 (ids below 2^31 read the same either way), otherwise a narrowed
// copy (4 bytes per element, written in parallel without staging). bad
// is the lowest entry out of range, or -1.
func (a *mappedArray) vertexIDs(n int64) (ids []int32, bad int64, badValue int64) {
	workers := runtime.GOMAXPROCS(0)
	firstBad := make([]int64, workers)
	for i := range firstBad {
		firstBad[i] = -1
	}
	view := a.n == 0 || (a.dtype != "<i8" && a.aligned(4) && littleEndian())
	if a.n == 0 {
		ids = []int32{}
	} else if view {
		ids = unsafe.Slice((*int32)(unsafe.Pointer(&a.data[0])), a.n)
	} else {
		ids = make([]int32, a.n)
	}
	parallelChunksN(a.n, workers, func(w int, lo, hi int64) {
		for i := lo; i < hi; i++ {
			var v int64
			if view {
				v = int64(ids[i])
				if a.dtype == "<u4" {
					v = int64(uint32(ids[i]))
				}
			} else {
				v = a.at(i)
			}
			if v < 0 || v >= n {
				firstBad[w] = i
				return
			}
			if !view {
				ids[i] = int32(v)
			}
		}
	})
	bad = -1
	for _, b := range firstBad {
		if b >= 0 && (bad < 0 || b < bad) {
			bad = b
		}
	}
	if bad >= 0 {
		return nil, bad, a.at(bad)
	}
	return ids, -1, 0
}

// littleEndian reports whether this machine stores integers as .npy's
// "<" types do, so a mapping can be viewed in place.
func littleEndian() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}

// parallelChunks runs fn over [0, n) split into one contiguous range per
// core.
func parallelChunks(n int64, fn func(lo, hi int64)) {
	parallelChunksN(n, runtime.GOMAXPROCS(0), func(_ int, lo, hi int64) { fn(lo, hi) })
}

// parallelChunksN runs fn(w, lo, hi) for workers contiguous ranges of
// [0, n), range w on its own goroutine, and waits. Small inputs run on
// the calling goroutine.
func parallelChunksN(n int64, workers int, fn func(w int, lo, hi int64)) {
	if n < 1<<16 || workers <= 1 {
		fn(0, 0, n)
		return
	}
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := n*int64(w)/int64(workers), n*int64(w+1)/int64(workers)
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(w, lo, hi)
		}()
	}
	wg.Wait()
}
