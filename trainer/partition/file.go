package partition

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"unsafe"

	"github.com/gnnplan/gnnplan/internal/fsutil"
	"github.com/gnnplan/gnnplan/trainer/dataset"
)

// File is where Save keeps a partition in a dataset directory: the parts
// (a 1-d int32 .npy) and, beside it, what they were cut from and how good
// they are. Cutting a billion-edge graph takes minutes; a run that asks
// for the same partition reads it instead.
func File(dir string, parts int, seed uint64) string {
	return filepath.Join(dir, fmt.Sprintf("partition-k%d-s%d.npy", parts, seed))
}

// stamp identifies the graph a partition was cut from.
type stamp struct {
	Vertices   int64   `json:"vertices"`
	Entries    int64   `json:"csr_entries"`
	Train      int     `json:"train"`
	Parts      int     `json:"parts"`
	Sizes      []int   `json:"sizes"`
	TrainSizes []int   `json:"train_sizes"`
	EdgeCut    float64 `json:"edge_cut"`
	RandomCut  float64 `json:"random_edge_cut"`
	Imbalance  float64 `json:"label_imbalance"`
}

// Save writes r as File(dir, r.Parts, seed), with its stamp for g.
func Save(dir string, g *dataset.Graph, r *Result, seed uint64) error {
	path := File(dir, r.Parts, seed)
	aw, err := dataset.CreateArray(path, "<i4", int64(len(r.Part)))
	if err != nil {
		return err
	}
	if err := aw.Write(r.Part); err != nil {
		aw.Abort()
		return err
	}
	if err := aw.Close(); err != nil {
		return err
	}
	st := stamp{Vertices: int64(len(r.Part)), Entries: int64(len(g.Indices)), Train: len(g.Train), Parts: r.Parts, Sizes: r.Sizes,
		TrainSizes: r.TrainSizes, EdgeCut: r.EdgeCut, RandomCut: r.RandomEdgeCut, Imbalance: r.LabelImbalance}
	data, err := json.Marshal(st)
	if err != nil {
		return err
	}
	return fsutil.WriteFileAtomic(path+".json", data)
}

// Load reads the partition Save wrote for g, parts and seed; ok is false
// when there is none, or one of another graph (then it is cut again).
func Load(dir string, g *dataset.Graph, parts int, seed uint64) (r *Result, ok bool, err error) {
	path := File(dir, parts, seed)
	data, err := os.ReadFile(path + ".json")
	if err != nil {
		return nil, false, nil
	}
	var st stamp
	if json.Unmarshal(data, &st) != nil || st.Vertices != int64(len(g.Indptr)-1) || st.Entries != int64(len(g.Indices)) ||
		st.Train != len(g.Train) || st.Parts != parts {
		return nil, false, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, false, nil
	}
	defer f.Close()
	h, err := dataset.ReadArrayHeader(f)
	if err != nil || h.DType != "<i4" || len(h.Shape) != 1 || int64(h.Shape[0]) != st.Vertices || h.CheckDataSize(f, path, st.Vertices, 4) != nil {
		return nil, false, nil
	}
	part := make([]int32, st.Vertices)
	buf := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(part))), 4*len(part))
	if _, err := io.ReadFull(io.NewSectionReader(f, h.DataOffset, int64(len(buf))), buf); err != nil {
		return nil, false, fmt.Errorf("read %s: %w", path, err)
	}
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		return nil, false, nil
	}
	for _, p := range part {
		if p < 0 || int(p) >= parts {
			return nil, false, nil
		}
	}
	return &Result{Part: part, Parts: parts, Sizes: st.Sizes, TrainSizes: st.TrainSizes, EdgeCut: st.EdgeCut, RandomEdgeCut: st.RandomCut,
		LabelImbalance: st.Imbalance}, true, nil
}
