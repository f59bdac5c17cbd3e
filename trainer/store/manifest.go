package store

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"

	"github.com/gnnplan/gnnplan/ddak/layout"

	"github.com/gnnplan/gnnplan/internal/inputerr"
	"github.com/gnnplan/gnnplan/internal/tier"

	"github.com/gnnplan/gnnplan/internal/fsutil"
)

// ManifestFile is the store's index, in the dataset directory.
const ManifestFile = "store.json"

// legacyJournalFile is what schema 1's Materialize kept while it ran; a
// run removes one left behind.
const legacyJournalFile = "store.partial.json"

// ManifestSchemaVersion versions store.json. Version 2 added the store id
// and the bin files' header block; version 3 the sampled checksum of the
// features' rows; version 4 a checksum per row in every bin file.
const ManifestSchemaVersion = 4

// maxFeatureDim bounds feature_dim so that a row's byte count and any
// stride stay far from overflow (a 1 GiB row).
const maxFeatureDim = 1 << 28

// Alignment of the SSD bin files.
const (
	// RowAlignBytes is the sector size rows are fitted to: a row larger
	// than it starts on a 512-byte sector (the smallest logical block of
	// NVMe and SATA devices) and a smaller row never straddles one, its
	// stride being the power of two that holds it (64-byte rows pack 8 to
	// a sector instead of taking one each). So a row never spans more
	// sectors than its size needs. The stride is not rounded up to the
	// device's direct-IO alignment (4 KiB on most SSDs): for 512-byte rows
	// that would waste 7/8 of the disk, while the reader reads the aligned
	// span around a row and merges rows that share a block, so a row
	// straddling two 4 KiB blocks costs one extra block of read
	// amplification, not an error.
	RowAlignBytes = 512
	// FileAlignBytes pads every bin file's rows to a multiple of 4 KiB, so
	// the aligned span around the last row lies within the file for any
	// direct-IO alignment up to 4 KiB.
	FileAlignBytes = 4096
)

// StrideFor is the row stride for rows of rowBytes: the smallest power of
// two that holds them, up to RowAlignBytes, and beyond it rowBytes
// rounded up to RowAlignBytes.
func StrideFor(rowBytes int64) int64 {
	if rowBytes > RowAlignBytes {
		return roundUp(rowBytes, RowAlignBytes)
	}
	s := int64(1)
	for s < rowBytes {
		s <<= 1
	}
	return s
}

// validStride reports whether stride is StrideFor some row size of at
// least rowBytes: a power of two below RowAlignBytes, or a multiple of it.
func validStride(stride, rowBytes int64) bool {
	if stride < rowBytes || stride <= 0 {
		return false
	}
	if stride < RowAlignBytes {
		return stride&(stride-1) == 0
	}
	return stride%RowAlignBytes == 0
}

// Manifest is store.json: where every bin's rows are.
type Manifest struct {
	SchemaVersion int    `json:"schema_version"`
	Dataset       string `json:"dataset"`
	NumNodes      int64  `json:"num_nodes"`
	FeatureDim    int    `json:"feature_dim"`
	RowBytes      int64  `json:"row_bytes"`
	// StoreID (32 hex digits) identifies this store: every SSD bin file's
	// header carries it, so a file of another store is refused at Open.
	// It is derived from what the rows are cut from (see storeID), so a
	// rerun over the same dataset and layout gets the same id.
	StoreID string `json:"store_id"`
	// LayoutDir is the layout the files were made from: relative to the
	// dataset directory when inside it, else absolute.
	LayoutDir string `json:"layout_dir"`
	// LayoutCRC32C is the CRC-32C of the layout's bin and row arrays, so
	// a store is never read with a layout it was not made from.
	LayoutCRC32C uint32 `json:"layout_crc32c"`
	// FeaturesBytes and FeaturesMtimeUnixNs identify the features.npy the
	// files were cut from; a rerun of Materialize keeps a bin file only
	// when both match.
	FeaturesBytes       int64 `json:"features_bytes"`
	FeaturesMtimeUnixNs int64 `json:"features_mtime_unix_ns"`
	// FeaturesSampleCRC32C is the CRC-32C of featureSampleRows rows of
	// features.npy spread over the file: checked at every Open, so a
	// features file rewritten in place at the same size is not served
	// from a store cut from the old one.
	FeaturesSampleCRC32C uint32 `json:"features_sample_crc32c"`
	// FeaturesCRC32C is the CRC-32C of all of features.npy's rows, in
	// vertex order: checked by Verify, and by every Open that reads the
	// file whole to fill its caches.
	FeaturesCRC32C uint32    `json:"features_crc32c"`
	Bins           []BinFile `json:"bins"`
}

// BinFile is one bin of the layout. Cache bins (GPU and host memory) have
// no file: Open fills them from features.npy.
type BinFile struct {
	ID     string    `json:"id"`
	Kind   tier.Kind `json:"kind"`
	Socket int       `json:"socket"`
	Rows   int64     `json:"rows"`
	// RowBytes is one row's data (feature_dim x 4).
	RowBytes int64 `json:"row_bytes"`
	// Path is the SSD bin's file (absolute): a header block of HeaderBytes
	// naming the store and the bin, then the rows, row r at
	// HeaderBytes + r x StrideBytes, then, from the next multiple of
	// FileAlignBytes, the CRC-32C of each row (4 bytes, little-endian),
	// which every read of a row is checked against.
	Path        string `json:"path,omitempty"`
	StrideBytes int64  `json:"stride_bytes,omitempty"`
	// FileBytes is the file's size: HeaderBytes, plus Rows x StrideBytes
	// and Rows x 4, each rounded up to FileAlignBytes.
	FileBytes int64 `json:"file_bytes,omitempty"`
	// CRC32C is the Castagnoli CRC of the file's data area (everything
	// after the header, padding and row checksums included);
	// RowCRCsCRC32C that of its row checksums. The header records both.
	CRC32C        uint32 `json:"crc32c,omitempty"`
	RowCRCsCRC32C uint32 `json:"row_crcs_crc32c,omitempty"`
}

// ReadManifest reads and checks datasetDir/store.json.
func ReadManifest(datasetDir string) (*Manifest, error) {
	return readManifestFile(filepath.Join(datasetDir, ManifestFile))
}

func readManifestFile(path string) (*Manifest, error) {
	data, err := fsutil.ReadRegularFile(path)
	if err != nil {
		msg := "cannot read the feature store's manifest"
		if errors.Is(err, os.ErrNotExist) {
			msg = "no feature store: materialize the layout first (gnnplan place --materialize --ssd-dir DIR)"
		}
		return nil, &inputerr.Error{Path: path, Msg: msg, Err: err}
	}
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, &inputerr.Error{Path: path, Msg: "malformed manifest", Err: err}
	}
	if m.SchemaVersion != ManifestSchemaVersion {
		msg := fmt.Sprintf("%d (want %d)", m.SchemaVersion, ManifestSchemaVersion)
		if m.SchemaVersion >= 1 && m.SchemaVersion < ManifestSchemaVersion {
			msg += ": a store written before its rows had checksums; materialize it again"
		}
		return nil, &inputerr.Error{Path: path, Field: "schema_version", Msg: msg}
	}
	if id, err := hex.DecodeString(m.StoreID); err != nil || len(id) != storeIDBytes {
		return nil, &inputerr.Error{Path: path, Field: "store_id", Msg: fmt.Sprintf("%q (want %d hex digits)", m.StoreID, 2*storeIDBytes)}
	}
	rowBytes := int64(m.FeatureDim) * 4
	if m.NumNodes <= 0 || m.NumNodes > math.MaxInt32 || m.FeatureDim <= 0 || m.FeatureDim > maxFeatureDim || m.RowBytes != rowBytes {
		return nil, &inputerr.Error{Path: path, Msg: fmt.Sprintf("num_nodes %d, feature_dim %d, row_bytes %d (want 1 to %d vertices, 1 to %d features, row_bytes = 4 x feature_dim)",
			m.NumNodes, m.FeatureDim, m.RowBytes, math.MaxInt32, maxFeatureDim)}
	}
	var rows int64
	for _, b := range m.Bins {
		if b.Rows >= 0 && b.Rows <= m.NumNodes {
			rows += b.Rows
		}
	}
	if rows != m.NumNodes {
		return nil, &inputerr.Error{Path: path, Field: "bins", Msg: fmt.Sprintf("rows of the bins add up to %d, want num_nodes (%d), each between 0 and num_nodes", rows, m.NumNodes)}
	}
	for i, b := range m.Bins {
		field := fmt.Sprintf("bins[%d]", i)
		bad := func(msg string) error {
			return &inputerr.Error{Path: path, Field: field, Msg: msg}
		}
		switch {
		case b.Rows < 0 || b.RowBytes != rowBytes:
			return nil, bad(fmt.Sprintf("rows %d, row_bytes %d (want rows >= 0, row_bytes %d)", b.Rows, b.RowBytes, rowBytes))
		case b.Kind == tier.SSD:
			if !filepath.IsAbs(b.Path) || !validStride(b.StrideBytes, rowBytes) ||
				b.FileBytes != binFileBytes(b.Rows, b.StrideBytes) || len(b.ID) > maxBinIDBytes {
				return nil, bad(fmt.Sprintf("path %q, stride_bytes %d, file_bytes %d, id of %d bytes (want an absolute path, a stride of at least %d, a power of two below %d or a multiple of it, file_bytes = %d + rows x stride and 4 x rows, each rounded up to %d, an id of at most %d bytes)",
					b.Path, b.StrideBytes, b.FileBytes, len(b.ID), rowBytes, RowAlignBytes, HeaderBytes, FileAlignBytes, maxBinIDBytes))
			}
		case b.Kind == tier.GPUMem || b.Kind == tier.HostMem:
			if b.Path != "" {
				return nil, bad(fmt.Sprintf("a %s bin with a file %q (cache bins have none)", b.Kind, b.Path))
			}
		default:
			return nil, bad(fmt.Sprintf("kind %q (valid: %s, %s, %s)", b.Kind, tier.GPUMem, tier.HostMem, tier.SSD))
		}
	}
	return &m, nil
}

// writeManifestFile writes m to path atomically.
func writeManifestFile(path string, m *Manifest) error {
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	return fsutil.WriteFileAtomic(path, append(data, '\n'))
}

// layoutCRC is the CRC-32C of a layout's bin array followed by its row
// array (little-endian), what Manifest.LayoutCRC32C records.
func layoutCRC(l *layout.Layout) uint32 {
	return updateCRCUint32s(crc32.Update(0, castagnoli(), l.Bin), l.Row)
}

// relPath is path relative to base when it lies inside base, else
// absolute, so a dataset directory moved with its layout keeps working.
func relPath(base, path string) (string, error) {
	absBase, err := filepath.Abs(base)
	if err != nil {
		return "", err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	if rel, err := filepath.Rel(absBase, abs); err == nil && filepath.IsLocal(rel) {
		return rel, nil
	}
	return abs, nil
}

// resolve is the inverse of relPath.
func resolve(base, path string) string {
	if filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(base, path)
}

// binFileBytes is the size of an SSD bin file of rows at stride.
func binFileBytes(rows, stride int64) int64 {
	return rowCRCsOffset(rows, stride) + roundUp(4*rows, FileAlignBytes)
}

func roundUp(n, align int64) int64 { return (n + align - 1) / align * align }
