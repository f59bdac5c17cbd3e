package ddak

import (
	"context"
	"math"
	"math/bits"
	"runtime"
	"sync"

	"github.com/gnnplan/gnnplan/maxflow/placement"
)

// feistel is a seeded pseudo-random permutation of [0, n) in O(1) memory:
// a 4-round Feistel network over the smallest even bit width that covers
// n, cycle-walking values that land outside [0, n).
type feistel struct {
	n    uint64
	half uint
	mask uint64
	keys [4]uint64
}

func newFeistel(n, seed uint64) feistel {
	w := uint(max(2, bits.Len64(n-1)))
	w += w & 1
	f := feistel{n: n, half: w / 2, mask: 1<<(w/2) - 1}
	for i := range f.keys {
		f.keys[i] = mix64(seed + uint64(i)*0x632be59bd9b4e019)
	}
	return f
}

func (f feistel) perm(x uint64) uint64 {
	for {
		l, r := x>>f.half, x&f.mask
		for _, k := range f.keys {
			l, r = r, l^(mix64(r^k)&f.mask)
		}
		x = l<<f.half | r
		if x < f.n {
			return x
		}
	}
}

// zipfHotness gives vertex v the count floor(c / (rank(v)+1)^s), rank a
// seeded permutation of the vertices, generated in parallel.
func zipfHotness(n int, s, c float64, seed uint64) []uint32 {
	hot := make([]uint32, n)
	f := newFeistel(uint64(n), seed)
	w := runtime.GOMAXPROCS(0)
	ci := uint64(c)
	var wg sync.WaitGroup
	for i := range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for v := n * i / w; v < n*(i+1)/w; v++ {
				r := f.perm(uint64(v)) + 1
				var h float64
				if s == 1 {
					h = float64(ci / r)
				} else {
					h = math.Floor(c / math.Pow(float64(r), s))
				}
				hot[v] = uint32(min(h, math.MaxUint32))
			}
		}()
	}
	wg.Wait()
	return hot
}

// sortedDesc returns the hotness values in descending order.
func sortedDesc(hot []uint32) []uint32 {
	o, _ := newOrder(context.Background(), hot)
	out := make([]uint32, 0, len(hot))
	for k, v := range o.val {
		for range o.count[k] {
			out = append(out, v)
		}
	}
	return out
}

// testBins is Moment's machine A in miniature: 2 GPU caches (0.5% of the
// rows each), a CPU cache per socket (1% each), and 8 SSDs, 4 per socket,
// with room for everything. The GPUs sit on socket 0, so socket 1's bins
// are read across the socket link. Targets: each cache tier gets what its
// rows draw under this hotness, split evenly; the SSD tier's share goes to
// socket 0's SSDs more than to socket 1's, as a flow whose socket link binds
// would give them.
func testBins(hot []uint32) ([]Bin, []int) {
	n := int64(len(hot))
	desc := sortedDesc(hot)
	var total float64
	for _, h := range desc {
		total += float64(h)
	}
	share := func(from, to int64) float64 {
		var s float64
		for _, h := range desc[from:to] {
			s += float64(h)
		}
		return s / total
	}
	gpuCap, cpuCap := n/200, n/100
	gpuShare := share(0, 2*gpuCap)
	cpuShare := share(2*gpuCap, 2*gpuCap+2*cpuCap)
	ssdShare := 1 - gpuShare - cpuShare
	bins := []Bin{
		{ID: "gpu0", Kind: placement.StorageGPUMem, Socket: 0, CapacityRows: gpuCap, TargetShare: gpuShare / 2},
		{ID: "gpu1", Kind: placement.StorageGPUMem, Socket: 0, CapacityRows: gpuCap, TargetShare: gpuShare / 2},
		{ID: "socket0", Kind: placement.StorageHostMem, Socket: 0, CapacityRows: cpuCap, TargetShare: cpuShare / 2},
		{ID: "socket1", Kind: placement.StorageHostMem, Socket: 1, CapacityRows: cpuCap, TargetShare: cpuShare / 2},
	}
	weights := []float64{1.3, 1.2, 1.1, 1.0, 0.8, 0.7, 0.5, 0.4}
	var wsum float64
	for _, w := range weights {
		wsum += w
	}
	for i, w := range weights {
		bins = append(bins, Bin{ID: "nvme" + string(rune('0'+i)), Kind: placement.StorageSSD, Socket: i / 4,
			CapacityRows: n / 4, TargetShare: ssdShare * w / wsum})
	}
	return bins, []int{0, 0}
}
