package dataset

import (
	"fmt"
	"path/filepath"
	"runtime"

	"github.com/gnnplan/gnnplan/internal/rng"

	"github.com/gnnplan/gnnplan/internal/inputerr"
)

// checkSymmetric refuses a graph marked undirected whose CSR does not
// store every edge both ways, with the same multiplicity.
//
// A full check by lookup costs a search per entry (minutes at a billion
// entries), so it compares fingerprints instead: the wrapping sum over
// entries (u, v) of h(u, v) - h(v, u), for a 64-bit mixing hash h, is zero
// when the multiset of entries equals its transpose. When it is not, the
// two multisets differ, and one missing reverse edge is looked for to
// name in the error. An asymmetric graph passes only if the sums collide
// by chance, about 2^-64. One streaming pass over the arrays, in
// parallel, with no memory beyond the mapping.
func checkSymmetric(g *Graph) error {
	n := g.Meta.NumNodes
	workers := runtime.GOMAXPROCS(0)
	sums := make([]uint64, workers)
	parallelChunksN(n, workers, func(w int, lo, hi int64) {
		var s uint64
		for v := lo; v < hi; v++ {
			for _, u := range g.Indices[g.Indptr[v]:g.Indptr[v+1]] {
				s += edgeHash(uint32(v), uint32(u)) - edgeHash(uint32(u), uint32(v))
			}
		}
		sums[w] = s
	})
	var total uint64
	for _, s := range sums {
		total += s
	}
	if total == 0 {
		return nil
	}
	path := filepath.Join(g.Dir, IndicesFile)
	if u, v, ok := missingReverse(g); ok {
		return &inputerr.Error{Path: path, Field: "undirected", Msg: fmt.Sprintf("meta.json says every edge is stored both ways, but edge %d -> %d has no %d -> %d (set undirected to false, or add the reverse edges)", u, v, v, u)}
	}
	return &inputerr.Error{Path: path, Field: "undirected", Msg: "meta.json says every edge is stored both ways, but some edge is stored more often one way than the other (set undirected to false, or deduplicate)"}
}

// edgeHash mixes an ordered vertex pair into 64 bits (SplitMix64's
// finalizer over the packed pair and a fixed odd key).
func edgeHash(u, v uint32) uint64 { return rng.Mix((uint64(u)<<32 | uint64(v)) ^ rng.Golden) }

// missingReverse finds an entry (u, v) without an entry (v, u), scanning
// in vertex order; it runs only once the fingerprints disagree, and gives
// up (ok false) after about a billion comparisons, as hubs make the scan
// quadratic.
func missingReverse(g *Graph) (u, v int64, ok bool) {
	budget := int64(1e9)
	for u = 0; u < g.Meta.NumNodes; u++ {
		for _, w := range g.Neighbors(u) {
			found := false
			back := g.Neighbors(int64(w))
			if budget -= int64(len(back)); budget < 0 {
				return 0, 0, false
			}
			for _, x := range back {
				if int64(x) == u {
					found = true
					break
				}
			}
			if !found {
				return u, int64(w), true
			}
		}
	}
	return 0, 0, false
}
