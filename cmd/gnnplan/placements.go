package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gnnplan/gnnplan/cmd/gnnplan/internal/textout"
	"github.com/gnnplan/gnnplan/maxflow"
	"github.com/gnnplan/gnnplan/profiles"
	"github.com/gnnplan/gnnplan/topology"
)

// placementsOptions holds the placements command's flags.
type placementsOptions struct {
	IO      *deps
	Profile string
	Machine string
	GPUs    int
	SSDs    int
	Output  string
	Top     int
	TopSet  bool // --top given: JSON lists that many too (else all)
	Tiers   maxflow.Tiers

	Profiles func(name string) (*topology.Machine, error)
	Import   func(ctx context.Context, path string) (*topology.Machine, error)
	Discover func(context.Context, topology.DiscoverOptions) (*topology.Machine, error)
}

func newPlacementsCmd(d *deps, runF func(context.Context, *placementsOptions) error) *cobra.Command {
	opts := &placementsOptions{IO: d, Profiles: profiles.Machine, Import: topology.ImportContext, Discover: topology.Discover,
		Tiers: maxflow.DefaultTiers()}
	cmd := &cobra.Command{
		Use:   "placements",
		Short: "Rank the ways to put GPUs and SSDs in a machine's slots by predicted bandwidth",
		Long: `Enumerate every way to put the GPUs and NVMe SSDs in the machine's slots, up to
symmetry (slots under one switch are interchangeable, and so are identical
sibling subtrees), predict each one's epoch IO time with the capacity-graph
max-flow model (Moment, SC'25, section 3.2), and rank them. Prints where each
device goes, the predicted inlet bandwidth of every GPU, the aggregate, and
the links that saturate; Moment's four classic placements are marked a-d.

The devices are the GPUs and SSDs the machine holds, unless --gpus/--ssds
say how many; every slot is a candidate, occupied or not.`,
		Example: `  gnnplan placements --profile moment-b --gpus 4 --ssds 8
  gnnplan placements --machine machine.json -o json
  gnnplan placements --profile moment-a --host-share 0.5 --top 20`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.Profile != "" && opts.Machine != "" {
				return usageErrorf("--profile and --machine: give at most one")
			}
			if err := checkOutput(opts.Output, "", "table", "wide", "json"); err != nil {
				return err
			}
			opts.TopSet = cmd.Flags().Changed("top")
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runPlacements(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Profile, "profile", "", "an embedded machine ("+strings.Join(profiles.MachineNames(), ", ")+")")
	f.StringVar(&opts.Machine, "machine", "", "a machine file (gnnplan JSON from discover --save, NCCL or hwloc XML, nvidia-smi topo -m output); default: this machine")
	f.IntVar(&opts.GPUs, "gpus", -1, "how many GPUs to place (default: as many as the machine holds)")
	f.IntVar(&opts.SSDs, "ssds", -1, "how many NVMe SSDs to place (default: as many as the machine holds)")
	f.StringVarP(&opts.Output, "output", "o", "table", "output format: table, wide, json")
	f.IntVar(&opts.Top, "top", maxflow.DefaultTop, "how many of the best placements to find and list (the classic ones are always listed)")
	f.Float64Var(&opts.Tiers.HostShare, "host-share", opts.Tiers.HostShare, "fraction of an epoch's bytes read from CPU memory (graph topology and cached features)")
	f.Float64Var(&opts.Tiers.GPUCacheShare, "gpu-cache-share", opts.Tiers.GPUCacheShare, "fraction of an epoch's bytes served from the GPUs' own memory")
	f.Float64Var(&opts.Tiers.SSDReadGBps, "ssd-GBps", opts.Tiers.SSDReadGBps, "read rate of one SSD in GB/s, when the machine does not give one")
	f.Float64Var(&opts.Tiers.HostMemGBps, "host-mem-GBps", opts.Tiers.HostMemGBps, "read rate of one socket's memory in GB/s")
	return cmd
}

func (o *placementsOptions) loadMachine(ctx context.Context) (*topology.Machine, error) {
	switch {
	case o.Profile != "":
		return o.Profiles(o.Profile)
	case o.Machine != "":
		return o.Import(ctx, o.Machine)
	}
	return o.Discover(ctx, topology.DiscoverOptions{Root: "/"})
}

func runPlacements(ctx context.Context, o *placementsOptions) error {
	if o.Top < 1 {
		return usageErrorf("--top: %d (valid: >= 1)", o.Top)
	}
	m, err := o.loadMachine(ctx)
	if err != nil {
		return err
	}
	if pm, n := maxflow.PositionSlots(m); n > 0 {
		m = pm
		fmt.Fprintf(o.IO.Err, "note: %s has no slot record for %d GPU/SSD position(s): each is taken as a slot that takes its kind again\n", m.Name, n)
	}
	sm, inv := maxflow.Strip(m)
	if o.GPUs >= 0 {
		inv.GPUs = o.GPUs
	}
	if o.SSDs >= 0 {
		inv.SSDs = o.SSDs
	}
	opts := maxflow.SearchOptions{Top: max(o.Top, 1)}
	// The machine as built is placed too, when the search moves the same
	// devices, so the table says how far it is from the best.
	if in := maxflow.Installed(m); len(in.GPUSlots) == inv.GPUs && len(in.SSDSlots) == inv.SSDs && inv.GPUs+inv.SSDs > 0 {
		opts.Installed = in
	}
	res, err := maxflow.SearchWith(ctx, sm, inv, o.Tiers, opts)
	if err != nil {
		return err
	}
	if o.Output == "json" {
		enc := json.NewEncoder(o.IO.Out)
		enc.SetIndent("", "  ")
		rep, err := res.Report(o.Top)
		if err != nil {
			return err
		}
		return enc.Encode(rep)
	}
	return writePlacementsTable(o, res)
}

func writePlacementsTable(o *placementsOptions, res *maxflow.SearchResult) error {
	out := newHuman(o.IO.Out, o.Output)
	inv, t := res.Inventory, res.Tiers
	// Devices outside slots stay where they are but count.
	fmt.Fprintf(out, "%s: %d GPU(s) (%s), %d SSD(s) (%s)\n", res.Machine.Name, inv.GPUs+res.Machine.Count(topology.KindGPU), nonEmpty(inv.GPU.Model, inv.GPU.Name), inv.SSDs+res.Machine.Count(topology.KindNVMe), nonEmpty(inv.SSD.Model, inv.SSD.Name))
	fmt.Fprintf(out, "%.0f placements; branch and bound kept the %d best, timing %d distinct up to symmetry; model: %.0f%% of each epoch's bytes from CPU memory, %.0f%% from GPU memory, the rest from SSDs (%.1f GB/s each unless the machine says)\n",
		res.Raw, len(res.Candidates), res.Distinct, 100*t.HostShare, 100*t.GPUCacheShare, t.SSDReadGBps)
	wrap := textout.Column{Elastic: true, Wrap: true}
	gpusCol, ssdsCol := wrap, wrap
	gpusCol.Name, ssdsCol.Name = "GPUS", "SSDS"
	tbl := textout.NewTable(col("RANK"), col("LAYOUT"), gpusCol, ssdsCol, num("PER-GPU GB/s"), num("AGGREGATE GB/s"),
		num("EPOCH IO vs BEST"), opt(num("FABRIC GB/s")), opt(col("SATURATED")))
	for _, c := range res.Listed(o.Top) {
		rank := fmt.Sprint(c.Rank)
		if c.Rank == 0 {
			rank = fmt.Sprintf(">%d", len(res.Candidates))
		}
		layout := c.Classic
		if c == res.Installed {
			layout = strings.TrimPrefix(layout+", installed", ", ")
		}
		gpus, ssds := res.Summary(c)
		tbl.Row(rank, layout, gpus, ssds, perGPU(c.Eval), fmt.Sprintf("%.2f", c.Eval.AggregateGBps),
			vsBest(res.VsBest(c)), fmt.Sprintf("%.2f", c.FabricGBps), maxflow.BottleneckSummary(c.Eval.Bottlenecks))
	}
	if err := out.write(tbl); err != nil {
		return err
	}
	if res.Truncated {
		fmt.Fprintf(out, "search stopped at its limit: no placement it did not look at takes less than %.4g s per epoch (best found %.4g s)\n",
			res.UnexploredSeconds, res.Candidates[0].Eval.EpochIOSeconds)
	}
	if res.Installed != nil {
		fmt.Fprintf(out, "installed: the devices where %s has them now\n", res.Machine.Name)
	}
	if len(res.Classic) > 0 {
		for _, n := range maxflow.ClassicNames {
			fmt.Fprintf(out, "(%s) %s\n", n, maxflow.ClassicAbout(n))
		}
		best, c := res.Candidates[0], res.Classic["c"]
		fmt.Fprintf(out, "best vs classic (c): %.2fx average per-GPU inlet bandwidth\n", avgInlet(best.Eval)/avgInlet(c.Eval))
	} else if res.ClassicNote != "" {
		fmt.Fprintf(out, "classic placements: %s\n", res.ClassicNote)
	}
	fmt.Fprintln(out, "EPOCH IO vs BEST: the placement's epoch IO time over the best one's (1.00x is the best)")
	fmt.Fprintln(out, "FABRIC GB/s: what the placement would move if the SSDs never bound (headroom of its switches, root ports and socket link)")
	fmt.Fprintln(out, "best placement:")
	top, err := res.Report(1)
	if err != nil {
		return err
	}
	rep := top.Candidates[0]
	for _, id := range append(deviceIDs("gpu", inv.GPUs), deviceIDs("nvme", inv.SSDs)...) {
		fmt.Fprintf(out, "  %-7s %s\n", id, rep.Where[id])
	}
	return out.Flush()
}

// vsBest formats an epoch-time ratio; "-" when there is none (no time).
func vsBest(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "-"
	}
	return fmt.Sprintf("%.2fx", v)
}

func deviceIDs(stem string, n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s%d", stem, i)
	}
	return ids
}

func nonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func perGPU(ev *maxflow.Evaluation) string {
	if len(ev.PerGPU) == 0 {
		return "-"
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, g := range ev.PerGPU {
		lo, hi = math.Min(lo, g.GBps), math.Max(hi, g.GBps)
	}
	if hi-lo < 0.005 {
		return fmt.Sprintf("%.2f each", lo)
	}
	return fmt.Sprintf("%.2f avg (%.2f-%.2f)", avgInlet(ev), lo, hi)
}

func avgInlet(ev *maxflow.Evaluation) float64 {
	s := 0.0
	for _, g := range ev.PerGPU {
		s += g.GBps
	}
	return s / math.Max(1, float64(len(ev.PerGPU)))
}
