package kernels

import _ "embed"

// cudaPTX is the CUDA kernels (internal/cudac/kernels.cu) compiled to PTX
// by `make ptx` (NVRTC, compute capability 7.0, no fused multiply-add).
// The CUDA backend loads it with cuModuleLoadData, and the driver JITs it
// for the GPU present. It is embedded in every build, so tests check it
// on machines without a GPU: every kernel present with the one argument
// the Go side passes, and generated from the current source.
//
//go:embed cuda_kernels.ptx
var cudaPTX string
