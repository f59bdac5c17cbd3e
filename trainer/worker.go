package trainer

import (
	"fmt"
	"slices"

	"github.com/gnnplan/gnnplan/internal/inputerr"
	"github.com/gnnplan/gnnplan/internal/rng"
	"github.com/gnnplan/gnnplan/kernels"
	"github.com/gnnplan/gnnplan/trainer/dataset"
	"github.com/gnnplan/gnnplan/trainer/nn"
	"github.com/gnnplan/gnnplan/trainer/sample"
)

// worker is one data-parallel worker: its share of the seeds, sampled and
// loaded on its own, and its model replica, on its backend.
type worker struct {
	id      int
	backend kernels.Backend
	model   *nn.Model
	sampler *sample.Sampler
	// input is where the worker's model input comes from; loader
	// delivers its batches.
	input  *workerInput
	loader Loader
	// gathered is the step's input gathered in memory; logitGrad the
	// logits' gradient.
	gathered, logitGrad *kernels.Mat
	seed                uint64 // its sampling and dropout streams
	// grads are worker 0's copies of this worker's gradients when its
	// backend is another, and transferBuf the host memory they pass
	// through.
	grads       []*kernels.Mat
	transferBuf []float32
}

// workerSet is a run's workers, worker 0's model the master replica.
type workerSet []*worker

// workerBackends returns each worker's backend and whether they are
// pairwise distinct (so their passes may run at once).
func workerBackends(b kernels.Backend, o Options) ([]kernels.Backend, bool) {
	n := max(o.Workers, 1)
	if o.Backends == nil {
		bs := make([]kernels.Backend, n)
		for i := range bs {
			bs[i] = b
		}
		return bs, false
	}
	bs := slices.Clone(o.Backends)
	for i, x := range bs {
		if slices.Index(bs, x) != i {
			return bs, false
		}
	}
	return bs, n > 1
}

// workerSeed is worker w's seed: the run's for worker 0, so that one
// worker trains as a run without workers does.
func workerSeed(seed uint64, w int) uint64 {
	if w == 0 {
		return seed
	}
	return seed ^ rng.Mix(uint64(w)*0x776f726b+rng.Golden) // "work"
}

// newWorkers builds o's workers on backends: replicas of one
// initialisation, each sampling every Workers-th training seed (all of
// them for one worker), its input the in-memory features on its backend
// (inMemory, nil out of core) or o.Features, loaded by a prefetchLoader.
func newWorkers(backends []kernels.Backend, inMemory []*kernels.Mat, blocks blockBuilder, cfg nn.Config, o Options) (workerSet, error) {
	n := max(o.Workers, 1)
	ahead := o.GatherAhead
	if ahead <= 0 {
		ahead = DefaultGatherAhead
	}
	ws := make(workerSet, n)
	for i := range ws {
		be := backends[i]
		model, err := nn.New(be, cfg, o.Seed)
		if err != nil {
			return nil, &inputerr.Error{Field: "model", Msg: err.Error()}
		}
		w := &worker{id: i, backend: be, model: model, gathered: be.NewMat(0, 0), logitGrad: be.NewMat(0, 0), seed: workerSeed(o.Seed, i)}
		w.input = &workerInput{backend: be, dim: cfg.InDim, source: o.Features, rowNormalize: scalesGathered(o), normalizeThreads: o.GatherThreads}
		if inMemory != nil {
			w.input.inMemory = inMemory[i]
		}
		if w.sampler, err = sample.NewSampler(blocks.graph, workerSamplerOptions(blocks.graph, o, i)); err != nil {
			return nil, err
		}
		if w.loader, err = newLoader(w, blocks, model.ReadsFeaturesInPlace(true), ahead, o); err != nil {
			return nil, err
		}
		ws[i] = w
	}
	return ws, nil
}

// placeResident gives each worker on a GPU one of src's worker (GPU)
// cache bins, in order, resident in the GPU's memory: the plan's GPU
// cache. Those rows are never gathered or copied again; the rest of a
// batch is gathered on the host and copied in (store.GatherResident).
// Workers on the CPU, and workers beyond the layout's GPU bins, gather
// every row. A bin the GPU cannot hold is an error naming it.
func (ws workerSet) placeResident(src FeatureSource, rowNormalize bool) error {
	rs, ok := src.(residentSource)
	if !ok {
		return nil
	}
	bins := rs.WorkerBins()
	for i, w := range ws {
		if _, gpu := w.backend.(*kernels.GPU); !gpu || i >= len(bins) {
			continue
		}
		data, err := rs.BinData(bins[i])
		if err != nil {
			return err
		}
		dim := w.input.dim
		if rowNormalize {
			data = slices.Clone(data)
			RowNormalize(data, dim)
		}
		if err := w.input.holdResident(rs, bins[i], data); err != nil {
			return fmt.Errorf("GPU cache bin %s (%d rows, %.2f GiB) on %s: %w", rs.BinIDs()[bins[i]], len(data)/dim,
				float64(4*len(data))/(1<<30), w.backend.Name(), err)
		}
	}
	return nil
}

// workerSamplerOptions is worker i's sampler on g: its share of the
// training seeds (every Workers-th; all for one worker), BatchSize of
// them per batch (0: the whole share), shuffled, from its own seed.
func workerSamplerOptions(g *dataset.Graph, o Options, i int) sample.SamplerOptions {
	n := max(o.Workers, 1)
	batch := o.BatchSize
	if batch == 0 {
		batch = (len(g.Train) + n - 1) / n
	}
	so := sample.SamplerOptions{Fanouts: o.Fanouts, BatchSize: batch, Seed: workerSeed(o.Seed, i), Workers: o.Threads, Shuffle: true}
	if n > 1 {
		for j := i; j < len(g.Train); j += n {
			so.Seeds = append(so.Seeds, g.Train[j])
		}
	}
	return so
}

// batches is the steps of an epoch: the most any worker has.
func (ws workerSet) batches(epoch int) int {
	nb := 0
	for _, w := range ws {
		nb = max(nb, w.loader.Batches(epoch))
	}
	return nb
}

// reduceGradients leaves in the master replica the gradient of the mean
// loss over every worker's labelled seeds: each worker's gradient (of its
// own mean) weighted by its share of the labelled seeds, summed in worker
// order. One worker's gradient is left as it is. A worker on another
// backend sends its gradients to the master's first.
func (ws workerSet) reduceGradients(held []Batch, labeled int) {
	if len(ws) == 1 {
		return
	}
	be := ws[0].backend
	master := ws[0].model.Params()
	if held[0].MiniBatch != nil && labeled > 0 {
		for _, p := range master {
			be.Scale(p.G, float32(held[0].Labeled)/float32(labeled))
		}
	} else {
		for _, p := range master {
			be.Zero(p.G)
		}
	}
	for i := 1; i < len(held); i++ {
		if held[i].MiniBatch == nil || held[i].Labeled == 0 {
			continue
		}
		w := ws[i]
		weight := float32(held[i].Labeled) / float32(labeled)
		for j, p := range w.model.Params() {
			g := p.G
			if w.backend != be {
				if w.grads == nil {
					w.grads = make([]*kernels.Mat, len(master))
				}
				if w.grads[j] == nil {
					w.grads[j] = be.NewMat(0, 0)
				}
				w.transferBuf = kernels.Transfer(be, w.grads[j], w.backend, g, w.transferBuf)
				g = w.grads[j]
			}
			be.Axpy(weight, g, master[j].G)
		}
	}
}

// broadcast copies the master replica's parameters to the other workers.
func (ws workerSet) broadcast() {
	master := ws[0].model.Params()
	for _, w := range ws[1:] {
		for j, p := range w.model.Params() {
			w.transferBuf = kernels.Transfer(w.backend, p.W, ws[0].backend, master[j].W, w.transferBuf)
		}
	}
}
