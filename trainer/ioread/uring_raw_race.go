//go:build race

package ioread

import (
	"errors"
	"syscall"
)

// rawURing says whether the raw loop is built in: not under the race
// detector (see uring_raw.go); there io_uring reads through giouring.
const rawURing = false

type rawRing struct {
	free    []int32
	nfree   int
	failed  []int64
	nfailed int
}

func newRawRing(qd, slots int) (*rawRing, error) {
	return nil, errors.New("io_uring: no raw loop under the race detector")
}

func (r *rawRing) close() {}

func fastURingReads(r *rawRing, j *job, next *int64, stop *int32, mem []byte, slotSize int, c *counters) syscall.Errno {
	panic("ioread: fastURingReads under the race detector")
}
