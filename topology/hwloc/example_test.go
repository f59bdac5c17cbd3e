package hwloc_test

import (
	"context"
	"fmt"

	"github.com/gnnplan/gnnplan/topology"
	"github.com/gnnplan/gnnplan/topology/hwloc"
)

// A one-socket machine with a Tesla V100 behind a host bridge, as lstopo
// exports it.
func ExampleParse() {
	doc := `<?xml version="1.0" encoding="UTF-8"?>
<topology version="2.0">
<object type="Machine" os_index="0" gp_index="1">
  <object type="Package" os_index="0" gp_index="2">
    <info name="CPUModel" value="Intel(R) Xeon(R) Gold 6130 CPU @ 2.10GHz"/>
    <object type="NUMANode" os_index="0" gp_index="3" local_memory="68719476736"/>
    <object type="Core" os_index="0" gp_index="4"><object type="PU" os_index="0" gp_index="5"/></object>
    <object type="Bridge" gp_index="6" bridge_type="0-1" depth="0" bridge_pci="0000:[17-17]">
      <object type="PCIDev" gp_index="7" pci_busid="0000:17:00.0" pci_type="0302 [10de:1db4] [10de:1214] a1" pci_link_speed="15.75"/>
    </object>
  </object>
</object>
</topology>
`
	m, err := hwloc.Parse(context.Background(), "lstopo.xml", []byte(doc))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, g := range m.NodesOfKind(topology.KindGPU) {
		up := m.UplinkOf(g.ID)
		fmt.Printf("%s: %s, PCIe Gen%d x%d, %.0f GB/s\n", g.ID, g.Name, up.PCIeGen, up.Lanes, up.GBps)
	}
	// Output:
	// gpu0: NVIDIA Tesla V100 PCIe 16GB, PCIe Gen3 x16, 12 GB/s
}
