package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"
	"github.com/spf13/cobra"

	"github.com/gnnplan/gnnplan/maxflow"
	"github.com/gnnplan/gnnplan/trainer/store"
)

// materializeOptions holds the materialize command's flags.
type materializeOptions struct {
	IO      *deps
	Dataset string
	Layout  string // "" means the dataset directory
	SSDDirs []string
	Output  string
}

// newMaterializeCmd builds `gnnplan materialize`, which writes a placed
// dataset's SSD bins as files; `gnnplan place --materialize` does the same
// right after placing.
func newMaterializeCmd(d *deps, runF func(context.Context, *materializeOptions) error) *cobra.Command {
	opts := &materializeOptions{IO: d}
	cmd := &cobra.Command{
		Use:   "materialize --dataset DIR --ssd-dir DIR [--ssd-dir DIR ...]",
		Short: "Write a layout's SSD bins as direct-IO files for the feature store",
		Long: `Write each SSD bin of the dataset's layout (from gnnplan place) as one file of
its rows in row order, 512-byte aligned for direct IO, in one --ssd-dir per
SSD (shared round-robin when there are fewer directories than SSD bins), and
the index store.json in the dataset directory. Cache bins (GPU and CPU
memory) get no file: the feature store loads them from features.npy.

Safe to interrupt and rerun: files are written under a temporary name and
renamed when complete, and a rerun keeps the files whose checksum matches.`,
		Example: `  gnnplan materialize --dataset data/igb-small --ssd-dir /mnt/nvme0 --ssd-dir /mnt/nvme1`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.Dataset == "" {
				return usageErrorf("--dataset is required")
			}
			if opts.Output != "table" && opts.Output != "json" {
				return usageErrorf("-o/--output: %q (valid: table, json)", opts.Output)
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
	f.StringVarP(&opts.Output, "output", "o", "table", "output format: table, json (the manifest)")
	return cmd
}

func runMaterialize(ctx context.Context, o *materializeOptions) error {
	layout := o.Layout
	if layout == "" {
		layout = o.Dataset
	}
	m, err := store.Materialize(ctx, o.Dataset, layout, o.SSDDirs, o.IO.Err)
	if err != nil {
		return err
	}
	if o.Output == "json" {
		enc := json.NewEncoder(o.IO.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(m)
	}
	t := tablewriter.NewTable(o.IO.Out, tablewriter.WithHeaderAutoFormat(tw.Off))
	t.Header("BIN", "KIND", "ROWS", "STRIDE BYTES", "FILE MiB", "FILE")
	for _, b := range m.Bins {
		file, mib, stride := "(memory, from features.npy)", "-", "-"
		if b.Kind == maxflow.StorageSSD {
			file, mib, stride = b.Path, fmt.Sprintf("%.1f", float64(b.FileBytes)/(1<<20)), fmt.Sprint(b.StrideBytes)
		}
		if err := t.Append(b.ID, string(b.Kind), fmt.Sprint(b.Rows), stride, mib, file); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	fmt.Fprintf(o.IO.Out, "wrote %s\n", filepath.Join(o.Dataset, store.ManifestFile))
	return nil
}

// materializeLayout is place --materialize: the layout just written in
// the dataset directory, progress on stderr so that place's own output
// (a table, or JSON for scripts) stays as it is.
func materializeLayout(ctx context.Context, d *deps, dataset string, ssdDirs []string) error {
	_, err := store.Materialize(ctx, dataset, dataset, ssdDirs, d.Err)
	return err
}
