package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gnnplan/gnnplan/trainer/store"
)

func TestProfileMeasuresAndRecommendUsesIt(t *testing.T) {
	dir := t.TempDir()
	save := filepath.Join(dir, "profile.json")
	// t.TempDir() may be on tmpfs or overlay: this test is about the
	// profile reaching recommend, not about the device check.
	data := synthData(t, dir, "--nodes", "3000", "--edges", "15000", "--feature-dim", "8")
	code, out, errOut := runCLI(t, "profile", "--ssd-dir", dir, "--feature-bytes", "512", "--depths", "1,8", "--seconds", "0.2",
		"--file-size-mib", "8", "-o", "json", "--save", save, "--allow-non-block", "--dataset", data)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var p store.MachineProfile
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatal(err)
	}
	if len(p.Disks) != 1 || len(p.Disks[0].Depths) != 2 || p.SSDGBps <= 0 || p.MemcpyGBps <= 0 || p.Disks[0].Depths[1].IOPS <= 0 {
		t.Fatalf("profile %+v", p)
	}
	if c := p.Compute; c == nil || !(c.GEMMGFLOPS > 0) || !(c.SamplerEdgesPerSPerCore > 0) || c.Cores < 1 || !strings.Contains(c.SamplerGraph, data) {
		t.Errorf("compute profile %+v: want GEMM and sampling rates measured on %s", c, data)
	}
	code, out, errOut = runCLI(t, "recommend", "--measured", save, "--top", "1")
	if code != 0 {
		t.Fatalf("recommend --measured: exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "recommended:") {
		t.Errorf("no recommendation:\n%s", out)
	}
}

func TestProfileBadInputExitsTwo(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "p.json")
	os.WriteFile(garbage, []byte("{not json"), 0o644)
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"zero feature bytes", []string{"profile", "--feature-bytes", "0"}, "--feature-bytes"},
		{"missing directory", []string{"profile", "--ssd-dir", filepath.Join(dir, "none")}, "none"},
		{"garbage measured profile", []string{"recommend", "--measured", garbage}, "p.json"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := runCLI(t, tc.args...)
			if code != 2 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr %q: want exit 2 and one line mentioning %q", code, errOut, tc.want)
			}
		})
	}
}

func TestProfileRefusesANonBlockDirectory(t *testing.T) {
	if _, err := os.Stat("/dev/shm"); err != nil {
		t.Skip("no /dev/shm on this machine")
	}
	dir, err := os.MkdirTemp("/dev/shm", "gnnplan-cli-profile-")
	if err != nil {
		t.Skipf("cannot write to /dev/shm: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if mi, err := os.ReadFile("/proc/self/mountinfo"); err != nil || !strings.Contains(string(mi), " /dev/shm ") || !strings.Contains(string(mi), "- tmpfs") {
		t.Skip("/dev/shm is not a tmpfs mount here")
	}
	args := []string{"profile", "--ssd-dir", dir, "--feature-bytes", "512", "--depths", "4", "--seconds", "0.05", "--file-size-mib", "1", "--no-compute"}
	code, _, errOut := runCLI(t, args...)
	if code != 2 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, dir) || !strings.Contains(errOut, "not on a block device") {
		t.Errorf("exit %d, stderr %q: want exit 2 and one line naming %s as not on a block device", code, errOut, dir)
	}
	code, out, errOut := runCLI(t, append(args, "--allow-non-block")...)
	if code != 0 {
		t.Fatalf("--allow-non-block: exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "note: "+dir+": not on a block device") {
		t.Errorf("--allow-non-block: the output does not flag the directory:\n%s", out)
	}
}

// TestProfileGPUsReachRecommend: a profile's GPUs (here the emulated ones,
// then an H100 as a real profile names it) reach recommend --measured:
// a GPU the catalog knows replaces the catalog's compute rate and link in
// the plan's training time; one it does not is named in a note.
func TestProfileGPUsReachRecommend(t *testing.T) {
	dir := t.TempDir()
	save := filepath.Join(dir, "profile.json")
	data := synthData(t, dir, "--nodes", "2000", "--edges", "10000", "--feature-dim", "8")
	code, out, errOut := runCLI(t, "profile", "--ssd-dir", dir, "--feature-bytes", "512", "--depths", "1", "--seconds", "0.05",
		"--file-size-mib", "4", "-o", "json", "--save", save, "--allow-non-block", "--dataset", data, "--gpu-device", "cuda-emulated", "--gpus", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var p store.MachineProfile
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatal(err)
	}
	if len(p.GPUs) != 2 || p.GPUs[1].Ordinal != 1 || !(p.GPUs[0].H2DPinnedGBps > 0) || !(p.GPUs[0].GEMMGFLOPS > 0) {
		t.Fatalf("GPUs %+v: want two measured", p.GPUs)
	}
	code, _, errOut = runCLI(t, "recommend", "--measured", save, "--top", "1")
	if code != 0 || !strings.Contains(errOut, "GPU 0 (emulated on the CPU (kernels/internal/cudac), 0.0 GiB) matches no catalog GPU") {
		t.Errorf("exit %d, stderr %q: want a note that the emulated GPUs match no catalog GPU", code, errOut)
	}

	p.GPUs = []store.GPUProfile{{Ordinal: 0, Name: "NVIDIA H100 PCIe", MemoryGiB: 79.6, H2DPinnedGBps: 25.1, GEMMGFLOPS: 40000, GEMMShape: [3]int{8192, 256, 256}}}
	js, _ := json.Marshal(p)
	os.WriteFile(save, js, 0o644)
	plan := filepath.Join(dir, "plan.json")
	code, _, errOut = runCLI(t, "recommend", "--measured", save, "--gpu-model", "h100-80gb-pcie", "--gpus", "2", "--budget", "200000", "--save", plan)
	if code != 0 {
		t.Fatalf("recommend --measured with an H100: exit %d: %s", code, errOut)
	}
	raw, _ := os.ReadFile(plan)
	for _, want := range []string{`"measured_gpus"`, "measured on a NVIDIA H100 PCIe: GEMM 40.0 TFLOPS", "measured 25.1 GB/s host-to-device"} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("plan does not mention %q", want)
		}
	}
}
