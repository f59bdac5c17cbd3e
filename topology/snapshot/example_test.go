package snapshot_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gnnplan/gnnplan/topology"
	"github.com/gnnplan/gnnplan/topology/snapshot"
)

// A QEMU VM's /sys as ghw-snapshot captured it, with a P100 passed through.
func ExampleImport() {
	path := filepath.Join("..", "testdata", "topology", "ghw-sysfs-linux-amd64-accel-nvidia.tar.gz")
	f, err := os.Open(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()
	head := make([]byte, snapshot.HeadBytes)
	n, _ := f.Read(head)
	fmt.Println("format:", snapshot.Format(head[:n]))
	if _, err := f.Seek(0, 0); err != nil {
		fmt.Println(err)
		return
	}
	m, err := snapshot.Import(context.Background(), path, f)
	if err != nil {
		fmt.Println(err)
		return
	}
	g := m.NodesOfKind(topology.KindGPU)[0]
	fmt.Printf("%s: %d socket, %s %s:%s\n", m.Name, m.Count(topology.KindSocket), g.ID, g.VendorID, g.DeviceID)
	// Output:
	// format: gzip
	// ghw-sysfs-linux-amd64-accel-nvidia: 1 socket, gpu0 10de:15f8
}
