package trainer

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"strings"

	"github.com/gnnplan/gnnplan/internal/inputerr"
	"github.com/gnnplan/gnnplan/trainer/dataset"
	"github.com/gnnplan/gnnplan/trainer/sample"
	"github.com/gnnplan/gnnplan/trainer/store"
)

// The loaders Options.Loader names (docs/loaders.md).
const (
	// LoaderOnline samples each batch as it trains and reads its rows
	// where they are: the reference the others are measured against.
	LoaderOnline = "online"
	// LoaderPacked trains on batches sampled ahead and packed on disk
	// (DiskGNN): each batch's disk rows one sequential read.
	LoaderPacked = "packed"
	// LoaderMultistage trains HANOI's way: macro-batches of partitions
	// read sequentially into memory, mini-batches sampled inside them.
	LoaderMultistage = "multistage"
)

// Loaders lists the loaders, the default first.
func Loaders() []string { return []string{LoaderOnline, LoaderPacked, LoaderMultistage} }

// newLoader is worker w's Loader as o asks: the pipeline of prefetchLoader
// with the rows from the feature source (online) or the packed batches.
func newLoader(w *worker, blocks blockBuilder, readsInPlace bool, ahead int, o Options) (Loader, error) {
	l := &prefetchLoader{source: w.sampler, blocks: blocks, input: w.input,
		inPlace: w.input.inMemory != nil && readsInPlace, ahead: ahead}
	switch o.Loader {
	case "", LoaderOnline:
		return l, nil
	case LoaderPacked:
		if o.Packed == nil {
			// In memory every row is: nothing is packed, the
			// batches load as online.
			return l, nil
		}
		return newPackedLoader(l, o.Packed, w.id), nil
	case LoaderMultistage:
		return newMultistageLoader(l, w, blocks.graph, o.Multistage, o), nil
	}
	return nil, &inputerr.Error{Field: "loader", Msg: fmt.Sprintf("%q (valid: %s)", o.Loader, strings.Join(Loaders(), ", "))}
}

// newPackedLoader makes l DiskGNN's packed loader for worker: epoch e
// trains on the batches packed for epoch e mod the epochs packed, which
// are the batches online sampling draws for it (the sampler is a pure
// function of seed, epoch and batch), each batch's disk rows read from its
// pieces, the next batch's read ahead.
func newPackedLoader(l *prefetchLoader, p *store.Packed, worker int) *prefetchLoader {
	epochs := p.Manifest().Epochs
	l.epochOf = func(e int) int { return e % epochs }
	batches := p.Manifest().Batches[worker]
	l.rows = func(ctx context.Context, mb *sample.MiniBatch, dst []float32, resident int, idx []int32) (int, GatherStats, error) {
		at := store.PackedBatch{Worker: worker, Epoch: mb.Epoch % epochs, Batch: mb.Index}
		// The next batch's pieces are read while this one's are checked
		// and it trains: the next epoch's first after the last.
		next := at
		if next.Batch++; next.Batch == batches {
			next.Epoch, next.Batch = (mb.Epoch+1)%epochs, 0
		}
		return p.Gather(ctx, at, &next, mb.Input(), dst, resident, idx)
	}
	return l
}

// Sampling identifies the batches o's workers draw on g: what packed
// batches must have been packed for (store.PackBatches.Sampling).
func Sampling(g *dataset.Graph, o Options) string {
	n := max(o.Workers, 1)
	so := workerSamplerOptions(g, o, 0)
	train := make([]byte, 0, 8*len(g.Train))
	for _, v := range g.Train {
		train = fmt.Appendf(train, "%d,", v)
	}
	return fmt.Sprintf("fanouts %v, batch %d, %d workers, seed %d, %d vertices, %d edges, training split %08x",
		so.Fanouts, so.BatchSize, n, o.Seed, g.Meta.NumNodes, len(g.Indices), crc32.ChecksumIEEE(train))
}

// packSource is the workers' samplers as the batches Pack writes.
type packSource struct {
	samplers []*sample.Sampler
	sampling string
}

func (p packSource) Workers() int           { return len(p.samplers) }
func (p packSource) Batches(worker int) int { return p.samplers[worker].Batches(0) }
func (p packSource) Sampling() string       { return p.sampling }
func (p packSource) Inputs(ctx context.Context, worker, epoch, first int, fn func(int, []int32) bool) error {
	err := p.samplers[worker].EpochFrom(ctx, epoch, first, func(mb *sample.MiniBatch) error {
		if !fn(mb.Index, mb.Input()) {
			return errStopSampling
		}
		return nil
	})
	if errors.Is(err, errStopSampling) {
		return nil
	}
	return err
}

// errStopSampling ends a packSource's sampling early.
var errStopSampling = errors.New("enough batches")

// Pack samples po.Epochs epochs of the batches o's workers will train on g
// and packs their rows that s does not hold in memory (store.Store.Pack):
// what LoaderPacked trains from.
func Pack(ctx context.Context, g *dataset.Graph, s *store.Store, o Options, po store.PackOptions) (*store.PackManifest, error) {
	src := packSource{sampling: Sampling(g, o)}
	for i := range max(o.Workers, 1) {
		smp, err := sample.NewSampler(g, workerSamplerOptions(g, o, i))
		if err != nil {
			return nil, err
		}
		src.samplers = append(src.samplers, smp)
	}
	return s.Pack(ctx, src, po)
}

// PackParts packs, for the multistage loader out of core, each of ms's
// parts' rows and its halo's that s does not hold in memory (ms.Hubs must be exactly
// those it holds) as part p's piece in each SSD directory: the first
// stage's sequential reads (store.Store.Pack, set store.PartsName).
func PackParts(ctx context.Context, s *store.Store, ms *Multistage, po store.PackOptions) (*store.PackManifest, error) {
	src := partsSource{members: make([][]int32, ms.Parts), sampling: partsSampling(ms)}
	for v, p := range ms.Part {
		src.members[p] = append(src.members[p], int32(v))
	}
	for p, vs := range ms.Halos {
		src.members[p] = append(src.members[p], vs...)
	}
	po.Name, po.Epochs = store.PartsName, 1
	return s.Pack(ctx, src, po)
}

// partsSource is a partition's parts as the batches Pack writes.
type partsSource struct {
	members  [][]int32
	sampling string
}

func (p partsSource) Workers() int     { return 1 }
func (p partsSource) Batches(int) int  { return len(p.members) }
func (p partsSource) Sampling() string { return p.sampling }
func (p partsSource) Inputs(ctx context.Context, _, _, first int, fn func(int, []int32) bool) error {
	for q := first; q < len(p.members); q++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if !fn(q, p.members[q]) {
			break
		}
	}
	return nil
}

// OpenParts opens ms's packed parts in s (ErrNotPacked, wrapped, when
// there are none for this partition).
func OpenParts(s *store.Store, ms *Multistage) (*store.Packed, error) {
	return s.OpenPacked(store.PartsName, partsSampling(ms))
}
