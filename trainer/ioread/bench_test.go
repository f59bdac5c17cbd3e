package ioread

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

const (
	benchFileBytes = 4 << 30 // larger than any disk cache we expect to meet
	benchBlock     = 4096
	benchBatch     = 1 << 16 // requests per Read call
	// benchSegments is how many times the reader and fio take turns.
	benchSegments = 20
	// minFioSegment is the shortest segment fio is compared over.
	minFioSegment = 200 * time.Millisecond
)

// BenchmarkRandRead4K measures random 4 KiB O_DIRECT reads over a 4 GiB file
// on the disk at queue depths 1 to 128, taking turns with fio at the same
// block size, depth and engine (benchSegments turns each), for
// the target: at least 95% of fio's IOPS using at most one core.
//
//	go test -ldflags=-checklinkname=0 ./trainer/ioread -run '^$' -bench RandRead4K -benchtime 10s
//
// fio's figure is reported only when each segment lasts at least
// minFioSegment, so a short -benchtime shows the reader alone.
// Metrics: IOPS (device reads per second), fio-IOPS, vs-fio (IOPS/fio-IOPS),
// cpu-s/op (user+system CPU seconds of this process per read, io_uring
// kernel workers included), cores (CPU seconds per wall second).
// The file goes to $GNNPLAN_BENCH_DIR, default /var/tmp/gnnplan-bench, and is
// reused when present. fio is installed with apt-get when missing and we are
// root; without it the fio metrics are left out and the reason logged.
func BenchmarkRandRead4K(b *testing.B) {
	dir := os.Getenv("GNNPLAN_BENCH_DIR")
	if dir == "" {
		dir = "/var/tmp/gnnplan-bench"
	}
	path, err := benchFile(dir, benchFileBytes)
	if err != nil {
		b.Fatal(err)
	}
	fio, fioErr := ensureFio()
	// Each depth runs with the mode the reader picks for it; the depths
	// around inlineMaxDepth run with the other mode too, to show the choice.
	cases := []struct {
		qd   int
		mode string // "" (the reader's choice), "inline" or "split"
	}{
		{1, ""}, {1, "split"}, {4, ""}, {4, "split"}, {8, ""}, {8, "inline"}, {32, ""}, {32, "inline"}, {128, ""},
	}
	for _, tc := range cases {
		qd := tc.qd
		name := fmt.Sprintf("qd=%d", qd)
		if tc.mode != "" {
			name += "/" + tc.mode
		}
		b.Run(name, func(b *testing.B) {
			// MaxMergeBytes = one block: fio reads blocks one by one, so
			// neighbouring blocks must not be merged into larger reads.
			r, err := Open([]string{path}, Options{QueueDepth: qd, Direct: true, Engine: EngineIOUring, MaxMergeBytes: benchBlock})
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			if tc.mode != "" {
				r.eng.(*uringEngine).inline = tc.mode == "inline"
			}
			if r.Notes() != "" {
				b.Logf("notes: %s", r.Notes())
			}
			blocks := int64(benchFileBytes / benchBlock)
			// Dst memory, reused round robin; touched now so that page
			// faults on first use stay out of the timed loop.
			arena := make([]byte, 4096*benchBlock)
			for i := range arena {
				arena[i] = 1
			}
			rng := rand.New(rand.NewPCG(uint64(qd), uint64(b.N)))
			// The reads are cut into benchSegments segments, and fio runs
			// after each for as long as the segment took: the two alternate,
			// so the disk's drift (10% and more over minutes here) hits both
			// alike.
			var segments [][][]Request
			per := (b.N + benchSegments - 1) / benchSegments
			for left := b.N; left > 0; {
				seg := min(left, per)
				left -= seg
				var batches [][]Request
				for seg > 0 {
					n := min(seg, benchBatch)
					seg -= n
					// Distinct blocks within a batch: duplicates would merge
					// and flatter the IOPS against fio, which reads each block
					// once.
					seen := make(map[int64]bool, n)
					reqs := make([]Request, 0, n)
					for len(reqs) < n {
						blk := rng.Int64N(blocks)
						if seen[blk] {
							continue
						}
						seen[blk] = true
						k := len(reqs) % 4096
						reqs = append(reqs, Request{Offset: blk * benchBlock, Length: benchBlock, Dst: arena[k*benchBlock : (k+1)*benchBlock]})
					}
					batches = append(batches, reqs)
				}
				segments = append(segments, batches)
			}

			// fio runs only in rounds whose segments last long enough for
			// its figure to mean something: the framework's last, long round,
			// not its short probes.
			withFio := fioErr == nil
			ctx := context.Background()
			var (
				reads          int
				wall           time.Duration
				cpu            float64
				fioIOs, fioSec float64
			)
			b.ResetTimer()
			for i, batches := range segments {
				var ru0, ru1 unix.Rusage
				unix.Getrusage(unix.RUSAGE_SELF, &ru0)
				b.StartTimer()
				start := time.Now()
				for _, reqs := range batches {
					st, err := r.Read(ctx, reqs)
					if err != nil {
						b.Fatal(err)
					}
					reads += st.DeviceReads
				}
				took := time.Since(start)
				b.StopTimer()
				unix.Getrusage(unix.RUSAGE_SELF, &ru1)
				wall += took
				cpu += tvSeconds(ru1.Utime) - tvSeconds(ru0.Utime) + tvSeconds(ru1.Stime) - tvSeconds(ru0.Stime)
				if i == 0 && took < minFioSegment {
					// Decided on the first segment: the last may be shorter
					// than the others, and must not drop the comparison.
					withFio = false
				}
				if withFio {
					ios, sec, err := runFio(fio, path, qd, took)
					if err != nil {
						b.Fatal(err)
					}
					fioIOs += ios
					fioSec += sec
				}
			}
			iops := float64(reads) / wall.Seconds()
			b.ReportMetric(iops, "IOPS")
			b.ReportMetric(cpu/float64(b.N), "cpu-s/op")
			b.ReportMetric(cpu/wall.Seconds(), "cores")
			switch {
			case fioErr != nil && b.N > 1:
				b.Logf("fio comparison skipped: %v", fioErr)
			case withFio:
				f := fioIOs / fioSec
				b.ReportMetric(f, "fio-IOPS")
				b.ReportMetric(iops/f, "vs-fio")
			}
		})
	}
}

func tvSeconds(tv unix.Timeval) float64 { return float64(tv.Sec) + float64(tv.Usec)/1e6 }

// benchFile returns dir/randread-4GiB.dat, writing it first if it is missing
// or short. The blocks hold distinct data and are really written: fallocate
// would leave unwritten extents, which the filesystem answers with zeros
// without touching the disk. Written with O_DIRECT (when the filesystem
// allows) to a temporary name and renamed, so an interrupted run leaves no
// short file behind that a later run would trust.
func benchFile(dir string, size int64) (string, error) {
	path := filepath.Join(dir, "randread-4GiB.dat")
	if st, err := os.Stat(path); err == nil && st.Size() >= size {
		return path, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("bench file: %w", err)
	}
	tmp := path + ".tmp"
	flags := unix.O_WRONLY | unix.O_CREAT | unix.O_TRUNC | unix.O_CLOEXEC
	fd, err := unix.Open(tmp, flags|unix.O_DIRECT, 0o644)
	if err != nil {
		fd, err = unix.Open(tmp, flags, 0o644)
	}
	if err != nil {
		return "", fmt.Errorf("bench file: create %s: %w", tmp, err)
	}
	defer os.Remove(tmp) // no-op after the rename
	const chunk = 4 << 20
	buf, err := unix.Mmap(-1, 0, chunk, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		unix.Close(fd)
		return "", fmt.Errorf("bench file: %w", err)
	}
	defer unix.Munmap(buf)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i+8 <= chunk; i += 8 {
		binary.LittleEndian.PutUint64(buf[i:], rng.Uint64())
	}
	for off := int64(0); off < size; off += chunk {
		for blk := 0; blk < chunk; blk += benchBlock {
			binary.LittleEndian.PutUint64(buf[blk:], uint64(off)+uint64(blk))
		}
		for done := 0; done < chunk; {
			n, err := unix.Pwrite(fd, buf[done:], off+int64(done))
			if err != nil {
				unix.Close(fd)
				return "", fmt.Errorf("bench file: write %s at %d: %w", tmp, off+int64(done), err)
			}
			done += n
		}
	}
	if err := unix.Fsync(fd); err != nil {
		unix.Close(fd)
		return "", fmt.Errorf("bench file: fsync %s: %w", tmp, err)
	}
	if err := unix.Close(fd); err != nil {
		return "", fmt.Errorf("bench file: close %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", fmt.Errorf("bench file: %w", err)
	}
	return path, nil
}

// ensureFio finds fio, installing the Debian package when it is missing and
// we are root.
func ensureFio() (string, error) {
	if p, err := exec.LookPath("fio"); err == nil {
		return p, nil
	}
	if os.Geteuid() != 0 {
		return "", fmt.Errorf("fio not found and not root to apt-get install it")
	}
	install := func() error {
		cmd := exec.Command("apt-get", "install", "-y", "-q", "fio")
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("apt-get install fio: %w: %s", err, lastLine(out))
		}
		return nil
	}
	if err := install(); err != nil {
		// A fresh image often has no package lists yet.
		if out, uerr := exec.Command("apt-get", "update", "-q").CombinedOutput(); uerr != nil {
			return "", fmt.Errorf("%w; apt-get update: %v: %s", err, uerr, lastLine(out))
		}
		if err := install(); err != nil {
			return "", err
		}
	}
	return exec.LookPath("fio")
}

func lastLine(b []byte) string {
	s := strings.TrimRight(string(b), "\n")
	return s[strings.LastIndexByte(s, '\n')+1:]
}

// runFio runs the fio command line for about d (at least half a
// second) and returns the reads it completed and the seconds it ran them in.
func runFio(fio, path string, qd int, d time.Duration) (ios, seconds float64, err error) {
	ms := max(d, 500*time.Millisecond).Milliseconds()
	cmd := exec.Command(fio, "--name=r", "--filename="+path, "--rw=randread", "--bs=4k", "--direct=1",
		"--ioengine=io_uring", "--iodepth="+strconv.Itoa(qd), "--runtime="+strconv.FormatInt(ms, 10)+"ms", "--time_based",
		"--numjobs=1", "--output-format=json")
	out, err := cmd.Output()
	if err != nil {
		return 0, 0, fmt.Errorf("fio: %w", err)
	}
	var res struct {
		Jobs []struct {
			Read struct {
				TotalIOs  float64 `json:"total_ios"`
				RuntimeMs float64 `json:"runtime"`
			} `json:"read"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return 0, 0, fmt.Errorf("fio: parse JSON output: %w", err)
	}
	if len(res.Jobs) == 0 || res.Jobs[0].Read.TotalIOs <= 0 || res.Jobs[0].Read.RuntimeMs <= 0 {
		return 0, 0, fmt.Errorf("fio: no reads in output")
	}
	return res.Jobs[0].Read.TotalIOs, res.Jobs[0].Read.RuntimeMs / 1e3, nil
}
