package store

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/gnnplan/gnnplan/internal/inputerr"
	"github.com/gnnplan/gnnplan/trainer/ioread"
)

// ProfileSchemaVersion versions the machine profile JSON.
const ProfileSchemaVersion = 1

// ProfileOptions say what `gnnplan profile` measures.
type ProfileOptions struct {
	// Dirs are directories on the SSDs to measure (one test file each).
	Dirs []string
	// FeatureBytes is the size of one feature row: reads are this size,
	// at offsets aligned as a materialized bin file lays rows out.
	FeatureBytes int
	// Depths are the queue depths to measure (default 1, 4, 16, 64, 256).
	Depths []int
	// FileBytes is the test file's size (default 1 GiB); larger than the
	// device cache makes the numbers honest.
	FileBytes int64
	// Duration is how long each queue depth runs (default 2 s).
	Duration time.Duration
	// Engine is ioread's engine ("auto", "io_uring", "pread").
	Engine string
	// Seed fixes the random offsets.
	Seed uint64
	// AllowNonBlock measures a directory that is not on a block device or
	// refuses O_DIRECT (tmpfs, overlay, a page-cached file) instead of
	// refusing it; the profile then says so in its notes. For tests.
	AllowNonBlock bool
}

// DepthResult is one disk at one queue depth.
type DepthResult struct {
	QueueDepth     int     `json:"queue_depth"`
	IOPS           float64 `json:"iops"`
	UsefulGBps     float64 `json:"useful_GBps"` // feature bytes per second
	DeviceGBps     float64 `json:"device_GBps"` // bytes read from the device per second
	CPUSecondsPerG float64 `json:"cpu_s_per_GB"`
}

// DiskProfile is one directory's measurements.
type DiskProfile struct {
	Dir        string        `json:"dir"`
	Engine     string        `json:"engine"`
	Alignment  int           `json:"alignment_bytes"`
	Depths     []DepthResult `json:"depths"`
	BestGBps   float64       `json:"best_useful_GBps"`
	BestDepth  int           `json:"best_queue_depth"`
	FileBytes  int64         `json:"file_bytes"`
	StrideByte int           `json:"stride_bytes"`
}

// MachineProfile is what `gnnplan profile -o json` writes: measured rates
// that `gnnplan recommend --measured` uses instead of catalog figures.
type MachineProfile struct {
	SchemaVersion int           `json:"schema_version"`
	FeatureBytes  int           `json:"feature_bytes"`
	Disks         []DiskProfile `json:"disks"`
	// SSDGBps is the mean over disks of their best useful rate: one SSD's
	// feature-row read rate for the TPC model.
	SSDGBps float64 `json:"ssd_GBps"`
	// MemcpyGBps is single-threaded memory copy bandwidth (a lower bound
	// for one socket's DRAM read rate).
	MemcpyGBps float64 `json:"memcpy_GBps"`
	// Compute is the machine's CPU training rates (nil when not
	// measured).
	Compute *ComputeProfile `json:"compute,omitempty"`
	// GPUs is each GPU's measured rates (a build with the cuda tag on a
	// machine with GPUs).
	GPUs  []GPUProfile `json:"gpus,omitempty"`
	Notes []string     `json:"notes,omitempty"`
}

// GPUProfile is one GPU as the driver names it and as `gnnplan profile`
// measured it: host-to-device copies (the PCIe link the TPC model
// charges) and GEMM at a training shape with the trainer's kernels.
type GPUProfile struct {
	Ordinal   int     `json:"ordinal"`
	Name      string  `json:"name"`
	MemoryGiB float64 `json:"memory_GiB"`
	PCIBusID  string  `json:"pci_bus_id,omitempty"`
	Backend   string  `json:"backend"`
	// H2DPinnedGBps is copies from page-locked memory (how the trainer's
	// staging buffers feed the GPU), H2DPageableGBps from ordinary memory.
	H2DPinnedGBps   float64 `json:"h2d_pinned_GBps"`
	H2DPageableGBps float64 `json:"h2d_pageable_GBps"`
	GEMMGFLOPS      float64 `json:"gemm_GFLOPS"`
	GEMMShape       [3]int  `json:"gemm_shape"` // m, k, n
}

// ComputeProfile is what a CPU worker does per second: GEMM with the
// trainer's kernels at a training shape, and neighbour sampling on one
// core, measured by `gnnplan profile`.
type ComputeProfile struct {
	Cores      int     `json:"cores"`
	Backend    string  `json:"backend"`
	GEMMGFLOPS float64 `json:"gemm_GFLOPS"` // all cores
	GEMMShape  [3]int  `json:"gemm_shape"`  // m, k, n
	// SamplerEdgesPerSPerCore is sampled edges per second on one core,
	// on SamplerGraph with fanouts 25,10 and batches of 1024.
	SamplerEdgesPerSPerCore float64 `json:"sampler_edges_per_s_per_core"`
	SamplerGraph            string  `json:"sampler_graph"`
	// The step's other kernel classes, each with the trainer's kernels on
	// every core (kernels.MeasureLayerGemm, MeasureRowGather,
	// MeasureAggregation, MeasureStream); zero in a profile from before
	// they were measured. LayerGEMMGFLOPS is a layer's three products at
	// LayerShape (rows, in, out); RowGatherGBps rows of RowGatherBytes
	// gathered from a table of RowGatherTableGiB; AggregationGBps the
	// mean aggregation's source rows of AggregationCols values.
	LayerGEMMGFLOPS   float64 `json:"layer_gemm_GFLOPS,omitempty"`
	LayerShape        [3]int  `json:"layer_shape,omitempty"`
	RowGatherGBps     float64 `json:"row_gather_GBps,omitempty"`
	RowGatherBytes    int     `json:"row_gather_bytes,omitempty"`
	RowGatherTableGiB float64 `json:"row_gather_table_GiB,omitempty"`
	AggregationGBps   float64 `json:"aggregation_GBps,omitempty"`
	AggregationCols   int     `json:"aggregation_cols,omitempty"`
	StreamGBps        float64 `json:"stream_GBps,omitempty"`
}

// Profile measures random-read throughput and IOPS of each directory's
// device at the feature size and each queue depth, and memory copy
// bandwidth. A directory that is not on a block device, or whose file system
// refuses O_DIRECT, is refused with an *inputerr.Error (its figures
// would be memory's, not an SSD's) unless opt.AllowNonBlock is set.
func Profile(ctx context.Context, opt ProfileOptions, progress io.Writer) (*MachineProfile, error) {
	return profile(ctx, opt, progress, realProfileEnv())
}

// depthReader is what profiling needs of an *ioread.Reader.
type depthReader interface {
	Stream(ctx context.Context, next func(reqs []ioread.Request) int) (ioread.Stats, error)
	Engine() string
	Alignment(file int) int
	Notes() string
	Close() error
}

// profileEnv holds what the tests replace: how a reader is opened and where
// the mount table comes from.
type profileEnv struct {
	open      func(path string, opt ioread.Options) (depthReader, error)
	mountinfo func() (string, error)
}

func realProfileEnv() profileEnv {
	return profileEnv{
		open: func(path string, opt ioread.Options) (depthReader, error) { return ioread.Open([]string{path}, opt) },
		mountinfo: func() (string, error) {
			b, err := os.ReadFile("/proc/self/mountinfo")
			return string(b), err
		},
	}
}

func profile(ctx context.Context, opt ProfileOptions, progress io.Writer, env profileEnv) (*MachineProfile, error) {
	if opt.FeatureBytes <= 0 {
		return nil, &inputerr.Error{Field: "--feature-bytes", Msg: fmt.Sprintf("%d (want > 0)", opt.FeatureBytes)}
	}
	if len(opt.Depths) == 0 {
		opt.Depths = []int{1, 4, 16, 64, 256}
	}
	for _, d := range opt.Depths {
		if d < 1 || d > 4096 {
			return nil, &inputerr.Error{Field: "--depths", Msg: fmt.Sprintf("%d (want 1 to 4096)", d)}
		}
	}
	if opt.FileBytes <= 0 {
		opt.FileBytes = 1 << 30
	}
	if opt.Duration <= 0 {
		opt.Duration = 2 * time.Second
	}
	if opt.Engine == "" {
		opt.Engine = ioread.EngineAuto
	}
	p := &MachineProfile{SchemaVersion: ProfileSchemaVersion, FeatureBytes: opt.FeatureBytes}
	for _, dir := range opt.Dirs {
		dp, notes, err := profileDir(ctx, dir, opt, progress, env)
		if err != nil {
			return nil, err
		}
		p.Disks = append(p.Disks, *dp)
		p.SSDGBps += dp.BestGBps / float64(len(opt.Dirs))
		p.Notes = append(p.Notes, notes...)
	}
	p.MemcpyGBps = memcpyGBps(ctx)
	if len(opt.Dirs) == 0 {
		p.Notes = append(p.Notes, "no --ssd-dir: disks not measured")
	}
	return p, ctx.Err()
}

// checkDevice refuses dir (an *inputerr.Error naming it and why) when
// it is not on a block device or refuses O_DIRECT, or with allow returns
// that as a note.
func checkDevice(dir string, allow bool, env profileEnv) (note string, err error) {
	mi, err := env.mountinfo()
	if err != nil {
		return "", fmt.Errorf("profile %s: mount table: %w", dir, err)
	}
	reason, err := blockDevReason(dir, mi)
	if err != nil {
		return "", fmt.Errorf("profile %s: %w", dir, err)
	}
	if reason == "" {
		// O_DIRECT on a small probe before writing a large test file.
		probe := filepath.Join(dir, ".gnnplan-profile-probe")
		if err := os.WriteFile(probe, make([]byte, 4096), 0o644); err != nil {
			return "", fmt.Errorf("profile %s: %w", dir, err)
		}
		reason, err = directReason(probe)
		os.Remove(probe)
		if err != nil {
			return "", fmt.Errorf("profile %s: %w", dir, err)
		}
	}
	switch {
	case reason == "":
		return "", nil
	case !allow:
		return "", &inputerr.Error{Path: dir, Field: "--ssd-dir", Msg: reason + ": its reads would not measure an SSD (--allow-non-block measures it anyway)"}
	default:
		return fmt.Sprintf("%s: %s: the figures are not an SSD's", dir, reason), nil
	}
}

// profileDir creates (or reuses) a test file in dir and reads it at each
// queue depth. It returns the notes to show: the device check's and the
// reader's (an engine fallback, reads through the page cache).
func profileDir(ctx context.Context, dir string, opt ProfileOptions, progress io.Writer, env profileEnv) (*DiskProfile, []string, error) {
	st, err := os.Stat(dir)
	if err != nil || !st.IsDir() {
		return nil, nil, &inputerr.Error{Path: dir, Field: "--ssd-dir", Msg: "not a directory"}
	}
	var notes []string
	addNote := func(n string) {
		if n != "" && !slices.Contains(notes, n) {
			notes = append(notes, n)
		}
	}
	devNote, err := checkDevice(dir, opt.AllowNonBlock, env)
	if err != nil {
		return nil, nil, err
	}
	addNote(devNote)
	path := filepath.Join(dir, "gnnplan-profile.dat")
	if err := ensureTestFile(path, opt.FileBytes, progress); err != nil {
		return nil, nil, err
	}
	stride := int(StrideFor(int64(opt.FeatureBytes)))
	rows := opt.FileBytes / int64(stride)
	dp := &DiskProfile{Dir: dir, FileBytes: opt.FileBytes, StrideByte: stride}
	rng := rand.New(rand.NewPCG(opt.Seed, 0x9e3779b97f4a7c15))
	for _, depth := range opt.Depths {
		r, err := env.open(path, ioread.Options{QueueDepth: depth, Direct: true, Engine: opt.Engine})
		if err != nil {
			return nil, nil, fmt.Errorf("profile %s: %w", dir, err)
		}
		dp.Engine, dp.Alignment = r.Engine(), r.Alignment(0)
		if n := r.Notes(); n != "" {
			addNote(fmt.Sprintf("%s: reader: %s", dir, n))
		}
		// One stream per depth: the reader keeps depth reads in flight
		// from the first to the last, planning the next rows while the
		// disk works, instead of draining the queue after every batch.
		// next runs under the reader's lock, one call at a time, and gets
		// back a slice only once its earlier rows are read, so each
		// request's buffer is allocated once and reused.
		cpu0 := cpuSeconds()
		start := time.Now()
		next := func(reqs []ioread.Request) int {
			if ctx.Err() != nil || time.Since(start) >= opt.Duration {
				return 0
			}
			for i := range reqs {
				if reqs[i].Dst == nil {
					reqs[i].Dst = make([]byte, opt.FeatureBytes)
				}
				reqs[i].Offset, reqs[i].Length = rng.Int64N(rows)*int64(stride), opt.FeatureBytes
			}
			return len(reqs)
		}
		st, err := r.Stream(ctx, next)
		secs := time.Since(start).Seconds()
		cpu := cpuSeconds() - cpu0
		if cerr := r.Close(); err == nil && cerr != nil {
			err = cerr
		}
		if err == nil {
			err = ctx.Err()
		}
		if err != nil {
			return nil, nil, fmt.Errorf("profile %s: queue depth %d: %w", dir, depth, err)
		}
		res := DepthResult{QueueDepth: depth, IOPS: float64(st.Requests) / secs, UsefulGBps: float64(st.UsefulBytes) / secs / 1e9, DeviceGBps: float64(st.DeviceBytes) / secs / 1e9}
		if st.UsefulBytes > 0 {
			res.CPUSecondsPerG = cpu / (float64(st.UsefulBytes) / 1e9)
		}
		dp.Depths = append(dp.Depths, res)
		if res.UsefulGBps > dp.BestGBps {
			dp.BestGBps, dp.BestDepth = res.UsefulGBps, depth
		}
		if progress != nil {
			fmt.Fprintf(progress, "profile %s: queue depth %d: %.0f IOPS, %.3f GB/s\n", dir, depth, res.IOPS, res.UsefulGBps)
		}
	}
	return dp, notes, nil
}

// ensureTestFile writes size bytes of random data to path unless a file
// of that size is there already (reused across runs: writing GBs is slow).
func ensureTestFile(path string, size int64, progress io.Writer) error {
	if st, err := os.Stat(path); err == nil && st.Size() == size {
		return nil
	}
	if progress != nil {
		fmt.Fprintf(progress, "profile: writing a %d MiB test file %s\n", size>>20, path)
	}
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	buf := make([]byte, 8<<20)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i+8 <= len(buf); i += 8 {
		v := rng.Uint64()
		for k := 0; k < 8; k++ {
			buf[i+k] = byte(v >> (8 * k))
		}
	}
	for left := size; left > 0; {
		n := int64(len(buf))
		if left < n {
			n = left
		}
		if _, err := f.Write(buf[:n]); err != nil {
			f.Close()
			os.Remove(tmp)
			return fmt.Errorf("profile: write %s: %w", tmp, err)
		}
		left -= n
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("profile: %w", err)
	}
	f.Close()
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("profile: %w", err)
	}
	return nil
}

// memcpyGBps times copying a 256 MiB buffer a few times.
func memcpyGBps(ctx context.Context) float64 {
	const size = 256 << 20
	src, dst := make([]byte, size), make([]byte, size)
	for i := range src {
		src[i] = byte(i)
	}
	copy(dst, src) // touch the pages before timing
	start := time.Now()
	n := 0
	for time.Since(start) < 500*time.Millisecond && ctx.Err() == nil {
		copy(dst, src)
		n++
	}
	return float64(n) * size / time.Since(start).Seconds() / 1e9
}

// cpuSeconds is the process's user + system CPU time (0 where it cannot
// be read).
func cpuSeconds() float64 {
	s, _ := rusageSeconds(rusageProcess)
	return s
}
