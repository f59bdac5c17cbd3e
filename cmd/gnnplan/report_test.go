package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gnnplan/gnnplan/tpc"
)

// TestReportWritesHTMLAndMarkdown: recommend, then report, as the README
// shows: one HTML file, or Markdown with its three figures beside it.
func TestReportWritesHTMLAndMarkdown(t *testing.T) {
	dir := t.TempDir()
	plan := filepath.Join(dir, "plan.json")
	if code, _, errOut := runCLI(t, "recommend", "--budget", "80000", "--save", plan); code != 0 {
		t.Fatalf("recommend exit %d: %s", code, errOut)
	}
	html := filepath.Join(dir, "review.html")
	code, out, errOut := runCLI(t, "report", "--plan", plan, "--out", html)
	if code != 0 || !strings.Contains(out, "wrote "+html) {
		t.Fatalf("report exit %d: %s%s", code, out, errOut)
	}
	data, err := os.ReadFile(html)
	if err != nil || !strings.Contains(string(data), `id="topology"`) {
		t.Fatalf("review.html: %v, %d bytes", err, len(data))
	}
	md := filepath.Join(dir, "wiki", "review.md")
	if err := os.MkdirAll(filepath.Dir(md), 0o755); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runCLI(t, "report", "--plan", plan, "--out", md); code != 0 {
		t.Fatalf("report -o md exit %d: %s", code, errOut)
	}
	for _, f := range []string{"review.md", "review-topology.svg", "review-ssds.svg", "review-gpus.svg"} {
		if st, err := os.Stat(filepath.Join(dir, "wiki", f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	// The machine as it stood, kept in the plan: what the plan keeps and
	// what it buys (issue 34, finding 6).
	mdText, _ := os.ReadFile(md)
	if !strings.Contains(string(mdText), "| As installed | 4 x a100-40gb-pcie + 8 x p5510-3.84tb: epoch") ||
		!strings.Contains(string(mdText), "the plan replaces the 4 GPUs with 6 x l40s-48gb-pcie") {
		t.Errorf("review lacks the machine as installed against the plan:\n%s", string(mdText)[:min(len(mdText), 2500)])
	}
	// The loader the plan trains with, and why (issue 37).
	if !strings.Contains(string(mdText), "| Loader | packed: epoch") {
		t.Errorf("review lacks the plan's loader")
	}
	left, _ := filepath.Glob(filepath.Join(dir, "*.tmp"))
	if len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// TestReportBadInput: one line and exit 2 for each.
func TestReportBadInput(t *testing.T) {
	dir := t.TempDir()
	notPlan := filepath.Join(dir, "x.json")
	if err := os.WriteFile(notPlan, []byte(`{"schema_version": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no plan", []string{"report", "--out", "r.html"}, "--plan"},
		{"markdown to stdout", []string{"report", "--plan", notPlan, "-o", "md"}, "give --out review.md"},
		{"unknown format", []string{"report", "--plan", notPlan, "--out", "r.pdf"}, ".html or .md"},
		{"missing plan file", []string{"report", "--plan", filepath.Join(dir, "none.json"), "--out", filepath.Join(dir, "r.html")}, "none.json"},
		{"a plan without a machine", []string{"report", "--plan", notPlan, "--out", filepath.Join(dir, "r.html")}, "x.json"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := runCLI(t, tc.args...)
			if code != 2 || !strings.Contains(errOut, tc.want) || strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
				t.Errorf("exit %d, stderr %q: want exit 2 and one line naming %q", code, errOut, tc.want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "r.html")); err == nil {
		t.Error("a review was written for a bad plan")
	}
}

// TestReportUsesThePlansCatalog: a plan priced with a catalog file is
// reviewed at that file's prices and names it, without report being given
// the file again: the L40S at $11,000 makes the review's cost the plan's,
// not the built-in $8,000 one's (issue 34, finding 1).
func TestReportUsesThePlansCatalog(t *testing.T) {
	dir := t.TempDir()
	prices := filepath.Join(dir, "prices.yaml")
	if err := os.WriteFile(prices, []byte(`schema_version: 1
gpus:
  - key: l40s-48gb-pcie
    name: NVIDIA L40S 48GB PCIe
    price_USD: 11000
    memory_GiB: 48
    pcie_gen: 4
    lanes: 16
    double_width: true
    fp32_TFLOPS: 91.6
    tf32_TFLOPS: 183
    mem_GBps: 864
    sources: "price: a quote for this test"
`), 0o644); err != nil {
		t.Fatal(err)
	}
	plan := filepath.Join(dir, "plan.json")
	if code, _, errOut := runCLI(t, "recommend", "--catalog", prices, "--gpu-model", "l40s-48gb-pcie", "--ssds", "4-12", "--budget", "90000", "--save", plan); code != 0 {
		t.Fatalf("recommend exit %d: %s", code, errOut)
	}
	p, err := tpc.LoadPlan(plan)
	if err != nil {
		t.Fatal(err)
	}
	if p.Hardware.GPUUSD != 11000 || p.Catalog == nil || !strings.Contains(p.CatalogSource, "prices.yaml") {
		t.Fatalf("plan: GPU at $%.0f, catalog kept %v, source %q: want the file's $11,000 kept with the plan", p.Hardware.GPUUSD, p.Catalog != nil, p.CatalogSource)
	}
	md := filepath.Join(dir, "r.md")
	if code, _, errOut := runCLI(t, "report", "--plan", plan, "--out", md); code != 0 {
		t.Fatalf("report exit %d: %s", code, errOut)
	}
	data, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	review := string(data)
	if want := "$" + tpc.FormatUSD(p.CostUSD); !strings.Contains(review, want) || !strings.Contains(review, "prices.yaml") || strings.Contains(review, "the built-in catalog |") {
		t.Errorf("review does not show the plan's %s TCO from prices.yaml:\n%s", want, review[:min(len(review), 3000)])
	}
	if strings.Contains(review, "not the plan's") {
		t.Errorf("review priced the plan again to another best option:\n%s", review[:min(len(review), 3000)])
	}
}
