package ioread

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// fallbackAlign is used when neither statx nor sysfs tells the alignment: it
// is the logical block size of nearly every NVMe drive and the page size, so
// O_DIRECT accepts it wherever it accepts anything.
const fallbackAlign = 4096

// openFile opens path read-only, with O_DIRECT when direct is set and the
// filesystem allows it, and finds its read alignment. note is non-empty when
// the file is read differently from what was asked.
// openFD is unix.Open, or a test's stand-in.
func openFile(path string, direct bool, openFD func(string, int, uint32) (int, error)) (fi fileInfo, note string, err error) {
	flags := unix.O_RDONLY | unix.O_CLOEXEC
	fd := -1
	if direct {
		fd, err = openFD(path, flags|unix.O_DIRECT, 0)
		switch {
		case err == nil:
			fi.direct = true
		case errors.Is(err, unix.EINVAL):
			// tmpfs before Linux 6.6 and some FUSE or overlay mounts refuse
			// O_DIRECT; the bytes are the same through the page cache.
			note = fmt.Sprintf("%s: O_DIRECT refused (EINVAL), reading through the page cache", path)
		default:
			return fi, "", fmt.Errorf("ioread: open %s: %w", path, err)
		}
	}
	if fd < 0 {
		fd, err = openFD(path, flags, 0)
		if err != nil {
			return fi, "", fmt.Errorf("ioread: open %s: %w", path, err)
		}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		_ = unix.Close(fd)
		return fi, "", fmt.Errorf("ioread: stat %s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		_ = unix.Close(fd)
		return fi, "", fmt.Errorf("ioread: open %s: %w", path, unix.EISDIR)
	}
	fi.path, fi.fd = path, fd
	fi.align = dioAlignment(fd, st)
	return fi, note, nil
}

// dioAlignment returns the byte alignment direct reads of fd need: statx
// STATX_DIOALIGN (Linux 6.1+, ext4/xfs/btrfs/block devices), else the logical
// block size of the device holding the file from sysfs, else 4096. Offsets
// and lengths are aligned to it; buffers are page aligned, which covers
// dio_mem_align on every device we know of, and we take the larger of the two
// in case a device wants more.
func dioAlignment(fd int, st unix.Stat_t) int {
	var sx unix.Statx_t
	err := unix.Statx(fd, "", unix.AT_EMPTY_PATH, unix.STATX_DIOALIGN, &sx)
	if err == nil && sx.Mask&unix.STATX_DIOALIGN != 0 && sx.Dio_offset_align > 0 {
		return int(max(sx.Dio_offset_align, sx.Dio_mem_align))
	}
	dev := st.Dev
	if st.Mode&unix.S_IFMT == unix.S_IFBLK {
		dev = st.Rdev
	}
	if n, ok := logicalBlockSize(unix.Major(dev), unix.Minor(dev)); ok {
		return n
	}
	return fallbackAlign
}

// logicalBlockSize reads queue/logical_block_size of a block device from
// sysfs. A partition has no queue directory of its own; its disk (the parent
// directory) does.
func logicalBlockSize(major, minor uint32) (int, bool) {
	// /sys/dev/block/M:m links to the device's directory under /sys/devices,
	// the same one /sys/class/block/<name> links to. Resolve it before going
	// to the parent: filepath.Join would drop ".." lexically.
	dir, err := filepath.EvalSymlinks(fmt.Sprintf("/sys/dev/block/%d:%d", major, minor))
	if err != nil {
		return 0, false
	}
	for _, p := range []string{filepath.Join(dir, "queue", "logical_block_size"), filepath.Join(filepath.Dir(dir), "queue", "logical_block_size")} {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err == nil && n > 0 && n&(n-1) == 0 {
			return n, true
		}
	}
	return 0, false
}
