package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/gnnplan/gnnplan/trainer/dataset"
)

func TestDatasetSynthWritesALoadableGraph(t *testing.T) {
	out := filepath.Join(t.TempDir(), "syn")
	code, stdout, errOut := runCLI(t, "dataset", "synth", "--out", out, "--nodes", "3000", "--edges", "20000", "--feature-dim", "8", "--classes", "4", "--seed", "7")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(stdout, "wrote "+out+": 3000 vertices") {
		t.Errorf("summary missing: %s", stdout)
	}
	// Not a terminal: one line per phase, with its size, and no bar.
	for _, want := range []string{"synth: drawing edges into 1 row buckets (20000)\n", "synth: sorting and deduplicating rows (", "synth: writing features, labels and splits (3000)\n"} {
		if strings.Count(errOut, want) != 1 {
			t.Errorf("stderr has %q %d times, want once:\n%s", want, strings.Count(errOut, want), errOut)
		}
	}
	if strings.Contains(errOut, "%") || strings.Contains(errOut, "\r") {
		t.Errorf("stderr has percentages or a bar, not one line per phase:\n%s", errOut)
	}
	g, err := dataset.LoadGraph(out)
	if err != nil {
		t.Fatal(err)
	}
	if g.Meta.NumNodes != 3000 || g.Meta.FeatureDim != 8 || g.Meta.NumClasses != 4 || len(g.Train) == 0 {
		t.Errorf("meta %+v", g.Meta)
	}
	code, _, errOut = runCLI(t, "dataset", "synth", "--out", out)
	if code != 2 || !strings.Contains(errOut, "already exists") {
		t.Errorf("second run into the same directory: exit %d, %q", code, errOut)
	}
	code, _, errOut = runCLI(t, "dataset", "synth", "--out", filepath.Join(t.TempDir(), "x"), "--nodes", "0")
	if code != 2 || !strings.Contains(errOut, "--nodes") {
		t.Errorf("zero nodes: exit %d, %q", code, errOut)
	}
}
