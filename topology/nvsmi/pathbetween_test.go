package nvsmi

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/gnnplan/gnnplan/topology/internal/sysfstest"
	"github.com/gnnplan/gnnplan/topology/lspci"
)

// TestPathBetween: the lspci tree's paths read as nvidia-smi's words.
func TestPathBetween(t *testing.T) {
	pugetTV := filepath.Join(sysfstest.FixtureDir, "stelline-puget-lspci-tv.txt")
	data, err := os.ReadFile(pugetTV)
	if err != nil {
		t.Fatal(err)
	}
	m, err := lspci.Parse(context.Background(), []string{pugetTV}, [][]byte{data})
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]string{}
	for _, n := range m.Nodes {
		by[n.PCIAddress] = n.ID
	}
	cases := []struct{ a, b, want string }{
		{"0000:c1:00.0", "0000:c2:00.0", "PHB"},  // the GPUs: two root ports of one host bridge
		{"0000:21:00.0", "0000:21:00.1", "PIX"},  // two functions of the ConnectX-7
		{"0000:05:00.0", "0000:06:00.0", "PIX"},  // SSDs on one switch
		{"0000:05:00.0", "0000:0b:00.0", "PXB"},  // SSDs on sibling switches of one tree
		{"0000:c1:00.0", "0000:21:00.0", "NODE"}, // GPU and NIC on different host bridges
	}
	for _, c := range cases {
		if got := pathBetween(m, by[c.a], by[c.b]); got != c.want {
			t.Errorf("%s-%s: %s, want %s", c.a, c.b, got, c.want)
		}
	}
}
