package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gnnplan/gnnplan/tpc"
	"github.com/gnnplan/gnnplan/tpc/trainplan"
	"github.com/gnnplan/gnnplan/trainer"
	"github.com/gnnplan/gnnplan/trainer/dataset"
	"github.com/gnnplan/gnnplan/trainer/nn"
)

func TestTrainSettings(t *testing.T) {
	plan := &tpc.Plan{Workload: tpc.Workload{Model: "gat", Hidden: 64, Heads: 4, Fanouts: []int{15, 10, 5}, BatchSize: 512}}
	cases := []struct {
		name  string
		args  []string
		plan  *tpc.Plan
		check func(t *testing.T, o trainer.Options)
	}{
		{"no flags: GraphSAGE with its paper's settings", nil, nil, func(t *testing.T, o trainer.Options) {
			if o.Model.Kind != nn.GraphSAGE || o.Model.Hidden != 16 || o.LR != 0.01 || o.Epochs != 200 || !o.RowNormalize || o.Model.InputDropout != 0.5 {
				t.Errorf("%+v", o)
			}
		}},
		{"gat takes GAT's paper settings", []string{"--model", "gat"}, nil, func(t *testing.T, o trainer.Options) {
			m := o.Model
			if m.Hidden != 8 || m.Heads != 8 || m.OutHeads != 1 || m.Dropout != 0.6 || m.AttnDropout != 0.6 || o.LR != 0.005 || o.Patience != 100 {
				t.Errorf("%+v", o)
			}
		}},
		{"the plan's workload sets model, widths, fanouts and batch", nil, plan, func(t *testing.T, o trainer.Options) {
			if o.Model.Kind != nn.GAT || o.Model.Hidden != 64 || o.Model.Heads != 4 || len(o.Fanouts) != 3 || o.BatchSize != 512 || o.RowNormalize || o.Model.InputDropout != 0 {
				t.Errorf("%+v", o)
			}
		}},
		{"flags override the plan", []string{"--model", "gcn", "--fanouts", "-1,-1", "--batch", "0", "--hidden", "32", "--lr", "0.1"}, plan, func(t *testing.T, o trainer.Options) {
			if o.Model.Kind != nn.GCN || o.Fanouts[0] != -1 || o.BatchSize != 0 || o.Model.Hidden != 32 || o.LR != float32(0.1) {
				t.Errorf("%+v", o)
			}
		}},
		{"--dropout sets the features' dropout too", []string{"--dropout", "0.2"}, nil, func(t *testing.T, o trainer.Options) {
			if o.Model.Dropout != float32(0.2) || o.Model.InputDropout != float32(0.2) {
				t.Errorf("%+v", o.Model)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got *trainOptions
			cmd := newTrainCmd(&deps{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}, func(_ context.Context, o *trainOptions) error {
				got = o
				return nil
			})
			cmd.SetArgs(c.args)
			if err := cmd.Execute(); err != nil {
				t.Fatal(err)
			}
			o, err := trainplan.Settings(got.Flags, c.plan)
			if err != nil {
				t.Fatal(err)
			}
			c.check(t, o)
		})
	}
}

func TestTrainDefaultRunsOnASyntheticGraph(t *testing.T) {
	code, out, errOut := runCLI(t, "train", "--epochs", "40", "--synthetic-nodes", "3000")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"training graphsage on synthetic", "note: no --dataset", "epoch   40", "samples/s", "best validation accuracy"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// The generated classes are separable (8 classes, chance 12.5%): the
	// model must learn them.
	var acc float64
	out = strings.Join(strings.Fields(out), " ") // lines wrapped to fit 100 columns
	if i := strings.LastIndex(out, "test accuracy "); i < 0 {
		t.Fatalf("no test accuracy in:\n%s", out)
	} else if _, err := fmt.Sscanf(out[i:], "test accuracy %f", &acc); err != nil || acc < 0.6 {
		t.Errorf("test accuracy %v (%v) after 40 epochs on the synthetic graph, want >= 0.6", acc, err)
	}
}

// coraDataset imports Cora with the Planetoid split from ../shared.
func coraDataset(t *testing.T) string {
	t.Helper()
	src := needSharedDataset(t, "cora")
	out := filepath.Join(t.TempDir(), "cora")
	if code, _, errOut := runCLI(t, "dataset", "import", "--format", "linqs", "--from", src, "--split", filepath.Join(src, "planetoid_split_linqs_ids.tsv"), "--out", out); code != 0 {
		t.Fatalf("import: %s", errOut)
	}
	return out
}

func TestTrainCoraJSON(t *testing.T) {
	dir := coraDataset(t)
	code, out, errOut := runCLI(t, "train", "--dataset", dir, "--model", "gcn", "--fanouts", "-1,-1", "--epochs", "30", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r struct {
		SchemaVersion int     `json:"schema_version"`
		Dataset       string  `json:"dataset"`
		TestAcc       float64 `json:"test_acc"`
		BestEpoch     int     `json:"best_epoch"`
		Stop          string  `json:"stop"`
		Epochs        []struct {
			Epoch   int      `json:"epoch"`
			Sample  float64  `json:"sample_s"`
			Compute float64  `json:"forward_backward_s"`
			ValAcc  *float64 `json:"val_acc"`
		} `json:"epochs"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if r.SchemaVersion != 1 || r.Dataset != "cora" || len(r.Epochs) != 30 || r.Stop != "epochs" || r.BestEpoch < 1 || r.Epochs[29].ValAcc == nil || r.Epochs[0].Compute <= 0 {
		t.Errorf("report %+v", r)
	}
	// 30 epochs of GCN already beat a majority-class guess (~30%) by far.
	if r.TestAcc < 0.7 {
		t.Errorf("test accuracy %.3f after 30 epochs, want >= 0.7", r.TestAcc)
	}
}

func TestTrainInterruptCheckpointsAndExits130(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "g")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeDataset(t, dir, 500, 4, 8)
	ckpt := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errOut bytes.Buffer
	code := run(ctx, []string{"train", "--dataset", dir, "--epochs", "2", "--checkpoint", ckpt}, strings.NewReader(""), &out, &errOut)
	if code != 130 || !strings.Contains(errOut.String(), "interrupted") {
		t.Fatalf("exit %d, stderr %q; want 130 and a line saying it was interrupted", code, errOut.String())
	}
	if _, err := os.Stat(filepath.Join(ckpt, trainer.CheckpointFile)); err != nil {
		t.Fatalf("no checkpoint after the interrupt: %v", err)
	}
	code, stdout, stderr := runCLI(t, "train", "--dataset", dir, "--epochs", "2", "--checkpoint", ckpt, "--resume")
	if code != 0 || !strings.Contains(stdout, "trained 2 epochs") {
		t.Fatalf("resume: exit %d, %s %s", code, stdout, stderr)
	}
}

func TestTrainBadInputExitsTwo(t *testing.T) {
	good := filepath.Join(t.TempDir(), "g")
	os.MkdirAll(good, 0o755)
	writeDataset(t, good, 300, 4, 8)

	// edited is a small dataset whose meta.json edit changes.
	edited := func(edit func(*dataset.Meta)) string {
		dir := filepath.Join(t.TempDir(), "d")
		os.MkdirAll(dir, 0o755)
		writeDataset(t, dir, 300, 4, 8)
		m, _ := dataset.ReadMeta(dir)
		edit(&m)
		dataset.WriteMeta(dir, m)
		return dir
	}
	noLabels := edited(func(m *dataset.Meta) { m.NumClasses = 0 })
	noSplit := edited(func(m *dataset.Meta) { m.NumTrain = 0 })
	dataset.WriteArray(filepath.Join(noSplit, dataset.TrainFile), "<i8", []int64{}, 0)
	manyClasses := edited(func(m *dataset.Meta) { m.NumClasses = 1e12 })

	plan := filepath.Join(t.TempDir(), "plan.json")
	if code, _, errOut := runCLI(t, "recommend", "--budget", "80000", "--save", plan); code != 0 {
		t.Fatalf("recommend: %s", errOut)
	}
	noDir := filepath.Join(t.TempDir(), "a-file") // no directory can be made under a file
	os.WriteFile(noDir, nil, 0o644)
	badCkpt := t.TempDir()
	os.WriteFile(filepath.Join(badCkpt, trainer.CheckpointFile), []byte("GNNPLAN-CHECKPOINT\n"+strings.Repeat("garbage", 10)), 0o644)

	cases := []struct {
		name string
		args []string
		want string
	}{
		{"unknown model", []string{"--model", "gin"}, "--model"},
		{"fanouts not numbers", []string{"--fanouts", "25,x"}, "--fanouts"},
		{"fanout zero", []string{"--fanouts", "0,10"}, "--fanouts"},
		{"fanouts that do not match the layer count", []string{"--layers", "3", "--fanouts", "25,10"}, "one fanout per layer"},
		{"dataset without labels", []string{"--dataset", noLabels}, "no labels"},
		{"dataset without a training split", []string{"--dataset", noSplit}, "training split"},
		{"missing dataset", []string{"--dataset", filepath.Join(good, "missing")}, "meta.json"},
		{"plan for another dataset", []string{"--dataset", good, "--plan", plan}, "vertices"},
		{"resume without a checkpoint directory", []string{"--dataset", good, "--resume"}, "--checkpoint"},
		{"resume with no checkpoint there", []string{"--dataset", good, "--resume", "--checkpoint", t.TempDir()}, "no checkpoint"},
		{"damaged checkpoint", []string{"--dataset", good, "--resume", "--checkpoint", badCkpt}, "checksum"},
		{"negative epochs", []string{"--epochs", "-1"}, "--epochs"},
		{"dropout of 1", []string{"--dropout", "1"}, "--dropout"},
		{"learning rate not a number", []string{"--lr", "NaN"}, "--lr: NaN (valid: above 0, at most 10)"},
		{"checkpoint directory that cannot be made", []string{"--checkpoint", filepath.Join(noDir, "ckpt")}, "--checkpoint: checkpoint directory"},
		{"heads for a model without attention", []string{"--heads", "4"}, "only GAT"},
		{"unknown output", []string{"-o", "yaml"}, "--output"},
		{"unknown device", []string{"--device", "tpu"}, `--device "tpu": valid: cpu, cuda`},
		{"negative BLAS threads", []string{"--blas-threads", "-1"}, "--blas-threads: -1 (valid: >= 1, or 0 for auto)"},
		{"a hundred thousand threads", []string{"--threads", "100000"}, "--threads: 100000 (valid: 1 to"},
		{"a billion hidden units", []string{"--hidden", "1000000000"}, "need about"},
		{"a hundred million GAT heads", []string{"--model", "gat", "--heads", "100000000"}, "need about"},
		{"a trillion classes", []string{"--dataset", manyClasses}, "need about"},
		{"a hundred thousand BLAS threads", []string{"--blas-threads", "100000"}, "--blas-threads: 100000 (valid: 1 to"},
		{"negative copy threads", []string{"--copy-threads", "-2"}, "--copy-threads: -2 (valid: 1 to"},
		{"no workers", []string{"--workers", "0"}, "--workers: 0 (valid: >= 1)"},
		{"negative probe batches", []string{"--probe-batches", "-1"}, "--probe-batches: -1"},
		{"measuring for NaN seconds", []string{"--measure-seconds", "NaN"}, "--measure-seconds: NaN (valid: above 0, at most 3600)"},
		{"measuring for 1e12 seconds", []string{"--measure-seconds", "1e12"}, "--measure-seconds: 1e+12"},
		{"BLAS threads on a GPU", []string{"--device", "cuda-emulated", "--gpus", "1", "--blas-threads", "1"}, "--blas-threads 1: only with --device cpu"},
		{"GPUs on the CPU", []string{"--gpus", "2"}, "--gpus 2: needs --device cuda"},
		{"no emulated GPUs", []string{"--device", "cuda-emulated", "--gpus", "0"}, `--gpus "0": with --device cuda-emulated, a count N >= 1`},
		{"workers other than the GPUs", []string{"--device", "cuda-emulated", "--gpus", "2", "--workers", "3"}, "--workers 3: --device cuda-emulated runs one worker per GPU, and --gpus gives 2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"train", "--epochs", "1"}, c.args...)
			if !strings.Contains(strings.Join(c.args, " "), "--dataset") {
				args = append(args, "--dataset", good)
			}
			code, _, errOut := runCLI(t, args...)
			lines := strings.Split(strings.TrimSpace(errOut), "\n")
			if code != 2 || !strings.Contains(errOut, c.want) || len(lines) != 1 {
				t.Fatalf("exit %d, stderr %q; want exit 2 and one line mentioning %q", code, errOut, c.want)
			}
		})
	}
}

// TestTrainHugeFanoutIsAllNeighbours: a fanout of a hundred million
// takes every neighbour, as -1 does, instead of reserving room for a
// hundred million per seed.
func TestTrainHugeFanoutIsAllNeighbours(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "g")
	os.MkdirAll(dir, 0o755)
	writeDataset(t, dir, 300, 4, 8)
	if code, _, errOut := runCLI(t, "train", "--dataset", dir, "--epochs", "1", "--fanouts", "100000000,10"); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}

// TestTrainOutOfCore runs the plan's layout as a user would: recommend,
// place with --materialize, then train from the store, with the layout's
// caches and with every row read from disk (--cache-fraction 0): the loss
// curve is the one training in memory gives, and the report says where
// the rows came from. Flags that cannot apply exit 2.
func TestTrainOutOfCore(t *testing.T) {
	dir := t.TempDir()
	data := synthData(t, dir, "--nodes", "3000", "--edges", "15000", "--feature-dim", "128", "--train-fraction", "0.2")
	plan := planFor(t, dir, data)
	// Before the store exists: --features store and --cache-fraction say
	// what to run first.
	for _, args := range [][]string{{"--features", "store"}, {"--cache-fraction", "0.5"}} {
		code, _, errOut := runCLI(t, append([]string{"train", "--plan", plan, "--dataset", data, "--epochs", "1", "--workers", "1"}, args...)...)
		if code != 2 || !strings.Contains(errOut, "--materialize") || strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
			t.Errorf("%v without a store: exit %d, %q; want 2 and one line saying to materialize", args, code, errOut)
		}
	}
	// The plan trains on a GPU; this build has none: one line saying so and
	// how to run the layout on CPU workers.
	code, _, errOut := runCLI(t, "train", "--plan", plan, "--dataset", data, "--epochs", "1")
	if code != 2 || !strings.Contains(errOut, "GPU") || !strings.Contains(errOut, "--workers 1") || strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
		t.Errorf("a GPU plan on CPU: exit %d, %q; want 2 and one line suggesting --workers", code, errOut)
	}
	materialize(t, dir, plan, data)
	type report struct {
		Backend  string `json:"backend"`
		Features string `json:"features"`
		Store    *struct {
			CachedFraction float64 `json:"cached_fraction"`
			Rows           struct {
				Rows         int `json:"rows"`
				SSDRows      int `json:"ssd_rows"`
				ResidentHits int `json:"resident_hits"`
			} `json:"rows"`
			Bins []struct {
				ID   string `json:"id"`
				Rows int    `json:"rows"`
			} `json:"bins"`
		} `json:"store"`
		Epochs []struct {
			Loss float64 `json:"loss"`
			Wait float64 `json:"wait_s"`
		} `json:"epochs"`
		PredictedEpochS     float64 `json:"predicted_epoch_s"`
		MeasuredEpochS      float64 `json:"measured_epoch_s"`
		PlanPredictedEpochS float64 `json:"plan_predicted_epoch_s"`
		Prediction          *struct {
			Epoch struct {
				HitShare float64 `json:"hit_share"`
				DiskS    float64 `json:"disk_s"`
			} `json:"epoch"`
			Costs struct {
				DiskRowsPerS float64 `json:"disk_rows_per_s"`
				StageOverlap float64 `json:"stage_overlap"`
				BesideS      float64 `json:"beside_s"`
			} `json:"batch_costs"`
			Disk *struct {
				StageSPerRow float64 `json:"stage_s_per_row"`
			} `json:"disk"`
			Beside *struct {
				Batches int `json:"batches"`
			} `json:"probe_beside_first_stage"`
			BLAS *struct {
				Tried []struct {
					Threads int     `json:"threads"`
					BatchS  float64 `json:"batch_s"`
				} `json:"tried"`
				Threads int `json:"threads"`
			} `json:"blas_threads"`
		} `json:"prediction"`
		Checks []struct {
			Epoch         int     `json:"epoch"`
			MeasuredS     float64 `json:"measured_s"`
			PredictedS    float64 `json:"predicted_s"`
			DiskRowsPerS  float64 `json:"disk_rows_per_s"`
			WithEpochDisk *struct {
				PredictedS float64 `json:"predicted_s"`
			} `json:"with_epoch_disk"`
		} `json:"epoch_checks"`
		WithEpochDiskS    float64 `json:"predicted_with_epoch_disk_s"`
		EpochDiskRowsPerS float64 `json:"epoch_disk_rows_per_s"`
	}
	train := func(args ...string) report {
		t.Helper()
		code, out, errOut := runCLI(t, append([]string{"train", "--plan", plan, "--dataset", data, "--epochs", "2", "--threads", "2", "-o", "json", "--workers", "1", "--measure-seconds", "0.2"}, args...)...)
		if code != 0 {
			t.Fatalf("train %v: exit %d: %s", args, code, errOut)
		}
		var r report
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("%v:\n%s", err, out)
		}
		return r
	}
	mem := train("--features", "memory")
	layout := train()
	disk := train("--cache-fraction", "0")
	if mem.Features != "memory" || mem.Store != nil || layout.Features != "store" || disk.Features != "store" {
		t.Fatalf("features %q, %q, %q; want memory, store, store", mem.Features, layout.Features, disk.Features)
	}
	// The plan's own prediction rides at the top level, beside the probe's.
	if p, err := tpc.LoadPlan(plan); err != nil || !(p.PredictedEpochS > 0) || mem.PlanPredictedEpochS != p.PredictedEpochS {
		t.Errorf("plan_predicted_epoch_s %v, want the plan's predicted_epoch_s (%v)", mem.PlanPredictedEpochS, err)
	}
	// Out of core on two threads, where the gather stage was busy for more
	// than half of each probed batch, the probe tried the products on one
	// thread too, and training runs on the faster (its loss curve, below,
	// still the in-memory run's bit for bit); --blas-threads decides alone.
	if !strings.Contains(mem.Backend, "gonum") && mem.Prediction != nil && layout.Prediction != nil && disk.Prediction != nil {
		if mem.Prediction.BLAS != nil || !strings.HasSuffix(mem.Backend, ", 2 threads") {
			t.Errorf("in memory: backend %q, choice %+v; want the products on 2 threads, nothing tried", mem.Backend, mem.Prediction.BLAS)
		}
		for _, r := range []report{layout, disk} {
			b := r.Prediction.BLAS
			if b == nil {
				if !strings.HasSuffix(r.Backend, ", 2 threads") {
					t.Errorf("out of core, nothing tried: backend %q, want 2 threads", r.Backend)
				}
				continue
			}
			if len(b.Tried) != 2 || b.Tried[0].Threads != 2 || b.Tried[1].Threads != 1 || !(b.Tried[0].BatchS > 0) || !(b.Tried[1].BatchS > 0) {
				t.Fatalf("tried %+v, want 2 then 1 threads, each timed", b.Tried)
			}
			faster := 2
			if b.Tried[1].BatchS < b.Tried[0].BatchS {
				faster = 1
			}
			want := ", 2 threads"
			if faster == 1 {
				want = ", 2 threads, products on 1"
			}
			if b.Threads != faster || !strings.HasSuffix(r.Backend, want) {
				t.Errorf("tried %+v: chose %d, backend %q; want the faster, %d", b.Tried, b.Threads, r.Backend, faster)
			}
		}
		if r := train("--blas-threads", "1"); r.Prediction.BLAS != nil || !strings.HasSuffix(r.Backend, ", 2 threads, products on 1") {
			t.Errorf("--blas-threads 1 out of core: backend %q, choice %+v; want the products on 1, nothing tried", r.Backend, r.Prediction.BLAS)
		}
	}
	if disk.Store.CachedFraction != 0 || disk.Store.Rows.Rows == 0 || disk.Store.Rows.SSDRows != disk.Store.Rows.Rows {
		t.Errorf("--cache-fraction 0: %+v, want every row from disk", *disk.Store)
	}
	// Per bin: the layout's bins served every row, and the SSD bins the
	// rows from disk.
	var binSum, ssdBins int
	for _, b := range layout.Store.Bins {
		binSum += b.Rows
		if strings.HasPrefix(b.ID, "nvme") {
			ssdBins += b.Rows
		}
	}
	if binSum != layout.Store.Rows.Rows || ssdBins != layout.Store.Rows.SSDRows {
		t.Errorf("per-bin rows %+v: sum %d, SSD bins %d; want %d and %d", layout.Store.Bins, binSum, ssdBins, layout.Store.Rows.Rows, layout.Store.Rows.SSDRows)
	}
	// Each run predicts its epochs for its own cache: every row in memory,
	// the layout's share, none; and compares every epoch with it.
	for _, c := range []struct {
		name string
		r    report
		hit  func(float64) bool
	}{
		{"in memory", mem, func(h float64) bool { return h == 1 }},
		{"layout", layout, func(h float64) bool { return h > 0 && h <= 1 }},
		{"cache 0", disk, func(h float64) bool { return h == 0 }},
	} {
		r := c.r
		if r.Prediction == nil || !(r.PredictedEpochS > 0) || !(r.MeasuredEpochS > 0) || len(r.Checks) != 2 {
			t.Errorf("%s: predicted %v s, measured %v s, %d epoch checks; want both and 2 checks", c.name, r.PredictedEpochS, r.MeasuredEpochS, len(r.Checks))
			continue
		}
		if !c.hit(r.Prediction.Epoch.HitShare) {
			t.Errorf("%s: predicted hit share %v", c.name, r.Prediction.Epoch.HitShare)
		}
		for _, ch := range r.Checks {
			if ch.PredictedS != r.PredictedEpochS || !(ch.MeasuredS > 0) {
				t.Errorf("%s: epoch %d check %+v", c.name, ch.Epoch, ch)
			}
		}
	}
	if p := disk.Prediction; p != nil && (!(p.Costs.DiskRowsPerS > 0) || !(p.Epoch.DiskS > 0)) {
		t.Errorf("cache 0: disk %v rows/s, %v s of reads predicted; want both measured and predicted", p.Costs.DiskRowsPerS, p.Epoch.DiskS)
	}
	// Reading from disk, each epoch also says the rate it read at and
	// what the prediction gives at that rate; in memory, neither.
	for _, ch := range disk.Checks {
		if !(ch.DiskRowsPerS > 0) || ch.WithEpochDisk == nil || !(ch.WithEpochDisk.PredictedS > 0) {
			t.Errorf("cache 0: epoch %d read at %v rows/s, predicted again %+v; want both", ch.Epoch, ch.DiskRowsPerS, ch.WithEpochDisk)
		}
	}
	if !(disk.WithEpochDiskS > 0) || !(disk.EpochDiskRowsPerS > 0) || mem.WithEpochDiskS != 0 || mem.Checks[0].WithEpochDisk != nil {
		t.Errorf("predicted again at the epochs' disk rate: %v s at %v rows/s (cache 0), %v s in memory; want only the former",
			disk.WithEpochDiskS, disk.EpochDiskRowsPerS, mem.WithEpochDiskS)
	}
	if two := train("--workers", "2", "--probe-batches", "2"); len(two.Epochs) != 2 || len(two.Checks) != 2 || !(two.PredictedEpochS > 0) || two.Epochs[1].Loss >= two.Epochs[0].Loss {
		t.Errorf("two workers: %d epochs, predicted %v s, losses %+v; want 2 epochs learning, predicted", len(two.Epochs), two.PredictedEpochS, two.Epochs)
	}
	// A random cache of the same size serves fewer rows from memory than
	// the hottest rows do, and the prediction knows it.
	hotHalf, randHalf := train("--cache-fraction", "0.3"), train("--cache-fraction", "0.3", "--cache-order", "random")
	if hotHalf.Prediction == nil || randHalf.Prediction == nil || !(randHalf.Prediction.Epoch.HitShare < hotHalf.Prediction.Epoch.HitShare) ||
		!(randHalf.Store.Rows.SSDRows > hotHalf.Store.Rows.SSDRows) {
		t.Errorf("random cache: %+v; hottest: %+v; want fewer hits predicted and measured", randHalf.Store, hotHalf.Store)
	}
	// The multistage loader measures its first stage as training runs it:
	// macro-batches read beside a probe's batches.
	if r := train("--cache-fraction", "0.3", "--loader", "multistage"); r.Prediction == nil || r.Prediction.Beside == nil || r.Prediction.Beside.Batches == 0 ||
		r.Prediction.Disk == nil || !(r.Prediction.Disk.StageSPerRow > 0) || !(r.Prediction.Costs.BesideS > 0) ||
		r.Prediction.Costs.StageOverlap < 0 || r.Prediction.Costs.StageOverlap > 1 || !(r.WithEpochDiskS > 0) {
		t.Errorf("multistage out of core: prediction %+v; want the first stage measured beside a probe", r.Prediction)
	}
	if r := train("--probe-batches", "0"); r.Prediction != nil || r.PredictedEpochS != 0 || len(r.Checks) != 0 {
		t.Errorf("--probe-batches 0 still predicted: %v s", r.PredictedEpochS)
	}
	// On the plan's (emulated) GPU, its GPU cache bin stays in device
	// memory: every row the bin serves is counted as resident, and the
	// loss curve is the CPU's to float32 rounding.
	gpu := train("--device", "cuda-emulated", "--probe-batches", "2")
	gpuBinRows := 0
	if gpu.Store != nil {
		for _, b := range gpu.Store.Bins {
			if strings.HasPrefix(b.ID, "gpu") {
				gpuBinRows += b.Rows
			}
		}
	}
	if gpu.Store == nil || gpu.Store.Rows.ResidentHits == 0 || gpu.Store.Rows.ResidentHits != gpuBinRows {
		t.Errorf("on the emulated GPU: rows %+v; want the GPU bin's rows resident", gpu.Store)
	}
	for e := range mem.Epochs {
		if d := math.Abs(gpu.Epochs[e].Loss - layout.Epochs[e].Loss); !(d <= 1e-4*math.Abs(layout.Epochs[e].Loss)) {
			t.Errorf("epoch %d: loss %v on the emulated GPU, %v on the CPU", e+1, gpu.Epochs[e].Loss, layout.Epochs[e].Loss)
		}
	}
	for e := range mem.Epochs {
		if layout.Epochs[e].Loss != mem.Epochs[e].Loss || disk.Epochs[e].Loss != mem.Epochs[e].Loss {
			t.Errorf("epoch %d: loss %v (layout), %v (all from disk), %v in memory; want the same", e+1, layout.Epochs[e].Loss, disk.Epochs[e].Loss, mem.Epochs[e].Loss)
		}
	}
	badProfile := filepath.Join(dir, "profile-4k.json")
	if err := os.WriteFile(badProfile, []byte(`{"schema_version": 1, "feature_bytes": 4096, "disks": [{"dir": "/x", "depths": [{"queue_depth": 128, "iops": 1000}]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--cache-fraction", "1.5"}, "--cache-fraction"},
		{[]string{"--cache-fraction", "0.5", "--features", "memory"}, "--cache-fraction"},
		{[]string{"--features", "ssd"}, "--features"},
		{[]string{"--cache-order", "random"}, "--cache-fraction"},
		{[]string{"--cache-fraction", "0.5", "--cache-order", "coldest"}, "--cache-order"},
		{[]string{"--cache-fraction", "0", "--measured", badProfile}, "--feature-bytes 512"},
	} {
		code, _, errOut := runCLI(t, append([]string{"train", "--plan", plan, "--dataset", data, "--epochs", "1", "--workers", "1"}, tc.args...)...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, %q; want 2 naming %s", tc.args, code, errOut, tc.want)
		}
	}
}

// synthData generates a dataset under dir/data with gnnplan dataset synth
// and the given options, and returns its directory.
// planFor recommends one GPU and two SSDs for data into dir/plan.json.
func planFor(t *testing.T, dir, data string) string {
	t.Helper()
	plan := filepath.Join(dir, "plan.json")
	if code, _, errOut := runCLI(t, "recommend", "--dataset", data, "--gpus", "1", "--ssds", "2", "--save", plan); code != 0 {
		t.Fatalf("recommend: %s", errOut)
	}
	return plan
}

// materialize places data as plan says and writes its store into
// dir/ssd0 and dir/ssd1.
func materialize(t *testing.T, dir, plan, data string) {
	t.Helper()
	ssd0, ssd1 := filepath.Join(dir, "ssd0"), filepath.Join(dir, "ssd1")
	os.Mkdir(ssd0, 0o755)
	os.Mkdir(ssd1, 0o755)
	if code, _, errOut := runCLI(t, "place", "--plan", plan, "--dataset", data, "--materialize", "--ssd-dir", ssd0, "--ssd-dir", ssd1); code != 0 {
		t.Fatalf("place: %s", errOut)
	}
}

func synthData(t *testing.T, dir string, args ...string) string {
	t.Helper()
	data := filepath.Join(dir, "data")
	if code, _, errOut := runCLI(t, append([]string{"dataset", "synth", "--out", data}, args...)...); code != 0 {
		t.Fatalf("synth: %s", errOut)
	}
	return data
}

// TestTrainSameParametersOnAnyThreadCount: the README's promise. The same
// seed gives bitwise the same parameters (and Adam's moments) after an
// epoch with the products on 1 thread, on 2, and out of core on the count
// train's probe chooses. The hidden layer is wide enough that the
// products are cut into pieces (kernels.planGemm), as a real model's are.
func TestTrainSameParametersOnAnyThreadCount(t *testing.T) {
	dir := t.TempDir()
	data := synthData(t, dir, "--nodes", "4000", "--edges", "20000", "--feature-dim", "128", "--train-fraction", "0.3")
	plan := planFor(t, dir, data)
	materialize(t, dir, plan, data)
	params := func(name string, args ...string) []byte {
		t.Helper()
		ckpt := filepath.Join(dir, name)
		args = append([]string{"train", "--plan", plan, "--dataset", data, "--epochs", "1", "--threads", "2", "--workers", "1",
			"--hidden", "256", "--measure-seconds", "0.2", "--checkpoint", ckpt, "-o", "json"}, args...)
		if code, _, errOut := runCLI(t, args...); code != 0 {
			t.Fatalf("train %v: exit %d: %s", args, code, errOut)
		}
		b, err := os.ReadFile(filepath.Join(ckpt, trainer.CheckpointFile))
		if err != nil {
			t.Fatal(err)
		}
		// Magic line, header length, JSON header (it holds the run's
		// timings), then the parameters and moments, then a CRC.
		i := bytes.IndexByte(b, '\n') + 1
		if i == 0 || len(b) < i+4 {
			t.Fatalf("%s: not a checkpoint", name)
		}
		start := i + 4 + int(binary.LittleEndian.Uint32(b[i:]))
		if start > len(b)-4 {
			t.Fatalf("%s: header runs past the file", name)
		}
		return b[start : len(b)-4]
	}
	one := params("one", "--features", "memory", "--blas-threads", "1")
	two := params("two", "--features", "memory", "--blas-threads", "2")
	probed := params("probed")
	if len(one) == 0 || !bytes.Equal(one, two) {
		t.Errorf("in memory, products on 1 and 2 threads: parameters differ (%d bytes)", len(one))
	}
	if !bytes.Equal(one, probed) {
		t.Errorf("out of core on the probe's thread count: parameters differ from the in-memory run's")
	}
}

// TestFIFOsAreRefusedAtOnce: a FIFO where a plan or a dataset's array
// should be is refused with a one-line error naming it, exit 2, instead of
// blocking in open until a writer comes (forever, and past SIGTERM).
func TestFIFOsAreRefusedAtOnce(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "g")
	os.MkdirAll(good, 0o755)
	writeDataset(t, good, 300, 4, 8)
	fifoLabels := filepath.Join(dir, "fifo-labels")
	os.MkdirAll(fifoLabels, 0o755)
	writeDataset(t, fifoLabels, 300, 4, 8)
	plan := filepath.Join(dir, "plan.json")
	for _, p := range []string{filepath.Join(fifoLabels, dataset.LabelsFile), plan} {
		os.Remove(p)
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Skipf("no FIFOs here: %v", err)
		}
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"labels.npy a FIFO", []string{"train", "--epochs", "1", "--dataset", fifoLabels}, "labels.npy: not a regular file (a FIFO)"},
		{"--plan a FIFO", []string{"train", "--epochs", "1", "--dataset", good, "--plan", plan}, "plan.json: not a regular file (a FIFO)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			type result struct {
				code   int
				errOut string
			}
			done := make(chan result, 1)
			go func() {
				code, _, errOut := runCLI(t, c.args...)
				done <- result{code, errOut}
			}()
			select {
			case r := <-done:
				if r.code != 2 || !strings.Contains(r.errOut, c.want) || strings.Count(strings.TrimSpace(r.errOut), "\n") > 0 {
					t.Errorf("exit %d, stderr %q; want exit 2 and one line saying %q", r.code, r.errOut, c.want)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("still blocked after 20 s: the FIFO was opened for reading")
			}
		})
	}
}

// TestTrainMultistageSaysWhatItsMacroBatchesHold: the multistage loader's
// note gives the share of a training vertex's sampled neighbourhood its
// macro-batch holds, and warns when that is low: a macro-batch of one part
// of eight holds little of a synthetic graph's neighbourhoods, one of all
// eight holds all of them and does not warn.
func TestTrainMultistageSaysWhatItsMacroBatchesHold(t *testing.T) {
	for _, tc := range []struct {
		macroParts string
		wantAll    bool
	}{{"1", false}, {"8", true}} {
		code, out, errOut := runCLI(t, "train", "--synthetic-nodes", "3000", "--epochs", "1", "--eval-every", "0", "--probe-batches", "0",
			"--loader", "multistage", "--parts", "8", "--macro-parts", tc.macroParts, "-o", "json")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		var r struct {
			Notes []string `json:"notes"`
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		var note string
		for _, n := range r.Notes {
			if strings.HasPrefix(n, "multistage loader:") {
				note = n
			}
		}
		all := strings.Contains(note, "holds 100% of its sampled neighbourhood")
		warned := strings.Contains(note, "warning:")
		if !strings.Contains(note, "macro-batch holds") || all != tc.wantAll || warned == tc.wantAll {
			t.Errorf("%s parts a macro-batch: note %q (want all held %v, a warning %v)", tc.macroParts, note, tc.wantAll, !tc.wantAll)
		}
	}
}
