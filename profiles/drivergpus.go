package profiles

import (
	"fmt"
	"strings"

	"github.com/gnnplan/gnnplan/kernels"
	"github.com/gnnplan/gnnplan/topology"
)

// NameDriverGPUs names m's GPUs as the CUDA driver does, matched by PCI
// address: the driver's model name and device memory replace what the
// PCI ID database says, and the catalog model they describe is recorded
// where none is. The links' current and maximum PCIe generation and width
// are sysfs's already. GPUs the driver lists that m lacks, and m's NVIDIA
// GPUs the driver does not list, are noted.
func (cat *Catalog) NameDriverGPUs(m *topology.Machine, gpus []kernels.GPUInfo) {
	byAddr := map[string]int{}
	for i, n := range m.Nodes {
		if n.Kind == topology.KindGPU && n.PCIAddress != "" {
			byAddr[strings.ToLower(n.PCIAddress)] = i
		}
	}
	named := 0
	seen := map[int]bool{}
	var missing []string
	for _, g := range gpus {
		i, ok := byAddr[strings.ToLower(g.PCIBusID)]
		if !ok {
			missing = append(missing, fmt.Sprintf("GPU %d (%s at %s)", g.Ordinal, g.Name, g.PCIBusID))
			continue
		}
		seen[i] = true
		n := &m.Nodes[i]
		n.Name = g.Name
		n.MemoryGiB = float64(g.MemoryBytes) / (1 << 30)
		if n.Model == "" {
			if c, ok := cat.GPUForDriverName(g.Name, n.MemoryGiB); ok {
				n.Model = c.Key
			}
		}
		named++
	}
	if named > 0 {
		m.Notes = append(m.Notes, fmt.Sprintf("%d GPUs named by the CUDA driver (model, memory); PCIe links from sysfs", named))
	}
	if len(missing) > 0 {
		m.Notes = append(m.Notes, "the CUDA driver lists GPUs sysfs does not show here: "+strings.Join(missing, ", "))
	}
	var unlisted []string
	for i, n := range m.Nodes {
		if n.Kind == topology.KindGPU && strings.EqualFold(n.VendorID, "10de") && !seen[i] {
			unlisted = append(unlisted, n.PCIAddress)
		}
	}
	if len(unlisted) > 0 && len(gpus) > 0 {
		m.Notes = append(m.Notes, "NVIDIA GPUs the CUDA driver does not list (another driver, or hidden by CUDA_VISIBLE_DEVICES): "+strings.Join(unlisted, ", "))
	}
}
