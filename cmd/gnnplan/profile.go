package main

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/gnnplan/gnnplan/internal/fsutil"
	"github.com/gnnplan/gnnplan/tpc/trainplan"

	"github.com/spf13/cobra"

	"github.com/gnnplan/gnnplan/trainer/store"
)

// profileOptions holds the profile command's flags.
type profileOptions struct {
	IO      *deps
	Opts    store.ProfileOptions
	Seconds float64
	FileMiB int64
	Output  string
	Save    string
	// Dataset is the graph the sampler's rate is measured on ("": a
	// generated power-law graph); NoCompute skips the compute rates.
	Dataset   string
	NoCompute bool
	// GPUDevice and GPUs pick the GPUs measured.
	GPUDevice, GPUs string
}

func newProfileCmd(d *deps, runF func(context.Context, *profileOptions) error) *cobra.Command {
	o := &profileOptions{IO: d}
	cmd := &cobra.Command{
		Use:   "profile [--ssd-dir DIR ...] [--feature-bytes N]",
		Short: "Measure this machine's SSD random reads at the feature size, memory bandwidth, GEMM and sampling rates",
		Long: `Measure random-read throughput and IOPS of the devices under each --ssd-dir at
the feature row size, with O_DIRECT and io_uring (or the pread pool where
io_uring is unavailable), at several queue depths; memory copy bandwidth;
and the CPU's training rates: GEMM at a training shape with the trainer's
kernels, and the neighbour sampler's edges per second on one core (on
--dataset's graph, or a generated one). In a build with CUDA, each GPU's
host-to-device copy rate (from pinned and pageable memory) and GEMM rate,
which recommend --measured uses for that GPU model instead of the catalog's
PCIe link and FP32 peak. -o json prints the profile; --save
writes it, for "gnnplan recommend --measured FILE" (instead of catalog
figures), "gnnplan recommend --this-machine --measured FILE" and
"gnnplan train --measured FILE".

Each queue depth is one continuous stream of reads: the queue stays full
from the first read to the last. A directory that is not on a block device
(tmpfs, overlay, NFS, FUSE) or whose file system refuses O_DIRECT would
measure memory, not an SSD: it is refused unless --allow-non-block is given.
Notes (the reader's engine fallback, a non-SSD directory) are printed.`,
		Example: `  gnnplan profile --ssd-dir /mnt/nvme0 --ssd-dir /mnt/nvme1 --feature-bytes 4096
  gnnplan profile --ssd-dir /var/tmp --depths 1,32,128 --save profile.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Seconds <= 0 || o.FileMiB <= 0 {
				return usageErrorf("--seconds and --file-size-mib must be > 0")
			}
			o.Opts.Duration = time.Duration(o.Seconds * float64(time.Second))
			o.Opts.FileBytes = o.FileMiB << 20
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return runProfile(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&o.Opts.Dirs, "ssd-dir", nil, "a directory on an SSD to measure (repeatable)")
	f.IntVar(&o.Opts.FeatureBytes, "feature-bytes", 4096, "bytes per feature row (e.g. 512 for 128-d float32, 4096 for 1024-d)")
	f.IntSliceVar(&o.Opts.Depths, "depths", []int{1, 4, 16, 64, 256}, "queue depths to measure")
	f.Float64Var(&o.Seconds, "seconds", 2, "seconds per queue depth")
	f.Int64Var(&o.FileMiB, "file-size-mib", 1024, "size of the test file per directory, MiB (reused between runs)")
	f.StringVar(&o.Opts.Engine, "engine", "auto", "read engine: auto, io_uring, pread")
	f.BoolVar(&o.Opts.AllowNonBlock, "allow-non-block", false, "measure a directory that is not on a block device or refuses O_DIRECT (tmpfs, overlay) instead of refusing it; for tests")
	outputFlag(f, &o.Output, "--save", "", "table", "wide", "json")
	f.StringVar(&o.Save, "save", "", "also write the profile as JSON to this file")
	f.StringVar(&o.Dataset, "dataset", "", "measure the sampler's rate on this dataset's graph (default: a generated power-law graph of 500k vertices)")
	f.BoolVar(&o.NoCompute, "no-compute", false, "skip the compute rates (GEMM, sampling; GPUs too)")
	enumFlag(f, &o.GPUDevice, "gpu-device", "auto", "GPUs to measure (copies, GEMM): auto, cuda, cuda-emulated (the GPU code on the CPU) or none", "auto", "cuda", "cuda-emulated", "none")
	f.StringVar(&o.GPUs, "gpus", "", "which GPUs: all, a count N, or ordinals such as 0,2 (default all)")
	return cmd
}

func runProfile(ctx context.Context, o *profileOptions) error {
	p, err := store.Profile(ctx, o.Opts, o.IO.Err)
	if err != nil {
		return err
	}
	if !o.NoCompute {
		shapes := trainplan.ComputeShapes{RowBytes: o.Opts.FeatureBytes, Dataset: o.Dataset}
		if p.Compute, err = trainplan.MeasureCompute(ctx, shapes, o.IO.Err); err != nil {
			return err
		}
		var notes []string
		if p.GPUs, notes, err = trainplan.MeasureGPUs(ctx, o.GPUDevice, o.GPUs, o.Seconds, o.IO.Err); err != nil {
			return err
		}
		p.Notes = append(p.Notes, notes...)
	}
	var js bytes.Buffer
	if err := writeJSON(&js, p); err != nil {
		return err
	}
	if o.Save != "" {
		if err := fsutil.WriteFileAtomic(o.Save, js.Bytes()); err != nil {
			return fmt.Errorf("--save: %w", err)
		}
	}
	if o.Output == "json" {
		// The notes are in the JSON too; stderr shows them to a person.
		for _, n := range p.Notes {
			fmt.Fprintf(o.IO.Err, "note: %s\n", n)
		}
		_, err := o.IO.Out.Write(js.Bytes())
		return err
	}
	out := newHuman(o.IO.Out, o.Output)
	if err := p.WriteText(out, out.Width); err != nil {
		return err
	}
	return out.Flush()
}
