package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/gnnplan/gnnplan/ddak/layout"

	"github.com/gnnplan/gnnplan/ddak"
	"github.com/gnnplan/gnnplan/internal/tier"
	"github.com/gnnplan/gnnplan/trainer/dataset"
)

// Benchmark dataset: 4 Mi vertices of 128 float32 (512-byte rows, 2 GiB),
// with Zipf(benchZipfS) hotness over a random order of the vertices.
const (
	benchVertices = 1 << 22
	benchDim      = 128
	benchZipfS    = 0.9 // the top 5% of vertices get 2/3 of the accesses
	benchBatch    = 8192
	benchBatches  = 64
)

// benchDir is where the benchmark keeps its dataset and bin files between
// runs: on the real disk (tmpfs would measure memory, and /tmp may be
// tmpfs), overridable with GNNPLAN_BENCH_DIR.
func benchDir() string {
	if d := os.Getenv("GNNPLAN_BENCH_DIR"); d != "" {
		return d
	}
	return "/var/tmp/gnnplan-bench-store"
}

// BenchmarkGather gathers batches of 8192 distinct vertices drawn with the
// hotness's skew, 512-byte rows, from a DDAK layout with the caches on
// (a worker cache of 5% of the rows and two socket caches of 5% each,
// four SSD bins) and off (the same bins, caches of capacity 0), with the
// io_uring reader and the pread pool. Besides MB/s of gathered rows (all
// tiers) it reports SSD useful MB/s, read amplification (device bytes /
// useful SSD bytes), CPU seconds per gathered GB (getrusage: user + system
// of the whole process, so the reader's goroutines count), the cache hit
// rate and device reads per second. The dataset and stores are built on
// the first run (a few GB under benchDir) and reused.
func BenchmarkGather(b *testing.B) {
	if testing.Short() {
		b.Skip("writes a 2 GiB dataset")
	}
	base := benchDir()
	feats, err := benchFeatures(b, filepath.Join(base, "features"))
	if err != nil {
		b.Fatal(err)
	}
	hot := zipfHotness(benchVertices, benchZipfS, rand.New(rand.NewPCG(1, 1)))
	batches := zipfBatches(hot, rand.New(rand.NewPCG(2, 2)))
	for _, cache := range []bool{true, false} {
		for _, engine := range []string{"io_uring", "pread"} {
			name := fmt.Sprintf("cache=%v/engine=%s", map[bool]string{true: "on", false: "off"}[cache], engine)
			b.Run(name, func(b *testing.B) {
				dir := filepath.Join(base, map[bool]string{true: "cache-on", false: "cache-off"}[cache])
				s, err := benchStore(b, feats, dir, hot, cache, Options{Engine: engine})
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				dst := make([]float32, benchBatch*benchDim)
				var total GatherStats
				b.SetBytes(benchBatch * benchDim * 4)
				cpu0 := cpuSeconds()
				start := time.Now()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					st, err := s.Gather(context.Background(), batches[i%len(batches)], dst)
					if err != nil {
						b.Fatal(err)
					}
					total.Add(st)
				}
				b.StopTimer()
				wall := time.Since(start).Seconds()
				cpu := cpuSeconds() - cpu0
				b.ReportMetric(float64(total.UsefulBytes)/wall/1e6, "ssd-useful-MB/s")
				b.ReportMetric(total.ReadAmplification(), "read-amp")
				b.ReportMetric(cpu/(float64(total.Bytes)/1e9), "cpu-s/GB")
				b.ReportMetric(100*float64(total.WorkerCacheHits+total.SocketCacheHits)/float64(total.Rows), "hit-%")
				b.ReportMetric(float64(total.DeviceReads)/wall, "device-reads/s")
				if s.Notes() != "" {
					b.Logf("reader: %s", s.Notes())
				}
			})
		}
	}
}

// benchFeatures writes (once) the benchmark's features.npy and meta.json.
func benchFeatures(b *testing.B, dir string) (string, error) {
	meta := dataset.Meta{Name: "bench", NumNodes: benchVertices, FeatureDim: benchDim, FeatureDType: "float32", IndexDType: "int32"}
	if m, err := dataset.ReadMeta(dir); err == nil && m.NumNodes == meta.NumNodes && m.FeatureDim == meta.FeatureDim {
		if fr, err := dataset.OpenFeatures(dir, m); err == nil {
			fr.Close()
			return dir, nil
		}
	}
	b.Logf("writing the benchmark dataset in %s", dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	a, err := dataset.CreateArray(filepath.Join(dir, dataset.FeaturesFile), "<f4", benchVertices, benchDim)
	if err != nil {
		return "", err
	}
	const chunk = 1 << 14
	buf := make([]float32, chunk*benchDim)
	for v0 := 0; v0 < benchVertices; v0 += chunk {
		for i := range buf {
			// Distinct per vertex and column, cheap to make.
			buf[i] = float32(v0*benchDim+i) * 0.5
		}
		if err := a.Write(buf); err != nil {
			a.Abort()
			return "", err
		}
	}
	if err := a.Close(); err != nil {
		return "", err
	}
	return dir, dataset.WriteMeta(dir, meta)
}

// benchStore opens the store in dir, building it first (dataset links,
// DDAK layout, materialized bins) when it is absent or stale.
func benchStore(b *testing.B, feats, dir string, hot []uint32, cache bool, opt Options) (*Store, error) {
	if s, err := Open(dir, opt); err == nil {
		return s, nil
	}
	b.Logf("building the store in %s", dir)
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	for _, f := range []string{dataset.MetaFile, dataset.FeaturesFile} {
		if err := os.Link(filepath.Join(feats, f), filepath.Join(dir, f)); err != nil {
			return nil, err
		}
	}
	n := int64(benchVertices)
	share := int64(0)
	if cache {
		share = n / 20
	}
	bins := []layout.Bin{
		{ID: "gpu0", Kind: tier.GPUMem, Socket: 0, CapacityRows: share, TargetShare: 0.4},
		{ID: "socket0", Kind: tier.HostMem, Socket: 0, CapacityRows: share, TargetShare: 0.1},
		{ID: "socket1", Kind: tier.HostMem, Socket: 1, CapacityRows: share, TargetShare: 0.1},
	}
	var ssd []string
	for i := range 4 {
		bins = append(bins, layout.Bin{ID: fmt.Sprintf("nvme%d", i), Kind: tier.SSD, Socket: i / 2, CapacityRows: n, TargetShare: 0.1})
		d := filepath.Join(dir, fmt.Sprintf("ssd%d", i))
		if err := os.Mkdir(d, 0o755); err != nil {
			return nil, err
		}
		ssd = append(ssd, d)
	}
	l, err := ddak.Place(hot, bins, ddak.Options{})
	if err != nil {
		return nil, err
	}
	if err := layout.Write(dir, l, bins); err != nil {
		return nil, err
	}
	if _, err := Materialize(context.Background(), dir, dir, ssd, MaterializeOptions{}); err != nil {
		return nil, err
	}
	return Open(dir, opt)
}

// zipfBatches draws benchBatches batches of benchBatch distinct vertices,
// each vertex drawn with probability proportional to its hotness (what a
// sampler's batches look like after deduplication).
func zipfBatches(hot []uint32, rng *rand.Rand) [][]int32 {
	cdf := make([]float64, len(hot))
	sum := 0.0
	for v, h := range hot {
		sum += float64(h)
		cdf[v] = sum
	}
	batches := make([][]int32, benchBatches)
	seen := make(map[int32]bool, benchBatch)
	for i := range batches {
		clear(seen)
		batch := make([]int32, 0, benchBatch)
		for len(batch) < benchBatch {
			v := int32(min(sort.SearchFloat64s(cdf, rng.Float64()*sum), len(hot)-1))
			if !seen[v] {
				seen[v] = true
				batch = append(batch, v)
			}
		}
		batches[i] = batch
	}
	return batches
}

// BenchmarkRowCRC is the row check's cost: the CRC-32C of rows of 512 B
// and 4 KiB walked in order over 256 MiB (more than any cache holds, as a
// batch's rows are by the time they are checked), per row.
func BenchmarkRowCRC(b *testing.B) {
	buf := make([]byte, 256<<20)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	for _, rb := range []int{512, 4096} {
		b.Run(fmt.Sprintf("row=%dB", rb), func(b *testing.B) {
			b.SetBytes(int64(rb))
			off := 0
			var x uint32
			for range b.N {
				if off+rb > len(buf) {
					off = 0
				}
				x ^= rowCRC(buf[off : off+rb])
				off += rb
			}
			_ = x
		})
	}
}
