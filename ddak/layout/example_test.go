package layout_test

import (
	"fmt"
	"os"

	"github.com/gnnplan/gnnplan/ddak/layout"
	"github.com/gnnplan/gnnplan/internal/tier"
)

// Six vertices over a GPU cache of two rows and an SSD: Write puts the
// layout in a directory as two NumPy arrays and layout.json, and Read
// gives it back, checked whole.
func ExampleWrite() {
	dir, err := os.MkdirTemp("", "layout")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	bins := []layout.Bin{
		{ID: "gpu0", Kind: tier.GPUMem, Socket: 0, CapacityRows: 2, TargetShare: 0.6},
		{ID: "nvme0", Kind: tier.SSD, Socket: 0, CapacityRows: 8, TargetShare: 0.4},
	}
	l := &layout.Layout{
		Policy: layout.PolicyDDAK, Priority: "need", Pool: 1,
		Bin:           []uint8{0, 0, 1, 1, 1, 1},
		Row:           []uint32{0, 1, 0, 1, 2, 3},
		Stats:         []layout.BinStats{{Rows: 2, Accesses: 170}, {Rows: 4, Accesses: 130}},
		TotalAccesses: 300,
	}
	if err := layout.Write(dir, l, bins); err != nil {
		fmt.Println(err)
		return
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, e := range entries {
		fmt.Println(e.Name())
	}

	got, gotBins, err := layout.Read(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("policy %s, %d vertices, %d accesses\n", got.Policy, len(got.Bin), got.TotalAccesses)
	for i, b := range gotBins {
		fmt.Printf("%s (%s): %d rows, %d accesses\n", b.ID, b.Kind, got.Stats[i].Rows, got.Stats[i].Accesses)
	}
	fmt.Printf("vertex 4: bin %s, row %d\n", gotBins[got.Bin[4]].ID, got.Row[4])
	// Output:
	// layout.json
	// layout_bin.npy
	// layout_row.npy
	// policy ddak, 6 vertices, 300 accesses
	// gpu0 (gpu_memory): 2 rows, 170 accesses
	// nvme0 (ssd): 4 rows, 130 accesses
	// vertex 4: bin nvme0, row 2
}
