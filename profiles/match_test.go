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
		{"NVIDIA H100 80GB HBM3", 79.1, "h100-80gb-sxm5"}, // SXM5: the module, not the PCIe card
		{"NVIDIA A100-PCIE-40GB", 39.4, ModelA100_40GBPCIe},
		{"NVIDIA A100 80GB PCIe", 79.2, ModelA100_80GBPCIe},
		{"NVIDIA A100-SXM4-80GB", 79.2, "a100-80gb-sxm4"},
		{"NVIDIA A100 SXM4 40GB", 40, "a100-40gb-sxm4"},
		{"NVIDIA Tesla V100 SXM3 32GB", 32, "v100-32gb-sxm"},
		{"AMD Instinct MI100", 32, "mi100-32gb-pcie"},
		{"GPU dev=0 (gfx908)", 0, "mi100-32gb-pcie"}, // RCCL: the ISA alone
		{"GPU dev=3 (gfx906)", 0, "mi50-32gb-pcie"},
		{"GPU dev=1 (sm80)", 0, ModelA100_40GBPCIe}, // NCCL: the arch alone, memory unknown: the smallest card
		{"GPU dev=1 (sm90)", 0, "h100-80gb-pcie"},
		{"GPU dev=1 (sm90) SXM", 0, "h100-80gb-sxm5"},
		{"GPU0", 0, ""},
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
