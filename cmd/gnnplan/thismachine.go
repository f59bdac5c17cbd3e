package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/gnnplan/gnnplan/tpc"
	"github.com/gnnplan/gnnplan/tpc/trainplan"
	"github.com/gnnplan/gnnplan/trainer/store"
)

// runThisMachine plans the machine recommend runs on: CPU workers and the
// disks profiled, for the dataset, at several cache sizes, with rates
// from --measured or measured now.
func runThisMachine(ctx context.Context, o *recommendOptions) error {
	h, err := o.outputs()
	if err != nil {
		return err
	}
	switch {
	case o.Dataset == "":
		return usageErrorf("--this-machine plans a dataset on this machine: give --dataset DIR")
	case o.PlotPath != "":
		return usageErrorf("--this-machine prints this machine's predictions at each cache size; --plot draws plans of machines to buy")
	}
	in := trainplan.MachineInput{Dataset: o.Dataset, Model: o.Model, MeasuredPath: o.Measured, SSDDirs: o.SSDDirs, Progress: o.IO.Err}
	if o.Measured != "" {
		if in.Measured, err = store.ReadProfile(o.Measured, "--measured"); err != nil {
			return err
		}
	}
	e, err := trainplan.ThisMachine(ctx, in)
	if err != nil {
		return err
	}
	if err := e.WriteText(h, h.Width); err != nil {
		return err
	}
	if o.wantPlan() {
		return planThisMachine(ctx, o, h, e)
	}
	fmt.Fprintf(h, "train it (out of core: place and materialize a layout first, then --cache-fraction F instead of --features memory sets the cache):\n  gnnplan train --dataset %s %s --features memory\n",
		o.Dataset, strings.Join(e.Workload.TrainFlags(), " "))
	return h.Flush()
}

// planThisMachine writes the plan at the cache memory holds.
func planThisMachine(ctx context.Context, o *recommendOptions, h *human, e *trainplan.Estimate) error {
	if !e.CanPlan() {
		return usageErrorf("--save %s: memory holds %.0f%% of %s's rows, so training reads the rest from disk, and no disk was measured: give --ssd-dir DIR on the disk that will hold them", o.Save, 100*e.FitsFraction, o.Dataset)
	}
	p, where, err := e.Plan(ctx)
	if err != nil {
		return err
	}
	if err := o.emitPlan(h, p); err != nil {
		return err
	}
	name := o.Save
	if name == "" {
		name = "plan.json"
	} else {
		fmt.Fprintf(h, "wrote %s: ", name)
	}
	fmt.Fprintf(h, "%s at cache %.0f%%, predicted %s an epoch; train it:\n  gnnplan train --plan %s --dataset %s\n",
		e.Workload.Model, 100*e.FitsFraction, tpc.FormatSeconds(p.PredictedEpochS), name, o.Dataset)
	fmt.Fprintf(h, "how far to trust it: CPU plans made this way missed the epochs train --plan measured by %s, on %s (gnnplan validate)\n",
		p.ValidatedError, where)
	return h.Flush()
}
