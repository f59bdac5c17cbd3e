package store

import (
	"fmt"
	"io"

	"github.com/gnnplan/gnnplan/internal/textout"
	"github.com/gnnplan/gnnplan/internal/tier"
)

// WriteText prints the profile: each disk's reads at each queue depth, the
// memory copy rate, the compute rates and the GPUs measured, and the
// notes; the table fits width columns (0: any).
func (p *MachineProfile) WriteText(out io.Writer, width int) error {
	t := textout.NewTable(textout.Column{Name: "DIR", Elastic: true, KeepEnd: true}, textout.Left("ENGINE"), textout.Num("QUEUE DEPTH"), textout.Num("IOPS"), textout.Num("USEFUL GB/s"), textout.Opt(textout.Num("DEVICE GB/s")), textout.Num("CPU s/GB"))
	for _, d := range p.Disks {
		for _, r := range d.Depths {
			t.Row(d.Dir, d.Engine, fmt.Sprint(r.QueueDepth), fmt.Sprintf("%.0f", r.IOPS), fmt.Sprintf("%.3f", r.UsefulGBps),
				fmt.Sprintf("%.3f", r.DeviceGBps), fmt.Sprintf("%.2f", r.CPUSecondsPerG))
		}
	}
	if err := t.Write(out, width); err != nil {
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
	return nil
}

// WriteText prints the manifest's bins: rows, and for an SSD bin its
// file; the table fits width columns (0: any).
func (m *Manifest) WriteText(w io.Writer, width int) error {
	t := textout.NewTable(textout.Left("BIN"), textout.Left("KIND"), textout.Num("ROWS"), textout.Opt(textout.Num("STRIDE BYTES")), textout.Num("FILE MiB"), textout.Column{Name: "FILE", Elastic: true, KeepEnd: true})
	for _, b := range m.Bins {
		file, mib, stride := "(memory, from features.npy)", "-", "-"
		if b.Kind == tier.SSD {
			file, mib, stride = b.Path, fmt.Sprintf("%.1f", float64(b.FileBytes)/(1<<20)), fmt.Sprint(b.StrideBytes)
		}
		t.Row(b.ID, string(b.Kind), fmt.Sprint(b.Rows), stride, mib, file)
	}
	return t.Write(w, width)
}

// WriteText prints each file checked and what was found; the table fits
// width columns (0: any).
func (rep *VerifyReport) WriteText(w io.Writer, width int) error {
	t := textout.NewTable(textout.Left("BIN"), textout.Num("FILE MiB"), textout.Left("STATUS"), textout.Column{Name: "FILE", Elastic: true, KeepEnd: true})
	status := func(c FileCheck) string {
		if c.OK {
			return "ok"
		}
		if c.Path == "" {
			return "not read"
		}
		return "DAMAGED"
	}
	t.Row("(features)", fmt.Sprintf("%.1f", float64(rep.Features.Bytes)/(1<<20)), status(rep.Features), rep.Features.Path)
	for _, c := range rep.Bins {
		st := status(c.FileCheck)
		if c.DamagedRows > 0 {
			st = fmt.Sprintf("DAMAGED (%d rows)", c.DamagedRows)
		}
		t.Row(c.ID, fmt.Sprintf("%.1f", float64(c.Bytes)/(1<<20)), st, c.Path)
	}
	return t.Write(w, width)
}

// busSuffix is ", at ADDR" for a known PCI address.
func busSuffix(addr string) string {
	if addr == "" {
		return ""
	}
	return ", at " + addr
}

// Describe is a line on where the store's rows come from.
func (s *Store) Describe() string {
	d := fmt.Sprintf("%.1f%% of the rows in memory", 100*s.CachedFraction())
	if e := s.Engine(); e != "" {
		d += ", the rest read from SSD bins with " + e
	}
	return d
}
