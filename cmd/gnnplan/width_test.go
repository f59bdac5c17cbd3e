package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gnnplan/gnnplan/internal/textout"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestOutputFitsHundredColumns is issue 34's line 4: with stdout not a
// terminal, every line of every command's tables and text fits 100
// columns, and the phase lines on stderr too; -o wide prints the whole
// table, the columns the default hid included.
func TestOutputFitsHundredColumns(t *testing.T) {
	dir := t.TempDir()
	data := synthData(t, dir, "--nodes", "3000", "--edges", "20000", "--feature-dim", "32", "--train-fraction", "0.2")
	plan := filepath.Join(dir, "plan.json")
	if code, _, errOut := runCLI(t, "recommend", "--dataset", data, "--gpus", "1", "--ssds", "2", "--save", plan); code != 0 {
		t.Fatalf("recommend: %s", errOut)
	}
	ssd := filepath.Join(dir, "ssd")
	os.Mkdir(ssd, 0o755)
	cases := []struct {
		args []string
		wide string // a header -o wide shows that the default hides; "" when none is hidden
	}{
		{[]string{"recommend", "--budget", "80000"}, ""},
		{[]string{"recommend", "--machine", filepath.Join(fixtureDir, "azure-ndv4-topo.xml"), "--dataset", data, "--ssds", "0"}, ""},
		{[]string{"placements", "--profile", "moment-b"}, "SATURATED"},
		{[]string{"validate"}, "WHERE"},
		{[]string{"discover", "--profile", "moment-b"}, ""},
		{[]string{"discover", "--profile", "moment-b", "-o", "tree"}, ""},
		{[]string{"dataset", "info", data}, ""},
		{[]string{"place", "--plan", plan, "--dataset", data, "--materialize", "--ssd-dir", ssd}, ""},
		{[]string{"materialize", "--dataset", data, "--verify"}, ""},
		{[]string{"train", "--dataset", data, "--epochs", "2"}, ""},
		{[]string{"version"}, ""},
	}
	for _, f := range []string{"aws-p4d-24xl-topo.xml", "oci-H100-topology.xml", "hwloc-nvidiaDGX2.xml", "rccl-topo_8p_rome_4n_1.xml", "stelline-puget-lspci-vvv.txt"} {
		cases = append(cases, struct {
			args []string
			wide string
		}{[]string{"discover", "--from", filepath.Join(fixtureDir, f)}, ""})
	}
	for _, tc := range cases {
		name := strings.Join(tc.args, " ")
		code, out, errOut := runCLI(t, tc.args...)
		if code != 0 {
			t.Errorf("gnnplan %s: exit %d: %s", name, code, errOut)
			continue
		}
		for _, l := range strings.Split(out, "\n") {
			if textout.Width(l) > textout.DefaultColumns {
				t.Errorf("gnnplan %s: a line of %d columns:\n%s", name, textout.Width(l), l)
			}
		}
		for _, l := range strings.Split(errOut, "\n") {
			if !strings.HasPrefix(l, "note:") && textout.Width(l) > textout.DefaultColumns {
				t.Errorf("gnnplan %s: a progress line of %d columns on stderr:\n%s", name, textout.Width(l), l)
			}
		}
		if tc.wide == "" {
			continue
		}
		if !strings.Contains(out, "-o wide shows") || strings.Contains(headerWith(out, "ERROR", "EPOCH IO"), tc.wide) {
			t.Errorf("gnnplan %s: want %s hidden and a line on -o wide:\n%s", name, tc.wide, out)
		}
		code, out, errOut = runCLI(t, append(tc.args, "-o", "wide")...)
		if code != 0 || !strings.Contains(out, tc.wide) || strings.Contains(out, "-o wide shows") {
			t.Errorf("gnnplan %s -o wide: exit %d (%s), want the %s column:\n%s", name, code, errOut, tc.wide, out)
		}
	}
}

// headerWith is the first line of out holding one of words: a table's
// header.
func headerWith(out string, words ...string) string {
	for _, l := range strings.Split(out, "\n") {
		n := 0
		for _, w := range words {
			if strings.Contains(l, w) {
				n++
			}
		}
		if n > 0 {
			return l
		}
	}
	return ""
}

// TestFlagHelpIsOneLine: every flag's help, on every command, fits one
// line of 120 columns, so --help reads as a list (details go in the
// command's long help and docs/guide.md).
func TestFlagHelpIsOneLine(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if n := len([]rune(f.Usage)); n > 120 || strings.Contains(f.Usage, "\n") {
				t.Errorf("%s --%s: help of %d characters, want one line of at most 120: %q", c.CommandPath(), f.Name, n, f.Usage)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd(&deps{Out: io.Discard, Err: io.Discard}))
}
