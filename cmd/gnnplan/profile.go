package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/gnnplan/gnnplan/internal/fsutil"

	"github.com/spf13/cobra"

	"github.com/gnnplan/gnnplan/cmd/gnnplan/internal/textout"
	"github.com/gnnplan/gnnplan/kernels"
	"github.com/gnnplan/gnnplan/topology"
	"github.com/gnnplan/gnnplan/trainer"
	"github.com/gnnplan/gnnplan/trainer/dataset"
	"github.com/gnnplan/gnnplan/trainer/sample"
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
	// Layer, RowBytes, TableBytes, GatherRows and Aggregation set the
	// kernel classes' shapes (profileKernels); zero for the defaults.
	Layer      [3]int
	RowBytes   int
	TableBytes int64
	GatherRows int
	// Aggregation is the mean aggregation's row width, source rows,
	// destinations and fanout.
	Aggregation [4]int
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
			if err := checkOutput(o.Output, "--save", "table", "wide", "json"); err != nil {
				return err
			}
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
	f.StringVarP(&o.Output, "output", "o", "table", "output format: table, wide, json")
	f.StringVar(&o.Save, "save", "", "also write the profile as JSON to this file")
	f.StringVar(&o.Dataset, "dataset", "", "measure the sampler's rate on this dataset's graph (default: a generated power-law graph of 500k vertices)")
	f.BoolVar(&o.NoCompute, "no-compute", false, "skip the compute rates (GEMM, sampling; GPUs too)")
	f.StringVar(&o.GPUDevice, "gpu-device", "auto", "GPUs to measure (copies, GEMM): auto, cuda, cuda-emulated (the GPU code on the CPU) or none")
	f.StringVar(&o.GPUs, "gpus", "", "which GPUs: all, a count N, or ordinals such as 0,2 (default all)")
	return cmd
}

func runProfile(ctx context.Context, o *profileOptions) error {
	p, err := store.Profile(ctx, o.Opts, o.IO.Err)
	if err != nil {
		return err
	}
	if !o.NoCompute {
		if p.Compute, err = profileCompute(ctx, o); err != nil {
			return err
		}
		var notes []string
		if p.GPUs, notes, err = profileGPUs(ctx, o); err != nil {
			return err
		}
		p.Notes = append(p.Notes, notes...)
	}
	var js bytes.Buffer
	enc := json.NewEncoder(&js)
	enc.SetIndent("", "  ")
	if err := enc.Encode(p); err != nil {
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
	t := textout.NewTable(textout.Column{Name: "DIR", Elastic: true, KeepEnd: true}, col("ENGINE"), num("QUEUE DEPTH"), num("IOPS"), num("USEFUL GB/s"), opt(num("DEVICE GB/s")), num("CPU s/GB"))
	for _, d := range p.Disks {
		for _, r := range d.Depths {
			t.Row(d.Dir, d.Engine, fmt.Sprint(r.QueueDepth), fmt.Sprintf("%.0f", r.IOPS), fmt.Sprintf("%.3f", r.UsefulGBps),
				fmt.Sprintf("%.3f", r.DeviceGBps), fmt.Sprintf("%.2f", r.CPUSecondsPerG))
		}
	}
	if err := out.write(t); err != nil {
		return err
	}
	fmt.Fprintf(out, "feature rows of %d bytes: %.3f GB/s per SSD (best queue depth); memory copy %.1f GB/s\n", p.FeatureBytes, p.SSDGBps, p.MemcpyGBps)
	if c := p.Compute; c != nil {
		fmt.Fprintf(out, "compute: GEMM %dx%dx%d %.1f GFLOP/s on %d cores (%s); sampling %.2f M edges/s per core (%s)\n",
			c.GEMMShape[0], c.GEMMShape[1], c.GEMMShape[2], c.GEMMGFLOPS, c.Cores, c.Backend, c.SamplerEdgesPerSPerCore/1e6, c.SamplerGraph)
		fmt.Fprintf(out, "compute: a layer's products at %dx%dx%d %.1f GFLOP/s; aggregation %.1f GB/s; %d-byte rows gathered from %.1f GiB %.1f GB/s; in-order passes %.1f GB/s\n",
			c.LayerShape[0], c.LayerShape[1], c.LayerShape[2], c.LayerGEMMGFLOPS, c.AggregationGBps, c.RowGatherBytes, c.RowGatherTableGiB, c.RowGatherGBps, c.StreamGBps)
	}
	for _, g := range p.GPUs {
		fmt.Fprintf(out, "GPU %d %s (%.1f GiB%s): host to device %.1f GB/s pinned, %.1f GB/s pageable; GEMM %dx%dx%d %.0f GFLOP/s\n",
			g.Ordinal, g.Name, g.MemoryGiB, busSuffix(g.PCIBusID), g.H2DPinnedGBps, g.H2DPageableGBps, g.GEMMShape[0], g.GEMMShape[1], g.GEMMShape[2], g.GEMMGFLOPS)
	}
	for _, n := range p.Notes {
		fmt.Fprintf(out, "note: %s\n", n)
	}
	return out.Flush()
}

// busSuffix is ", at ADDR" for a known PCI address.
func busSuffix(addr string) string {
	if addr == "" {
		return ""
	}
	return ", at " + addr
}

// loadMeasured reads a profile written by `gnnplan profile --save`.
func loadMeasured(path string) (*store.MachineProfile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &topology.InputError{Path: path, Field: "--measured", Msg: "cannot read profile", Err: err}
	}
	var p store.MachineProfile
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, &topology.InputError{Path: path, Field: "--measured", Msg: "malformed profile JSON", Err: err}
	}
	if p.SchemaVersion != store.ProfileSchemaVersion {
		return nil, &topology.InputError{Path: path, Field: "schema_version", Msg: fmt.Sprintf("%d (want %d, from gnnplan profile)", p.SchemaVersion, store.ProfileSchemaVersion)}
	}
	return &p, nil
}

// profileKernels measures the step's kernel classes on be into c, cold
// (as a step finds its operands), at o's shapes; the defaults are a
// GraphSAGE layer of hidden 256 on 128-d features aggregating first, rows
// of --feature-bytes gathered from 1 GiB, and its aggregation over 10
// neighbours of 8192 destinations among 96k rows. A table is at most a
// quarter of the memory available.
func profileKernels(ctx context.Context, o *profileOptions, be kernels.Backend, c *store.ComputeProfile) error {
	const d = 500 * time.Millisecond
	room := int64(1) << 62
	if avail, ok := trainer.MemAvailable(); ok {
		room = int64(avail / 4)
	}
	c.LayerShape = o.Layer
	if c.LayerShape == [3]int{} {
		c.LayerShape = [3]int{8192, 256, 256}
	}
	c.RowGatherBytes = o.RowBytes
	if c.RowGatherBytes <= 0 {
		c.RowGatherBytes = max(o.Opts.FeatureBytes, 4)
	}
	cols := max(1, c.RowGatherBytes/4)
	table := o.TableBytes
	if table <= 0 {
		table = 1 << 30
	}
	tableRows := max(65536, int(min(table, room)/int64(4*cols)))
	c.RowGatherTableGiB = float64(tableRows) * float64(4*cols) / (1 << 30)
	gather := o.GatherRows
	if gather <= 0 {
		gather = 65536
	}
	agg := o.Aggregation
	if agg == [4]int{} {
		agg = [4]int{256, 96_000, 8192, 10}
	}
	agg[1] = max(agg[2], min(agg[1], int(room/int64(8*agg[0])))) // the rows and their gradient
	c.AggregationCols = agg[0]
	steps := []struct {
		what string
		run  func()
	}{
		{fmt.Sprintf("a layer's products at %dx%dx%d", c.LayerShape[0], c.LayerShape[1], c.LayerShape[2]), func() {
			c.LayerGEMMGFLOPS = kernels.MeasureLayerGemm(be, c.LayerShape[0], c.LayerShape[1], c.LayerShape[2], d)
		}},
		{fmt.Sprintf("gathering %d rows of %d bytes from %.1f GiB", gather, 4*cols, c.RowGatherTableGiB), func() {
			c.RowGatherGBps = kernels.MeasureRowGather(be, cols, tableRows, gather, d)
		}},
		{fmt.Sprintf("aggregating %d rows of %d bytes among %d", agg[2]*agg[3], 4*agg[0], agg[1]), func() {
			c.AggregationGBps = kernels.MeasureAggregation(be, agg[0], agg[1], agg[2], agg[3], d)
		}},
		{"in-order passes", func() { c.StreamGBps = kernels.MeasureStream(be, 65536, 256, d) }},
	}
	for _, st := range steps {
		if err := ctx.Err(); err != nil {
			return err
		}
		fmt.Fprintf(o.IO.Err, "profile: %s ...\n", st.what)
		st.run()
	}
	return nil
}

// profileCompute measures the CPU's GEMM rate at a training shape (the
// hidden layers of GraphSAGE with hidden 256) and the sampler's rate per
// core with the papers' fanouts, on --dataset's graph or a generated one.
func profileCompute(ctx context.Context, o *profileOptions) (*store.ComputeProfile, error) {
	be, err := kernels.NewCPU(kernels.CPUOptions{})
	if err != nil {
		return nil, err
	}
	c := &store.ComputeProfile{Cores: be.Threads(), Backend: be.Name(), GEMMShape: [3]int{8192, 256, 256}}
	fmt.Fprintf(o.IO.Err, "profile: GEMM %dx%dx%d on %d threads ...\n", c.GEMMShape[0], c.GEMMShape[1], c.GEMMShape[2], c.Cores)
	c.GEMMGFLOPS = kernels.MeasureGemm(be, c.GEMMShape[0], c.GEMMShape[1], c.GEMMShape[2], time.Second)
	if err := profileKernels(ctx, o, be, c); err != nil {
		return nil, err
	}
	dir := o.Dataset
	if dir == "" {
		tmp, err := os.MkdirTemp("", "gnnplan-profile-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(tmp)
		dir = tmp + "/g"
		so := dataset.DefaultSynthOptions()
		so.Nodes, so.Edges, so.FeatureDim, so.TrainFraction = 500_000, 5_000_000, 1, 0.1
		fmt.Fprintf(o.IO.Err, "profile: generating a power-law graph of %d vertices for the sampler ...\n", so.Nodes)
		if _, err := dataset.Synth(ctx, so, dir, io.Discard); err != nil {
			return nil, err
		}
		c.SamplerGraph = fmt.Sprintf("a generated power-law graph of %d vertices, %d edges drawn", so.Nodes, so.Edges)
	}
	g, err := dataset.LoadGraph(dir)
	if err != nil {
		return nil, err
	}
	defer g.Close()
	if c.SamplerGraph == "" {
		c.SamplerGraph = fmt.Sprintf("%s (%d vertices)", dir, g.Meta.NumNodes)
	}
	if len(g.Train) == 0 {
		return nil, usageErrorf("--dataset %s: no training split to draw seeds from", dir)
	}
	fmt.Fprintf(o.IO.Err, "profile: sampling on one core ...\n")
	r, err := sample.MeasureRate(ctx, g, sample.SamplerOptions{Fanouts: []int{25, 10}, BatchSize: 1024, Seed: 1, Shuffle: true}, time.Second)
	if err != nil {
		return nil, err
	}
	c.SamplerEdgesPerSPerCore = r.EdgesPerSecond
	return c, nil
}
