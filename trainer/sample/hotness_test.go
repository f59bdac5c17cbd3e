package sample

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gnnplan/gnnplan/internal/inputerr"
	"github.com/gnnplan/gnnplan/trainer/dataset"
)

// starTestGraph is hub 0 joined to leaves 1..n, every leaf a seed.
func starTestGraph(n int) *dataset.Graph {
	adj := make([][]int32, n+1)
	var train []int64
	for v := 1; v <= n; v++ {
		adj[0] = append(adj[0], int32(v))
		adj[v] = []int32{0}
		train = append(train, int64(v))
	}
	return graphOfAdj(adj, train)
}

func TestHotnessStarHubIsHottest(t *testing.T) {
	g := starTestGraph(1000)
	var log bytes.Buffer
	opt := HotnessOptions{Sampler: SamplerOptions{Fanouts: []int{2, 2}, BatchSize: 10, Seed: 5, Shuffle: true}}
	counts, err := Hotness(context.Background(), g, opt, &log)
	if err != nil {
		t.Fatal(err)
	}
	// Every batch's seeds reach the hub, so it is read once per batch.
	if counts[0] != 100 {
		t.Errorf("hub read by %d batches, want all 100", counts[0])
	}
	for v, c := range counts[1:] {
		if c == 0 || c >= counts[0] {
			t.Fatalf("leaf %d read %d times, want 1 <= count < the hub's %d", v+1, c, counts[0])
		}
	}
	if !strings.HasPrefix(log.String(), "hotness: 1 epoch(s) x 100 of 100 batches") {
		t.Errorf("progress line %q", log.String())
	}
	if s := SkewOf(counts); s.Top1 <= 0.01 {
		t.Errorf("star graph skew %+v, want the top 1%% above a uniform share", s)
	}
}

func TestHotnessEveryNeighborReadsTheWholeStar(t *testing.T) {
	// With every neighbor at both hops, each batch's seeds reach the hub
	// and the hub reaches every leaf: every vertex is read by every batch.
	g := starTestGraph(1000)
	opt := HotnessOptions{Sampler: SamplerOptions{Fanouts: []int{AllNeighbors, AllNeighbors}, BatchSize: 10, Seed: 5, Shuffle: true}}
	counts, err := Hotness(context.Background(), g, opt, nil)
	if err != nil {
		t.Fatal(err)
	}
	for v, c := range counts {
		if c != 100 {
			t.Fatalf("vertex %d read by %d batches, want all 100", v, c)
		}
	}
}

// TestHotnessMatchesEpoch checks Hotness against a second, slower way:
// counting each batch's input as Epoch delivers them, one at a time.
func TestHotnessMatchesEpoch(t *testing.T) {
	g := randomTestGraph(rand.New(rand.NewPCG(11, 12)), 500)
	for _, tc := range []struct {
		name    string
		fanouts []int
	}{
		{"sampled hops", []int{4, 3}},
		{"every neighbor then sampled", []int{AllNeighbors, 3}},
		{"every neighbor at both hops", []int{AllNeighbors, AllNeighbors}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sopt := SamplerOptions{Fanouts: tc.fanouts, BatchSize: 9, Seed: 77, Shuffle: true}
			s, err := NewSampler(g, sopt)
			if err != nil {
				t.Fatal(err)
			}
			nb := s.Batches(0)
			perEpoch := (nb + 1) / 2 // Fraction 0.5, rounded up
			want := make([]uint32, len(g.Indptr)-1)
			for epoch := range 3 {
				err := s.Epoch(context.Background(), epoch, func(mb *MiniBatch) error {
					if mb.Index < perEpoch {
						for _, v := range mb.Input() {
							want[v]++
						}
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			for _, workers := range []int{1, 3} {
				sopt.Workers = workers
				got, err := Hotness(context.Background(), g, HotnessOptions{Sampler: sopt, Fraction: 0.5, Epochs: 3}, nil)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("workers %d: Hotness differs from counting Epoch's batches", workers)
				}
			}
		})
	}
}

func TestHotnessRejects(t *testing.T) {
	g := starTestGraph(10)
	for _, tc := range []struct {
		name  string
		opt   HotnessOptions
		field string
	}{
		{"negative fraction", HotnessOptions{Fraction: -0.1}, "fraction"},
		{"fraction above one", HotnessOptions{Fraction: 1.5}, "fraction"},
		{"NaN fraction", HotnessOptions{Fraction: math.NaN()}, "fraction"},
		{"negative epochs", HotnessOptions{Epochs: -1}, "epochs"},
		{"bad sampler options", HotnessOptions{Sampler: SamplerOptions{Fanouts: []int{0}}}, "fanouts"},
		{"fanout below -1", HotnessOptions{Sampler: SamplerOptions{Fanouts: []int{-1, -3}}}, "fanouts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Hotness(context.Background(), g, tc.opt, nil)
			var ie *inputerr.Error
			if !errors.As(err, &ie) || ie.Field != tc.field {
				t.Fatalf("err = %v, want an InputError on field %q", err, tc.field)
			}
		})
	}
	t.Run("canceled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := Hotness(ctx, g, HotnessOptions{}, nil); !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	})
}

// skewBySorting is SkewOf's definition computed the obvious way.
func skewBySorting(counts []uint32) Skew {
	sorted := slices.Clone(counts)
	slices.SortFunc(sorted, func(a, b uint32) int { return int(b) - int(a) })
	var total float64
	for _, c := range sorted {
		total += float64(c)
	}
	share := func(p int) float64 {
		if total == 0 {
			return 0
		}
		var s float64
		for _, c := range sorted[:int(math.Ceil(float64(p*len(sorted))/100))] {
			s += float64(c)
		}
		return s / total
	}
	return Skew{share(1), share(5), share(10)}
}

func TestSkewOf(t *testing.T) {
	// 100 vertices: one read 50 times, four read 10 times, 95 read once
	// (185 accesses): the top 1 vertex has 50, the top 5 have 90, the
	// top 10 have 95.
	known := []uint32{50, 10, 10, 10, 10}
	for range 95 {
		known = append(known, 1)
	}
	rand.New(rand.NewPCG(1, 1)).Shuffle(len(known), func(i, j int) { known[i], known[j] = known[j], known[i] })
	uniform := make([]uint32, 1000)
	for i := range uniform {
		uniform[i] = 7
	}
	for _, tc := range []struct {
		name   string
		counts []uint32
		want   Skew
	}{
		{"known distribution", known, Skew{50.0 / 185, 90.0 / 185, 95.0 / 185}},
		{"uniform gives the vertex shares", uniform, Skew{0.01, 0.05, 0.10}},
		{"single vertex holds everything", []uint32{3}, Skew{1, 1, 1}},
		{"no accesses", make([]uint32, 10), Skew{}},
		{"no vertices", nil, Skew{}},
		{"ties cut inside a value class", []uint32{2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 1}, Skew{2.0 / 41, 4.0 / 41, 6.0 / 41}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := SkewOf(tc.counts)
			if math.Abs(got.Top1-tc.want.Top1) > 1e-12 || math.Abs(got.Top5-tc.want.Top5) > 1e-12 || math.Abs(got.Top10-tc.want.Top10) > 1e-12 {
				t.Fatalf("SkewOf = %+v, want %+v", got, tc.want)
			}
		})
	}
	t.Run("histogram and sorting paths agree with the definition", func(t *testing.T) {
		r := rand.New(rand.NewPCG(2, 3))
		for trial := range 50 {
			counts := make([]uint32, 1+r.IntN(3000))
			for i := range counts {
				counts[i] = uint32(r.ExpFloat64() * 20)
				if trial%2 == 1 && r.IntN(100) == 0 {
					counts[i] = histogramLimit + uint32(r.IntN(1000)) // forces the sort
				}
			}
			got, want := SkewOf(counts), skewBySorting(counts)
			if math.Abs(got.Top1-want.Top1) > 1e-9 || math.Abs(got.Top5-want.Top5) > 1e-9 || math.Abs(got.Top10-want.Top10) > 1e-9 {
				t.Fatalf("trial %d: SkewOf = %+v, sorting gives %+v", trial, got, want)
			}
		}
	})
}

func TestHotnessFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, HotnessFile)
	counts := []uint32{0, 7, math.MaxUint32, 3, 1}
	if err := WriteHotness(path, counts); err != nil {
		t.Fatal(err)
	}
	got, err := ReadHotness(path, 5)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, counts) {
		t.Fatalf("read %v, wrote %v", got, counts)
	}

	good, _ := os.ReadFile(path)
	// Counts as numpy writes them (bincount gives int64) read the same.
	for _, tc := range []struct {
		dtype string
		data  any
	}{
		{"<i8", []int64{0, 7, math.MaxUint32, 3, 1}},
		{"<u8", []uint64{0, 7, math.MaxUint32, 3, 1}},
		{"<i4", []int32{0, 7, 1 << 30, 3, 1}},
		{"<u2", []uint16{0, 7, 65535, 3, 1}},
		{"|u1", []uint8{0, 7, 255, 3, 1}},
	} {
		p := filepath.Join(dir, "ints.npy")
		rawNpy(t, p, tc.dtype, 5, tc.data)
		got, err := ReadHotness(p, 5)
		want := slices.Clone(counts)
		want[2] = map[string]uint32{"<i4": 1 << 30, "<u2": 65535, "|u1": 255}[tc.dtype]
		if want[2] == 0 {
			want[2] = math.MaxUint32
		}
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("%s: read %v, %v; want %v", tc.dtype, got, err, want)
		}
	}
	i64 := filepath.Join(dir, "i64.npy")
	if err := dataset.WriteArray(i64, "<i8", []int64{1, 2, -3, 4, 5}, 5); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.npy")
	rawNpy(t, big, "<u8", 5, []uint64{1, 2, 3, 1 << 32, 5})
	f32 := filepath.Join(dir, "f32.npy")
	if err := dataset.WriteArray(f32, "<f4", []float32{1, 2, 3, 4, 5}, 5); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		path string
		data []byte // written to path when not nil
		n    int64
		msg  string
	}{
		{"wrong length: another dataset's hotness", path, nil, 6, "5 entries, but the dataset has 6 vertices"},
		{"a negative count", i64, nil, 5, "entry 2 is -3 (want an access count, 0 to 4294967295)"},
		{"a count past 32 bits", big, nil, 5, "entry 3 is 4294967296"},
		{"not integers", f32, nil, 5, "dtype <f4"},
		{"truncated data", filepath.Join(dir, "short.npy"), good[:len(good)-2], 5, "truncated"},
		{"padded data", filepath.Join(dir, "long.npy"), append(slices.Clone(good), 0, 0, 0, 0), 5, "padded"},
		{"not an npy file", filepath.Join(dir, "text.npy"), []byte("hello"), 5, "not a .npy array"},
		{"missing file", filepath.Join(dir, "absent.npy"), nil, 5, "cannot read hotness"},
		{"negative vertex count", path, nil, -1, "cannot hold"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.data != nil {
				if err := os.WriteFile(tc.path, tc.data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, err := ReadHotness(tc.path, tc.n)
			var ie *inputerr.Error
			if !errors.As(err, &ie) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("err = %v, want an InputError saying %q", err, tc.msg)
			}
		})
	}
}

// rawNpy writes data (a slice of fixed-size values) as a 1-d .npy of n
// elements with header dtype, whatever dtypes dataset.WriteArray knows.
func rawNpy(t *testing.T, path, dtype string, n int, data any) {
	t.Helper()
	hdr := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': (%d,), }", dtype, n)
	hdr += strings.Repeat(" ", 63-(10+len(hdr))%64) + "\n"
	var b bytes.Buffer
	b.WriteString("\x93NUMPY\x01\x00")
	binary.Write(&b, binary.LittleEndian, uint16(len(hdr)))
	b.WriteString(hdr)
	if err := binary.Write(&b, binary.LittleEndian, data); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func FuzzReadHotness(f *testing.F) {
	dir := f.TempDir()
	seed := filepath.Join(dir, "seed.npy")
	if err := WriteHotness(seed, []uint32{1, 2, 3, 4}); err != nil {
		f.Fatal(err)
	}
	good, _ := os.ReadFile(seed)
	f.Add(good)
	f.Add(good[:20])
	f.Add([]byte("\x93NUMPY\x02\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "h.npy")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		counts, err := ReadHotness(path, 4)
		var ie *inputerr.Error
		switch {
		case err != nil && !errors.As(err, &ie):
			t.Fatalf("error %v is not an InputError", err)
		case err == nil && len(counts) != 4:
			t.Fatalf("read %d counts, want 4", len(counts))
		}
	})
}

// The report counts what sampling and feature extraction read: on the
// full star every batch reads its 10 leaves' lists (one entry each) at
// hop 1, and at hop 2 the same leaves again plus the hub's 1000 entries,
// each list with its two 8-byte offsets; then all 1001 feature rows.
func TestMeasureHotnessTopologyShare(t *testing.T) {
	g := starTestGraph(1000)
	g.Meta.FeatureDim, g.Meta.IndexDType = 4, "int32"
	opt := HotnessOptions{Sampler: SamplerOptions{Fanouts: []int{AllNeighbors, AllNeighbors}, BatchSize: 10, Seed: 5, Shuffle: true}}
	_, rep, err := MeasureHotness(context.Background(), g, opt, nil)
	if err != nil {
		t.Fatal(err)
	}
	perBatch := int64(10*(16+4) + 10*(16+4) + 16 + 4*1000)
	if rep.Epochs != 1 || rep.BatchesPerEpoch != 100 || rep.TopologyBytes != 100*perBatch || rep.FeatureRowReads != 100*1001 {
		t.Fatalf("report %+v, want 1 epoch of 100 batches, %d topology bytes, %d row reads", rep, 100*perBatch, 100*1001)
	}
	if want := float64(perBatch) / float64(perBatch+1001*16); math.Abs(rep.TopologyShare-want) > 1e-12 {
		t.Errorf("topology share %v, want %v", rep.TopologyShare, want)
	}
}

// With Stable, sampling goes on epoch after epoch until the top access
// shares settle, and stops there rather than at the cap; a tolerance no
// epoch can meet runs to the cap and says it did not settle.
func TestMeasureHotnessUntilStable(t *testing.T) {
	g := starTestGraph(5000)
	so := SamplerOptions{Fanouts: []int{3, 3}, BatchSize: 50, Seed: 9, Shuffle: true}
	for _, tc := range []struct {
		name       string
		stable     float64
		epochs     int
		wantEpochs [2]int // bounds
		wantStable bool
	}{
		{"settles", 0.01, 0, [2]int{2, DefaultMaxHotnessEpochs - 1}, true},
		{"an exact count without Stable", 0, 3, [2]int{3, 3}, false},
		{"never settles below the cap", 1e-9, 4, [2]int{4, 4}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log bytes.Buffer
			counts, rep, err := MeasureHotness(context.Background(), g, HotnessOptions{Sampler: so, Stable: tc.stable, Epochs: tc.epochs}, &log)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Epochs < tc.wantEpochs[0] || rep.Epochs > tc.wantEpochs[1] || rep.Stable != tc.wantStable {
				t.Fatalf("%d epochs, stable %v, want %v and %v\n%s", rep.Epochs, rep.Stable, tc.wantEpochs, tc.wantStable, log.String())
			}
			if tc.stable > 0 && rep.Stable && rep.LastChange >= tc.stable {
				t.Errorf("stopped with a change of %v, not below %v", rep.LastChange, tc.stable)
			}
			// The hub is in every batch of every epoch sampled.
			if want := uint32(rep.Epochs * rep.BatchesPerEpoch); counts[0] != want {
				t.Errorf("hub read %d times, want %d", counts[0], want)
			}
		})
	}
}
