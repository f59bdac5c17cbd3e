package profiles

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/gnnplan/gnnplan/topology"
)

const catalogDir = "testdata/catalog"

func TestDefaultCatalogValidates(t *testing.T) {
	c := DefaultCatalog()
	if err := c.Validate(); err != nil {
		t.Fatalf("DefaultCatalog does not validate: %v", err)
	}
	for _, g := range c.GPUs {
		if !strings.Contains(g.Sources, "price:") || !strings.Contains(g.Sources, "rates:") {
			t.Errorf("GPU %s: Sources does not say where the price and the rates come from: %q", g.Key, g.Sources)
		}
	}
	for _, s := range c.SSDs {
		if !strings.Contains(s.Sources, "price:") || !strings.Contains(s.Sources, "rates:") {
			t.Errorf("SSD %s: Sources does not say where the price and the rates come from: %q", s.Key, s.Sources)
		}
	}
	if c.Host.Sources == "" {
		t.Error("host costs have no Sources")
	}
}

func TestMachineProfilesUseCatalogParts(t *testing.T) {
	c := DefaultCatalog()
	for _, name := range MachineNames() {
		m, err := Machine(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, kind := range []topology.Kind{topology.KindGPU, topology.KindNVMe} {
			for _, n := range m.NodesOfKind(kind) {
				var err error
				if kind == topology.KindGPU {
					_, err = c.GPU(n.Model)
				} else {
					_, err = c.SSD(n.Model)
				}
				if err != nil {
					t.Errorf("%s: device %s: %v", name, n.ID, err)
				}
			}
		}
	}
}

func TestTCOReproducesThePapers(t *testing.T) {
	c := DefaultCatalog()
	part := func(gpu, ssd string) (float64, float64) {
		t.Helper()
		g, err := c.GPU(gpu)
		if err != nil {
			t.Fatal(err)
		}
		ssdUSD := 0.0
		if ssd != "" {
			s, err := c.SSD(ssd)
			if err != nil {
				t.Fatal(err)
			}
			ssdUSD = s.PriceUSD
		}
		return g.PriceUSD, ssdUSD
	}
	cases := []struct {
		name           string
		gpu, ssd       string
		nGPU, nSSD     int
		machines       int
		want           float64
		paperReference string
	}{
		{"Hyperion machine A: 1 A100 80GB + 12 P5510", ModelA100_80GBPCIe, ModelP5510_3_84TB, 1, 12, 1, 48971, "Hyperion Table I"},
		{"Hyperion machine B: 1 H800 + 12 P5510", "h800-80gb-pcie", ModelP5510_3_84TB, 1, 12, 1, 78794, "Hyperion Table I"},
		{"Hyperion cluster C node: 1 A100 80GB, no SSD", ModelA100_80GBPCIe, "", 1, 0, 1, 45275, "Hyperion Table I ($45,275 x 8)"},
		{"Moment machine A/B: 4 A100 40GB + 8 P5510", ModelA100_40GBPCIe, ModelP5510_3_84TB, 4, 8, 1, 90270, "Moment section 4"},
		{"Moment 4-node cluster C", ModelA100_80GBPCIe, "", 1, 0, 4, 181100, "Moment section 4"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			gpuUSD, ssdUSD := part(tc.gpu, tc.ssd)
			got := c.Host.TCOUSD(gpuUSD, tc.nGPU, ssdUSD, tc.nSSD) * float64(tc.machines)
			if got != tc.want {
				t.Errorf("TCO = $%.0f, want $%.0f (%s)", got, tc.want, tc.paperReference)
			}
		})
	}
}

func TestHyperionRoundsElectricity(t *testing.T) {
	h := DefaultCatalog().Host
	if got := electricityUSD(h.PowerKW, h.USDPerKWh, h.Years); math.Abs(got-17520) > 1e-6 {
		t.Errorf("4 kW x $0.10/kWh x 5 years = $%.2f, want $17,520", got)
	}
	if h.ElectricityUSD != 17000 {
		t.Errorf("default electricity $%.0f, want Hyperion's stated $17,000", h.ElectricityUSD)
	}
}

func TestUnknownModelKeyListsKnownKeys(t *testing.T) {
	c := DefaultCatalog()
	cases := []struct {
		name   string
		lookup func() error
		want   []string
	}{
		{"unknown GPU", func() error { _, err := c.GPU("h200-141gb"); return err },
			[]string{`unknown GPU model "h200-141gb"`, ModelA100_40GBPCIe, ModelA100_80GBPCIe, "h100-80gb-pcie", "h800-80gb-pcie", "l40s-48gb-pcie"}},
		{"unknown SSD", func() error { _, err := c.SSD("p5520-7.68tb"); return err },
			[]string{`unknown SSD model "p5520-7.68tb"`, ModelP5510_3_84TB, "980pro-1tb", "pm1743-3.84tb"}},
		{"nil catalog", func() error { var nc *Catalog; _, err := nc.GPU("x"); return err },
			[]string{"known: none"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.lookup()
			if !topology.IsBadInput(err) {
				t.Fatalf("error %v is not a bad-input error", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestModelLookupForgivesCaseAndSpaces(t *testing.T) {
	g, err := DefaultCatalog().GPU(" A100-80GB-PCIe ")
	if err != nil || g.Key != ModelA100_80GBPCIe {
		t.Fatalf("GPU(\" A100-80GB-PCIe \") = %q, %v", g.Key, err)
	}
}

func TestOverrideFilesMergeOverDefaults(t *testing.T) {
	def := DefaultCatalog()
	cases := []struct {
		file        string
		changedGPU  string
		gpuPrice    float64
		changedSSD  string
		ssdPrice    float64
		wantHost    HostCost // numeric fields only
		wantNumSSDs int
		wantLastGPU string
		wantNumGPUs int
		wantTCOAUSD float64 // machine A (1 A100 80GB + 12 P5510) priced with the merged catalog
	}{
		{
			file: "override.yaml", changedGPU: ModelA100_80GBPCIe, gpuPrice: 9500,
			changedSSD: ModelP5510_3_84TB, ssdPrice: 308,
			// USD_per_kWh alone: electricity recomputed, 4 kW x $0.20 x 8,760 h x 5.
			wantHost:    HostCost{MachineUSD: 14098, ElectricityUSD: 35040, PowerKW: 4, USDPerKWh: 0.20, Years: 5, MemoryGiB: 768, BasePowerW: 700, PSUW: 4000},
			wantNumGPUs: len(def.GPUs) + 1, wantLastGPU: "rtx6000ada-48gb-pcie", wantNumSSDs: len(def.SSDs),
			wantTCOAUSD: 14098 + 9500 + 12*308 + 35040,
		},
		{
			file: "override.json", changedGPU: "h100-80gb-pcie", gpuPrice: 25000,
			changedSSD: ModelP5510_3_84TB, ssdPrice: 280,
			wantHost:    HostCost{MachineUSD: 20000, ElectricityUSD: 9000, PowerKW: 4, USDPerKWh: 0.10, Years: 5, MemoryGiB: 768, BasePowerW: 700, PSUW: 4000},
			wantNumGPUs: len(def.GPUs) + 1, wantLastGPU: "rtx6000ada-48gb-pcie", wantNumSSDs: len(def.SSDs),
			wantTCOAUSD: 20000 + 14177 + 12*280 + 9000,
		},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			c, err := LoadCatalog(filepath.Join(catalogDir, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Validate(); err != nil {
				t.Fatalf("merged catalog does not validate: %v", err)
			}
			g, err := c.GPU(tc.changedGPU)
			if err != nil || g.PriceUSD != tc.gpuPrice {
				t.Errorf("GPU %s price = %v (%v), want %v", tc.changedGPU, g.PriceUSD, err, tc.gpuPrice)
			}
			if want := def.GPUs[indexOfGPU(def, tc.changedGPU)]; g.Sources == want.Sources {
				t.Errorf("GPU %s kept the default Sources: an override must replace the entry wholesale", tc.changedGPU)
			}
			s, err := c.SSD(tc.changedSSD)
			if err != nil || s.PriceUSD != tc.ssdPrice {
				t.Errorf("SSD %s price = %v (%v), want %v", tc.changedSSD, s.PriceUSD, err, tc.ssdPrice)
			}
			if len(c.GPUs) != tc.wantNumGPUs || c.GPUs[len(c.GPUs)-1].Key != tc.wantLastGPU {
				t.Errorf("GPUs = %v, want %d with %s added last", gpuKeys(c), tc.wantNumGPUs, tc.wantLastGPU)
			}
			for i, dg := range def.GPUs {
				if c.GPUs[i].Key != dg.Key {
					t.Errorf("GPU %d is %s, want the default order kept (%s)", i, c.GPUs[i].Key, dg.Key)
				}
				if dg.Key != tc.changedGPU && !reflect.DeepEqual(c.GPUs[i], dg) {
					t.Errorf("GPU %s changed though the file does not name it", dg.Key)
				}
			}
			if len(c.SSDs) != tc.wantNumSSDs {
				t.Errorf("%d SSDs, want %d", len(c.SSDs), tc.wantNumSSDs)
			}
			got := c.Host
			got.Sources = ""
			if math.Abs(got.ElectricityUSD-tc.wantHost.ElectricityUSD) < 1e-6 {
				got.ElectricityUSD = tc.wantHost.ElectricityUSD
			}
			if got != tc.wantHost {
				t.Errorf("host = %+v, want %+v", got, tc.wantHost)
			}
			a80, _ := c.GPU(ModelA100_80GBPCIe)
			p5510, _ := c.SSD(ModelP5510_3_84TB)
			if tco := c.Host.TCOUSD(a80.PriceUSD, 1, p5510.PriceUSD, 12); math.Abs(tco-tc.wantTCOAUSD) > 1e-6 {
				t.Errorf("machine A TCO with the override = $%.2f, want $%.2f", tco, tc.wantTCOAUSD)
			}
		})
	}
}

func indexOfGPU(c *Catalog, key string) int {
	for i, g := range c.GPUs {
		if g.Key == key {
			return i
		}
	}
	return -1
}

func gpuKeys(c *Catalog) []string {
	var keys []string
	for _, g := range c.GPUs {
		keys = append(keys, g.Key)
	}
	return keys
}

func TestCatalogFilesAreRefused(t *testing.T) {
	cases := []struct {
		name     string
		file     string
		wantLine int // 0: the decoder gives none
		want     []string
	}{
		{"missing price names the entry", "missing-price.yaml", 13, []string{"gpus[1] (l4-24gb-pcie): price_USD missing or not > 0"}},
		{"missing SSD price names the entry", "missing-price.json", 4, []string{"ssds[0] (pm9a3-3.84tb): price_USD missing or not > 0"}},
		{"wrong schema version (JSON)", "wrong-version.json", 1, []string{"schema_version", "2 is not supported"}},
		{"wrong schema version (YAML)", "wrong-version.yaml", 2, []string{"schema_version", "3 is not supported"}},
		{"no schema version", "no-version.yaml", 0, []string{"schema_version", "missing"}},
		{"unknown field (JSON)", "unknown-field.json", 4, []string{"price_usd_typo", "unknown field"}},
		{"unknown field (YAML)", "unknown-field.yaml", 9, []string{"read_GBs", "unknown field"}},
		{"garbage JSON", "garbage.json", 1, []string{"malformed JSON"}},
		{"garbage YAML", "garbage.yaml", 2, []string{"malformed YAML"}},
		{"binary garbage", "garbage.bin", 0, []string{"YAML"}},
		{"truncated JSON", "truncated.json", 0, []string{"truncated JSON"}},
		{"truncated YAML drops a new entry's required fields", "truncated-new-key.yaml", 16, []string{"gpus[1] (rtx6000ada-48gb-pcie):"}},
		{"truncated YAML string", "truncated-string.yaml", 4, []string{"malformed YAML"}},
		{"duplicate key in one file", "duplicate-key.yaml", 11, []string{"ssds[1] (p5510-3.84tb): key repeats ssds[0]"}},
		{"lanes out of range", "bad-lanes.json", 4, []string{"ssds[0] (p5510-3.84tb): lanes 64 is not a PCIe link width"}},
		{"number with a thousands comma", "wrong-type.yaml", 5, []string{"where a number is expected"}},
		{"negative electricity", "negative-host.yaml", 2, []string{"host: electricity_USD is negative"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(catalogDir, tc.file)
			c, err := LoadCatalog(path)
			if err == nil {
				t.Fatalf("accepted: %d GPUs", len(c.GPUs))
			}
			checkInputError(t, err, path, tc.wantLine, tc.want)
		})
	}
}

// checkInputError checks err is a bad-input *topology.InputError naming
// path (and line, when wantLine > 0) and saying each of want.
func checkInputError(t *testing.T, err error, path string, wantLine int, want []string) {
	t.Helper()
	if !topology.IsBadInput(err) {
		t.Fatalf("error %v is not a bad-input error", err)
	}
	var ie *topology.InputError
	if !errors.As(err, &ie) {
		t.Fatalf("error %T is not a *topology.InputError", err)
	}
	if ie.Path != path {
		t.Errorf("error path %q, want %q", ie.Path, path)
	}
	if wantLine > 0 && ie.Line != wantLine {
		t.Errorf("error line %d, want %d (%v)", ie.Line, wantLine, err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
}

func TestParseCatalogRefusesBadInput(t *testing.T) {
	cases := []struct {
		name     string
		path     string
		data     string
		wantLine int
		want     []string
	}{
		{"empty file", "c.yaml", "", 0, []string{"empty catalog file"}},
		{"only whitespace", "c.json", " \n\t\n", 0, []string{"empty catalog file"}},
		{"only comments", "c.yaml", "# nothing yet\n", 0, []string{"only comments"}},
		{"JSON array", "c.json", `[{"schema_version": 1}]`, 1, []string{"array where a catalog object is expected"}},
		{"YAML list", "c.yaml", "- schema_version: 1\n", 1, []string{"where a mapping is expected"}},
		{"two JSON values", "c.json", "{\"schema_version\": 1}\n{}\n", 2, []string{"after top-level value"}},
		{"two YAML documents", "c.yaml", "schema_version: 1\n---\nschema_version: 1\n", 2, []string{"more than one YAML document"}},
		{"NaN price", "c.yaml", "schema_version: 1\nssds:\n  - {key: x, price_USD: .nan, capacity_GB: 1, pcie_gen: 4, lanes: 4, read_GBps: 1, rand_read_4k_IOPS: 1}\n", 3, []string{"ssds[0] (x): price_USD missing or not > 0"}},
		{"infinite rate", "c.yaml", "schema_version: 1\nssds:\n  - {key: x, price_USD: 1, capacity_GB: 1, pcie_gen: 4, lanes: 4, read_GBps: .inf, rand_read_4k_IOPS: 1}\n", 3, []string{"read_GBps missing or not > 0"}},
		{"key with capitals and spaces", "c.yaml", "schema_version: 1\ngpus:\n  - key: A100 80GB\n", 3, []string{`key "A100 80GB"`, `"a100-80gb"`}},
		{"missing key", "c.json", "{\"schema_version\": 1,\n \"gpus\": [\n  {\"price_USD\": 1}]}", 3, []string{"gpus[0]: key missing"}},
		{"zero years", "c.yaml", "schema_version: 1\nhost:\n  years: 0\n", 2, []string{"host: years missing or not > 0"}},
		{"pcie gen 9", "c.yaml", "schema_version: 1\ngpus:\n  - {key: x, price_USD: 1, memory_GiB: 1, pcie_gen: 9, lanes: 16, fp32_TFLOPS: 1, tf32_TFLOPS: 1, mem_GBps: 1}\n", 3, []string{"pcie_gen 9 is not a PCIe generation"}},
		{"no TF32 rate", "c.yaml", "schema_version: 1\ngpus:\n  - {key: v100, price_USD: 1, memory_GiB: 16, pcie_gen: 3, lanes: 16, fp32_TFLOPS: 14, mem_GBps: 900}\n", 3, []string{"tf32_TFLOPS", "give its FP32 rate"}},
		{"string schema version", "c.json", `{"schema_version": "1"}`, 1, []string{"schema_version", "string"}},
		{"lanes as fraction", "c.json", `{"schema_version": 1, "ssds": [{"key": "x", "lanes": 4.5}]}`, 1, []string{"lanes", "whole number"}},
		{"unknown host field", "c.yaml", "schema_version: 1\nhost:\n  electricity_usd: 1\n", 3, []string{"electricity_usd", "unknown field"}},
		{"duplicate YAML mapping key", "c.yaml", "schema_version: 1\nschema_version: 1\n", 2, []string{"already defined"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseCatalog(tc.path, []byte(tc.data))
			if err == nil {
				t.Fatalf("accepted: %d GPUs", len(c.GPUs))
			}
			checkInputError(t, err, tc.path, tc.wantLine, tc.want)
		})
	}
}

func TestCatalogFormatFollowsExtensionThenContent(t *testing.T) {
	dir := t.TempDir()
	jsonText := `{"schema_version": 1, "host": {"machine_USD": 15000}}`
	yamlText := "schema_version: 1\nhost:\n  machine_USD: 15000\n"
	cases := []struct{ name, file, text string }{
		{"JSON without an extension", "catalog", jsonText},
		{"YAML without an extension", "catalog", yamlText},
		{"YAML with .yml", "catalog.yml", yamlText},
		{"JSON with a BOM", "catalog.json", "\xef\xbb\xbf" + jsonText},
		{"JSON inside a .yaml file (YAML is a superset)", "catalog.yaml", jsonText},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.file)
			if err := os.WriteFile(path, []byte(tc.text), 0o644); err != nil {
				t.Fatal(err)
			}
			c, err := LoadCatalog(path)
			if err != nil {
				t.Fatal(err)
			}
			if c.Host.MachineUSD != 15000 || c.Host.ElectricityUSD != 17000 {
				t.Errorf("host = %+v, want machine $15,000 and the default electricity", c.Host)
			}
		})
	}
}

func TestLoadCatalogMissingFileIsBadInput(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nope.yaml")
	_, err := LoadCatalog(path)
	checkInputError(t, err, path, 0, []string{"cannot read catalog file"})
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("error %v does not wrap os.ErrNotExist", err)
	}
}

func TestValidateNamesEntryAndField(t *testing.T) {
	cases := []struct {
		name string
		edit func(c *Catalog)
		want string
	}{
		{"GPU price zero", func(c *Catalog) { c.GPUs[2].PriceUSD = 0 }, "gpus[2] (h800-80gb-pcie): price_USD missing or not > 0"},
		{"SSD IOPS negative", func(c *Catalog) { c.SSDs[1].RandReadIOPS = -1 }, "ssds[1] (980pro-1tb): rand_read_4k_IOPS missing or not > 0"},
		{"GPU lanes zero", func(c *Catalog) { c.GPUs[0].Lanes = 0 }, "gpus[0] (a100-40gb-pcie): lanes 0 is not a PCIe link width"},
		{"duplicate GPU key", func(c *Catalog) { c.GPUs[3].Key = c.GPUs[1].Key }, "gpus[3] (a100-80gb-pcie): key repeats gpus[1]"},
		{"no GPUs", func(c *Catalog) { c.GPUs = nil }, "gpus: empty"},
		{"wrong schema version", func(c *Catalog) { c.SchemaVersion = 0 }, "schema_version: 0 is not supported"},
		{"host memory zero", func(c *Catalog) { c.Host.MemoryGiB = 0 }, "host: memory_GiB missing or not > 0"},
		{"host machine price NaN", func(c *Catalog) { c.Host.MachineUSD = math.NaN() }, "host: machine_USD is not a finite number"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultCatalog()
			tc.edit(c)
			err := c.Validate()
			if !topology.IsBadInput(err) {
				t.Fatalf("Validate() = %v, want a bad-input error", err)
			}
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("Validate() = %q, want it to start %q", err, tc.want)
			}
		})
	}
}

func TestDefaultCatalogReturnsIndependentCopies(t *testing.T) {
	a, b := DefaultCatalog(), DefaultCatalog()
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two DefaultCatalog calls differ")
	}
	a.GPUs[0].PriceUSD = 1
	a.GPUs = append(a.GPUs[:1], a.GPUs[2:]...)
	a.SSDs[0].Key = "changed"
	a.Host.MachineUSD = 1
	if c := DefaultCatalog(); !reflect.DeepEqual(b, c) {
		t.Error("editing one DefaultCatalog changed another")
	}
}

func TestDefaultCatalogRoundTripsThroughFiles(t *testing.T) {
	for _, tc := range []struct {
		name    string
		path    string
		marshal func(any) ([]byte, error)
	}{
		{"JSON", "default.json", json.Marshal},
		{"YAML", "default.yaml", yaml.Marshal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, err := tc.marshal(DefaultCatalog())
			if err != nil {
				t.Fatal(err)
			}
			c, err := ParseCatalog(tc.path, data)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(c, DefaultCatalog()) {
				t.Error("parsing the marshalled default catalog does not give it back")
			}
		})
	}
}

// FuzzParseCatalog checks ParseCatalog never panics, that what it accepts
// validates, and that what it accepts survives a JSON round trip.
func FuzzParseCatalog(f *testing.F) {
	files, err := filepath.Glob(filepath.Join(catalogDir, "*"))
	if err != nil {
		f.Fatal(err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, filepath.Ext(file))
	}
	for _, m := range []struct {
		ext     string
		marshal func(any) ([]byte, error)
	}{{".json", json.Marshal}, {".yaml", yaml.Marshal}} {
		data, err := m.marshal(DefaultCatalog())
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, m.ext)
		f.Add(data, "")
	}
	f.Fuzz(func(t *testing.T, data []byte, ext string) {
		path := "fuzz" + ext
		c, err := ParseCatalog(path, data)
		if err != nil {
			var ie *topology.InputError
			if !errors.As(err, &ie) || ie.Path != path {
				t.Fatalf("error %v is not an InputError naming %q", err, path)
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("accepted a catalog that does not validate: %v", err)
		}
		out, err := json.Marshal(c)
		if err != nil {
			t.Fatalf("accepted catalog does not marshal: %v", err)
		}
		again, err := ParseCatalog("again.json", out)
		if err != nil {
			t.Fatalf("accepted catalog does not parse back: %v\n%s", err, out)
		}
		if !reflect.DeepEqual(c, again) {
			t.Fatalf("JSON round trip changed the catalog:\n%+v\n%+v", c, again)
		}
	})
}

// TestPriceOnlyOverride: an entry for a built-in key may give its price
// alone (YAML or JSON): the other fields stay the built-in entry's, and a
// new key must still be complete (issue 34, finding 7).
func TestPriceOnlyOverride(t *testing.T) {
	builtIn, _ := DefaultCatalog().GPU("l40s-48gb-pcie")
	for name, text := range map[string]string{
		"prices.yaml": "schema_version: 1\ngpus:\n  - key: l40s-48gb-pcie\n    price_USD: 11000\n",
		"prices.json": `{"schema_version": 1, "gpus": [{"key": "l40s-48gb-pcie", "price_USD": 11000}]}`,
	} {
		c, err := ParseCatalog(name, []byte(text))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		g, _ := c.GPU("l40s-48gb-pcie")
		want := builtIn
		want.PriceUSD = 11000
		if g != want {
			t.Errorf("%s: %+v, want the built-in entry at $11,000", name, g)
		}
	}
	if _, err := ParseCatalog("new.yaml", []byte("schema_version: 1\ngpus:\n  - key: my-gpu\n    price_USD: 1000\n")); err == nil || !strings.Contains(err.Error(), "my-gpu") {
		t.Errorf("a new key with a price alone: %v, want it refused naming the entry", err)
	}
}
