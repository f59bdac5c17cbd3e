package nccl_test

import (
	"context"
	"fmt"

	"github.com/gnnplan/gnnplan/topology"
	"github.com/gnnplan/gnnplan/topology/nccl"
)

// Two A100s on one Skylake socket, joined by NVLinks, as NCCL dumps them
// (NCCL_TOPO_DUMP_FILE).
func ExampleParse() {
	doc := `<system version="1">
  <cpu numaid="0" affinity="0000ffff" arch="x86_64" vendor="GenuineIntel" familyid="6" modelid="85">
    <pci busid="0000:01:00.0" class="0x030200" vendor="0x10de" device="0x20b0" link_speed="16.0 GT/s PCIe" link_width="16">
      <gpu dev="0" sm="80"><nvlink target="0000:02:00.0" count="12" tclass="0x030200"/></gpu>
    </pci>
    <pci busid="0000:02:00.0" class="0x030200" vendor="0x10de" device="0x20b0" link_speed="16.0 GT/s PCIe" link_width="16">
      <gpu dev="1" sm="80"><nvlink target="0000:01:00.0" count="12" tclass="0x030200"/></gpu>
    </pci>
  </cpu>
</system>
`
	m, err := nccl.Parse(context.Background(), "topo.xml", []byte(doc))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, l := range m.Links {
		if l.Kind == topology.LinkNVLink {
			fmt.Printf("%s-%s: %d NVLinks, %.0f GB/s\n", l.From, l.To, l.Count, l.GBps)
		}
	}
	fmt.Println(m.Count(topology.KindGPU), "GPUs")
	// Output:
	// gpu0-gpu1: 12 NVLinks, 240 GB/s
	// 2 GPUs
}
