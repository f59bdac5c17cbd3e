package kernels

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/gnnplan/gnnplan/internal/inputerr"
)

// The devices Open takes.
const (
	DeviceCPU          = "cpu"
	DeviceCUDA         = "cuda"
	DeviceCUDAEmulated = "cuda-emulated"
)

// OpenOptions say which backends Open opens.
type OpenOptions struct {
	// Device is DeviceCPU, DeviceCUDA (a build with the cuda tag) or
	// DeviceCUDAEmulated.
	Device string
	// GPUs picks the GPUs: "all", a count N (the first N) or ordinals
	// "0,2"; "" takes PlannedGPUs (a plan's count), else all.
	GPUs        string
	PlannedGPUs int
	// Threads, BLAS and BLASThreads set the CPU backend (CPUOptions).
	Threads     int
	BLAS        string
	BLASThreads int
}

// Open opens the backends o asks for: one CPU backend, or one GPU backend
// per GPU (a training worker each), and notes what the user should know
// about them. Errors name the flag (--device, --gpus, --blas, --blas-threads).
func Open(o OpenOptions) (bs []Backend, notes []string, err error) {
	if o.BLASThreads < 0 {
		return nil, nil, inputerr.Errorf("", "", "--blas-threads: %d (valid: >= 1, or 0 for auto)", o.BLASThreads)
	}
	if o.BLASThreads > 0 && o.Device != DeviceCPU {
		return nil, nil, inputerr.Errorf("", "", "--blas-threads %d: only with --device cpu", o.BLASThreads)
	}
	switch o.Device {
	case DeviceCPU:
		if o.GPUs != "" {
			return nil, nil, inputerr.Errorf("", "", "--gpus %s: needs --device cuda", o.GPUs)
		}
		cpu, err := NewCPU(CPUOptions{Threads: o.Threads, BLAS: o.BLAS, BLASThreads: o.BLASThreads})
		if err != nil {
			return nil, nil, inputerr.Errorf("", "", "--blas: %v", err)
		}
		if n := cpu.Note(); n != "" {
			notes = append(notes, n)
		}
		return []Backend{cpu}, notes, nil
	case DeviceCUDA:
		n, err := CUDACount()
		if err != nil {
			return nil, nil, inputerr.Errorf("", "", "--device cuda: %v", err)
		}
		ords, err := GPUOrdinals(o.GPUs, n, o.PlannedGPUs)
		if err != nil {
			return nil, nil, inputerr.Errorf("", "", "--device cuda: %v", err)
		}
		gs, err := NewCUDAs(ords)
		if err != nil {
			return nil, nil, inputerr.Errorf("", "", "--device cuda: %v", err)
		}
		for _, g := range gs {
			bs = append(bs, g)
		}
		return bs, nil, nil
	case DeviceCUDAEmulated:
		// As many emulated GPUs as asked (default: the plan's, else one):
		// a way to run the GPU code path, kernels and peer copies
		// included, without a GPU.
		gs, err := EmulatedGPUs(o.GPUs, max(o.PlannedGPUs, 1), "--device")
		if err != nil {
			return nil, nil, err
		}
		for _, g := range gs {
			bs = append(bs, g)
		}
		return bs, []string{"--device cuda-emulated runs the CUDA kernels on the CPU one thread at a time: it checks the GPU code path, slowly; its times say nothing about a GPU"}, nil
	}
	return nil, nil, inputerr.Errorf("", "", "--device %q: valid: %s, %s, %s", o.Device, DeviceCPU, DeviceCUDA, DeviceCUDAEmulated)
}

// GPUOrdinals reads --gpus: "all", a count N (the first N GPUs), or a
// list of ordinals "0,2". available is the driver's count; planned the
// plan's GPUs (0 without a plan), which "" (the flag not given) takes,
// else all of them.
func GPUOrdinals(flag string, available, planned int) ([]int, error) {
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

// DescribeBackends names the backend, or the GPUs with a worker each.
func DescribeBackends(bs []Backend) string {
	if len(bs) == 1 {
		return bs[0].Name()
	}
	names := make([]string, len(bs))
	for i, b := range bs {
		names[i] = b.Name()
	}
	return fmt.Sprintf("%d workers, one per GPU: %s", len(bs), strings.Join(names, "; "))
}

// EmulatedGPUs opens gpus's count of emulated GPUs (n when gpus is "");
// flag names the device flag for messages.
func EmulatedGPUs(gpus string, n int, flag string) ([]*GPU, error) {
	if gpus != "" {
		var err error
		if n, err = strconv.Atoi(gpus); err != nil || n < 1 {
			return nil, inputerr.Errorf("", "", "--gpus %q: with %s %s, a count N >= 1", gpus, flag, DeviceCUDAEmulated)
		}
	}
	gs := make([]*GPU, n)
	for i := range gs {
		g, err := NewEmulatedGPU(i, 0)
		if err != nil {
			return nil, inputerr.Errorf("", "", "%s %s: %v", flag, DeviceCUDAEmulated, err)
		}
		gs[i] = g
	}
	return gs, nil
}

// DescribeLocalGPUs says how many NVIDIA GPUs the driver lists here.
func DescribeLocalGPUs() string {
	entries, err := os.ReadDir("/proc/driver/nvidia/gpus")
	if err != nil || len(entries) == 0 {
		return "no NVIDIA GPU"
	}
	return fmt.Sprintf("%d NVIDIA GPUs the driver lists", len(entries))
}

// DescribeGPUs says what the CUDA backend sees: the driver's GPUs, or why
// there are none.
func DescribeGPUs(gpus []GPUInfo, err error) string {
	switch {
	case err != nil:
		return "none: " + err.Error()
	case len(gpus) == 0:
		return "none: the CUDA driver lists no GPU"
	}
	names := make([]string, len(gpus))
	for i, g := range gpus {
		names[i] = fmt.Sprintf("%d: %s (%.1f GiB, sm_%s, %s)", g.Ordinal, g.Name, float64(g.MemoryBytes)/(1<<30), strings.ReplaceAll(g.ComputeCapability, ".", ""), g.PCIBusID)
	}
	return fmt.Sprintf("%d on the CUDA backend: %s", len(gpus), strings.Join(names, "; "))
}
