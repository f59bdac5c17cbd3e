package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/gnnplan/gnnplan/ddak/layout"

	"github.com/gnnplan/gnnplan/internal/inputerr"
	"github.com/gnnplan/gnnplan/internal/tier"

	"golang.org/x/sys/unix"

	"github.com/gnnplan/gnnplan/trainer/dataset"
	"github.com/gnnplan/gnnplan/trainer/internal/fslock"
)

// chunkBytes is how much of features.npy Materialize and Open hold at a
// time, and the largest single write and read of a bin file: large enough
// for sequential IO at disk speed, small against any dataset.
const chunkBytes = 8 << 20

// Materialize's write buffers (see writeBins).
const (
	// stageBytes is one bucket's staging buffer in the first pass: each
	// write of that pass is this large (or the bucket's end).
	stageBytes = 1 << 20
	// minBucketBytes is the smallest bucket, so a small store is one
	// bucket per bin.
	minBucketBytes = chunkBytes
)

// MaterializeOptions say where Materialize reports what it does.
type MaterializeOptions struct {
	// Log gets one line per phase and per bin file (nil: none).
	Log io.Writer
	// Progress is called as bytes of each phase are done (nil: not called).
	Progress func(Progress)

	// create opens a bin's temporary file for writing (nil: os.OpenFile,
	// mode 0644 before the umask); tests count or fail writes through it.
	create func(path string) (binWriterFile, error)
	// stageBytes and minBucketBytes override the defaults (tests: many
	// buckets on a small store).
	stageBytes, minBucketBytes int64
}

// binWriterFile is what Materialize writes a bin file through.
type binWriterFile interface {
	io.ReaderAt
	io.WriterAt
	Truncate(size int64) error
	Sync() error
	Close() error
}

// Materialize writes the SSD bins of the layout in layoutDir (normally the
// dataset directory) as files, and the manifest store.json in datasetDir.
//
// SSD bin k of the layout (k counting SSD bins in bin order) goes to
// ssdDirs[k mod len(ssdDirs)]: one directory per SSD, shared round-robin
// when there are fewer directories than SSD bins (directories beyond the
// number of SSD bins stay unused). Its file is
// <dataset name>-<bin id>.rows: a header block (HeaderBytes) naming the
// store, the bin and the CRC-32C of the rows, then the bin's rows in row
// order, row r at HeaderBytes + r x stride, where stride is
// StrideFor(row bytes): rows below a sector pack into it, larger ones
// start on sectors; the rows are zero-padded to a
// multiple of FileAlignBytes so that the file can be read with O_DIRECT;
// then the CRC-32C of each row, which Gather checks every read row
// against.
// Cache bins get no file: Open fills them from features.npy.
//
// All or nothing: every file is written as path.tmp and synced; only when
// all are complete are they renamed into place and the manifest replaced
// (atomically), so a failed or cancelled run leaves the previous store as
// it was, and removes its temporary files. Temporary files a killed run
// left are removed by the next. A rerun keeps a bin file whose header
// names the same store and bin and whose rows match its checksum, and
// rewrites the rest; files of the previous store that the new one does not
// use are removed once the new manifest is in place.
//
// Memory: the layout (5 bytes per vertex), 8 bytes per SSD row, and the
// write buffers: about sqrt(2 x T x 1 MiB) for T bytes of SSD rows (450
// MiB for 100 GB). Features are read once, sequentially; bin files are
// written in writes of 1-8 MiB (see writeBins).
func Materialize(ctx context.Context, datasetDir, layoutDir string, ssdDirs []string, opt MaterializeOptions) (*Manifest, error) {
	log := opt.Log
	if log == nil {
		log = io.Discard
	}
	meta, err := dataset.ReadMeta(datasetDir)
	if err != nil {
		return nil, err
	}
	if meta.FeatureDim == 0 {
		return nil, &inputerr.Error{Path: datasetDir, Field: "--dataset", Msg: "the dataset has no features to materialize"}
	}
	// One writer of a dataset's store at a time.
	lk, err := fslock.TryLock(datasetDir)
	if errors.Is(err, fslock.ErrBusy) {
		return nil, &inputerr.Error{Path: datasetDir, Field: "--dataset",
			Msg: "its store is being written by another gnnplan (materialize or place --materialize): wait for it to end"}
	}
	if err != nil {
		return nil, &inputerr.Error{Path: datasetDir, Field: "--dataset", Msg: "cannot lock the dataset directory", Err: err}
	}
	defer lk.Unlock()
	l, bins, err := layout.Read(layoutDir)
	if err != nil {
		return nil, err
	}
	if int64(len(l.Bin)) != meta.NumNodes {
		return nil, &inputerr.Error{Path: filepath.Join(layoutDir, layout.MetaFile),
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
	manifestPath := filepath.Join(datasetDir, ManifestFile)
	// The previous store, if any, whose files may go once m replaces it.
	prev, _ := readManifestFile(manifestPath)
	removeStale(datasetDir, m, log)

	kept := keptFiles(ctx, m, opt, log)
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("materialize: %w", err)
	}
	var todo []int
	for i, b := range m.Bins {
		if b.Kind == tier.SSD && !kept[i] {
			todo = append(todo, i)
		}
	}
	content := &contentCheck{path: src.path, rowB: src.rowB}
	ws, err := writeBins(ctx, m, l, src, todo, content, opt, log)
	if err != nil {
		return nil, err
	}
	if len(todo) == 0 {
		// No rows written, so the features were not read: the previous
		// store's checksum of them holds when it is this very store (same
		// features by size, time and sampled rows, same layout).
		if prev != nil && prev.StoreID == m.StoreID {
			content.crc = prev.FeaturesCRC32C
		} else {
			fmt.Fprintf(log, "materialize: checksumming %s\n", src.path)
			done := progressFunc(opt.Progress).phase("checksum", src.rows*src.rowB)
			if err := src.scan(ctx, func(first int64, data []byte) error {
				done(int64(len(data)))
				return content.add(first, data)
			}); err != nil {
				if ctx.Err() != nil {
					return nil, fmt.Errorf("materialize: %w", ctx.Err())
				}
				return nil, err
			}
		}
	}
	m.FeaturesCRC32C = content.crc
	if err := commit(ctx, m, manifestPath, ws); err != nil {
		return nil, err
	}
	if prev != nil {
		removeOld(prev, m, log)
	}
	fmt.Fprintf(log, "materialize: wrote %s (%d bins, %d SSD bin files, %d rewritten)\n", manifestPath, len(m.Bins), countSSD(m), len(todo))
	return m, nil
}

// commit renames the finished temporary files into place, then replaces
// the manifest. Past its first rename it no longer heeds ctx: stopping
// half-way would leave neither store whole.
func commit(ctx context.Context, m *Manifest, manifestPath string, ws []*binWriter) error {
	if err := ctx.Err(); err != nil {
		removeTemps(ws)
		return fmt.Errorf("materialize: %w", err)
	}
	dirs := map[string]bool{}
	for j, w := range ws {
		if err := os.Rename(w.tmp, w.bin.Path); err != nil {
			removeTemps(ws[j:])
			return fmt.Errorf("materialize: bin %s: %w", w.bin.ID, err)
		}
		dirs[filepath.Dir(w.bin.Path)] = true
	}
	for d := range dirs {
		if err := syncDir(d); err != nil {
			return fmt.Errorf("materialize: %w", err)
		}
	}
	if err := writeManifestFile(manifestPath, m); err != nil {
		return err
	}
	if err := syncDir(filepath.Dir(manifestPath)); err != nil {
		return fmt.Errorf("materialize: %w", err)
	}
	return nil
}

// removeStale removes what a killed run may have left: temporary bin files
// of this dataset in the SSD directories, temporary manifests, and the
// journal of schema 1.
func removeStale(datasetDir string, m *Manifest, log io.Writer) {
	var stale []string
	dirs := map[string]bool{}
	for _, b := range m.Bins {
		if b.Kind == tier.SSD {
			dirs[filepath.Dir(b.Path)] = true
		}
	}
	// Bin files are named <dataset>-<bin id>.rows.
	prefix := ""
	for _, b := range m.Bins {
		if b.Kind == tier.SSD {
			prefix = strings.TrimSuffix(filepath.Base(b.Path), fileSafe(b.ID)+".rows")
			break
		}
	}
	for d := range dirs {
		tmps, _ := filepath.Glob(filepath.Join(d, "*.rows.tmp"))
		for _, t := range tmps {
			if strings.HasPrefix(filepath.Base(t), prefix) {
				stale = append(stale, t)
			}
		}
	}
	tmps, _ := filepath.Glob(filepath.Join(datasetDir, ManifestFile+".*.tmp"))
	stale = append(stale, tmps...)
	stale = append(stale, filepath.Join(datasetDir, legacyJournalFile))
	for _, t := range stale {
		if err := os.Remove(t); err == nil {
			fmt.Fprintf(log, "materialize: removed %s, left by an interrupted run\n", t)
		}
	}
}

// removeOld removes the SSD bin files of prev, the store m replaced, that
// m does not use, when their header says they are prev's.
func removeOld(prev, m *Manifest, log io.Writer) {
	used := map[string]bool{}
	for _, b := range m.Bins {
		used[b.Path] = true
	}
	for _, b := range prev.Bins {
		if b.Kind != tier.SSD || used[b.Path] || !isBinOf(b.Path, prev.StoreID) {
			continue
		}
		if err := os.Remove(b.Path); err == nil {
			fmt.Fprintf(log, "materialize: removed %s of the previous store\n", b.Path)
		}
	}
}

// newManifest describes the store Materialize will write, checksums aside.
func newManifest(datasetDir, layoutDir string, meta dataset.Meta, l *layout.Layout, bins []layout.Bin, src *features, ssdDirs []string) (*Manifest, error) {
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
	stride := StrideFor(rowBytes)
	m := &Manifest{SchemaVersion: ManifestSchemaVersion, Dataset: meta.Name, NumNodes: meta.NumNodes, FeatureDim: meta.FeatureDim,
		RowBytes: rowBytes, LayoutDir: ld, LayoutCRC32C: layoutCRC(l), FeaturesBytes: src.size, FeaturesMtimeUnixNs: src.mtime}
	if m.FeaturesSampleCRC32C, err = src.sampleCRC(); err != nil {
		return nil, err
	}
	dirs := make([]string, len(ssdDirs))
	for i, d := range ssdDirs {
		st, err := os.Stat(d)
		if err != nil || !st.IsDir() {
			return nil, &inputerr.Error{Path: d, Field: "--ssd-dir", Msg: "not a directory", Err: err}
		}
		if dirs[i], err = filepath.Abs(d); err != nil {
			return nil, fmt.Errorf("materialize: %w", err)
		}
	}
	paths := map[string]string{}
	k := 0
	for i, b := range bins {
		bf := BinFile{ID: b.ID, Kind: b.Kind, Socket: b.Socket, Rows: l.Stats[i].Rows, RowBytes: rowBytes}
		if b.Kind == tier.SSD {
			if len(b.ID) > maxBinIDBytes {
				return nil, &inputerr.Error{Path: filepath.Join(layoutDir, layout.MetaFile),
					Msg: fmt.Sprintf("bin id of %d bytes (at most %d)", len(b.ID), maxBinIDBytes)}
			}
			if len(dirs) == 0 {
				return nil, &inputerr.Error{Field: "--ssd-dir", Msg: "the layout has SSD bins: give at least one directory for their files"}
			}
			bf.Path = filepath.Join(dirs[k%len(dirs)], fileSafe(name)+"-"+fileSafe(b.ID)+".rows")
			bf.StrideBytes = stride
			bf.FileBytes = binFileBytes(bf.Rows, stride)
			k++
			if other, dup := paths[bf.Path]; dup {
				return nil, &inputerr.Error{Path: filepath.Join(layoutDir, layout.MetaFile),
					Msg: fmt.Sprintf("bins %q and %q would share the file %s (bin ids must differ)", other, b.ID, bf.Path)}
			}
			paths[bf.Path] = b.ID
		}
		m.Bins = append(m.Bins, bf)
	}
	m.StoreID = storeID(m)
	return m, nil
}

// checkRows checks that the layout numbers each bin's rows 0..n-1 with
// one vertex each, which ReadLayout does not: a row given twice would
// leave another row of the bin file unwritten.
func checkRows(l *layout.Layout, bins []layout.Bin, layoutDir string) error {
	seen := make([][]uint64, len(bins))
	for i := range bins {
		seen[i] = make([]uint64, (l.Stats[i].Rows+63)/64)
	}
	for v, b := range l.Bin {
		r := l.Row[v]
		w, bit := r/64, uint64(1)<<(r%64)
		if seen[b][w]&bit != 0 {
			return &inputerr.Error{Path: filepath.Join(layoutDir, layout.RowFile),
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

// featureSampleRows is how many rows sampleCRC reads: spread evenly, so a
// file rewritten with other values changes them, at a few hundred small
// reads per Open.
const featureSampleRows = 256

// sampleCRC is the CRC-32C of featureSampleRows rows spread evenly over
// the features (all of them when there are fewer), in row order.
func (f *features) sampleCRC() (uint32, error) {
	n := min(f.rows, featureSampleRows)
	if n == 0 {
		return 0, nil
	}
	buf := make([]byte, f.rowB)
	var crc uint32
	for i := range n {
		v := i * (f.rows - 1) / max(n-1, 1)
		if _, err := f.f.ReadAt(buf, f.offset+v*f.rowB); err != nil {
			return 0, fmt.Errorf("read %s row %d: %w", f.path, v, err)
		}
		crc = crc32.Update(crc, castagnoli(), buf)
	}
	return crc, nil
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
		return nil, &inputerr.Error{Path: path, Msg: "cannot read features", Err: err}
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

// contentCheck takes the CRC-32C of the features' rows as they are
// scanned in vertex order, and refuses a row with a NaN or infinite
// feature: the store only ever holds finite rows, as memory mode
// requires.
type contentCheck struct {
	path string
	rowB int64
	crc  uint32
}

// add takes the chunk of rows from vertex first on.
func (c *contentCheck) add(first int64, data []byte) error {
	c.crc = crc32.Update(c.crc, castagnoli(), data)
	if i := nonFinite(data); i >= 0 {
		dim := int(c.rowB / 4)
		x := math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
		return &inputerr.Error{Path: c.path, Msg: fmt.Sprintf("row %d column %d is %v (features must be finite: fix or re-import them)", first+int64(i/dim), i%dim, x)}
	}
	return nil
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
// stay: it is already bin i of this store (same store id, index, shape),
// and its rows match the checksum in its header. It reads those files
// whole; one that cannot be read is written again.
func keptFiles(ctx context.Context, m *Manifest, opt MaterializeOptions, log io.Writer) []bool {
	var total int64
	for _, b := range m.Bins {
		if b.Kind != tier.SSD {
			continue
		}
		if st, err := os.Stat(b.Path); err == nil && st.Size() == b.FileBytes {
			total += b.FileBytes
		}
	}
	kept := make([]bool, len(m.Bins))
	if total == 0 {
		return kept
	}
	done := progressFunc(opt.Progress).phase("check existing files", total)
	for i := range m.Bins {
		b := &m.Bins[i]
		if b.Kind != tier.SSD || ctx.Err() != nil {
			continue
		}
		if c, rc, ok := sameHeader(ctx, m, i, done); ok {
			b.CRC32C, b.RowCRCsCRC32C = c, rc
			kept[i] = true
			fmt.Fprintf(log, "materialize: bin %s: %s is up to date\n", b.ID, b.Path)
		}
	}
	return kept
}

// binWriter is one bin file being written, and its buckets (see
// writeBins).
type binWriter struct {
	bin   *BinFile
	index int
	tmp   string
	f     binWriterFile
	// bucketRows is the rows of a bucket; bucket k holds rows
	// [k x bucketRows, (k+1) x bucketRows).
	bucketRows int64
	// slot[k x bucketRows + s] is the row written in the s-th place of
	// bucket k in the first pass.
	slot []uint32
	// placed and written count, per bucket, the rows given to it and
	// those of them already in the file.
	placed, written []int64
	stage           [][]byte // per bucket: rows not yet written
	// crcs[r] is row r's checksum (rowCRC), taken as it is placed.
	crcs []uint32
}

// bucketRowsOf is how many rows bucket k of w holds.
func (w *binWriter) bucketRowsOf(k int) int64 {
	return min(w.bucketRows, w.bin.Rows-int64(k)*w.bucketRows)
}

// writeBins writes the bins todo (indices into m.Bins) as complete,
// synced temporary files (path.tmp) and returns them, in todo's order. On
// any error or cancel it removes them all.
//
// A layout numbers a bin's rows in its own order (DDAK: by hotness), not
// in vertex order, while features.npy is read in vertex order. Writing
// each row where it goes would cost a write per row; instead each bin's
// rows are cut into buckets of consecutive rows, and
//   - the first pass reads the features once and appends each row to its
//     bucket's staging buffer, which is written to the bucket's region of
//     the file, in arrival order, when it holds stageBytes;
//   - the second pass reads each bucket whose rows did not arrive in row
//     order (none, for hash placement), puts them in row order in memory
//     and writes the bucket back, chunkBytes at a time.
//
// With K buckets for T bytes, the first pass holds K x stageBytes and the
// second 2 T/K; K = sqrt(2 T / stageBytes) makes both sqrt(2 T stageBytes).
func writeBins(ctx context.Context, m *Manifest, l *layout.Layout, src *features, todo []int, content *contentCheck, opt MaterializeOptions, log io.Writer) (ws []*binWriter, err error) {
	if len(todo) == 0 {
		return nil, nil
	}
	create, stage, minBucket := opt.create, opt.stageBytes, opt.minBucketBytes
	if create == nil {
		create = func(path string) (binWriterFile, error) {
			return os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
		}
	}
	if stage <= 0 {
		stage = stageBytes
	}
	if minBucket <= 0 {
		minBucket = minBucketBytes
	}
	defer func() {
		if err != nil {
			removeTemps(ws)
			ws = nil
		}
	}()
	stride := m.Bins[todo[0]].StrideBytes
	var total int64
	for _, i := range todo {
		total += m.Bins[i].Rows * stride
	}
	// Rows per bucket and per staging buffer, multiples of align so that
	// the writes start on 4 KiB (stride is a power of two up to 512, or a
	// multiple of 512).
	align := max(8, FileAlignBytes/stride)
	k := int64(math.Ceil(math.Sqrt(2 * float64(total) / float64(stage))))
	bucketRows := roundUp(max(1, max(minBucket, total/max(k, 1))/stride), align)
	stageRows := roundUp(max(1, stage/stride), align)
	wb := make([]*binWriter, len(m.Bins))
	for _, i := range todo {
		b := &m.Bins[i]
		w := &binWriter{bin: b, index: i, tmp: b.Path + ".tmp", bucketRows: bucketRows}
		// O_TRUNC: a .tmp left by a killed run holds rows of unknown age.
		if w.f, err = create(w.tmp); err != nil {
			return ws, fmt.Errorf("materialize: bin %s: %w", b.ID, err)
		}
		ws = append(ws, w)
		wb[i] = w
		nb := (b.Rows + bucketRows - 1) / bucketRows
		w.slot, w.crcs = make([]uint32, b.Rows), make([]uint32, b.Rows)
		w.placed, w.written, w.stage = make([]int64, nb), make([]int64, nb), make([][]byte, nb)
	}

	fmt.Fprintf(log, "materialize: writing %d SSD bin files from %s (%d rows of %d bytes)\n", len(todo), src.path, src.rows, src.rowB)
	done := progressFunc(opt.Progress).phase("write rows", src.rows*src.rowB)
	err = src.scan(ctx, func(first int64, data []byte) error {
		if err := content.add(first, data); err != nil {
			return err
		}
		rb := src.rowB
		for j := int64(0); j*rb < int64(len(data)); j++ {
			v := first + j
			w := wb[l.Bin[v]]
			if w == nil {
				continue
			}
			if err := w.place(l.Row[v], data[j*rb:(j+1)*rb], stageRows); err != nil {
				return err
			}
		}
		done(int64(len(data)))
		return nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return ws, fmt.Errorf("materialize: %w", ctx.Err())
		}
		return ws, err
	}

	var disorder int64
	for _, w := range ws {
		for k := range w.placed {
			if !w.inOrder(k) {
				disorder += w.bucketRowsOf(k) * stride
			}
		}
	}
	if disorder > 0 {
		fmt.Fprintf(log, "materialize: putting %.1f MiB of rows in row order\n", float64(disorder)/(1<<20))
		done = progressFunc(opt.Progress).phase("order rows", disorder)
		bufs := [2][]byte{make([]byte, min(bucketRows*stride, disorder)), make([]byte, min(bucketRows*stride, disorder))}
		for _, w := range ws {
			for k := range w.placed {
				if err := ctx.Err(); err != nil {
					return ws, fmt.Errorf("materialize: %w", err)
				}
				if err := w.order(k, bufs, done); err != nil {
					return ws, err
				}
			}
		}
	}

	var sum int64
	for _, w := range ws {
		sum += w.bin.FileBytes - HeaderBytes
	}
	fmt.Fprintf(log, "materialize: checksumming %d files\n", len(ws))
	done = progressFunc(opt.Progress).phase("checksum", sum)
	for _, w := range ws {
		if err = w.finish(ctx, m, done); err != nil {
			if ctx.Err() != nil {
				return ws, fmt.Errorf("materialize: %w", ctx.Err())
			}
			return ws, err
		}
		fmt.Fprintf(log, "materialize: bin %s: wrote %s (%d rows, %.1f MiB)\n", w.bin.ID, w.tmp, w.bin.Rows, float64(w.bin.FileBytes)/(1<<20))
	}
	return ws, nil
}

// place appends row (its data) to its bucket's staging buffer and writes
// the buffer when it is full or the bucket complete.
func (w *binWriter) place(row uint32, data []byte, stageRows int64) error {
	stride := w.bin.StrideBytes
	k := int64(row) / w.bucketRows
	s := w.placed[k]
	w.slot[k*w.bucketRows+s] = row
	w.crcs[row] = rowCRC(data)
	if w.stage[k] == nil {
		w.stage[k] = make([]byte, min(stageRows, w.bucketRowsOf(int(k)))*stride)
	}
	copy(w.stage[k][(s-w.written[k])*stride:], data) // the padding stays zero
	s++
	w.placed[k] = s
	n := s - w.written[k]
	if n*stride < int64(len(w.stage[k])) && s < w.bucketRowsOf(int(k)) {
		return nil
	}
	off := HeaderBytes + (k*w.bucketRows+w.written[k])*stride
	if _, err := w.f.WriteAt(w.stage[k][:n*stride], off); err != nil {
		return fmt.Errorf("materialize: write %s: %w", w.tmp, err)
	}
	w.written[k] = s
	if s == w.bucketRowsOf(int(k)) {
		w.stage[k] = nil // the bucket is complete
	}
	return nil
}

// inOrder reports whether bucket k's rows arrived in row order.
func (w *binWriter) inOrder(k int) bool {
	first := int64(k) * w.bucketRows
	for s, r := range w.slot[first : first+w.bucketRowsOf(k)] {
		if int64(r) != first+int64(s) {
			return false
		}
	}
	return true
}

// order puts bucket k's rows in row order: one read of the bucket, a
// permutation in memory, writes of chunkBytes.
func (w *binWriter) order(k int, bufs [2][]byte, done func(int64)) error {
	if w.inOrder(k) {
		return nil
	}
	stride := w.bin.StrideBytes
	first := int64(k) * w.bucketRows
	n := w.bucketRowsOf(k)
	off := HeaderBytes + first*stride
	in, out := bufs[0][:n*stride], bufs[1][:n*stride]
	if _, err := w.f.ReadAt(in, off); err != nil {
		return fmt.Errorf("materialize: read back %s: %w", w.tmp, err)
	}
	for s, r := range w.slot[first : first+n] {
		d := (int64(r) - first) * stride
		copy(out[d:d+stride], in[int64(s)*stride:])
	}
	for p := int64(0); p < int64(len(out)); p += chunkBytes {
		q := min(p+chunkBytes, int64(len(out)))
		if _, err := w.f.WriteAt(out[p:q], off+p); err != nil {
			return fmt.Errorf("materialize: write %s: %w", w.tmp, err)
		}
		done(q - p)
	}
	return nil
}

// finish writes the row checksums after the rows and pads the file,
// checksums its data area as read back from it, writes the header with
// the checksums, syncs and closes it.
func (w *binWriter) finish(ctx context.Context, m *Manifest, done func(int64)) error {
	b := w.bin
	fail := func(err error) error {
		return fmt.Errorf("materialize: bin %s: %s: %w", b.ID, w.tmp, err)
	}
	if err := w.f.Truncate(b.FileBytes); err != nil {
		return fail(err)
	}
	off := rowCRCsOffset(b.Rows, b.StrideBytes)
	buf := make([]byte, 4*min(len(w.crcs), chunkBytes/4))
	for t := w.crcs; len(t) > 0; {
		n := min(len(t), len(buf)/4)
		for j, x := range t[:n] {
			binary.LittleEndian.PutUint32(buf[4*j:], x)
		}
		if _, err := w.f.WriteAt(buf[:4*n], off); err != nil {
			return fail(err)
		}
		off += int64(4 * n)
		t = t[n:]
	}
	b.RowCRCsCRC32C = rowCRCsCRC(w.crcs)
	w.crcs = nil
	c, err := dataCRC(ctx, w.f, b.FileBytes, done)
	if err != nil {
		return fail(err)
	}
	b.CRC32C = c
	h, err := expectedHeader(m, w.index)
	if err != nil {
		return fail(err)
	}
	if _, err := w.f.WriteAt(h.marshal(), 0); err != nil {
		return fail(err)
	}
	if err := w.f.Sync(); err != nil {
		return fail(err)
	}
	if f, ok := w.f.(*os.File); ok {
		// The rows go to the SSD, not into the page cache training needs.
		unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
	}
	err = w.f.Close()
	w.f = nil
	if err != nil {
		return fail(err)
	}
	return nil
}

// removeTemps closes and removes the temporary files of ws.
func removeTemps(ws []*binWriter) {
	for _, w := range ws {
		if w.f != nil {
			w.f.Close()
			w.f = nil
		}
		os.Remove(w.tmp)
	}
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
		if b.Kind == tier.SSD {
			n++
		}
	}
	return n
}
