//go:build !cuda

package kernels

// NewCUDA fails in a build without the cuda tag.
func NewCUDA(ordinal int) (*GPU, error) { return nil, ErrNoCUDA }

// NewCUDAs fails in a build without the cuda tag.
func NewCUDAs(ordinals []int) ([]*GPU, error) { return nil, ErrNoCUDA }

// CUDACount fails in a build without the cuda tag.
func CUDACount() (int, error) { return 0, ErrNoCUDA }

// CUDAGPUs fails in a build without the cuda tag.
func CUDAGPUs() ([]GPUInfo, error) { return nil, ErrNoCUDA }
