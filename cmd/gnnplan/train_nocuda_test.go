//go:build !cuda

package main

import (
	"strings"
	"testing"
)

// TestTrainCUDAWithoutTheTag: a binary built without the cuda tag asked
// for the GPU says how to build one, in one line, with exit 2.
func TestTrainCUDAWithoutTheTag(t *testing.T) {
	code, _, errOut := runCLI(t, "train", "--epochs", "1", "--device", "cuda")
	if code != 2 || !strings.Contains(errOut, "--device cuda: this gnnplan was built without CUDA: build it with -tags cuda") ||
		strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
		t.Fatalf("exit %d, stderr %q; want exit 2 and one line saying how to build with CUDA", code, errOut)
	}
}
