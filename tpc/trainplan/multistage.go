package trainplan

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/gnnplan/gnnplan/internal/inputerr"
	"github.com/gnnplan/gnnplan/tpc"
	"github.com/gnnplan/gnnplan/trainer"
	"github.com/gnnplan/gnnplan/trainer/partition"
	"github.com/gnnplan/gnnplan/trainer/sample"
	"github.com/gnnplan/gnnplan/trainer/store"
)

// lowKept is the share of a training vertex's sampled neighbourhood its
// macro-batch holds (partition.Kept, as deep as the fanouts) below which
// train warns that multistage sampling may cost accuracy: with the
// defaults Cora's macro-batches held 66% and CiteSeer's 81% and trained
// within a point of online sampling, a synthetic graph's held 36% and
// trained 15 points under it. How much a share costs depends on the
// graph: the synthetic one lost 8 points at 83% (docs/loaders.md).
const lowKept = 0.6

// prepareMultistage partitions the graph, picks the hubs and, out of
// core, opens the packed parts (packing them first when needed); it
// warns when a macro-batch holds less than lowKept of a training vertex's
// neighbours.
func (r *Session) prepareMultistage(ctx context.Context, lf LoaderFlags, log io.Writer, progress func(store.Progress)) error {
	switch {
	case lf.Parts < 1 || lf.MacroParts < 1 || lf.MacroParts > lf.Parts:
		return inputerr.Errorf("", "", "--parts %d, --macro-parts %d (valid: parts >= 1, 1 <= macro-parts <= parts)", lf.Parts, lf.MacroParts)
	case lf.HubFraction < 0 || lf.HubFraction > 1:
		return inputerr.Errorf("", "", "--hub-fraction %g (valid: 0 to 1)", lf.HubFraction)
	case !(lf.HaloFraction >= 0) || math.IsInf(lf.HaloFraction, 0):
		return inputerr.Errorf("", "", "--halo-fraction %g (valid: 0 or more)", lf.HaloFraction)
	}
	start := time.Now()
	part, err := r.partition(ctx, lf.Parts)
	if err != nil {
		return err
	}
	ms := &trainer.Multistage{Part: part.Part, Parts: lf.Parts, MacroParts: lf.MacroParts}
	hubs := "the store's cache"
	if r.Store != nil {
		ms.Hubs = sample.Bitmap(r.Store.InMemorySet())
	} else if ms.Hubs, err = r.hotHubs(ctx, lf.HubFraction); err != nil {
		return err
	} else {
		hubs = fmt.Sprintf("the %.1f%% most sampled vertices", 100*lf.HubFraction)
	}
	halos := "none"
	if lf.HaloFraction > 0 {
		if ms.Halos, err = partition.Halos(ctx, r.Graph, part.Part, part.Parts, lf.HaloFraction, func(v int32) bool { return ms.Hubs.Has(v) }); err != nil {
			return err
		}
		n := 0
		for _, h := range ms.Halos {
			n += len(h)
		}
		halos = fmt.Sprintf("%d vertices (%.0f%% of the graph's)", n, 100*float64(n)/float64(len(part.Part)))
	}
	kept, err := partition.Kept(r.Graph, part.Part, part.Parts, ms.MacroParts, max(len(r.Options.Fanouts), 1), func(v int32) bool { return ms.Hubs.Has(v) }, ms.Halos)
	if err != nil {
		return err
	}
	note := fmt.Sprintf("multistage loader: %d parts (edge cut %.1f%%, random %.1f%%; in %s), %d per macro-batch; hubs: %s (%d vertices); halos: %s; "+
		"a training vertex's macro-batch holds %.0f%% of its sampled neighbourhood's paths (online sampling: all)",
		part.Parts, 100*part.EdgeCut, 100*part.RandomEdgeCut, tpc.FormatSeconds(time.Since(start).Seconds()), ms.MacroParts, hubs, ms.Hubs.Len(), halos, 100*kept)
	if kept < lowKept {
		note += fmt.Sprintf("; warning: a batch samples only the %.0f%% of each training vertex's neighbourhood its macro-batch holds "+
			"(a synthetic graph's held 36%% and trained 15 points under online sampling, docs/loaders.md): "+
			"--halo-fraction, more --macro-parts, or --loader packed keep more of them", 100*kept)
	}
	if r.Store != nil {
		p, err := r.openParts(ctx, ms, lf, log, progress)
		if err != nil {
			return err
		}
		r.cleanup = append(r.cleanup, func() { p.Close() })
		ms.Pieces = p
		m := p.Manifest()
		note += fmt.Sprintf("; parts packed in %.2f GiB", float64(m.Bytes)/(1<<30))
	}
	r.Options.Multistage = ms
	r.Notes = append(r.Notes, note)
	return nil
}

// partition cuts the graph into parts, or reads the partition an earlier
// run of the same graph, parts and seed saved in the dataset directory.
func (r *Session) partition(ctx context.Context, parts int) (*partition.Result, error) {
	seed := r.Options.Seed
	if p, ok, err := partition.Load(r.Dir, r.Graph, parts, seed); err != nil || ok {
		return p, err
	}
	p, err := partition.Partition(ctx, r.Graph, partition.Options{Parts: parts, Seed: seed})
	if err != nil {
		return nil, err
	}
	if err := partition.Save(r.Dir, r.Graph, p, seed); err != nil {
		// A dataset directory one cannot write to still trains.
		r.Notes = append(r.Notes, fmt.Sprintf("the partition was not saved for the next run: %v", err))
	}
	return p, nil
}

// openParts opens ms's packed parts, packing them when there are none for
// this partition or when asked to.
func (r *Session) openParts(ctx context.Context, ms *trainer.Multistage, lf LoaderFlags, log io.Writer, progress func(store.Progress)) (*store.Packed, error) {
	p, err := trainer.OpenParts(r.Store, ms)
	if err == nil && !lf.Repack {
		return p, nil
	}
	if err == nil {
		p.Close()
	} else if !errors.Is(err, store.ErrNotPacked) {
		return nil, err
	}
	fmt.Fprintln(log, "packing the parts for the multistage loader")
	m, err := trainer.PackParts(ctx, r.Store, ms, store.PackOptions{Log: log, Progress: progress})
	if err != nil {
		return nil, err
	}
	r.Packing = m
	fmt.Fprintf(log, "packed %d parts in %s: %d rows, %.2f GiB\n", ms.Parts, tpc.FormatSeconds(m.Seconds), m.Rows, float64(m.Bytes)/(1<<30))
	return trainer.OpenParts(r.Store, ms)
}

// hotHubs is the share frac of the vertices one epoch of the run's
// sampling reads most often: HANOI's hubs, the vertices whose rows the
// most training vertices' neighbourhoods reach.
func (r *Session) hotHubs(ctx context.Context, frac float64) (sample.Bitmap, error) {
	n := int(r.Graph.Meta.NumNodes)
	hubs := sample.NewBitmap(n)
	k := int(frac * float64(n))
	if k == 0 {
		return hubs, nil
	}
	so := sample.SamplerOptions{Fanouts: r.Options.Fanouts, BatchSize: r.Options.BatchSize, Seed: r.Options.Seed, Workers: r.Options.Threads, Shuffle: true}
	if so.BatchSize == 0 {
		so.BatchSize = len(r.Graph.Train)
	}
	counts, err := sample.Hotness(ctx, r.Graph, sample.HotnessOptions{Sampler: so}, io.Discard)
	if err != nil {
		return nil, err
	}
	// The k-th largest count by a histogram (counts are at most the
	// batches of an epoch), then the vertices above it, ties in order.
	var top uint32
	for _, c := range counts {
		top = max(top, c)
	}
	hist := make([]int, top+1)
	for _, c := range counts {
		hist[c]++
	}
	cut, above := top, 0
	for ; cut > 0 && above+hist[cut] < k; cut-- {
		above += hist[cut]
	}
	ties := k - above
	for v, c := range counts {
		if c > cut || (c == cut && ties > 0) {
			if c == cut {
				ties--
			}
			hubs.Set(int32(v))
		}
	}
	return hubs, nil
}
