package ddak_test

import (
	"fmt"

	"github.com/gnnplan/gnnplan/ddak"
	"github.com/gnnplan/gnnplan/maxflow/placement"
)

// Ten vertices, the hottest first, over a GPU cache of two rows, a CPU
// cache of three and an SSD: the fast tiers take the hottest rows.
func ExamplePlace() {
	hotness := []uint32{90, 80, 70, 60, 50, 40, 30, 20, 10, 5}
	bins := []ddak.Bin{
		{ID: "gpu0", Kind: placement.StorageGPUMem, CapacityRows: 2, TargetShare: 0.37},
		{ID: "socket0", Kind: placement.StorageHostMem, CapacityRows: 3, TargetShare: 0.39},
		{ID: "nvme0", Kind: placement.StorageSSD, CapacityRows: 10, TargetShare: 0.24},
	}
	l, err := ddak.Place(hotness, bins, ddak.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for v, b := range l.Bin {
		fmt.Printf("%d:%s ", v, bins[b].ID)
	}
	fmt.Println()
	// Output:
	// 0:gpu0 1:gpu0 2:socket0 3:socket0 4:socket0 5:nvme0 6:nvme0 7:nvme0 8:nvme0 9:nvme0
}
