package profiles_test

import (
	"fmt"

	"github.com/gnnplan/gnnplan/profiles"
)

// The embedded machines and a catalog entry, as recommend prices them.
func ExampleMachine() {
	for _, name := range profiles.MachineNames() {
		m, err := profiles.Machine(name)
		if err != nil {
			fmt.Println(err)
			return
		}
		s := m.Summarize()
		fmt.Printf("%s: %d sockets, %d GPUs, %d NVMe, %.0f GiB\n", name, s.Sockets, s.GPUs, s.NVMe, s.MemoryGiB)
	}
	gpu, err := profiles.DefaultCatalog().GPU("a100-80gb-pcie")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s: $%.0f, %.0f GiB\n", gpu.Name, gpu.PriceUSD, gpu.MemoryGiB)
	// Output:
	// hyperion-a: 2 sockets, 1 GPUs, 12 NVMe, 768 GiB
	// moment-a: 2 sockets, 4 GPUs, 8 NVMe, 768 GiB
	// moment-b: 2 sockets, 4 GPUs, 8 NVMe, 512 GiB
	// NVIDIA A100 80GB PCIe: $14177, 80 GiB
}
