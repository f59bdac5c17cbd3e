package main

import (
	"strings"
	"testing"
)

// TestUnknownCommandExitsTwo: an unknown command is a usage error like an
// unknown flag: exit 2 and one line naming the valid commands, with a
// suggestion for a near miss; no command prints the help and exits 0
// (issue 34, finding 7).
func TestUnknownCommandExitsTwo(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"foo"}, `unknown command "foo": valid: catalog, completion, dataset, discover`},
		{[]string{"recomend"}, "did you mean recommend?"},
		{[]string{"recommend", "--nosuchflag"}, "unknown flag: --nosuchflag"},
	} {
		code, _, errOut := runCLI(t, tc.args...)
		if code != 2 || !strings.Contains(errOut, tc.want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("gnnplan %s: exit %d, %q; want exit 2 and one line saying %q", strings.Join(tc.args, " "), code, errOut, tc.want)
		}
	}
	if code, out, _ := runCLI(t); code != 0 || !strings.Contains(out, "Available Commands") {
		t.Errorf("gnnplan alone: exit %d, want the help and 0", code)
	}
}

// TestCompletionOffersValues: shell completion offers the built-in
// profiles, workloads, catalog models and -o's formats on every command
// (issue 34, finding 7); --out, a file, completes files.
func TestCompletionOffersValues(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"__complete", "recommend", "--profile", ""}, []string{"moment-b", "hyperion-a"}},
		{[]string{"__complete", "placements", "--profile", ""}, []string{"moment-a"}},
		{[]string{"__complete", "recommend", "--workload", ""}, []string{"igb-hom", "ogbn-papers100M"}},
		{[]string{"__complete", "recommend", "--gpu-model", ""}, []string{"l40s-48gb-pcie"}},
		{[]string{"__complete", "recommend", "--ssd-model", ""}, []string{"p5510-3.84tb"}},
		{[]string{"__complete", "discover", "-o", ""}, []string{"table", "wide", "tree", "json", "dot"}},
		{[]string{"__complete", "recommend", "-o", ""}, []string{"table", "wide", "json"}},
		{[]string{"__complete", "report", "-o", ""}, []string{"html", "md"}},
		{[]string{"__complete", "catalog", "-o", ""}, []string{"yaml", "json"}},
	} {
		code, out, errOut := runCLI(t, tc.args...)
		for _, w := range tc.want {
			if code != 0 || !strings.Contains(out, w+"\n") {
				t.Errorf("gnnplan %s: exit %d, %q (%s); want %q offered", strings.Join(tc.args, " "), code, out, errOut, w)
			}
		}
	}
	if _, out, _ := runCLI(t, "__complete", "report", "--out", ""); strings.Contains(out, "table") {
		t.Errorf("report --out names a file, completion offered formats: %q", out)
	}
}
