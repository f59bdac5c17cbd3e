package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/gnnplan/gnnplan/tpc"
)

// runResult is what the table needs of one `train -o json`.
type runResult struct {
	Epochs []struct {
		Seconds float64 `json:"seconds"`
		Rows    struct {
			DeviceBytes int64 `json:"device_bytes"`
			UsefulBytes int64 `json:"useful_bytes"`
		} `json:"rows"`
	} `json:"epochs"`
	// MeasuredS is train's median epoch, the first left out where others
	// follow (it pays for cold buffers).
	MeasuredS float64 `json:"measured_epoch_s"`
	OneRateS  float64 `json:"predicted_with_epoch_disk_s"`
	ByBatchS  float64 `json:"predicted_with_batch_reads_s"`
}

func parseRun(data []byte) (runResult, error) {
	var r runResult
	if err := json.Unmarshal(data, &r); err != nil {
		return r, fmt.Errorf("train's JSON: %w", err)
	}
	if len(r.Epochs) == 0 || !(r.MeasuredS > 0) {
		return r, fmt.Errorf("train's JSON has no epochs or no measured epoch")
	}
	return r, nil
}

// bytes is the mean device bytes an epoch read and the read amplification
// (device over useful bytes); 0, 0 when nothing was read.
func (r runResult) bytes() (perEpoch float64, amp float64) {
	var dev, useful int64
	for _, e := range r.Epochs {
		dev += e.Rows.DeviceBytes
		useful += e.Rows.UsefulBytes
	}
	if useful == 0 {
		return 0, 0
	}
	return float64(dev) / float64(len(r.Epochs)), float64(dev) / float64(useful)
}

// errorPct is measured's distance from predicted in percent of it, or "-"
// without a prediction.
func errorPct(measured, predicted float64) string {
	if !(predicted > 0) {
		return "-"
	}
	return fmt.Sprintf("%+.1f%%", tpc.ErrorPct(measured, predicted))
}

// writeTable writes the Markdown table of rounds (each a run in memory and
// one per loader, by name): x by round is in memory's epoch over the
// loader's, pooled the sums' ratio.
func writeTable(w io.Writer, loaders []string, rounds []map[string]runResult) {
	fmt.Fprintln(w, "| loader | x by round | pooled | GB an epoch | read amplification | errors at the epochs' rate | at each batch's reads |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	var memSum float64
	var mem []string
	for _, r := range rounds {
		memSum += r["memory"].MeasuredS
		mem = append(mem, fmt.Sprintf("%.2f s", r["memory"].MeasuredS))
	}
	fmt.Fprintf(w, "| in memory | %s | 1 | - | - | - | - |\n", strings.Join(mem, ", "))
	for _, l := range loaders {
		var xs, one, by []string
		var sum, gb, amp float64
		for _, r := range rounds {
			run := r[l]
			e := run.MeasuredS
			sum += e
			xs = append(xs, fmt.Sprintf("%.2f", r["memory"].MeasuredS/e))
			one = append(one, errorPct(run.MeasuredS, run.OneRateS))
			by = append(by, errorPct(run.MeasuredS, run.ByBatchS))
			g, a := run.bytes()
			gb += g / 1e9 / float64(len(rounds))
			amp = max(amp, a)
		}
		fmt.Fprintf(w, "| %s | %s | %.2f | %.2f | %.3f | %s | %s |\n", l, strings.Join(xs, ", "), memSum/sum, gb, amp, strings.Join(one, ", "), strings.Join(by, ", "))
	}
}
