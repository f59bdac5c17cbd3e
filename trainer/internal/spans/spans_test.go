package spans

import (
	"errors"
	"testing"
)

func TestCut(t *testing.T) {
	for _, tc := range []struct{ n, threads, want int }{
		{0, 8, 1}, {4095, 8, 1}, {8192, 8, 2}, {100000, 8, 8}, {100000, 0, 1}, {100000, 1, 1},
	} {
		sp := Cut(tc.n, tc.threads, 4096)
		if len(sp) != tc.want || sp[0].Lo != 0 || sp[len(sp)-1].Hi != tc.n {
			t.Errorf("Cut(%d, %d) = %v, want %d spans covering [0, %d)", tc.n, tc.threads, sp, tc.want, tc.n)
		}
		for i := 1; i < len(sp); i++ {
			if sp[i].Lo != sp[i-1].Hi || sp[i].Hi-sp[i].Lo < 4096 {
				t.Errorf("Cut(%d, %d) = %v: spans not contiguous or under 4096 rows", tc.n, tc.threads, sp)
			}
		}
	}
}

// TestRunReturnsTheLowestSpansError: every span runs, and the error is
// the lowest failing span's, whichever finished first.
func TestRunReturnsTheLowestSpansError(t *testing.T) {
	done := make([]bool, 4)
	err := Run(Cut(4*4096, 4, 4096), func(i int, _ Span) error {
		done[i] = true
		if i >= 2 {
			return errors.New([]string{"", "", "span 2", "span 3"}[i])
		}
		return nil
	})
	if err == nil || err.Error() != "span 2" || !(done[0] && done[1] && done[2] && done[3]) {
		t.Errorf("Run = %v, ran %v; want span 2's error after all four ran", err, done)
	}
}
