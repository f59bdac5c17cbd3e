package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gnnplan/gnnplan/profiles"
)

// TestCatalogPrintsAFileToStartFrom: `gnnplan catalog` prints the built-in
// catalog as a --catalog file that reads back to the same catalog; with a
// price-only override it shows the new price; a bad -o exits 2 (issue 34,
// finding 7).
func TestCatalogPrintsAFileToStartFrom(t *testing.T) {
	code, out, errOut := runCLI(t, "catalog")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	back, err := profiles.ParseCatalog("printed.yaml", []byte(out))
	if err != nil {
		t.Fatalf("the printed catalog does not read back: %v", err)
	}
	if !reflect.DeepEqual(back, profiles.DefaultCatalog()) {
		t.Error("the printed catalog reads back to another catalog")
	}
	prices := filepath.Join(t.TempDir(), "prices.yaml")
	if err := os.WriteFile(prices, []byte("schema_version: 1\ngpus:\n  - key: l40s-48gb-pcie\n    price_USD: 11000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runCLI(t, "catalog", "--catalog", prices, "-o", "json")
	if code != 0 || !strings.Contains(out, `"price_USD": 11000`) || !strings.Contains(out, `"memory_GiB": 48`) {
		t.Errorf("catalog --catalog prices.yaml -o json: exit %d, %s%s", code, out[:min(len(out), 400)], errOut)
	}
	if code, _, errOut := runCLI(t, "catalog", "-o", "xml"); code != 2 || !strings.Contains(errOut, "valid: yaml, json") {
		t.Errorf("-o xml: exit %d, %q", code, errOut)
	}
}
