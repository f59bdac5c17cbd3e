package tpc

import (
	"fmt"
	"io"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// WritePlotSVG draws the best GPU choice's TPC and throughput against the
// SSD count, one panel each, as SVG: where TPC peaks is the recommended
// count, where throughput flattens the next bottleneck took over.
func WritePlotSVG(w io.Writer, rec *Recommendation) error {
	c := rec.SSDCurve()
	title := fmt.Sprintf("%d x %s, %s SSDs, %s on %s", c.GPUs, c.GPUModel, c.SSDModel, rec.Request.Workload.Name, rec.Machine.Name)
	return twoPanels(w, title, "SSDs", c.Points, func(o *Option) int { return o.SSDs }, rec.Best.SSDs)
}

// WriteGPUPlotSVG draws TPC and throughput against the GPU count, each
// count at its best SSD count, for the best plan's GPU and SSD models.
func WriteGPUPlotSVG(w io.Writer, rec *Recommendation) error {
	c := rec.GPUCurve()
	title := fmt.Sprintf("%s GPUs, each count with its best number of %s SSDs", c.GPUModel, c.SSDModel)
	return twoPanels(w, title, "GPUs", c.Points, func(o *Option) int { return o.GPUs }, rec.Best.GPUs)
}

// twoPanels draws the points' TPC above their throughput against the
// count x gives, marking the count mark.
func twoPanels(w io.Writer, title, xlabel string, points []*Option, x func(*Option) int, mark int) error {
	if len(points) == 0 {
		return fmt.Errorf("plot: no options to draw")
	}
	tpc := make(plotter.XYs, len(points))
	thr := make(plotter.XYs, len(points))
	for i, o := range points {
		tpc[i].X, tpc[i].Y = float64(x(o)), o.TPC*1000
		thr[i].X, thr[i].Y = float64(x(o)), o.SamplesPerSec/1000
	}
	top, err := linePlot(title, "TPC (samples/s per $1k of 5-year TCO)", tpc, mark)
	if err != nil {
		return err
	}
	bottom, err := linePlot("", "throughput (thousand samples/s)", thr, mark)
	if err != nil {
		return err
	}
	bottom.X.Label.Text = xlabel
	top.X.Label.Text = xlabel
	const width, height = 7 * vg.Inch, 7 * vg.Inch
	canvas := vgsvg.New(width, height)
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadTop: vg.Points(6), PadBottom: vg.Points(6), PadLeft: vg.Points(6), PadRight: vg.Points(6), PadY: vg.Points(12)}
	plots := [][]*plot.Plot{{top}, {bottom}}
	canvases := plot.Align(plots, tiles, draw.New(canvas))
	top.Draw(canvases[0][0])
	bottom.Draw(canvases[1][0])
	if _, err := canvas.WriteTo(w); err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	return nil
}

func linePlot(title, ylabel string, xys plotter.XYs, mark int) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = ylabel
	p.Add(plotter.NewGrid())
	line, points, err := plotter.NewLinePoints(xys)
	if err != nil {
		return nil, fmt.Errorf("plot: %w", err)
	}
	p.Add(line, points)
	for _, xy := range xys {
		if int(xy.X) == mark {
			chosen, err := plotter.NewScatter(plotter.XYs{xy})
			if err != nil {
				return nil, fmt.Errorf("plot: %w", err)
			}
			chosen.GlyphStyle.Radius = vg.Points(5)
			chosen.GlyphStyle.Shape = draw.RingGlyph{}
			p.Add(chosen)
			p.Legend.Add("recommended", chosen)
		}
	}
	p.Y.Min = 0
	return p, nil
}
