package main

import (
	"encoding/json"
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
		got, err := gpuOrdinals(c.flag, c.available, c.plan)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("--gpus %q on %d GPUs, plan %d: error %v, want one mentioning %q", c.flag, c.available, c.plan, err, c.err)
		case c.err == "" && (err != nil || !slices.Equal(got, c.want)):
			t.Errorf("--gpus %q on %d GPUs, plan %d: %v, %v; want %v", c.flag, c.available, c.plan, got, err, c.want)
		}
	}
}

// TestTrainOnEmulatedGPUs runs train's GPU path end to end without a GPU:
// two emulated GPUs, a worker each, gradients moved between them; the
// report names both devices and the run learns.
func TestTrainOnEmulatedGPUs(t *testing.T) {
	code, out, errOut := runCLI(t, "train", "--device", "cuda-emulated", "--gpus", "2", "--epochs", "3", "--synthetic-nodes", "1500",
		"--probe-batches", "0", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r struct {
		Devices []string `json:"devices"`
		Epochs  []struct {
			Loss float64 `json:"loss"`
		} `json:"epochs"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("report: %v\n%s", err, out)
	}
	if len(r.Devices) != 2 || !strings.Contains(r.Devices[0], "GPU 0") || !strings.Contains(r.Devices[1], "GPU 1") {
		t.Errorf("devices %q, want GPU 0 and GPU 1", r.Devices)
	}
	if len(r.Epochs) != 3 || !(r.Epochs[2].Loss < r.Epochs[0].Loss) {
		t.Errorf("epochs %+v: want 3 with the loss falling", r.Epochs)
	}
}
