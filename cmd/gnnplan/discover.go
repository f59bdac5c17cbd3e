package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gnnplan/gnnplan/internal/textout"
	"github.com/gnnplan/gnnplan/kernels"
	"github.com/gnnplan/gnnplan/profiles"
	"github.com/gnnplan/gnnplan/topology"
	"github.com/gnnplan/gnnplan/topology/importer"
)

// discoverOptions holds the discover command's flags and what it reads
// machines from, so tests can swap the sources.
type discoverOptions struct {
	IO        *deps
	SysfsRoot string
	From      []string
	Profile   string
	Output    string
	Save      string
	Dmidecode bool

	Discover func(context.Context, topology.DiscoverOptions) (*topology.Machine, error)
	Import   func(ctx context.Context, paths []string) (*topology.Machine, error)
	Profiles func(name string) (*topology.Machine, error)
	// DriverGPUs lists the GPUs the CUDA driver sees (a build with the
	// cuda tag); discovering this machine names its GPUs by them.
	DriverGPUs func() ([]kernels.GPUInfo, error)
}

func newDiscoverCmd(d *deps, runF func(context.Context, *discoverOptions) error) *cobra.Command {
	opts := &discoverOptions{IO: d, Discover: topology.Discover, Import: importer.ImportFilesContext, Profiles: profiles.Machine, DriverGPUs: kernels.CUDAGPUs}
	cmd := &cobra.Command{
		Use:   "discover",
		Short: "Describe a server's sockets, PCIe tree, slots, GPUs, SSDs, NICs and link bandwidths",
		Long: `Describe a server as the planner sees it: CPU sockets (NUMA nodes) with their
memory, root ports, PCIe switches, slots (occupied or empty, lane width),
GPUs, NVMe SSDs, NICs, NVLink/xGMI, and every link's capacity in GB/s per
direction (decimal).

With no flags it reads this machine's sysfs; a build with CUDA (make
build-cuda) also asks the driver, which names each GPU and its memory.
--sysfs-root reads an unpacked
sysfs snapshot, --from imports an NCCL/RCCL topology XML, an hwloc XML
(lstopo --of xml), the text nvidia-smi topo -m or lspci -vvv / lspci -tv
print (what a text format cannot say is marked assumed; repeat --from to
combine lspci -tv, lspci -vvv and nvidia-smi topo -m of one machine: the tree,
the links, and the NVLinks and RDMA NIC names) or a machine JSON saved with --save, and
--profile loads an
embedded machine (` + strings.Join(profiles.MachineNames(), ", ") + `).`,
		Example: `  gnnplan discover
  gnnplan discover --profile moment-b -o tree
  gnnplan discover --from nccl-topo.xml -o json
  nvidia-smi topo -m > topo.txt && gnnplan discover --from topo.txt
  gnnplan discover --from lspci-tv.txt --from lspci-vvv.txt
  gnnplan discover --sysfs-root ./snapshot --save machine.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runDiscover(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.SysfsRoot, "sysfs-root", "", "read an unpacked sysfs snapshot (the directory holding sys/) instead of this machine")
	f.StringArrayVar(&opts.From, "from", nil, "a topology file: NCCL or hwloc XML, nvidia-smi topo -m, lspci -vvv or -tv, gnnplan JSON; repeatable for one machine")
	f.StringVar(&opts.Profile, "profile", "", "load an embedded machine profile ("+strings.Join(profiles.MachineNames(), ", ")+")")
	outputFlag(f, &opts.Output, "--save", "", "table", "wide", "tree", "json", "dot")
	f.StringVar(&opts.Save, "save", "", "also write the machine as JSON to this file")
	f.BoolVar(&opts.Dmidecode, "dmidecode", true, "run `dmidecode` for slot and memory records when the SMBIOS table is unreadable")
	return cmd
}

func (o *discoverOptions) validate() error {
	n := 0
	for _, s := range []string{o.SysfsRoot, strings.Join(o.From, ","), o.Profile} {
		if s != "" {
			n++
		}
	}
	if n > 1 {
		return usageErrorf("--sysfs-root, --from and --profile: give at most one")
	}
	return nil
}

// loadMachine returns the machine the flags name.
func (o *discoverOptions) loadMachine(ctx context.Context) (*topology.Machine, error) {
	switch {
	case o.Profile != "":
		return o.Profiles(o.Profile)
	case len(o.From) > 0:
		return o.Import(ctx, o.From)
	default:
		root := o.SysfsRoot
		if root == "" {
			root = "/"
		}
		m, err := o.Discover(ctx, topology.DiscoverOptions{Root: root, UseDmidecode: o.Dmidecode})
		if err != nil || root != "/" || o.DriverGPUs == nil {
			// Another root is another machine's tree: this one's driver
			// does not describe it.
			return m, err
		}
		gpus, err := o.DriverGPUs()
		switch {
		case err == nil:
			profiles.DefaultCatalog().NameDriverGPUs(m, gpus)
		case !errors.Is(err, kernels.ErrNoCUDA) && m.Summarize().GPUs > 0:
			m.Notes = append(m.Notes, "GPUs named from PCI IDs: the CUDA driver did not answer: "+err.Error())
		}
		return m, nil
	}
}

func runDiscover(ctx context.Context, o *discoverOptions) error {
	m, err := o.loadMachine(ctx)
	if err != nil {
		return err
	}
	if o.Save != "" {
		if err := topology.Save(o.Save, m); err != nil {
			return fmt.Errorf("--save: %w", err)
		}
	}
	switch o.Output {
	case "json":
		return topology.Encode(o.IO.Out, m)
	case "dot":
		return topology.WriteDOT(o.IO.Out, m)
	}
	out := newHuman(o.IO.Out, o.Output)
	if o.Output == "tree" {
		if err := topology.WriteTree(out, m); err != nil {
			return err
		}
	} else if err := writeMachineTable(out, m); err != nil {
		return err
	}
	if err := topology.WriteSummary(out, m); err != nil {
		return err
	}
	return out.Flush()
}

// writeMachineTable prints the machine's nodes and its links outside the
// tree as tables, then its notes.
func writeMachineTable(out *human, m *topology.Machine) error {
	fmt.Fprintf(out, "%s  (%s)\n", m.Name, m.Source)
	v := topology.Table(m)
	h := v.NodeHeader
	nodes := textout.NewTable(textout.Left(h[0]), textout.Left(h[1]), textout.Left(h[2]), textout.Column{Name: h[3], Elastic: true, Wrap: true},
		textout.Opt(textout.Left(h[4])), textout.Num(h[5]))
	for _, r := range v.Nodes {
		nodes.Row(r...)
	}
	if err := out.write(nodes); err != nil {
		return err
	}
	if len(v.Cross) > 0 {
		h := v.CrossHeader
		cross := textout.NewTable(textout.Left(h[0]), textout.Left(h[1]), textout.Left(h[2]), textout.Text(h[3]), textout.Num(h[4]))
		for _, r := range v.Cross {
			cross.Row(r...)
		}
		if err := out.write(cross); err != nil {
			return err
		}
	}
	for _, n := range m.Notes {
		fmt.Fprintf(out, "note: %s\n", n)
	}
	return nil
}
