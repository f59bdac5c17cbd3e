package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// runJSON is train's JSON for a run of epochs taking secs each, reading
// dev device bytes an epoch for useful ones.
func runJSON(measured, oneRate, byBatch float64, dev, useful int64, secs ...float64) []byte {
	var eps []string
	for _, s := range secs {
		eps = append(eps, fmt.Sprintf(`{"seconds": %v, "rows": {"device_bytes": %d, "useful_bytes": %d}}`, s, dev, useful))
	}
	return []byte(fmt.Sprintf(`{"epochs": [%s], "measured_epoch_s": %v, "predicted_with_epoch_disk_s": %v, "predicted_with_batch_reads_s": %v}`,
		strings.Join(eps, ","), measured, oneRate, byBatch))
}

// TestWriteTable: each loader's throughput over in memory's by round and
// pooled, from train's measured epoch, its bytes an
// epoch and read amplification, and its errors at the epochs' one rate
// and at each batch's reads ("-" where a run made no such prediction).
func TestWriteTable(t *testing.T) {
	parse := func(b []byte) runResult {
		r, err := parseRun(b)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	rounds := []map[string]runResult{
		{"memory": parse(runJSON(3, 0, 0, 0, 0, 9, 3, 3, 3)), "packed": parse(runJSON(4, 3.6, 4, 2e9, 1.99e9, 9, 4, 4, 5))},
		{"memory": parse(runJSON(3, 0, 0, 0, 0, 9, 3, 3)), "packed": parse(runJSON(6, 5, 0, 2e9, 1.99e9, 9, 6, 6))},
	}
	var b bytes.Buffer
	writeTable(&b, []string{"packed"}, rounds)
	got := b.String()
	for _, want := range []string{
		"| in memory | 3.00 s, 3.00 s | 1 |",
		"| packed | 0.75, 0.50 | 0.60 | 2.00 | 1.005 | +11.1%, +20.0% | +0.0%, - |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("table\n%s\nlacks %q", got, want)
		}
	}
	if _, err := parseRun([]byte(`{"epochs": []}`)); err == nil {
		t.Error("a run of no epochs parsed")
	}
	if _, err := parseRun([]byte(`{"epochs": [`)); err == nil {
		t.Error("damaged JSON parsed")
	}
}
