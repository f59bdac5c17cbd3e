package nn

import (
	"math"

	"github.com/gnnplan/gnnplan/kernels"
)

// Block is one hop of a sampled mini-batch on a backend, in the forms the
// layers read: the sampled neighbours (GraphSAGE), and the neighbours
// plus a self-loop per destination with GCN's edge weights (GCN, GAT).
type Block struct {
	NumDst, NumSrc int
	// Nbr holds the sampled edges as the sampler drew them.
	Nbr *kernels.CSR
	// Self holds a self-loop first for every destination, then its
	// sampled neighbours other than itself (DGL's add_self_loop after
	// remove_self_loop); nil unless asked for.
	Self *kernels.CSR
	// GCNWeight is NumEdges(Self) x 1: GCN's normalisation of each edge of
	// Self; nil unless asked for.
	GCNWeight *kernels.Mat
	// DstRows is set on an input block (NewInputBlock): the edges then
	// index the feature matrix's rows, NumSrc is its row count, and the
	// destinations' own rows are DstRows.
	DstRows *kernels.Index
}

// BlockForms says which forms of a block a model reads.
type BlockForms struct{ Nbr, Self, GCNWeight bool }

// Forms returns the block forms a model of kind needs.
func Forms(kind Kind) BlockForms {
	switch kind {
	case GCN:
		return BlockForms{Self: true, GCNWeight: true}
	case GAT:
		return BlockForms{Self: true}
	}
	return BlockForms{Nbr: true}
}

// NewBlock builds a block on b from the sampler's CSR over local indices
// (offsets has one entry per destination plus one; srcIdx indexes src),
// src the sources' vertex ids (the destinations are src[:len(offsets)-1]),
// and deg each vertex's degree in the whole graph not counting
// self-loops (read for GCN's weights only).
func NewBlock(b kernels.Backend, offsets, srcIdx, src, deg []int32, forms BlockForms) *Block {
	return newBlock(b, offsets, srcIdx, src, deg, forms, 0)
}

// NewInputBlock is NewBlock for the outermost block of a model that reads
// the feature matrix in place (Model.ReadsFeaturesInPlace): its edges
// index the rows of a numNodes-row feature matrix by vertex id, and
// DstRows holds the destinations' vertex ids, so the first layer
// aggregates straight from the features without a gathered copy of every
// source row (the fused gather of the thesis, chapter 5).
func NewInputBlock(b kernels.Backend, offsets, srcIdx, src, deg []int32, numNodes int, forms BlockForms) *Block {
	return newBlock(b, offsets, srcIdx, src, deg, forms, numNodes)
}

func newBlock(b kernels.Backend, offsets, srcIdx, src, deg []int32, forms BlockForms, numNodes int) *Block {
	nd := len(offsets) - 1
	blk := &Block{NumDst: nd, NumSrc: len(src)}
	global := numNodes > 0
	rows := len(src)
	// row maps a local source index to the row of x the layer reads.
	row := func(u int32) int32 { return u }
	if global {
		rows = numNodes
		row = func(u int32) int32 { return src[u] }
		blk.NumSrc = numNodes
		blk.DstRows = b.NewIndex(src[:nd:nd])
	}
	if forms.Nbr {
		idx := srcIdx
		if global {
			idx = make([]int32, len(srcIdx))
			for j, u := range srcIdx {
				idx[j] = src[u]
			}
		}
		blk.Nbr = b.NewCSR(offsets, idx, rows)
	}
	if !forms.Self && !forms.GCNWeight {
		return blk
	}
	soff := make([]int32, nd+1)
	sidx := make([]int32, 0, len(srcIdx)+nd)
	var w []float32
	if forms.GCNWeight {
		w = make([]float32, 0, len(srcIdx)+nd)
	}
	for i := range nd {
		sidx = append(sidx, row(int32(i)))
		start := len(sidx)
		for _, u := range srcIdx[offsets[i]:offsets[i+1]] {
			if int(u) != i {
				sidx = append(sidx, row(u))
			}
		}
		soff[i+1] = int32(len(sidx))
		if w == nil {
			continue
		}
		// 1/sqrt((d_i+1)(d_u+1)); a destination that kept k of its d
		// neighbours scales theirs by d/k.
		di := float64(deg[src[i]])
		w = append(w, float32(1/(di+1)))
		k := len(sidx) - start
		scale := 1.0
		if k > 0 && float64(k) < di {
			scale = di / float64(k)
		}
		for _, r := range sidx[start:] {
			du := deg[r]
			if !global {
				du = deg[src[r]]
			}
			w = append(w, float32(scale/math.Sqrt((di+1)*(float64(du)+1))))
		}
	}
	blk.Self = b.NewCSR(soff, sidx, rows)
	if w != nil {
		blk.GCNWeight = b.NewMat(0, 0)
		b.Upload(blk.GCNWeight, len(w), 1, w)
	}
	return blk
}

// Degrees returns each vertex's number of CSR neighbours other than
// itself, the degree GCN's normalisation uses.
func Degrees(indptr []int64, indices []int32) []int32 {
	n := len(indptr) - 1
	deg := make([]int32, n)
	for v := range n {
		d := int32(0)
		for _, u := range indices[indptr[v]:indptr[v+1]] {
			if int(u) != v {
				d++
			}
		}
		deg[v] = d
	}
	return deg
}
