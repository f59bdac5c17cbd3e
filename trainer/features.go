package trainer

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"unsafe"

	"github.com/gnnplan/gnnplan/internal/fsutil"
	"github.com/gnnplan/gnnplan/internal/inputerr"

	"github.com/gnnplan/gnnplan/trainer/dataset"
	"github.com/gnnplan/gnnplan/trainer/internal/meminfo"
	"github.com/gnnplan/gnnplan/trainer/internal/rownorm"
	"github.com/gnnplan/gnnplan/trainer/internal/spans"
)

// LoadFeatures reads a dataset's whole feature matrix (float32, num_nodes
// x feature_dim, row-major) into memory, checking dtype, shape and size
// against its header and meta.json.
func LoadFeatures(dir string, m dataset.Meta) ([]float32, error) {
	path := filepath.Join(dir, dataset.FeaturesFile)
	if m.FeatureDim < 1 {
		return nil, &inputerr.Error{Path: filepath.Join(dir, dataset.MetaFile), Field: "feature_dim", Msg: "0: the dataset has no features to train on"}
	}
	f, err := fsutil.OpenRegular(path)
	if err != nil {
		return nil, &inputerr.Error{Path: path, Msg: "cannot read features", Err: err}
	}
	defer f.Close()
	h, err := dataset.ReadArrayHeader(f)
	if err != nil {
		return nil, &inputerr.Error{Path: path, Msg: "not a .npy array", Err: err}
	}
	if h.DType != "<f4" || h.Fortran || len(h.Shape) != 2 || int64(h.Shape[0]) != m.NumNodes || h.Shape[1] != m.FeatureDim {
		return nil, &inputerr.Error{Path: path, Msg: fmt.Sprintf("dtype %s shape %v (want <f4 [%d, %d], row-major, from meta.json)", h.DType, h.Shape, m.NumNodes, m.FeatureDim)}
	}
	n := m.NumNodes * int64(m.FeatureDim)
	if err := h.CheckDataSize(f, path, n, 4); err != nil {
		return nil, err
	}
	out := make([]float32, n)
	buf := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(out))), 4*n)
	if _, err := io.ReadFull(io.NewSectionReader(f, h.DataOffset, 4*n), buf); err != nil {
		return nil, &inputerr.Error{Path: path, Msg: "truncated or unreadable feature data", Err: err}
	}
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 { // big-endian host: the file is little-endian
		for i, v := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(unsafe.Slice((*byte)(unsafe.Pointer(&v)), 4)))
		}
	}
	for i, v := range out {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return nil, &inputerr.Error{Path: path, Msg: fmt.Sprintf("row %d column %d is %v (features must be finite)", int64(i)/int64(m.FeatureDim), int64(i)%int64(m.FeatureDim), v)}
		}
	}
	return out, nil
}

// CheckFits refuses, as bad input naming dir, a dataset whose features
// cannot be held in this machine's available memory (MemAvailable in
// /proc/meminfo, with a tenth kept free), before reading them: the
// in-memory trainer would be killed for memory halfway through instead.
// Where /proc/meminfo cannot be read it does not check.
func CheckFits(dir string, m dataset.Meta) error {
	need := uint64(m.NumNodes) * uint64(m.FeatureDim) * 4
	avail, ok := memAvailable()
	if !ok || need <= avail-avail/10 {
		return nil
	}
	gib := func(b uint64) float64 { return float64(b) / (1 << 30) }
	return &inputerr.Error{Path: filepath.Join(dir, dataset.FeaturesFile),
		Msg: fmt.Sprintf("training in memory needs the %.1f GiB of features in RAM, and this machine has %.1f GiB available", gib(need), gib(avail))}
}

// memAvailable reads MemAvailable from /proc/meminfo, in bytes.
func memAvailable() (uint64, bool) { return meminfo.Available() }

// RowNormalize scales every row of x (dim columns) to unit L1 norm: for
// the non-negative bag-of-words features of the citation graphs this is
// the row-sum normalisation of Kipf and Welling's and Velickovic et al.'s
// experiments, and for signed features it never divides by a sum near 0.
// Rows of zeros stay as they are. A store opened with RowNormalize
// serves its rows scaled the same way, bit for bit.
func RowNormalize(x []float32, dim int) { rownorm.Rows(x, dim) }

// minNormalizeRows is the fewest rows rowNormalizeOn gives a goroutine.
const minNormalizeRows = 4096

// rowNormalizeOn is RowNormalize on up to threads goroutines, each a
// range of whole rows, so the bits are RowNormalize's.
func rowNormalizeOn(threads int, x []float32, dim int) {
	d := max(dim, 1)
	_ = spans.Run(spans.Cut(len(x)/d, threads, minNormalizeRows), func(_ int, sp spans.Span) error {
		RowNormalize(x[sp.Lo*d:sp.Hi*d], dim)
		return nil
	})
}

// MemAvailable is this machine's available memory (MemAvailable in
// /proc/meminfo) in bytes; false where it cannot be read.
func MemAvailable() (uint64, bool) { return memAvailable() }
