//go:build !cuda

package kernels

import "errors"

// errNoCUDA is every CUDA entry point's error in a build without the
// cuda tag: the CUDA backend needs the driver API binding, which links
// only with -tags cuda (see `make cuda-check`).
var errNoCUDA = errors.New("this gnnplan was built without CUDA: build it with -tags cuda (README: GPUs)")

// NewCUDA fails in a build without the cuda tag.
func NewCUDA(ordinal int) (*GPU, error) { return nil, errNoCUDA }

// NewCUDAs fails in a build without the cuda tag.
func NewCUDAs(ordinals []int) ([]*GPU, error) { return nil, errNoCUDA }

// CUDACount fails in a build without the cuda tag.
func CUDACount() (int, error) { return 0, errNoCUDA }
