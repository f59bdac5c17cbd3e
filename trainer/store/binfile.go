package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"

	"github.com/gnnplan/gnnplan/internal/inputerr"
	"github.com/gnnplan/gnnplan/internal/tier"

	"github.com/gnnplan/gnnplan/internal/fsutil"

	"golang.org/x/sys/unix"
)

// HeaderBytes is the identity block at the start of every SSD bin file: one
// whole 4 KiB block, so that the rows after it keep the alignment direct IO
// needs (row r of a bin is at HeaderBytes + r x stride).
const HeaderBytes = 4096

// The header's layout (little-endian): magic, version, bin index, store id,
// rows, row bytes, stride, file bytes, data CRC, row checksums' CRC, the
// bin id's length and bytes, zeros, and the CRC-32C of everything before
// it in its last 4 bytes. Version 2 added the row checksums.
const (
	binMagic         = "GNNPBIN\x00"
	binHeaderVersion = 2
	hdrIndex         = 12
	hdrStoreID       = 16
	hdrRows          = 32
	hdrRowBytes      = 40
	hdrStride        = 48
	hdrFileBytes     = 56
	hdrDataCRC       = 64
	hdrRowCRCsCRC    = 68
	hdrIDLen         = 72
	hdrID            = 74
	hdrCRC           = HeaderBytes - 4
	// maxBinIDBytes bounds a bin id so that it fits the header.
	maxBinIDBytes = 1024
	storeIDBytes  = 16
)

// castagnoli is the CRC-32C table (crc32 builds it once).
func castagnoli() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) }

// binHeader is what an SSD bin file says about itself: which store and
// which bin of it the file is, the rows' shape, the CRC-32C of the data
// area (everything after the header) and that of its table of row
// checksums, so that a file swapped with another or a manifest path
// pointed at the wrong file is caught by reading one block, and damaged
// rows by reading the file or, one row at a time, by the reads of training.
type binHeader struct {
	StoreID       [storeIDBytes]byte
	Index         uint32
	ID            string
	Rows          int64
	RowBytes      int64
	StrideBytes   int64
	FileBytes     int64
	DataCRC32C    uint32
	RowCRCsCRC32C uint32
}

func (h *binHeader) marshal() []byte {
	p := make([]byte, HeaderBytes)
	copy(p, binMagic)
	le := binary.LittleEndian
	le.PutUint32(p[8:], binHeaderVersion)
	le.PutUint32(p[hdrIndex:], h.Index)
	copy(p[hdrStoreID:], h.StoreID[:])
	le.PutUint64(p[hdrRows:], uint64(h.Rows))
	le.PutUint64(p[hdrRowBytes:], uint64(h.RowBytes))
	le.PutUint64(p[hdrStride:], uint64(h.StrideBytes))
	le.PutUint64(p[hdrFileBytes:], uint64(h.FileBytes))
	le.PutUint32(p[hdrDataCRC:], h.DataCRC32C)
	le.PutUint32(p[hdrRowCRCsCRC:], h.RowCRCsCRC32C)
	le.PutUint16(p[hdrIDLen:], uint16(len(h.ID)))
	copy(p[hdrID:], h.ID)
	le.PutUint32(p[hdrCRC:], crc32.Checksum(p[:hdrCRC], castagnoli()))
	return p
}

// parseBinHeader decodes a header block; the error says what is wrong with it.
func parseBinHeader(p []byte) (binHeader, error) {
	var h binHeader
	le := binary.LittleEndian
	switch {
	case len(p) < HeaderBytes:
		return h, fmt.Errorf("header of %d bytes, want %d", len(p), HeaderBytes)
	case string(p[:len(binMagic)]) != binMagic:
		return h, fmt.Errorf("no bin header (not a gnnplan bin file)")
	case le.Uint32(p[hdrCRC:]) != crc32.Checksum(p[:hdrCRC], castagnoli()):
		return h, fmt.Errorf("header damaged (its CRC-32C does not match)")
	case le.Uint32(p[8:]) != binHeaderVersion:
		return h, fmt.Errorf("header version %d (want %d: a file written before rows had checksums)", le.Uint32(p[8:]), binHeaderVersion)
	}
	n := int(le.Uint16(p[hdrIDLen:]))
	if n > maxBinIDBytes {
		return h, fmt.Errorf("header names a bin id of %d bytes (at most %d)", n, maxBinIDBytes)
	}
	h.Index = le.Uint32(p[hdrIndex:])
	copy(h.StoreID[:], p[hdrStoreID:])
	h.Rows = int64(le.Uint64(p[hdrRows:]))
	h.RowBytes = int64(le.Uint64(p[hdrRowBytes:]))
	h.StrideBytes = int64(le.Uint64(p[hdrStride:]))
	h.FileBytes = int64(le.Uint64(p[hdrFileBytes:]))
	h.DataCRC32C = le.Uint32(p[hdrDataCRC:])
	h.RowCRCsCRC32C = le.Uint32(p[hdrRowCRCsCRC:])
	h.ID = string(p[hdrID : hdrID+n])
	return h, nil
}

// expectedHeader is the header bin i of m must carry.
func expectedHeader(m *Manifest, i int) (binHeader, error) {
	b := m.Bins[i]
	h := binHeader{Index: uint32(i), ID: b.ID, Rows: b.Rows, RowBytes: b.RowBytes, StrideBytes: b.StrideBytes,
		FileBytes: b.FileBytes, DataCRC32C: b.CRC32C, RowCRCsCRC32C: b.RowCRCsCRC32C}
	id, err := hex.DecodeString(m.StoreID)
	if err != nil || len(id) != storeIDBytes {
		return h, fmt.Errorf("store id %q is not %d hex digits", m.StoreID, 2*storeIDBytes)
	}
	copy(h.StoreID[:], id)
	return h, nil
}

// storeID derives a store's id from what its rows are cut from and how:
// the dataset, the features file's size and time, the layout's checksum and
// each bin's shape. Two stores with the same id hold the same bytes, so a
// bin file from any other store (another dataset, layout or stride) is told
// apart by its header.
func storeID(m *Manifest) string {
	h := sha256.New()
	fmt.Fprintf(h, "gnnplan store %d\n%q %d %d %d %08x %d %d %08x\n", ManifestSchemaVersion, m.Dataset, m.NumNodes, m.FeatureDim,
		m.RowBytes, m.LayoutCRC32C, m.FeaturesBytes, m.FeaturesMtimeUnixNs, m.FeaturesSampleCRC32C)
	for i, b := range m.Bins {
		fmt.Fprintf(h, "%d %q %s %d %d %d\n", i, b.ID, b.Kind, b.Rows, b.StrideBytes, b.FileBytes)
	}
	return hex.EncodeToString(h.Sum(nil)[:storeIDBytes])
}

// readHeader reads the header block of f.
func readHeader(f io.ReaderAt) ([]byte, error) {
	p := make([]byte, HeaderBytes)
	if _, err := f.ReadAt(p, 0); err != nil {
		return nil, err
	}
	return p, nil
}

// checkBin is Open's cheap check of SSD bin i of m: its file is a regular
// file of the manifest's size whose header names this store, this bin and
// the manifest's data checksum. It reads one block. The error is an
// InputError naming the file and the bin.
func checkBin(m *Manifest, i int) error {
	f, err := fsutil.OpenRegular(m.Bins[i].Path)
	if err != nil {
		return binError(m, i, "cannot read its file", err)
	}
	defer f.Close()
	return checkOpenBin(m, i, f)
}

func checkOpenBin(m *Manifest, i int, f *os.File) error {
	b := m.Bins[i]
	st, err := f.Stat()
	switch {
	case err != nil:
		return binError(m, i, "cannot read its file", err)
	case !st.Mode().IsRegular():
		return binError(m, i, fmt.Sprintf("not a regular file (%s)", st.Mode().Type()), nil)
	case st.Size() != b.FileBytes:
		return binError(m, i, fmt.Sprintf("%d bytes, the manifest says %d: truncated or replaced; materialize again", st.Size(), b.FileBytes), nil)
	}
	p, err := readHeader(f)
	if err != nil {
		return binError(m, i, "cannot read its header", err)
	}
	got, err := parseBinHeader(p)
	if err != nil {
		return binError(m, i, err.Error()+"; materialize again", nil)
	}
	want, err := expectedHeader(m, i)
	if err != nil {
		return binError(m, i, err.Error(), nil)
	}
	switch {
	case got.StoreID != want.StoreID:
		return binError(m, i, fmt.Sprintf("the file belongs to another store (id %x, this store is %s): a file copied or a path edited; materialize again", got.StoreID, m.StoreID), nil)
	case got.Index != want.Index || got.ID != want.ID:
		return binError(m, i, fmt.Sprintf("the file holds bin %s (bins[%d]) of this store: files swapped or a path edited; materialize again", got.ID, got.Index), nil)
	case got != want:
		return binError(m, i, fmt.Sprintf("the header (%d rows, stride %d, %d bytes, data CRC-32C %08x, row checksums' %08x) disagrees with the manifest (%d rows, stride %d, %d bytes, %08x, %08x); materialize again",
			got.Rows, got.StrideBytes, got.FileBytes, got.DataCRC32C, got.RowCRCsCRC32C, want.Rows, want.StrideBytes, want.FileBytes, want.DataCRC32C, want.RowCRCsCRC32C), nil)
	}
	return nil
}

// binError is an InputError about SSD bin i of m, naming its file.
func binError(m *Manifest, i int, msg string, err error) error {
	return &inputerr.Error{Path: m.Bins[i].Path, Msg: fmt.Sprintf("SSD bin %s (bins[%d]): %s", m.Bins[i].ID, i, msg), Err: err}
}

// dataCRC is the CRC-32C of the data area of f (bytes HeaderBytes to
// fileBytes), read in chunkBytes pieces; done gets each piece's size.
func dataCRC(ctx context.Context, f io.ReaderAt, fileBytes int64, done func(int64)) (uint32, error) {
	buf := make([]byte, min(max(fileBytes-HeaderBytes, 1), chunkBytes))
	var c uint32
	for off := int64(HeaderBytes); off < fileBytes; {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		n := min(int64(len(buf)), fileBytes-off)
		if _, err := f.ReadAt(buf[:n], off); err != nil {
			return 0, err
		}
		c = crc32.Update(c, castagnoli(), buf[:n])
		off += n
		if done != nil {
			done(n)
		}
	}
	return c, nil
}

// Progress is how far a long phase of Materialize or Verify has come.
type Progress struct {
	// Phase names the pass: "check existing files", "write rows",
	// "order rows", "checksum" or "verify".
	Phase      string
	DoneBytes  int64
	TotalBytes int64
}

// progressFunc calls fn (when not nil) as bytes of a phase are done.
type progressFunc func(Progress)

// phase starts a phase of total bytes and returns the function that
// counts bytes done.
func (fn progressFunc) phase(name string, total int64) func(int64) {
	if fn == nil {
		return func(int64) {}
	}
	p := Progress{Phase: name, TotalBytes: total}
	fn(p)
	return func(n int64) {
		p.DoneBytes += n
		fn(p)
	}
}

// VerifyOptions say where Verify reports what it does.
type VerifyOptions struct {
	// Log gets one line per phase and per damaged bin (nil: none).
	Log io.Writer
	// Progress is called as bytes are checked (nil: not called).
	Progress func(Progress)
}

// FileCheck is Verify's finding for one file.
type FileCheck struct {
	Path  string `json:"path"`
	Bytes int64  `json:"bytes"`
	OK    bool   `json:"ok"`
	// Problem says what is wrong when OK is false.
	Problem string `json:"problem,omitempty"`
}

// BinCheck is Verify's finding for one SSD bin.
type BinCheck struct {
	ID string `json:"id"`
	FileCheck
	// DamagedRows counts the rows that fail their own checksum, and
	// FirstDamagedRow is the first of them (-1: none, or the row
	// checksums themselves are damaged).
	DamagedRows     int64 `json:"damaged_rows,omitempty"`
	FirstDamagedRow int64 `json:"first_damaged_row,omitempty"`
}

// VerifyReport is what Verify found.
type VerifyReport struct {
	SchemaVersion int        `json:"schema_version"`
	Manifest      string     `json:"manifest"`
	StoreID       string     `json:"store_id"`
	Features      FileCheck  `json:"features"`
	Bins          []BinCheck `json:"bins"`
	Damaged       int        `json:"damaged"`
}

// VerifyReportSchemaVersion versions VerifyReport's JSON. Version 2 added
// the features' check and the damaged rows.
const VerifyReportSchemaVersion = 2

// Verify checks the store in datasetDir as Open does (the dataset, the
// layout, the features' size and sampled rows, each bin file's size and
// header), then reads features.npy whole against the checksum of its rows
// the manifest records (and for a non-finite feature), then every SSD bin
// file whole against the CRC-32C of its data, naming the damaged rows by
// their own checksums. It returns the report with, when something is
// damaged, an InputError naming the first damaged file (materialize again
// to repair). A store Verify passes is one Open accepts.
func Verify(ctx context.Context, datasetDir string, opt VerifyOptions) (*VerifyReport, error) {
	log := opt.Log
	if log == nil {
		log = io.Discard
	}
	manifestPath := filepath.Join(datasetDir, ManifestFile)
	m, err := ReadManifest(datasetDir)
	if err != nil {
		return nil, err
	}
	rep := &VerifyReport{SchemaVersion: VerifyReportSchemaVersion, Manifest: manifestPath, StoreID: m.StoreID}
	// The store must still be of this dataset, layout and features, as
	// Open requires; then the features are read whole for their checksum.
	_, src, err := checkDataset(datasetDir, m)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "verify: reading %s (%.1f MiB)\n", src.path, float64(src.rows*src.rowB)/(1<<20))
	content := &contentCheck{path: src.path, rowB: src.rowB}
	done := progressFunc(opt.Progress).phase("verify features", src.rows*src.rowB)
	err = src.scan(ctx, func(first int64, data []byte) error {
		done(int64(len(data)))
		return content.add(first, data)
	})
	src.f.Close()
	if ctx.Err() != nil {
		return nil, fmt.Errorf("verify: %w", ctx.Err())
	}
	rep.Features = FileCheck{Path: src.path, Bytes: src.size, OK: err == nil}
	if err == nil && content.crc != m.FeaturesCRC32C {
		err = featuresChanged(src.path, content.crc, m.FeaturesCRC32C)
		rep.Features.OK = false
	}
	if err != nil {
		rep.Features.Problem = err.Error()
		fmt.Fprintf(log, "verify: %v\n", err)
		return rep, err
	}
	var total int64
	for _, b := range m.Bins {
		if b.Kind == tier.SSD {
			total += b.FileBytes
		}
	}
	fmt.Fprintf(log, "verify: reading %d SSD bin files (%.1f MiB) of %s\n", countSSD(m), float64(total)/(1<<20), manifestPath)
	done = progressFunc(opt.Progress).phase("verify", total)
	var first error
	for i, b := range m.Bins {
		if b.Kind != tier.SSD {
			continue
		}
		c := BinCheck{ID: b.ID, FileCheck: FileCheck{Path: b.Path, Bytes: b.FileBytes}}
		err := verifyBin(ctx, m, i, done, &c.DamagedRows, &c.FirstDamagedRow)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("verify: %w", ctx.Err())
		}
		c.OK = err == nil
		if err != nil {
			c.Problem = err.Error()
			rep.Damaged++
			if first == nil {
				first = err
			}
			fmt.Fprintf(log, "verify: %v\n", err)
		}
		rep.Bins = append(rep.Bins, c)
	}
	if first != nil {
		return rep, &inputerr.Error{Msg: fmt.Sprintf("%d of %d SSD bin files damaged, the first: %v", rep.Damaged, len(rep.Bins), first)}
	}
	return rep, nil
}

// verifyBin checks bin i's header and reads its rows for their checksum;
// it sets rows and firstRow when it finds damaged rows.
func verifyBin(ctx context.Context, m *Manifest, i int, done func(int64), rows, firstRow *int64) error {
	b := m.Bins[i]
	f, err := fsutil.OpenRegular(b.Path)
	if err != nil {
		return binError(m, i, "cannot read its file", err)
	}
	defer f.Close()
	if err := checkOpenBin(m, i, f); err != nil {
		return err
	}
	done(HeaderBytes)
	c, err := dataCRC(ctx, f, b.FileBytes, done)
	unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		return binError(m, i, "cannot read its rows", err)
	}
	if c != b.CRC32C {
		msg := fmt.Sprintf("data damaged: its CRC-32C is %08x, the manifest records %08x", c, b.CRC32C)
		switch n, first, err := damagedRows(ctx, f, b); {
		case err != nil:
			msg += "; " + err.Error()
		case n == 1:
			msg += fmt.Sprintf("; row %d damaged", first)
			*rows, *firstRow = n, first
		case n > 1:
			msg += fmt.Sprintf("; %d rows damaged, the first row %d", n, first)
			*rows, *firstRow = n, first
		default:
			msg += "; every row matches its checksum: the padding is damaged"
		}
		return binError(m, i, msg+"; materialize again", nil)
	}
	return nil
}

// damagedRows counts the rows of bin b (file f) that do not match their
// checksums and finds the first.
func damagedRows(ctx context.Context, f io.ReaderAt, b BinFile) (n, first int64, err error) {
	t, err := readRowCRCs(f, b.Rows, b.StrideBytes, b.RowCRCsCRC32C)
	if err != nil {
		return 0, 0, err
	}
	first = -1
	per := max(1, chunkBytes/b.StrideBytes)
	buf := make([]byte, min(per, b.Rows)*b.StrideBytes)
	for r := int64(0); r < b.Rows; r += per {
		if err := ctx.Err(); err != nil {
			return 0, 0, err
		}
		k := min(per, b.Rows-r)
		if _, err := f.ReadAt(buf[:k*b.StrideBytes], HeaderBytes+r*b.StrideBytes); err != nil {
			return 0, 0, fmt.Errorf("read its rows: %w", err)
		}
		for j := range k {
			if rowCRC(buf[j*b.StrideBytes:j*b.StrideBytes+b.RowBytes]) != t[r+j] {
				if n == 0 {
					first = r + j
				}
				n++
			}
		}
	}
	return n, first, nil
}

// sameHeader reports whether the file at path already is bin i of m (size,
// header with any checksums, rows matching the data checksum and a table
// of row checksums matching its own), which Materialize then keeps; it
// returns the two checksums.
func sameHeader(ctx context.Context, m *Manifest, i int, done func(int64)) (data, rowCRCs uint32, ok bool) {
	b := m.Bins[i]
	f, err := fsutil.OpenRegular(b.Path)
	if err != nil {
		return 0, 0, false
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() || st.Size() != b.FileBytes {
		return 0, 0, false
	}
	p, err := readHeader(f)
	if err != nil {
		return 0, 0, false
	}
	got, err := parseBinHeader(p)
	want, werr := expectedHeader(m, i)
	if err != nil || werr != nil {
		return 0, 0, false
	}
	want.DataCRC32C, want.RowCRCsCRC32C = got.DataCRC32C, got.RowCRCsCRC32C
	if got != want {
		return 0, 0, false
	}
	c, err := dataCRC(ctx, f, b.FileBytes, done)
	unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
	if err != nil || c != got.DataCRC32C {
		return 0, 0, false
	}
	if _, err := readRowCRCs(f, b.Rows, b.StrideBytes, got.RowCRCsCRC32C); err != nil {
		return 0, 0, false
	}
	return c, got.RowCRCsCRC32C, true
}

// rowCRCsOffset is where the table of row checksums of a bin file of rows
// at stride starts: after the rows, on a FileAlignBytes boundary. Entry r
// (4 bytes, little-endian) is rowCRC of row r.
func rowCRCsOffset(rows, stride int64) int64 {
	return HeaderBytes + roundUp(rows*stride, FileAlignBytes)
}

// rowCRC is what the table of row checksums records for a row: the
// CRC-32C of its bytes (the row, not the stride's padding).
func rowCRC(row []byte) uint32 { return crc32.Checksum(row, castagnoli()) }

// rowCRCsCRC is the CRC-32C of a table of row checksums as it lies in the
// file (little-endian, without the padding after it).
func rowCRCsCRC(t []uint32) uint32 { return updateCRCUint32s(0, t) }

// updateCRCUint32s is crc32.Update over t as little-endian bytes.
func updateCRCUint32s(c uint32, t []uint32) uint32 {
	buf := make([]byte, 4*min(len(t), 1<<14))
	for len(t) > 0 {
		n := min(len(t), len(buf)/4)
		for j, x := range t[:n] {
			binary.LittleEndian.PutUint32(buf[4*j:], x)
		}
		c = crc32.Update(c, castagnoli(), buf[:4*n])
		t = t[n:]
	}
	return c
}

// featuresChanged is the error for a features.npy whose rows' CRC-32C,
// got, is not the one the store was cut from.
func featuresChanged(path string, got, want uint32) error {
	return &inputerr.Error{Path: path, Msg: fmt.Sprintf("changed since the store was materialized (the rows' CRC-32C is %08x, the store was cut from %08x): materialize it again", got, want)}
}

// readRowCRCs reads the table of row checksums of a bin file of rows at
// stride and checks it against want, the checksum its header records.
func readRowCRCs(f io.ReaderAt, rows, stride int64, want uint32) ([]uint32, error) {
	t := make([]uint32, rows)
	buf := make([]byte, min(4*rows, chunkBytes))
	off := rowCRCsOffset(rows, stride)
	var c uint32
	for r := int64(0); r < rows; {
		n := min(int64(len(buf))/4, rows-r)
		if _, err := f.ReadAt(buf[:4*n], off+4*r); err != nil {
			return nil, fmt.Errorf("read its row checksums: %w", err)
		}
		c = crc32.Update(c, castagnoli(), buf[:4*n])
		for j := range n {
			t[r+j] = binary.LittleEndian.Uint32(buf[4*j:])
		}
		r += n
	}
	if c != want {
		return nil, fmt.Errorf("its row checksums are damaged (their CRC-32C is %08x, the header records %08x); materialize again", c, want)
	}
	return t, nil
}

// loadRowCRCs is Open's read of SSD bin i's row checksums, after checkBin.
func loadRowCRCs(m *Manifest, i int) ([]uint32, error) {
	b := m.Bins[i]
	f, err := fsutil.OpenRegular(b.Path)
	if err != nil {
		return nil, binError(m, i, "cannot read its file", err)
	}
	defer f.Close()
	t, err := readRowCRCs(f, b.Rows, b.StrideBytes, b.RowCRCsCRC32C)
	off := rowCRCsOffset(b.Rows, b.StrideBytes)
	unix.Fadvise(int(f.Fd()), off, b.FileBytes-off, unix.FADV_DONTNEED)
	if err != nil {
		return nil, binError(m, i, err.Error(), nil)
	}
	return t, nil
}

// isBinOf reports whether the file at path carries a header of the store
// with id storeID (read before removing a previous store's files).
func isBinOf(path, storeID string) bool {
	f, err := fsutil.OpenRegular(path)
	if err != nil {
		return false
	}
	defer f.Close()
	p, err := readHeader(f)
	if err != nil {
		return false
	}
	h, err := parseBinHeader(p)
	if err != nil {
		return false
	}
	id, err := hex.DecodeString(storeID)
	return err == nil && bytes.Equal(h.StoreID[:], id)
}
