package profiles

import (
	"math"
	"strings"
	"testing"

	"github.com/gnnplan/gnnplan/kernels"
	"github.com/gnnplan/gnnplan/topology"
)

// TestNameDriverGPUs names a machine's GPUs as the CUDA driver lists
// them, by PCI address whatever its case, records the catalog model a
// PCIe card is, leaves an SXM module's model empty, and notes GPUs only
// one side sees.
func TestNameDriverGPUs(t *testing.T) {
	m := &topology.Machine{Nodes: []topology.Node{
		{ID: "s0", Kind: topology.KindSocket},
		{ID: "gpu0", Kind: topology.KindGPU, Parent: "s0", PCIAddress: "0000:17:00.0", VendorID: "10de", Name: "10de:2331"},
		{ID: "gpu1", Kind: topology.KindGPU, Parent: "s0", PCIAddress: "0000:65:00.0", VendorID: "10de", Name: "10de:20b2"},
		{ID: "gpu2", Kind: topology.KindGPU, Parent: "s0", PCIAddress: "0000:CA:00.0", VendorID: "10de", Name: "10de:2331"},
	}}
	gib := func(g float64) int64 { return int64(g * (1 << 30)) }
	gpus := []kernels.GPUInfo{
		{Ordinal: 0, Name: "NVIDIA H100 PCIe", MemoryBytes: gib(79.6), PCIBusID: "0000:17:00.0"},
		{Ordinal: 1, Name: "NVIDIA A100-SXM4-80GB", MemoryBytes: gib(79.2), PCIBusID: "0000:65:00.0"},
		{Ordinal: 2, Name: "NVIDIA H100 PCIe", MemoryBytes: gib(79.6), PCIBusID: "0000:b3:00.0"},
	}
	DefaultCatalog().NameDriverGPUs(m, gpus)
	want := []struct {
		name, model string
		memGiB      float64
	}{{"NVIDIA H100 PCIe", "h100-80gb-pcie", 79.6}, {"NVIDIA A100-SXM4-80GB", "a100-80gb-sxm4", 79.2}, {"10de:2331", "", 0}}
	for i, w := range want {
		n := m.Nodes[i+1]
		if n.Name != w.name || n.Model != w.model || math.Abs(n.MemoryGiB-w.memGiB) > 0.01 {
			t.Errorf("%s: name %q, model %q, %.1f GiB; want %q, %q, %.1f", n.ID, n.Name, n.Model, n.MemoryGiB, w.name, w.model, w.memGiB)
		}
	}
	notes := strings.Join(m.Notes, "\n")
	for _, s := range []string{"2 GPUs named by the CUDA driver", "GPU 2 (NVIDIA H100 PCIe at 0000:b3:00.0)", "does not list (another driver, or hidden by CUDA_VISIBLE_DEVICES): 0000:CA:00.0"} {
		if !strings.Contains(notes, s) {
			t.Errorf("notes %q: want %q", notes, s)
		}
	}
}
