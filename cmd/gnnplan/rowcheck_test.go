package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gnnplan/gnnplan/maxflow/placement"
	"github.com/gnnplan/gnnplan/trainer/sample"
	"github.com/gnnplan/gnnplan/trainer/store"
)

// TestTrainStopsOnADamagedRow is the fault injection of issue 32: random
// bytes flipped in random rows of every SSD bin of a store, then training
// on every loader (the layout's caches on CPU workers, a cache override,
// every row from disk, the emulated GPU): each run stops with exit 2 and
// one line naming a damaged bin's file and one of its damaged rows, and
// no epoch finishes on a wrong row.
func TestTrainStopsOnADamagedRow(t *testing.T) {
	dir := t.TempDir()
	data := synthData(t, dir, "--nodes", "2000", "--edges", "12000", "--feature-dim", "128", "--train-fraction", "0.2")
	handLayout(t, data) // a GPU bin, a CPU cache, three SSD bins
	hot := make([]uint32, 2000)
	for v := range hot {
		hot[v] = uint32(v % 97)
	}
	if err := sample.WriteHotness(filepath.Join(data, sample.HotnessFile), hot); err != nil {
		t.Fatal(err)
	}
	ssd := filepath.Join(dir, "ssd")
	os.Mkdir(ssd, 0o755)
	if code, _, errOut := runCLI(t, "materialize", "--dataset", data, "--ssd-dir", ssd); code != 0 {
		t.Fatalf("materialize: %s", errOut)
	}
	m, err := store.ReadManifest(data)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(32, 1))
	damaged := map[string]map[int64]bool{} // bin file -> rows
	for _, b := range m.Bins {
		if b.Kind != placement.StorageSSD || b.Rows == 0 {
			continue
		}
		damaged[b.Path] = map[int64]bool{}
		f, err := os.OpenFile(b.Path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		for range max(1, b.Rows/10) {
			r := rng.Int64N(b.Rows)
			off := store.HeaderBytes + r*b.StrideBytes + rng.Int64N(b.RowBytes)
			p := []byte{0}
			f.ReadAt(p, off)
			p[0] ^= byte(1) << rng.IntN(8)
			if _, err := f.WriteAt(p, off); err != nil {
				t.Fatal(err)
			}
			damaged[b.Path][r] = true
		}
		f.Close()
	}
	if len(damaged) < 3 {
		t.Fatalf("the store has %d SSD bins with rows; want 3", len(damaged))
	}
	named := regexp.MustCompile(`(/\S+\.rows): SSD bin \S+ \(bins\[\d\]\): row (\d+) \(vertex \d+\) read back damaged`)
	for _, loader := range [][]string{
		{"--workers", "1"},
		{"--workers", "1", "--cache-fraction", "0.1"},
		{"--workers", "1", "--cache-fraction", "0"},
		{"--workers", "1", "--probe-batches", "0"},
		{"--device", "cuda-emulated", "--gpus", "1"},
	} {
		t.Run(strings.Join(loader, " "), func(t *testing.T) {
			args := append([]string{"train", "--dataset", data, "--epochs", "2", "--threads", "2", "--measure-seconds", "0.1"}, loader...)
			code, out, errOut := runCLI(t, args...)
			line := strings.TrimSpace(errOut)
			if i := strings.LastIndex(line, "\n"); i >= 0 {
				line = line[i+1:]
			}
			mm := named.FindStringSubmatch(line)
			if code != 2 || mm == nil {
				t.Fatalf("exit %d, last line %q; want exit 2 naming a bin file and a damaged row", code, line)
			}
			row, _ := strconv.ParseInt(mm[2], 10, 64)
			if !damaged[mm[1]][row] {
				t.Errorf("the error names row %d of %s, which was not damaged: %q", row, mm[1], line)
			}
			if strings.Contains(out, "epoch    1") || strings.Contains(errOut, "epoch 1:") {
				t.Errorf("an epoch finished on damaged rows:\n%s%s", out, errOut)
			}
		})
	}
	// Every damaged file is named by --verify as well.
	code, _, errOut := runCLI(t, "materialize", "--dataset", data, "--verify")
	if code != 2 || !strings.Contains(errOut, fmt.Sprintf("%d of %d SSD bin files damaged", len(damaged), len(damaged))) {
		t.Errorf("--verify after the damage: exit %d, %q", code, errOut)
	}
}
