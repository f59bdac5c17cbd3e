package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gnnplan/gnnplan/maxflow/placement"
	"github.com/gnnplan/gnnplan/profiles"
	"github.com/gnnplan/gnnplan/topology"
	"github.com/gnnplan/gnnplan/topology/importer"
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
	Tiers   placement.Tiers

	Profiles func(name string) (*topology.Machine, error)
	Import   func(ctx context.Context, path string) (*topology.Machine, error)
	Discover func(context.Context, topology.DiscoverOptions) (*topology.Machine, error)
}

func newPlacementsCmd(d *deps, runF func(context.Context, *placementsOptions) error) *cobra.Command {
	opts := &placementsOptions{IO: d, Profiles: profiles.Machine, Import: importer.ImportContext, Discover: topology.Discover,
		Tiers: placement.DefaultTiers()}
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
	outputFlag(f, &opts.Output, "", "", "table", "wide", "json")
	f.IntVar(&opts.Top, "top", placement.DefaultTop, "how many of the best placements to find and list (the classic ones are always listed)")
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
	if pm, n := placement.PositionSlots(m); n > 0 {
		m = pm
		fmt.Fprintf(o.IO.Err, "note: %s has no slot record for %d GPU/SSD position(s): each is taken as a slot that takes its kind again\n", m.Name, n)
	}
	sm, inv := placement.Strip(m)
	if o.GPUs >= 0 {
		inv.GPUs = o.GPUs
	}
	if o.SSDs >= 0 {
		inv.SSDs = o.SSDs
	}
	opts := placement.SearchOptions{Top: max(o.Top, 1)}
	// The machine as built is placed too, when the search moves the same
	// devices, so the table says how far it is from the best.
	if in := placement.Installed(m); len(in.GPUSlots) == inv.GPUs && len(in.SSDSlots) == inv.SSDs && inv.GPUs+inv.SSDs > 0 {
		opts.Installed = in
	}
	res, err := placement.SearchWith(ctx, sm, inv, o.Tiers, opts)
	if err != nil {
		return err
	}
	if o.Output == "json" {
		rep, err := res.Report(o.Top)
		if err != nil {
			return err
		}
		return writeJSON(o.IO.Out, rep)
	}
	out := newHuman(o.IO.Out, o.Output)
	if err := res.WriteText(out, out.Width, o.Top); err != nil {
		return err
	}
	return out.Flush()
}
