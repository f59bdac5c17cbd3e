package lspci_test

import (
	"context"
	"fmt"

	"github.com/gnnplan/gnnplan/topology"
	"github.com/gnnplan/gnnplan/topology/lspci"
)

// The tree `lspci -tvnn` prints for a host bridge with an A100 below one
// root port: classes come from the names, links are assumed.
func ExampleParse() {
	capture := "-[0000:00]-+-00.0  Intel Corporation Device [8086:09a2]\n" +
		"           \\-02.0-[02]----00.0  NVIDIA Corporation GA100 [A100 SXM4 80GB] [10de:20b2]\n"
	fmt.Println(lspci.LooksLike([]byte(capture)))
	m, err := lspci.Parse(context.Background(), []string{"lspci-tv.txt"}, [][]byte{[]byte(capture)})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, g := range m.NodesOfKind(topology.KindGPU) {
		fmt.Printf("%s %s: %s, %.0f GiB\n", g.ID, g.PCIAddress, g.Name, g.MemoryGiB)
	}
	// Output:
	// true
	// gpu0 0000:02:00.0: NVIDIA Corporation GA100 [A100 SXM4 80GB], 80 GiB
}
