package ddak

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// bestSubset is the brute-force oracle for one fill step: the least cost
// of the chunks at positions idx when a subset of total bytes at most
// capacity is moved to the cheaper place (saving[i] each).
func bestSubset(bytes []int64, saving []float64, capacity int64) float64 {
	best := 0.0
	for mask := 0; mask < 1<<len(bytes); mask++ {
		var b int64
		var s float64
		for i := range bytes {
			if mask&(1<<i) != 0 {
				b += bytes[i]
				s += saving[i]
			}
		}
		if b <= capacity {
			best = math.Max(best, s)
		}
	}
	return best
}

// TestCacheSplitMatchesBruteForce: with chunks of one size (one vertex per
// chunk, topology rows as large as feature rows), the greedy fill of each
// step saves as many transactions as the best subset of chunks.
func TestCacheSplitMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 40 {
		n := 2 + rng.IntN(4) // 4-10 chunks in all
		hot := make([]uint32, n)
		topo := make([]uint32, n)
		const z = 256
		for v := range hot {
			hot[v] = uint32(rng.IntN(50))
			topo[v] = z
		}
		opt := CacheOptions{GPUBytes: int64(rng.IntN(4)) * z, CPUBytes: int64(rng.IntN(4)) * z, FeatureRowBytes: z, ChunkBytes: z, CLSBytes: 64, SSDSBytes: 512}
		// Rows of 256 B: the SSD reads 512 B for each, so the CPU saves too.
		s, err := CacheSplit(hot, topo, opt)
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Chunks) != 2*n {
			t.Fatalf("trial %d: %d chunks for %d vertices of each kind", trial, len(s.Chunks), n)
		}
		var bytes []int64
		var mem []float64
		for _, c := range s.Chunks {
			bytes = append(bytes, c.Bytes)
			mem = append(mem, c.MemTx)
		}
		var gotGPU float64
		var restBytes []int64
		var restSave []float64
		for _, c := range s.Chunks {
			if c.Where == WhereGPU {
				gotGPU += c.MemTx
			} else {
				restBytes = append(restBytes, c.Bytes)
				restSave = append(restSave, c.SSDTx-c.MemTx)
			}
		}
		if want := bestSubset(bytes, mem, opt.GPUBytes); gotGPU != want {
			t.Errorf("trial %d: GPU step saves %v transactions, the best subset %v", trial, gotGPU, want)
		}
		var gotCPU float64
		for _, c := range s.Chunks {
			if c.Where == WhereCPU {
				gotCPU += c.SSDTx - c.MemTx
			}
		}
		if want := bestSubset(restBytes, restSave, opt.CPUBytes); gotCPU != want {
			t.Errorf("trial %d: CPU step saves %v transactions, the best subset %v", trial, gotCPU, want)
		}
		if s.GPUTopologyBytes+s.GPUFeatureBytes > opt.GPUBytes || s.CPUTopologyBytes+s.CPUFeatureBytes > opt.CPUBytes {
			t.Errorf("trial %d: split %+v exceeds GPU %d / CPU %d bytes", trial, s, opt.GPUBytes, opt.CPUBytes)
		}
	}
}

func TestCacheSplitBehaviour(t *testing.T) {
	// Every vertex read 3 times per epoch and 2 neighbors of 4 bytes each.
	hot := slices.Repeat([]uint32{3}, 100_000)
	sparse := slices.Repeat([]uint32{8}, len(hot))
	const row = 4096
	topoBytes := int64(8 * len(hot))
	cases := []struct {
		name  string
		opt   CacheOptions
		check func(t *testing.T, s *Split)
	}{
		{"no memory: everything from SSD", CacheOptions{FeatureRowBytes: row, ChunkBytes: 1 << 16},
			func(t *testing.T, s *Split) {
				if s.Tx != s.TxAllSSD {
					t.Errorf("tx %v, all-SSD %v", s.Tx, s.TxAllSSD)
				}
			}},
		{"GPU holds everything: no transactions", CacheOptions{GPUBytes: topoBytes + row*int64(len(hot)), FeatureRowBytes: row, ChunkBytes: 1 << 16},
			func(t *testing.T, s *Split) {
				if s.Tx != 0 || s.GPUTopologyBytes != topoBytes {
					t.Errorf("tx %v, GPU topology %d bytes of %d", s.Tx, s.GPUTopologyBytes, topoBytes)
				}
			}},
		// An 8-byte neighbor list read 3 times costs one 64-byte
		// transaction (24 bytes round up): 1/8 transaction per byte,
		// against 3/64 for a 4 KiB feature row, so the topology goes in
		// first.
		{"sparse topology is cached before features", CacheOptions{GPUBytes: topoBytes, FeatureRowBytes: row, ChunkBytes: 1 << 12},
			func(t *testing.T, s *Split) {
				if s.GPUTopologyBytes != topoBytes || s.GPUFeatureBytes != 0 {
					t.Errorf("GPU holds %d topology bytes (of %d) and %d feature bytes", s.GPUTopologyBytes, topoBytes, s.GPUFeatureBytes)
				}
			}},
		{"CPU after GPU, both used", CacheOptions{GPUBytes: 50 * row, CPUBytes: 1 << 22, FeatureRowBytes: row, ChunkBytes: 1 << 12},
			func(t *testing.T, s *Split) {
				if s.CPUTopologyBytes+s.CPUFeatureBytes == 0 || s.GPUTopologyBytes+s.GPUFeatureBytes == 0 || s.Tx >= s.TxAllSSD {
					t.Errorf("split %+v", *s)
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := CacheSplit(hot, sparse, tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, s)
			seen := make([]bool, len(hot))
			for _, v := range s.Order {
				if seen[v] {
					t.Fatalf("vertex %d twice in the order", v)
				}
				seen[v] = true
			}
			for p := 1; p < len(s.Order); p++ {
				if hot[s.Order[p]] > hot[s.Order[p-1]] {
					t.Fatalf("order not descending at %d", p)
				}
			}
		})
	}
}

func TestTopologyRowBytes(t *testing.T) {
	got, err := TopologyRowBytes([]int64{0, 3, 3, 10}, 4)
	if err != nil || len(got) != 3 || got[0] != 12 || got[1] != 0 || got[2] != 28 {
		t.Errorf("got %v, %v; want [12 0 28]", got, err)
	}
	if _, err := TopologyRowBytes([]int64{0, 5, 2}, 8); err == nil {
		t.Error("decreasing offsets accepted")
	}
}
