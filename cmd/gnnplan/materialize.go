package main

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/gnnplan/gnnplan/internal/textout"
	"github.com/gnnplan/gnnplan/trainer/store"
)

// materializeOptions holds the materialize command's flags.
type materializeOptions struct {
	IO      *deps
	Dataset string
	Layout  string // "" means the dataset directory
	SSDDirs []string
	Output  string
	// Verify reads the existing store's files for their checksums instead
	// of writing.
	Verify bool
}

// newMaterializeCmd builds `gnnplan materialize`, which writes a placed
// dataset's SSD bins as files; `gnnplan place --materialize` does the same
// right after placing.
func newMaterializeCmd(d *deps, runF func(context.Context, *materializeOptions) error) *cobra.Command {
	opts := &materializeOptions{IO: d}
	cmd := &cobra.Command{
		Use:   "materialize --dataset DIR (--ssd-dir DIR [--ssd-dir DIR ...] | --verify)",
		Short: "Write a layout's SSD bins as direct-IO files for the feature store",
		Long: `Write each SSD bin of the dataset's layout (from gnnplan place) as one file of
its rows in row order, 512-byte aligned for direct IO, in one --ssd-dir per
SSD (shared round-robin when there are fewer directories than SSD bins), and
the index store.json in the dataset directory. Cache bins (GPU and CPU
memory) get no file: the feature store loads them from features.npy.

Each file starts with a 4 KiB header naming the store and the bin and the
CRC-32C of its rows; training refuses a file whose size or header does not
match the manifest (swapped, truncated, of another store). --verify reads every
file whole and checks its rows against the checksum; it writes nothing and
exits 2 naming the first damaged file (materialize again to repair it).

Safe to interrupt: all files are written under temporary names and renamed,
and the manifest replaced, only when all are complete, so a failed or
interrupted run leaves the previous store as it was. A rerun keeps the files
whose header and checksum match and removes temporary files a killed run left.`,
		Example: `  gnnplan materialize --dataset data/igb-small --ssd-dir /mnt/nvme0 --ssd-dir /mnt/nvme1
  gnnplan materialize --dataset data/igb-small --verify`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.Dataset == "" {
				return usageErrorf("--dataset is required")
			}
			if opts.Verify && (len(opts.SSDDirs) > 0 || opts.Layout != "") {
				return usageErrorf("--verify checks the store the manifest describes: not with --ssd-dir or --layout")
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runMaterialize(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Dataset, "dataset", "", "the dataset directory")
	f.StringVar(&opts.Layout, "layout", "", "the layout directory (default: the dataset directory, where place writes it)")
	f.StringArrayVar(&opts.SSDDirs, "ssd-dir", nil, "a directory on one SSD for its bin file (repeat for each SSD)")
	f.BoolVar(&opts.Verify, "verify", false, "check the existing store as train opens it and every file against its checksum (writes nothing)")
	outputFlag(f, &opts.Output, "", "the manifest, or the verify report", "table", "wide", "json")
	return cmd
}

func runMaterialize(ctx context.Context, o *materializeOptions) error {
	if o.Verify {
		return runVerify(ctx, o)
	}
	layout := o.Layout
	if layout == "" {
		layout = o.Dataset
	}
	r := textout.NewProgress(o.IO.Err)
	m, err := store.Materialize(ctx, o.Dataset, layout, o.SSDDirs, store.MaterializeOptions{Log: r, Progress: storeProgress(r)})
	r.Close()
	if err != nil {
		return err
	}
	if o.Output == "json" {
		return writeJSON(o.IO.Out, m)
	}
	h := newHuman(o.IO.Out, o.Output)
	if err := m.WriteText(h, h.Width); err != nil {
		return err
	}
	fmt.Fprintf(h, "wrote %s\n", filepath.Join(o.Dataset, store.ManifestFile))
	return h.Flush()
}

// runVerify is materialize --verify: the report, then the error naming
// the first damaged file (exit 2) when there is one.
func runVerify(ctx context.Context, o *materializeOptions) error {
	r := textout.NewProgress(o.IO.Err)
	rep, err := store.Verify(ctx, o.Dataset, store.VerifyOptions{Log: r, Progress: storeProgress(r)})
	r.Close()
	if rep == nil {
		return err
	}
	if o.Output == "json" {
		if jerr := writeJSON(o.IO.Out, rep); jerr != nil {
			return jerr
		}
		return err
	}
	h := newHuman(o.IO.Out, o.Output)
	if werr := rep.WriteText(h, h.Width); werr != nil {
		return werr
	}
	if err == nil {
		fmt.Fprintf(h, "store %s: features and %d SSD bin files intact\n", rep.StoreID, len(rep.Bins))
	}
	if ferr := h.Flush(); ferr != nil {
		return ferr
	}
	return err
}

// materializeLayout is place --materialize: the layout just written in
// the dataset directory, progress on stderr so that place's own output
// (a table, or JSON for scripts) stays as it is.
func materializeLayout(ctx context.Context, d *deps, dataset string, ssdDirs []string) error {
	r := textout.NewProgress(d.Err)
	_, err := store.Materialize(ctx, dataset, dataset, ssdDirs, store.MaterializeOptions{Log: r, Progress: storeProgress(r)})
	r.Close()
	return err
}

// storeProgress adapts the feature store's byte counts to p's phases: a
// bar per phase on a terminal; elsewhere nil, as the store's own log
// lines are one per phase.
func storeProgress(p *textout.Progress) func(store.Progress) {
	if !p.TTY() {
		return nil
	}
	var phase string
	var done int64
	var add func(int64)
	return func(s store.Progress) {
		if add == nil || s.Phase != phase {
			phase, done = s.Phase, 0
			add = p.Phase(s.Phase, s.TotalBytes)
		}
		add(s.DoneBytes - done)
		done = s.DoneBytes
	}
}
