package importer_test

import (
	"fmt"

	"github.com/gnnplan/gnnplan/topology"
	"github.com/gnnplan/gnnplan/topology/importer"
)

// The same two GPUs given as NCCL topology XML and as an nvidia-smi matrix:
// the importer tells the formats apart by content.
func ExampleImportBytes() {
	files := map[string]string{
		"topo.xml": `<system version="1"><cpu numaid="0" familyid="6" modelid="85" vendor="GenuineIntel">
<pci busid="0000:01:00.0" class="0x030200" vendor="0x10de" device="0x20b0" link_speed="16.0 GT/s PCIe" link_width="16"><gpu dev="0" sm="80"/></pci>
<pci busid="0000:02:00.0" class="0x030200" vendor="0x10de" device="0x20b0" link_speed="16.0 GT/s PCIe" link_width="16"><gpu dev="1" sm="80"/></pci>
</cpu></system>`,
		"topo.txt": "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\nGPU0\t X \tPIX\t0-31\t0\nGPU1\tPIX\t X \t0-31\t0\n",
	}
	for _, name := range []string{"topo.xml", "topo.txt"} {
		m, err := importer.ImportBytes(name, []byte(files[name]))
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Printf("%s: %d GPUs, source %s\n", name, m.Count(topology.KindGPU), m.Source)
	}
	_, err := importer.ImportBytes("graph.xml", []byte(`<graphs version="1"><graph id="0"/></graphs>`))
	fmt.Println(topology.IsBadInput(err))
	// Output:
	// topo.xml: 2 GPUs, source nccl-xml:topo.xml
	// topo.txt: 2 GPUs, source nvidia-smi topo -m:topo.txt
	// true
}
