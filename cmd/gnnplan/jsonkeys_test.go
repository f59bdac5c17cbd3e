package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// jsonUnits are the unit words a JSON key may end a part with, written as
// the unit is (docs/json.md); every other part is lower-case.
var jsonUnits = map[string]bool{"GB": true, "GBps": true, "GiB": true, "MiB": true, "USD": true, "TFLOPS": true,
	"GFLOPS": true, "GFLOP": true, "IOPS": true, "W": true, "kW": true, "kWh": true}

// keyStyleOK reports whether a JSON key is snake_case words and units,
// a unit never spelled another way (cost_usd, demand_gb).
func keyStyleOK(k string) bool {
	for _, part := range strings.Split(k, "_") {
		if part == "" {
			return false
		}
		if jsonUnits[part] {
			continue
		}
		if strings.ToLower(part) != part {
			return false
		}
		for u := range jsonUnits {
			if strings.ToLower(u) == part {
				return false
			}
		}
	}
	return true
}

// jsonKeys collects every object key in v, with its path.
func jsonKeys(v any, path string, out map[string]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			out[k] = path + "." + k
			jsonKeys(e, path+"."+k, out)
		}
	case []any:
		for _, e := range x {
			jsonKeys(e, path+"[]", out)
		}
	}
}

// TestJSONKeysOneStyle is issue 34's finding 7 on JSON: every document
// the commands write (plan, machine, placements, validation, dataset,
// training report, catalog) spells its keys one way: snake_case words,
// units as they are written (cost_USD, demand_GB, memory_GiB).
func TestJSONKeysOneStyle(t *testing.T) {
	dir := t.TempDir()
	data := synthData(t, dir, "--nodes", "2000", "--edges", "12000", "--feature-dim", "16")
	for _, args := range [][]string{
		{"recommend", "--budget", "80000", "-o", "json"},
		{"discover", "--profile", "moment-b", "-o", "json"},
		{"discover", "--from", filepath.Join(fixtureDir, "oci-H100-topology.xml"), "-o", "json"},
		{"placements", "--profile", "moment-a", "-o", "json"},
		{"validate", "-o", "json"},
		{"dataset", "info", data, "-o", "json"},
		{"train", "--dataset", data, "--epochs", "1", "-o", "json"},
		{"catalog", "-o", "json"},
	} {
		code, out, errOut := runCLI(t, args...)
		if code != 0 {
			t.Errorf("gnnplan %s: exit %d: %s", strings.Join(args, " "), code, errOut)
			continue
		}
		var v any
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Errorf("gnnplan %s: not JSON: %v", strings.Join(args, " "), err)
			continue
		}
		keys := map[string]string{}
		jsonKeys(v, "", keys)
		for k, where := range keys {
			if !keyStyleOK(k) && !strings.Contains(where, ".devices.") && !strings.Contains(where, ".where.") && !strings.Contains(where, "per_gpu_GBps.") {
				t.Errorf("gnnplan %s: key %q at %s is not snake_case with units as written", strings.Join(args, " "), k, where)
			}
		}
	}
}
