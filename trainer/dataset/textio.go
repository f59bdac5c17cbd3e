package dataset

import (
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/gnnplan/gnnplan/internal/inputerr"
)

// gzipMagic starts every gzip stream (RFC 1952 section 2.3.1).
const gzipMagic = "\x1f\x8b"

// openInput opens a file an importer reads. A directory, or anything else
// that is not a regular file, is refused as bad input naming the path once
// (reading a directory would otherwise fail deep inside a line loop). A
// gzip file, told by its magic bytes rather than its name, is
// decompressed on the fly; a corrupt stream then reads as a bad-input
// error. field names the flag the path came from ("--from", "--split").
//
// When ctx carries an import's Progress (withImportProgress), reading the
// file is a phase of its size on disk (compressed bytes for gzip).
func openInput(ctx context.Context, path, field string) (io.ReadCloser, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, &inputerr.Error{Path: path, Field: field, Msg: "cannot read", Err: pathless(err)}
	}
	if st.IsDir() {
		return nil, &inputerr.Error{Path: path, Field: field, Msg: "is a directory (want a file)"}
	}
	if !st.Mode().IsRegular() {
		return nil, &inputerr.Error{Path: path, Field: field, Msg: fmt.Sprintf("is a %s, not a regular file", st.Mode().Type())}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, &inputerr.Error{Path: path, Field: field, Msg: "cannot read", Err: pathless(err)}
	}
	var raw io.Reader = f
	if add := progressPhase(ctx, "import: reading "+filepath.Base(path), st.Size()); add != nil {
		raw = &countingReader{r: f, add: add}
	}
	br := bufio.NewReaderSize(raw, 1<<16)
	magic, _ := br.Peek(2)
	if string(magic) != gzipMagic {
		return &bufferedFile{Reader: br, f: f}, nil
	}
	zr, err := gzip.NewReader(br)
	if err != nil {
		f.Close()
		return nil, &inputerr.Error{Path: path, Field: field, Msg: "corrupt gzip header", Err: err}
	}
	return &gzipFile{path: path, zr: zr, f: f}, nil
}

// bufferedFile is a plain file read through a buffer.
type bufferedFile struct {
	*bufio.Reader
	f *os.File
}

func (b *bufferedFile) Close() error { return b.f.Close() }

// gzipFile decompresses a file; a stream that ends early or fails its
// checksum is the user's file at fault, so it reads as an InputError.
type gzipFile struct {
	path string
	zr   *gzip.Reader
	f    *os.File
}

func (g *gzipFile) Read(p []byte) (int, error) {
	n, err := g.zr.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		err = &inputerr.Error{Path: g.path, Msg: "corrupt or truncated gzip data", Err: err}
	}
	return n, err
}

func (g *gzipFile) Close() error {
	g.zr.Close()
	return g.f.Close()
}

// pathless strips the path from an *fs.PathError ("stat X: no such
// file"), for an InputError that names the path itself, so the message
// says the path once.
func pathless(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// trimGz drops a ".gz" suffix, for names derived from a file's name.
func trimGz(name string) string { return strings.TrimSuffix(name, ".gz") }

// findInput returns dir/name or dir/name.gz, whichever exists (the plain
// name first); it returns dir/name when neither does, so the error that
// follows names the file the format expects.
func findInput(dir, name string) string {
	p := filepath.Join(dir, name)
	if _, err := os.Stat(p); err == nil {
		return p
	}
	if _, err := os.Stat(p + ".gz"); err == nil {
		return p + ".gz"
	}
	return p
}

// decompressToTemp copies a gzip file's content to a temporary file in
// dir, for readers that need random access (Geom-GCN's second pass seeks
// to each node's line). It returns the path, to be removed by the caller.
func decompressToTemp(ctx context.Context, path, dir string) (string, error) {
	in, err := openInput(ctx, path, "--from")
	if err != nil {
		return "", err
	}
	defer in.Close()
	tmp, err := os.CreateTemp(dir, trimGz(filepath.Base(path))+".*.tmp")
	if err != nil {
		return "", fmt.Errorf("decompress %s: %w", path, err)
	}
	if _, err := io.Copy(tmp, in); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		var ie *inputerr.Error
		if errors.As(err, &ie) {
			return "", err
		}
		return "", fmt.Errorf("decompress %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("decompress %s: %w", path, err)
	}
	return tmp.Name(), nil
}

// isGzip reports whether path starts with the gzip magic bytes.
func isGzip(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var b [2]byte
	_, err = io.ReadFull(f, b[:])
	return err == nil && string(b[:]) == gzipMagic
}

// requireDir refuses a --from that is not a directory, saying what the
// format wants there, before any reader stumbles on it.
func requireDir(path, want string) error {
	st, err := os.Stat(path)
	if err != nil {
		return &inputerr.Error{Path: path, Field: "--from", Msg: "cannot read (want " + want + ")", Err: pathless(err)}
	}
	if !st.IsDir() {
		return &inputerr.Error{Path: path, Field: "--from", Msg: "is a file (want " + want + ")"}
	}
	return nil
}

// importProgressKey carries an import's Progress in its context, so the
// line scanners of every format report without threading it through each
// importer's helpers.
type importProgressKey struct{}

// withImportProgress returns ctx carrying w's Progress, if w is one.
func withImportProgress(ctx context.Context, w io.Writer) context.Context {
	if p := AsProgress(w); p != nil {
		return context.WithValue(ctx, importProgressKey{}, p)
	}
	return ctx
}

// progressPhase starts a phase on ctx's Progress and returns its counter,
// or nil when there is none.
func progressPhase(ctx context.Context, name string, total int64) func(int64) {
	p, _ := ctx.Value(importProgressKey{}).(Progress)
	if p == nil {
		return nil
	}
	return p.Phase(name, total)
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r   io.Reader
	add func(int64)
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.add(int64(n))
	return n, err
}
