package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/gnnplan/gnnplan/kernels"
)

// version is set at link time (-ldflags "-X main.version=v1.2.3"); builds
// without it report the module version or the VCS revision.
var version = ""

func versionString() string {
	v := version
	info, ok := debug.ReadBuildInfo()
	if v == "" && ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		v = info.Main.Version
	}
	rev := ""
	if ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				rev = s.Value[:12]
			}
		}
	}
	if v == "" {
		v = "dev"
	}
	if rev != "" {
		v += " (" + rev + ")"
	}
	return v + " " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH
}

func newVersionCmd(d *deps) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print gnnplan's version",
		Args:  cobra.NoArgs,
		Long: `Print gnnplan's version, and the compute backend train uses: the CPU
kernels with the GEMM library found at run time (OpenBLAS when its shared
library loads, gonum's pure-Go BLAS otherwise, and why), which OpenBLAS
kernels run and who chose them (the library, OPENBLAS_CORETYPE, or gnnplan
where the library's release would fall back to generic ones on this CPU),
and the GPUs the CUDA backend sees (a binary built with make build-cuda).`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := newHuman(d.Out, "table")
			defer out.Flush()
			if _, err := fmt.Fprintf(out, "gnnplan %s\n", versionString()); err != nil {
				return err
			}
			be, err := kernels.NewCPU(kernels.CPUOptions{})
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "compute: %s\n", be.Name())
			if n := be.Note(); n != "" {
				fmt.Fprintf(out, "note: %s\n", n)
			}
			fmt.Fprintf(out, "gpus: %s\n", kernels.DescribeGPUs(kernels.CUDAGPUs()))
			return nil
		},
	}
}
