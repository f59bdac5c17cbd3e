package importer

import (
	"bufio"
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/gnnplan/gnnplan/internal/inputerr"
	"github.com/gnnplan/gnnplan/topology"
	"github.com/gnnplan/gnnplan/topology/hwloc"
	"github.com/gnnplan/gnnplan/topology/internal/ctxio"
	"github.com/gnnplan/gnnplan/topology/lspci"
	"github.com/gnnplan/gnnplan/topology/nccl"
	"github.com/gnnplan/gnnplan/topology/nvsmi"
	"github.com/gnnplan/gnnplan/topology/snapshot"
)

// MaxBytes caps the size of a file Import reads. Real topology files
// are kilobytes (a DGX-2's hwloc XML is under 100 KB; a 1000-core machine's
// a few MB); parsing holds several times the file in memory, so a file of
// hundreds of MB would take gigabytes.
const MaxBytes = 16 << 20

// utf8BOM is the byte order mark some Windows editors put before UTF-8 text.
var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// Import reads a machine description from a file, recognising its format
// by content: gnnplan machine JSON, NCCL/RCCL topology XML (<system>),
// hwloc XML (<topology>), the text `nvidia-smi topo -m` or `lspci -vvv`
// / `lspci -tv` print, or a sysfs snapshot archive (.tar, .tar.gz,
// .tar.bz2 of a captured /sys, as ghw and hwloc make), which is unpacked
// into a temporary directory and discovered there. An NCCL graph file
// (<graphs>) is refused: it holds ring/tree channels, not the hardware.
func Import(path string) (*topology.Machine, error) { return ImportContext(context.Background(), path) }

// ImportContext is Import that stops when ctx is cancelled, returning
// ctx's error.
func ImportContext(ctx context.Context, path string) (*topology.Machine, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &topology.InputError{Path: path, Field: "--from", Msg: "cannot read file", Err: err}
	}
	defer f.Close()
	// A snapshot archive is unpacked as it is read, with its own limits
	// (snapshot.MaxBytes), so it is told apart before readFrom's cap.
	br := bufio.NewReaderSize(f, snapshot.HeadBytes)
	head, _ := br.Peek(snapshot.HeadBytes)
	if snapshot.Format(head) != "" {
		return snapshot.Import(ctx, path, br)
	}
	data, err := readFrom(ctx, path, f, br)
	if err != nil {
		return nil, err
	}
	return ImportBytesContext(ctx, path, data)
}

// ImportFilesContext imports one machine from several files: one file as
// ImportContext does; several only when they are text captures of one
// machine: lspci -tv for the tree, lspci -vvv for the links, and at most
// one nvidia-smi topo -m for the NVLinks and the NICs' RDMA names.
func ImportFilesContext(ctx context.Context, paths []string) (*topology.Machine, error) {
	if len(paths) == 1 {
		return ImportContext(ctx, paths[0])
	}
	if len(paths) == 0 {
		return nil, &topology.InputError{Field: "--from", Msg: "no file given"}
	}
	var lspciPaths, smiPaths []string
	var lspciData, smiData [][]byte
	for _, p := range paths {
		data, err := readImport(ctx, p)
		if err != nil {
			return nil, err
		}
		data = bytes.TrimPrefix(data, utf8BOM)
		t := bytes.TrimSpace(data)
		switch {
		case len(t) > 0 && t[0] != '{' && t[0] != '<' && nvsmi.LooksLike(data):
			smiPaths, smiData = append(smiPaths, p), append(smiData, data)
		case len(t) > 0 && t[0] != '{' && t[0] != '<' && lspci.LooksLike(data):
			lspciPaths, lspciData = append(lspciPaths, p), append(lspciData, data)
		default:
			return nil, &topology.InputError{Path: p, Field: "--from", Msg: "only text captures combine (lspci -tv, lspci -vvv and one nvidia-smi topo -m of the same machine); give this file alone"}
		}
	}
	if len(smiPaths) > 1 {
		return nil, &topology.InputError{Path: smiPaths[1], Field: "--from", Msg: "a second nvidia-smi topo -m capture: give one per machine"}
	}
	if len(lspciPaths) == 0 {
		return nil, &topology.InputError{Path: smiPaths[0], Field: "--from", Msg: "an nvidia-smi matrix combines with lspci captures only; give it alone"}
	}
	m, err := lspci.Parse(ctx, lspciPaths, lspciData)
	if err != nil || len(smiPaths) == 0 {
		return m, err
	}
	return nvsmi.Combine(ctx, smiPaths[0], smiData[0], m)
}

// readImport reads a file to import, refusing one over MaxBytes.
func readImport(ctx context.Context, path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &topology.InputError{Path: path, Field: "--from", Msg: "cannot read file", Err: err}
	}
	defer f.Close()
	return readFrom(ctx, path, f, f)
}

// readFrom reads r, the contents of the open file f (r may have f's first
// bytes buffered), refusing more than MaxBytes.
func readFrom(ctx context.Context, path string, f *os.File, r io.Reader) ([]byte, error) {
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > MaxBytes {
		return nil, tooBig(path, st.Size())
	}
	// Pipes and devices have no size: read one byte past the cap to tell.
	data, err := io.ReadAll(io.LimitReader(&ctxio.Reader{Ctx: ctx, R: r}, MaxBytes+1))
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &topology.InputError{Path: path, Field: "--from", Msg: "cannot read file", Err: err}
	}
	if len(data) > MaxBytes {
		return nil, tooBig(path, int64(len(data)))
	}
	return data, nil
}

func tooBig(path string, size int64) error {
	what := "more than"
	if size > MaxBytes {
		what = fmt.Sprintf("%.1f MiB,", float64(size)/(1<<20))
	}
	return inputerr.Errorf(path, "--from", "file is %s over the %d MiB limit for topology files (real NCCL, hwloc and machine files are kilobytes to a few MB): is this the right file?", what, MaxBytes>>20)
}

// ImportBytes is Import for data already in memory; path names it in errors.
func ImportBytes(path string, data []byte) (*topology.Machine, error) {
	return ImportBytesContext(context.Background(), path, data)
}

// ImportBytesContext is ImportBytes that stops when ctx is cancelled.
func ImportBytesContext(ctx context.Context, path string, data []byte) (*topology.Machine, error) {
	if len(data) > MaxBytes {
		return nil, tooBig(path, int64(len(data)))
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	data = bytes.TrimPrefix(data, utf8BOM)
	m, err := importBytes(ctx, path, data)
	if err != nil && ctx.Err() != nil {
		return nil, ctx.Err() // the parse stopped because of the cancel
	}
	return m, err
}

func importBytes(ctx context.Context, path string, data []byte) (*topology.Machine, error) {
	if snapshot.Format(data) != "" {
		return snapshot.Import(ctx, path, bytes.NewReader(data))
	}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, inputerr.Errorf(path, "", "empty file (want machine JSON, NCCL/RCCL topology XML or hwloc XML)")
	}
	if trimmed[0] == '{' {
		return topology.Decode(path, data)
	}
	if trimmed[0] != '<' && nvsmi.LooksLike(data) {
		return nvsmi.Parse(ctx, path, data)
	}
	if trimmed[0] != '<' && lspci.LooksLike(data) {
		return lspci.Parse(ctx, []string{path}, [][]byte{data})
	}
	root, line, err := xmlRoot(data)
	if err != nil {
		return nil, &topology.InputError{Path: path, Line: line, Msg: "neither JSON, XML, an nvidia-smi topo -m matrix nor lspci output (want machine JSON, NCCL/RCCL topology XML, hwloc XML, nvidia-smi topo -m or lspci -vvv / -tv output)", Err: err}
	}
	switch root {
	case "system":
		return nccl.Parse(ctx, path, data)
	case "topology":
		return hwloc.Parse(ctx, path, data)
	case "graphs", "graph":
		return nil, &topology.InputError{Path: path, Line: line, Field: "<" + root + ">",
			Msg: "this is an NCCL channel graph (ring/tree channels, NCCL_GRAPH_FILE), not a topology: give the NCCL topology file (<system>, NCCL_TOPO_FILE or NCCL_TOPO_DUMP_FILE) instead"}
	}
	return nil, &topology.InputError{Path: path, Line: line, Field: "<" + root + ">",
		Msg: "unknown XML document (want NCCL/RCCL <system> or hwloc <topology>)"}
}

// xmlRoot returns the name of the first element and its line.
func xmlRoot(data []byte) (string, int, error) {
	dec := xml.NewDecoder(bytes.NewReader(data))
	for {
		tok, err := dec.Token()
		line, _ := dec.InputPos()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return "", line, errors.New("no root element")
			}
			return "", line, err
		}
		if se, ok := tok.(xml.StartElement); ok {
			return se.Name.Local, line, nil
		}
	}
}
