package trainer

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"sort"

	"github.com/gnnplan/gnnplan/internal/fsutil"
	"github.com/gnnplan/gnnplan/internal/inputerr"

	"github.com/gnnplan/gnnplan/kernels"
	"github.com/gnnplan/gnnplan/trainer/dataset"
	"github.com/gnnplan/gnnplan/trainer/nn"
)

// CheckpointFile is the checkpoint's name inside --checkpoint DIR.
const CheckpointFile = "checkpoint.gnnckpt"

// CheckpointVersion versions the checkpoint format.
const CheckpointVersion = 1

// checkpointMagic starts every checkpoint file. The layout after it: the
// header's length (uint32, little-endian), the header (JSON), each
// parameter's value, Adam first and second moments (float32,
// little-endian, row-major, in the header's order), and a CRC-32C of
// everything before it (uint32).
const checkpointMagic = "GNNPLAN-CHECKPOINT\n"

// maxCheckpointHeader bounds the header a reader accepts (the epoch
// history of a long run is a few hundred bytes an epoch).
const maxCheckpointHeader = 64 << 20

type ckptHeader struct {
	SchemaVersion int         `json:"schema_version"`
	Model         nn.Config   `json:"model"`
	Dataset       ckptDataset `json:"dataset"`
	Run           ckptRun     `json:"run"`
	State         runState    `json:"state"`
	Params        []ckptParam `json:"params"`
}

// ckptDataset identifies the dataset a checkpoint was trained on.
type ckptDataset struct {
	Name       string `json:"name"`
	NumNodes   int64  `json:"num_nodes"`
	NumEdges   int64  `json:"num_edges"`
	FeatureDim int    `json:"feature_dim"`
	NumClasses int    `json:"num_classes"`
	NumTrain   int    `json:"num_train"`
	NumVal     int    `json:"num_val"`
	NumTest    int    `json:"num_test"`
	// TrainHash is a hash of the training split, so a reshuffled split
	// of the same sizes is told apart.
	TrainHash uint32 `json:"train_hash"`
}

// ckptRun holds the options that decide the parameters a run ends with
// (the number of epochs may grow on resume; threads do not change
// results).
type ckptRun struct {
	Fanouts       []int   `json:"fanouts"`
	BatchSize     int     `json:"batch_size"`
	EvalBatchSize int     `json:"eval_batch_size"`
	LR            float32 `json:"lr"`
	WeightDecay   float32 `json:"weight_decay"`
	Patience      int     `json:"patience"`
	EvalEvery     int     `json:"eval_every"`
	Seed          uint64  `json:"seed"`
	RowNormalize  bool    `json:"row_normalize"`
	// Workers is the data-parallel workers when more than one (0: one),
	// so checkpoints of one worker read as before.
	Workers int `json:"workers,omitempty"`
}

type ckptParam struct {
	Name string `json:"name"`
	Rows int    `json:"rows"`
	Cols int    `json:"cols"`
}

// checkpointIdentity is what a checkpoint records of the dataset g and
// the options o, to refuse resuming another run.
func checkpointIdentity(g *dataset.Graph, o Options) (ckptDataset, ckptRun) {
	m := g.Meta
	h := crc32.New(crc32.MakeTable(crc32.Castagnoli))
	var buf [8]byte
	for _, v := range g.Train {
		binary.LittleEndian.PutUint64(buf[:], uint64(v))
		h.Write(buf[:])
	}
	return ckptDataset{Name: m.Name, NumNodes: m.NumNodes, NumEdges: m.NumEdges, FeatureDim: m.FeatureDim, NumClasses: m.NumClasses,
			NumTrain: len(g.Train), NumVal: len(g.Val), NumTest: len(g.Test), TrainHash: h.Sum32()},
		ckptRun{Fanouts: o.Fanouts, BatchSize: o.BatchSize, EvalBatchSize: o.EvalBatchSize, LR: o.LR, WeightDecay: o.WeightDecay,
			Patience: o.Patience, EvalEvery: o.EvalEvery, Seed: o.Seed, RowNormalize: o.RowNormalize, Workers: workersID(o.Workers)}
}

// saveCheckpoint writes the run's state atomically: a temporary file,
// fsynced, renamed over the old checkpoint.
func (t *Trainer) saveCheckpoint() error {
	ds, run := checkpointIdentity(t.graph, t.opts)
	h := ckptHeader{SchemaVersion: CheckpointVersion, Model: t.config, Dataset: ds, Run: run, State: t.run}
	h.State.AdamSteps = t.adam.Steps
	params := t.model.Params()
	for _, p := range params {
		h.Params = append(h.Params, ckptParam{Name: p.Name, Rows: p.W.Rows, Cols: p.W.Cols})
	}
	hdr, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("checkpoint header: %w", err)
	}
	var buf bytes.Buffer
	buf.WriteString(checkpointMagic)
	binary.Write(&buf, binary.LittleEndian, uint32(len(hdr)))
	buf.Write(hdr)
	for _, p := range params {
		vals := make([]float32, p.W.Len())
		for _, m := range []*kernels.Mat{p.W, p.M, p.V} {
			t.backend.Download(vals, m)
			binary.Write(&buf, binary.LittleEndian, vals)
		}
	}
	binary.Write(&buf, binary.LittleEndian, crc32.Checksum(buf.Bytes(), crc32.MakeTable(crc32.Castagnoli)))
	return writeFileAtomic(filepath.Join(t.opts.Checkpoint, CheckpointFile), buf.Bytes())
}

// CheckCheckpointDir makes the checkpoint directory dir if it is missing and
// checks that a file can be written in it, so that a run finds out before
// its first epoch, not at the end of it.
func CheckCheckpointDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("checkpoint directory: %w", err)
	}
	f, err := os.CreateTemp(dir, ".write-check-*")
	if err != nil {
		return fmt.Errorf("checkpoint directory %s: not writable: %w", dir, err)
	}
	f.Close()
	return os.Remove(f.Name())
}

// writeFileAtomic writes the checkpoint file at path whole, its
// directory made first.
func writeFileAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	if err := fsutil.WriteFileAtomic(path, data); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return nil
}

// loadCheckpoint restores parameters, Adam's state and the run's position
// from the checkpoint, refusing one that is damaged or was written for
// another model, dataset or set of options.
func (t *Trainer) loadCheckpoint() error {
	path := filepath.Join(t.opts.Checkpoint, CheckpointFile)
	bad := func(format string, args ...any) error {
		return &inputerr.Error{Path: path, Msg: fmt.Sprintf(format, args...)}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return &inputerr.Error{Path: path, Field: "--resume", Msg: "no checkpoint to resume from"}
		}
		return &inputerr.Error{Path: path, Msg: "cannot read checkpoint", Err: err}
	}
	h, payload, err := parseCheckpoint(data)
	if err != nil {
		return bad("%s", err)
	}
	if f, a, b := firstDifference(h.Model, t.config); f != "" {
		return bad("written for a different model: %s is %s there, %s in this run", "model."+f, a, b)
	}
	ds, run := checkpointIdentity(t.graph, t.opts)
	if f, a, b := firstDifference(h.Dataset, ds); f != "" {
		return bad("written for a different dataset: %s is %s there, %s in %s", "dataset."+f, a, b, t.graph.Dir)
	}
	if f, a, b := firstDifference(h.Run, run); f != "" {
		return bad("written with different training options: %s is %s there, %s in this run (a resumed run must repeat them)", f, a, b)
	}
	params := t.model.Params()
	if len(h.Params) != len(params) {
		return bad("holds %d parameters, the model has %d", len(h.Params), len(params))
	}
	want := 0
	for i, p := range params {
		hp := h.Params[i]
		if hp.Name != p.Name || hp.Rows != p.W.Rows || hp.Cols != p.W.Cols {
			return bad("parameter %d is %s %dx%d, the model's is %s %dx%d", i, hp.Name, hp.Rows, hp.Cols, p.Name, p.W.Rows, p.W.Cols)
		}
		want += 3 * 4 * p.W.Len() // values, Adam's two moments
	}
	if len(payload) != want {
		return bad("%d bytes of parameters, the model has %d", len(payload), want)
	}
	if err := checkState(h.State, t.opts.Epochs, t.workers.batches); err != nil {
		return bad("%s", err)
	}
	off := 0
	for _, p := range params {
		n := p.W.Len()
		for _, m := range []*kernels.Mat{p.W, p.M, p.V} {
			vals := make([]float32, n)
			for j := range vals {
				vals[j] = math.Float32frombits(binary.LittleEndian.Uint32(payload[4*(off+j):]))
			}
			t.backend.Upload(m, p.W.Rows, p.W.Cols, vals)
			off += n
		}
	}
	t.run = h.State
	t.adam.Steps = h.State.AdamSteps
	t.workers.broadcast()
	return nil
}

// checkState refuses a run state no run of epochs epochs, batches(e)
// batches in epoch e, could have saved: an epoch, batch or step count out
// of range.
func checkState(st runState, epochs int, batches func(epoch int) int) error {
	switch {
	case st.Epoch < 0:
		return fmt.Errorf("state.epoch %d: want 0 or more", st.Epoch)
	case st.Epoch < epochs && (st.NextBatch < 0 || st.NextBatch > batches(st.Epoch)):
		return fmt.Errorf("state.next_batch %d: want 0 to the epoch's %d batches", st.NextBatch, batches(st.Epoch))
	case st.AdamSteps < 0:
		return fmt.Errorf("state.adam_steps %d: want 0 or more", st.AdamSteps)
	case len(st.History) > st.Epoch:
		return fmt.Errorf("state.history holds %d epochs, state.epoch is %d", len(st.History), st.Epoch)
	case st.Best.Epoch < 0 || st.Best.Epoch > st.Epoch:
		return fmt.Errorf("state.best.epoch %d: want 0 to state.epoch %d", st.Best.Epoch, st.Epoch)
	}
	p := st.Partial
	for _, v := range []int{p.Labeled, p.Correct, p.Samples, p.Batches} {
		if v < 0 {
			return fmt.Errorf("state.partial holds a negative count (%d)", v)
		}
	}
	return nil
}

// workersID is how a checkpoint records the worker count: 0 for one.
func workersID(n int) int {
	if n <= 1 {
		return 0
	}
	return n
}

// parseCheckpoint checks a checkpoint's magic, version and checksum and
// returns its header and the parameter bytes.
func parseCheckpoint(data []byte) (*ckptHeader, []byte, error) {
	if !bytes.HasPrefix(data, []byte(checkpointMagic)) {
		return nil, nil, errors.New("not a gnnplan checkpoint")
	}
	if len(data) < len(checkpointMagic)+8 {
		return nil, nil, errors.New("truncated checkpoint")
	}
	body, sum := data[:len(data)-4], binary.LittleEndian.Uint32(data[len(data)-4:])
	if crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)) != sum {
		return nil, nil, errors.New("checksum mismatch: the checkpoint is damaged or truncated")
	}
	rest := body[len(checkpointMagic):]
	n := binary.LittleEndian.Uint32(rest)
	rest = rest[4:]
	if n > maxCheckpointHeader || int(n) > len(rest) {
		return nil, nil, fmt.Errorf("header of %d bytes in a checkpoint of %d", n, len(data))
	}
	var h ckptHeader
	dec := json.NewDecoder(bytes.NewReader(rest[:n]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&h); err != nil {
		return nil, nil, fmt.Errorf("malformed header: %w", err)
	}
	if h.SchemaVersion != CheckpointVersion {
		return nil, nil, fmt.Errorf("schema_version %d (this gnnplan reads %d)", h.SchemaVersion, CheckpointVersion)
	}
	return &h, rest[n:], nil
}

// firstDifference compares two values field by field through their JSON
// form and returns the first key (sorted) whose values differ, with both
// values, or "" when they are equal.
func firstDifference(a, b any) (field, va, vb string) {
	ma, mb := jsonFields(a), jsonFields(b)
	keys := make([]string, 0, len(ma))
	for k := range ma {
		keys = append(keys, k)
	}
	for k := range mb {
		if _, ok := ma[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !bytes.Equal(ma[k], mb[k]) {
			return k, orNone(ma[k]), orNone(mb[k])
		}
	}
	return "", "", ""
}

func jsonFields(v any) map[string]json.RawMessage {
	data, _ := json.Marshal(v)
	var m map[string]json.RawMessage
	json.Unmarshal(data, &m)
	return m
}

func orNone(b json.RawMessage) string {
	if b == nil {
		return "absent"
	}
	return string(b)
}
