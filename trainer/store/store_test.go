package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gnnplan/gnnplan/ddak/layout"

	"github.com/gnnplan/gnnplan/internal/inputerr"
	"github.com/gnnplan/gnnplan/internal/tier"
	"github.com/gnnplan/gnnplan/trainer/dataset"
	"github.com/gnnplan/gnnplan/trainer/internal/rownorm"
)

// materialized is a fixture placed and materialized, ready to Open.
func materialized(t testing.TB, n, dim int, mix tierMix, nDirs int, seed uint64) (*fixture, *layout.Layout, *Manifest) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 13))
	fx := newFixture(t, n, dim, seed)
	l := fx.place(t, randomBins(n, mix, rng), rng)
	m, err := Materialize(context.Background(), fx.dir, fx.dir, ssdDirs(t, nDirs), MaterializeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return fx, l, m
}

// randomBatch draws k vertices, with repeats, from [0, n).
func randomBatch(n, k int, rng *rand.Rand) []int32 {
	b := make([]int32, k)
	for i := range b {
		b[i] = int32(rng.IntN(n))
	}
	return b
}

// gatherNoHang runs Gather, failing the test if it does not return within
// a minute: a read that never completes must not hang training.
func gatherNoHang(t *testing.T, s *Store, ctx context.Context, batch []int32, dst []float32) (GatherStats, error) {
	t.Helper()
	type result struct {
		st  GatherStats
		err error
	}
	done := make(chan result, 1)
	go func() {
		st, err := s.Gather(ctx, batch, dst)
		done <- result{st, err}
	}()
	select {
	case r := <-done:
		return r.st, r.err
	case <-time.After(time.Minute):
		t.Fatalf("Gather of %d rows did not return within a minute", len(batch))
		return GatherStats{}, nil
	}
}

func TestGatherMatchesFeaturesReadStraight(t *testing.T) {
	type setup struct {
		dim int
		n   int
		mix tierMix
		opt Options
	}
	var cases []setup
	// Rows of 4, 12, 512 bytes (eight to a 4 KiB block), 2800 and 6000
	// (straddling blocks: 512-byte strides of 3072 and 6144) and 4000.
	for _, dim := range []int{1, 3, 128, 700, 1000, 1500} {
		for _, mix := range []tierMix{mixAllCache, mixAllSSD, mixMixed} {
			cases = append(cases, setup{dim: dim, n: 1200 - dim/2, mix: mix})
		}
	}
	// The engines and queue depths: the pread pool, a queue of one, and
	// reads through the page cache.
	cases = append(cases,
		setup{dim: 700, n: 500, mix: mixMixed, opt: Options{Engine: "pread", Workers: 3}},
		setup{dim: 128, n: 2000, mix: mixAllSSD, opt: Options{QueueDepth: 1}},
		setup{dim: 1500, n: 400, mix: mixAllSSD, opt: Options{QueueDepth: 2, Engine: "pread"}},
		setup{dim: 64, n: 1000, mix: mixMixed, opt: Options{Buffered: true}},
		// Rows served scaled: the cached ones scaled once, the SSD
		// rows as read, features.npy's (the override) too.
		setup{dim: 128, n: 1500, mix: mixMixed, opt: Options{RowNormalize: true}},
		setup{dim: 700, n: 500, mix: mixAllSSD, opt: Options{RowNormalize: true, Engine: "pread", Workers: 2}},
		setup{dim: 33, n: 900, mix: mixMixed, opt: Options{RowNormalize: true, Cache: &CacheOverride{Fraction: 0.3, Hotness: zipfHotness(900, 1.1, rand.New(rand.NewPCG(5, 5)))}}})
	for ci, tc := range cases {
		name := fmt.Sprintf("%s, dim %d, %+v", tc.mix, tc.dim, tc.opt)
		t.Run(name, func(t *testing.T) {
			seed := uint64(100 + ci)
			fx, l, m := materialized(t, tc.n, tc.dim, tc.mix, 1+ci%3, seed)
			s, err := Open(fx.dir, tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			t.Logf("engine %q; notes %q", s.Engine(), s.Notes())
			fr, err := dataset.OpenFeatures(fx.dir, fx.meta)
			if err != nil {
				t.Fatal(err)
			}
			defer fr.Close()
			rng := rand.New(rand.NewPCG(seed, 17))
			all := make([]int32, tc.n)
			for v := range all {
				all[v] = int32(v)
			}
			rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
			batches := [][]int32{all, {0}, {int32(tc.n - 1), int32(tc.n - 1), 0}}
			for range 8 {
				batches = append(batches, randomBatch(tc.n, 1+rng.IntN(300), rng))
			}
			want := make([]float32, tc.dim)
			for bi, batch := range batches {
				dst := make([]float32, len(batch)*tc.dim)
				for i := range dst {
					dst[i] = float32(math.NaN()) // so a row left unwritten shows
				}
				st, err := gatherNoHang(t, s, context.Background(), batch, dst)
				if err != nil {
					t.Fatalf("batch %d: %v", bi, err)
				}
				for i, v := range batch {
					if err := fr.Row(int64(v), want); err != nil {
						t.Fatal(err)
					}
					if tc.opt.RowNormalize {
						rownorm.Row(want, want)
					}
					got := dst[i*tc.dim : (i+1)*tc.dim]
					if !slices.EqualFunc(got, want, func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }) {
						t.Fatalf("batch %d row %d (vertex %d, bin %s row %d): gathered %v..., features.npy has %v...",
							bi, i, v, m.Bins[l.Bin[v]].ID, l.Row[v], got[:min(4, tc.dim)], want[:min(4, tc.dim)])
					}
				}
				if tc.opt.Cache == nil { // the override's caches are not the layout's
					checkStats(t, st, batch, l, m)
				}
			}
		})
	}
}

// checkStats checks a batch's counts against the layout: each row counted
// in the tier its bin belongs to, SSD bytes and amplification consistent.
// A row asked for twice is useful twice but read once, so device bytes
// are bounded by the distinct rows, not by UsefulBytes.
func checkStats(t *testing.T, st GatherStats, batch []int32, l *layout.Layout, m *Manifest) {
	t.Helper()
	var want GatherStats
	distinct := map[int32]bool{} // distinct SSD rows: each is read at least once
	for _, v := range batch {
		switch m.Bins[l.Bin[v]].Kind {
		case tier.GPUMem:
			want.WorkerCacheHits++
		case tier.HostMem:
			want.SocketCacheHits++
		default:
			want.SSDRows++
			distinct[v] = true
		}
	}
	rb := m.RowBytes
	switch {
	case st.Rows != len(batch) || st.Bytes != int64(len(batch))*rb:
		t.Errorf("stats %+v: want %d rows, %d bytes", st, len(batch), int64(len(batch))*rb)
	case st.WorkerCacheHits != want.WorkerCacheHits || st.SocketCacheHits != want.SocketCacheHits || st.SSDRows != want.SSDRows:
		t.Errorf("stats %+v: want %d worker hits, %d socket hits, %d SSD rows", st, want.WorkerCacheHits, want.SocketCacheHits, want.SSDRows)
	case st.UsefulBytes != int64(want.SSDRows)*rb:
		t.Errorf("stats %+v: useful bytes, want %d", st, int64(want.SSDRows)*rb)
	case want.SSDRows > 0 && (st.DeviceBytes < int64(len(distinct))*rb || st.DeviceReads == 0):
		t.Errorf("stats %+v: device bytes below the %d distinct SSD rows' bytes, or no reads", st, len(distinct))
	case want.SSDRows == 0 && (st.DeviceBytes != 0 || st.ReadAmplification() != 0 || st.ReadSeconds != 0):
		t.Errorf("stats %+v: device bytes or reader time without SSD rows", st)
	case want.SSDRows > 0 && !(st.ReadSeconds > 0 && st.ReadSeconds <= st.Seconds):
		t.Errorf("stats %+v: the reader's time must be within the gather's, and above 0 with SSD rows", st)
	}
}

func TestOpenRefusesAStoreThatIsNotWhatItsManifestSays(t *testing.T) {
	cases := []struct {
		name   string
		damage func(t *testing.T, fx *fixture, m *Manifest, ssd BinFile)
		want   string // in the error
	}{
		{"no manifest", func(t *testing.T, fx *fixture, _ *Manifest, _ BinFile) {
			os.Remove(filepath.Join(fx.dir, ManifestFile))
		}, "no feature store"},
		{"a bin file shorter than the manifest says", func(t *testing.T, _ *fixture, _ *Manifest, b BinFile) {
			os.Truncate(b.Path, b.FileBytes-4096)
		}, "truncated"},
		{"a bin file gone", func(t *testing.T, _ *fixture, _ *Manifest, b BinFile) {
			os.Remove(b.Path)
		}, "cannot read its file"},
		{"a bin file that cannot be read (a directory)", func(t *testing.T, _ *fixture, _ *Manifest, b BinFile) {
			os.Remove(b.Path)
			os.Mkdir(b.Path, 0o755)
		}, "not a regular file"},
		{"a bin file that is a FIFO (opening it would wait for a writer)", func(t *testing.T, _ *fixture, _ *Manifest, b BinFile) {
			os.Remove(b.Path)
			if err := syscall.Mkfifo(b.Path, 0o644); err != nil {
				t.Skipf("no FIFOs here: %v", err)
			}
		}, "not a regular file (a FIFO)"},
		{"a layout placed again", func(t *testing.T, fx *fixture, _ *Manifest, _ BinFile) {
			rng := rand.New(rand.NewPCG(99, 99))
			fx.place(t, randomBins(int(fx.meta.NumNodes), mixMixed, rng), rng)
		}, "materialize it again"},
		{"features of another size", func(t *testing.T, fx *fixture, _ *Manifest, _ BinFile) {
			f, _ := os.OpenFile(filepath.Join(fx.dir, dataset.FeaturesFile), os.O_APPEND|os.O_WRONLY, 0)
			f.Write(make([]byte, 64))
			f.Close()
		}, ""}, // features.npy itself no longer matches its header
		{"a malformed manifest", func(t *testing.T, fx *fixture, _ *Manifest, _ BinFile) {
			os.WriteFile(filepath.Join(fx.dir, ManifestFile), []byte(`{"schema_version": 1, "bins": 3}`), 0o644)
		}, "malformed manifest"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fx, _, m := materialized(t, 800, 128, mixMixed, 2, uint64(200+i))
			var ssd BinFile
			for _, b := range m.Bins {
				if b.Kind == tier.SSD && b.Rows > 0 {
					ssd = b
					break
				}
			}
			tc.damage(t, fx, m, ssd)
			s, err := Open(fx.dir, Options{})
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			var in *inputerr.Error
			if !errors.As(err, &in) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want an InputError mentioning %q", err, tc.want)
			}
			if strings.Contains(tc.name, "bin file") && !strings.Contains(err.Error(), ssd.Path) {
				t.Errorf("error %v does not name the file %s", err, ssd.Path)
			}
		})
	}
}

func TestGatherFailsCleanlyOnABinFileCutShort(t *testing.T) {
	for _, engine := range []string{"auto", "pread"} {
		t.Run(engine, func(t *testing.T) {
			fx, l, m := materialized(t, 1500, 256, mixAllSSD, 2, 300)
			s, err := Open(fx.dir, Options{Engine: engine, QueueDepth: 4})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			// Cut the first bin file to half after Open: the rows of its
			// second half are gone.
			b := m.Bins[0]
			os.Truncate(b.Path, b.FileBytes/2/4096*4096)
			var batch []int32
			for v := range l.Bin {
				if l.Bin[v] == 0 {
					batch = append(batch, int32(v))
				}
			}
			dst := make([]float32, len(batch)*fx.meta.FeatureDim)
			_, err = gatherNoHang(t, s, context.Background(), batch, dst)
			if err == nil || !strings.Contains(err.Error(), b.Path) {
				t.Fatalf("error %v, want one naming %s", err, b.Path)
			}
			// It names a row of that bin past the cut, and its vertex.
			mm := regexp.MustCompile(`bin 0 \(` + regexp.QuoteMeta(b.ID) + `, [^)]*\), row (\d+) \(vertex (\d+)\)`).FindStringSubmatch(err.Error())
			if mm == nil {
				t.Fatalf("error %v names no bin 0 row and vertex", err)
			}
			row, _ := strconv.Atoi(mm[1])
			v, _ := strconv.Atoi(mm[2])
			cut := b.FileBytes / 2 / 4096 * 4096
			if l.Bin[v] != 0 || int(l.Row[v]) != row || HeaderBytes+int64(row+1)*b.StrideBytes <= cut {
				t.Errorf("error names row %d, vertex %d (bin %d, row %d); the file was cut at byte %d", row, v, l.Bin[v], l.Row[v], cut)
			}
			// The other bins still read right.
			var rest []int32
			for v := range l.Bin {
				if l.Bin[v] != 0 {
					rest = append(rest, int32(v))
				}
			}
			dst = make([]float32, len(rest)*fx.meta.FeatureDim)
			if _, err := gatherNoHang(t, s, context.Background(), rest, dst); err != nil {
				t.Skipf("the reader refuses reads after a failed one (%v); the failure itself was reported", err)
			}
			for i, v := range rest {
				if !slices.Equal(dst[i*fx.meta.FeatureDim:(i+1)*fx.meta.FeatureDim], fx.feats[int(v)*fx.meta.FeatureDim:(int(v)+1)*fx.meta.FeatureDim]) {
					t.Fatalf("vertex %d wrong after a failed batch", v)
				}
			}
		})
	}
}

func TestGatherRefusesBadCalls(t *testing.T) {
	fx, _, _ := materialized(t, 500, 16, mixMixed, 1, 400)
	s, err := Open(fx.dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	all := make([]int32, 500)
	for v := range all {
		all[v] = int32(v)
	}
	cases := []struct {
		name  string
		ctx   context.Context
		batch []int32
		dst   []float32
		want  string
	}{
		{"a vertex out of range", context.Background(), []int32{1, 500}, make([]float32, 32), "out of range"},
		{"a negative vertex", context.Background(), []int32{-1}, make([]float32, 16), "out of range"},
		{"a matrix too small", context.Background(), []int32{1, 2}, make([]float32, 31), "dst holds 31"},
		{"a cancelled batch", cancelled, all, make([]float32, 500*16), "context canceled"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := gatherNoHang(t, s, tc.ctx, tc.batch, tc.dst); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one mentioning %q", err, tc.want)
			}
		})
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Gather(context.Background(), []int32{1}, make([]float32, 16)); err == nil {
		t.Error("Gather after Close succeeded")
	}
}

func TestParseCPUList(t *testing.T) {
	cases := []struct {
		in   string
		want []int
		bad  bool
	}{
		{"0-3,8,10-11", []int{0, 1, 2, 3, 8, 10, 11}, false},
		{"5", []int{5}, false},
		{"", nil, false},
		{"3-1", nil, true},
		{"a", nil, true},
	}
	for _, tc := range cases {
		got, err := parseCPUList(tc.in)
		if (err != nil) != tc.bad || !slices.Equal(got, tc.want) {
			t.Errorf("parseCPUList(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.bad)
		}
	}
	// Touching on node 0 (present on every Linux machine) leaves the
	// buffer zero.
	buf := make([]byte, 3*os.Getpagesize())
	touchOnNode(buf, 0)
	if slices.ContainsFunc(buf, func(b byte) bool { return b != 0 }) {
		t.Error("touchOnNode changed the buffer")
	}
}

func TestGatherFromSeveralGoroutines(t *testing.T) {
	fx, _, _ := materialized(t, 1500, 96, mixMixed, 2, 500)
	s, err := Open(fx.dir, Options{QueueDepth: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	dim := fx.meta.FeatureDim
	errs := make(chan error, 4)
	for w := range 4 {
		go func() {
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for range 20 {
				batch := randomBatch(1500, 200, rng)
				dst := make([]float32, len(batch)*dim)
				if _, err := s.Gather(context.Background(), batch, dst); err != nil {
					errs <- err
					return
				}
				for i, v := range batch {
					if !slices.Equal(dst[i*dim:(i+1)*dim], fx.feats[int(v)*dim:(int(v)+1)*dim]) {
						errs <- fmt.Errorf("worker %d: vertex %d wrong", w, v)
						return
					}
				}
			}
			errs <- nil
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// TestGatherResident gathers batches for a worker holding the GPU bin on
// its device: the packed rows and the resident bin's rows, put back by
// idx, are exactly what Gather gives, every row is counted once, and a
// bin that is not a worker bin is refused.
func TestGatherResident(t *testing.T) {
	const n, dim = 900, 24
	fx, _, _ := materialized(t, n, dim, mixMixed, 2, 41)
	s, err := Open(fx.dir, Options{QueueDepth: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	wb := s.WorkerBins()
	if len(wb) != 1 || s.BinIDs()[wb[0]] != "gpu0" {
		t.Fatalf("worker bins %v of %v, want gpu0's", wb, s.BinIDs())
	}
	cache, err := s.BinData(wb[0])
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 5 {
		batch := randomBatch(n, 300, rng)
		want := make([]float32, len(batch)*dim)
		wst, err := s.Gather(context.Background(), batch, want)
		if err != nil {
			t.Fatal(err)
		}
		packed, idx := make([]float32, len(batch)*dim), make([]int32, len(batch))
		got, st, err := s.GatherResident(context.Background(), batch, packed, wb[0], idx)
		if err != nil {
			t.Fatal(err)
		}
		resident := 0
		for i := range batch {
			var row []float32
			if j := idx[i]; j >= 0 {
				row = packed[int(j)*dim : int(j+1)*dim]
			} else {
				resident++
				row = cache[int(-1-j)*dim : int(-j)*dim]
			}
			if !slices.Equal(row, want[i*dim:(i+1)*dim]) {
				t.Fatalf("batch row %d (vertex %d) differs from Gather's", i, batch[i])
			}
		}
		if got != len(batch)-resident || resident == 0 || st.ResidentHits != resident || st.WorkerCacheHits != wst.WorkerCacheHits || st.SSDRows != wst.SSDRows ||
			st.SocketCacheHits != wst.SocketCacheHits {
			t.Errorf("%d packed, %d resident of %d; stats %+v, Gather's %+v", got, resident, len(batch), st, wst)
		}
	}
	for _, b := range []int{-1, len(s.BinIDs()), slices.Index(s.BinIDs(), "socket0")} {
		if _, _, err := s.GatherResident(context.Background(), []int32{0}, make([]float32, dim), b, make([]int32, 1)); err == nil || !strings.Contains(err.Error(), "not a worker cache bin") {
			t.Errorf("resident bin %d: %v, want a refusal", b, err)
		}
		if _, err := s.BinData(b); err == nil {
			t.Errorf("BinData(%d): no error", b)
		}
	}
}

// TestOpenRefusesANonFiniteCachedRow: a row the store holds in memory is
// checked finite when loaded, as memory mode checks every row: +Inf in
// features.npy (edited in place, same size) is refused naming the row and
// column instead of training to NaN.
func TestOpenRefusesANonFiniteCachedRow(t *testing.T) {
	fx, l, m := materialized(t, 800, 16, mixMixed, 1, 77)
	cached := -1
	for v, b := range l.Bin {
		if m.Bins[b].Kind != tier.SSD {
			cached = v
			break
		}
	}
	if cached < 0 {
		t.Fatal("the layout caches no row")
	}
	path := filepath.Join(fx.dir, dataset.FeaturesFile)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := f.Stat()
	rowBytes := int64(16 * 4)
	off := fi.Size() - 800*rowBytes + int64(cached)*rowBytes + 4*3
	if _, err := f.WriteAt(binary.LittleEndian.AppendUint32(nil, math.Float32bits(float32(math.Inf(1)))), off); err != nil {
		t.Fatal(err)
	}
	f.Close()
	s, err := Open(fx.dir, Options{})
	if err == nil {
		s.Close()
		t.Fatal("Open succeeded on a cached row of +Inf")
	}
	want := fmt.Sprintf("row %d column 3 is +Inf", cached)
	if !inputerr.Is(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("Open: %v, want a bad-input error saying %q", err, want)
	}
}

// TestOpenRefusesFeaturesRewrittenInPlace: features.npy rewritten with
// other values at the same size (its rows scaled) no longer matches the
// store's sampled checksum, so the store is refused as stale instead of
// serving the old rows.
func TestOpenRefusesFeaturesRewrittenInPlace(t *testing.T) {
	fx, _, _ := materialized(t, 800, 16, mixMixed, 1, 78)
	path := filepath.Join(fx.dir, dataset.FeaturesFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	start := len(data) - 800*16*4
	for i := start; i+4 <= len(data); i += 4 {
		x := math.Float32frombits(binary.LittleEndian.Uint32(data[i:]))
		binary.LittleEndian.PutUint32(data[i:], math.Float32bits(2*x+1))
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Open(fx.dir, Options{})
	if err == nil {
		s.Close()
		t.Fatal("Open served a store cut from other features")
	}
	if !inputerr.Is(err) || !strings.Contains(err.Error(), "sampled rows differ") || !strings.Contains(err.Error(), "materialize it again") {
		t.Errorf("Open: %v, want a bad-input error saying the features changed", err)
	}
	if _, err := Verify(context.Background(), fx.dir, VerifyOptions{}); !inputerr.Is(err) || !strings.Contains(err.Error(), "sampled rows differ") {
		t.Errorf("Verify: %v, want it to refuse the store as Open does, not call it intact", err)
	}
}
