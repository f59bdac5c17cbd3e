package store

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// mountEntry is the line of /proc/self/mountinfo for the mount holding a
// directory.
type mountEntry struct {
	dev    string // "major:minor" as the kernel reports st_dev
	point  string
	fsType string
	source string
}

// blockDevReason says why dir is not on a block device, or "" when it is: a
// directory in tmpfs, ramfs, overlay, a network or FUSE file system measures
// memory or the network, not an SSD. mountinfo is the text of
// /proc/self/mountinfo.
func blockDevReason(dir, mountinfo string) (string, error) {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return "", fmt.Errorf("stat %s: %w", dir, err)
	}
	maj, minor := unix.Major(st.Dev), unix.Minor(st.Dev)
	m, found := mountOf(dir, fmt.Sprintf("%d:%d", maj, minor), mountinfo)
	// A block device's own number names it in sysfs. File systems without
	// one (tmpfs, overlay, NFS, FUSE) get an anonymous major 0; btrfs does
	// too, but its mount source is a block device node.
	if maj != 0 {
		if _, err := os.Stat(fmt.Sprintf("/sys/dev/block/%d:%d", maj, minor)); err == nil {
			return "", nil
		}
	}
	if found && strings.HasPrefix(m.source, "/dev/") {
		var sst unix.Stat_t
		if err := unix.Stat(m.source, &sst); err == nil && sst.Mode&unix.S_IFMT == unix.S_IFBLK {
			return "", nil
		}
	}
	if !found {
		return fmt.Sprintf("not on a block device (device %d:%d, no mount found for it)", maj, minor), nil
	}
	return fmt.Sprintf("not on a block device (%s %s mounted on %s)", m.fsType, m.source, m.point), nil
}

// mountOf finds the mount of dir with device dev in mountinfo: the entry
// with that device whose mount point is the longest prefix of dir.
func mountOf(dir, dev, mountinfo string) (mountEntry, bool) {
	abs, err := filepath.Abs(dir)
	if err == nil {
		if r, err := filepath.EvalSymlinks(abs); err == nil {
			abs = r
		}
	}
	var best mountEntry
	found := false
	sc := bufio.NewScanner(strings.NewReader(mountinfo))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		// 36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(g) < 2 || f[2] != dev {
			continue
		}
		point := unescapeMount(f[4])
		if !within(abs, point) || found && len(point) < len(best.point) {
			continue
		}
		best, found = mountEntry{dev: f[2], point: point, fsType: g[0], source: unescapeMount(g[1])}, true
	}
	return best, found
}

// within says whether path is dir or below it.
func within(path, dir string) bool {
	return dir == "/" || path == dir || strings.HasPrefix(path, dir+"/")
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// directReason says why path cannot be read with O_DIRECT, or "" when it
// can: without it every read after the first comes from the page cache.
func directReason(path string) (string, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECT|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.EINVAL) {
		return "O_DIRECT not supported (EINVAL)", nil
	}
	if err != nil {
		return "", fmt.Errorf("open %s: %w", path, err)
	}
	return "", unix.Close(fd)
}
