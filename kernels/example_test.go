package kernels_test

import (
	"fmt"

	"github.com/gnnplan/gnnplan/kernels"
)

// A product on the CPU backend with gonum's GEMM: C = A B.
func ExampleCPU_Gemm() {
	cpu, err := kernels.NewCPU(kernels.CPUOptions{Threads: 1, BLAS: "gonum"})
	if err != nil {
		fmt.Println(err)
		return
	}
	a := cpu.Wrap(2, 3, []float32{1, 2, 3, 4, 5, 6})
	b := cpu.Wrap(3, 2, []float32{1, 0, 0, 1, 1, 1})
	c := cpu.NewMat(2, 2)
	cpu.Gemm(false, false, 1, a, b, 0, c)
	out := make([]float32, 4)
	cpu.Download(out, c)
	fmt.Println(out)
	// Output: [4 5 10 11]
}
