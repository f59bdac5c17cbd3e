package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	code, out, errOut := runCLI(t, "validate")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"Moment (SC'25)", "Hyperion (ICDE'25)", "this machine", "published: ", "median |error|", "order, Moment machine A placements: kept"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q", want)
		}
	}

	code, out, errOut = runCLI(t, "validate", "-o", "json", "--source", "hyperion")
	if code != 0 {
		t.Fatalf("json: exit %d: %s", code, errOut)
	}
	var rep struct {
		Cases []struct {
			Source    string   `json:"source"`
			Measured  float64  `json:"measured"`
			Predicted float64  `json:"predicted"`
			ErrorPct  *float64 `json:"error_pct"`
		} `json:"cases"`
		Published struct {
			Cases     int     `json:"cases"`
			MedianPct float64 `json:"median_abs_error_pct"`
		} `json:"published"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Cases) < 10 || rep.Published.Cases != len(rep.Cases) {
		t.Fatalf("%d hyperion cases, summary over %d", len(rep.Cases), rep.Published.Cases)
	}
	for _, c := range rep.Cases {
		if c.Source != "Hyperion (ICDE'25)" || c.Measured <= 0 || c.Predicted <= 0 || c.ErrorPct == nil {
			t.Errorf("case %+v", c)
		}
	}

	for _, args := range [][]string{{"validate", "-o", "csv"}, {"validate", "--source", "ginex"}} {
		code, _, errOut := runCLI(t, args...)
		if code != 2 || !strings.Contains(errOut, strings.TrimPrefix(args[1], "-")) {
			t.Errorf("%v: exit %d, %q; want 2 naming the flag", args, code, errOut)
		}
	}
}
