package ioread

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkPlan measures turning a batch of 65,536 random requests into
// device reads (validation, widening, sorting, merging): work the reader does
// before the first read of a batch goes to the disk.
//
//	go test -ldflags=-checklinkname=0 ./trainer/ioread -run '^$' -bench Plan
func BenchmarkPlan(b *testing.B) {
	for _, row := range []int{512, 4096} {
		b.Run(map[int]string{512: "rows=512B", 4096: "rows=4KiB"}[row], func(b *testing.B) {
			files := []fileInfo{{path: "f", fd: -1, direct: true, align: 4096}}
			rng := rand.New(rand.NewPCG(1, 2))
			dst := make([]byte, row)
			reqs := make([]Request, 1<<16)
			for i := range reqs {
				reqs[i] = Request{Offset: rng.Int64N(1<<32/int64(row)) * int64(row), Length: row, Dst: dst}
			}
			var sc planScratch // as a Reader keeps it
			b.ResetTimer()
			for b.Loop() {
				if _, err := plan(files, reqs, 128<<10, 128<<10, &sc); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(reqs)), "ns/request")
		})
	}
}
