package profiles

import "testing"

// TestGPUForDriverName matches the names NVIDIA's driver gives real cards
// (nvidia-smi's and cuDeviceGetName's spelling, with the memory it
// reports) to the default catalog, and refuses modules and cards it does
// not list.
func TestGPUForDriverName(t *testing.T) {
	c := DefaultCatalog()
	cases := []struct {
		name   string
		memGiB float64
		want   string // "" for no match
	}{
		{"NVIDIA H100 PCIe", 79.6, "h100-80gb-pcie"},
		{"NVIDIA H100 80GB HBM3", 79.1, ""}, // SXM5: not the PCIe card
		{"NVIDIA A100-PCIE-40GB", 39.4, ModelA100_40GBPCIe},
		{"NVIDIA A100 80GB PCIe", 79.2, ModelA100_80GBPCIe},
		{"NVIDIA A100-SXM4-80GB", 79.2, ""},
		{"NVIDIA H800 PCIe", 79.6, "h800-80gb-pcie"},
		{"NVIDIA L40S", 44.5, "l40s-48gb-pcie"},
		{"NVIDIA GeForce RTX 4090", 23.6, ""},
		{"NVIDIA H100 NVL", 93.6, ""}, // 94 GB: not the 80 GB card
		{"", 80, ""},
	}
	for _, tc := range cases {
		g, ok := c.GPUForDriverName(tc.name, tc.memGiB)
		got := ""
		if ok {
			got = g.Key
		}
		if got != tc.want {
			t.Errorf("%q with %g GiB: %q, want %q", tc.name, tc.memGiB, got, tc.want)
		}
	}
}
