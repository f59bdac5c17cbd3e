package meminfo

import (
	"os"
	"testing"
)

func TestAvailable(t *testing.T) {
	n, ok := Available()
	if _, err := os.Stat("/proc/meminfo"); err != nil {
		if ok {
			t.Errorf("no /proc/meminfo, yet %d bytes available", n)
		}
		return
	}
	if !ok || n == 0 {
		t.Errorf("Available() = %d, %v on a machine with /proc/meminfo", n, ok)
	}
}
