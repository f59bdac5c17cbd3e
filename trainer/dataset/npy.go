package dataset

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/gnnplan/gnnplan/internal/fsutil"
	"github.com/gnnplan/gnnplan/internal/inputerr"

	"github.com/gnnplan/gnnplan/internal/npy"
)

// ArrayHeader is what a .npy file's header says about the array after it.
type ArrayHeader struct {
	DType   string // NumPy type string: "<f4", "<i4", "<i8", "<u4", ...
	Shape   []int
	Fortran bool // column-major
	// DataOffset is where the first element starts, in bytes from the
	// start of the file.
	DataOffset int64
}

// ReadArrayHeader parses the header of the .npy file f, which must be
// positioned at its start, as untrusted input: the header's length is
// checked against the file's size before it is read (package npy).
func ReadArrayHeader(f *os.File) (h ArrayHeader, err error) {
	st, err := f.Stat()
	if err != nil {
		return ArrayHeader{}, err
	}
	var pre [12]byte
	if _, err := f.ReadAt(pre[:], 0); err != nil {
		return ArrayHeader{}, fmt.Errorf("%d bytes, too short for a header: %w", st.Size(), err)
	}
	// Widen before adding: a 16-bit length of 0xFFFF plus the 10-byte
	// preamble does not fit 16 bits.
	end := 10 + int64(binary.LittleEndian.Uint16(pre[8:10]))
	if pre[6] >= 2 { // version 2 and 3: 4-byte header length
		end = 12 + int64(binary.LittleEndian.Uint32(pre[8:12]))
	}
	if end > st.Size() {
		return ArrayHeader{}, fmt.Errorf("header of %d bytes in a file of %d", end, st.Size())
	}
	d, err := npy.Decode(io.NewSectionReader(f, 0, end))
	if err != nil {
		return ArrayHeader{}, fmt.Errorf("malformed header: %w", err)
	}
	shape := make([]int, len(d.Shape))
	for i, n := range d.Shape {
		shape[i] = int(n)
	}
	return ArrayHeader{DType: d.DType, Shape: shape, Fortran: d.Fortran, DataOffset: end}, nil
}

// CheckDataSize compares the size of f (named path in errors) with its
// header plus n elements of elem bytes, so a truncated or padded array is
// refused, as a *inputerr.Error, before it is read.
func (h ArrayHeader) CheckDataSize(f *os.File, path string, n, elem int64) error {
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat %s: %w", path, err)
	}
	if want := h.DataOffset + n*elem; st.Size() != want {
		return &inputerr.Error{Path: path, Msg: fmt.Sprintf("%d bytes, want %d for %d elements: truncated or padded", st.Size(), want, n)}
	}
	return nil
}

// readInt64s reads a 1-d integer .npy of any integer dtype into a new
// []int64, checking its length. A missing file is an error unless want is
// 0.
func readInt64s(path string, want int64) ([]int64, error) {
	a, err := mapInts(path, want)
	if err != nil {
		return nil, err
	}
	defer a.unmap()
	xs, view := a.int64s()
	if view {
		xs = append([]int64(nil), xs...)
	}
	return xs, nil
}

// ArrayWriter streams a .npy array of known shape to disk, so arrays
// larger than memory can be written chunk by chunk. The file appears
// under its name only when Close has checked that every element came.
type ArrayWriter struct {
	path, tmp string
	f         *os.File
	w         *bufio.Writer
	want, got int64
	elem      int
}

// CreateArray starts path as a little-endian .npy of dtype ("<f4", "<i4",
// "<i8", "<u4") and shape.
func CreateArray(path, dtype string, shape ...int64) (*ArrayWriter, error) {
	elem := map[string]int{"<f4": 4, "<i4": 4, "<u4": 4, "<i8": 8, "<f8": 8, "|u1": 1}[dtype]
	if elem == 0 {
		return nil, fmt.Errorf("create %s: unsupported dtype %s", path, dtype)
	}
	n := int64(1)
	for _, d := range shape {
		n *= d
	}
	f, err := fsutil.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	aw := &ArrayWriter{path: path, tmp: f.Name(), f: f, w: bufio.NewWriterSize(f, 1<<20), want: n, elem: elem}
	aw.w.Write(npy.Encode(dtype, shape, 0))
	return aw, nil
}

// Write appends elements: a []float32, []int32, []uint32, []int64,
// []float64 or []uint8 matching the dtype's width.
func (a *ArrayWriter) Write(data any) error {
	var n int64
	var err error
	switch d := data.(type) {
	case []float32:
		n, err = int64(len(d)), binary.Write(a.w, binary.LittleEndian, d)
	case []int32:
		n, err = int64(len(d)), binary.Write(a.w, binary.LittleEndian, d)
	case []uint32:
		n, err = int64(len(d)), binary.Write(a.w, binary.LittleEndian, d)
	case []int64:
		n, err = int64(len(d)), binary.Write(a.w, binary.LittleEndian, d)
	case []float64:
		n, err = int64(len(d)), binary.Write(a.w, binary.LittleEndian, d)
	case []uint8:
		n, err = int64(len(d)), binary.Write(a.w, binary.LittleEndian, d)
	default:
		return fmt.Errorf("write %s: unsupported element type %T", a.path, data)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", a.path, err)
	}
	a.got += n
	return nil
}

// Close finishes the array: it checks the element count, syncs and
// renames the file into place. On any error the partial file is removed.
func (a *ArrayWriter) Close() error {
	fail := func(err error) error {
		a.f.Close()
		os.Remove(a.tmp)
		return err
	}
	if a.got != a.want {
		return fail(fmt.Errorf("write %s: %d elements written, shape says %d", a.path, a.got, a.want))
	}
	if err := a.w.Flush(); err != nil {
		return fail(fmt.Errorf("write %s: %w", a.path, err))
	}
	if err := a.f.Sync(); err != nil {
		return fail(fmt.Errorf("write %s: %w", a.path, err))
	}
	if err := a.f.Close(); err != nil {
		os.Remove(a.tmp)
		return fmt.Errorf("write %s: %w", a.path, err)
	}
	if err := os.Rename(a.tmp, a.path); err != nil {
		os.Remove(a.tmp)
		return fmt.Errorf("write %s: %w", a.path, err)
	}
	return nil
}

// Abort removes the partial file.
func (a *ArrayWriter) Abort() {
	a.f.Close()
	os.Remove(a.tmp)
}

// WriteArray writes a whole in-memory array to path atomically.
func WriteArray(path, dtype string, data any, shape ...int64) error {
	a, err := CreateArray(path, dtype, shape...)
	if err != nil {
		return err
	}
	if err := a.Write(data); err != nil {
		a.Abort()
		return err
	}
	return a.Close()
}
