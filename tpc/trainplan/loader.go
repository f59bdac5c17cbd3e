package trainplan

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/gnnplan/gnnplan/internal/inputerr"
	"github.com/gnnplan/gnnplan/tpc"
	"github.com/gnnplan/gnnplan/trainer"
	"github.com/gnnplan/gnnplan/trainer/store"
)

// LoaderFlags pick how batches reach the step (docs/loaders.md): the
// loader, and for the packed one how many epochs to pack in how much disk
// space, and whether to pack again.
type LoaderFlags struct {
	Loader string
	// PackEpochs is how many epochs' batches to pack (0: the run's
	// epochs); PackSpaceGiB bounds their files (0: half the free space
	// of the disks they go to). Repack packs even when packed batches
	// for this run exist.
	PackEpochs   int
	PackSpaceGiB float64
	Repack       bool
	// Parts is how many parts the multistage loader cuts the graph into,
	// MacroParts how many make a macro-batch; HubFraction is the share
	// of the vertices (the most sampled) every macro-batch holds in
	// memory, out of core the store's cache instead; HaloFraction bounds
	// each part's halo (the neighbours of its training vertices the
	// partition cut, held with it) at that share of the part's vertices
	// (0: none).
	Parts, MacroParts         int
	HubFraction, HaloFraction float64
}

// PrepareLoader sets the session's loader up: for the packed loader out
// of core, it opens the dataset's packed batches for this run's sampling,
// packing them first (with progress and a line on log) when there are none
// for it, or when asked to. In memory every row is held already and
// nothing is packed.
func (r *Session) PrepareLoader(ctx context.Context, lf LoaderFlags, log io.Writer, progress func(store.Progress)) error {
	r.Options.Loader = lf.Loader
	switch lf.Loader {
	case trainer.LoaderMultistage:
		return r.prepareMultistage(ctx, lf, log, progress)
	case trainer.LoaderPacked:
	default:
		return nil
	}
	if r.Store == nil {
		r.Notes = append(r.Notes, "--loader packed: every row is in memory, so nothing is packed and batches load as online")
		return nil
	}
	if lf.PackEpochs < 0 || lf.PackSpaceGiB < 0 {
		return inputerr.Errorf("", "", "--pack-epochs %d, --pack-space-gib %g (valid: >= 0; 0 picks)", lf.PackEpochs, lf.PackSpaceGiB)
	}
	sampling := trainer.Sampling(r.Graph, r.Options)
	p, err := r.Store.OpenPacked(store.PackedName, sampling)
	if err == nil && lf.Repack {
		p.Close()
	}
	if err != nil && !errors.Is(err, store.ErrNotPacked) {
		return err
	}
	if err != nil || lf.Repack {
		reason := "--repack"
		if err != nil {
			reason = err.Error()
		}
		fmt.Fprintf(log, "packing batches (%s)\n", reason)
		if r.Packing, err = r.pack(ctx, lf, log, progress); err != nil {
			return err
		}
		if p, err = r.Store.OpenPacked(store.PackedName, sampling); err != nil {
			return err
		}
	}
	r.cleanup = append(r.cleanup, func() { p.Close() })
	r.Options.Packed = p
	m := p.Manifest()
	note := fmt.Sprintf("packed loader: %d epochs of batches packed, %.2f GiB (%.2fx the features' %.2f GiB) over %d directories",
		m.Epochs, float64(m.Bytes)/(1<<30), float64(m.Bytes)/float64(max(m.FeatureBytes, 1)), float64(m.FeatureBytes)/(1<<30), len(m.Dirs))
	if r.Options.Epochs > m.Epochs {
		note += fmt.Sprintf("; epochs past %d reuse them in order", m.Epochs)
	}
	r.Notes = append(r.Notes, note)
	return nil
}

// pack packs the run's batches under lf's limits.
func (r *Session) pack(ctx context.Context, lf LoaderFlags, log io.Writer, progress func(store.Progress)) (*store.PackManifest, error) {
	po := store.PackOptions{Epochs: lf.PackEpochs, SpaceBytes: int64(lf.PackSpaceGiB * (1 << 30)), Log: log, Progress: progress}
	if po.Epochs == 0 {
		po.Epochs = r.Options.Epochs
	}
	if po.SpaceBytes == 0 {
		free, err := r.Store.PackFreeBytes()
		if err != nil {
			return nil, err
		}
		po.SpaceBytes = free / 2
	}
	m, err := trainer.Pack(ctx, r.Graph, r.Store, r.Options, po)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "packed %d epochs of batches in %s: %d rows, %.2f GiB, %d passes over the features%s\n", m.Epochs, tpc.FormatSeconds(m.Seconds),
		m.Rows, float64(m.Bytes)/(1<<30), m.Passes, map[bool]string{true: " (as many as the space allows)", false: ""}[m.SpaceLimited])
	return m, nil
}
