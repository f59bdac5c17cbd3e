package tpc

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadPlanDamaged: a plan that is not what recommend writes is refused
// with one line naming the file, the field (and line where JSON says it)
// and what would be valid, never accepted with a workload of zeros.
func TestLoadPlanDamaged(t *testing.T) {
	rec := recommend(t, request(t, "moment-b", "igb-hom", 80000))
	dir := t.TempDir()
	good := filepath.Join(dir, "plan.json")
	if err := WritePlan(good, rec.Plan()); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(good)
	edit := func(f func(m map[string]any)) string {
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		f(m)
		b, _ := json.MarshalIndent(m, "", "  ")
		return string(b)
	}
	workload := func(m map[string]any) map[string]any { return m["workload"].(map[string]any) }
	cases := []struct {
		name, text, want string
	}{
		{"empty file", "", "malformed JSON"},
		{"cut short", string(data[:len(data)/2]), "malformed JSON"},
		{"a list", "[1, 2]", "not a plan: the file holds a JSON array"},
		{"a number", "42", "not a plan: the file holds a JSON number"},
		{"a newer schema", edit(func(m map[string]any) { m["schema_version"] = 4 }), "schema_version: want 3"},
		{"an older gnnplan's plan", edit(func(m map[string]any) { m["schema_version"] = 2 }), "schema_version: 2: a plan an older gnnplan wrote; run gnnplan recommend again"},
		{"no workload", edit(func(m map[string]any) { delete(m, "workload") }), "workload.vertices: must be at least 1"},
		{"vertices as text", edit(func(m map[string]any) { workload(m)["vertices"] = "many" }), "workload.vertices: a JSON string where the plan wants a number"},
		{"negative fanout", edit(func(m map[string]any) { workload(m)["fanouts"] = []int{25, -3} }), "workload.fanouts: hop 2"},
		{"train fraction in percent", edit(func(m map[string]any) { workload(m)["train_fraction"] = 50 }), "workload.train_fraction"},
		{"machine as a list", edit(func(m map[string]any) { m["machine"] = []int{1} }), "machine: a JSON array where the plan wants an object"},
		{"no machine", edit(func(m map[string]any) { delete(m, "machine") }), "machine: missing"},
		{"a catalog price below zero", edit(func(m map[string]any) {
			m["catalog"].(map[string]any)["gpus"].([]any)[0].(map[string]any)["price_USD"] = -1
		}), "catalog.gpus[0]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, "bad.json")
			os.WriteFile(path, []byte(c.text), 0o644)
			_, err := LoadPlan(path)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), path) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("LoadPlan = %v; want one line starting with the path and saying %q", err, c.want)
			}
		})
	}
	if _, err := LoadPlan(good); err != nil {
		t.Fatalf("the plan recommend wrote: %v", err)
	}
}

// FuzzLoadPlan reads plan.json files that are anything: refused with an
// error or read, never a panic.
func FuzzLoadPlan(f *testing.F) {
	rec := recommend(f, request(f, "moment-b", "igb-hom", 80000))
	seed := filepath.Join(f.TempDir(), "plan.json")
	if err := WritePlan(seed, rec.Plan()); err != nil {
		f.Fatal(err)
	}
	data, err := os.ReadFile(seed)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add([]byte(`{"schema_version": 1}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "plan.json")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if p, err := LoadPlan(path); err == nil && (p.Machine == nil || p.Workload.Validate() != nil) {
			t.Fatalf("LoadPlan accepted a plan without a valid machine and workload")
		}
	})
}
