package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReportWritesHTMLAndMarkdown: recommend, then report, as the README
// shows: one HTML file, or Markdown with its three figures beside it.
func TestReportWritesHTMLAndMarkdown(t *testing.T) {
	dir := t.TempDir()
	plan := filepath.Join(dir, "plan.json")
	if code, _, errOut := runCLI(t, "recommend", "--budget", "80000", "-o", plan); code != 0 {
		t.Fatalf("recommend exit %d: %s", code, errOut)
	}
	html := filepath.Join(dir, "review.html")
	code, out, errOut := runCLI(t, "report", "--plan", plan, "-o", html)
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
	if code, _, errOut := runCLI(t, "report", "--plan", plan, "-o", md); code != 0 {
		t.Fatalf("report -o md exit %d: %s", code, errOut)
	}
	for _, f := range []string{"review.md", "review-topology.svg", "review-ssds.svg", "review-gpus.svg"} {
		if st, err := os.Stat(filepath.Join(dir, "wiki", f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
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
		{"no plan", []string{"report", "-o", "r.html"}, "--plan"},
		{"no output", []string{"report", "--plan", notPlan}, "-o/--output"},
		{"unknown format", []string{"report", "--plan", notPlan, "-o", "r.pdf"}, ".html or .md"},
		{"missing plan file", []string{"report", "--plan", filepath.Join(dir, "none.json"), "-o", filepath.Join(dir, "r.html")}, "none.json"},
		{"a plan without a machine", []string{"report", "--plan", notPlan, "-o", filepath.Join(dir, "r.html")}, "x.json"},
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
