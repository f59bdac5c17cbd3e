package snapshot

import (
	"archive/tar"
	"bufio"
	"compress/bzip2"
	"compress/flate"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/gnnplan/gnnplan/internal/fsutil"
	"github.com/gnnplan/gnnplan/internal/inputerr"
	"github.com/gnnplan/gnnplan/topology"
	"github.com/gnnplan/gnnplan/topology/internal/ctxio"
)

// Limits on unpacking a sysfs snapshot. Real snapshots are small (ghw's and
// hwloc's hold 2,000-10,000 entries and a few MB); the caps stop a crafted
// archive from filling the disk that holds the temporary directory.
const (
	MaxBytes   = 1 << 30   // file contents written, in bytes
	MaxEntries = 2_000_000 // tar entries read, of any type
)

// snapshotLimits bounds one extraction; tests shrink it.
type snapshotLimits struct {
	bytes   int64
	entries int
}

func defaultSnapshotLimits() snapshotLimits {
	return snapshotLimits{bytes: MaxBytes, entries: MaxEntries}
}

// HeadBytes is how much of a file Format needs: a tar
// header's magic ends at offset 265.
const HeadBytes = 512

// Format names the archive format head starts with, by magic bytes:
// "gzip", "bzip2", "tar", the compressions Import refuses ("xz", "zstd"),
// or "" for anything else.
func Format(head []byte) string {
	switch {
	case len(head) >= 2 && head[0] == 0x1f && head[1] == 0x8b:
		return "gzip"
	// "BZh", a block size digit, then a block's or the end's magic.
	case len(head) >= 10 && string(head[:3]) == "BZh" && head[3] >= '1' && head[3] <= '9' &&
		(string(head[4:10]) == "1AY&SY" || string(head[4:10]) == "\x17\x72\x45\x38\x50\x90"):
		return "bzip2"
	case len(head) >= 6 && string(head[:6]) == "\xfd7zXZ\x00":
		return "xz"
	case len(head) >= 4 && string(head[:4]) == "\x28\xb5\x2f\xfd":
		return "zstd"
	case isTarHeader(head):
		return "tar"
	}
	return ""
}

// isTarHeader reports whether head starts with a POSIX ("ustar\x0000") or
// GNU ("ustar  \x00") tar header.
func isTarHeader(head []byte) bool {
	return len(head) >= 265 && (string(head[257:263]) == "ustar\x00" || string(head[257:265]) == "ustar  \x00")
}

// Import imports the machine a sysfs snapshot archive describes: it
// unpacks r (the archive at path) into a temporary directory under
// os.TempDir, discovers the machine there, and removes the directory.
func Import(ctx context.Context, path string, r io.Reader) (m *topology.Machine, err error) {
	dir, err := fsutil.MkdirTemp(os.TempDir(), "gnnplan-snapshot-*")
	if err != nil {
		return nil, fmt.Errorf("unpack %s: %w", path, err)
	}
	defer func() {
		if rerr := os.RemoveAll(dir); rerr != nil && err == nil {
			m, err = nil, fmt.Errorf("unpack %s: remove the temporary directory: %w", path, rerr)
		}
	}()
	root, err := extractSnapshot(ctx, path, r, dir, defaultSnapshotLimits())
	if err != nil {
		return nil, err
	}
	m, err = topology.Discover(ctx, topology.DiscoverOptions{Root: root})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		// Name the archive, not the temporary directory that is gone.
		msg := strings.TrimPrefix(err.Error(), "discover "+root+": ")
		return nil, inputerr.Errorf(path, "", "sysfs snapshot: %s", strings.ReplaceAll(msg, root, "snapshot"))
	}
	m.Source = "sysfs-snapshot:" + path
	if root == dir && m.Name == filepath.Base(dir) {
		// No product name and no top directory: name it after the file.
		m.Name = snapshotName(path)
	}
	return m, nil
}

// snapshotName is the archive's file name without its archive extensions.
func snapshotName(path string) string {
	name := filepath.Base(path)
	for _, ext := range []string{".gz", ".tgz", ".bz2", ".tbz2", ".tbz", ".tar"} {
		name = strings.TrimSuffix(name, ext)
	}
	if name == "" {
		return "snapshot"
	}
	return name
}

// extractSnapshot unpacks the sysfs snapshot archive r (a tar, plain, gzip
// or bzip2 by magic bytes; path names it in errors) into dir, an existing
// empty directory, and returns the directory inside dir that holds sys/.
// It writes nothing outside dir: entries escaping it are refused, symlinks
// are kept only when they resolve inside it, device files, fifos and hard
// links to outside are skipped. Failures are *InputError naming path, or
// ctx's error on cancel; what was written stays for the caller to remove.
func extractSnapshot(ctx context.Context, path string, r io.Reader, dir string, lim snapshotLimits) (string, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return "", fmt.Errorf("unpack %s: %w", path, err)
	}
	defer root.Close()
	x := &snapshotExtractor{path: path, root: root, lim: lim, sysParents: map[string]bool{}}
	stream, err := x.open(ctx, r)
	if err != nil {
		return "", err
	}
	tr := tar.NewReader(stream)
	for {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if errors.Is(err, tar.ErrInsecurePath) {
			return "", inputerr.Errorf(path, "", "entry %q leads outside the archive's root; refusing it", h.Name)
		}
		if err != nil {
			return "", x.readErr(ctx, err)
		}
		if err := x.entry(h, tr); err != nil {
			if ctx.Err() != nil {
				return "", ctx.Err()
			}
			return "", err
		}
	}
	// Read the compressed stream to its end, so a cut-off file or a bad
	// checksum after the tar's last block is still reported.
	if x.format != "tar" {
		if _, err := io.Copy(io.Discard, io.LimitReader(stream, 1<<20)); err != nil {
			return "", x.readErr(ctx, err)
		}
	}
	if err := x.checkSymlinks(ctx, dir); err != nil {
		return "", err
	}
	return x.sysfsRoot(dir)
}

// open recognises r's format by its magic bytes and returns the tar stream
// inside it, having checked that one starts there.
func (x *snapshotExtractor) open(ctx context.Context, r io.Reader) (io.Reader, error) {
	br := bufio.NewReaderSize(&ctxio.Reader{Ctx: ctx, R: r}, 64<<10)
	head, _ := br.Peek(HeadBytes)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	x.format = Format(head)
	switch x.format {
	case "tar":
		return br, nil
	case "gzip":
		gz, err := gzip.NewReader(br)
		if err != nil {
			return nil, x.readErr(ctx, err)
		}
		return x.checkTar(ctx, gz)
	case "bzip2":
		return x.checkTar(ctx, bzip2.NewReader(br))
	case "xz", "zstd":
		return nil, inputerr.Errorf(x.path, "", "%s-compressed archive: sysfs snapshots are read as .tar, .tar.gz or .tar.bz2; decompress it first", x.format)
	}
	return nil, inputerr.Errorf(x.path, "", "not a tar archive (want a sysfs snapshot as .tar, .tar.gz or .tar.bz2)")
}

// checkTar says plainly when compressed data is not a tar archive.
func (x *snapshotExtractor) checkTar(ctx context.Context, r io.Reader) (io.Reader, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	head, err := br.Peek(HeadBytes)
	if len(head) < HeadBytes && err != nil && !errors.Is(err, io.EOF) {
		return nil, x.readErr(ctx, err)
	}
	if !isTarHeader(head) {
		return nil, inputerr.Errorf(x.path, "", "%s data that is not a tar archive (want a sysfs snapshot as .tar, .tar.gz or .tar.bz2)", x.format)
	}
	return br, nil
}

// snapshotExtractor writes one archive's entries below root.
type snapshotExtractor struct {
	path       string
	format     string // "tar", "gzip" or "bzip2"
	root       *os.Root
	lim        snapshotLimits
	entries    int
	bytes      int64
	sysParents map[string]bool // directories (slash paths, "" = top) holding sys/bus or sys/devices
}

func (x *snapshotExtractor) entry(h *tar.Header, tr io.Reader) error {
	x.entries++
	if x.entries > x.lim.entries {
		return inputerr.Errorf(x.path, "", "more than %d entries; a sysfs snapshot has thousands: is this the right file?", x.lim.entries)
	}
	// Every entry's data is read, even a skipped one's, so all count.
	if h.Size > 0 {
		x.bytes += h.Size
	}
	if x.bytes > x.lim.bytes {
		return inputerr.Errorf(x.path, "", "more than %d MiB unpacked; a sysfs snapshot is a few MB: is this the right file?", x.lim.bytes>>20)
	}
	switch h.Typeflag {
	case tar.TypeDir, tar.TypeReg, tar.TypeSymlink, tar.TypeLink:
	default:
		return nil // device files, fifos, PAX globals: sysfs discovery reads none
	}
	name, ok := localName(h.Name)
	if !ok {
		return inputerr.Errorf(x.path, "", "entry %q leads outside the archive's root; refusing it", h.Name)
	}
	if name == "." {
		return nil // the archive's top directory itself
	}
	x.noteSys(name)
	fname := filepath.FromSlash(name)
	switch h.Typeflag {
	case tar.TypeDir:
		return x.write(name, x.root.MkdirAll(fname, 0o755))
	case tar.TypeReg:
		if err := x.root.MkdirAll(filepath.Dir(fname), 0o755); err != nil {
			return x.write(name, err)
		}
		// Modes are not kept: everything stays readable and removable.
		f, err := x.root.OpenFile(fname, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return x.write(name, err)
		}
		_, err = io.Copy(f, tr)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				return x.write(name, err) // writing failed
			}
			return snapshotReadErr(x.path, x.format, err)
		}
		return nil
	case tar.TypeSymlink:
		target := h.Linkname
		if target == "" || path.IsAbs(target) || filepath.IsAbs(target) || !filepath.IsLocal(filepath.FromSlash(path.Join(path.Dir(name), target))) {
			return inputerr.Errorf(x.path, "", "symlink %s -> %s points outside the snapshot; refusing it", name, target)
		}
		if err := x.root.MkdirAll(filepath.Dir(fname), 0o755); err != nil {
			return x.write(name, err)
		}
		if fi, err := x.root.Lstat(fname); err == nil && !fi.IsDir() {
			x.root.Remove(fname) // a later entry replaces an earlier one, as tar does
		}
		return x.write(name, x.root.Symlink(filepath.FromSlash(target), fname))
	case tar.TypeLink:
		old, ok := localName(h.Linkname)
		if !ok {
			return nil // a hard link to outside: skipped
		}
		// Only to regular files: a hard link to a symlink would move the
		// symlink and change where its relative target points.
		fi, err := x.root.Lstat(filepath.FromSlash(old))
		if err != nil || !fi.Mode().IsRegular() {
			return nil
		}
		if err := x.root.MkdirAll(filepath.Dir(fname), 0o755); err != nil {
			return x.write(name, err)
		}
		x.root.Remove(fname)
		return x.write(name, x.root.Link(filepath.FromSlash(old), fname))
	}
	return nil
}

// write turns a failure to write name into an error naming the archive.
func (x *snapshotExtractor) write(name string, err error) error {
	if err == nil {
		return nil
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err // the path is the temporary directory's, not the user's
	}
	return &topology.InputError{Path: x.path, Msg: fmt.Sprintf("cannot unpack entry %s", name), Err: err}
}

// localName cleans a tar entry name and reports whether it stays inside
// the archive's root.
func localName(name string) (string, bool) {
	if name == "" || path.IsAbs(name) || filepath.IsAbs(name) {
		return "", false
	}
	c := path.Clean(name)
	if c == "." {
		return c, true
	}
	return c, filepath.IsLocal(filepath.FromSlash(c))
}

// noteSys records the directory above name's first sys/bus or sys/devices.
func (x *snapshotExtractor) noteSys(name string) {
	parts := strings.Split(name, "/")
	for i := 0; i+1 < len(parts); i++ {
		if parts[i] == "sys" && (parts[i+1] == "bus" || parts[i+1] == "devices") {
			x.sysParents[strings.Join(parts[:i], "/")] = true
			return
		}
	}
}

// checkSymlinks refuses a symlink that leads outside dir once the whole
// archive is unpacked: each link's target was checked as written, but a
// chain (a link into a directory reached through another link, "..")
// can still leave. os.Root resolves the way the kernel will.
func (x *snapshotExtractor) checkSymlinks(ctx context.Context, dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("unpack %s: %w", x.path, err)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink == 0 {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return fmt.Errorf("unpack %s: %w", x.path, err)
		}
		_, err = x.root.Stat(rel)
		// Dangling links are common in snapshots (the capture left their
		// targets out) and harmless: reading them fails.
		if err == nil || errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.ELOOP) {
			return nil
		}
		target, _ := x.root.Readlink(rel)
		return inputerr.Errorf(x.path, "", "symlink %s -> %s points outside the snapshot; refusing it", filepath.ToSlash(rel), filepath.ToSlash(target))
	})
}

// sysfsRoot picks the directory the snapshot's sys/ is in: the shallowest
// one that discovery accepts.
func (x *snapshotExtractor) sysfsRoot(dir string) (string, error) {
	cands := make([]string, 0, len(x.sysParents))
	for p := range x.sysParents {
		if topology.IsSysfsRoot(filepath.Join(dir, filepath.FromSlash(p))) {
			cands = append(cands, p)
		}
	}
	depth := func(p string) int {
		if p == "" {
			return 0
		}
		return strings.Count(p, "/") + 1
	}
	sort.Slice(cands, func(i, j int) bool {
		if di, dj := depth(cands[i]), depth(cands[j]); di != dj {
			return di < dj
		}
		return cands[i] < cands[j]
	})
	if len(cands) == 0 {
		return "", inputerr.Errorf(x.path, "", "not a sysfs snapshot: no sys/bus/pci or sys/devices in it (want a tar of a captured /sys tree, as ghw-snapshot or hwloc-gather-topology make)")
	}
	if len(cands) > 1 && depth(cands[1]) == depth(cands[0]) {
		var same []string
		for _, c := range cands {
			if depth(c) == depth(cands[0]) {
				same = append(same, c+"/sys")
			}
		}
		return "", inputerr.Errorf(x.path, "", "holds %d sysfs trees (%s): give one machine's snapshot", len(same), strings.Join(same, ", "))
	}
	return filepath.Join(dir, filepath.FromSlash(cands[0])), nil
}

// readErr is snapshotReadErr, or ctx's error when the read failed because
// of a cancel.
func (x *snapshotExtractor) readErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return snapshotReadErr(x.path, x.format, err)
}

// snapshotReadErr explains a failure to read the archive's bytes.
func snapshotReadErr(path, format string, err error) error {
	var msg string
	var bzErr bzip2.StructuralError
	var flateErr flate.CorruptInputError
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF), format == "gzip" && errors.Is(err, io.EOF):
		what := format + " stream"
		if format == "tar" {
			what = "tar archive"
		}
		msg = fmt.Sprintf("truncated %s: the file ends early (was the copy cut short?)", what)
	case errors.As(err, &flateErr):
		msg = "damaged gzip stream: corrupt data"
	case errors.Is(err, gzip.ErrChecksum):
		msg = "damaged gzip stream: checksum mismatch"
	case errors.Is(err, gzip.ErrHeader):
		msg = "damaged gzip stream: bad header"
	case errors.As(err, &bzErr):
		msg = "damaged bzip2 stream: " + string(bzErr)
	case errors.Is(err, tar.ErrHeader):
		msg = "damaged tar archive: bad entry header"
	default:
		return &topology.InputError{Path: path, Msg: "cannot read the " + format + " archive", Err: err}
	}
	return &topology.InputError{Path: path, Msg: msg}
}
