package validate

import (
	"fmt"
	"io"
	"strings"

	"github.com/gnnplan/gnnplan/internal/textout"
)

// WriteText prints the cases against their measurements, the orders
// kept and the summaries; the table fits width columns (0: any).
func (rep *Report) WriteText(out io.Writer, width int) error {
	tbl := textout.NewTable(textout.Column{Name: "SOURCE", Elastic: true}, textout.Column{Name: "CASE", Elastic: true}, textout.Column{Name: "WHERE", Elastic: true, Optional: true},
		textout.Column{Name: "MEASURED", Right: true}, textout.Column{Name: "PREDICTED", Right: true}, textout.Column{Name: "ERROR", Right: true}, textout.Column{Name: "BOUND", Optional: true})
	for _, r := range rep.Results {
		where := r.Where
		if r.Reading != "" {
			where += " (" + r.Reading + ")"
		}
		tbl.Row(r.Source, r.Label, where, formatMetric(r.Metric, r.Measured), formatMetric(r.Metric, r.Predicted),
			fmt.Sprintf("%+.1f%%", r.ErrorPct), r.Bound)
	}
	if err := tbl.Write(out, width); err != nil {
		return err
	}
	fmt.Fprintln(out, "ERROR: (predicted - measured) / measured; each source's measured device rates and cache sizes are inputs (gnnplan validate -o json lists them per case)")
	for _, g := range rep.Orders {
		mark := "kept"
		if !g.Kept {
			mark = "NOT kept: " + g.Wrong
		}
		fmt.Fprintf(out, "order, %s: %s\n", g.Group, mark)
	}
	for _, s := range []struct {
		what string
		sum  Summary
	}{{"published", rep.Published}, {"this machine", rep.Here}} {
		if s.sum.Cases == 0 {
			continue
		}
		fmt.Fprintf(out, "%s: %d cases from %s: median |error| %.1f%%, worst %.1f%% (%s); %d of %d orders kept\n",
			s.what, s.sum.Cases, strings.Join(s.sum.Sources, ", "), s.sum.MedianPct, s.sum.WorstPct, s.sum.WorstCase, s.sum.OrdersKept, s.sum.Orders)
	}
	if rep.Here.Cases > 0 {
		fmt.Fprintf(out, "this machine: %s\n", rep.HereMachine)
	}
	return nil
}

// formatMetric prints a case's figure in its metric's unit.
func formatMetric(metric string, v float64) string {
	switch metric {
	case SamplesPerS:
		return fmt.Sprintf("%.0f samples/s", v)
	case InletGBps:
		return fmt.Sprintf("%.3g GB/s per GPU", v)
	}
	return fmt.Sprintf("%.3g s", v)
}
