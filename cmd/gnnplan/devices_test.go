package main

import (
	"encoding/json"
	"strings"
	"testing"
)

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
