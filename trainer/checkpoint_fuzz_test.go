package trainer

import (
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"

	"github.com/gnnplan/gnnplan/trainer/nn"
)

// FuzzLoadCheckpoint feeds resume checkpoints whose checksum is right
// (the harness appends it to the fuzzed body, as someone who edits a
// checkpoint recomputes it) and whose header and parameters are anything:
// loading refuses or restores, never panics, and what it restores is a
// state a run could have saved.
func FuzzLoadCheckpoint(f *testing.F) {
	d := load(f, synthDataset(f, 300, 8))
	o := smallOptions(nn.GraphSAGE)
	o.Epochs, o.EvalEvery = 3, 0
	o.Checkpoint = f.TempDir()
	// A fresh trainer's checkpoint (epoch 0, batch 0) is the seed.
	if err := newTrainer(f, d, o, 1).saveCheckpoint(); err != nil {
		f.Fatal(err)
	}
	path := filepath.Join(o.Checkpoint, CheckpointFile)
	good, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good[:len(good)-4])
	f.Add(good[:len(good)/2])
	f.Add([]byte(checkpointMagic + "\x02\x00\x00\x00{}"))
	ro := o
	ro.Resume = true
	tr := newTrainer(f, d, ro, 1)
	table := crc32.MakeTable(crc32.Castagnoli)
	f.Fuzz(func(t *testing.T, body []byte) {
		data := binary.LittleEndian.AppendUint32(append([]byte(nil), body...), crc32.Checksum(body, table))
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := tr.loadCheckpoint(); err != nil {
			return
		}
		if err := checkState(tr.run, tr.opts.Epochs, tr.workers.batches); err != nil {
			t.Fatalf("restored a state no run saves: %v", err)
		}
	})
}
