package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"slices"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gnnplan/gnnplan/internal/hugepage"
	"github.com/gnnplan/gnnplan/internal/inputerr"
	"github.com/gnnplan/gnnplan/trainer/internal/rownorm"
)

// packGroup is a run of one worker's consecutive batches packed in one
// pass over the features: each batch's packed rows (its input vertices
// not held in memory, in the batch's order).
type packGroup struct {
	worker, epoch, first int
	rows                 [][]int32
	bytes                int64 // the pieces and their copy plan
}

// packCopy is one row to copy in a pass: vertex v's row to pos of
// directory dir's buffer, its checksum to crcPos.
type packCopy struct {
	v           int32
	dir         int32
	pos, crcPos int64
}

// packWriteBytes is the most one write of a packed file writes.
const packWriteBytes = 64 << 20

// alignedBytes is n zero bytes starting on a FileAlignBytes boundary, for
// direct IO.
func alignedBytes(n int64) []byte {
	raw := make([]byte, n+FileAlignBytes)
	off := (FileAlignBytes - int(uintptr(unsafe.Pointer(&raw[0]))%FileAlignBytes)) % FileAlignBytes
	return raw[off : int64(off)+n : int64(off)+n]
}

// packCopyBytes is what a packCopy costs, counted against the budget.
const packCopyBytes = 24

// packEpoch packs every worker's batches of epoch e, in groups that fit
// the budget, each worker's into files of its own.
func (p *packer) packEpoch(ctx context.Context, src PackBatches, e int) error {
	m := p.m
	total := 0
	for _, b := range m.Batches {
		total += b
	}
	done := progressFunc(p.opt.Progress).phase(fmt.Sprintf("pack epoch %d of %d", e+1, m.Epochs), int64(total))
	p.epochBytes = append(p.epochBytes, 0)
	var passes int
	for w := range m.Workers {
		if err := p.createFiles(w, e); err != nil {
			return err
		}
		offsets := make([]int64, len(m.Dirs))
		for b := 0; b < m.Batches[w]; {
			g, err := p.sampleGroup(ctx, src, w, e, b)
			if err != nil {
				return err
			}
			if err := p.writeGroup(ctx, g, offsets); err != nil {
				return err
			}
			passes++
			b += len(g.rows)
			done(int64(len(g.rows)))
		}
		if err := p.closeFiles(); err != nil {
			return err
		}
	}
	m.Passes += passes
	if p.opt.Log != nil {
		fmt.Fprintf(p.opt.Log, "pack: epoch %d: %.2f GiB in %d pieces' files, %d passes over %s\n", e+1,
			float64(p.epochBytes[e])/(1<<30), len(m.Dirs)*m.Workers, passes, p.feat.path)
	}
	return nil
}

// createFiles creates worker's temporary files for epoch e, one per
// directory.
func (p *packer) createFiles(w, e int) error {
	p.files = p.files[:0]
	for d := range p.m.Dirs {
		final := p.m.PackedFile(w, e, d)
		tmp := final + ".tmp"
		// Direct IO: gigabytes through the page cache cost more in
		// copies and page clearing than the disk's own writes. A file
		// system without it is written buffered.
		f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY|unix.O_DIRECT, 0o644)
		if errors.Is(err, unix.EINVAL) {
			f, err = os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
		}
		if err != nil {
			return fmt.Errorf("pack: %w", err)
		}
		p.files = append(p.files, f)
		p.tmps = append(p.tmps, tmp)
		p.finals = append(p.finals, final)
	}
	return nil
}

// closeFiles syncs and closes the open files, dropping their pages from
// the page cache: training reads them with direct IO.
func (p *packer) closeFiles() error {
	for i, f := range p.files {
		err := f.Sync()
		unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		p.files[i] = nil
		if err != nil {
			return fmt.Errorf("pack: %w", err)
		}
	}
	p.files = p.files[:0]
	return nil
}

// sampleGroup samples worker's batches of epoch e from first on until
// their pieces and copy plan fill the budget (one batch at least).
func (p *packer) sampleGroup(ctx context.Context, src PackBatches, w, e, first int) (*packGroup, error) {
	s := p.s
	g := &packGroup{worker: w, epoch: e, first: first}
	err := src.Inputs(ctx, w, e, first, func(_ int, input []int32) bool {
		var rows []int32
		for _, v := range input {
			if !s.InMemory(v) {
				rows = append(rows, v)
			}
		}
		g.rows = append(g.rows, rows)
		for d := range p.m.Dirs {
			_, n := stripe(len(rows), len(p.m.Dirs), d)
			g.bytes += layoutPiece(n, s.rowBytes).stored
		}
		g.bytes += packCopyBytes * int64(len(rows))
		return g.bytes < p.budget
	})
	if err != nil {
		return nil, fmt.Errorf("pack: epoch %d, batch %d: %w", e+1, first+len(g.rows)+1, err)
	}
	if len(g.rows) == 0 {
		return nil, fmt.Errorf("pack: epoch %d: the sampler gave no batch %d (it has %d)", e+1, first+1, p.m.Batches[w])
	}
	return g, nil
}

// writeGroup lays g's pieces out in one buffer per directory, copies
// their rows from the features in one ordered pass, and appends each
// buffer to its file at offsets (advanced), recording the index.
func (p *packer) writeGroup(ctx context.Context, g *packGroup, offsets []int64) error {
	m, s := p.m, p.s
	dirs := len(m.Dirs)
	bufs := p.groupBuffers(g)
	total := 0
	for _, rows := range g.rows {
		total += len(rows)
	}
	if cap(p.copies) < total {
		p.copies = make([]packCopy, 0, total+total/4)
		hugepage.Advise(p.copies[:cap(p.copies)])
	}
	copies := p.copies[:0]
	at := make([]int64, dirs)
	for k, rows := range g.rows {
		for d := range dirs {
			first, n := stripe(len(rows), dirs, d)
			pl := layoutPiece(n, s.rowBytes)
			at := &at[d]
			rec := m.entry(g.worker, g.epoch, g.first+k, d)
			binary.LittleEndian.PutUint64(p.index[rec:], uint64(offsets[d]+*at))
			binary.LittleEndian.PutUint32(p.index[rec+8:], uint32(n))
			binary.LittleEndian.PutUint32(p.index[rec+12:], uint32(first))
			for j, v := range rows[first : first+n] {
				binary.LittleEndian.PutUint32(bufs[d][*at+pl.ids+4*int64(j):], uint32(v))
				copies = append(copies, packCopy{v: v, dir: int32(d), pos: *at + pl.data + int64(j)*s.rowBytes, crcPos: *at + pl.crcs + 4*int64(j)})
			}
			*at += pl.stored
		}
	}
	p.copies = copies
	if err := p.copyRows(ctx, copies, bufs); err != nil {
		return err
	}
	p.sealPieces(g, bufs)
	for d, buf := range bufs {
		for at := 0; at < len(buf); at += packWriteBytes {
			if _, err := p.files[d].WriteAt(buf[at:min(at+packWriteBytes, len(buf))], offsets[d]+int64(at)); err != nil {
				return fmt.Errorf("pack: %w", err)
			}
		}
		offsets[d] += int64(len(buf))
		p.m.Bytes += int64(len(buf))
		p.epochBytes[g.epoch] += int64(len(buf))
	}
	for _, rows := range g.rows {
		p.m.Rows += int64(len(rows))
	}
	return nil
}

// groupBuffers returns a buffer per directory sized for g's pieces,
// zeroed (the padding is written as zeros), reusing the last group's.
func (p *packer) groupBuffers(g *packGroup) [][]byte {
	dirs := len(p.m.Dirs)
	if len(p.bufs) != dirs {
		p.bufs = make([][]byte, dirs)
	}
	for d := range dirs {
		var size int64
		for _, rows := range g.rows {
			_, n := stripe(len(rows), dirs, d)
			size += layoutPiece(n, p.s.rowBytes).stored
		}
		if int64(cap(p.bufs[d])) < size {
			p.bufs[d] = alignedBytes(size)
			hugepage.Advise(p.bufs[d])
		} else {
			p.bufs[d] = p.bufs[d][:size]
			clear(p.bufs[d])
		}
	}
	return p.bufs
}

// copyRows reads the features in vertex order, only the chunks some copy
// needs, and copies each row to its places, checking it against the
// store's checksum of it (so a features.npy changed since the store was
// made is refused); a store that scales its rows packs them scaled.
func (p *packer) copyRows(ctx context.Context, copies []packCopy, bufs [][]byte) error {
	slices.SortFunc(copies, func(a, b packCopy) int { return int(a.v) - int(b.v) })
	s, f := p.s, p.feat
	per := int64(len(p.featBuf)) / s.rowBytes
	for i := 0; i < len(copies); {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("pack: %w", err)
		}
		first := int64(copies[i].v) / per * per
		n := min(per, f.rows-first)
		data := p.featBuf[:n*s.rowBytes]
		if _, err := f.f.ReadAt(data, f.offset+first*s.rowBytes); err != nil {
			return fmt.Errorf("pack: read %s rows %d-%d: %w", f.path, first, first+n-1, err)
		}
		for ; i < len(copies) && int64(copies[i].v) < first+n; i++ {
			c := copies[i]
			row := data[(int64(c.v)-first)*s.rowBytes:][:s.rowBytes]
			crc := rowCRC(row)
			if want, ok := s.storedCRC(c.v); ok && crc != want {
				return &inputerr.Error{Path: f.path, Msg: fmt.Sprintf("row %d's checksum %08x is not the store's %08x: the features changed since the store was made (run gnnplan place again)", c.v, crc, want)}
			}
			out := bufs[c.dir][c.pos:][:s.rowBytes]
			copy(out, row)
			if s.rowNormalize {
				// Packed as the store serves it: scaled, its checksum
				// the scaled row's.
				f := unsafe.Slice((*float32)(unsafe.Pointer(&out[0])), s.dim)
				rownorm.Row(f, f)
				crc = rowCRC(out)
			}
			binary.LittleEndian.PutUint32(bufs[c.dir][c.crcPos:], crc)
		}
	}
	return nil
}

// sealPieces writes each of g's pieces' header, with the checksum of its
// ids and row checksums, now that those are filled.
func (p *packer) sealPieces(g *packGroup, bufs [][]byte) {
	m, s := p.m, p.s
	at := make([]int64, len(m.Dirs))
	for k, rows := range g.rows {
		for d := range m.Dirs {
			first, n := stripe(len(rows), len(m.Dirs), d)
			pl := layoutPiece(n, s.rowBytes)
			if n > 0 {
				piece := bufs[d][at[d]:]
				h := pieceHeader{worker: uint32(g.worker), epoch: uint32(g.epoch), batch: uint32(g.first + k), dir: uint32(d),
					rows: uint32(n), first: uint32(first), dim: uint32(s.dim), crc: crc32.Checksum(piece[pl.ids:pl.crcs+4*int64(n)], castagnoli())}
				h.marshal(piece)
			}
			at[d] += pl.stored
		}
	}
}

// storedCRC is the checksum the store holds for v's row, when it holds one
// (the rows it reads from disk).
func (s *Store) storedCRC(v int32) (uint32, bool) {
	b := &s.bins[s.bin[v]]
	r := int(s.row[v])
	if r >= len(b.crcs) {
		return 0, false
	}
	return b.crcs[r], true
}
