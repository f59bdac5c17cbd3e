// Package meminfo reads how much memory this machine has available, so
// that the trainer and the feature store can refuse what would not fit
// before allocating it.
package meminfo

import (
	"os"
	"strconv"
	"strings"
)

// Available is /proc/meminfo's MemAvailable in bytes; false where it
// cannot be read (not Linux, no /proc).
func Available() (uint64, bool) {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "MemAvailable:" {
			kb, err := strconv.ParseUint(f[1], 10, 64)
			if err != nil {
				return 0, false
			}
			return kb << 10, true
		}
	}
	return 0, false
}
