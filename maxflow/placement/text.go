package placement

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/gnnplan/gnnplan/internal/textout"
	"github.com/gnnplan/gnnplan/topology"
)

// WriteText prints the search: the placements it kept, ranked, with the
// machine as installed and the classic placements beside them, and where
// the best one puts each device; the table fits width columns (0: any)
// and lists top placements.
func (res *SearchResult) WriteText(out io.Writer, width, top int) error {
	inv, t := res.Inventory, res.Tiers
	// Devices outside slots stay where they are but count.
	fmt.Fprintf(out, "%s: %d GPU(s) (%s), %d SSD(s) (%s)\n", res.Machine.Name, inv.GPUs+res.Machine.Count(topology.KindGPU), cmp.Or(inv.GPU.Model, inv.GPU.Name), inv.SSDs+res.Machine.Count(topology.KindNVMe), cmp.Or(inv.SSD.Model, inv.SSD.Name))
	fmt.Fprintf(out, "%.0f placements; branch and bound kept the %d best, timing %d distinct up to symmetry; model: %.0f%% of each epoch's bytes from CPU memory, %.0f%% from GPU memory, the rest from SSDs (%.1f GB/s each unless the machine says)\n",
		res.Raw, len(res.Candidates), res.Distinct, 100*t.HostShare, 100*t.GPUCacheShare, t.SSDReadGBps)
	wrap := textout.Column{Elastic: true, Wrap: true}
	gpusCol, ssdsCol := wrap, wrap
	gpusCol.Name, ssdsCol.Name = "GPUS", "SSDS"
	tbl := textout.NewTable(textout.Left("RANK"), textout.Left("LAYOUT"), gpusCol, ssdsCol, textout.Num("PER-GPU GB/s"), textout.Num("AGGREGATE GB/s"),
		textout.Num("EPOCH IO vs BEST"), textout.Opt(textout.Num("FABRIC GB/s")), textout.Opt(textout.Left("SATURATED")))
	for _, c := range res.Listed(top) {
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
			vsBest(res.VsBest(c)), fmt.Sprintf("%.2f", c.FabricGBps), BottleneckSummary(c.Eval.Bottlenecks))
	}
	if err := tbl.Write(out, width); err != nil {
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
		for _, n := range ClassicNames {
			fmt.Fprintf(out, "(%s) %s\n", n, ClassicAbout(n))
		}
		best, c := res.Candidates[0], res.Classic["c"]
		fmt.Fprintf(out, "best vs classic (c): %.2fx average per-GPU inlet bandwidth\n", avgInlet(best.Eval)/avgInlet(c.Eval))
	} else if res.ClassicNote != "" {
		fmt.Fprintf(out, "classic placements: %s\n", res.ClassicNote)
	}
	fmt.Fprintln(out, "EPOCH IO vs BEST: the placement's epoch IO time over the best one's (1.00x is the best)")
	fmt.Fprintln(out, "FABRIC GB/s: what the placement would move if the SSDs never bound (headroom of its switches, root ports and socket link)")
	fmt.Fprintln(out, "best placement:")
	first, err := res.Report(1)
	if err != nil {
		return err
	}
	rep := first.Candidates[0]
	for _, id := range append(DeviceIDs("gpu", inv.GPUs), DeviceIDs("nvme", inv.SSDs)...) {
		fmt.Fprintf(out, "  %-7s %s\n", id, rep.Where[id])
	}
	return nil
}

// vsBest formats an epoch-time ratio; "-" when there is none (no time).
func vsBest(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "-"
	}
	return fmt.Sprintf("%.2fx", v)
}

// perGPU is the GPUs' inlet rates: one figure when they are equal.
func perGPU(ev *Evaluation) string {
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

// avgInlet is the GPUs' mean inlet rate.
func avgInlet(ev *Evaluation) float64 {
	s := 0.0
	for _, g := range ev.PerGPU {
		s += g.GBps
	}
	return s / math.Max(1, float64(len(ev.PerGPU)))
}

// DeviceIDs are the IDs a placement gives n devices: stem0, stem1, ...
func DeviceIDs(stem string, n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s%d", stem, i)
	}
	return ids
}
