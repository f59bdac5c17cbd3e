package trainplan

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/gnnplan/gnnplan/internal/inputerr"
	"github.com/gnnplan/gnnplan/kernels"
	"github.com/gnnplan/gnnplan/trainer/store"
)

// MeasureGPUs measures each GPU device (--gpu-device: auto, cuda,
// cuda-emulated or none) and gpus (--gpus) name, for seconds each: its
// host-to-device copies and GEMM. "auto" measures the driver's GPUs in a
// build with CUDA and, in one without, notes GPUs the machine has.
func MeasureGPUs(ctx context.Context, device, gpus string, seconds float64, progress io.Writer) ([]store.GPUProfile, []string, error) {
	var gs []*kernels.GPU
	copyBytes, shape := 256<<20, [3]int{8192, 256, 256}
	switch device {
	case "none":
		return nil, nil, nil
	case "auto", kernels.DeviceCUDA:
		n, err := kernels.CUDACount()
		if err != nil {
			if device == "auto" {
				if d := kernels.DescribeLocalGPUs(); d != "no NVIDIA GPU" {
					return nil, []string{fmt.Sprintf("GPUs not measured: %s, and %v", d, err)}, nil
				}
				return nil, nil, nil
			}
			return nil, nil, inputerr.Errorf("", "", "--gpu-device cuda: %v", err)
		}
		ords, err := kernels.GPUOrdinals(gpus, n, 0)
		if err != nil {
			return nil, nil, inputerr.Errorf("", "", "--gpu-device cuda: %v", err)
		}
		for _, i := range ords {
			g, err := kernels.NewCUDA(i)
			if err != nil {
				return nil, nil, inputerr.Errorf("", "", "--gpu-device cuda: %v", err)
			}
			gs = append(gs, g)
		}
	case kernels.DeviceCUDAEmulated:
		var err error
		if gs, err = kernels.EmulatedGPUs(gpus, 1, "--gpu-device"); err != nil {
			return nil, nil, err
		}
		// The emulation runs every GPU thread in turn: small sizes, and
		// rates that describe the CPU.
		copyBytes, shape = 4<<20, [3]int{256, 64, 64}
	default:
		return nil, nil, inputerr.Errorf("", "", "--gpu-device %q: valid: auto, cuda, cuda-emulated, none", device)
	}
	var out []store.GPUProfile
	for _, g := range gs {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		info := g.Info()
		fmt.Fprintf(progress, "profile: GPU %d (%s): copies to it, GEMM %dx%dx%d ...\n", info.Ordinal, info.Name, shape[0], shape[1], shape[2])
		d := time.Duration(seconds * float64(time.Second))
		pinned, pageable, err := g.MeasureCopy(copyBytes, d)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, store.GPUProfile{Ordinal: info.Ordinal, Name: info.Name, MemoryGiB: float64(info.MemoryBytes) / (1 << 30),
			PCIBusID: info.PCIBusID, Backend: g.Name(), H2DPinnedGBps: pinned, H2DPageableGBps: pageable,
			GEMMGFLOPS: kernels.MeasureGemm(g, shape[0], shape[1], shape[2], d), GEMMShape: shape})
	}
	return out, nil, nil
}
