package dataset

import (
	"fmt"
	"math"
	"strings"
)

// HeaderMode says how a SNAP edge list's first line is read.
type HeaderMode int

const (
	// HeaderAuto reads the first line as an "N M" count header only when
	// the file bears it out (see snapFirstLine.decide), else as an edge.
	HeaderAuto HeaderMode = iota
	// HeaderYes skips the first line as a count header (--header).
	HeaderYes
	// HeaderNo reads the first line as an edge (--no-header).
	HeaderNo
)

// snapFirstLine holds an edge list's first line back while the rest is
// read, with what is needed to decide whether it was a count header
// ("N M": vertices and edges, as METIS files and many exported edge lists
// start) and, if so, to take back the two vertices it made up.
//
// Vertices are numbered by first appearance, so the first line's ids got
// the first numbers; if it was a header, those that appear again must move
// to where they first appear in the rest, and those that do not must go.
type snapFirstLine struct {
	a, b    int64  // the ids as written
	u, v    uint32 // the numbers they were given
	extra   bool   // more than two columns
	text    string
	restMin int64 // smallest and largest id on the other lines
	restMax int64
	// rest counts distinct vertices on the other lines in order of first
	// appearance there; posU and posV are where u and v first appeared
	// among them (-1: not on any other line).
	rest       int
	posU, posV int
}

func newSNAPFirstLine(a, b int64, u, v uint32, extra bool, line string) snapFirstLine {
	return snapFirstLine{a: a, b: b, u: u, v: v, extra: extra, text: strings.Join(strings.Fields(line), " "),
		restMin: math.MaxInt64, restMax: -1, posU: -1, posV: -1}
}

// see records vertex id (numbered n, newly numbered when isNew) on a line
// after the first.
func (f *snapFirstLine) see(id int64, n uint32, isNew bool) {
	f.restMin, f.restMax = min(f.restMin, id), max(f.restMax, id)
	switch {
	case isNew:
		f.rest++
	case n == f.u && f.posU < 0:
		f.posU = f.rest
		f.rest++
	case n == f.v && f.posV < 0 && f.u != f.v:
		f.posV = f.rest
		f.rest++
	}
}

// decide says whether the first line is a count header, and the note that
// tells the user which reading was taken. restLines counts the edge lines
// after the first.
//
// Auto-detection takes the line "N M" as a header only when M equals the
// number of remaining edge lines and N fits the vertex ids: the ids are
// exactly 0..N-1 or 1..N, or N is one past the largest id, or N and M are
// both beyond every id (as an edge it would join two vertices found
// nowhere else). A real first edge "3 5" survives unless the rest has
// exactly 5 lines and fits these counts; --no-header settles such a file.
// Where the counts match but the ids do not, the line stays an edge and
// the note says so, naming --header.
func (f *snapFirstLine) decide(mode HeaderMode, restLines int64) (bool, []string) {
	n, m := f.a, f.b
	switch mode {
	case HeaderYes:
		note := fmt.Sprintf("first line %q skipped as a count header (--header)", f.text)
		if m != restLines {
			note += fmt.Sprintf("; it says %d edges, the file has %d edge lines", m, restLines)
		}
		return true, []string{note}
	case HeaderNo:
		return false, []string{fmt.Sprintf("first line %q read as an edge (--no-header)", f.text)}
	}
	// A header's N counts every vertex, so it is at least the number of
	// distinct ids on the other lines; below that it is plainly an edge.
	if f.extra || m != restLines || restLines == 0 || n < int64(f.rest) {
		return false, nil
	}
	dense := n == int64(f.rest) && ((f.restMin == 0 && f.restMax == n-1) || (f.restMin == 1 && f.restMax == n))
	if dense || n == f.restMax+1 || (n > f.restMax && m > f.restMax) {
		return true, []string{fmt.Sprintf("first line %q read as a count header (%d vertices, %d edges, matching the file), not as an edge; --no-header reads it as an edge", f.text, n, m)}
	}
	return false, []string{fmt.Sprintf("first line %q read as an edge, though the file has %d more edge lines; if it is a count header, pass --header", f.text, m)}
}

// dropPhantoms renumbers the graph as if the first line had never been
// read: the first line's vertices move to where they first appear in the
// rest, or go when they appear nowhere else. It relabels el's edges and
// remap, and returns the new original-id list.
func (f *snapFirstLine) dropPhantoms(el *importEdges, remap map[int64]uint32, orig []int64) []int64 {
	nFirst := uint32(1)
	if f.u != f.v {
		nFirst = 2
	}
	perm := make([]int64, len(orig)) // old number -> new, -1 dropped
	next := nFirst
	for p := 0; p < f.rest; p++ {
		var old uint32
		switch p {
		case f.posU:
			old = f.u
		case f.posV:
			old = f.v
		default:
			old = next
			next++
		}
		perm[old] = int64(p)
	}
	if f.posU < 0 {
		perm[f.u] = -1
	}
	if f.u != f.v && f.posV < 0 {
		perm[f.v] = -1
	}
	newOrig := make([]int64, f.rest)
	for old, id := range orig {
		if p := perm[old]; p >= 0 {
			newOrig[p] = id
			remap[id] = uint32(p)
		} else {
			delete(remap, id)
		}
	}
	for i, k := range el.keys {
		u, v := uint32(perm[k>>32]), uint32(perm[k&0xffffffff])
		if el.undirected && u > v {
			u, v = v, u
		}
		el.keys[i] = uint64(u)<<32 | uint64(v)
	}
	return newOrig
}
