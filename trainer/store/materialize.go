package store

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/gnnplan/gnnplan/ddak"
	"github.com/gnnplan/gnnplan/maxflow"
	"github.com/gnnplan/gnnplan/topology"
	"github.com/gnnplan/gnnplan/trainer/dataset"
)

// chunkBytes is how much of features.npy Materialize and Open hold at a
// time: large enough for sequential reads at disk speed, small against
// any dataset.
const chunkBytes = 8 << 20

// Materialize writes the SSD bins of the layout in layoutDir (normally the
// dataset directory) as files, and the manifest store.json in datasetDir.
//
// SSD bin k of the layout (k counting SSD bins in bin order) goes to
// ssdDirs[k mod len(ssdDirs)]: one directory per SSD, shared round-robin
// when there are fewer directories than SSD bins (directories beyond the
// number of SSD bins stay unused). Its file is
// <dataset name>-<bin id>.rows, holding the bin's rows in row order, row r
// at r x stride, where stride is the row's bytes rounded up to
// RowAlignBytes; the file is zero-padded to a multiple of FileAlignBytes so
// that it can be read with O_DIRECT. Cache bins get no file: Open fills
// them from features.npy.
//
// Atomic and restartable: each file is written as path.tmp, synced and
// renamed into place, and its CRC-32C recorded in a journal
// (store.partial.json) at once; the manifest is written last, and a stale
// one is removed before any file is rewritten, so a manifest always
// describes whole files. A rerun keeps a bin file whose size and checksum
// match a record of the same layout and features (from store.json or the
// journal) and rewrites the rest.
//
// Memory: the layout (5 bytes per vertex), a bit per vertex to check it,
// and one chunk of features; rows reach the files through pwrite, so the
// features are read once, sequentially, whatever the number of bins.
// progress gets one line per phase and per bin file (nil: none).
func Materialize(ctx context.Context, datasetDir, layoutDir string, ssdDirs []string, progress io.Writer) (*Manifest, error) {
	if progress == nil {
		progress = io.Discard
	}
	meta, err := dataset.ReadMeta(datasetDir)
	if err != nil {
		return nil, err
	}
	if meta.FeatureDim == 0 {
		return nil, &topology.InputError{Path: datasetDir, Field: "--dataset", Msg: "the dataset has no features to materialize"}
	}
	l, bins, err := ddak.ReadLayout(layoutDir)
	if err != nil {
		return nil, err
	}
	if int64(len(l.Bin)) != meta.NumNodes {
		return nil, &topology.InputError{Path: filepath.Join(layoutDir, ddak.LayoutMetaFile),
			Msg: fmt.Sprintf("a layout of %d vertices, the dataset has %d (place this dataset again)", len(l.Bin), meta.NumNodes)}
	}
	if err := checkRows(l, bins, layoutDir); err != nil {
		return nil, err
	}
	src, err := openFeatures(datasetDir, meta)
	if err != nil {
		return nil, err
	}
	defer src.f.Close()
	m, err := newManifest(datasetDir, layoutDir, meta, l, bins, src, ssdDirs)
	if err != nil {
		return nil, err
	}

	// Keep the files a previous run finished; everything else is written.
	kept, err := keptFiles(ctx, datasetDir, m, progress)
	if err != nil {
		return nil, err
	}
	journal := *m
	journal.Bins = nil
	for i, b := range m.Bins {
		if b.Kind == maxflow.StorageSSD && kept[i] {
			journal.Bins = append(journal.Bins, b)
		}
	}
	journalPath := filepath.Join(datasetDir, journalFile)
	manifestPath := filepath.Join(datasetDir, ManifestFile)
	var todo []int
	for i, b := range m.Bins {
		if b.Kind == maxflow.StorageSSD && !kept[i] {
			todo = append(todo, i)
		}
	}
	if len(todo) > 0 {
		// The journal carries the kept records across a crash; the old
		// manifest goes before any file it describes is replaced.
		if err := writeManifestFile(journalPath, &journal); err != nil {
			return nil, err
		}
		if err := os.Remove(manifestPath); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("materialize: remove stale %s: %w", manifestPath, err)
		}
		// Each finished file is journaled at once, so that a crash while
		// the next is finished keeps it.
		err := writeBins(ctx, m, l, src, todo, progress, func(b *BinFile) error {
			journal.Bins = append(journal.Bins, *b)
			return writeManifestFile(journalPath, &journal)
		})
		if err != nil {
			return nil, err
		}
	}
	if err := writeManifestFile(manifestPath, m); err != nil {
		return nil, err
	}
	if err := os.Remove(journalPath); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("materialize: %w", err)
	}
	fmt.Fprintf(progress, "materialize: wrote %s (%d bins, %d SSD bin files, %d rewritten)\n", manifestPath, len(m.Bins), countSSD(m), len(todo))
	return m, nil
}

// newManifest describes the store Materialize will write, checksums aside.
func newManifest(datasetDir, layoutDir string, meta dataset.Meta, l *ddak.Layout, bins []ddak.Bin, src *features, ssdDirs []string) (*Manifest, error) {
	ld, err := relPath(datasetDir, layoutDir)
	if err != nil {
		return nil, fmt.Errorf("materialize: %w", err)
	}
	name := meta.Name
	if name == "" {
		abs, _ := filepath.Abs(datasetDir)
		name = filepath.Base(abs)
	}
	rowBytes := int64(meta.FeatureDim) * 4
	stride := roundUp(rowBytes, RowAlignBytes)
	m := &Manifest{SchemaVersion: ManifestSchemaVersion, Dataset: meta.Name, NumNodes: meta.NumNodes, FeatureDim: meta.FeatureDim,
		RowBytes: rowBytes, LayoutDir: ld, LayoutCRC32C: layoutCRC(l), FeaturesBytes: src.size, FeaturesMtimeUnixNs: src.mtime}
	dirs := make([]string, len(ssdDirs))
	for i, d := range ssdDirs {
		st, err := os.Stat(d)
		if err != nil || !st.IsDir() {
			return nil, &topology.InputError{Path: d, Field: "--ssd-dir", Msg: "not a directory", Err: err}
		}
		if dirs[i], err = filepath.Abs(d); err != nil {
			return nil, fmt.Errorf("materialize: %w", err)
		}
	}
	paths := map[string]string{}
	k := 0
	for i, b := range bins {
		bf := BinFile{ID: b.ID, Kind: b.Kind, Socket: b.Socket, Rows: l.Stats[i].Rows, RowBytes: rowBytes}
		if b.Kind == maxflow.StorageSSD {
			if len(dirs) == 0 {
				return nil, &topology.InputError{Field: "--ssd-dir", Msg: "the layout has SSD bins: give at least one directory for their files"}
			}
			bf.Path = filepath.Join(dirs[k%len(dirs)], fileSafe(name)+"-"+fileSafe(b.ID)+".rows")
			bf.StrideBytes = stride
			bf.FileBytes = roundUp(bf.Rows*stride, FileAlignBytes)
			k++
			if other, dup := paths[bf.Path]; dup {
				return nil, &topology.InputError{Path: filepath.Join(layoutDir, ddak.LayoutMetaFile),
					Msg: fmt.Sprintf("bins %q and %q would share the file %s (bin ids must differ)", other, b.ID, bf.Path)}
			}
			paths[bf.Path] = b.ID
		}
		m.Bins = append(m.Bins, bf)
	}
	return m, nil
}

// checkRows checks that the layout numbers each bin's rows 0..n-1 with
// one vertex each, which ReadLayout does not: a row given twice would
// leave another row of the bin file unwritten.
func checkRows(l *ddak.Layout, bins []ddak.Bin, layoutDir string) error {
	seen := make([][]uint64, len(bins))
	for i := range bins {
		seen[i] = make([]uint64, (l.Stats[i].Rows+63)/64)
	}
	for v, b := range l.Bin {
		r := l.Row[v]
		w, bit := r/64, uint64(1)<<(r%64)
		if seen[b][w]&bit != 0 {
			return &topology.InputError{Path: filepath.Join(layoutDir, ddak.LayoutRowFile),
				Msg: fmt.Sprintf("vertex %d: row %d of bin %s is already taken by another vertex", v, r, bins[b].ID)}
		}
		seen[b][w] |= bit
	}
	return nil
}

// features is features.npy opened for streaming.
type features struct {
	f      *os.File
	path   string
	offset int64 // where row 0 starts
	size   int64
	mtime  int64
	rows   int64
	rowB   int64
}

// openFeatures checks dir/features.npy against the dataset's meta (by
// dataset.OpenFeatures) and opens it for reading in large chunks, which
// FeatureReader, made for single rows, does not do.
func openFeatures(dir string, meta dataset.Meta) (*features, error) {
	fr, err := dataset.OpenFeatures(dir, meta)
	if err != nil {
		return nil, err
	}
	fr.Close()
	path := filepath.Join(dir, dataset.FeaturesFile)
	f, err := os.Open(path)
	if err != nil {
		return nil, &topology.InputError{Path: path, Msg: "cannot read features", Err: err}
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("stat %s: %w", path, err)
	}
	rowB := int64(meta.FeatureDim) * 4
	// The data is the file's tail, as FeatureReader finds it.
	return &features{f: f, path: path, offset: st.Size() - meta.NumNodes*rowB, size: st.Size(), mtime: st.ModTime().UnixNano(),
		rows: meta.NumNodes, rowB: rowB}, nil
}

// scan calls fn with consecutive chunks of rows in vertex order: first is
// the chunk's first vertex, data its rows back to back.
func (s *features) scan(ctx context.Context, fn func(first int64, data []byte) error) error {
	per := max(1, chunkBytes/s.rowB)
	buf := make([]byte, per*s.rowB)
	for v := int64(0); v < s.rows; v += per {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := min(per, s.rows-v)
		data := buf[:n*s.rowB]
		if _, err := s.f.ReadAt(data, s.offset+v*s.rowB); err != nil {
			return fmt.Errorf("read %s: rows %d-%d: %w", s.path, v, v+n-1, err)
		}
		if err := fn(v, data); err != nil {
			return err
		}
	}
	// The rows are now held where they belong; keeping the file in the
	// page cache would only crowd out what training needs.
	unix.Fadvise(int(s.f.Fd()), 0, 0, unix.FADV_DONTNEED)
	return nil
}

// keptFiles returns, per bin, whether its file from a previous run can
// stay: a record of the same layout and features with the same shape, and
// a file of that size and checksum.
func keptFiles(ctx context.Context, datasetDir string, m *Manifest, progress io.Writer) ([]bool, error) {
	prev := map[string]BinFile{}
	for _, name := range []string{ManifestFile, journalFile} {
		old, err := readManifestFile(filepath.Join(datasetDir, name))
		if err != nil || !old.sameSource(m) {
			continue // nothing to keep from it
		}
		for _, b := range old.Bins {
			if b.Kind == maxflow.StorageSSD {
				prev[b.Path] = b
			}
		}
	}
	kept := make([]bool, len(m.Bins))
	for i := range m.Bins {
		b := &m.Bins[i]
		old, ok := prev[b.Path]
		if b.Kind != maxflow.StorageSSD || !ok || !old.sameFile(*b) {
			continue
		}
		c, err := fileCRC(ctx, b.Path, b.FileBytes)
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("materialize: %w", ctx.Err())
			}
			continue // missing, resized or unreadable: write it again
		}
		if c == old.CRC32C {
			b.CRC32C = c
			kept[i] = true
			fmt.Fprintf(progress, "materialize: bin %s: %s is up to date\n", b.ID, b.Path)
		}
	}
	return kept, nil
}

// binWriter is one bin file being written.
type binWriter struct {
	bin *BinFile
	tmp string
	f   *os.File
}

// writeBins writes the bins todo (indices into m.Bins) in one pass over the
// features, then finishes each file in bin order, filling in its CRC and
// calling done. On any error or cancel every temporary file is removed.
func writeBins(ctx context.Context, m *Manifest, l *ddak.Layout, src *features, todo []int, progress io.Writer, done func(*BinFile) error) (err error) {
	ws := make([]*binWriter, len(m.Bins))
	var open []*binWriter
	defer func() {
		if err != nil {
			for _, w := range open {
				if w.f != nil {
					w.f.Close()
				}
				os.Remove(w.tmp)
			}
		}
	}()
	for _, i := range todo {
		b := &m.Bins[i]
		w := &binWriter{bin: b, tmp: b.Path + ".tmp"}
		// O_TRUNC: a .tmp left by a killed run holds rows of unknown age.
		if w.f, err = os.OpenFile(w.tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644); err != nil {
			return fmt.Errorf("materialize: bin %s: %w", b.ID, err)
		}
		ws[i] = w
		open = append(open, w)
	}
	fmt.Fprintf(progress, "materialize: writing %d SSD bin files from %s (%d rows of %d bytes)\n", len(todo), src.path, src.rows, src.rowB)
	err = src.scan(ctx, func(first int64, data []byte) error {
		rb := src.rowB
		for j := int64(0); j*rb < int64(len(data)); j++ {
			v := first + j
			w := ws[l.Bin[v]]
			if w == nil {
				continue
			}
			if _, err := w.f.WriteAt(data[j*rb:(j+1)*rb], int64(l.Row[v])*w.bin.StrideBytes); err != nil {
				return fmt.Errorf("materialize: write %s: %w", w.tmp, err)
			}
		}
		return nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("materialize: %w", ctx.Err())
		}
		return err
	}
	for _, w := range open {
		if err = ctx.Err(); err != nil {
			return fmt.Errorf("materialize: %w", err)
		}
		if err = w.finish(ctx); err != nil {
			return err
		}
		if err = done(w.bin); err != nil {
			return err
		}
		fmt.Fprintf(progress, "materialize: bin %s: wrote %s (%d rows, %.1f MiB)\n", w.bin.ID, w.bin.Path, w.bin.Rows, float64(w.bin.FileBytes)/(1<<20))
	}
	return nil
}

// finish pads, syncs and checksums the temporary file and renames it into
// place. The checksum is read back from the file after the sync, so it
// covers what the disk was given, padding and unwritten holes included.
func (w *binWriter) finish(ctx context.Context) error {
	b := w.bin
	fail := func(err error) error {
		return fmt.Errorf("materialize: bin %s: %s: %w", b.ID, w.tmp, err)
	}
	if err := w.f.Truncate(b.FileBytes); err != nil {
		return fail(err)
	}
	if err := w.f.Sync(); err != nil {
		return fail(err)
	}
	c, err := readCRC(ctx, w.f, b.FileBytes)
	if err != nil {
		return fail(err)
	}
	unix.Fadvise(int(w.f.Fd()), 0, 0, unix.FADV_DONTNEED)
	err = w.f.Close()
	w.f = nil
	if err != nil {
		return fail(err)
	}
	if err := os.Rename(w.tmp, b.Path); err != nil {
		return fail(err)
	}
	if err := syncDir(filepath.Dir(b.Path)); err != nil {
		return fail(err)
	}
	b.CRC32C = c
	return nil
}

// fileCRC checksums path, which must be size bytes long.
func fileCRC(ctx context.Context, path string, size int64) (uint32, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	if !st.Mode().IsRegular() || st.Size() != size {
		return 0, fmt.Errorf("%s: %d bytes, want %d", path, st.Size(), size)
	}
	c, err := readCRC(ctx, f, size)
	unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
	return c, err
}

// readCRC is the CRC-32C of the first size bytes of f.
func readCRC(ctx context.Context, f *os.File, size int64) (uint32, error) {
	tab := crc32.MakeTable(crc32.Castagnoli)
	buf := make([]byte, min(size, chunkBytes))
	var c uint32
	for off := int64(0); off < size; {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		n := min(int64(len(buf)), size-off)
		if _, err := f.ReadAt(buf[:n], off); err != nil {
			return 0, err
		}
		c = crc32.Update(c, tab, buf[:n])
		off += n
	}
	return c, nil
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// fileSafe maps s to a file name part: letters, digits, '.', '-' and '_'
// stay, anything else (path separators, ':' of PCI addresses) becomes '_'.
func fileSafe(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
			return r
		}
		return '_'
	}, s)
}

func countSSD(m *Manifest) int {
	n := 0
	for _, b := range m.Bins {
		if b.Kind == maxflow.StorageSSD {
			n++
		}
	}
	return n
}
