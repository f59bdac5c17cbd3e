// Package fsutil writes files whole or not at all and reads only regular
// files: temporary files and directories with the usual modes (0644 and
// 0755 less the umask, readable by another account), a write that syncs
// and renames over its target, and opens that refuse FIFOs and devices
// without blocking. Every package that writes or reads a user's files
// uses it.
package fsutil

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// CreateTemp is os.CreateTemp with the usual file mode: the file is
// created 0644 less the umask, not 0600, so a dataset, plan or store
// written by one account can be read by a training service running as
// another. pattern's last "*" is replaced by a random string (or one is
// appended).
func CreateTemp(dir, pattern string) (*os.File, error) {
	for range 10000 {
		name := filepath.Join(dir, tempName(pattern))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		return f, err
	}
	return nil, fmt.Errorf("create a temporary file in %s: too many names taken", dir)
}

// MkdirTemp is os.MkdirTemp with mode 0755 less the umask, not 0700.
func MkdirTemp(dir, pattern string) (string, error) {
	for range 10000 {
		name := filepath.Join(dir, tempName(pattern))
		err := os.Mkdir(name, 0o755)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		return name, nil
	}
	return "", fmt.Errorf("create a temporary directory in %s: too many names taken", dir)
}

func tempName(pattern string) string {
	r := fmt.Sprintf("%d", rand.Uint32())
	if i := strings.LastIndex(pattern, "*"); i >= 0 {
		return pattern[:i] + r + pattern[i+1:]
	}
	return pattern + r
}

// OpenRegular opens path for reading and refuses, without blocking,
// anything but a regular file: opening a FIFO waits for a writer, forever
// if none comes, and a device or a FIFO never ends. The error names the
// path and what it is.
func OpenRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s: not a regular file (%s)", path, describeMode(fi.Mode()))
	}
	return f, nil
}

// ReadRegularFile is os.ReadFile through OpenRegular.
func ReadRegularFile(path string) ([]byte, error) {
	f, err := OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// describeMode names a file's type for an error.
func describeMode(m os.FileMode) string {
	switch {
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeDevice != 0:
		return "a device"
	case m.IsDir():
		return "a directory"
	}
	return m.Type().String()
}

// WriteFileAtomic writes data to a temporary file beside path (of a new
// name, created with O_EXCL, so a link planted there is never followed),
// syncs it and renames it over path: a reader never sees a partial file
// and a failure leaves none.
func WriteFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	f, err := CreateTemp(dir, filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	fail := func(err error) error {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	// The rename is durable once the directory is synced (best effort:
	// some file systems refuse to sync a directory).
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
