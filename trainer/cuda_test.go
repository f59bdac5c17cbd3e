//go:build cuda

package trainer

import (
	"testing"

	"github.com/gnnplan/gnnplan/kernels"
	"github.com/gnnplan/gnnplan/trainer/nn"
)

// These run only in a build with the cuda tag on a machine with an NVIDIA
// GPU: go test -tags cuda -c ./trainer, then run the binary there with
// -test.run CUDA.

// TestCUDATrainsAsTheCPU trains each model a few steps on GPU 0 and on
// the CPU from the same seed and wants the same parameters to float32
// rounding (cuBLAS sums in its own order); with two GPUs, two workers on
// them against two workers on GPU 0.
func TestCUDATrainsAsTheCPU(t *testing.T) {
	d := load(t, synthDataset(t, 2000, 64))
	n, err := kernels.CUDACount()
	if err != nil {
		t.Fatal(err)
	}
	gpus, err := kernels.NewCUDAs(firstN(min(n, 2)))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s", gpus[0].Name())
	for _, kind := range nn.Kinds() {
		t.Run(string(kind), func(t *testing.T) {
			o := gpuTestOptions(kind)
			o.Workers = 1
			cpu, err := kernels.NewCPU(kernels.CPUOptions{Threads: 2})
			if err != nil {
				t.Fatal(err)
			}
			want, _ := runOn(t, d, o, []kernels.Backend{cpu})
			got, res := runOn(t, d, o, []kernels.Backend{gpus[0]})
			if err := closeBits(got, want, 1e-3); err != nil {
				t.Errorf("GPU 0 against the CPU: %v", err)
			}
			t.Logf("one GPU: %d steps, %.1f ms an epoch, %d of %d values bitwise the CPU's", res.Epochs[0].Batches,
				1000*res.Epochs[0].Seconds, sameBits(got, want), len(want))
			if len(gpus) < 2 {
				t.Log("one GPU: the two-GPU comparison needs two")
				return
			}
			o.Workers = 2
			one, _ := runOn(t, d, o, []kernels.Backend{gpus[0], gpus[0]})
			two, _ := runOn(t, d, o, []kernels.Backend{gpus[0], gpus[1]})
			if err := closeBits(two, one, 1e-5); err != nil {
				t.Errorf("two workers on two GPUs against two on one: %v", err)
			}
			t.Logf("two GPUs: %d of %d values bitwise those of two workers on one", sameBits(two, one), len(one))
		})
	}
}

func firstN(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

func sameBits(a, b []uint32) int {
	n := 0
	for i := range a {
		if a[i] == b[i] {
			n++
		}
	}
	return n
}
