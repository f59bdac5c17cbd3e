package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/gnnplan/gnnplan/ddak/layout"

	"github.com/gnnplan/gnnplan/internal/inputerr"
	"github.com/gnnplan/gnnplan/internal/tier"

	"github.com/gnnplan/gnnplan/trainer/dataset"
	"github.com/gnnplan/gnnplan/trainer/internal/gather"
	"github.com/gnnplan/gnnplan/trainer/internal/meminfo"
	"github.com/gnnplan/gnnplan/trainer/internal/rownorm"
	"github.com/gnnplan/gnnplan/trainer/ioread"
)

// DefaultQueueDepth is the SSD reads kept in flight when Options leave it
// 0: deep enough to keep an NVMe SSD's internal parallelism busy with
// small random reads, while the reader's staging buffers (one merged read
// of at most ioread.DefaultMaxMergeBytes each) stay at 16 MiB.
const DefaultQueueDepth = 128

// Options tune Open. The zero value reads with io_uring when the kernel
// has it, O_DIRECT, DefaultQueueDepth reads in flight.
type Options struct {
	// QueueDepth is how many SSD reads are in flight; it bounds the
	// reader's staging buffers (QueueDepth of them). 0 means
	// DefaultQueueDepth.
	QueueDepth int
	// Engine is the reader's engine: "auto" (or ""), "io_uring" or "pread".
	Engine string
	// Workers is the pread pool's size when that engine is used; 0 lets
	// the reader choose.
	Workers int
	// Buffered reads the SSD bin files through the page cache instead of
	// O_DIRECT. Training never should (the page cache would hold a second,
	// unplanned copy of the features); it is for file systems without
	// direct IO and for measuring what direct IO saves.
	Buffered bool
	// Cache, when set, replaces the layout's caches for experiments: see
	// CacheOverride.
	Cache *CacheOverride
	// CopyThreads is how many goroutines a Gather copies a batch's cached
	// rows on, each a share of at least 4096 rows; 0 or 1: the caller's
	// alone. A GPU's pipeline, whose step leaves the cores idle, wants
	// several; the CPU trainer's products want the cores themselves.
	CopyThreads int
	// RowNormalize serves every row scaled to unit L1 norm (the
	// trainer's RowNormalize, bit for bit): the cached rows once, as they
	// are loaded, each row read from disk as it is checked, and packed
	// rows as they are packed, so no gather scales a row again.
	RowNormalize bool

	// memAvailable stands in for meminfo.Available in tests.
	memAvailable func() (uint64, bool)
}

// CacheOverride holds the hottest Fraction of the rows in memory instead
// of the layout's cache bins: one host-memory cache of round(Fraction x
// vertices) rows, hottest first by Hotness (ties: the lower vertex id).
// Every other row is read from disk: from its SSD bin, or, for a row the
// layout kept in memory, from features.npy (O_DIRECT, widened to whole
// blocks).
type CacheOverride struct {
	Fraction float64
	Hotness  []uint32 // per vertex access counts (place's hotness.npy)
	// Random caches Fraction of the rows drawn uniformly (with Seed)
	// instead of the hottest: the baseline hottest-first is measured
	// against.
	Random bool
	Seed   uint64
}

// binSrc is where one bin's rows are: in memory (tiers other than SSD) or
// in a file, row r at base + r x stride.
type binSrc struct {
	id           string // the layout's bin id, or what an override added
	name         string // for messages: the bin's id and file
	tier         servedFrom
	rows         int64
	socket       int
	file         int // index among the reader's files; -1: none
	path         string
	base, stride int64
	// crcs[r] is row r's CRC-32C, which every read of it is checked
	// against (SSD bins and the override's features.npy rows).
	crcs []uint32
	// blocks is how many FileAlignBytes blocks the file spans up to the
	// end of its last row (at least 1).
	blocks int64
}

// servedFrom is where a bin's rows are served from.
type servedFrom uint8

const (
	tierWorker servedFrom = iota // the worker-local cache: GPU bins (in host memory when there is no GPU)
	tierSocket                   // a socket's CPU cache: host-memory bins
	tierSSD                      // an SSD bin file
)

// Store serves feature rows from the tiers a layout put them in. Gather
// is safe for concurrent use; the SSD reads of concurrent batches take
// turns on the one reader, whose queue is what bounds the IO memory.
type Store struct {
	m        *Manifest
	dir      string // the dataset directory
	dim      int
	rowBytes int64
	bin      []uint8  // per vertex: index into bins
	row      []uint32 // per vertex: row within its bin
	bins     []binSrc // the manifest's bins, then any CacheOverride adds
	caches   [][]float32
	paths    []string
	// copyThreads is Options.CopyThreads: how many goroutines copy a
	// batch's cached rows.
	copyThreads int
	// rowNormalize is Options.RowNormalize.
	rowNormalize bool
	cached       float64 // share of the rows held in memory

	mu     sync.Mutex // guards reader and the scratch below
	reader *ioread.Reader
	// readSSD's scratch: the requests, the checksum each request's row
	// must have, the piece each is read in, and both in piece order.
	reqs       []ioread.Request
	want       []uint32
	chunk      []uint8
	sorted     []ioread.Request
	sortedWant []uint32
}

// GatherStats describe one Gather (or, added up, many).
type GatherStats = gather.Stats

// Open opens the feature store of datasetDir (its store.json, written by
// Materialize): it checks that the layout (by checksum), features.npy and
// the SSD bin files are those the manifest describes, each bin file by its
// size and its header block (this store's id, this bin's index and id and
// shape, the rows' checksum the manifest records: a file swapped with
// another, truncated, of another store or named by an edited path is
// refused, naming the file); reading every row for its checksum is
// Verify's work. It loads the cache bins' rows from
// features.npy (one sequential pass; each socket's cache first touched by
// a thread on that socket, so its pages land in that socket's memory) and
// opens the SSD bin files for direct IO.
//
// The cache bins are held in memory whole: the worker-local cache takes
// what the layout gave the GPU bins, which on a machine without a GPU is
// host memory too.
func Open(datasetDir string, opt Options) (*Store, error) {
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		// Rows are copied into the float32 matrix as they lie on disk.
		return nil, errors.New("store: feature files are little-endian; this machine is not")
	}
	m, err := ReadManifest(datasetDir)
	if err != nil {
		return nil, err
	}
	l, src, err := checkDataset(datasetDir, m)
	if err != nil {
		return nil, err
	}
	defer src.f.Close()

	s := &Store{m: m, dir: datasetDir, dim: m.FeatureDim, rowBytes: m.RowBytes, bin: l.Bin, row: l.Row, copyThreads: opt.CopyThreads,
		rowNormalize: opt.RowNormalize}
	var inMemory int64
	for i, b := range m.Bins {
		bs := binSrc{id: b.ID, name: fmt.Sprintf("bin %d (%s)", i, b.ID), rows: b.Rows, socket: b.Socket, file: -1}
		switch b.Kind {
		case tier.GPUMem:
			bs.tier = tierWorker
		case tier.HostMem:
			bs.tier = tierSocket
		case tier.SSD:
			bs.tier = tierSSD
			bs.name = fmt.Sprintf("bin %d (%s, %s)", i, b.ID, b.Path)
			bs.path, bs.base, bs.stride = b.Path, HeaderBytes, b.StrideBytes
			if err := checkBin(m, i); err != nil {
				return nil, err
			}
			if b.Rows > 0 {
				if bs.crcs, err = loadRowCRCs(m, i); err != nil {
					return nil, err
				}
			}
		}
		if bs.tier != tierSSD {
			inMemory += b.Rows
		}
		s.bins = append(s.bins, bs)
	}
	s.cached = float64(inMemory) / float64(max(m.NumNodes, 1))
	if opt.Cache != nil {
		if err := s.overrideCache(*opt.Cache, src); err != nil {
			return nil, err
		}
	}
	for i := range s.bins {
		if b := &s.bins[i]; b.tier == tierSSD && b.rows > 0 { // a bin no vertex reads is not opened
			b.file = len(s.paths)
			rows := b.rows
			if i >= len(s.m.Bins) {
				rows = s.m.NumNodes // the override's features.npy rows, by vertex id
			}
			b.blocks = (b.base+rows*b.stride)/FileAlignBytes + 1
			s.paths = append(s.paths, b.path)
		}
	}
	if err := s.checkMemory(opt, filepath.Join(datasetDir, ManifestFile)); err != nil {
		return nil, err
	}
	if err := s.loadCaches(src); err != nil {
		return nil, err
	}
	if len(s.paths) > 0 {
		qd := opt.QueueDepth
		if qd == 0 {
			qd = DefaultQueueDepth
		}
		s.reader, err = ioread.Open(s.paths, ioread.Options{QueueDepth: qd, Direct: !opt.Buffered, Engine: opt.Engine, Workers: opt.Workers})
		if err != nil {
			return nil, fmt.Errorf("store: open SSD bin files: %w", err)
		}
	}
	return s, nil
}

// checkMemory refuses, before the caches are filled, a store whose caches
// and row checksums would not fit this machine's available memory
// (keeping a tenth free), with a line saying what they need; the row
// checksums of the SSD bins are already loaded and counted as available.
// Where /proc/meminfo cannot be read it does not check.
func (s *Store) checkMemory(opt Options, manifestPath string) error {
	avail := meminfo.Available
	if opt.memAvailable != nil {
		avail = opt.memAvailable
	}
	have, ok := avail()
	if !ok {
		return nil
	}
	var rows, need float64
	for _, b := range s.bins {
		switch {
		case b.tier != tierSSD:
			rows += float64(b.rows)
			need += float64(b.rows) * float64(s.rowBytes)
		case b.crcs == nil && b.rows > 0: // the override's features.npy rows
			need += 4 * float64(s.m.NumNodes)
		}
	}
	if need <= float64(have-have/10) {
		return nil
	}
	gib := func(b float64) float64 { return b / (1 << 30) }
	return &inputerr.Error{Path: manifestPath, Msg: fmt.Sprintf("the store's caches hold %.0f rows of %d bytes: they need about %.1f GiB, and this machine has %.1f GiB available (place with smaller caches, or train with a smaller --cache-fraction)",
		rows, s.rowBytes, gib(need), gib(float64(have)))}
}

// checkDataset checks what the store of m was cut from against what
// datasetDir now holds, as Open and Verify both must: the dataset's shape,
// the layout (by checksum), features.npy's size and sampled rows. It
// returns the layout and features.npy opened; the caller closes it.
func checkDataset(datasetDir string, m *Manifest) (*layout.Layout, *features, error) {
	manifestPath := filepath.Join(datasetDir, ManifestFile)
	stale := func(what string) error {
		return &inputerr.Error{Path: manifestPath, Msg: what + " since the store was materialized: materialize it again"}
	}
	meta, err := dataset.ReadMeta(datasetDir)
	if err != nil {
		return nil, nil, err
	}
	if meta.NumNodes != m.NumNodes || meta.FeatureDim != m.FeatureDim {
		return nil, nil, stale(fmt.Sprintf("the dataset changed (%d x %d features, the store has %d x %d)", meta.NumNodes, meta.FeatureDim, m.NumNodes, m.FeatureDim))
	}
	layoutDir := resolve(datasetDir, m.LayoutDir)
	l, bins, err := layout.Read(layoutDir)
	if err != nil {
		return nil, nil, err
	}
	if int64(len(l.Bin)) != m.NumNodes || len(bins) != len(m.Bins) || layoutCRC(l) != m.LayoutCRC32C {
		return nil, nil, stale("the layout in " + layoutDir + " changed")
	}
	for i, b := range bins {
		if b.ID != m.Bins[i].ID || b.Kind != m.Bins[i].Kind || l.Stats[i].Rows != m.Bins[i].Rows {
			return nil, nil, stale("the layout in " + layoutDir + " changed")
		}
	}
	src, err := openFeatures(datasetDir, meta)
	if err != nil {
		return nil, nil, err
	}
	// Size only, not the modification time Materialize also keeps: a
	// copied dataset gets new times but keeps its rows.
	if src.size != m.FeaturesBytes {
		src.f.Close()
		return nil, nil, stale(fmt.Sprintf("%s changed (%d bytes, the store was cut from %d)", src.path, src.size, m.FeaturesBytes))
	}
	if crc, err := src.sampleCRC(); err != nil {
		src.f.Close()
		return nil, nil, err
	} else if crc != m.FeaturesSampleCRC32C {
		src.f.Close()
		return nil, nil, stale(fmt.Sprintf("%s changed (its sampled rows differ from those the store was cut from)", src.path))
	}
	return l, src, nil
}

// loadCaches fills the cache bins from features.npy in one pass, and
// takes the checksums of the rows a cache override reads from it. The
// pass reads every row, so it checks the whole file against the
// checksum Materialize recorded as well.
func (s *Store) loadCaches(src *features) error {
	views := make([][]byte, len(s.bins))
	s.caches = make([][]float32, len(s.bins))
	have := false
	npy := -1
	for i, b := range s.bins {
		if b.rows == 0 {
			continue
		}
		if b.tier == tierSSD {
			if b.crcs == nil {
				// Read from features.npy by vertex id (the override).
				s.bins[i].crcs = make([]uint32, s.m.NumNodes)
				npy, have = i, true
			}
			continue
		}
		s.caches[i] = make([]float32, b.rows*int64(s.dim))
		views[i] = floatBytes(s.caches[i])
		if b.tier == tierSocket {
			touchOnNode(views[i], b.socket)
		}
		have = true
	}
	if !have {
		return nil
	}
	rb := s.rowBytes
	var all uint32
	err := src.scan(context.Background(), func(first int64, data []byte) error {
		all = crc32.Update(all, castagnoli(), data)
		for j := int64(0); j*rb < int64(len(data)); j++ {
			v := first + j
			b := int(s.bin[v])
			if b == npy {
				s.bins[b].crcs[v] = rowCRC(data[j*rb : (j+1)*rb])
				continue
			}
			if c := views[b]; c != nil {
				row := data[j*rb : (j+1)*rb]
				// Cached rows are checked as memory mode checks them: a
				// non-finite feature would train to NaN.
				if col := nonFinite(row); col >= 0 {
					x := math.Float32frombits(binary.LittleEndian.Uint32(row[4*col:]))
					return &inputerr.Error{Path: src.path, Msg: fmt.Sprintf("row %d column %d is %v (features must be finite)", v, col, x)}
				}
				at := int64(s.row[v]) * rb
				copy(c[at:], row)
				if s.rowNormalize {
					cached := s.caches[b][at/4 : (at+rb)/4]
					rownorm.Row(cached, cached)
				}
			}
		}
		return nil
	})
	if err == nil && all != s.m.FeaturesCRC32C {
		err = featuresChanged(src.path, all, s.m.FeaturesCRC32C)
	}
	return err
}

// nonFinite returns the first column of a little-endian float32 row that
// is NaN or infinite, or -1.
func nonFinite(row []byte) int {
	for i := 0; i+4 <= len(row); i += 4 {
		if binary.LittleEndian.Uint32(row[i:])&0x7f800000 == 0x7f800000 {
			return i / 4
		}
	}
	return -1
}

// meta is the dataset's meta.json.
func (s *Store) meta() (dataset.Meta, error) { return dataset.ReadMeta(s.dir) }

// Dim is the feature dimension: Gather writes Dim floats per vertex.
func (s *Store) Dim() int { return s.dim }

// RowNormalized says the store serves its rows scaled to unit L1 norm
// (Options.RowNormalize).
func (s *Store) RowNormalized() bool { return s.rowNormalize }

// Manifest is the store's manifest (not to be modified).
func (s *Store) Manifest() *Manifest { return s.m }

// Engine is the SSD reader's engine ("io_uring" or "pread"), "" when the
// layout has no SSD rows.
func (s *Store) Engine() string {
	if s.reader == nil {
		return ""
	}
	return s.reader.Engine()
}

// Notes is what the SSD reader chose and why (a fallback to pread, files
// read without O_DIRECT), "" when all went as asked.
func (s *Store) Notes() string {
	if s.reader == nil {
		return ""
	}
	return s.reader.Notes()
}

// Close releases the reader and the caches. It must not race a Gather.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.caches = nil
	if s.reader == nil {
		return nil
	}
	err := s.reader.Close()
	s.reader = nil
	return err
}

// Gather writes the feature rows of vertices into dst, row i of the
// row-major matrix (len(vertices) x Dim) for vertices[i]; duplicates are
// allowed. Cache rows are copied from memory; SSD rows are read with one
// reader call for the batch, which sorts them by file and offset and merges
// rows sharing a device block.
// On error dst holds no promise: rows may be partly written.
func (s *Store) Gather(ctx context.Context, vertices []int32, dst []float32) (GatherStats, error) {
	_, st, err := s.gather(ctx, vertices, dst, -1, nil)
	return st, err
}

// InMemorySet is the vertices whose rows the store holds in memory, as a
// bitmap: bit v%64 of word v/64.
func (s *Store) InMemorySet() []uint64 {
	set := make([]uint64, (s.m.NumNodes+63)/64)
	for v := range s.m.NumNodes {
		if s.InMemory(int32(v)) {
			set[v/64] |= 1 << (v % 64)
		}
	}
	return set
}

// WorkerBins lists the worker-local (GPU) cache bins, as indices into
// BinIDs, in the layout's order: the bins a GPU worker can hold resident
// in its own memory.
func (s *Store) WorkerBins() []int {
	var out []int
	for i, b := range s.bins {
		if b.tier == tierWorker && b.rows > 0 {
			out = append(out, i)
		}
	}
	return out
}

// BinData returns worker bin b's rows (row r at r x Dim), for a worker to
// copy to its device; it is the store's own memory, not to be modified.
func (s *Store) BinData(b int) ([]float32, error) {
	if b < 0 || b >= len(s.bins) || s.bins[b].tier != tierWorker || s.caches == nil {
		return nil, fmt.Errorf("bin data: bin %d is not a worker cache bin of this open store (worker bins: %v)", b, s.WorkerBins())
	}
	return s.caches[b], nil
}

// GatherResident is Gather for a worker that holds worker bin resident in
// its device's memory: that bin's rows are not copied; idx[i] is -1-r for
// a batch row that is row r of the resident bin, else the row of dst the
// batch row was written to. Those rows are packed in batch order, and n
// is how many there are. dst and idx must hold a row for every vertex.
func (s *Store) GatherResident(ctx context.Context, vertices []int32, dst []float32, resident int, idx []int32) (n int, st GatherStats, err error) {
	if resident < 0 || resident >= len(s.bins) || s.bins[resident].tier != tierWorker {
		return 0, GatherStats{}, fmt.Errorf("gather: bin %d is not a worker cache bin (worker bins: %v)", resident, s.WorkerBins())
	}
	if len(idx) < len(vertices) {
		return 0, GatherStats{}, fmt.Errorf("gather: idx holds %d entries for %d rows", len(idx), len(vertices))
	}
	return s.gather(ctx, vertices, dst, resident, idx)
}

// gather serves vertices: every row into its place in dst, or, with a
// resident bin, the others packed (see GatherResident).
func (s *Store) gather(ctx context.Context, vertices []int32, dst []float32, resident int, idx []int32) (int, GatherStats, error) {
	start := time.Now()
	st := GatherStats{Rows: len(vertices), Bytes: int64(len(vertices)) * s.rowBytes}
	dim := s.dim
	if len(dst) < len(vertices)*dim {
		return 0, st, fmt.Errorf("gather: dst holds %d floats, %d rows of %d need %d", len(dst), len(vertices), dim, len(vertices)*dim)
	}
	caches := s.caches
	if caches == nil {
		return 0, st, errors.New("gather: the store is closed")
	}
	// The SSD rows, in batch order, and where each goes; the cache rows
	// are copied on the way.
	n, ssd, slots, err := s.serve(caches, vertices, dst, resident, idx, &st)
	if err != nil {
		return 0, st, err
	}
	st.SSDRows = len(ssd)
	if len(ssd) > 0 {
		t := time.Now()
		rs, check, wait, err := s.readSSD(ctx, vertices, ssd, slots, dst)
		st.ReadSeconds = time.Since(t).Seconds()
		st.UsefulBytes, st.DeviceBytes, st.DeviceReads = rs.UsefulBytes, rs.DeviceBytes, rs.DeviceReads
		st.CheckSeconds, st.CheckWaitSeconds = check, wait
		if err != nil {
			st.Seconds = time.Since(start).Seconds()
			return n, st, err
		}
	}
	st.Seconds = time.Since(start).Seconds()
	return n, st, nil
}

// readSSD reads the batch rows ssd (indices into vertices) straight into
// rows slots of dst, and checks each against its checksum; check is the
// seconds the checks took, on their own goroutines, and wait the seconds
// spent waiting for them after the last read.
//
// The rows are read in up to maxCheckChunks pieces, each a range of the
// files' blocks, and each piece is checked on a goroutine of its own while
// the next is read, so that the checks overlap the disk's work instead of
// following it; rows that share a block stay in one piece and are still
// read once.
func (s *Store) readSSD(ctx context.Context, vertices []int32, ssd, slots []int, dst []float32) (_ ioread.Stats, check, wait float64, _ error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reader == nil {
		return ioread.Stats{}, 0, 0, errors.New("gather: the store is closed")
	}
	dim, rb := s.dim, int(s.rowBytes)
	k := min(maxCheckChunks, max(1, len(ssd)/minCheckChunkRows))
	reqs, want, chunk := s.reqs[:0], s.want[:0], s.chunk[:0]
	var count [maxCheckChunks + 1]int
	for n, i := range ssd {
		v := vertices[i]
		b := &s.bins[s.bin[v]]
		j := slots[n]
		r := s.row[v]
		off := b.base + int64(r)*b.stride
		reqs = append(reqs, ioread.Request{File: b.file, Offset: off, Length: rb,
			Dst: floatBytes(dst[j*dim : (j+1)*dim]), Tag: uint64(i)})
		// Taken here, where the row's location is already at hand: the
		// independent lookups overlap, where the check loop would wait
		// on each.
		want = append(want, b.crcs[r])
		c := uint8(min(off/FileAlignBytes*int64(k)/b.blocks, int64(k-1)))
		chunk = append(chunk, c)
		count[c+1]++
	}
	s.reqs, s.want, s.chunk = reqs[:0], want[:0], chunk[:0]
	defer clear(reqs) // the requests point into dst: do not keep it alive
	if k > 1 {
		// A counting sort of the requests into their pieces, order kept
		// within each.
		for c := 1; c <= k; c++ {
			count[c] += count[c-1]
		}
		sorted, sortedWant := slices.Grow(s.sorted[:0], len(reqs))[:len(reqs)], slices.Grow(s.sortedWant[:0], len(want))[:len(want)]
		pos := count
		for n, c := range chunk {
			sorted[pos[c]], sortedWant[pos[c]] = reqs[n], want[n]
			pos[c]++
		}
		s.sorted, s.sortedWant = sorted[:0], sortedWant[:0]
		defer clear(sorted)
		reqs, want = sorted, sortedWant
	} else {
		count[1] = len(reqs)
	}

	var rs ioread.Stats
	var wg sync.WaitGroup
	var errs [maxCheckChunks]error
	var secs [maxCheckChunks]float64
	defer wg.Wait() // no check outlives the call, whatever it returns
	for c := range k {
		lo, hi := count[c], count[c+1]
		if lo == hi {
			continue
		}
		st, err := s.reader.Read(ctx, reqs[lo:hi])
		rs.Add(st)
		if err != nil {
			return rs, 0, 0, s.readError(err, vertices, ssd)
		}
		// Every row is checked against the checksum taken when it was
		// written before it reaches a kernel.
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.Now()
			for n, q := range reqs[lo:hi] {
				if got := rowCRC(q.Dst[:rb]); got != want[lo+n] {
					v := vertices[q.Tag]
					errs[c] = s.damagedRow(int(s.bin[v]), v, got)
					break
				}
				if s.rowNormalize {
					row := unsafe.Slice((*float32)(unsafe.Pointer(&q.Dst[0])), dim)
					rownorm.Row(row, row)
				}
			}
			secs[c] = time.Since(t).Seconds()
		}()
	}
	t := time.Now()
	wg.Wait()
	wait = time.Since(t).Seconds()
	for c := range k {
		check += secs[c]
	}
	for _, err := range errs {
		if err != nil {
			return rs, check, wait, err
		}
	}
	return rs, check, wait, nil
}

// The pieces readSSD cuts a batch's reads into: at most maxCheckChunks,
// each of at least minCheckChunkRows rows, so that the disk's queue is
// refilled many times within each.
const (
	maxCheckChunks    = 8
	minCheckChunkRows = 1024
)

// damagedRow is the error for vertex v's row in bin i, whose bytes as read
// have checksum got instead of the one recorded.
func (s *Store) damagedRow(i int, v int32, got uint32) error {
	b := &s.bins[i]
	r := s.row[v]
	if i >= len(s.m.Bins) { // the cache override's rows of features.npy
		return &inputerr.Error{Path: b.path, Msg: fmt.Sprintf("row %d (vertex %d) read back differs from when the store was opened: its CRC-32C is %08x, it was %08x; the file changed or the disk returned wrong bytes",
			r, v, got, b.crcs[r])}
	}
	return binError(s.m, i, fmt.Sprintf("row %d (vertex %d) read back damaged: its CRC-32C is %08x, the store recorded %08x; run gnnplan materialize --verify, then materialize again",
		r, v, got, b.crcs[r]), nil)
}

// readError says which bin, row and vertex a failed read was for, and
// names the file behind it when it no longer is what the manifest says
// (truncated or replaced since Open), so the message points at the file
// to fix.
func (s *Store) readError(err error, vertices []int32, ssd []int) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("gather: %w", err)
	}
	where := "read SSD bins " + strings.Join(s.paths, ", ")
	var re *ioread.ReadError
	if errors.As(err, &re) {
		// The failed span may hold several rows (merged reads): name the
		// first of the batch's rows in it.
		for _, i := range ssd {
			v := vertices[i]
			b := &s.bins[s.bin[v]]
			off := b.base + int64(s.row[v])*b.stride
			if b.path == re.Path && off+s.rowBytes > re.Offset && off < re.Offset+int64(max(re.Length, 1)) {
				where = fmt.Sprintf("%s, row %d (vertex %d)", b.name, s.row[v], v)
				break
			}
		}
	}
	for i, b := range s.m.Bins {
		if b.Kind == tier.SSD && b.Rows > 0 {
			if ferr := checkBin(s.m, i); ferr != nil {
				return fmt.Errorf("gather: %s: %w (read: %w)", where, ferr, err)
			}
		}
	}
	return fmt.Errorf("gather: %s: %w", where, err)
}

// floatBytes views f's memory as bytes: the rows on disk are
// little-endian float32, as f is in memory (Open checks the byte order).
func floatBytes(f []float32) []byte {
	if len(f) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(f))), 4*len(f))
}

// BinIDs names the bins GatherStats.BinRows counts: the layout's bins,
// then, with a cache override, "cache-override" and "features.npy" (the
// rows the layout kept in memory, read from disk).
func (s *Store) BinIDs() []string {
	ids := make([]string, len(s.bins))
	for i, b := range s.bins {
		ids[i] = b.id
	}
	return ids
}

// InMemory reports whether the store serves vertex v's row from memory
// (a cache bin) rather than from disk.
func (s *Store) InMemory(v int32) bool { return s.bins[s.bin[v]].tier != tierSSD }

// HitShare is the share of row reads the store serves from memory when
// vertex v is read hot[v] times (place's hotness.npy): the cache hit rate
// the measured access pattern gives. It is 1 when hot counts nothing.
func (s *Store) HitShare(hot []uint32) (float64, error) {
	if int64(len(hot)) != s.m.NumNodes {
		return 0, fmt.Errorf("hit share: %d counts for %d vertices", len(hot), s.m.NumNodes)
	}
	var all, mem uint64
	for v, h := range hot {
		all += uint64(h)
		if s.InMemory(int32(v)) {
			mem += uint64(h)
		}
	}
	if all == 0 {
		return 1, nil
	}
	return float64(mem) / float64(all), nil
}

// ReadRate is what MeasureReads measured.
type ReadRate struct {
	RowsPerS float64 `json:"rows_per_s"`
	Rows     int     `json:"rows"`
	Seconds  float64 `json:"seconds"`
	Reads    int     `json:"device_reads"`
	// CPUSecondsPerRow is the reading thread's CPU time per row read
	// (user and system: submission, completion and copies; the process's
	// with the pread pool): what reading takes from the cores the training
	// step runs on. 0 where it cannot be read.
	CPUSecondsPerRow float64 `json:"cpu_s_per_row"`
	// CheckSecondsPerRow is, for packed pieces (Packed.MeasureReads), the
	// wall time checking a row and copying it into place took, apart from
	// its read: RowsPerS is then the reads' own rate. 0 for the SSD bins,
	// whose rate includes their checks.
	CheckSecondsPerRow float64 `json:"check_s_per_row,omitempty"`
	// StageSecondsPerRow is, for packed parts (Packed.MeasureParts), a
	// macro-batch's wall time a row: its reads and checks as they
	// overlapped.
	StageSecondsPerRow float64 `json:"stage_s_per_row,omitempty"`
}

// MeasureReads reads the disk-resident rows of batches, one call per
// batch through the store's reader as Gather reads a batch, cycling over
// batches until about d has passed (at least one batch), and returns the
// rate. Reading the training's own batches keeps its access pattern: hot
// rows recur as often as they will in training, and each call sorts and
// merges its rows as a gather does. With no row on disk it returns a zero
// rate.
func (s *Store) MeasureReads(ctx context.Context, d time.Duration, batches [][]int32) (ReadRate, error) {
	var lists [][]int32
	for _, b := range batches {
		var on []int32
		for _, v := range b {
			if v >= 0 && int64(v) < s.m.NumNodes && !s.InMemory(v) {
				on = append(on, v)
			}
		}
		if len(on) > 0 {
			lists = append(lists, on)
		}
	}
	var rr ReadRate
	if len(lists) == 0 {
		return rr, nil
	}
	var dst []float32
	var ssd []int
	// io_uring submits and reaps on the calling thread: pin it and count
	// that thread's CPU time, not the process's (BLAS threads still
	// spinning after the probe's last GEMM, the collector). The pread
	// pool reads on threads of its own: count the process then.
	who := rusageProcess
	if s.Engine() == "io_uring" {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		who = rusageThread
	}
	cpu0, cpuOK := rusageSeconds(who)
	start := time.Now()
	for i := 0; i == 0 || time.Since(start) < d; i++ {
		vs := lists[i%len(lists)]
		if n := len(vs) * s.dim; cap(dst) < n {
			dst = make([]float32, n)
		}
		ssd = ssd[:0]
		for j := range vs {
			ssd = append(ssd, j)
		}
		st, _, _, err := s.readSSD(ctx, vs, ssd, ssd, dst[:len(vs)*s.dim])
		if err != nil {
			return rr, err
		}
		rr.Rows += len(vs)
		rr.Reads += st.DeviceReads
	}
	rr.finish(start, who, cpu0, cpuOK)
	return rr, nil
}

// finish sets rr's rate and CPU time per row from a measurement that
// started at start with who's CPU time at cpu0 (cpuOK: read).
func (rr *ReadRate) finish(start time.Time, who int, cpu0 float64, cpuOK bool) {
	rr.Seconds = time.Since(start).Seconds()
	rr.RowsPerS = float64(rr.Rows) / rr.Seconds
	if cpu1, ok := rusageSeconds(who); ok && cpuOK && rr.Rows > 0 {
		rr.CPUSecondsPerRow = (cpu1 - cpu0) / float64(rr.Rows)
	}
}

// getrusage's who: the process, or the calling thread (RUSAGE_THREAD).
const (
	rusageProcess = syscall.RUSAGE_SELF
	rusageThread  = 1
)

// rusageSeconds is the user plus system CPU time of who.
func rusageSeconds(who int) (float64, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		return 0, false
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime), true
}
