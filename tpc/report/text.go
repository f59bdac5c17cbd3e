package report

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/gnnplan/gnnplan/internal/textout"
	"github.com/gnnplan/gnnplan/maxflow/placement"
	"github.com/gnnplan/gnnplan/topology"
	"github.com/gnnplan/gnnplan/tpc"
	"github.com/gnnplan/gnnplan/trainer/sample"
)

// noGPULine is the machine as installed where it has no GPU.
const noGPULine = "as installed: no GPU: plans here train on GPUs; to plan CPU training, run gnnplan recommend --this-machine --dataset DIR on the machine itself"

// dramText is the memory an option buys, "+n x 64GB" or "" for none.
func dramText(hw tpc.Hardware) string {
	if hw.DIMMs == 0 {
		return ""
	}
	return fmt.Sprintf("+%d x %.0fGB", hw.DIMMs, hw.DIMM.CapacityGiB)
}

// SSDCount is "n x model", or "no SSD".
func SSDCount(n int, model string) string {
	if n == 0 {
		return "no SSD"
	}
	return fmt.Sprintf("%d x %s", n, model)
}

// WriteInstalled prints the machine as it stands, beside the plans: its
// own GPUs and SSDs where they are (tpc.PredictInstalled), and returns it
// for the plan. A machine with no GPU gets no line; one that cannot be
// predicted says why.
func WriteInstalled(ctx context.Context, out io.Writer, req tpc.Request) (*tpc.Installed, error) {
	if req.Machine.Count(topology.KindGPU) == 0 {
		fmt.Fprintf(out, "%s\n", noGPULine)
		return nil, nil
	}
	in, err := tpc.PredictInstalled(ctx, req)
	if err != nil {
		fmt.Fprintf(out, "as installed: not predicted: %v\n", err)
		return nil, err
	}
	p := in.Prediction
	ssd := SSDCount(in.SSDs, in.SSD)
	if in.CannotHold != "" {
		fmt.Fprintf(out, "as installed: %d x %s + %s where they are: cannot train: %s\n", in.GPUs, in.GPU, ssd, in.CannotHold)
		for _, m := range in.Matched {
			fmt.Fprintf(out, "  %s\n", m)
		}
		return in, nil
	}
	fmt.Fprintf(out, "as installed: %d x %s + %s where they are: epoch %s, %.0f samples/s, $%s 5-year TCO at catalog prices, TPC %.3f per $1k, %s-bound\n",
		in.GPUs, in.GPU, ssd, tpc.FormatSeconds(p.EpochSeconds), p.SamplesPerSec, tpc.FormatUSD(p.CostUSD), 1000*p.TPC, p.Bound)
	for _, m := range in.Matched {
		fmt.Fprintf(out, "  %s\n", m)
	}
	return in, nil
}

// WriteRecommendation prints rec as text: the ranked options (the first
// top, and the fastest), the recommended one with its bytes, placement,
// decisions and bottleneck, the next-dollar hint, the distributed
// alternative and the assumptions; tables fit width columns (0: any).
func WriteRecommendation(out io.Writer, width, top int, rec *tpc.Recommendation) error {
	w := rec.Request.Workload
	if rec.NothingToBuy != "" {
		fmt.Fprintf(out, "%s %s on %s: nothing to buy fits: %s\nthe machine as installed:\n", w.Name, w.Model, rec.Machine.Name, rec.NothingToBuy)
	} else {
		fmt.Fprintf(out, "%s on %s, budget $%s: %d plans priced, %d distinct placements evaluated\n",
			w.Name+" "+w.Model, rec.Machine.Name, tpc.FormatUSD(rec.Request.BudgetUSD), rec.Searched, rec.Placements)
	}
	t := textout.NewTable(textout.Column{Name: "RANK"}, textout.Column{Name: "GPUS"}, textout.Column{Name: "SSDS"}, textout.Column{Name: "DRAM", Optional: true},
		textout.Column{Name: "COST $", Right: true}, textout.Column{Name: "SAMPLES/s", Right: true}, textout.Column{Name: "EPOCH s", Right: true},
		textout.Column{Name: "TPC per $1k", Right: true}, textout.Column{Name: "BOUND", Optional: true})
	for i, op := range rec.Options {
		if i >= top && op != rec.Fastest {
			continue
		}
		rank := strconv.Itoa(i + 1)
		switch {
		case rec.NothingToBuy != "":
			rank = "installed"
		case op == rec.Fastest:
			rank += " (fastest)"
		}
		t.Row(rank, fmt.Sprintf("%d x %s", op.GPUs, op.GPU.Key), SSDCount(op.SSDs, op.SSD.Key), dramText(op.Hardware),
			tpc.FormatUSD(op.CostUSD), fmt.Sprintf("%.0f", op.SamplesPerSec), fmt.Sprintf("%.1f", op.EpochSeconds),
			fmt.Sprintf("%.3f", op.TPC*1000), op.Bound)
	}
	if err := t.Write(out, width); err != nil {
		return err
	}
	b := rec.Best
	verdict := "recommended"
	if rec.NothingToBuy != "" {
		verdict = "as installed"
	}
	dram := ""
	if b.DIMMs > 0 {
		dram = fmt.Sprintf(" + %d x %s (%.0f GiB more host memory)", b.DIMMs, b.DIMM.Name, b.AddedMemoryGiB())
	}
	fmt.Fprintf(out, "%s: %d x %s + %s%s, $%s 5-year TCO, %.0f samples/s (epoch %s: IO %s, training %s)\n",
		verdict, b.GPUs, b.GPU.Name, SSDCount(b.SSDs, b.SSD.Name), dram, tpc.FormatUSD(b.CostUSD), b.SamplesPerSec,
		tpc.FormatSeconds(b.EpochSeconds), tpc.FormatSeconds(b.EpochIOSeconds), tpc.FormatSeconds(b.EpochTrainSecs))
	ssdRate := ""
	if b.SSDs > 0 {
		ssdRate = fmt.Sprintf(" (%.2f GB/s each for feature rows)", b.SSDGBps)
		if c, ok := tpc.SSDLinkCap(rec.BestMachine, rec.BestEval, b.SSDGBps); ok {
			ssdRate = fmt.Sprintf(" (%.2f GB/s each, what their %s links carry; the drives read %.2f GB/s)", c.GBps, c.Links, b.SSDGBps)
		}
	}
	fmt.Fprintf(out, "  bytes per epoch: %.0f GB, %.0f%% from GPU memory, %.0f%% from CPU memory, %.0f%% from SSDs%s\n",
		b.Shares.EpochGB, 100*b.Shares.GPUCacheShare, 100*b.Shares.HostShare, 100*b.Shares.SSDShare, ssdRate)
	if l := b.Loader; l != nil {
		fmt.Fprintf(out, "  loader: %s\n", l.Why)
		for _, o := range l.Options {
			if o.Name == l.Name && len(l.Options) > 1 {
				fmt.Fprintf(out, "    %.3g MB read per batch, %.3g GB on the SSDs; accuracy: %s\n", o.SSDBytesPerBatch/1e6, o.DiskSpaceGB, o.AccuracyRisk)
			}
		}
	}
	plan := rec.Plan()
	fmt.Fprintln(out, "  placement:")
	for _, id := range append(placement.DeviceIDs("gpu", b.GPUs), placement.DeviceIDs("nvme", b.SSDs)...) {
		extra := ""
		if g, ok := plan.PerGPUGBps[id]; ok {
			extra = fmt.Sprintf("  inlet %.2f GB/s", g)
		}
		fmt.Fprintf(out, "    %-7s %s%s\n", id, plan.Placement.Where[id], extra)
	}
	fmt.Fprintf(out, "  CPU cache: %.0f GiB, %s\n", b.Decisions.CPUCacheGiB, b.Decisions.Why)
	if b.GPUs > 0 {
		fmt.Fprintf(out, "  GPU memory: %s\n", b.Decisions.GPUWhy)
	}
	if b.Decisions.TopologyOnSSDShare > 0 {
		fmt.Fprintf(out, "  topology: %s\n", b.Decisions.TopologyWhy)
	}
	fmt.Fprintf(out, "  saturated: %s\n", placement.BottleneckSummary(rec.BestEval.Bottlenecks))
	fmt.Fprintf(out, "  power: %s\n", tpc.CheckPower(b.Hardware, rec.Request.Catalog.Host).Text)
	if v := rec.ValidatedError; v != nil {
		fmt.Fprintf(out, "  how far to trust it: the same model's predictions of published measurements had %s (gnnplan validate)\n", v)
	}
	fmt.Fprintf(out, "hint: %s\n", rec.Hint.Text)
	for _, st := range rec.Hint.Steps {
		if st.Why != "" {
			fmt.Fprintf(out, "  %s: not priced: %s\n", st.What, st.Why)
			continue
		}
		fmt.Fprintf(out, "  %s: $%s, %+.1f%% throughput, %+.1f%% TPC\n", st.What, tpc.FormatUSD(st.AddedUSD), 100*st.ThroughputGain, 100*st.TPCGain)
	}
	if f := rec.Fastest; f != b {
		fmt.Fprintf(out, "fastest within budget: %d x %s + %d x %s, $%s, %.0f samples/s (%.2fx the recommended), TPC %.3f per $1k\n",
			f.GPUs, f.GPU.Key, f.SSDs, f.SSD.Key, tpc.FormatUSD(f.CostUSD), f.SamplesPerSec, f.SamplesPerSec/b.SamplesPerSec, f.TPC*1000)
	}
	d := rec.Distributed
	fmt.Fprintf(out, "distributed in-memory alternative: %d machines, $%s, %.0f samples/s, TPC %.3f per $1k: the recommended plan is %.1fx better per dollar\n",
		d.Machines, tpc.FormatUSD(d.CostUSD), d.SamplesPerSec, d.TPC*1000, d.CostPerSample)
	fmt.Fprintf(out, "  (%s)\n", d.Assumption)
	a := rec.Request.Assumptions
	skew := fmt.Sprintf("top x of vertices get x^%.2f of accesses", a.SkewExponent)
	if len(a.HotnessCurve) > 0 {
		skew = fmt.Sprintf("access skew as place measured it (%s: the top 1%% of vertices get %.0f%%)", sample.HotnessFile, 100*tpc.HitShare(a, 0.01))
	}
	gpu := fmt.Sprintf("%g GiB of each GPU for its context", a.GPUContextGiB)
	if a.GPUReserveGiB > 0 {
		gpu = fmt.Sprintf("%g GiB of each GPU kept from its caches", a.GPUReserveGiB)
	}
	fmt.Fprintf(out, "assumptions: %s, %.0f%% of host memory kept from the cache, %s, products at %.0f%% of FP32 peak, memory-bound kernels at %.0f%% of the GPU memory's rate, %.0f ms per batch fixed\n",
		gpu, 100*a.HostReserveShare, skew, 100*a.ComputeEfficiency, 100*a.MemoryEfficiency, 1000*a.BatchOverheadS)
	return nil
}
