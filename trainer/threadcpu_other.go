//go:build !linux

package trainer

// threadCPUSeconds is not measured off Linux.
func threadCPUSeconds() (float64, bool) { return 0, false }
