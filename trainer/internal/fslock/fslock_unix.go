//go:build unix

package fslock

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// TryLock takes an exclusive lock on the directory dir, failing at once
// with ErrBusy while another open of it holds one (in this process or
// another).
func TryLock(dir string) (*Lock, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s: %w", dir, ErrBusy)
		}
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	return &Lock{release: f.Close}, nil
}
