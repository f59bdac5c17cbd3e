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
	"runtime"
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
// block size and depth (benchSegments turns each), for the targets:
// the io_uring engine against fio's io_uring engine (iodepth=QD), at least
// 95% of its IOPS using at most one core (issue 6); the pread pool against
// fio's psync engine with numjobs=QD (one blocking read per thread, as the
// pool), at least 90% of its IOPS with no more CPU per read (issue 11).
//
//	go test -ldflags=-checklinkname=0 ./trainer/ioread -run '^$' -bench RandRead4K -benchtime 10s
//	go test -ldflags=-checklinkname=0 ./trainer/ioread -run '^$' -bench 'RandRead4K/pread' -benchtime 10s
//
// fio's figure is reported only when each segment lasts at least
// minFioSegment, so a short -benchtime shows the reader alone.
// Metrics: IOPS (device reads per second), fio-IOPS, vs-fio (IOPS/fio-IOPS),
// cpu-us/op (user+system CPU microseconds of this process per read, io_uring
// kernel workers included), fio-cpu-us/op (fio's own usr+sys CPU per read,
// summed over its jobs), cpu-vs-fio (their ratio), cores (CPU seconds per
// wall second).
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
		engine string
		qd     int
		mode   string // io_uring: "" (the reader's choice), "inline" or "split"
	}{
		{EngineIOUring, 1, ""}, {EngineIOUring, 1, "split"}, {EngineIOUring, 4, ""}, {EngineIOUring, 4, "split"},
		{EngineIOUring, 8, ""}, {EngineIOUring, 8, "inline"}, {EngineIOUring, 32, ""}, {EngineIOUring, 32, "inline"},
		{EngineIOUring, 128, ""},
		{EnginePread, 1, ""}, {EnginePread, 32, ""}, {EnginePread, 128, ""},
	}
	for _, tc := range cases {
		qd := tc.qd
		// The mode goes with the engine, so that -bench '/io_uring/qd=1$'
		// picks the default alone.
		name := tc.engine
		if tc.mode != "" {
			name += "-" + tc.mode
		}
		name += fmt.Sprintf("/qd=%d", qd)
		b.Run(name, func(b *testing.B) {
			// MaxMergeBytes = one block: fio reads blocks one by one, so
			// neighbouring blocks must not be merged into larger reads.
			r, err := Open([]string{path}, Options{QueueDepth: qd, Direct: true, Engine: tc.engine, MaxMergeBytes: benchBlock})
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

			// The setup's garbage is collected now, not in the timed
			// segments, where it would count as CPU per read.
			runtime.GC()

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
				fioCPU         float64
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
					fr, err := runFio(fio, path, tc.engine, qd, took)
					if err != nil {
						b.Fatal(err)
					}
					fioIOs += fr.ios
					fioSec += fr.seconds
					fioCPU += fr.cpuSeconds
				}
			}
			iops := float64(reads) / wall.Seconds()
			b.ReportMetric(iops, "IOPS")
			b.ReportMetric(cpu/float64(reads)*1e6, "cpu-us/op")
			b.ReportMetric(cpu/wall.Seconds(), "cores")
			switch {
			case fioErr != nil && b.N > 1:
				b.Logf("fio comparison skipped: %v", fioErr)
			case withFio:
				f := fioIOs / fioSec
				b.ReportMetric(f, "fio-IOPS")
				b.ReportMetric(iops/f, "vs-fio")
				fc := fioCPU / fioIOs
				b.ReportMetric(fc*1e6, "fio-cpu-us/op")
				b.ReportMetric(cpu/float64(reads)/fc, "cpu-vs-fio")
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

// fioResult is what one fio run did: reads completed, the seconds they took
// (the jobs' mean runtime; they run side by side) and the CPU seconds fio's
// jobs used (usr+sys, summed over jobs).
type fioResult struct {
	ios, seconds, cpuSeconds float64
}

// runFio runs fio for about d (at least half a second) at queue depth qd the
// way the engine under test reads: io_uring with iodepth=qd in one job, or,
// for the pread pool, psync (one blocking pread at a time) in qd jobs.
func runFio(fio, path, engine string, qd int, d time.Duration) (fioResult, error) {
	ms := max(d, 500*time.Millisecond).Milliseconds()
	args := []string{"--name=r", "--filename=" + path, "--rw=randread", "--bs=4k", "--direct=1",
		"--runtime=" + strconv.FormatInt(ms, 10) + "ms", "--time_based", "--output-format=json"}
	if engine == EnginePread {
		args = append(args, "--ioengine=psync", "--iodepth=1", "--numjobs="+strconv.Itoa(qd), "--thread")
	} else {
		args = append(args, "--ioengine=io_uring", "--iodepth="+strconv.Itoa(qd), "--numjobs=1")
	}
	out, err := exec.Command(fio, args...).Output()
	if err != nil {
		return fioResult{}, fmt.Errorf("fio: %w", err)
	}
	var res struct {
		Jobs []struct {
			Read struct {
				TotalIOs  float64 `json:"total_ios"`
				RuntimeMs float64 `json:"runtime"`
			} `json:"read"`
			UsrCPU float64 `json:"usr_cpu"` // percent of one CPU over the job's runtime
			SysCPU float64 `json:"sys_cpu"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return fioResult{}, fmt.Errorf("fio: parse JSON output: %w", err)
	}
	var r fioResult
	for _, j := range res.Jobs {
		r.ios += j.Read.TotalIOs
		r.seconds += j.Read.RuntimeMs / 1e3 / float64(len(res.Jobs))
		r.cpuSeconds += (j.UsrCPU + j.SysCPU) / 100 * j.Read.RuntimeMs / 1e3
	}
	if r.ios <= 0 || r.seconds <= 0 {
		return fioResult{}, fmt.Errorf("fio: no reads in output")
	}
	return r, nil
}
