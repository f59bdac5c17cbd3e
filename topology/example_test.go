package topology_test

import (
	"fmt"
	"os"

	"github.com/gnnplan/gnnplan/topology"
)

// A one-socket machine with a GPU and an SSD below one root port, built
// node by node and printed as the tree `gnnplan discover -o tree` shows.
func ExampleBuilder() {
	b := topology.NewBuilder("tiny", "example")
	socket := b.Add(topology.Node{Kind: topology.KindSocket, CPUModel: "AMD EPYC 9354", MemoryGiB: 384})
	rp := b.Add(topology.Node{Kind: topology.KindRootPort, Parent: socket})
	gpu := b.Add(topology.Node{Kind: topology.KindGPU, Parent: rp, Name: "NVIDIA L40S", MemoryGiB: 48})
	ssd := b.Add(topology.Node{Kind: topology.KindNVMe, Parent: rp, Name: "Samsung 980 PRO"})
	b.PCIeLink(rp, gpu, 4, 16, "example")
	b.PCIeLink(rp, ssd, 4, 4, "example")
	m, err := b.Finish(topology.CPUArch{})
	if err != nil {
		fmt.Println(err)
		return
	}
	s := m.Summarize()
	fmt.Printf("%d socket, %d GPU, %d NVMe, %.0f GiB\n", s.Sockets, s.GPUs, s.NVMe, s.MemoryGiB)
	if err := topology.WriteTree(os.Stdout, m); err != nil {
		fmt.Println(err)
	}
	// Output:
	// 1 socket, 1 GPU, 1 NVMe, 384 GiB
	// tiny  (example)
	// └─ socket0 [socket] AMD EPYC 9354, 384 GiB memory
	//    └─ rp0 [root_port]  <= on-die 30 GB/s
	//       ├─ gpu0 [gpu] NVIDIA L40S, 48 GiB  <= x16 Gen4 24 GB/s
	//       └─ nvme0 [nvme] Samsung 980 PRO  <= x4 Gen4 6 GB/s
}
