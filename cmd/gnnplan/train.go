package main

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gnnplan/gnnplan/internal/textout"
	"github.com/gnnplan/gnnplan/kernels"
	"github.com/gnnplan/gnnplan/tpc/trainplan"
	"github.com/gnnplan/gnnplan/trainer"
	"github.com/gnnplan/gnnplan/trainer/nn"
)

// trainOptions holds the train command's flags: the run's
// (trainplan.RunFlags) and what it prints.
type trainOptions struct {
	IO *deps
	trainplan.RunFlags
	Output string
}

const trainLong = `Train a GNN on a dataset's training split and report, per epoch, the time,
samples/s, the time per stage (sampling, feature gather, forward+backward,
optimizer), the loss and the train/validation/test accuracy; at the end, the
test accuracy at the epoch of the best validation accuracy.

Without --plan each model starts from its paper's settings on the citation
graphs (row-normalised features; GCN: hidden 16, dropout 0.5, lr 0.01, weight
decay 5e-4, 200 epochs; GAT: 8 heads x 8 hidden, 1 output head, dropout 0.6
on inputs and attention, lr 0.005, weight decay 5e-4, early stopping with
patience 100; GraphSAGE-mean: as GCN, DGL's example), with fanouts 25,10 and
batches of 1024 seeds. Fanout -1 takes every neighbour, so
  gnnplan train --dataset DIR --model gcn --fanouts -1,-1
trains full-batch as the papers did. With --plan, the plan's workload sets
the model, fanouts, batch size and widths; flags override either.

Out of core: when the dataset has a feature store (gnnplan place --plan P
--materialize --ssd-dir DIR wrote one), train runs the plan's layout: rows
in the layout's caches come from memory, the rest from the SSD bins, read
with io_uring and O_DIRECT while the previous batch trains (a bounded
pipeline: sampling, gathering, then the step); --cache-fraction F holds the
hottest share F of the rows in memory instead, for experiments. The loss
curve is bitwise the one training in memory gives. --features memory reads
features.npy whole instead.

GPUs: a binary built with make build-cuda trains with --device cuda, one
data-parallel worker per GPU (--gpus: all, a count, or ordinals; default the
plan's GPU count), gradients averaged by peer copies; out of core each GPU
holds one of the layout's GPU cache bins in its memory and the other rows
are copied in through pinned buffers while the batch before computes.
--device cuda-emulated runs the same path on the CPU, slowly, for checking.

Without --dataset it generates a small synthetic graph and trains on it.
Ctrl-C stops after the current batch, writes the checkpoint when
--checkpoint is set, and exits 130; --resume continues from it and ends with
the parameters an uninterrupted run would have.`

const trainExample = `  gnnplan train
  gnnplan train --dataset data/cora --model gcn --fanouts -1,-1
  gnnplan train --dataset data/cora --model gat --fanouts -1,-1 -o json
  gnnplan train --plan plan.json --dataset data/synth --epochs 3 --checkpoint ckpt
  gnnplan train --plan plan.json --dataset data/synth --epochs 3 --checkpoint ckpt --resume
  gnnplan train --plan plan.json --dataset data/synth --epochs 1 --cache-fraction 0.1
  gnnplan-cuda train --plan plan.json --dataset data/synth --device cuda --gpus all`

func newTrainCmd(d *deps, runF func(context.Context, *trainOptions) error) *cobra.Command {
	opts := &trainOptions{IO: d}
	cmd := &cobra.Command{
		Use:     "train",
		Short:   "Train GraphSAGE, GCN or GAT on a dataset, in memory or from the SSD feature store, on the CPU or on GPUs",
		Long:    trainLong,
		Example: trainExample,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Set = func(name string) bool { return cmd.Flags().Changed(name) }
			if err := opts.validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runTrain(cmd.Context(), opts)
		},
	}
	addTrainFlags(cmd.Flags(), opts)
	return cmd
}

// validate refuses flags no run can use, before any data is read.
func (o *trainOptions) validate() error {
	if o.Set("model") {
		if _, err := nn.ParseKind(o.Model); err != nil {
			return usageErrorf("--model: %q (valid: graphsage, gcn, gat)", o.Model)
		}
	}
	if o.Resume && o.Checkpoint == "" {
		return usageErrorf("--resume needs --checkpoint DIR (where the checkpoint is)")
	}
	if o.Checkpoint != "" && !o.Resume {
		// Before any data is read: a run should not find out at the end
		// of its first epoch.
		if err := trainer.CheckCheckpointDir(o.Checkpoint); err != nil {
			return usageErrorf("--checkpoint: %v", err)
		}
	}
	return nil
}

// addTrainFlags binds train's flags to o.
func addTrainFlags(f *pflag.FlagSet, o *trainOptions) {
	f.StringVar(&o.Dataset, "dataset", "", "the dataset directory (default: a small synthetic graph)")
	f.StringVar(&o.Plan, "plan", "", "plan.json from gnnplan recommend: its workload sets model, fanouts, batch and widths")
	f.StringVar(&o.Model, "model", "graphsage", "graphsage, gcn or gat")
	f.StringVar(&o.Fanouts, "fanouts", "25,10", "neighbours sampled per hop, seeds' hop first; -1 takes every neighbour; one layer per hop")
	f.IntVar(&o.Layers, "layers", 2, "graph layers; must equal the number of fanouts (one hop per layer)")
	f.IntVar(&o.Epochs, "epochs", 200, "epochs to train (GAT: at most this many, with early stopping)")
	f.IntVar(&o.Batch, "batch", 1024, "training seeds per step (0: the whole training split in one batch)")
	f.IntVar(&o.Hidden, "hidden", 16, "hidden width (per head for GAT; GAT's default is 8)")
	f.IntVar(&o.Heads, "heads", 8, "GAT: attention heads on hidden layers")
	f.Float64Var(&o.LR, "lr", 0.01, "Adam's learning rate (GAT's default is 0.005)")
	f.Float64Var(&o.WeightDecay, "weight-decay", 5e-4, "L2 weight decay added to the gradient, as PyTorch's Adam")
	f.Float64Var(&o.Dropout, "dropout", 0.5, "dropout on each layer's input, features included (GAT's default is 0.6, also on attention)")
	f.Float64Var(&o.InputDropout, "input-dropout", 0.5, "dropout on the features (default: --dropout; 0 with --plan)")
	f.IntVar(&o.Patience, "patience", 0, "stop after this many epochs without validation progress (0: never; GAT's default is 100)")
	f.IntVar(&o.EvalEvery, "eval-every", 1, "evaluate on the validation and test splits every N epochs (0: never)")
	f.BoolVar(&o.RowNormalize, "row-normalize", true, "scale each feature row to unit L1 norm, the papers' preprocessing (off by default with --plan)")
	f.Uint64Var(&o.Seed, "seed", 1, "seed for initialisation, shuffling, sampling and dropout")
	f.IntVar(&o.Threads, "threads", 0, "threads for kernels and sampling (0: one per core)")
	f.StringVar(&o.Device, "device", kernels.DeviceCPU, "where the kernels run: cpu, cuda (a worker per GPU; make build-cuda) or cuda-emulated (slow, on the CPU)")
	f.StringVar(&o.GPUs, "gpus", "", "with --device cuda: all, a count N or ordinals such as 0,2 (default: the plan's count, else all)")
	// --blas-spin steered OpenBLAS's own worker threads, which gnnplan no
	// longer uses; kept so scripts that pass it still run.
	f.Bool("blas-spin", false, "no effect")
	_ = f.MarkDeprecated("blas-spin", "products run on gnnplan's own threads, which sleep between products; the flag does nothing")
	f.IntVar(&o.CopyThreads, "copy-threads", 0, "out of core, goroutines copying each batch's rows (0: auto); the bits are the same on any count")
	f.IntVar(&o.BLASThreads, "blas-threads", 0, "threads each dense product runs on (0: auto); the bits are the same on any count")
	f.StringVar(&o.BLAS, "blas", "", "GEMM library: openblas, gonum, or a path to a libopenblas.so (default: OpenBLAS when it loads)")
	f.StringVar(&o.Checkpoint, "checkpoint", "", "directory to checkpoint into after every epoch and on Ctrl-C")
	f.BoolVar(&o.Resume, "resume", false, "continue from the checkpoint in --checkpoint")
	outputFlag(f, &o.Output, "", "", "table", "wide", "json")
	f.Int64Var(&o.SynthNodes, "synthetic-nodes", 20_000, "without --dataset: vertices of the generated graph")
	f.StringVar(&o.Features, "features", "auto", "where feature rows come from: store (materialize's bins), memory (features.npy) or auto (store if any)")
	f.Float64Var(&o.CacheFraction, "cache-fraction", -1, "out of core: cache the hottest share of the rows (0 to 1) instead of the layout's caches")
	enumFlag(f, &o.CacheOrder, "cache-order", "hottest", "with --cache-fraction: which rows the cache holds: hottest (by hotness.npy) or random (the baseline, drawn with --seed)", "hottest", "random")
	f.IntVar(&o.Workers, "workers", 0, "data-parallel CPU workers, gradients averaged every step (default 1)")
	enumFlag(f, &o.Loader, "loader", trainer.LoaderOnline, "online (sampled as batches train), packed (sampled ahead, a batch's disk rows one read) or multistage (docs/loaders.md)", trainer.Loaders()...)
	f.IntVar(&o.Parts, "parts", 8, "--loader multistage: parts the graph is cut into")
	f.IntVar(&o.MacroParts, "macro-parts", 2, "--loader multistage: parts per macro-batch (read into memory together)")
	f.Float64Var(&o.HubFraction, "hub-fraction", 0.05, "--loader multistage in memory: share of vertices (the most sampled) in every macro-batch; out of core: the cache")
	f.Float64Var(&o.HaloFraction, "halo-fraction", 0, "--loader multistage: a part also holds up to this share of its size of its training vertices' cut neighbours (0: none)")
	f.IntVar(&o.PackEpochs, "pack-epochs", 0, "--loader packed: epochs of batches to pack; later epochs reuse them (0: the run's epochs, as --pack-space-gib allows)")
	f.Float64Var(&o.PackSpaceGiB, "pack-space-gib", 0, "--loader packed: disk space the packed batches may take, GiB (0: half the free space)")
	f.BoolVar(&o.Repack, "repack", false, "--loader packed or multistage: pack again even when packed batches or parts match the run")
	f.IntVar(&o.ProbeBatches, "probe-batches", 20, "batches timed before training to predict each epoch (unset: also at least 3 s of them; 0: none)")
	f.StringVar(&o.Measured, "measured", "", "out of core: the disks' read rate from this profile (gnnplan profile --save) instead of measuring")
	f.Float64Var(&o.MeasureSeconds, "measure-seconds", 5, "out of core: seconds to read random rows from the SSD bins for the prediction's disk rate")
}

func runTrain(ctx context.Context, o *trainOptions) error {
	if err := checkTrainFlags(o); err != nil {
		return err
	}
	if o.Output != "json" {
		h := newHuman(o.IO.Out, o.Output)
		defer h.Flush()
		o.IO = &deps{In: o.IO.In, Out: h, Err: o.IO.Err}
	}
	r, err := trainplan.Open(ctx, &o.RunFlags)
	if err != nil {
		return err
	}
	defer r.Close()
	prog := textout.NewProgress(o.IO.Err)
	err = r.PrepareLoader(ctx, o.LoaderFlags, prog, storeProgress(prog))
	prog.Close()
	if err != nil {
		return err
	}
	tr, err := trainer.New(r.Backends[0], r.Graph, r.Features, r.Options)
	if err != nil {
		return err
	}
	if o.Output != "json" {
		r.Describe(o.IO.Out, tr)
	}
	pred, err := r.Predict(ctx, &o.RunFlags, tr, o.IO.Err)
	if err != nil {
		return err
	}
	if pred != nil && o.Output != "json" {
		fmt.Fprintln(o.IO.Out, pred.Describe())
	}
	rep := trainplan.NewProgress(o.IO.Out, o.IO.Err, pred, trainplan.ProgressOptions{Lines: o.Output != "json", Wide: o.Output == "wide", OutOfCore: r.Store != nil})
	start := time.Now()
	res, runErr := tr.Run(ctx, rep)
	rep.Finish()
	if runErr != nil && !errors.Is(runErr, trainer.ErrInterrupted) {
		return runErr
	}
	report := trainplan.NewReport(trainplan.Run{Dataset: r.Graph.Meta.Name, Config: tr.Config(), Options: r.Options, Result: res,
		WallS: time.Since(start).Seconds(), Notes: r.Notes, Store: r.Store, Plan: r.Plan, Prediction: pred, Checkpoint: o.Checkpoint})
	if o.Output == "json" {
		if err := writeJSON(o.IO.Out, report); err != nil {
			return err
		}
	} else {
		report.WriteSummary(o.IO.Out)
	}
	return runErr
}

// maxThreads is the most threads a flag may ask for: four per core, and
// at least 64, beyond which threads only queue for the cores (and a
// mistyped count would start them all before failing).
func maxThreads() int { return max(64, 4*runtime.NumCPU()) }

// checkTrainFlags refuses counts and durations no run can use, before
// anything is read or allocated.
func checkTrainFlags(o *trainOptions) error {
	set := func(name string) bool { return o.Set != nil && o.Set(name) }
	limit := maxThreads()
	switch {
	case o.Threads < 0 || o.Threads > limit:
		return usageErrorf("--threads: %d (valid: 1 to %d, or 0 for one per core)", o.Threads, limit)
	case o.BLASThreads > limit:
		return usageErrorf("--blas-threads: %d (valid: 1 to %d, or 0 for auto)", o.BLASThreads, limit)
	case o.CopyThreads < 0 || o.CopyThreads > limit:
		return usageErrorf("--copy-threads: %d (valid: 1 to %d, or 0 for auto)", o.CopyThreads, limit)
	case set("workers") && o.Workers == 0:
		return usageErrorf("--workers: 0 (valid: >= 1)")
	case o.ProbeBatches < 0:
		return usageErrorf("--probe-batches: %d (valid: >= 1, or 0 for no prediction)", o.ProbeBatches)
	case !(o.MeasureSeconds > 0 && o.MeasureSeconds <= 3600):
		return usageErrorf("--measure-seconds: %v (valid: above 0, at most 3600)", o.MeasureSeconds)
	}
	return nil
}
