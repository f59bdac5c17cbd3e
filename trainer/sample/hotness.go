package sample

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gnnplan/gnnplan/internal/inputerr"
	"github.com/gnnplan/gnnplan/trainer/dataset"
)

// HotnessFile is the name hotness is stored under next to a dataset.
const HotnessFile = "hotness.npy"

// HotnessOptions configure a hotness measurement.
type HotnessOptions struct {
	Sampler SamplerOptions
	// Fraction of each epoch's batches to sample, in (0, 1]; 0 means 1.
	// The first batches of the epoch are taken, which with Shuffle are a
	// uniform sample of the seeds (without it, the first seeds in order).
	Fraction float64
	// Epochs to sample (epochs 0 to Epochs-1, as training numbers them);
	// 0 means 1, or DefaultMaxHotnessEpochs when Stable is set, in which
	// case it is the most epochs sampled.
	Epochs int
	// Stable, when above 0, stops sampling after the first epoch (from the
	// second on) that moves each of the top 1%, 5% and 10% access shares
	// (SkewOf) by less than Stable, as a fraction: the shares the caches
	// and GPU bins capture, which a one-epoch estimate overstates because
	// its noise looks like heat.
	Stable float64
}

// DefaultMaxHotnessEpochs bounds the epochs a measurement with Stable
// samples when Epochs is 0.
const DefaultMaxHotnessEpochs = 20

// HotnessReport is what a hotness measurement sampled and how the
// traffic it saw divides between features and topology.
type HotnessReport struct {
	Epochs          int  `json:"epochs"`
	BatchesPerEpoch int  `json:"batches_per_epoch"` // sampled, of each epoch
	Stable          bool `json:"stable"`            // Stable was asked for and reached
	// LastChange is the largest move of the top 1/5/10% shares in the
	// last epoch (0 after one epoch).
	LastChange   float64 `json:"last_change"`
	SampledEdges int64   `json:"sampled_edges"`
	// FeatureRowReads counts input feature rows read (a vertex once per
	// batch); TopologyBytes counts neighbour-list bytes read to sample
	// them: each frontier vertex's two offsets and the column ids it
	// samples (all of them with fanout -1).
	FeatureRowReads int64 `json:"feature_row_reads"`
	TopologyBytes   int64 `json:"topology_bytes"`
	// TopologyShare is TopologyBytes over all bytes read, with
	// FeatureRowBytes per feature row.
	FeatureRowBytes int64   `json:"feature_row_bytes"`
	TopologyShare   float64 `json:"topology_share"`
}

// Hotness runs the sampler over the first Fraction of the batches of
// Epochs epochs and returns, per vertex, the number of mini-batches whose
// input (MiniBatch.Input, the outermost block's Src) contains it; see
// MeasureHotness.
func Hotness(ctx context.Context, g *dataset.Graph, opt HotnessOptions, progress io.Writer) ([]uint32, error) {
	counts, _, err := MeasureHotness(ctx, g, opt, progress)
	return counts, err
}

// MeasureHotness samples as Hotness does and also reports what it
// sampled. The counts are how many times feature extraction reads each
// vertex's feature row, the traffic DDAK (Moment section 3.3) and
// Hyperion's cache split (III-B) place by; a vertex reached several times
// within one batch is read once because the batch's vertex list is
// deduplicated.
//
// Workers count with atomic adds into one array, so the result is the
// same whatever the schedule. A line per epoch (when Stable is set) and a
// summary go to progress unless it is nil.
func MeasureHotness(ctx context.Context, g *dataset.Graph, opt HotnessOptions, progress io.Writer) ([]uint32, *HotnessReport, error) {
	frac, epochs := opt.Fraction, opt.Epochs
	switch {
	case frac == 0:
		frac = 1
	case !(frac > 0 && frac <= 1): // also catches NaN
		return nil, nil, &inputerr.Error{Field: "fraction", Msg: fmt.Sprintf("%g (want 0 < fraction <= 1)", opt.Fraction)}
	}
	switch {
	case !(opt.Stable >= 0 && opt.Stable < 1):
		return nil, nil, &inputerr.Error{Field: "stable", Msg: fmt.Sprintf("%g (want 0 to stop after Epochs, or a share change below 1)", opt.Stable)}
	case epochs == 0 && opt.Stable > 0:
		epochs = DefaultMaxHotnessEpochs
	case epochs == 0:
		epochs = 1
	case epochs < 0:
		return nil, nil, &inputerr.Error{Field: "epochs", Msg: fmt.Sprintf("%d (want >= 1)", epochs)}
	}
	s, err := NewSampler(g, opt.Sampler)
	if err != nil {
		return nil, nil, err
	}
	perEpoch := max(1, int(math.Ceil(frac*float64(s.Batches(0)))))
	if int64(perEpoch)*int64(epochs) > math.MaxUint32 {
		return nil, nil, &inputerr.Error{Field: "epochs", Msg: fmt.Sprintf("%d epochs of %d batches could overflow 32-bit counts", epochs, perEpoch)}
	}
	idxBytes := int64(4)
	if g.Meta.IndexDType == "int64" {
		idxBytes = 8
	}
	rep := &HotnessReport{BatchesPerEpoch: perEpoch, FeatureRowBytes: 4 * int64(g.Meta.FeatureDim)}

	start := time.Now()
	counts := make([]uint32, s.n)
	var edges, rows, topo atomic.Int64
	prev := SkewOf(counts)
	bar := dataset.AsProgress(progress)
	for e := range epochs {
		add := func(int64) {}
		if bar != nil {
			add = bar.Phase(fmt.Sprintf("hotness: sampling epoch %d", e+1), int64(perEpoch))
		}
		var next atomic.Int64
		var wg sync.WaitGroup
		for range min(s.workers, perEpoch) {
			wg.Go(func() {
				sc := s.scratch.Get().(*sampleScratch)
				defer s.scratch.Put(sc)
				var myEdges, myRows, myTopo int64
				defer func() { edges.Add(myEdges); rows.Add(myRows); topo.Add(myTopo) }()
				for ctx.Err() == nil {
					j := int(next.Add(1) - 1)
					if j >= perEpoch {
						return
					}
					mb := s.sample(sc, e, j)
					add(1)
					for _, v := range mb.Input() {
						atomic.AddUint32(&counts[v], 1)
					}
					myEdges += int64(mb.NumEdges())
					myRows += int64(len(mb.Input()))
					for i := range mb.Blocks {
						b := &mb.Blocks[i]
						myTopo += 16*int64(len(b.Dst)) + idxBytes*int64(b.NumEdges())
					}
				}
			})
		}
		wg.Wait()
		if err := ctx.Err(); err != nil {
			return nil, nil, fmt.Errorf("hotness: %w", err)
		}
		rep.Epochs = e + 1
		if opt.Stable == 0 {
			continue
		}
		cur := SkewOf(counts)
		if e > 0 {
			rep.LastChange = max(math.Abs(cur.Top1-prev.Top1), math.Abs(cur.Top5-prev.Top5), math.Abs(cur.Top10-prev.Top10))
		}
		if progress != nil {
			fmt.Fprintf(progress, "hotness: epoch %d: top 1/5/10%% of vertices get %.2f/%.2f/%.2f%% of accesses (moved %.2f points)\n",
				e+1, 100*cur.Top1, 100*cur.Top5, 100*cur.Top10, 100*rep.LastChange)
		}
		prev = cur
		if e > 0 && rep.LastChange < opt.Stable {
			rep.Stable = true
			break
		}
	}
	rep.SampledEdges, rep.FeatureRowReads, rep.TopologyBytes = edges.Load(), rows.Load(), topo.Load()
	if all := rep.TopologyBytes + rep.FeatureRowReads*rep.FeatureRowBytes; all > 0 {
		rep.TopologyShare = float64(rep.TopologyBytes) / float64(all)
	}
	if progress != nil {
		secs := max(time.Since(start).Seconds(), 1e-9)
		fmt.Fprintf(progress, "hotness: %d epoch(s) x %d of %d batches, fanouts %v, %d sampled edges in %.1fs (%.2f M edges/s, %d workers); topology is %.1f%% of the bytes read (offsets and sampled column ids)\n",
			rep.Epochs, perEpoch, s.Batches(0), s.fanouts, rep.SampledEdges, secs, float64(rep.SampledEdges)/secs/1e6, s.workers, 100*rep.TopologyShare)
	}
	return counts, rep, nil
}

// Skew is how concentrated accesses are, in DiskGNN's terms: the share of
// all accesses that go to the hottest 1%, 5% and 10% of vertices (the top
// p% being the ceil(p/100 x n) vertices with the most accesses). Shares
// are fractions in [0, 1]; a uniform access pattern gives about 0.01,
// 0.05 and 0.10, and DiskGNN measures 0.14-0.56 for the top 1% on real
// graphs (docs/architecture.md section 7).
type Skew struct {
	Top1  float64 `json:"top_1pct_share"`
	Top5  float64 `json:"top_5pct_share"`
	Top10 float64 `json:"top_10pct_share"`
}

// skewTops returns how many vertices the top 1%, 5% and 10% of n are.
func skewTops(n int) [3]int {
	return [3]int{(n + 99) / 100, (5*n + 99) / 100, (10*n + 99) / 100}
}

// histogramLimit bounds the counts SkewOf tallies by value; above it, it
// sorts. Access counts are at most the number of batches sampled, so the
// histogram path is the usual one and runs in O(n).
const histogramLimit = 1 << 22

// SkewOf returns the skew of per-vertex access counts; all zero when there
// are no accesses.
func SkewOf(counts []uint32) Skew {
	var total uint64
	var hottest uint32
	for _, c := range counts {
		total += uint64(c)
		hottest = max(hottest, c)
	}
	if total == 0 {
		return Skew{}
	}
	tops := skewTops(len(counts))
	var top [3]uint64
	if hottest <= histogramLimit {
		hist := make([]int64, int(hottest)+1)
		for _, c := range counts {
			hist[c]++
		}
		// Walk values from the hottest down, taking whole value classes
		// while they fit and the remainder of the class that crosses a
		// threshold.
		var taken int64
		var sum uint64
		for c := int64(hottest); c >= 0; c-- {
			h := hist[c]
			for i, t := range tops {
				if rest := int64(t) - taken; rest > 0 && rest <= h {
					top[i] = sum + uint64(rest*c)
				}
			}
			taken += h
			sum += uint64(h * c)
		}
	} else {
		sorted := slices.Clone(counts)
		slices.Sort(sorted)
		var sum uint64
		for i := range sorted {
			sum += uint64(sorted[len(sorted)-1-i])
			for j, t := range tops {
				if i+1 == t {
					top[j] = sum
				}
			}
		}
	}
	return Skew{
		Top1:  float64(top[0]) / float64(total),
		Top5:  float64(top[1]) / float64(total),
		Top10: float64(top[2]) / float64(total),
	}
}

// WriteHotness writes per-vertex access counts to path as a 1-d <u4 .npy,
// atomically.
func WriteHotness(path string, counts []uint32) error {
	return dataset.WriteArray(path, "<u4", counts, int64(len(counts)))
}

// hotnessDType says whether ReadHotness takes .npy element type d, and its
// size: WriteHotness's <u4, and any other little-endian integer, as numpy's
// bincount (int64) and friends write counts, with each value checked to fit.
func hotnessDType(d string) (size int64, signed, ok bool) {
	switch d {
	case "|u1", "<u1":
		return 1, false, true
	case "<u2":
		return 2, false, true
	case "<u4":
		return 4, false, true
	case "<u8":
		return 8, false, true
	case "|i1", "<i1":
		return 1, true, true
	case "<i2":
		return 2, true, true
	case "<i4":
		return 4, true, true
	case "<i8":
		return 8, true, true
	}
	return 0, false, false
}

// ReadHotness reads a hotness .npy of n vertices: a 1-d array of access
// counts, <u4 as WriteHotness writes it or any little-endian integer type
// whose values are 0 to 2^32-1. A missing, malformed or wrong-length file,
// or a count out of that range, is a *inputerr.Error.
func ReadHotness(path string, n int64) ([]uint32, error) {
	if n < 0 || n > math.MaxInt32 {
		return nil, &inputerr.Error{Path: path, Msg: fmt.Sprintf("cannot hold hotness of %d vertices (want 0 to %d)", n, math.MaxInt32)}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, &inputerr.Error{Path: path, Msg: "cannot read hotness", Err: err}
	}
	defer f.Close()
	h, err := dataset.ReadArrayHeader(f)
	if err != nil {
		return nil, &inputerr.Error{Path: path, Msg: "not a .npy array", Err: err}
	}
	shape, dtype := h.Shape, h.DType
	size, signed, ok := hotnessDType(dtype)
	if !ok || len(shape) != 1 {
		return nil, &inputerr.Error{Path: path, Msg: fmt.Sprintf("dtype %s shape %v (want counts of shape [%d]: <u4 as `gnnplan` writes hotness, or another little-endian integer type)", dtype, shape, n)}
	}
	if int64(shape[0]) != n {
		return nil, &inputerr.Error{Path: path, Msg: fmt.Sprintf("%d entries, but the dataset has %d vertices: hotness of another dataset?", shape[0], n)}
	}
	if err := h.CheckDataSize(f, path, n, size); err != nil {
		return nil, err
	}
	counts := make([]uint32, n)
	data := io.NewSectionReader(f, h.DataOffset, size*n)
	buf := make([]byte, 1<<20)
	for i := int64(0); i < n; {
		chunk := buf[:size*min(n-i, int64(len(buf))/size)]
		if _, err := io.ReadFull(data, chunk); err != nil {
			return nil, &inputerr.Error{Path: path, Msg: "truncated array data", Err: err}
		}
		for j := int64(0); j < int64(len(chunk)); j += size {
			v, neg := element(chunk[j:j+size], signed)
			if neg || v > math.MaxUint32 {
				shown := fmt.Sprint(v)
				if neg {
					shown = fmt.Sprint(-int64(v))
				}
				return nil, &inputerr.Error{Path: path, Msg: fmt.Sprintf("entry %d is %s (want an access count, 0 to %d)", i, shown, uint32(math.MaxUint32))}
			}
			counts[i] = uint32(v)
			i++
		}
	}
	return counts, nil
}

// element decodes one little-endian integer of len(b) bytes; a negative
// one comes back as its magnitude with neg set.
func element(b []byte, signed bool) (v uint64, neg bool) {
	var u uint64
	for k := len(b) - 1; k >= 0; k-- {
		u = u<<8 | uint64(b[k])
	}
	if signed && b[len(b)-1]&0x80 != 0 {
		bits := uint(8 * len(b))
		s := int64(u<<(64-bits)) >> (64 - bits) // sign-extend
		return uint64(-s), true
	}
	return u, false
}
