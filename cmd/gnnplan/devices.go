package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gnnplan/gnnplan/kernels"
	"github.com/gnnplan/gnnplan/tpc"
)

// The --device values.
const (
	deviceCPU         = "cpu"
	deviceCUDA        = "cuda"
	deviceCUDAEmulate = "cuda-emulated"
)

// gpuOrdinals reads --gpus: "all", a count N (the first N GPUs), or a
// list of ordinals "0,2". available is the driver's count; planned the
// plan's GPUs (0 without a plan), which "" (the flag not given) takes,
// else all of them.
func gpuOrdinals(flag string, available, planned int) ([]int, error) {
	if available < 1 {
		return nil, fmt.Errorf("the driver lists no GPU")
	}
	first := func(n int) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	switch {
	case flag == "" && planned > 0:
		if planned > available {
			return nil, fmt.Errorf("the plan trains on %d GPUs and this machine has %d (give --gpus N, or --workers to run its layout on fewer)", planned, available)
		}
		return first(planned), nil
	case flag == "" || flag == "all":
		return first(available), nil
	case !strings.Contains(flag, ","):
		n, err := strconv.Atoi(flag)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("--gpus %q: want all, a count N >= 1, or ordinals such as 0,2", flag)
		}
		if n > available {
			return nil, fmt.Errorf("--gpus %d: this machine has %d GPUs", n, available)
		}
		return first(n), nil
	}
	var out []int
	for _, f := range strings.Split(flag, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 || n >= available {
			return nil, fmt.Errorf("--gpus %q: %q is not a GPU ordinal (valid: 0 to %d)", flag, f, available-1)
		}
		for _, m := range out {
			if m == n {
				return nil, fmt.Errorf("--gpus %q: GPU %d listed twice", flag, n)
			}
		}
		out = append(out, n)
	}
	return out, nil
}

// trainBackends opens the backends --device and --gpus ask for: one CPU
// backend, or one GPU backend per GPU (a worker each). notes are what the
// user should know about them.
func trainBackends(o *trainOptions, plan *tpc.Plan) (bs []kernels.Backend, notes []string, err error) {
	if o.BLASThreads < 0 {
		return nil, nil, usageErrorf("--blas-threads: %d (valid: >= 1, or 0 for auto)", o.BLASThreads)
	}
	if o.BLASThreads > 0 && o.Device != deviceCPU {
		return nil, nil, usageErrorf("--blas-threads %d: only with --device cpu", o.BLASThreads)
	}
	planned := 0
	if plan != nil {
		planned = plan.Hardware.GPUs
	}
	switch o.Device {
	case deviceCPU:
		if o.GPUs != "" {
			return nil, nil, usageErrorf("--gpus %s: needs --device cuda", o.GPUs)
		}
		cpu, err := kernels.NewCPU(kernels.CPUOptions{Threads: o.Threads, BLAS: o.BLAS, BLASThreads: o.BLASThreads})
		if err != nil {
			return nil, nil, usageErrorf("--blas: %v", err)
		}
		if n := cpu.Note(); n != "" {
			notes = append(notes, n)
		}
		return []kernels.Backend{cpu}, notes, nil
	case deviceCUDA:
		n, err := kernels.CUDACount()
		if err != nil {
			return nil, nil, usageErrorf("--device cuda: %v", err)
		}
		ords, err := gpuOrdinals(o.GPUs, n, planned)
		if err != nil {
			return nil, nil, usageErrorf("--device cuda: %v", err)
		}
		gs, err := kernels.NewCUDAs(ords)
		if err != nil {
			return nil, nil, usageErrorf("--device cuda: %v", err)
		}
		for _, g := range gs {
			bs = append(bs, g)
		}
		return bs, nil, nil
	case deviceCUDAEmulate:
		// As many emulated GPUs as asked (default: the plan's, else one):
		// a way to run the GPU code path, kernels and peer copies
		// included, without a GPU.
		gs, err := emulatedGPUs(o.GPUs, max(planned, 1), "--device")
		if err != nil {
			return nil, nil, err
		}
		for _, g := range gs {
			bs = append(bs, g)
		}
		return bs, []string{"--device cuda-emulated runs the CUDA kernels on the CPU one thread at a time: it checks the GPU code path, slowly; its times say nothing about a GPU"}, nil
	}
	return nil, nil, usageErrorf("--device %q: valid: %s, %s, %s", o.Device, deviceCPU, deviceCUDA, deviceCUDAEmulate)
}

// describeBackends names the backend, or the GPUs with a worker each.
func describeBackends(bs []kernels.Backend) string {
	if len(bs) == 1 {
		return bs[0].Name()
	}
	names := make([]string, len(bs))
	for i, b := range bs {
		names[i] = b.Name()
	}
	return fmt.Sprintf("%d workers, one per GPU: %s", len(bs), strings.Join(names, "; "))
}

// emulatedGPUs opens --gpus's count of emulated GPUs (n when it is not
// given); flag names the device flag for messages.
func emulatedGPUs(gpus string, n int, flag string) ([]*kernels.GPU, error) {
	if gpus != "" {
		var err error
		if n, err = strconv.Atoi(gpus); err != nil || n < 1 {
			return nil, usageErrorf("--gpus %q: with %s %s, a count N >= 1", gpus, flag, deviceCUDAEmulate)
		}
	}
	gs := make([]*kernels.GPU, n)
	for i := range gs {
		g, err := kernels.NewEmulatedGPU(i, 0)
		if err != nil {
			return nil, usageErrorf("%s %s: %v", flag, deviceCUDAEmulate, err)
		}
		gs[i] = g
	}
	return gs, nil
}
