package validate

import (
	"context"
	"strings"
	"testing"
)

// The published table as it stands: a change to the model may move single
// cases, but the summary must not get worse than this (docs/epoch-model.md
// has the table and the terms behind its misses).
const (
	publishedMedianCeilingPct = 17.0
	publishedWorstCeilingPct  = 49.0
	publishedOrdersKeptFloor  = 9
)

func TestPublishedTableDoesNotGetWorse(t *testing.T) {
	rep, err := Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	p := rep.Published
	if p.Cases < 10 || len(p.Sources) < 2 {
		t.Fatalf("%d published cases from %v: want at least 10 from at least 2 sources", p.Cases, p.Sources)
	}
	if p.MedianPct > publishedMedianCeilingPct {
		t.Errorf("median |error| %.1f%% over %d published cases, was at most %.1f%%", p.MedianPct, p.Cases, publishedMedianCeilingPct)
	}
	if p.WorstPct > publishedWorstCeilingPct {
		t.Errorf("worst |error| %.1f%% (%s), was at most %.1f%%", p.WorstPct, p.WorstCase, publishedWorstCeilingPct)
	}
	if p.OrdersKept < publishedOrdersKeptFloor {
		for _, o := range rep.Orders {
			if !o.Kept {
				t.Logf("%s: %s", o.Group, o.Wrong)
			}
		}
		t.Errorf("%d of %d sources' orders kept, were at least %d", p.OrdersKept, p.Orders, publishedOrdersKeptFloor)
	}
	for _, g := range []string{"Moment machine A placements", "Moment machine B placements", "Moment machine B, per-GPU inlet", "Hyperion SSD count", "Hyperion end-to-end, gat"} {
		for _, o := range rep.Orders {
			if o.Group == g && !o.Kept {
				t.Errorf("%s: order no longer kept: %s", g, o.Wrong)
			}
		}
	}
}

func TestCasesSayWhereTheyComeFrom(t *testing.T) {
	rep, err := Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range rep.Results {
		switch {
		case seen[r.ID]:
			t.Errorf("case id %q repeats", r.ID)
		case r.Source == "" || r.Where == "" || r.Reading == "" || r.Group == "" || r.Label == "":
			t.Errorf("%s: source, where, reading, group and label must all be given: %+v", r.ID, r.Case)
		case !(r.Measured > 0) || !(r.Predicted > 0):
			t.Errorf("%s: measured %g, predicted %g: want both > 0", r.ID, r.Measured, r.Predicted)
		case r.Metric != EpochS && r.Metric != SamplesPerS && r.Metric != InletGBps:
			t.Errorf("%s: metric %q", r.ID, r.Metric)
		case r.Inputs == "":
			t.Errorf("%s: no inputs listed", r.ID)
		}
		seen[r.ID] = true
	}
}

func TestOrders(t *testing.T) {
	res := func(label, config string, measured, predicted float64) Result {
		return Result{Case: Case{Group: "g", Source: "s", Label: label, Config: config, Metric: EpochS, Measured: measured}, Predicted: predicted}
	}
	cases := []struct {
		name string
		in   []Result
		kept bool
	}{
		{"same order", []Result{res("a", "", 10, 5), res("b", "", 20, 8)}, true},
		{"swapped", []Result{res("a", "", 10, 8), res("b", "", 20, 5)}, false},
		{"a tie where the source measured a gap", []Result{res("a", "", 10, 5), res("b", "", 20, 5)}, false},
		{"within the tolerance either way round", []Result{res("a", "", 10, 8), res("b", "", 10.4, 5)}, true},
		{"runs of one configuration are not ordered", []Result{res("a1", "a", 10, 8), res("a2", "a", 12, 5)}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := orders(c.in)
			if len(o) != 1 || o[0].Kept != c.kept {
				t.Fatalf("orders = %+v, want kept %v", o, c.kept)
			}
		})
	}
	thr := []Result{res("a", "", 100, 90), res("b", "", 200, 150)}
	for i := range thr {
		thr[i].Metric = SamplesPerS
	}
	if o := orders(thr); !o[0].Kept || o[0].Measured[0] != "b" {
		t.Errorf("throughput: higher is faster: %+v", o)
	}
}

func TestOnly(t *testing.T) {
	rep, err := Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	m, err := rep.Only("moment")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range m.Results {
		if !strings.Contains(r.Source, "Moment") {
			t.Errorf("--source moment kept %s (%s)", r.ID, r.Source)
		}
	}
	if m.Published.Cases != len(m.Results) || m.Here.Cases != 0 {
		t.Errorf("summaries %+v / %+v over %d cases", m.Published, m.Here, len(m.Results))
	}
	if _, err := rep.Only("ginex"); err == nil || !strings.Contains(err.Error(), "Hyperion") {
		t.Errorf("an unknown source: %v, want an error listing the sources", err)
	}
}
