package tpc

import (
	"fmt"
	"math"
)

// secondsUnit is the unit a time of s seconds reads best in, and its
// scale: seconds down to 1 s, then milliseconds, then microseconds, so a
// small graph's epoch does not print as 0.00 s.
func secondsUnit(s float64) (scale float64, unit string) {
	switch a := math.Abs(s); {
	case a >= 1 || a == 0:
		return 1, "s"
	case a >= 1e-3:
		return 1e3, "ms"
	}
	return 1e6, "µs"
}

// formatScaled prints v with two decimals below 10, one below 100, none above.
func formatScaled(v float64) string {
	switch a := math.Abs(v); {
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

// FormatSeconds prints a time of s seconds in the unit it reads best in.
func FormatSeconds(s float64) string {
	k, u := secondsUnit(s)
	return formatScaled(s*k) + " " + u
}

// FormatSecondsPair prints measured/predicted in one unit, the larger's.
func FormatSecondsPair(measured, predicted float64) string {
	k, u := secondsUnit(max(measured, predicted))
	return formatScaled(measured*k) + "/" + formatScaled(predicted*k) + " " + u
}
