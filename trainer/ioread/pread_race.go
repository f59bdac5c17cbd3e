//go:build race

package ioread

// rawLoop says whether fastReads is built in: not under the race detector
// (see pread_raw.go).
const rawLoop = false

// fastReads is not used under the race detector.
func fastReads(j *job, next *int64, n int64, stop *int32, buf []byte, c *counters) (idx int64, res int, direct bool) {
	panic("ioread: fastReads under the race detector")
}
