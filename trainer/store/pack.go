package store

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gnnplan/gnnplan/internal/fsutil"
	"github.com/gnnplan/gnnplan/internal/inputerr"
	"github.com/gnnplan/gnnplan/trainer/internal/fslock"
	"github.com/gnnplan/gnnplan/trainer/internal/meminfo"
)

// The packed batches' files (DiskGNN's packed chunks): the manifest and
// the index in the dataset directory, the pieces in the store's SSD
// directories (docs/loaders.md).
const (
	// PackedName names the packed loader's batches (packed.json,
	// packed.idx); PartsName the multistage loader's parts.
	PackedName = "packed"
	PartsName  = "parts"
	packFormat = "gnnplan-packed-1"
	packMagic  = "GNNPACK1"
	// pieceHeaderBytes starts every piece: magic, its coordinates, its
	// row count and the CRC-32C of its vertex ids and row checksums.
	pieceHeaderBytes = 64
	// packIndexEntry is one piece's index record: offset (8 bytes), rows
	// and the piece's first row within the batch's packed rows (4 each).
	packIndexEntry = 16
	// minPackMemory is the least buffer Pack works with, whatever the
	// machine's available memory says.
	minPackMemory = 64 << 20
)

// PackBatches are the batches Pack writes: the trainer's samplers'
// batches, drawn ahead of training as DiskGNN samples offline.
type PackBatches interface {
	// Workers is how many samplers there are (data-parallel workers).
	Workers() int
	// Batches is how many batches worker's epochs have.
	Batches(worker int) int
	// Inputs calls fn with the input vertices of worker's batches of
	// epoch from batch first on, in order, until fn returns false or
	// the epoch ends. input is fn's only during the call.
	Inputs(ctx context.Context, worker, epoch, first int, fn func(batch int, input []int32) bool) error
	// Sampling identifies the sampling (fanouts, batch size, seeds,
	// seed, workers): packed batches serve only the sampling that drew
	// them.
	Sampling() string
}

// PackOptions configure Pack.
type PackOptions struct {
	// Name names the set ("": PackedName): its manifest is
	// <name>.json in the dataset directory, its index <name>.idx.
	Name string
	// Epochs is how many epochs' batches to pack (at least 1); fewer
	// are packed when SpaceBytes holds fewer.
	Epochs int
	// SpaceBytes bounds the packed files' size: the epochs that fit,
	// judged by the first epoch's size; 0: no bound but the disks'.
	SpaceBytes int64
	// MemoryBytes bounds the buffers a pass over the features fills
	// (the packed pieces of a run of batches); 0: half the memory
	// available. Each pass reads features.npy once.
	MemoryBytes int64
	// Log gets a line per epoch packed (nil: none); Progress is called
	// as the batches of each epoch are packed (nil: not called).
	Log      io.Writer
	Progress func(Progress)
}

// PackManifest is packed.json: which batches are packed, for which
// store, cache and sampling, where, and what packing them cost.
type PackManifest struct {
	Format  string `json:"format"`
	Name    string `json:"name"`
	StoreID string `json:"store_id"`
	// CachedCRC32C identifies the rows held in memory (not packed):
	// the CRC-32C of the in-memory bitmap over the vertices.
	CachedCRC32C uint32 `json:"cached_crc32c"`
	Sampling     string `json:"sampling"`
	FeatureDim   int    `json:"feature_dim"`
	RowBytes     int64  `json:"row_bytes"`
	// RowNormalized says the rows were packed scaled to unit L1 norm
	// (Options.RowNormalize): they serve only a store that scales.
	RowNormalized bool `json:"row_normalized"`
	Workers       int  `json:"workers"`
	// Epochs is how many epochs are packed; a run longer than that
	// trains epoch e on the batches of epoch e mod Epochs.
	Epochs int `json:"epochs"`
	// Batches is each worker's batches per epoch.
	Batches []int `json:"batches"`
	// Dirs are the directories a batch's pieces are striped over, one
	// piece in each (the store's SSD directories).
	Dirs []string `json:"dirs"`
	// IndexCRC32C is the CRC-32C of packed.idx.
	IndexCRC32C uint32 `json:"index_crc32c"`
	// Rows and Bytes are the rows packed and the files' size;
	// FeatureBytes is features.npy's rows, so Bytes/FeatureBytes is
	// the space packing takes over the features' own.
	Rows         int64 `json:"rows"`
	Bytes        int64 `json:"bytes"`
	FeatureBytes int64 `json:"feature_bytes"`
	// Seconds is the packing's wall time; Passes how many times it read
	// features.npy; SpaceLimited says epochs were dropped to fit
	// SpaceBytes.
	Seconds      float64 `json:"pack_s"`
	Passes       int     `json:"feature_passes"`
	SpaceLimited bool    `json:"space_limited,omitempty"`
}

// validPackName says name can name files: letters, digits, dashes.
func validPackName(name string) bool {
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return name != ""
}

// PackedFile is the path of worker's epoch's pieces in directory dir
// (one of m.Dirs, by index).
func (m *PackManifest) PackedFile(worker, epoch, dir int) string {
	return filepath.Join(m.Dirs[dir], fmt.Sprintf("%s-%s-w%d-e%d.bin", m.Name, m.StoreID[:8], worker, epoch))
}

// entries is how many index records m has: one per piece.
func (m *PackManifest) entries() int {
	n := 0
	for _, b := range m.Batches {
		n += b * m.Epochs * len(m.Dirs)
	}
	return n
}

// entry is the index record of worker's batch of epoch in directory dir.
func (m *PackManifest) entry(worker, epoch, batch, dir int) int {
	n := 0
	for w := range worker {
		n += m.Batches[w] * m.Epochs
	}
	return ((n+epoch*m.Batches[worker]+batch)*len(m.Dirs) + dir) * packIndexEntry
}

// pieceLayout is where a piece's parts are, in bytes from its start.
type pieceLayout struct {
	rows                    int
	ids, crcs, data, stored int64
}

// layoutPiece lays out a piece of rows: the header, the vertex ids, the
// rows' checksums, the rows from a 64-byte boundary, the whole padded to
// FileAlignBytes so that each piece is one aligned read.
func layoutPiece(rows int, rowBytes int64) pieceLayout {
	p := pieceLayout{rows: rows, ids: pieceHeaderBytes}
	p.crcs = p.ids + 4*int64(rows)
	p.data = roundUp(p.crcs+4*int64(rows), 64)
	p.stored = roundUp(p.data+int64(rows)*rowBytes, FileAlignBytes)
	if rows == 0 {
		p.stored = 0
	}
	return p
}

// pieceHeader is a piece's first bytes.
type pieceHeader struct {
	worker, epoch, batch, dir, rows, first, dim uint32
	crc                                         uint32 // of the ids and row checksums
}

func (h pieceHeader) marshal(p []byte) {
	copy(p, packMagic)
	le := binary.LittleEndian
	for i, x := range []uint32{h.worker, h.epoch, h.batch, h.dir, h.rows, h.first, h.dim, h.crc} {
		le.PutUint32(p[8+4*i:], x)
	}
}

func parsePieceHeader(p []byte) (pieceHeader, bool) {
	if string(p[:8]) != packMagic {
		return pieceHeader{}, false
	}
	le := binary.LittleEndian
	var x [8]uint32
	for i := range x {
		x[i] = le.Uint32(p[8+4*i:])
	}
	return pieceHeader{x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7]}, true
}

// stripe is the rows of a batch's packed rows that piece dir of dirs
// holds: consecutive shares, the first ones a row longer.
func stripe(rows, dirs, dir int) (first, n int) {
	per, extra := rows/dirs, rows%dirs
	first = dir*per + min(dir, extra)
	n = per
	if dir < extra {
		n++
	}
	return first, n
}

// cachedCRC is the CRC-32C of the bitmap of the vertices s holds in
// memory: packed batches hold exactly the other rows.
func (s *Store) cachedCRC() uint32 {
	set := s.InMemorySet()
	b := make([]byte, 8*len(set))
	for i, w := range set {
		binary.LittleEndian.PutUint64(b[8*i:], w)
	}
	return crc32.Checksum(b, castagnoli())
}

// packDirs are the directories packed pieces go to: those of the store's
// SSD bin files, in order, or the dataset directory when it has none.
func (s *Store) packDirs() []string {
	var dirs []string
	for _, b := range s.bins {
		if b.tier == tierSSD && b.path != "" && b.rows > 0 {
			if d := filepath.Dir(b.path); !slices.Contains(dirs, d) {
				dirs = append(dirs, d)
			}
		}
	}
	if len(dirs) == 0 {
		dirs = []string{s.dir}
	}
	return dirs
}

// PackFreeBytes is the space packed batches can take on the disks they go
// to: the least free space of those directories times their count (the
// pieces are striped evenly over them).
func (s *Store) PackFreeBytes() (int64, error) {
	dirs := s.packDirs()
	least := int64(-1)
	for _, d := range dirs {
		var st unix.Statfs_t
		if err := unix.Statfs(d, &st); err != nil {
			return 0, fmt.Errorf("pack: free space of %s: %w", d, err)
		}
		if free := int64(st.Bavail) * st.Bsize; least < 0 || free < least {
			least = free
		}
	}
	return least * int64(len(dirs)), nil
}

// Pack samples opt.Epochs epochs of src's batches and writes each batch's
// rows that the store does not hold in memory, in the order the batch
// reads them, as one piece per directory of the store's SSD bins
// (striped, so a batch reads every disk at once): a header, the rows'
// vertex ids and checksums, the rows, aligned for direct IO (DiskGNN's
// packing). Rows are copied from features.npy in passes: each pass
// samples batches until their pieces fill opt.MemoryBytes, reads the
// features once in order and writes the pieces out sequentially (DiskGNN's
// batched packing). Each row is checked against the store's checksum of
// it. The files are written under temporary names and packed.json last:
// a packing stopped or failed leaves the previous one, or none.
func (s *Store) Pack(ctx context.Context, src PackBatches, opt PackOptions) (*PackManifest, error) {
	start := time.Now()
	if opt.Epochs < 1 {
		return nil, &inputerr.Error{Field: "pack-epochs", Msg: fmt.Sprintf("%d (want at least 1)", opt.Epochs)}
	}
	if s.caches == nil {
		return nil, errors.New("pack: the store is closed")
	}
	// One writer of a dataset's store and packed batches at a time.
	lk, err := fslock.TryLock(s.dir)
	if errors.Is(err, fslock.ErrBusy) {
		return nil, &inputerr.Error{Path: s.dir, Field: "--dataset", Msg: "its store or packed batches are being written by another gnnplan: wait for it to end"}
	}
	if err != nil {
		return nil, &inputerr.Error{Path: s.dir, Field: "--dataset", Msg: "cannot lock the dataset directory", Err: err}
	}
	defer lk.Unlock()
	if opt.Name == "" {
		opt.Name = PackedName
	}
	if !validPackName(opt.Name) {
		return nil, fmt.Errorf("pack: name %q (want letters, digits and dashes)", opt.Name)
	}
	m := &PackManifest{Format: packFormat, Name: opt.Name, StoreID: s.m.StoreID, CachedCRC32C: s.cachedCRC(), Sampling: src.Sampling(),
		FeatureDim: s.dim, RowBytes: s.rowBytes, RowNormalized: s.rowNormalize, Workers: src.Workers(), Epochs: opt.Epochs, Dirs: s.packDirs(),
		FeatureBytes: s.m.NumNodes * s.rowBytes}
	for w := range m.Workers {
		m.Batches = append(m.Batches, src.Batches(w))
	}
	p, err := s.newPacker(m, opt)
	if err != nil {
		return nil, err
	}
	defer p.close()
	for e := range opt.Epochs {
		if e > 0 && opt.SpaceBytes > 0 && m.Bytes+p.epochBytes[0] > opt.SpaceBytes {
			m.Epochs, m.SpaceLimited = e, true
			break
		}
		if err := p.packEpoch(ctx, src, e); err != nil {
			return nil, err
		}
		if e == 0 && opt.SpaceBytes > 0 && m.Bytes > opt.SpaceBytes {
			return nil, &inputerr.Error{Field: "pack-space", Msg: fmt.Sprintf("%.2f GiB holds no epoch: one epoch's packed batches take %.2f GiB (raise it, or cache more rows)",
				float64(opt.SpaceBytes)/(1<<30), float64(m.Bytes)/(1<<30))}
		}
	}
	m.Seconds = time.Since(start).Seconds()
	if err := p.commit(ctx); err != nil {
		return nil, err
	}
	return m, nil
}

// packer is one Pack's state: the manifest it fills, the features it
// reads, the files it writes and the index.
type packer struct {
	s          *Store
	m          *PackManifest
	opt        PackOptions
	feat       *features
	budget     int64
	index      []byte
	files      []*os.File // this epoch's, one per worker and directory
	tmps       []string   // every temporary file written, in order
	finals     []string   // the name each takes
	epochBytes []int64
	featBuf    []byte
	// bufs and copies are the last group's, reused.
	bufs   [][]byte
	copies []packCopy
}

func (s *Store) newPacker(m *PackManifest, opt PackOptions) (*packer, error) {
	meta, err := s.meta()
	if err != nil {
		return nil, err
	}
	feat, err := openFeatures(s.dir, meta)
	if err != nil {
		return nil, err
	}
	budget := opt.MemoryBytes
	if budget <= 0 {
		budget = minPackMemory
		if avail, ok := meminfo.Available(); ok {
			budget = max(budget, int64(avail/2))
		}
	}
	p := &packer{s: s, m: m, opt: opt, feat: feat, budget: budget, index: make([]byte, m.entries()*packIndexEntry),
		featBuf: make([]byte, max(1, chunkBytes/s.rowBytes)*s.rowBytes)}
	return p, nil
}

// close removes whatever the packing did not commit.
func (p *packer) close() {
	p.feat.f.Close()
	for _, f := range p.files {
		if f != nil {
			f.Close()
		}
	}
	for _, t := range p.tmps {
		os.Remove(t)
	}
}

// commit syncs and renames the files into place, then writes the index
// and the manifest: the last step, so that a packing cut short is none.
func (p *packer) commit(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("pack: %w", err)
	}
	m := p.m
	// Entries of epochs dropped for space are cut off the index.
	kept := make([]byte, 0, m.entries()*packIndexEntry)
	full := *m
	full.Epochs = p.opt.Epochs
	for w := range m.Workers {
		lo := full.entry(w, 0, 0, 0)
		kept = append(kept, p.index[lo:lo+m.Batches[w]*m.Epochs*len(m.Dirs)*packIndexEntry]...)
	}
	m.IndexCRC32C = crc32.Checksum(kept, castagnoli())
	for i, t := range p.tmps {
		if i >= len(p.finals) {
			os.Remove(t)
			continue
		}
		if err := os.Rename(t, p.finals[i]); err != nil {
			return fmt.Errorf("pack: %w", err)
		}
	}
	p.tmps = nil
	for _, d := range m.Dirs {
		if err := syncDir(d); err != nil {
			return fmt.Errorf("pack: %w", err)
		}
	}
	if err := fsutil.WriteFileAtomic(filepath.Join(p.s.dir, m.Name+".idx"), kept); err != nil {
		return fmt.Errorf("pack: %w", err)
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("pack: %w", err)
	}
	prev, _ := ReadPackManifest(p.s.dir, m.Name)
	if err := fsutil.WriteFileAtomic(filepath.Join(p.s.dir, m.Name+".json"), append(data, '\n')); err != nil {
		return fmt.Errorf("pack: %w", err)
	}
	if err := syncDir(p.s.dir); err != nil {
		return fmt.Errorf("pack: %w", err)
	}
	if prev != nil {
		// The previous packing's files this one did not replace.
		for _, f := range prev.files() {
			if !slices.Contains(p.finals, f) {
				os.Remove(f)
			}
		}
	}
	return nil
}

// files lists m's packed files, worker by worker, epoch by epoch.
func (m *PackManifest) files() []string {
	var out []string
	for w := range m.Workers {
		for e := range m.Epochs {
			for d := range m.Dirs {
				out = append(out, m.PackedFile(w, e, d))
			}
		}
	}
	return out
}
