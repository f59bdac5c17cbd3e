// Package coraset imports the bundled Cora (package testcora) as a
// dataset directory, for tests of packages above package dataset (whose
// own tests cannot import this one).
package coraset

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/gnnplan/gnnplan/trainer/dataset"
	"github.com/gnnplan/gnnplan/trainer/internal/testcora"
)

// Dir imports the bundled Cora with its Planetoid split into a temporary
// dataset directory and returns it; the test is skipped when the archive
// is absent.
func Dir(t testing.TB) string {
	t.Helper()
	dir := testcora.Unpack(t)
	if dir == "" {
		t.Skip("the bundled copy of Cora is not here")
	}
	src := filepath.Join(dir, "cora")
	out := filepath.Join(t.TempDir(), "cora")
	if _, err := dataset.ImportLINQS(context.Background(), src, out, dataset.ImportOptions{SplitFile: filepath.Join(src, "planetoid_split_linqs_ids.tsv")}); err != nil {
		t.Fatal(err)
	}
	return out
}
