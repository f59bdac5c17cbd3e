package nvsmi_test

import (
	"context"
	"fmt"

	"github.com/gnnplan/gnnplan/topology"
	"github.com/gnnplan/gnnplan/topology/nvsmi"
)

// Two GPUs joined by 12 NVLinks on one NUMA node, as `nvidia-smi topo -m`
// prints them.
func ExampleParse() {
	capture := "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\n" +
		"GPU0\t X \tNV12\t0-31\t0\n" +
		"GPU1\tNV12\t X \t0-31\t0\n"
	fmt.Println(nvsmi.LooksLike([]byte(capture)))
	m, err := nvsmi.Parse(context.Background(), "topo.txt", []byte(capture))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, l := range m.Links {
		if l.Kind == topology.LinkNVLink {
			fmt.Printf("%s-%s: %d NVLinks, %.0f GB/s\n", l.From, l.To, l.Count, l.GBps)
		}
	}
	// Output:
	// true
	// gpu0-gpu1: 12 NVLinks, 240 GB/s
}
