package kernels

import "testing"

// TestPlanGemm: how the trainer's products and the extremes are cut. The
// split is a function of the shape alone (the signature has no thread
// count), every tile edge but the last is aligned, and no product is cut
// into more than splitMaxPieces.
func TestPlanGemm(t *testing.T) {
	cases := []struct {
		name    string
		m, n, k int
		want    gemmSplit
	}{
		{"too small to cut", 1024, 16, 256, gemmSplit{1024, 16, 256}},
		{"hidden layer: row tiles", 8192, 256, 256, gemmSplit{1024, 256, 256}},
		{"sampled sources: more row tiles", 26624, 256, 256, gemmSplit{1024, 256, 256}},
		{"a billion rows: at most 64 tiles", 1 << 30, 256, 128, gemmSplit{1 << 24, 256, 128}},
		{"wide C: column tiles", 300, 4096, 256, gemmSplit{300, 256, 256}},
		{"weight gradient: chunks of k", 256, 256, 8192, gemmSplit{256, 256, 4096}},
		{"weight gradient over 9999 rows: a ragged last chunk", 256, 256, 9999, gemmSplit{256, 256, 4096}},
		{"weight gradient over a million rows: 64 chunks", 256, 256, 1 << 20, gemmSplit{256, 256, 1 << 14}},
		{"short k is not chunked", 256, 256, 8000, gemmSplit{256, 256, 8000}},
		{"two row tiles and chunks of k", 2048, 128, 16384, gemmSplit{1024, 128, 4096}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := planGemm(c.m, c.n, c.k)
			if s != c.want {
				t.Errorf("planGemm(%d, %d, %d) = %+v, want %+v", c.m, c.n, c.k, s, c.want)
			}
			if p := s.pieces(c.m, c.n, c.k); p > splitMaxPieces {
				t.Errorf("%d pieces, want at most %d", p, splitMaxPieces)
			}
			for _, d := range []struct{ size, whole int }{{s.rows, c.m}, {s.cols, c.n}, {s.kChunk, c.k}} {
				if d.size != d.whole && d.size%splitAlign != 0 {
					t.Errorf("a piece of %d of %d is not a multiple of %d", d.size, d.whole, splitAlign)
				}
			}
		})
	}
}
