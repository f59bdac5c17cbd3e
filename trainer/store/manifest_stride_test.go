package store

import "testing"

// Rows below a sector pack into it (a 64-byte row no longer takes 512
// bytes of SSD); larger rows start on sectors.
func TestStrideFor(t *testing.T) {
	for _, tc := range []struct{ row, want int64 }{
		{4, 4}, {16, 16}, {60, 64}, {64, 64}, {100, 128}, {256, 256}, {300, 512}, {512, 512}, {513, 1024}, {2800, 3072}, {6000, 6144},
	} {
		if got := StrideFor(tc.row); got != tc.want || !validStride(got, tc.row) {
			t.Errorf("StrideFor(%d) = %d, want %d", tc.row, got, tc.want)
		}
	}
	for _, tc := range []struct{ stride, row int64 }{{48, 40}, {32, 40}, {768, 600}, {0, 0}} {
		if validStride(tc.stride, tc.row) {
			t.Errorf("stride %d for %d-byte rows accepted", tc.stride, tc.row)
		}
	}
}
