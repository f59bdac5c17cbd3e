package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var updateGolden = flag.Bool("update-golden", false, "rewrite testdata/golden from this build's outputs")

// golden compares got with testdata/golden/name, or writes it there with
// -update-golden. On a difference it names the first line that differs.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *updateGolden {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (record it with go test ./cmd/gnnplan -run TestOutputsAsRecorded -update-golden)", err)
	}
	if bytes.Equal(got, want) {
		return
	}
	gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := range max(len(gl), len(wl)) {
		var g, w string
		if i < len(gl) {
			g = gl[i]
		}
		if i < len(wl) {
			w = wl[i]
		}
		if g != w {
			t.Fatalf("%s differs from the recorded output at line %d:\n got: %.300s\nwant: %.300s", name, i+1, g, w)
		}
	}
}

// TestOutputsAsRecorded holds what users act on to outputs recorded
// before a redesign (issue 36): recommend's plans on embedded machines,
// place's layout of a small graph, and train's loss curves for each
// model, bit for bit. The loss curves use the pure-Go GEMM, whose bits
// do not depend on the CPU's make, as the trainer's do not on the thread
// count; Go's math.Exp takes the same FMA path on every x86-64 server CPU
// of the last decade (AVX2 and FMA). A change meant to alter them records them again with
// -update-golden, and says so in its commit.
func TestOutputsAsRecorded(t *testing.T) {
	if testing.Short() {
		t.Skip("plans, a layout and three trainings")
	}
	t.Run("plans", func(t *testing.T) {
		for _, c := range []struct {
			name string
			args []string
		}{
			{"recommend-default.json", nil},
			{"recommend-moment-a-papers100M.json", []string{"--profile", "moment-a", "--workload", "ogbn-papers100M", "--budget", "50000"}},
			{"recommend-hyperion-a-uk-2014-gcn.json", []string{"--profile", "hyperion-a", "--workload", "uk-2014", "--model", "gcn", "--budget", "120000"}},
		} {
			args := append([]string{"recommend", "-o", "json"}, c.args...)
			code, out, errOut := runCLI(t, args...)
			if code != 0 {
				t.Fatalf("%v: exit %d: %s", args, code, errOut)
			}
			golden(t, c.name, []byte(out))
		}
	})
	t.Run("layout", func(t *testing.T) {
		dir := t.TempDir()
		data := filepath.Join(dir, "data")
		if err := os.Mkdir(data, 0o755); err != nil {
			t.Fatal(err)
		}
		writeDataset(t, data, 3000, 8, 16)
		plan := filepath.Join(dir, "plan.json")
		if code, _, errOut := runCLI(t, "recommend", "--dataset", data, "--ssds", "2-4", "--gpus", "2", "--save", plan); code != 0 {
			t.Fatalf("recommend: %s", errOut)
		}
		if code, _, errOut := runCLI(t, "place", "--plan", plan, "--dataset", data); code != 0 {
			t.Fatalf("place: %s", errOut)
		}
		var sums strings.Builder
		for _, f := range []string{"layout_bin.npy", "layout_row.npy", "layout.json", "hotness.npy"} {
			b, err := os.ReadFile(filepath.Join(data, f))
			if err != nil {
				t.Fatal(err)
			}
			h := sha256.Sum256(b)
			sums.WriteString(hex.EncodeToString(h[:]) + "  " + f + "\n")
		}
		golden(t, "place-layout.sha256", []byte(sums.String()))
	})
	t.Run("loss curves", func(t *testing.T) {
		for _, model := range []string{"graphsage", "gcn", "gat"} {
			code, out, errOut := runCLI(t, "train", "--synthetic-nodes", "2000", "--model", model, "--epochs", "4", "--blas", "gonum",
				"--threads", "2", "-o", "json")
			if code != 0 {
				t.Fatalf("train %s: exit %d: %s", model, code, errOut)
			}
			var r struct {
				Epochs []struct {
					Epoch   int      `json:"epoch"`
					Loss    float64  `json:"loss"`
					TrainAc *float64 `json:"train_acc"`
					ValAcc  *float64 `json:"val_acc"`
					TestAcc *float64 `json:"test_acc"`
				} `json:"epochs"`
				TestAcc float64 `json:"test_acc"`
			}
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatalf("%v:\n%s", err, out)
			}
			b, err := json.MarshalIndent(r, "", " ")
			if err != nil {
				t.Fatal(err)
			}
			golden(t, "train-"+model+"-loss.json", append(b, '\n'))
		}
	})
}
