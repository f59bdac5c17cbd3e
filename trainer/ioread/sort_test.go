package ioread

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSortOrderMatchesComparisonSort checks the radix path against a plain
// comparison sort on (file, start, end), for batches around the switch-over
// size, many files, many equal starts and starts too large to pack.
func TestSortOrderMatchesComparisonSort(t *testing.T) {
	tests := []struct {
		n, files int
		maxStart int64
		align    int64
	}{
		{10, 1, 1 << 20, 4096},
		{radixMin - 1, 3, 1 << 30, 512},
		{radixMin, 3, 1 << 30, 512},
		{5000, 1, 1 << 16, 4096}, // few distinct starts: long runs of equal keys
		{5000, 1000, 1 << 40, 4096},
		{20000, 3, math.MaxInt64, 4096}, // 2 file bits + 63 start bits do not pack: comparison sort
		{20000, 2, math.MaxInt64, 512},  // 1 + 63 bits pack exactly
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("n=%d/files=%d/max=%d", tc.n, tc.files, tc.maxStart), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(tc.n), uint64(tc.files)))
			ks := make([]keyed, tc.n)
			for i := range ks {
				start := rng.Int64N(tc.maxStart/tc.align) * tc.align
				ks[i] = keyed{file: rng.IntN(tc.files), start: start, end: start + tc.align*(1+rng.Int64N(3)), p: piece{req: i}}
			}
			order := (&planScratch{}).sortOrder(ks, tc.files)
			if len(order) != len(ks) {
				t.Fatalf("order has %d entries, want %d", len(order), len(ks))
			}
			seen := make([]bool, len(ks))
			for _, o := range order {
				if seen[o] {
					t.Fatalf("index %d appears twice", o)
				}
				seen[o] = true
			}
			want := slices.Clone(ks)
			slices.SortFunc(want, func(a, b keyed) int {
				return cmp.Or(cmp.Compare(a.file, b.file), cmp.Compare(a.start, b.start), cmp.Compare(a.end, b.end))
			})
			for i, o := range order {
				g, w := ks[o], want[i]
				if g.file != w.file || g.start != w.start || g.end != w.end {
					t.Fatalf("position %d: (%d, %d, %d), want (%d, %d, %d)", i, g.file, g.start, g.end, w.file, w.start, w.end)
				}
			}
		})
	}
}
