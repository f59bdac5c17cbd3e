//go:build race

package ioread

import "errors"

// rawURing says whether the raw depth-1 loop is built in: not under the
// race detector (see uring_raw.go); there depth 1 reads through giouring.
const rawURing = false

type rawRing struct{}

func newRawRing() (*rawRing, error) {
	return nil, errors.New("io_uring: no raw loop under the race detector")
}

func (r *rawRing) close() {}

func fastURingReads(r *rawRing, j *job, next *int64, n int64, buf []byte, c *counters) (idx int64, res int, direct, broken bool) {
	panic("ioread: fastURingReads under the race detector")
}
