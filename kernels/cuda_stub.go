//go:build !cuda

package kernels

import "errors"

// NewCUDA fails in a build without the cuda tag: the CUDA backend needs
// the driver API binding, which links only with -tags cuda (see `make
// cuda-check`).
func NewCUDA(ordinal int) (*GPU, error) {
	return nil, errors.New("this gnnplan was built without CUDA: build it with -tags cuda (README: GPUs)")
}
