package main

import (
	"context"
	"fmt"
	"time"

	"github.com/gnnplan/gnnplan/kernels"
	"github.com/gnnplan/gnnplan/profiles"
	"github.com/gnnplan/gnnplan/tpc"
	"github.com/gnnplan/gnnplan/trainer/store"
)

// profileGPUs measures each GPU --gpu-device and --gpus name: its
// host-to-device copies and GEMM. "auto" measures the driver's GPUs in a
// build with CUDA and, in one without, notes GPUs the machine has.
func profileGPUs(ctx context.Context, o *profileOptions) ([]store.GPUProfile, []string, error) {
	var gs []*kernels.GPU
	copyBytes, shape := 256<<20, [3]int{8192, 256, 256}
	switch o.GPUDevice {
	case "none":
		return nil, nil, nil
	case "auto", deviceCUDA:
		n, err := kernels.CUDACount()
		if err != nil {
			if o.GPUDevice == "auto" {
				if d := describeLocalGPUs(); d != "no NVIDIA GPU" {
					return nil, []string{fmt.Sprintf("GPUs not measured: %s, and %v", d, err)}, nil
				}
				return nil, nil, nil
			}
			return nil, nil, usageErrorf("--gpu-device cuda: %v", err)
		}
		ords, err := gpuOrdinals(o.GPUs, n, 0)
		if err != nil {
			return nil, nil, usageErrorf("--gpu-device cuda: %v", err)
		}
		for _, i := range ords {
			g, err := kernels.NewCUDA(i)
			if err != nil {
				return nil, nil, usageErrorf("--gpu-device cuda: %v", err)
			}
			gs = append(gs, g)
		}
	case deviceCUDAEmulate:
		var err error
		if gs, err = emulatedGPUs(o.GPUs, 1, "--gpu-device"); err != nil {
			return nil, nil, err
		}
		// The emulation runs every GPU thread in turn: small sizes, and
		// rates that describe the CPU.
		copyBytes, shape = 4<<20, [3]int{256, 64, 64}
	default:
		return nil, nil, usageErrorf("--gpu-device %q: valid: auto, cuda, cuda-emulated, none", o.GPUDevice)
	}
	var out []store.GPUProfile
	for _, g := range gs {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		info := g.Info()
		fmt.Fprintf(o.IO.Err, "profile: GPU %d (%s): copies to it, GEMM %dx%dx%d ...\n", info.Ordinal, info.Name, shape[0], shape[1], shape[2])
		d := time.Duration(o.Seconds * float64(time.Second))
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

// measuredGPUs turns a profile's GPUs into the TPC model's measured
// figures by catalog model (the mean over the GPUs of one model), and
// notes the GPUs no catalog model describes.
func measuredGPUs(ps []store.GPUProfile, c *profiles.Catalog) (map[string]tpc.MeasuredGPU, []string) {
	out := map[string]tpc.MeasuredGPU{}
	count := map[string]int{}
	var notes []string
	for _, p := range ps {
		g, ok := c.GPUForDriverName(p.Name, p.MemoryGiB)
		if !ok {
			notes = append(notes, fmt.Sprintf("GPU %d (%s, %.1f GiB) matches no catalog GPU: its rates are not used (add its model with --catalog)", p.Ordinal, p.Name, p.MemoryGiB))
			continue
		}
		m := out[g.Key]
		m.Name = p.Name
		m.GEMMTFLOPS += p.GEMMGFLOPS / 1000
		m.H2DGBps += p.H2DPinnedGBps
		out[g.Key] = m
		count[g.Key]++
	}
	for k, m := range out {
		n := float64(count[k])
		m.GEMMTFLOPS /= n
		m.H2DGBps /= n
		out[k] = m
	}
	return out, notes
}
