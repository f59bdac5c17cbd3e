package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gnnplan/gnnplan/internal/inputerr"
	"github.com/gnnplan/gnnplan/trainer/ioread"
)

// fakeDepthReader stands in for an ioread.Reader: Stream pulls requests from
// the profile's source the way the reader does (a slice handed back only
// after its rows are done) and records how the profile fed it.
type fakeDepthReader struct {
	opt     ioread.Options
	notes   string
	streams *int // Stream calls, over all readers of a test
	reqs    int  // requests this reader was given
	chunk   int
	// ran is how long Stream ran until the source had nothing more.
	ran time.Duration
}

func (f *fakeDepthReader) Stream(ctx context.Context, next func([]ioread.Request) int) (ioread.Stats, error) {
	*f.streams++
	start := time.Now()
	var st ioread.Stats
	bufs := [2][]ioread.Request{make([]ioread.Request, f.chunk), make([]ioread.Request, f.chunk)}
	for i := 0; ; i++ {
		b := bufs[i%2]
		n := next(b)
		if n == 0 {
			f.ran = time.Since(start)
			return st, nil
		}
		for _, q := range b[:n] {
			if len(q.Dst) < q.Length || q.Length <= 0 {
				return st, errors.New("bad request from the profile")
			}
			st.Requests++
			st.UsefulBytes += int64(q.Length)
			st.DeviceBytes += int64(q.Length)
		}
		f.reqs += n
		time.Sleep(time.Millisecond) // a slow disk: the deadline, not the source, ends the stream
	}
}

func (f *fakeDepthReader) Engine() string    { return ioread.EnginePread }
func (f *fakeDepthReader) Alignment(int) int { return 512 }
func (f *fakeDepthReader) Notes() string     { return f.notes }
func (f *fakeDepthReader) Close() error      { return nil }

func TestProfileStreamsEachDepthAndKeepsNotes(t *testing.T) {
	dir := t.TempDir()
	streams := 0
	var readers []*fakeDepthReader
	env := profileEnv{
		open: func(path string, opt ioread.Options) (depthReader, error) {
			f := &fakeDepthReader{opt: opt, streams: &streams, chunk: 16,
				notes: "io_uring unavailable (operation not permitted): using a pread pool of 4 workers"}
			readers = append(readers, f)
			return f, nil
		},
		mountinfo: realProfileEnv().mountinfo,
	}
	opt := ProfileOptions{Dirs: []string{dir}, FeatureBytes: 512, Depths: []int{1, 32, 128}, FileBytes: 1 << 20,
		Duration: 50 * time.Millisecond, AllowNonBlock: true}
	p, err := profile(context.Background(), opt, nil, env)
	if err != nil {
		t.Fatal(err)
	}
	if streams != len(opt.Depths) {
		t.Errorf("%d streams for %d depths: each depth must be one continuous stream, not batches that drain", streams, len(opt.Depths))
	}
	for i, f := range readers {
		if f.opt.QueueDepth != opt.Depths[i] || !f.opt.Direct {
			t.Errorf("reader %d opened with %+v, want queue depth %d and O_DIRECT", i, f.opt, opt.Depths[i])
		}
		// The source kept handing out rows until the deadline, however
		// slowly the (loaded) machine let the fake disk go.
		if f.ran < opt.Duration*9/10 || f.reqs < 2*f.chunk {
			t.Errorf("depth %d: the source stopped after %v and %d requests, want it to keep the reader fed for %v",
				opt.Depths[i], f.ran, f.reqs, opt.Duration)
		}
	}
	// The reader's note, once, naming the directory.
	n := 0
	for _, s := range p.Notes {
		if strings.Contains(s, "io_uring unavailable") {
			n++
			if !strings.Contains(s, dir) {
				t.Errorf("note %q does not name %s", s, dir)
			}
		}
	}
	if n != 1 {
		t.Errorf("notes %q: want the reader's note once", p.Notes)
	}
}

func TestMountOf(t *testing.T) {
	const mi = `22 27 0:21 / /proc rw,relatime - proc proc rw
27 1 252:0 / / rw,relatime - ext4 /dev/vda rw
25 24 0:23 / /dev/shm rw,relatime - tmpfs tmpfs rw,size=24684084k
40 27 252:0 /srv /mnt/data rw - ext4 /dev/vda rw
41 27 0:45 / /mnt/my\040disk rw - btrfs /dev/nvme0n1p2 rw,ssd
42 27 0:46 / /var/lib/docker/x rw - overlay overlay rw,lowerdir=/a
`
	cases := []struct {
		name, dir, dev string
		want           mountEntry
		found          bool
	}{
		{"tmpfs by its device", "/dev/shm/x", "0:23", mountEntry{dev: "0:23", point: "/dev/shm", fsType: "tmpfs", source: "tmpfs"}, true},
		{"longest mount point of the device wins", "/mnt/data/a", "252:0", mountEntry{dev: "252:0", point: "/mnt/data", fsType: "ext4", source: "/dev/vda"}, true},
		{"root mount for other paths", "/var/tmp", "252:0", mountEntry{dev: "252:0", point: "/", fsType: "ext4", source: "/dev/vda"}, true},
		{"escaped space in the mount point", "/mnt/my disk/f", "0:45", mountEntry{dev: "0:45", point: "/mnt/my disk", fsType: "btrfs", source: "/dev/nvme0n1p2"}, true},
		{"overlay", "/var/lib/docker/x/y", "0:46", mountEntry{dev: "0:46", point: "/var/lib/docker/x", fsType: "overlay", source: "overlay"}, true},
		{"unknown device", "/dev/shm", "0:99", mountEntry{}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, found := mountOf(tc.dir, tc.dev, mi)
			if found != tc.found || got != tc.want {
				t.Errorf("mountOf(%q, %q) = %+v, %v; want %+v, %v", tc.dir, tc.dev, got, found, tc.want, tc.found)
			}
		})
	}
}

func TestProfileRefusesTmpfs(t *testing.T) {
	if _, err := os.Stat("/dev/shm"); err != nil {
		t.Skip("no /dev/shm on this machine")
	}
	dir, err := os.MkdirTemp("/dev/shm", "gnnplan-profile-test-")
	if err != nil {
		t.Skipf("cannot write to /dev/shm: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	mi, _ := os.ReadFile("/proc/self/mountinfo")
	if reason, err := blockDevReason(dir, string(mi)); err != nil || reason == "" {
		t.Skipf("/dev/shm is on a block device here (%v)", err)
	}
	opt := ProfileOptions{Dirs: []string{dir}, FeatureBytes: 512, Depths: []int{4}, FileBytes: 1 << 20, Duration: 20 * time.Millisecond}
	_, err = Profile(context.Background(), opt, nil)
	var ie *inputerr.Error
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "not on a block device") {
		t.Fatalf("err %v: want an input error naming %s as not on a block device", err, dir)
	}
	if _, err := os.Stat(filepath.Join(dir, "gnnplan-profile.dat")); err == nil {
		t.Error("a test file was written before the directory was refused")
	}
	opt.AllowNonBlock = true
	p, err := Profile(context.Background(), opt, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Notes) == 0 || !strings.Contains(strings.Join(p.Notes, "\n"), "not on a block device") {
		t.Errorf("notes %q: want the directory flagged", p.Notes)
	}
}
