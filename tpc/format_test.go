package tpc

import "testing"

// TestSecondsReadInTheirUnit: epoch times print in s, ms or µs, so a small
// graph's epoch is not "0.00 s", and a measured/predicted pair shares one
// unit.
func TestSecondsReadInTheirUnit(t *testing.T) {
	for _, c := range []struct {
		s    float64
		want string
	}{
		{0, "0.00 s"}, {2.5, "2.50 s"}, {37.25, "37.2 s"}, {1234.4, "1234 s"},
		{0.0425, "42.5 ms"}, {0.001, "1.00 ms"}, {0.0000269, "26.9 µs"}, {0.0002, "200 µs"},
	} {
		if got := FormatSeconds(c.s); got != c.want {
			t.Errorf("FormatSeconds(%g) = %q, want %q", c.s, got, c.want)
		}
	}
	if got := FormatSecondsPair(0.0000269, 0.000202); got != "26.9/202 µs" {
		t.Errorf("pair = %q", got)
	}
	if got := FormatSecondsPair(0.9, 1.2); got != "0.90/1.20 s" {
		t.Errorf("pair = %q", got)
	}
}
