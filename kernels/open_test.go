package kernels

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestGPUOrdinals reads --gpus as a user of an 8-GPU server writes it,
// with and without a plan, and refuses what names no GPU of the machine.
func TestGPUOrdinals(t *testing.T) {
	cases := []struct {
		flag            string
		available, plan int
		want            []int
		err             string
	}{
		{"", 8, 0, []int{0, 1, 2, 3, 4, 5, 6, 7}, ""},
		{"", 8, 4, []int{0, 1, 2, 3}, ""},
		{"all", 8, 4, []int{0, 1, 2, 3, 4, 5, 6, 7}, ""},
		{"2", 8, 0, []int{0, 1}, ""},
		{"6,7", 8, 0, []int{6, 7}, ""},
		{"3, 1", 8, 0, []int{3, 1}, ""},
		{"", 2, 8, nil, "the plan trains on 8 GPUs and this machine has 2"},
		{"9", 8, 0, nil, "--gpus 9: this machine has 8 GPUs"},
		{"0", 8, 0, nil, "want all, a count N >= 1"},
		{"x", 8, 0, nil, "want all, a count N >= 1"},
		{"0,8", 8, 0, nil, `"8" is not a GPU ordinal (valid: 0 to 7)`},
		{"1,1", 8, 0, nil, "GPU 1 listed twice"},
		{"all", 0, 0, nil, "the driver lists no GPU"},
	}
	for _, c := range cases {
		got, err := GPUOrdinals(c.flag, c.available, c.plan)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("--gpus %q on %d GPUs, plan %d: error %v, want one mentioning %q", c.flag, c.available, c.plan, err, c.err)
		case c.err == "" && (err != nil || !slices.Equal(got, c.want)):
			t.Errorf("--gpus %q on %d GPUs, plan %d: %v, %v; want %v", c.flag, c.available, c.plan, got, err, c.want)
		}
	}
}

// TestDescribeGPUs: version's GPU line for a build without CUDA, a driver
// that fails or lists none, and an 8-GPU server.
func TestDescribeGPUs(t *testing.T) {
	var eight []GPUInfo
	for i := range 8 {
		eight = append(eight, GPUInfo{Ordinal: i, Name: "NVIDIA H100 80GB HBM3", MemoryBytes: 85 << 30, ComputeCapability: "9.0", PCIBusID: fmt.Sprintf("0000:%02x:00.0", 0x18+i)})
	}
	cases := []struct {
		gpus []GPUInfo
		err  error
		want string
	}{
		{nil, ErrNoCUDA, "none: this gnnplan was built without CUDA"},
		{nil, errors.New("cuda: NoDevice"), "none: cuda: NoDevice"},
		{nil, nil, "none: the CUDA driver lists no GPU"},
		{eight, nil, "8 on the CUDA backend: 0: NVIDIA H100 80GB HBM3 (85.0 GiB, sm_90, 0000:18:00.0);"},
	}
	for _, c := range cases {
		if got := DescribeGPUs(c.gpus, c.err); !strings.HasPrefix(got, c.want) {
			t.Errorf("DescribeGPUs(%d GPUs, %v) = %q, want it to start %q", len(c.gpus), c.err, got, c.want)
		}
	}
}
