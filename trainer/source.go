package trainer

import (
	"context"

	"github.com/gnnplan/gnnplan/trainer/internal/gather"
	"github.com/gnnplan/gnnplan/trainer/store"
)

// FeatureSource serves a batch's feature rows when the features are not
// held in memory as one matrix: a feature store reading its caches and SSD
// bins (StoreSource). Gather writes row i of the row-major len(vertices) x
// Dim matrix dst for vertices[i]; it may be called from another goroutine
// than the training loop, one call at a time.
type FeatureSource interface {
	Dim() int
	Gather(ctx context.Context, vertices []int32, dst []float32) (GatherStats, error)
}

// scaledBySource says src serves its rows already scaled to unit L1 norm
// (a store opened with RowNormalize), so the trainer must not scale them
// again.
func scaledBySource(src FeatureSource) bool {
	s, ok := src.(interface{ RowNormalized() bool })
	return ok && s.RowNormalized()
}

// scalesGathered says the trainer scales the rows it gathers from o's
// Features: o asks for scaled rows and the source does not serve them so.
func scalesGathered(o Options) bool { return o.RowNormalize && !scaledBySource(o.Features) }

// GatherStats describe one Gather (or, added up, many): where the rows
// came from and what reading them cost.
type GatherStats = gather.Stats

// StoreSource is s as a FeatureSource. A worker on a GPU holds one of
// s's worker (GPU) cache bins resident in the GPU's memory and gathers
// only the other rows (store.Store.GatherResident); a probe reads every
// row from s's memory (store.Store.MemoryView).
func StoreSource(s *store.Store) FeatureSource { return storeSource{s} }

// storeSource is a *store.Store as FeatureSource and residentSource; its
// type tells the probe to read through the store's MemoryView.
type storeSource struct{ *store.Store }

// memoryViewSource is a store's MemoryView as a FeatureSource.
type memoryViewSource struct{ *store.MemoryView }

// residentSource is a FeatureSource whose worker (GPU) cache bins a
// worker on a device can hold in the device's memory: StoreSource's.
type residentSource interface {
	FeatureSource
	WorkerBins() []int
	BinIDs() []string
	BinData(bin int) ([]float32, error)
	GatherResident(ctx context.Context, vertices []int32, dst []float32, resident int, idx []int32) (int, GatherStats, error)
}
