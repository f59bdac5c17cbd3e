package trainer

import (
	"context"
	"fmt"

	"github.com/gnnplan/gnnplan/kernels"
	"github.com/gnnplan/gnnplan/trainer/sample"
)

// inputSlots is how many device matrices a worker on a GPU uploads
// batches' rows into, whatever the number of host buffers gathered ahead:
// the one the step reads and the next batch's, copied in meanwhile.
const inputSlots = 2

// workerInput is where a worker's model input comes from: the in-memory
// features on its backend, or (out of core) the feature source, through
// the worker's gather buffers and, on a GPU, its device slots and the
// cache bin it holds resident.
type workerInput struct {
	backend  kernels.Backend
	dim      int
	inMemory *kernels.Mat  // the features on backend; nil out of core
	source   FeatureSource // nil in memory
	// rowNormalize scales the gathered rows as the in-memory matrix is,
	// on up to normalizeThreads goroutines (Options.GatherThreads);
	// false where the source serves them scaled.
	rowNormalize     bool
	normalizeThreads int
	// pool is the gather buffers, kept across epochs: a GPU worker's are
	// pinned, and pinning memory is slow. On a GPU, ring is the device
	// slots (inputSlots) their uploads share.
	pool []*stageBuf
	ring *kernels.StagingRing
	// resident holds a worker cache bin's rows on the device (nil: none);
	// residentSource serves the other rows, residentBin names the bin.
	resident       *kernels.Mat
	residentSource residentSource
	residentBin    int
}

// buffers returns the pool's first n buffers, growing it: a loader's
// gather buffers for the epoch.
func (in *workerInput) buffers(n int) []*stageBuf {
	for len(in.pool) < n {
		in.pool = append(in.pool, &stageBuf{})
	}
	return in.pool[:n]
}

// rowFetcher writes mb's input rows into dst as
// store.Store.GatherResident does (resident < 0: every row, idx nil) and
// returns how many rows dst holds.
type rowFetcher func(ctx context.Context, mb *sample.MiniBatch, dst []float32, resident int, idx []int32) (int, GatherStats, error)

// gather reads the feature rows of mb's outermost sources from the
// feature source into sb (grown as needed), row-normalised as the
// in-memory matrix would be; the rows of the resident bin stay on the
// device; fetch, when not nil, serves them instead of the source. On a GPU it starts copying them there; a failure of the GPU's
// is returned, since the gather runs on a loader's goroutine.
func (in *workerInput) gather(ctx context.Context, mb *sample.MiniBatch, sb *stageBuf, fetch rowFetcher) (r inputRows, st GatherStats, err error) {
	r.sb = sb
	defer recoverDeviceError(&err)
	where := func(err error) error { return fmt.Errorf("epoch %d, batch %d: %w", mb.Epoch+1, mb.Index+1, err) }
	vertices := mb.Input()
	if err := in.grow(sb, len(vertices)*in.dim); err != nil {
		return r, st, where(err)
	}
	r = inputRows{buf: sb.host[:len(vertices)*in.dim], n: len(vertices), staging: sb.staging, sb: sb}
	resident := -1
	if in.resident != nil {
		if cap(sb.idx) < len(vertices) {
			sb.idx = make([]int32, len(vertices))
		}
		r.idx = sb.idx[:len(vertices)]
		resident = in.residentBin
	}
	switch {
	case fetch != nil:
		r.n, st, err = fetch(ctx, mb, r.buf, resident, r.idx)
	case resident >= 0:
		r.n, st, err = in.residentSource.GatherResident(ctx, vertices, r.buf, resident, r.idx)
	default:
		st, err = in.source.Gather(ctx, vertices, r.buf)
	}
	if err != nil {
		return r, st, where(err)
	}
	if in.rowNormalize {
		rowNormalizeOn(in.normalizeThreads, r.buf[:r.n*in.dim], in.dim)
	}
	if r.staging != nil {
		// Waits for a free device slot: the step's Done of the batch
		// before last gives one back.
		if err := r.staging.Upload(ctx, r.n, in.dim); err != nil {
			return r, st, where(err)
		}
	}
	return r, st, nil
}

// grow makes sb hold n floats: pinned staging on a GPU, with room to
// spare so that the next batches rarely pin again, else host memory.
func (in *workerInput) grow(sb *stageBuf, n int) error {
	gpu, ok := in.backend.(*kernels.GPU)
	if !ok {
		if cap(sb.host) < n {
			sb.host = make([]float32, n)
		}
		return nil
	}
	if in.ring == nil {
		ring, err := gpu.NewStagingRing(inputSlots)
		if err != nil {
			return err
		}
		in.ring = ring
	}
	if sb.staging == nil || sb.staging.Floats() < n {
		staging, err := in.ring.NewStaging(n + n/4)
		if err != nil {
			return err
		}
		sb.staging, sb.host = staging, staging.Host()
	}
	return nil
}

// modelInput returns the model's input for b: the rows gathered (out of
// core), the whole feature matrix when the first layer reads it in place
// (inPlace), else the outermost sources' rows gathered into x.
func (in *workerInput) modelInput(b Batch, inPlace bool, x *kernels.Mat) *kernels.Mat {
	be := in.backend
	if in.source != nil {
		rows := b.rows
		var copied *kernels.Mat
		if rows.staging != nil {
			copied = rows.staging.Mat() // uploaded while the batch before computed
		} else {
			copied = be.Wrap(rows.n, in.dim, rows.buf[:rows.n*in.dim])
		}
		if in.resident == nil {
			return copied
		}
		// The rows copied in and the rows resident on the device, in
		// the batch's order.
		be.Resize(x, len(rows.idx), in.dim)
		be.GatherRowsTwo(x, copied, in.resident, be.NewIndex(rows.idx))
		return x
	}
	if inPlace {
		return in.inMemory
	}
	vertices := b.MiniBatch.Input()
	be.Resize(x, len(vertices), in.dim)
	be.GatherRows(x, in.inMemory, be.NewIndex(vertices))
	return x
}

// holdResident copies worker cache bin bin's rows (data) to the device,
// where they stay: rs serves the batches' other rows. A device's failure
// (no room) is returned as an error.
func (in *workerInput) holdResident(rs residentSource, bin int, data []float32) (err error) {
	defer recoverDeviceError(&err)
	m := in.backend.NewMat(0, 0)
	in.backend.Upload(m, len(data)/in.dim, in.dim, data)
	in.resident, in.residentSource, in.residentBin = m, rs, bin
	return nil
}
