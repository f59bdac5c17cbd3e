package trainplan

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/gnnplan/gnnplan/tpc"
	"github.com/gnnplan/gnnplan/trainer"
	"github.com/gnnplan/gnnplan/trainer/nn"
	"github.com/gnnplan/gnnplan/trainer/store"
)

// Report is a training run's JSON report (train -o json).
type Report struct {
	SchemaVersion  int                  `json:"schema_version"`
	Dataset        string               `json:"dataset"`
	Model          nn.Config            `json:"model"`
	Params         int                  `json:"params"`
	Backend        string               `json:"backend"`
	Devices        []string             `json:"devices,omitempty"`
	Fanouts        []int                `json:"fanouts"`
	BatchSize      int                  `json:"batch_size"`
	LR             float32              `json:"lr"`
	WeightDecay    float32              `json:"weight_decay"`
	Seed           uint64               `json:"seed"`
	Epochs         []trainer.EpochStats `json:"epochs"`
	BestEpoch      int                  `json:"best_epoch"`
	BestValAcc     trainer.Metric       `json:"best_val_acc"`
	TestAcc        trainer.Metric       `json:"test_acc"`
	Stop           string               `json:"stop"`
	ResumedEpoch   int                  `json:"resumed_from_epoch,omitempty"`
	TrainSeconds   float64              `json:"train_s"`
	SamplesPerSec  float64              `json:"samples_per_s"`
	CheckpointPath string               `json:"checkpoint,omitempty"`
	Notes          []string             `json:"notes,omitempty"`
	// Features is where rows came from: "memory" or "store".
	Features string       `json:"features"`
	Store    *StoreReport `json:"store,omitempty"`
	// PredictedEpochS is the predicted time of a whole epoch and
	// MeasuredEpochS the median of the whole epochs trained, the first
	// left out where others follow (WarmEpochs; 0 when none);
	// PredictionErrorPct is how far the measurement was from the
	// prediction, in percent of it.
	PredictedEpochS    float64 `json:"predicted_epoch_s"`
	MeasuredEpochS     float64 `json:"measured_epoch_s"`
	PredictionErrorPct float64 `json:"prediction_error_pct"`
	// PlanPredictedEpochS is the epoch the plan predicted for its
	// hardware, PlanHardware that hardware: beside the probe's prediction
	// and the measurement, they say how far the plan was off.
	PlanPredictedEpochS float64 `json:"plan_predicted_epoch_s,omitempty"`
	PlanHardware        string  `json:"plan_hardware,omitempty"`
	// PlanErrorPct is how far the median epoch was from the plan's
	// prediction, in percent of it; PlanStep is the plan's step, class by
	// class, beside the kernel times the epochs measured (a plan of this
	// machine's CPU).
	PlanErrorPct *float64       `json:"plan_prediction_error_pct,omitempty"`
	PlanStep     []PlanStepTerm `json:"plan_step,omitempty"`
	// PlanWithEpochDiskS is the plan's model run again at the share of
	// rows the epochs found in memory and the disk rate they read at (out
	// of core), PlanWithEpochDiskErrorPct the median epoch's distance from
	// it: how far the model was off with the disk's moving rate taken out.
	PlanWithEpochDiskS        float64  `json:"plan_predicted_with_epoch_disk_s,omitempty"`
	PlanWithEpochDiskErrorPct *float64 `json:"plan_with_epoch_disk_error_pct,omitempty"`
	// WithEpochDiskS is the epoch predicted again at the median disk rate
	// the epochs read at (EpochDiskRowsPerS); 0 when none read from disk.
	WithEpochDiskS    float64 `json:"predicted_with_epoch_disk_s,omitempty"`
	EpochDiskRowsPerS float64 `json:"epoch_disk_rows_per_s,omitempty"`
	// WithBatchReadsS is the median of those epochs predicted again with
	// each batch's own reads (EpochCheck.WithBatchReads); 0 where none was.
	WithBatchReadsS float64      `json:"predicted_with_batch_reads_s,omitempty"`
	Prediction      *Prediction  `json:"prediction,omitempty"`
	Checks          []EpochCheck `json:"epoch_checks,omitempty"`
}

// StoreReport describes an out-of-core run's feature store.
type StoreReport struct {
	Engine            string            `json:"engine,omitempty"` // the SSD reader's; "" when no row is on SSD
	CachedFraction    float64           `json:"cached_fraction"`  // share of the rows held in memory
	Rows              store.GatherStats `json:"rows"`             // summed over the epochs trained
	ReadAmplification float64           `json:"read_amplification"`
	// Bins is each bin's share of the rows gathered: the traffic the
	// layout (or the cache override) sent it, to compare with place's
	// targets.
	Bins []BinReport `json:"bins"`
}

// BinReport is one bin's measured traffic.
type BinReport struct {
	ID    string  `json:"id"`
	Rows  int     `json:"rows"`
	Share float64 `json:"share"`
}

// Run is what a finished training run hands NewReport.
type Run struct {
	Dataset    string
	Config     nn.Config
	Options    trainer.Options
	Result     *trainer.Result
	WallS      float64
	Notes      []string
	Store      *store.Store // nil: every row in memory
	Plan       *tpc.Plan    // nil: trained without a plan
	Prediction *Prediction  // nil: nothing predicted
	Checkpoint string       // the checkpoint directory, if any
}

// NewReport is r's report: its epochs, where its rows came from, and each
// whole epoch checked against the prediction and the plan.
func NewReport(r Run) Report {
	res, to := r.Result, r.Options
	rep := Report{SchemaVersion: 1, Dataset: r.Dataset, Model: r.Config, Params: res.Params, Backend: res.Backend, Devices: res.Devices,
		Fanouts: to.Fanouts, BatchSize: to.BatchSize, LR: to.LR, WeightDecay: to.WeightDecay, Seed: to.Seed,
		Epochs: res.Epochs, BestEpoch: res.BestEpoch, BestValAcc: res.BestValAcc, TestAcc: res.TestAcc,
		Stop: res.Stop, ResumedEpoch: res.ResumedEpoch, TrainSeconds: r.WallS, Notes: r.Notes, Features: "memory"}
	if r.Store != nil {
		rep.Features = "store"
		rep.Store = newStoreReport(r.Store, res.Epochs)
	}
	var samples, secs float64
	for _, e := range res.Epochs {
		samples += e.SamplesPerSecond * e.Seconds
		secs += e.Seconds
	}
	if secs > 0 {
		rep.SamplesPerSec = samples / secs
	}
	if p := r.Plan; p != nil {
		rep.PlanPredictedEpochS = p.PredictedEpochS
		h := p.Hardware
		rep.PlanHardware = fmt.Sprintf("%d x %s, %d x %s", h.GPUs, h.GPUModel, h.SSDs, h.SSDModel)
		if h.GPUs == 0 {
			rep.PlanHardware = fmt.Sprintf("CPU workers on %d cores", h.CPUCores)
			rep.PlanStep = PlanStep(p.CPUBatch, res.Epochs)
		}
	}
	if r.Prediction != nil {
		rep.checkPrediction(r.Prediction, r.Plan)
	}
	if r.Checkpoint != "" {
		rep.CheckpointPath = r.Checkpoint + "/" + trainer.CheckpointFile
	}
	return rep
}

// newStoreReport sums the epochs' rows and each bin's share of them.
func newStoreReport(s *store.Store, epochs []trainer.EpochStats) *StoreReport {
	sr := &StoreReport{Engine: s.Engine(), CachedFraction: s.CachedFraction()}
	for _, e := range epochs {
		sr.Rows.Add(e.Rows)
	}
	sr.ReadAmplification = sr.Rows.ReadAmplification()
	for i, id := range s.BinIDs() {
		b := BinReport{ID: id}
		if i < len(sr.Rows.BinRows) {
			b.Rows = sr.Rows.BinRows[i]
		}
		if sr.Rows.Rows > 0 {
			b.Share = float64(b.Rows) / float64(sr.Rows.Rows)
		}
		sr.Bins = append(sr.Bins, b)
	}
	return sr
}

// checkPrediction sets the epochs beside the prediction and the plan's.
func (r *Report) checkPrediction(pred *Prediction, plan *tpc.Plan) {
	r.Prediction = pred
	r.PredictedEpochS = pred.Epoch.EpochS
	for _, e := range r.Epochs {
		if c, ok := pred.Check(e); ok {
			r.Checks = append(r.Checks, c)
		}
	}
	if r.MeasuredEpochS = MedianEpochSeconds(pred, r.Epochs); r.MeasuredEpochS == 0 {
		return
	}
	r.PredictionErrorPct = tpc.ErrorPct(r.MeasuredEpochS, r.PredictedEpochS)
	r.WithEpochDiskS, r.EpochDiskRowsPerS = pred.WithEpochDisk(r.Checks)
	var byBatch []float64
	for _, c := range WarmEpochs(r.Checks) {
		if c.WithBatchReads != nil {
			byBatch = append(byBatch, c.WithBatchReads.PredictedS)
		}
	}
	if len(byBatch) > 0 {
		r.WithBatchReadsS = Median(byBatch)
	}
	if r.PlanPredictedEpochS > 0 {
		e := tpc.ErrorPct(r.MeasuredEpochS, r.PlanPredictedEpochS)
		r.PlanErrorPct = &e
	}
	if rows := r.storeRows(); plan != nil && rows.Rows > 0 && r.EpochDiskRowsPerS > 0 {
		hit := 1 - float64(rows.SSDRows)/float64(rows.Rows)
		if again, ok := plan.PredictAgain(hit, r.EpochDiskRowsPerS); ok {
			e := tpc.ErrorPct(r.MeasuredEpochS, again)
			r.PlanWithEpochDiskS, r.PlanWithEpochDiskErrorPct = again, &e
		}
	}
}

// storeRows is where the run's rows came from, summed over its epochs
// (zero in memory).
func (r *Report) storeRows() store.GatherStats {
	if r.Store == nil {
		return store.GatherStats{}
	}
	return r.Store.Rows
}

// WriteSummary writes the end-of-run lines: the epochs trained, the
// accuracy, where the rows came from and the prediction's error.
func (r *Report) WriteSummary(w io.Writer) {
	how := map[string]string{"epochs": "trained", "early_stop": "stopped early after", "interrupted": "interrupted after"}[r.Stop]
	fmt.Fprintf(w, "%s %d epochs in %.1f s (%.0f samples/s)", how, len(r.Epochs), r.TrainSeconds, r.SamplesPerSec)
	if r.BestEpoch > 0 {
		fmt.Fprintf(w, "; best validation accuracy %s at epoch %d: test accuracy %s", FormatMetric(r.BestValAcc), r.BestEpoch, FormatMetric(r.TestAcc))
	}
	fmt.Fprintln(w)
	if st := r.Store; st != nil && st.Rows.Rows > 0 {
		fmt.Fprintf(w, "feature rows: %d gathered, %.1f%% from memory, %.1f%% from SSD (%d reads, %.1f MB read, read amplification %.2f, every row checked against its CRC-32C, %s waited for the checks)\n",
			st.Rows.Rows, 100*float64(st.Rows.WorkerCacheHits+st.Rows.SocketCacheHits)/float64(st.Rows.Rows),
			100*float64(st.Rows.SSDRows)/float64(st.Rows.Rows), st.Rows.DeviceReads, float64(st.Rows.DeviceBytes)/1e6, st.ReadAmplification, tpc.FormatSeconds(st.Rows.CheckWaitSeconds))
		if st.Rows.ResidentHits > 0 {
			fmt.Fprintf(w, "feature rows resident in GPU memory (the layout's GPU cache bins, never copied): %.1f%%\n", 100*float64(st.Rows.ResidentHits)/float64(st.Rows.Rows))
		}
	}
	r.writePlanSummary(w)
	r.writePredictionSummary(w)
	if r.CheckpointPath != "" {
		fmt.Fprintf(w, "checkpoint: %s\n", r.CheckpointPath)
	}
}

// writePlanSummary is the plan's prediction beside the measurement.
func (r *Report) writePlanSummary(w io.Writer) {
	if !(r.PlanPredictedEpochS > 0) {
		return
	}
	fmt.Fprintf(w, "the plan predicted %s an epoch on its hardware (%s)", tpc.FormatSeconds(r.PlanPredictedEpochS), r.PlanHardware)
	if r.MeasuredEpochS > 0 {
		fmt.Fprintf(w, "; measured here %s (%s)", tpc.FormatSeconds(r.MeasuredEpochS), r.Backend)
	}
	if r.PlanErrorPct != nil {
		fmt.Fprintf(w, ": %+.1f%%", *r.PlanErrorPct)
	}
	if e := r.PlanWithEpochDiskErrorPct; e != nil {
		fmt.Fprintf(w, "; its model at the rows from memory and the disk rate the epochs had (%.0f rows/s) predicts %s: %+.1f%%",
			r.EpochDiskRowsPerS, tpc.FormatSeconds(r.PlanWithEpochDiskS), *e)
	}
	fmt.Fprintln(w)
	if len(r.PlanStep) > 0 {
		parts := make([]string, len(r.PlanStep))
		for i, t := range r.PlanStep {
			parts[i] = fmt.Sprintf("%s %.1f/%.1f", t.Term, t.PlanMS, t.MeasuredMS)
		}
		fmt.Fprintf(w, "the plan's batch, planned/measured ms: %s\n", strings.Join(parts, ", "))
	}
}

// firstLeftOut says the first of n checked epochs was left out of the
// median (WarmEpochs).
func firstLeftOut(n int) string {
	if n > 1 {
		return ", the first left out"
	}
	return ""
}

// writePredictionSummary is the probe's prediction beside the measurement.
func (r *Report) writePredictionSummary(w io.Writer) {
	if r.Prediction == nil || r.MeasuredEpochS == 0 {
		return
	}
	fmt.Fprintf(w, "epoch time: measured %s (median of %d%s), predicted %s: %+.1f%%",
		tpc.FormatSeconds(r.MeasuredEpochS), len(WarmEpochs(r.Checks)), firstLeftOut(len(r.Checks)), tpc.FormatSeconds(r.PredictedEpochS), r.PredictionErrorPct)
	if r.WithEpochDiskS > 0 {
		fmt.Fprintf(w, "; at the disk rate the epochs read at (median %.0f rows/s, against %.0f before training) predicted %s: %+.1f%%",
			r.EpochDiskRowsPerS, r.Prediction.Costs.DiskRowsPerS, tpc.FormatSeconds(r.WithEpochDiskS), tpc.ErrorPct(r.MeasuredEpochS, r.WithEpochDiskS))
		if b := r.WithBatchReadsS; readsMoved(b, r.WithEpochDiskS) {
			fmt.Fprintf(w, "; at each batch's own reads (the disk's rate moved inside the epochs) %s: %+.1f%%", tpc.FormatSeconds(b), tpc.ErrorPct(r.MeasuredEpochS, b))
		}
	}
	fmt.Fprintln(w)
}

// Describe is the line printed before training.
func (p *Prediction) Describe() string {
	e := p.Epoch
	s := fmt.Sprintf("predicted epoch: %s (%s-bound; per batch: compute %.1f ms", tpc.FormatSeconds(e.EpochS), e.Bound, 1000*p.Costs.ComputeS)
	if e.Batches > 0 && e.GatherS > 0 {
		s += fmt.Sprintf(", gather %.1f ms", 1000*e.GatherS/e.Batches)
	}
	s += fmt.Sprintf("; %.0f rows per batch, %.1f%% from memory", p.Costs.InputRows, 100*e.HitShare)
	if p.Costs.DiskRowsPerS > 0 {
		s += fmt.Sprintf(", disk %.0f rows/s", p.Costs.DiskRowsPerS)
	}
	s += ")"
	if p.Beside != nil {
		s += fmt.Sprintf("; first stage: %.0f%% of the shorter of its reads and checks under the longer, compute %.1f ms a batch beside it",
			100*p.Costs.StageOverlap, 1000*p.Costs.BesideS)
	}
	if b := p.BLAS; b != nil {
		var tried []string
		for i, t := range b.Tried {
			unit := " ms"
			if i == 0 {
				unit = " ms a batch"
			}
			tried = append(tried, fmt.Sprintf("%.1f%s on %d", 1000*t.BatchS, unit, t.Threads))
		}
		s += fmt.Sprintf("; products on %s (probed %s)", ThreadsName(b.Threads), strings.Join(tried, ", "))
	}
	return s
}

// FormatMetric prints an accuracy to four places, "-" when not measured.
func FormatMetric(m trainer.Metric) string {
	if math.IsNaN(float64(m)) {
		return "-"
	}
	return fmt.Sprintf("%.4f", float64(m))
}
