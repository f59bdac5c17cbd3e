package dataset

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/nlpodyssey/gopickle/pickle"
	"github.com/nlpodyssey/gopickle/types"
)

// The Planetoid files (Yang et al. 2016) are Python-2 pickles of NumPy
// arrays, scipy.sparse CSR matrices and a defaultdict(list). gopickle
// decodes the opcodes; the types below stand in for the few Python
// classes those pickles name, rebuilding each from what its reduce and
// __setstate__ would receive. Any other class is refused, so a pickle
// cannot make the import build arbitrary objects.

// pyClass is a Python class or function a pickle names by module and name.
type pyClass struct{ module, name string }

func (c *pyClass) String() string { return c.module + "." + c.name }

// findPickleClass maps the GLOBALs of Planetoid pickles to pyClass.
// NumPy and scipy moved these names between releases (numpy.core became
// numpy._core, scipy.sparse.csr scipy.sparse._csr), so the module is
// matched by its root.
func findPickleClass(module, name string) (any, error) {
	switch {
	case (module == "numpy.core.multiarray" || module == "numpy._core.multiarray") && name == "_reconstruct",
		module == "numpy" && (name == "ndarray" || name == "dtype"),
		strings.HasPrefix(module, "scipy.sparse") && (name == "csr_matrix" || name == "csr_array"),
		module == "collections" && name == "defaultdict",
		(module == "__builtin__" || module == "builtins") && name == "list":
		return &pyClass{module: module, name: name}, nil
	}
	return nil, fmt.Errorf("pickle names %s.%s: only NumPy arrays, scipy CSR matrices and defaultdict(list) are read", module, name)
}

// Call is a REDUCE on the class: _reconstruct(ndarray, shape, typecode),
// dtype(str, align, copy) or defaultdict(list).
func (c *pyClass) Call(args ...any) (any, error) {
	switch c.name {
	case "_reconstruct":
		return &npArray{}, nil
	case "dtype":
		if len(args) == 0 {
			return nil, errors.New("numpy.dtype without arguments")
		}
		s, ok := args[0].(string)
		if !ok {
			return nil, fmt.Errorf("numpy.dtype(%v): want a type string", args[0])
		}
		return &npDType{str: s, order: '|'}, nil
	case "defaultdict":
		return &pyDefaultDict{items: map[int64]any{}}, nil
	}
	return nil, fmt.Errorf("pickle calls %s, which Planetoid files never do", c)
}

// PyNew is NEWOBJ (or copy_reg._reconstructor) on csr_matrix.
func (c *pyClass) PyNew(...any) (any, error) {
	if strings.HasPrefix(c.name, "csr_") {
		return &pyCSR{}, nil
	}
	return nil, fmt.Errorf("pickle creates a %s object, which Planetoid files never do", c)
}

// npDType is a NumPy dtype: its type string ("f4", "i8", "b1") and byte
// order ('<', '>', '|', '=') from __setstate__.
type npDType struct {
	str   string
	order byte
}

func (d *npDType) PySetState(state any) error {
	t, ok := state.(*types.Tuple)
	if !ok || t.Len() < 2 {
		return fmt.Errorf("dtype %s state %v: want a tuple (version, byte order, ...)", d.str, state)
	}
	o, ok := t.Get(1).(string)
	if !ok || len(o) != 1 {
		return fmt.Errorf("dtype %s byte order %v", d.str, t.Get(1))
	}
	d.order = o[0]
	return nil
}

// npArray is a NumPy array: shape, dtype and the raw bytes of its data in
// C order (Fortran order is refused).
type npArray struct {
	shape []int64
	dtype *npDType
	data  []byte
}

// PySetState takes ndarray.__reduce__'s state: (version, shape, dtype,
// is_fortran, raw data).
func (a *npArray) PySetState(state any) error {
	t, ok := state.(*types.Tuple)
	if !ok || t.Len() != 5 {
		return fmt.Errorf("ndarray state %T: want (version, shape, dtype, is_fortran, data)", state)
	}
	shape, ok := t.Get(1).(*types.Tuple)
	if !ok {
		return fmt.Errorf("ndarray shape %v: want a tuple", t.Get(1))
	}
	n := int64(1)
	for i := range shape.Len() {
		d, ok := shape.Get(i).(int)
		if !ok || d < 0 || (d > 0 && n > math.MaxInt64/int64(d)) {
			return fmt.Errorf("ndarray shape %v: want non-negative integers", shape)
		}
		a.shape = append(a.shape, int64(d))
		n *= int64(d)
	}
	if a.dtype, ok = t.Get(2).(*npDType); !ok {
		return fmt.Errorf("ndarray dtype %v: want numpy.dtype", t.Get(2))
	}
	if fortran, _ := t.Get(3).(bool); fortran && len(a.shape) > 1 {
		return errors.New("ndarray in Fortran order: want C order")
	}
	switch raw := t.Get(4).(type) {
	case string: // Python 2 str, a BINSTRING
		a.data = []byte(raw)
	case []byte:
		a.data = raw
	default:
		return fmt.Errorf("ndarray data %T: want raw bytes (object arrays are not read)", raw)
	}
	elem, err := a.dtype.size()
	if err != nil {
		return err
	}
	// Compared by division: shape can claim more elements than n*elem can
	// count without overflowing.
	if int64(len(a.data))%elem != 0 || n != int64(len(a.data))/elem {
		return fmt.Errorf("ndarray of shape %v and dtype %s holds %d bytes, want %d", a.shape, a.dtype.str, len(a.data), n*elem)
	}
	return nil
}

// size is the element width in bytes of the dtypes numeric arrays use.
func (d *npDType) size() (int64, error) {
	switch strings.TrimLeft(d.str, "<>|=") {
	case "f8", "i8", "u8":
		return 8, nil
	case "f4", "i4", "u4":
		return 4, nil
	case "f2", "i2", "u2":
		return 2, nil
	case "i1", "u1", "b1":
		return 1, nil
	}
	return 0, fmt.Errorf("dtype %q: want a numeric type (f2/f4/f8, i1-i8, u1-u8, b1)", d.str)
}

// len is the number of elements.
func (a *npArray) len() int64 {
	n := int64(1)
	for _, d := range a.shape {
		n *= d
	}
	return n
}

// float returns element i as float64.
func (a *npArray) float(i int64) float64 {
	var bo binary.ByteOrder = binary.LittleEndian
	if a.dtype.order == '>' {
		bo = binary.BigEndian
	}
	k := strings.TrimLeft(a.dtype.str, "<>|=")
	switch k {
	case "f8":
		return math.Float64frombits(bo.Uint64(a.data[8*i:]))
	case "f4":
		return float64(math.Float32frombits(bo.Uint32(a.data[4*i:])))
	case "f2":
		return float64(halfToFloat32(bo.Uint16(a.data[2*i:])))
	}
	return float64(a.int(i))
}

// int returns element i as int64 (a float element is truncated).
func (a *npArray) int(i int64) int64 {
	var bo binary.ByteOrder = binary.LittleEndian
	if a.dtype.order == '>' {
		bo = binary.BigEndian
	}
	switch strings.TrimLeft(a.dtype.str, "<>|=") {
	case "i8", "u8":
		return int64(bo.Uint64(a.data[8*i:]))
	case "i4":
		return int64(int32(bo.Uint32(a.data[4*i:])))
	case "u4":
		return int64(bo.Uint32(a.data[4*i:]))
	case "i2":
		return int64(int16(bo.Uint16(a.data[2*i:])))
	case "u2":
		return int64(bo.Uint16(a.data[2*i:]))
	case "i1":
		return int64(int8(a.data[i]))
	case "u1", "b1":
		return int64(a.data[i])
	}
	return int64(a.float(i))
}

// halfToFloat32 widens an IEEE 754 binary16 value.
func halfToFloat32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // inf or NaN
		return math.Float32frombits(sign | 0xff<<23 | frac<<13)
	case exp == 0 && frac == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal: normalise
		e := uint32(127 - 15 + 1)
		for frac&0x400 == 0 {
			frac <<= 1
			e--
		}
		return math.Float32frombits(sign | e<<23 | (frac&0x3ff)<<13)
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | frac<<13)
}

// pyCSR is a scipy.sparse.csr_matrix, rebuilt from its __dict__.
type pyCSR struct {
	rows, cols            int64
	data, indices, indptr *npArray
}

func (m *pyCSR) PyDictSet(key, value any) error {
	k, _ := key.(string)
	switch k {
	case "_shape":
		t, ok := value.(*types.Tuple)
		if !ok || t.Len() != 2 {
			return fmt.Errorf("csr_matrix _shape %v: want (rows, cols)", value)
		}
		r, ok1 := t.Get(0).(int)
		c, ok2 := t.Get(1).(int)
		if !ok1 || !ok2 || r < 0 || c < 0 {
			return fmt.Errorf("csr_matrix _shape %v: want non-negative integers", value)
		}
		m.rows, m.cols = int64(r), int64(c)
	case "data", "indices", "indptr":
		a, ok := value.(*npArray)
		if !ok {
			return fmt.Errorf("csr_matrix %s is a %T, want a NumPy array", k, value)
		}
		switch k {
		case "data":
			m.data = a
		case "indices":
			m.indices = a
		default:
			m.indptr = a
		}
	}
	return nil
}

// built reports whether the array received its state (shape, dtype,
// data); a pickle can REDUCE one and never BUILD it.
func (a *npArray) built() bool { return a != nil && a.dtype != nil }

// check verifies the CSR invariants a row reader relies on.
func (m *pyCSR) check() error {
	if !m.data.built() || !m.indices.built() || !m.indptr.built() {
		return errors.New("csr_matrix without data, indices or indptr")
	}
	if m.indptr.len() != m.rows+1 {
		return fmt.Errorf("csr_matrix indptr has %d entries for %d rows", m.indptr.len(), m.rows)
	}
	nnz := m.indices.len()
	if m.data.len() != nnz {
		return fmt.Errorf("csr_matrix has %d values and %d column indices", m.data.len(), nnz)
	}
	prev := int64(0)
	for r := int64(0); r <= m.rows; r++ {
		p := m.indptr.int(r)
		if p < prev || p > nnz || (r == 0 && p != 0) {
			return fmt.Errorf("csr_matrix indptr[%d] = %d is out of order or beyond %d values", r, p, nnz)
		}
		prev = p
	}
	if prev != nnz {
		return fmt.Errorf("csr_matrix indptr ends at %d, want %d", prev, nnz)
	}
	for i := range nnz {
		if c := m.indices.int(i); c < 0 || c >= m.cols {
			return fmt.Errorf("csr_matrix column index %d out of range [0, %d)", c, m.cols)
		}
	}
	return nil
}

// row writes row r into dst (len cols), zeroing it first.
func (m *pyCSR) row(r int64, dst []float32) {
	clear(dst)
	for i := m.indptr.int(r); i < m.indptr.int(r+1); i++ {
		dst[m.indices.int(i)] = float32(m.data.float(i))
	}
}

// pyDefaultDict is a defaultdict(list) keyed by node id: the Planetoid
// adjacency. Only integer keys are accepted.
type pyDefaultDict struct {
	items map[int64]any
	err   error // the first bad key, reported after loading
}

// Set is SETITEM(S) on the dict.
func (d *pyDefaultDict) Set(key, value any) {
	k, ok := key.(int)
	if !ok {
		if d.err == nil {
			d.err = fmt.Errorf("adjacency key %v is a %T, want an integer node id", key, key)
		}
		return
	}
	d.items[int64(k)] = value
}

// loadPickle decodes one pickle from r. gopickle trusts its input in
// places (a malformed stack can make it index out of range), so a panic
// while decoding is turned into an error: a bad file must not crash.
func loadPickle(r io.Reader) (v any, err error) {
	defer func() {
		if p := recover(); p != nil {
			v, err = nil, fmt.Errorf("malformed pickle: %v", p)
		}
	}()
	u := pickle.NewUnpickler(r)
	u.FindClass = findPickleClass
	v, err = u.Load()
	if err != nil {
		return nil, err
	}
	if d, ok := v.(*pyDefaultDict); ok && d.err != nil {
		return nil, d.err
	}
	return v, nil
}
