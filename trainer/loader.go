package trainer

import (
	"context"

	"github.com/gnnplan/gnnplan/kernels"
	"github.com/gnnplan/gnnplan/trainer/dataset"
	"github.com/gnnplan/gnnplan/trainer/nn"
	"github.com/gnnplan/gnnplan/trainer/sample"
)

// A Loader turns one worker's sampler and features into the batches its
// steps train on, as PyG's NodeLoader and DGL GraphBolt's feature fetcher
// do: each batch sampled, its blocks built on the worker's backend, and
// (out of core) its input rows gathered from the FeatureSource and, on a
// GPU, uploaded. The training loop only takes batches and gives them back:
// how they are made (pipelined ahead of the step, read packed from disk
// as DiskGNN does, in HANOI's stages) is the Loader's. The default is
// pipelined prefetching (prefetchLoader).
type Loader interface {
	// Batches is how many batches epoch has.
	Batches(epoch int) int
	// Epoch starts loading epoch's batches from batch first (a resumed
	// run trained those before it); ctx's end stops the loading.
	Epoch(ctx context.Context, epoch, first int) Batches
}

// batchSource draws a worker's batches: its sampler (online and packed)
// or HANOI's stages (multistage).
type batchSource interface {
	Batches(epoch int) int
	// EpochFrom calls fn with epoch's batches from batch first, in
	// order, until fn fails or ctx ends.
	EpochFrom(ctx context.Context, epoch, first int, fn func(*sample.MiniBatch) error) error
}

// Batches is one epoch of a Loader's batches, in order, taken by one
// goroutine.
type Batches interface {
	// Next waits for the next batch. It returns the loading's error, or
	// io.EOF where the loading stopped without one (ctx ended).
	Next() (Batch, error)
	// Release gives back what a batch holds (its buffer, its device
	// slot) once the step is done with it; each batch once.
	Release(Batch)
	// Finish waits, once the epoch's batches are taken, for the loading
	// to end on its own: a loader may still be reading for the next
	// epoch (the multistage loader's first macro-batch), which Stop
	// would throw away. It returns the loading's error, if any.
	Finish() error
	// Stop ends the loading, gives back what the batches never taken
	// hold and waits for the loading's goroutines; it may be called
	// again.
	Stop()
}

// Batch is one step's input for one worker.
type Batch struct {
	MiniBatch *sample.MiniBatch
	// Blocks are MiniBatch's blocks on the worker's backend (the
	// outermost an input block where the first layer reads the in-memory
	// features in place); Labels are its seeds' labels there, Labeled of
	// them (those >= 0) counting in the loss.
	Blocks  []*nn.Block
	Labels  *kernels.Index
	Labeled int
	// Stats is what loading the batch measured.
	Stats LoadStats
	// rows are the gathered input rows (out of core).
	rows inputRows
}

// LoadStats is what loading one batch measured: the sampling stage's and
// the gather stage's times, and where the batch's rows came from. It
// travels with the batch, so the training loop adds it up without locks.
type LoadStats struct {
	Sample, Gather StageStats
	Rows           GatherStats
}

// blockBuilder builds a sampled batch's blocks and reads its seeds'
// labels.
type blockBuilder struct {
	graph   *dataset.Graph
	degrees []int32 // GCN's normalisation; nil for the other models
	forms   nn.BlockForms
}

// build makes mb's Batch on backend, the outermost block an input block
// when inputInPlace.
func (bb blockBuilder) build(backend kernels.Backend, mb *sample.MiniBatch, inputInPlace bool) Batch {
	L := len(mb.Blocks)
	b := Batch{MiniBatch: mb, Blocks: make([]*nn.Block, L)}
	for h := range mb.Blocks {
		blk := &mb.Blocks[h]
		if h == L-1 && inputInPlace {
			b.Blocks[h] = nn.NewInputBlock(backend, blk.Offsets, blk.SrcIdx, blk.Src, bb.degrees, int(bb.graph.Meta.NumNodes), bb.forms)
			continue
		}
		b.Blocks[h] = nn.NewBlock(backend, blk.Offsets, blk.SrcIdx, blk.Src, bb.degrees, bb.forms)
	}
	labels := make([]int32, len(mb.Seeds))
	for i, v := range mb.Seeds {
		labels[i] = int32(bb.graph.Labels[v])
		if labels[i] >= 0 {
			b.Labeled++
		}
	}
	b.Labels = backend.NewIndex(labels)
	return b
}

// buildOnDevice is build where a device's failure (the blocks go to a
// GPU) is returned rather than left to crash the process: on a loader's
// goroutine.
func (bb blockBuilder) buildOnDevice(backend kernels.Backend, mb *sample.MiniBatch, inputInPlace bool) (b Batch, err error) {
	defer recoverDeviceError(&err)
	return bb.build(backend, mb, inputInPlace), nil
}

// stageBuf is where a batch's rows are gathered: host memory, or for a
// worker on a GPU a pinned staging buffer copied on the GPU's copy
// stream, into one of the worker's device slots, while the batch before
// computes.
type stageBuf struct {
	host    []float32
	staging *kernels.Staging
	idx     []int32 // where each row is, for a worker holding a bin resident
}

// inputRows is a batch's gathered input: every row of mb.Input() in
// buf, or, for a worker holding a cache bin on its device, the n rows it
// does not hold packed in buf and idx saying where each row is (see
// store.Store.GatherResident). staging, on a GPU, is buf's, its upload
// started into one of the worker's device slots, held until its Done; sb
// is the buffer to return.
type inputRows struct {
	buf     []float32
	idx     []int32
	n       int
	staging *kernels.Staging
	sb      *stageBuf
}

// dropSlot gives back the device slot s holds, if any, on a path that
// drops a batch (an error, a cancel, the loader's stop). A failed device
// panics again in recording the slot's fence: its first failure is
// already on its way to Run, and the slot is back either way, so that
// panic alone is dropped (deferred during another panic, dropSlot does
// not recover that one).
func dropSlot(s *kernels.Staging) {
	defer func() {
		if e := recover(); e != nil {
			if _, ok := e.(*kernels.DeviceError); !ok {
				panic(e)
			}
		}
	}()
	s.Done()
}

// recoverDeviceError, deferred, turns a device's failure (a
// *kernels.DeviceError panic: the Backend interface has no errors) into
// *err; any other panic goes on.
func recoverDeviceError(err *error) {
	if p := recover(); p != nil {
		de, ok := p.(*kernels.DeviceError)
		if !ok {
			panic(p)
		}
		*err = de
	}
}
