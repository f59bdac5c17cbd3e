//go:build !cgo

package kernels

import "errors"

// NewEmulatedGPU fails in a build without cgo: the emulation compiles the
// CUDA kernels as C.
func NewEmulatedGPU(ordinal int, memoryBytes int64) (*GPU, error) {
	return nil, errors.New("the emulated GPU needs cgo (this gnnplan was built with CGO_ENABLED=0)")
}
