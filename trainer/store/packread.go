package store

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"time"
	"unsafe"

	"github.com/gnnplan/gnnplan/internal/hugepage"
	"github.com/gnnplan/gnnplan/internal/inputerr"
	"github.com/gnnplan/gnnplan/trainer/internal/stall"
	"github.com/gnnplan/gnnplan/trainer/ioread"
)

// ErrNotPacked says a dataset has no packed batches for this store, cache
// and sampling: none were packed, or for another.
var ErrNotPacked = errors.New("no packed batches for this store, cache and sampling")

// Packed serves a batch's rows as DiskGNN's packed loader does: the rows
// the store holds in memory from there, the others from the batch's
// packed pieces, one sequential read per directory. It is safe for
// concurrent use; reads take turns, and so do the Gathers of one worker's
// batches: its reads alternate between two buffers, one being checked
// while the next batch's pieces are read into the other.
type Packed struct {
	s      *Store
	m      *PackManifest
	index  []byte
	reader *ioread.Reader

	mu    sync.Mutex     // guards reader, bufs and ahead
	bufs  [][2][]byte    // per worker: the pieces read, aligned for direct IO
	ahead []*piecesRead  // per worker: the batch read ahead (nil: none)
	turns []sync.Mutex   // per worker: held through a Gather, which uses its buffers
	reads sync.WaitGroup // reads in flight, which Close waits for
	// chunkBytes is the size of ReadParts's read calls: readChunkBytes
	// (a test cuts them smaller).
	chunkBytes int64
}

// PackedBatch names a packed batch: worker Worker's batch Batch of the
// packed epoch Epoch, each counted from 0.
type PackedBatch struct{ Worker, Epoch, Batch int }

// piecesRead is a batch's pieces being read into one of its worker's
// buffers; stats, seconds and err are set when done closes.
type piecesRead struct {
	at      PackedBatch
	slot    int // the worker's buffer it reads into
	reqs    []ioread.Request
	rows    int // the rows the index says the pieces hold
	done    chan struct{}
	stats   ioread.Stats
	seconds float64 // the read's wall time
	err     error
}

// packQueueDepth and packMergeBytes shape the packed reads: large pieces
// cut into 1 MiB device reads, 16 in flight.
const (
	packQueueDepth = 16
	packMergeBytes = 1 << 20
)

// ReadPackManifest reads datasetDir's manifest of the set name
// (<name>.json); a missing one is ErrNotPacked.
func ReadPackManifest(datasetDir, name string) (*PackManifest, error) {
	path := filepath.Join(datasetDir, name+".json")
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", path, ErrNotPacked)
	}
	if err != nil {
		return nil, &inputerr.Error{Path: path, Msg: "cannot read", Err: err}
	}
	var m PackManifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, &inputerr.Error{Path: path, Msg: "not a packed-batches manifest", Err: err}
	}
	bad := func(msg string) error {
		return &inputerr.Error{Path: path, Msg: msg + repackHint(name)}
	}
	switch {
	case m.Format != packFormat || m.Name != name:
		return nil, bad(fmt.Sprintf("format %q of set %q (want %q of %q)", m.Format, m.Name, packFormat, name))
	case m.Workers < 1 || len(m.Batches) != m.Workers || m.Epochs < 1 || len(m.Dirs) < 1 || len(m.StoreID) < 8:
		return nil, bad(fmt.Sprintf("%d workers, %d batch counts, %d epochs, %d directories", m.Workers, len(m.Batches), m.Epochs, len(m.Dirs)))
	}
	return &m, nil
}

// repackHint says how to write set name again.
func repackHint(name string) string {
	loader := "packed"
	if name == PartsName {
		loader = "multistage"
	}
	return fmt.Sprintf(" (pack again: gnnplan train --loader %s --repack)", loader)
}

// OpenPacked opens the dataset's set name of packed batches for sampling (what
// PackBatches.Sampling says): ErrNotPacked, wrapped with the reason, when
// there are none or they were packed for another store, cache or
// sampling; an error naming the file when a file is damaged.
func (s *Store) OpenPacked(name, sampling string) (*Packed, error) {
	m, err := ReadPackManifest(s.dir, name)
	if err != nil {
		return nil, err
	}
	switch {
	case m.StoreID != s.m.StoreID:
		return nil, fmt.Errorf("packed for store %s, this one is %s: %w", m.StoreID, s.m.StoreID, ErrNotPacked)
	case m.CachedCRC32C != s.cachedCRC():
		return nil, fmt.Errorf("packed with other rows in memory than this store's cache: %w", ErrNotPacked)
	case m.Sampling != sampling:
		return nil, fmt.Errorf("packed for sampling %q, this run samples %q: %w", m.Sampling, sampling, ErrNotPacked)
	case m.FeatureDim != s.dim || m.RowBytes != s.rowBytes:
		return nil, fmt.Errorf("packed rows of %d features, the store's have %d: %w", m.FeatureDim, s.dim, ErrNotPacked)
	case m.RowNormalized != s.rowNormalize:
		return nil, fmt.Errorf("packed with rows scaled %v, this run scales them %v: %w", onOff(m.RowNormalized), onOff(s.rowNormalize), ErrNotPacked)
	}
	ipath := filepath.Join(s.dir, name+".idx")
	index, err := os.ReadFile(ipath)
	if err != nil {
		return nil, &inputerr.Error{Path: ipath, Msg: "cannot read the packed batches' index" + repackHint(name), Err: err}
	}
	if len(index) != m.entries()*packIndexEntry || crc32.Checksum(index, castagnoli()) != m.IndexCRC32C {
		return nil, &inputerr.Error{Path: ipath, Msg: fmt.Sprintf("%d bytes, checksum %08x: not the index %s.json describes%s",
			len(index), crc32.Checksum(index, castagnoli()), name, repackHint(name))}
	}
	paths := m.files()
	p := &Packed{s: s, m: m, index: index, chunkBytes: readChunkBytes, bufs: make([][2][]byte, m.Workers), ahead: make([]*piecesRead, m.Workers),
		turns: make([]sync.Mutex, m.Workers)}
	if err := p.checkSizes(paths); err != nil {
		return nil, err
	}
	p.reader, err = ioread.Open(paths, ioread.Options{QueueDepth: packQueueDepth, Direct: true, Engine: ioread.EngineAuto, MaxMergeBytes: packMergeBytes})
	if err != nil {
		return nil, fmt.Errorf("packed batches: %w", err)
	}
	return p, nil
}

// onOff names a row scaling setting in messages.
func onOff(normalized bool) string {
	if normalized {
		return "to unit L1 norm"
	}
	return "not at all"
}

// checkSizes refuses a packed file shorter than its last piece's end.
func (p *Packed) checkSizes(paths []string) error {
	m := p.m
	for w := range m.Workers {
		for e := range m.Epochs {
			for d := range m.Dirs {
				var end int64
				for b := range m.Batches[w] {
					off, rows, _ := p.entryAt(w, e, b, d)
					end = max(end, off+layoutPiece(rows, m.RowBytes).stored)
				}
				path := paths[(w*m.Epochs+e)*len(m.Dirs)+d]
				fi, err := os.Stat(path)
				if err != nil {
					return &inputerr.Error{Path: path, Msg: "packed batches' file missing" + repackHint(m.Name), Err: err}
				}
				if fi.Size() < end {
					return &inputerr.Error{Path: path, Msg: fmt.Sprintf("%d bytes, its pieces end at %d: truncated%s", fi.Size(), end, repackHint(m.Name))}
				}
			}
		}
	}
	return nil
}

// entryAt is a piece's index record: its offset, rows and first row.
func (p *Packed) entryAt(w, e, b, d int) (off int64, rows, first int) {
	rec := p.index[p.m.entry(w, e, b, d):]
	le := binary.LittleEndian
	return int64(le.Uint64(rec)), int(le.Uint32(rec[8:])), int(le.Uint32(rec[12:]))
}

// Manifest is the packed batches' manifest.
func (p *Packed) Manifest() *PackManifest { return p.m }

// Engine names the reader's engine.
func (p *Packed) Engine() string { return p.reader.Engine() }

// Close closes the files, after the reads in flight (a batch read ahead)
// end.
func (p *Packed) Close() error {
	p.mu.Lock()
	r := p.reader
	p.reader = nil
	clear(p.ahead)
	p.mu.Unlock()
	if r == nil {
		return nil
	}
	p.reads.Wait()
	return r.Close()
}

// Gather is Store.GatherResident for batch at (its epoch below
// Manifest().Epochs) with vertices its input: the rows in memory copied
// from the store while the batch's pieces are read, then the others from
// the pieces, checked (each piece's coordinates, every vertex id against
// the batch's, every row against its checksum), so a piece of another
// batch or a damaged row is an error naming the file, never a wrong row.
// resident < 0 gathers every row, as Store.Gather (idx nil). With next not
// nil, the pieces of next (the batch the worker gathers after this one)
// are read while this batch's are checked and the step trains: its Gather
// finds them read. A Gather of another batch waits for that read and
// reads its own.
//
// In the stats ReadSeconds is the reads' own time (of this batch's
// pieces, wherever they overlapped) and CheckSeconds the checks' and
// copies', so SSDRows / ReadSeconds is the disk's rate.
func (p *Packed) Gather(ctx context.Context, at PackedBatch, next *PackedBatch, vertices []int32, dst []float32, resident int, idx []int32) (int, GatherStats, error) {
	s := p.s
	start := time.Now()
	st := GatherStats{Rows: len(vertices), Bytes: int64(len(vertices)) * s.rowBytes}
	switch {
	case !p.packed(at):
		return 0, st, p.notPacked(at)
	case len(dst) < len(vertices)*s.dim || (resident >= 0 && len(idx) < len(vertices)):
		return 0, st, fmt.Errorf("gather: dst holds %d floats, idx %d entries for %d rows of %d", len(dst), len(idx), len(vertices), s.dim)
	case s.caches == nil:
		return 0, st, errors.New("gather: the store is closed")
	}
	defer p.turn(at)()
	pr := p.readFor(ctx, at)
	n, ssd, slots, err := s.serve(s.caches, vertices, dst, resident, idx, &st)
	p.await(ctx, pr, next)
	if err != nil {
		return 0, st, err
	}
	st.SSDRows = len(ssd)
	st.ReadSeconds = pr.seconds
	err = p.place(pr, vertices, ssd, slots, dst, &st)
	st.Seconds = time.Since(start).Seconds()
	return n, st, err
}

// Rows is how many rows batch at's pieces hold (0 for a batch not
// packed).
func (p *Packed) Rows(at PackedBatch) int {
	if !p.packed(at) {
		return 0
	}
	n := 0
	for d := range p.m.Dirs {
		_, rows, _ := p.entryAt(at.Worker, at.Epoch, at.Batch, d)
		n += rows
	}
	return n
}

// PartsRead is what ReadParts read: per piece, in the parts' order and a
// piece per directory, its vertices (IDs) and their rows (Rows, row k
// vertex IDs[k]'s), both in place in its buffer, which the next ReadParts
// into it reuses.
type PartsRead struct {
	IDs  [][]int32
	Rows [][]float32
	buf  []byte
}

// ReadParts reads the pieces of the batches parts whole, straight into
// into's buffer, and checks them as Gather checks a piece (header, vertex
// ids, every row's checksum): the multistage loader's first stage, for a
// set whose rows are all on disk and are used where they were read, with
// no lookup of each vertex and no copy. The pieces are read in order, a
// readChunkBytes run at a time, back to back, each run's rows checked once
// it is read while the later runs are. The stats count the rows as read
// from disk.
func (p *Packed) ReadParts(ctx context.Context, parts []PackedBatch, into *PartsRead) (GatherStats, error) {
	start := time.Now()
	m := p.m
	dirs := len(m.Dirs)
	var st GatherStats
	var pieces []partPiece
	var need int64
	for _, at := range parts {
		if !p.packed(at) {
			return st, p.notPacked(at)
		}
		for d := range dirs {
			off, rows, _ := p.entryAt(at.Worker, at.Epoch, at.Batch, d)
			pl := layoutPiece(rows, m.RowBytes)
			if pl.stored > 0 {
				pieces = append(pieces, partPiece{at: at, dir: d, fileOff: off, at0: need, pl: pl})
			}
			need += pl.stored
			st.Rows += rows
		}
	}
	st.SSDRows, st.Bytes, st.UsefulBytes = st.Rows, int64(st.Rows)*m.RowBytes, int64(st.Rows)*m.RowBytes
	into.grow(need)
	into.IDs, into.Rows = into.IDs[:0], into.Rows[:0]
	chunks := readChunks(pieces, m, into.buf, need, p.chunkBytes)
	// The reads run back to back on a goroutine of their own, the checks
	// following them run by run: a check that waits for a core (the step
	// holds them) never leaves the disk idle.
	type result struct {
		stats   ioread.Stats
		seconds float64
		err     error
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make(chan result, len(chunks))
	go func() {
		defer close(results)
		for _, c := range chunks {
			t := time.Now()
			rs, err := p.read(rctx, c.reqs)
			results <- result{rs, time.Since(t).Seconds(), err}
			if err != nil {
				return
			}
		}
	}()
	ck := partsChecker{p: p, pieces: pieces, buf: into.buf}
	var err error
	for _, c := range chunks {
		r := <-results
		st.DeviceBytes += r.stats.DeviceBytes
		st.DeviceReads += r.stats.DeviceReads
		st.ReadSeconds += r.seconds
		if err = r.err; err != nil {
			err = fmt.Errorf("packed batches: %w", err)
			break
		}
		t := time.Now()
		err = ck.upTo(c.end)
		st.CheckSeconds += time.Since(t).Seconds()
		if err != nil {
			break
		}
	}
	cancel()
	for range results { // into's buffer is the reads' until they end
	}
	if err == nil {
		for _, pc := range pieces {
			into.IDs = append(into.IDs, pc.ids)
			into.Rows = append(into.Rows, unsafe.Slice((*float32)(unsafe.Pointer(&into.buf[pc.at0+pc.pl.data])), pc.pl.rows*p.s.dim))
		}
	}
	st.Seconds = time.Since(start).Seconds()
	return st, err
}

// grow makes into's buffer hold at least need bytes (growAligned).
func (into *PartsRead) grow(need int64) { into.buf = growAligned(into.buf, need) }

// growAligned is buf when it holds need bytes, else a new buffer aligned
// for direct IO with a quarter to spare, under huge pages.
func growAligned(buf []byte, need int64) []byte {
	if int64(len(buf)) >= need {
		return buf
	}
	buf = alignedBytes(need + need/4)
	hugepage.Advise(buf)
	return buf
}

// batchBytes is at's rows and its pieces' stored bytes, over the
// directories.
func (p *Packed) batchBytes(at PackedBatch) (rows int, stored int64) {
	for d := range p.m.Dirs {
		_, n, _ := p.entryAt(at.Worker, at.Epoch, at.Batch, d)
		rows += n
		stored += layoutPiece(n, p.m.RowBytes).stored
	}
	return rows, stored
}

// readChunkBytes is how much of a macro-batch's pieces one read call of
// ReadParts takes: its rows are checked while the later runs are read, so
// only the last run's checks need wait after the reads.
const readChunkBytes = 128 << 20

// partPiece is one piece ReadParts reads: batch at's piece on directory
// dir, at fileOff in its file and at0 in the buffer; ids and checked are
// its vertex ids and rows checked so far.
type partPiece struct {
	at           PackedBatch
	dir          int
	fileOff, at0 int64
	pl           pieceLayout
	ids          []int32
	headerOK     bool
	checked      int
}

// readChunk is one read call of ReadParts: its requests, which fill the
// buffer up to end.
type readChunk struct {
	reqs []ioread.Request
	end  int64
}

// readChunks cuts the reads of pieces, which lie one after the other in
// buf's first need bytes, into runs of size bytes (a multiple of
// FileAlignBytes, as the pieces are).
func readChunks(pieces []partPiece, m *PackManifest, buf []byte, need, size int64) []readChunk {
	var chunks []readChunk
	i := 0
	for lo := int64(0); lo < need; lo += size {
		c := readChunk{end: min(lo+size, need)}
		for ; i < len(pieces); i++ {
			pc := pieces[i]
			a, b := max(lo, pc.at0), min(c.end, pc.at0+pc.pl.stored)
			if a < b {
				file := (pc.at.Worker*m.Epochs+pc.at.Epoch)*len(m.Dirs) + pc.dir
				c.reqs = append(c.reqs, ioread.Request{File: file, Offset: pc.fileOff + a - pc.at0, Length: int(b - a), Dst: buf[a:b], Tag: uint64(pc.dir)})
			}
			if pc.at0+pc.pl.stored > c.end {
				break // it goes on in the next run
			}
		}
		chunks = append(chunks, c)
	}
	return chunks
}

// partsChecker checks ReadParts's pieces as their bytes arrive.
type partsChecker struct {
	p      *Packed
	pieces []partPiece
	buf    []byte
	next   int // the first piece not checked whole
}

// upTo checks what the buffer's first end bytes hold: each piece's
// header once its ids and checksums are in, then its rows that are.
func (ck *partsChecker) upTo(end int64) error {
	p, rb := ck.p, ck.p.s.rowBytes
	for ; ck.next < len(ck.pieces); ck.next++ {
		pc := &ck.pieces[ck.next]
		piece := ck.buf[pc.at0 : pc.at0+pc.pl.stored]
		fail := func(err error) error {
			return fmt.Errorf("packed batches: %s at offset %d (batch %d): %w%s", p.m.PackedFile(pc.at.Worker, pc.at.Epoch, pc.dir), pc.fileOff, pc.at.Batch+1, err, repackHint(p.m.Name))
		}
		if !pc.headerOK {
			if pc.at0+pc.pl.data > end {
				return nil
			}
			if _, err := p.checkHeader(pc.at.Worker, pc.at.Epoch, pc.at.Batch, pc.dir, piece); err != nil {
				return fail(err)
			}
			pc.ids = unsafe.Slice((*int32)(unsafe.Pointer(&piece[pc.pl.ids])), pc.pl.rows)
			pc.headerOK = true
		}
		for ; pc.checked < pc.pl.rows; pc.checked++ {
			j := pc.checked
			lo := pc.pl.data + int64(j)*rb
			if pc.at0+lo+rb > end {
				return nil
			}
			if err := checkRow(piece, pc.pl, j, pc.ids[j], rb); err != nil {
				return fail(err)
			}
		}
	}
	return nil
}

// notPacked is the error for a batch the set does not hold.
func (p *Packed) notPacked(at PackedBatch) error {
	return fmt.Errorf("packed batches: worker %d, epoch %d, batch %d not packed (%d workers, %d epochs)", at.Worker, at.Epoch+1, at.Batch+1, p.m.Workers, p.m.Epochs)
}

// turn takes at's worker's turn (its buffers are the Gather's until the
// returned func gives it back).
func (p *Packed) turn(at PackedBatch) func() {
	p.turns[at.Worker].Lock()
	return p.turns[at.Worker].Unlock
}

// await waits for pr, then, when it read and next is a batch of the same
// worker, starts reading next ahead into the worker's other buffer.
func (p *Packed) await(ctx context.Context, pr *piecesRead, next *PackedBatch) {
	<-pr.done
	if pr.err == nil && next != nil && p.packed(*next) && next.Worker == pr.at.Worker {
		p.readAhead(ctx, *next, 1-pr.slot)
	}
}

// packed says b is a batch the set holds.
func (p *Packed) packed(b PackedBatch) bool {
	m := p.m
	return b.Worker >= 0 && b.Worker < m.Workers && b.Epoch >= 0 && b.Epoch < m.Epochs && b.Batch >= 0 && b.Batch < m.Batches[b.Worker]
}

// readFor is the read of at's pieces: the one read ahead for at's worker
// when it is at's, else one started now into the worker's first buffer
// (after the one ahead ends: its buffer may be that one). Without reads
// ahead a worker uses one buffer.
func (p *Packed) readFor(ctx context.Context, at PackedBatch) *piecesRead {
	p.mu.Lock()
	a := p.ahead[at.Worker]
	p.ahead[at.Worker] = nil
	p.mu.Unlock()
	if a != nil {
		if a.at == at {
			return a
		}
		<-a.done
	}
	return p.startRead(ctx, at, 0)
}

// readAhead starts reading at's pieces into its worker's buffer slot
// (the one the Gather now placing rows does not use) for the worker's
// next Gather. The read is not stopped with ctx (an epoch's context ends
// with its last batch, before the next epoch's first is gathered); Close
// waits for it.
func (p *Packed) readAhead(ctx context.Context, at PackedBatch, slot int) {
	pr := p.startRead(context.WithoutCancel(ctx), at, slot)
	p.mu.Lock()
	if p.reader != nil {
		p.ahead[at.Worker] = pr
	}
	p.mu.Unlock()
}

// startRead starts reading at's pieces into its worker's buffer slot.
func (p *Packed) startRead(ctx context.Context, at PackedBatch, slot int) *piecesRead {
	pr := &piecesRead{at: at, slot: slot, done: make(chan struct{})}
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.reader
	if r == nil {
		pr.err = errors.New("closed")
		close(pr.done)
		return pr
	}
	w := at.Worker
	p.bufs[w][slot], pr.reqs, pr.rows = p.requests(at, p.bufs[w][slot])
	if len(pr.reqs) == 0 {
		close(pr.done)
		return pr
	}
	p.reads.Add(1)
	go func() {
		defer p.reads.Done()
		defer close(pr.done)
		t := time.Now()
		pr.stats, pr.err = r.Read(ctx, pr.reqs)
		pr.seconds = time.Since(t).Seconds()
	}()
	return pr
}

// requests are the reads of at's pieces into buf (grown as needed,
// aligned for direct IO, returned), one per directory holding rows of
// it, tagged with the directory, and the rows they hold.
func (p *Packed) requests(at PackedBatch, buf []byte) ([]byte, []ioread.Request, int) {
	m := p.m
	dirs := len(m.Dirs)
	rows, need := p.batchBytes(at)
	buf = growAligned(buf, need)
	reqs := make([]ioread.Request, 0, dirs)
	var off int64
	for d := range dirs {
		at0, n, _ := p.entryAt(at.Worker, at.Epoch, at.Batch, d)
		stored := layoutPiece(n, m.RowBytes).stored
		if stored > 0 {
			reqs = append(reqs, ioread.Request{File: (at.Worker*m.Epochs+at.Epoch)*dirs + d, Offset: at0, Length: int(stored), Dst: buf[off : off+stored], Tag: uint64(d)})
		}
		off += stored
	}
	return buf, reqs, rows
}

// place checks the pieces pr read and puts their rows in place: the
// batch's disk rows, vertices[ssd[k]] into slot slots[k] of dst.
func (p *Packed) place(pr *piecesRead, vertices []int32, ssd, slots []int, dst []float32, st *GatherStats) error {
	m, at := p.m, pr.at
	st.UsefulBytes, st.DeviceBytes, st.DeviceReads = int64(pr.rows)*m.RowBytes, pr.stats.DeviceBytes, pr.stats.DeviceReads
	if pr.err != nil {
		return fmt.Errorf("packed batches: epoch %d, batch %d: %w", at.Epoch+1, at.Batch+1, pr.err)
	}
	if pr.rows != len(ssd) {
		return fmt.Errorf("packed batches: epoch %d, batch %d holds %d rows, the batch reads %d from disk: packed from other batches%s",
			at.Epoch+1, at.Batch+1, pr.rows, len(ssd), repackHint(m.Name))
	}
	t := time.Now()
	defer func() { st.CheckSeconds = time.Since(t).Seconds() }()
	for _, r := range pr.reqs {
		d := int(r.Tag)
		if err := p.placePiece(at.Worker, at.Epoch, at.Batch, d, r.Dst, vertices, ssd, slots, dst); err != nil {
			return fmt.Errorf("packed batches: %s at offset %d (epoch %d, batch %d): %w%s",
				m.PackedFile(at.Worker, at.Epoch, d), r.Offset, at.Epoch+1, at.Batch+1, err, repackHint(m.Name))
		}
	}
	return nil
}

// checkHeader checks that piece is piece d of worker w's batch b of
// epoch e, as the index says, with its vertex ids and row checksums
// intact, and returns its layout.
func (p *Packed) checkHeader(w, e, b, d int, piece []byte) (pieceLayout, error) {
	s := p.s
	_, rows, first := p.entryAt(w, e, b, d)
	pl := layoutPiece(rows, s.rowBytes)
	h, ok := parsePieceHeader(piece)
	want := pieceHeader{worker: uint32(w), epoch: uint32(e), batch: uint32(b), dir: uint32(d), rows: uint32(rows), first: uint32(first), dim: uint32(s.dim), crc: h.crc}
	switch {
	case !ok:
		return pl, errors.New("no piece header")
	case h != want:
		return pl, fmt.Errorf("the piece of worker %d, epoch %d, batch %d, part %d (%d rows of %d from row %d), where the index says worker %d, epoch %d, batch %d, part %d (%d rows of %d from row %d)",
			h.worker, h.epoch+1, h.batch+1, h.dir, h.rows, h.dim, h.first, w, e+1, b+1, d, rows, s.dim, first)
	case crc32.Checksum(piece[pl.ids:pl.crcs+4*int64(rows)], castagnoli()) != h.crc:
		return pl, errors.New("its vertex ids or row checksums are damaged")
	}
	return pl, nil
}

// checkRow checks row j of piece (laid out as pl, rows of rb bytes),
// vertex v's, against its packed checksum.
func checkRow(piece []byte, pl pieceLayout, j int, v int32, rb int64) error {
	lo := pl.data + int64(j)*rb
	if got, want := rowCRC(piece[lo:lo+rb]), binary.LittleEndian.Uint32(piece[pl.crcs+4*int64(j):]); got != want {
		return fmt.Errorf("row %d (vertex %d) is damaged: checksum %08x, packed %08x", j, v, got, want)
	}
	return nil
}

// placePiece checks piece d of batch b (read into piece) and copies its
// rows to their slots of dst: each the batch's row it names (vertices,
// ssd, slots).
func (p *Packed) placePiece(w, e, b, d int, piece []byte, vertices []int32, ssd, slots []int, dst []float32) error {
	s := p.s
	_, rows, first := p.entryAt(w, e, b, d)
	pl, err := p.checkHeader(w, e, b, d, piece)
	if err != nil {
		return err
	}
	le := binary.LittleEndian
	dim := s.dim
	for j := range rows {
		k := first + j
		v := int32(le.Uint32(piece[pl.ids+4*int64(j):]))
		slot := slots[k]
		if v != vertices[ssd[k]] {
			return fmt.Errorf("row %d is vertex %d, the batch's row %d is vertex %d", j, v, ssd[k], vertices[ssd[k]])
		}
		if err := checkRow(piece, pl, j, v, s.rowBytes); err != nil {
			return err
		}
		row := piece[pl.data+int64(j)*s.rowBytes:][:s.rowBytes]
		out := dst[slot*dim : (slot+1)*dim]
		copy(out, unsafe.Slice((*float32)(unsafe.Pointer(&row[0])), dim))
	}
	return nil
}

// MeasureReads reads the set's pieces batch by batch (worker 0, epoch 0,
// from the first batch on, cycling) for about d, each batch's pieces in
// one read call, then checks them as training does, but one after the
// other. It returns the rows per second the reads alone delivered (the
// disk's sequential rate, which the packed loader's read ahead keeps
// busy while it checks), the checks' and copies' wall time per row
// (CheckSecondsPerRow) and the thread's CPU time per row, reads and
// checks together.
func (p *Packed) MeasureReads(ctx context.Context, d time.Duration) (ReadRate, error) {
	var rr ReadRate
	m := p.m
	if m.Rows == 0 || m.Batches[0] == 0 {
		return rr, nil
	}
	who := rusageProcess
	if p.Engine() == "io_uring" {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		who = rusageThread
	}
	// The buffers at their largest first: filling fresh pages is not the
	// disk's time.
	var most, mostStored int64
	for b := range m.Batches[0] {
		rows, stored := p.batchBytes(PackedBatch{Batch: b})
		most, mostStored = max(most, int64(rows)), max(mostStored, stored)
	}
	dst := make([]float32, most*int64(p.s.dim))
	hugepage.Advise(dst)
	buf := alignedBytes(mostStored)
	hugepage.Advise(buf)
	var (
		vertices []int32
		ssd      []int
	)
	// One batch untimed first: the buffers' first pages are not the
	// disk's time.
	var cpu0, readS float64
	var cpuOK bool
	var start time.Time
	var each []batchCost // the timed batches'
	for i := -1; i <= 0 || time.Since(start) < d; i++ {
		if i == 0 {
			rr, readS, each = ReadRate{}, 0, nil
			cpu0, cpuOK = rusageSeconds(who)
			start = time.Now()
		}
		bcpu0, bOK := rusageSeconds(who)
		at := PackedBatch{Batch: max(i, 0) % m.Batches[0]}
		vertices, ssd = vertices[:0], ssd[:0]
		for dir := range m.Dirs {
			off, rows, _ := p.entryAt(0, 0, at.Batch, dir)
			if rows == 0 {
				continue
			}
			ids, err := p.pieceIDs(ctx, at.Batch, dir, off, rows)
			if err != nil {
				return rr, err
			}
			vertices = append(vertices, ids...)
		}
		for j := range vertices {
			ssd = append(ssd, j)
		}
		pr := &piecesRead{at: at}
		buf, pr.reqs, pr.rows = p.requests(at, buf)
		t := time.Now()
		pr.stats, pr.err = p.read(ctx, pr.reqs)
		pr.seconds = time.Since(t).Seconds()
		var st GatherStats
		if err := p.place(pr, vertices, ssd, ssd, dst[:len(vertices)*p.s.dim], &st); err != nil {
			return rr, err
		}
		bcpu1, bOK1 := rusageSeconds(who)
		readS += pr.seconds
		rr.Rows += len(vertices)
		rr.Reads += st.DeviceReads
		each = append(each, batchCost{rows: len(vertices), check: st.CheckSeconds, cpu: bcpu1 - bcpu0, cpuOK: bOK && bOK1})
	}
	rr.finish(start, who, cpu0, cpuOK)
	if rr.Rows > 0 && readS > 0 {
		rr.RowsPerS = float64(rr.Rows) / readS
		rr.CheckSecondsPerRow = perRowWithoutStalls(each, func(b batchCost) (float64, bool) { return b.check, true })
		if cpu := perRowWithoutStalls(each, func(b batchCost) (float64, bool) { return b.cpu, b.cpuOK }); cpu > 0 {
			rr.CPUSecondsPerRow = cpu
		}
	}
	return rr, nil
}

// MeasureParts times the multistage loader's first stage as it runs:
// ReadParts over macro-batches of group consecutive parts (worker 0, epoch
// 0, cycling; one a buffer untimed first, whose fresh pages are not the
// disk's time) until about d has passed. RowsPerS is the reads' own rate,
// CheckSecondsPerRow the checks', StageSecondsPerRow the macro-batches'
// wall time a row: the reads and the checks as much as they overlapped
// (each run's rows are checked while the later ones are read), a macro-batch
// stalled past the rule of package stall left out. CPUSecondsPerRow is 0:
// the process's CPU time holds whatever runs beside (a probe, in
// training). It reads into the buffers
// into in turn (none: one of its own), each first made to hold any group
// parts and filled once untimed: a caller then trains from them without
// allocating or touching fresh pages.
func (p *Packed) MeasureParts(ctx context.Context, d time.Duration, group int, into ...*PartsRead) (ReadRate, error) {
	var rr ReadRate
	m := p.m
	parts := m.Batches[0]
	if m.Rows == 0 || parts == 0 {
		return rr, nil
	}
	group = min(max(group, 1), parts)
	if len(into) == 0 {
		into = []*PartsRead{{}}
	}
	// The largest macro-batch: the group largest parts.
	sizes := make([]int64, parts)
	for b := range parts {
		_, sizes[b] = p.batchBytes(PackedBatch{Batch: b})
	}
	slices.Sort(sizes)
	var most int64
	for _, n := range sizes[parts-group:] {
		most += n
	}
	for _, b := range into {
		b.grow(most)
	}
	var (
		readS float64
		start time.Time
		each  []batchCost
		next  int
		macro = make([]PackedBatch, group)
	)
	for i := -len(into); i <= 0 || time.Since(start) < d; i++ {
		if i == 0 {
			start = time.Now()
		}
		for j := range macro {
			macro[j] = PackedBatch{Batch: (next + j) % parts}
		}
		next = (next + group) % parts
		st, err := p.ReadParts(ctx, macro, into[(i+len(into))%len(into)])
		if err != nil {
			return ReadRate{}, err
		}
		if i < 0 {
			continue
		}
		readS += st.ReadSeconds
		rr.Rows += st.Rows
		rr.Reads += st.DeviceReads
		each = append(each, batchCost{rows: st.Rows, check: st.CheckSeconds, wall: st.Seconds})
	}
	rr.finish(start, rusageProcess, 0, false)
	if rr.Rows > 0 && readS > 0 {
		rr.RowsPerS = float64(rr.Rows) / readS
		rr.CheckSecondsPerRow = perRowWithoutStalls(each, func(b batchCost) (float64, bool) { return b.check, true })
		rr.StageSecondsPerRow = perRowWithoutStalls(each, func(b batchCost) (float64, bool) { return b.wall, true })
	}
	return rr, nil
}

// batchCost is one batch of a measurement: its rows, the seconds its
// checks took, the CPU seconds its read and checks took and its wall
// time.
type batchCost struct {
	rows             int
	check, cpu, wall float64
	cpuOK            bool
}

// perRowWithoutStalls is the seconds a row that cost gives each batch,
// over the batches whose rate a row is not a stall (package stall); 0
// where cost is known for none.
func perRowWithoutStalls(each []batchCost, cost func(batchCost) (float64, bool)) float64 {
	var rates []float64
	for _, b := range each {
		if c, ok := cost(b); ok && b.rows > 0 {
			rates = append(rates, c/float64(b.rows))
		}
	}
	limit := stall.Limit(rates)
	var sum float64
	rows := 0
	for _, b := range each {
		if c, ok := cost(b); ok && b.rows > 0 && c/float64(b.rows) <= limit {
			sum += c
			rows += b.rows
		}
	}
	if rows == 0 {
		return 0
	}
	return sum / float64(rows)
}

// read reads reqs with the set's reader, on the calling goroutine.
func (p *Packed) read(ctx context.Context, reqs []ioread.Request) (ioread.Stats, error) {
	p.mu.Lock()
	r := p.reader
	if r != nil {
		p.reads.Add(1)
		defer p.reads.Done()
	}
	p.mu.Unlock()
	if r == nil {
		return ioread.Stats{}, errors.New("packed batches: closed")
	}
	return r.Read(ctx, reqs)
}

// pieceIDs reads the vertex ids piece dir of batch b (worker 0, epoch 0)
// holds: what a batch asks of it.
func (p *Packed) pieceIDs(ctx context.Context, b, dir int, off int64, rows int) ([]int32, error) {
	pl := layoutPiece(rows, p.m.RowBytes)
	head := roundUp(pl.crcs, FileAlignBytes)
	buf := alignedBytes(head)
	_, err := p.read(ctx, []ioread.Request{{File: dir, Offset: off, Length: int(head), Dst: buf}})
	if err != nil {
		return nil, fmt.Errorf("packed batches: batch %d: %w", b+1, err)
	}
	ids := make([]int32, rows)
	for j := range ids {
		ids[j] = int32(binary.LittleEndian.Uint32(buf[pl.ids+4*int64(j):]))
	}
	return ids, nil
}
