// Package layout is the file format of a feature layout: which bin (a GPU
// cache, a socket's CPU cache, an SSD) holds each vertex's feature row and
// at which row, as place writes it and the trainer's store reads it. It
// knows nothing of how a layout is made (package ddak), so the trainer
// reads layouts without the planner.
package layout

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/gnnplan/gnnplan/internal/npy"

	"github.com/gnnplan/gnnplan/internal/fsutil"
	"github.com/gnnplan/gnnplan/internal/inputerr"
	"github.com/gnnplan/gnnplan/internal/tier"
)

// Policy names how a layout was made.
type Policy string

// Placement policies.
const (
	PolicyDDAK Policy = "ddak"
	PolicyHash Policy = "hash"
)

// Priority is the formula DDAK ranked a tier's bins by (package ddak
// names them).
type Priority string

// Layout says where each vertex's feature row lives: bin Bin[v] (an index
// into the bins it was made for), row Row[v] within that bin. One byte plus
// four per vertex: 5 GB for a billion vertices.
type Layout struct {
	Policy   Policy   `json:"policy"`
	Priority Priority `json:"priority,omitempty"` // ddak
	Pool     int      `json:"pool,omitempty"`     // ddak
	Seed     uint64   `json:"seed,omitempty"`     // hash
	Bin      []uint8  `json:"-"`
	Row      []uint32 `json:"-"`
	// Stats has one entry per bin.
	Stats []BinStats `json:"stats"`
	// TotalAccesses is the sum of the hotness the layout was made with.
	TotalAccesses uint64 `json:"total_accesses"`
}

// BinStats is what a layout put in one bin.
type BinStats struct {
	Rows     int64  `json:"rows"`
	Accesses uint64 `json:"accesses"` // sum of the hotness of its rows
}

// Bin is one place feature rows can live: a GPU cache, a socket's CPU cache
// or an SSD (Moment section 3.3 models each as a knapsack bin).
type Bin struct {
	// ID is the storage node of the plan the bin stands for: a GPU, a
	// socket (its memory) or an NVMe SSD.
	ID   string    `json:"id"`
	Kind tier.Kind `json:"kind"`
	// Socket is the NUMA id of the socket the bin sits under, -1 when
	// unknown; Evaluate uses it for cross-socket traffic.
	Socket int `json:"socket"`
	// CapacityRows is how many feature rows the bin holds.
	CapacityRows int64 `json:"capacity_rows"`
	// TargetShare is the share (0-1) of the epoch's feature accesses the
	// flow model wants this bin to serve.
	TargetShare float64 `json:"target_share"`
}

// MaxBins is how many bins a layout can name: bin indices are one byte per
// vertex, which is what keeps a 1e9-vertex layout at 5 bytes per vertex.
const MaxBins = 255

// SchemaVersion versions layout.json.
const SchemaVersion = 1

// Layout file names (docs/architecture.md section 7): per-vertex bin index and row as
// NumPy arrays, and the bins with their stats as JSON.
const (
	BinFile  = "layout_bin.npy" // uint8 [vertices]: index into layout.json's bins
	RowFile  = "layout_row.npy" // uint32 [vertices]: row within the bin
	MetaFile = "layout.json"
)

// layoutMeta is layout.json.
type layoutMeta struct {
	SchemaVersion int       `json:"schema_version"`
	Policy        Policy    `json:"policy"`
	Priority      Priority  `json:"priority,omitempty"`
	Pool          int       `json:"pool,omitempty"`
	Seed          uint64    `json:"seed,omitempty"`
	Vertices      int64     `json:"vertices"`
	TotalAccesses uint64    `json:"total_accesses"`
	Bins          []binMeta `json:"bins"`
}

type binMeta struct {
	Bin
	BinStats
}

// Write writes l into dir as layout_bin.npy, layout_row.npy and
// layout.json. Each file is written to a temporary name and synced first;
// only when all three are complete are they renamed into place,
// layout.json last, so a failure leaves no new file behind and a reader
// that finds layout.json finds arrays of the same layout.
func Write(dir string, l *Layout, bins []Bin) error {
	if l == nil || len(l.Stats) != len(bins) || len(l.Bin) != len(l.Row) {
		return fmt.Errorf("write layout: layout and bins do not match")
	}
	meta := layoutMeta{SchemaVersion: SchemaVersion, Policy: l.Policy, Priority: l.Priority, Pool: l.Pool,
		Seed: l.Seed, Vertices: int64(len(l.Bin)), TotalAccesses: l.TotalAccesses}
	for i, b := range bins {
		meta.Bins = append(meta.Bins, binMeta{b, l.Stats[i]})
	}
	js, err := json.MarshalIndent(meta, "", "  ")
	if err != nil {
		return fmt.Errorf("write layout: %w", err)
	}
	var tmps []string
	cleanup := func() {
		for _, t := range tmps {
			os.Remove(t)
		}
	}
	steps := []struct {
		name  string
		write func(io.Writer) error
	}{
		{BinFile, func(w io.Writer) error { return writeNpy(w, "|u1", l.Bin) }},
		{RowFile, func(w io.Writer) error { return writeNpy(w, "<u4", l.Row) }},
		{MetaFile, func(w io.Writer) error { _, err := w.Write(append(js, '\n')); return err }},
	}
	for _, s := range steps {
		tmp, err := writeTemp(filepath.Join(dir, s.name), s.write)
		if err != nil {
			cleanup()
			return err
		}
		tmps = append(tmps, tmp)
	}
	for i, s := range steps {
		if err := os.Rename(tmps[i], filepath.Join(dir, s.name)); err != nil {
			cleanup()
			return fmt.Errorf("write layout: %w", err)
		}
	}
	return nil
}

// writeTemp writes a synced temporary file next to path and returns its
// name.
func writeTemp(path string, write func(io.Writer) error) (string, error) {
	f, err := fsutil.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	err = write(w)
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = f.Chmod(0o644)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return f.Name(), nil
}

// writeNpy writes a 1-d little-endian .npy (version 1.0) of uint8 or
// uint32. It encodes in chunks rather than through binary.Write, which
// would copy a billion-element array whole.
func writeNpy[T uint8 | uint32](w io.Writer, dtype string, data []T) error {
	if _, err := w.Write(npy.Encode(dtype, []int64{int64(len(data))}, 0)); err != nil {
		return err
	}
	switch d := any(data).(type) {
	case []uint8:
		_, err := w.Write(d)
		return err
	case []uint32:
		buf := make([]byte, 1<<20)
		for len(d) > 0 {
			n := min(len(d), len(buf)/4)
			for i, x := range d[:n] {
				binary.LittleEndian.PutUint32(buf[4*i:], x)
			}
			if _, err := w.Write(buf[:4*n]); err != nil {
				return err
			}
			d = d[n:]
		}
	}
	return nil
}

// readNpy reads a 1-d .npy of the given dtype ("|u1" or "<u4") with want
// elements.
func readNpy[T uint8 | uint32](path, dtype string, want int64) ([]T, error) {
	f, err := fsutil.OpenRegular(path)
	if err != nil {
		return nil, &inputerr.Error{Path: path, Msg: "cannot read layout", Err: err}
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<20)
	h, err := npy.Decode(br)
	if err != nil {
		return nil, &inputerr.Error{Path: path, Msg: "not a .npy file", Err: err}
	}
	typ := h.DType
	if dtype == "|u1" && (typ == "u1" || typ == "<u1") {
		typ = "|u1"
	}
	if typ != dtype || h.Fortran || len(h.Shape) != 1 || h.Shape[0] != want {
		return nil, &inputerr.Error{Path: path, Msg: fmt.Sprintf("dtype %s shape %v, want %s shape [%d]", h.DType, h.Shape, dtype, want)}
	}
	// Check the size before allocating, so a corrupt vertex count cannot
	// ask for more memory than the file could fill.
	var zero T
	elem := int64(binary.Size(zero))
	if fi, err := f.Stat(); err == nil && (want > fi.Size() || want*elem > fi.Size()) {
		return nil, &inputerr.Error{Path: path, Msg: fmt.Sprintf("truncated: %d bytes cannot hold the %d elements its header gives", fi.Size(), want)}
	}
	out := make([]T, want)
	truncated := func(err error) error {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return &inputerr.Error{Path: path, Msg: fmt.Sprintf("truncated: fewer than the %d elements its header gives", want)}
		}
		return fmt.Errorf("read %s: %w", path, err)
	}
	switch o := any(out).(type) {
	case []uint8:
		if _, err := io.ReadFull(br, o); err != nil {
			return nil, truncated(err)
		}
	case []uint32:
		buf := make([]byte, 1<<20)
		for i := 0; i < len(o); {
			n := min(len(o)-i, len(buf)/4)
			if _, err := io.ReadFull(br, buf[:4*n]); err != nil {
				return nil, truncated(err)
			}
			for j := range n {
				o[i+j] = binary.LittleEndian.Uint32(buf[4*j:])
			}
			i += n
		}
	}
	return out, nil
}

// Read reads a layout written by Write and checks that it is
// whole: every bin index names a bin and every row lies within its bin.
func Read(dir string) (*Layout, []Bin, error) {
	path := filepath.Join(dir, MetaFile)
	data, err := fsutil.ReadRegularFile(path)
	if err != nil {
		return nil, nil, &inputerr.Error{Path: path, Msg: "cannot read layout", Err: err}
	}
	var meta layoutMeta
	if err := json.Unmarshal(data, &meta); err != nil {
		return nil, nil, &inputerr.Error{Path: path, Msg: "malformed layout", Err: err}
	}
	if meta.SchemaVersion != SchemaVersion {
		return nil, nil, &inputerr.Error{Path: path, Field: "schema_version", Msg: fmt.Sprintf("%d, want %d (a layout written by `gnnplan place`)", meta.SchemaVersion, SchemaVersion)}
	}
	if meta.Vertices < 0 || len(meta.Bins) == 0 || len(meta.Bins) > MaxBins {
		return nil, nil, &inputerr.Error{Path: path, Msg: fmt.Sprintf("%d vertices in %d bins (want at least 1 bin, at most %d)", meta.Vertices, len(meta.Bins), MaxBins)}
	}
	l := &Layout{Policy: meta.Policy, Priority: meta.Priority, Pool: meta.Pool, Seed: meta.Seed, TotalAccesses: meta.TotalAccesses}
	bins := make([]Bin, len(meta.Bins))
	for i, b := range meta.Bins {
		bins[i] = b.Bin
		l.Stats = append(l.Stats, b.BinStats)
	}
	if l.Bin, err = readNpy[uint8](filepath.Join(dir, BinFile), "|u1", meta.Vertices); err != nil {
		return nil, nil, err
	}
	if l.Row, err = readNpy[uint32](filepath.Join(dir, RowFile), "<u4", meta.Vertices); err != nil {
		return nil, nil, err
	}
	count := make([]int64, len(bins))
	for v, b := range l.Bin {
		if int(b) >= len(bins) {
			return nil, nil, &inputerr.Error{Path: filepath.Join(dir, BinFile), Msg: fmt.Sprintf("vertex %d: bin %d, the layout has %d bins", v, b, len(bins))}
		}
		if int64(l.Row[v]) >= l.Stats[b].Rows {
			return nil, nil, &inputerr.Error{Path: filepath.Join(dir, RowFile), Msg: fmt.Sprintf("vertex %d: row %d of bin %s, which holds %d rows", v, l.Row[v], bins[b].ID, l.Stats[b].Rows)}
		}
		count[b]++
	}
	// A bin's row count is what its files and caches are sized by: it
	// must be the number of vertices the layout puts in it.
	for i, n := range count {
		if l.Stats[i].Rows != n {
			return nil, nil, &inputerr.Error{Path: path, Field: fmt.Sprintf("bins[%d].rows", i), Msg: fmt.Sprintf("%d, but %s puts %d vertices in bin %s", l.Stats[i].Rows, BinFile, n, bins[i].ID)}
		}
	}
	return l, bins, nil
}

// PolicyOf is the policy of the layout in dir (layout.json), and
// false where there is none or it cannot be read: what a caller about to
// replace it tells the user.
func PolicyOf(dir string) (Policy, bool) {
	data, err := os.ReadFile(filepath.Join(dir, MetaFile))
	if err != nil {
		return "", false
	}
	var m struct {
		Policy Policy `json:"policy"`
	}
	if json.Unmarshal(data, &m) != nil || m.Policy == "" {
		return "", false
	}
	return m.Policy, true
}
