package store_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"slices"

	"github.com/gnnplan/gnnplan/ddak/layout"
	"github.com/gnnplan/gnnplan/internal/tier"
	"github.com/gnnplan/gnnplan/trainer/dataset"
	"github.com/gnnplan/gnnplan/trainer/store"
)

// A dataset's 64 feature rows laid out by hand over a CPU cache (the
// first 24 vertices) and an SSD bin (the rest), the SSD bin's file cut
// by Materialize, and a batch of rows gathered from both tiers.
func ExampleStore_Gather() {
	tmp, err := os.MkdirTemp("", "store")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	dir, ssd := filepath.Join(tmp, "data"), filepath.Join(tmp, "ssd")
	if err := os.Mkdir(ssd, 0o755); err != nil {
		log.Fatal(err)
	}
	opt := dataset.DefaultSynthOptions()
	opt.Nodes, opt.Edges, opt.FeatureDim, opt.Classes = 64, 256, 8, 4
	if _, err := dataset.Synth(context.Background(), opt, dir, io.Discard); err != nil {
		log.Fatal(err)
	}
	const cached = 24
	bins := []layout.Bin{
		{ID: "socket0", Kind: tier.HostMem, CapacityRows: cached, TargetShare: 0.5},
		{ID: "nvme0", Kind: tier.SSD, CapacityRows: 64 - cached, TargetShare: 0.5},
	}
	l := &layout.Layout{Policy: "hash", Stats: []layout.BinStats{{Rows: cached}, {Rows: 64 - cached}}}
	for v := range 64 {
		bin, row := 0, v
		if v >= cached {
			bin, row = 1, v-cached
		}
		l.Bin, l.Row = append(l.Bin, uint8(bin)), append(l.Row, uint32(row))
	}
	if err := layout.Write(dir, l, bins); err != nil {
		log.Fatal(err)
	}
	if _, err := store.Materialize(context.Background(), dir, dir, []string{ssd}, store.MaterializeOptions{}); err != nil {
		log.Fatal(err)
	}
	s, err := store.Open(dir, store.Options{QueueDepth: 4})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	batch := []int32{3, 40, 17, 63}
	rows := make([]float32, len(batch)*s.Dim())
	st, err := s.Gather(context.Background(), batch, rows)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("bins %v: %d rows, %d from the CPU cache, %d from SSD\n", s.BinIDs(), st.Rows, st.SocketCacheHits, st.SSDRows)
	fmt.Println("rows per bin:", st.BinRows)

	// The rows are features.npy's.
	m, err := dataset.ReadMeta(dir)
	if err != nil {
		log.Fatal(err)
	}
	fr, err := dataset.OpenFeatures(dir, m)
	if err != nil {
		log.Fatal(err)
	}
	defer fr.Close()
	want := make([]float32, m.FeatureDim)
	same := true
	for i, v := range batch {
		if err := fr.Row(int64(v), want); err != nil {
			log.Fatal(err)
		}
		same = same && slices.Equal(want, rows[i*m.FeatureDim:(i+1)*m.FeatureDim])
	}
	fmt.Println("rows as in features.npy:", same)
	// Output:
	// bins [socket0 nvme0]: 4 rows, 2 from the CPU cache, 2 from SSD
	// rows per bin: [2 2]
	// rows as in features.npy: true
}
