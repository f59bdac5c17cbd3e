package tpc

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/gnnplan/gnnplan/maxflow/placement"
)

// The loaders a plan can train with (trainer.Loaders; docs/loaders.md).
const (
	LoaderOnline     = "online"
	LoaderPacked     = "packed"
	LoaderMultistage = "multistage"
)

// Multistage's shape as the planner prices it: the train command's
// defaults, parts per macro-batch over parts (no halos), and two
// macro-batches held in host memory at once (one training, the next being
// read into, its pieces where they are read).
const (
	plannedParts      = 8
	plannedMacroParts = 2
	macroBuffers      = 2
	// pieceRowOverhead is what a packed row carries besides its data: its
	// vertex id and checksum.
	pieceRowOverhead = 8
	// overlayBytesPerVertex is a multistage worker's lookup of where
	// each vertex's row is (store.Overlay).
	overlayBytesPerVertex = 8
)

// LoaderChoice is the loader a plan trains with and why, beside what each
// loader would do on the plan's hardware.
type LoaderChoice struct {
	Name    string         `json:"name"`
	Why     string         `json:"why"`
	Options []LoaderOption `json:"options"`
}

// LoaderOption is one loader priced on a plan's hardware and layout.
type LoaderOption struct {
	Name string `json:"name"`
	// EpochIOSeconds is the epoch's reads, overlapped with training;
	// EpochSeconds the epoch, the longer of the two.
	EpochIOSeconds float64 `json:"epoch_io_s"`
	EpochSeconds   float64 `json:"epoch_s"`
	// SSDBytesPerBatch is what the SSDs read per batch (decimal bytes;
	// the multistage loader's reads per epoch spread over its batches),
	// RequestBytes one read's size.
	SSDBytesPerBatch float64 `json:"ssd_bytes_per_batch"`
	RequestBytes     float64 `json:"request_bytes"`
	// DiskSpaceGB is what the loader keeps on the SSDs: the feature rows
	// they serve, plus one packed epoch or the parts' copy; Fits says the
	// SSDs hold it (and, for the multistage loader, host memory its
	// macro-batches, HostGiB).
	DiskSpaceGB float64 `json:"disk_space_GB"`
	HostGiB     float64 `json:"host_GiB,omitempty"`
	Fits        bool    `json:"fits"`
	// AccuracyRisk says what the loader may cost in accuracy.
	AccuracyRisk string `json:"accuracy_risk"`
}

// loaderInput is what pricing the loaders needs of an option.
type loaderInput struct {
	w       Workload
	hw      Hardware
	a       Assumptions
	s       Shares
	ssd     float64 // one SSD's rate for online reads, GB/s
	online  float64 // the flow model's epoch IO seconds, online
	train   float64 // the epoch's training seconds
	hostGiB float64
	allowed []string // empty: every loader
	// flow times a placement's epoch at other tiers.
	flow func(placement.Tiers) (float64, error)
}

// chooseLoader prices each loader on in's option and picks the fastest
// that fits; within 2% of it, the one with less risk (online, then
// packed).
func chooseLoader(in loaderInput) (LoaderChoice, error) {
	opts := []LoaderOption{onlineOption(in)}
	if in.hw.SSDs > 0 && in.s.SSDShare > 0 {
		p, err := packedOption(in)
		if err != nil {
			return LoaderChoice{}, err
		}
		m, err := multistageOption(in)
		if err != nil {
			return LoaderChoice{}, err
		}
		opts = append(opts, p, m)
	}
	best := 0
	for i, o := range opts {
		if o.Fits && (len(in.allowed) == 0 || slices.Contains(in.allowed, o.Name)) && o.EpochSeconds < opts[best].EpochSeconds*0.98 {
			best = i
		}
	}
	c := LoaderChoice{Name: opts[best].Name, Options: opts}
	c.Why = loaderWhy(in, opts, best)
	return c, nil
}

// ssdRowsGB is the feature rows the SSDs hold (those no cache holds), GB.
func ssdRowsGB(in loaderInput) float64 {
	rows := float64(in.w.Vertices) - in.s.CPUCacheRows - in.s.GPUCacheRows
	return math.Max(0, rows) * float64(in.w.FeatureRowBytes()) / 1e9
}

// ssdGBPerEpoch is what online reads from the SSDs an epoch.
func ssdGBPerEpoch(in loaderInput) float64 { return in.s.SSDShare * in.s.EpochGB }

func onlineOption(in loaderInput) LoaderOption {
	blk := float64(max(in.a.SSDBlockBytes, 1))
	row := float64(in.w.FeatureRowBytes())
	batches := float64(max(in.w.BatchesPerEpoch(), 1))
	o := LoaderOption{Name: LoaderOnline, EpochIOSeconds: in.online, SSDBytesPerBatch: ssdGBPerEpoch(in) * 1e9 / batches,
		RequestBytes: math.Ceil(row/blk) * blk, DiskSpaceGB: ssdRowsGB(in), AccuracyRisk: "none: the reference"}
	o.EpochSeconds = math.Max(o.EpochIOSeconds, in.train)
	o.Fits = o.DiskSpaceGB <= float64(in.hw.SSDs)*in.hw.SSD.CapacityGB || in.hw.SSDs == 0
	return o
}

// packedOption: the same rows read, each batch's as one sequential piece
// per SSD at the drives' sequential rate; one epoch packed on top of the
// rows (later epochs reuse it).
func packedOption(in loaderInput) (LoaderOption, error) {
	row := float64(in.w.FeatureRowBytes())
	batches := float64(max(in.w.BatchesPerEpoch(), 1))
	rate := in.hw.SSD.ReadGBps * row / (row + pieceRowOverhead)
	secs, err := in.flow(tiersFor(in.s, rate, in.a))
	if err != nil {
		return LoaderOption{}, err
	}
	perBatch := ssdGBPerEpoch(in) * 1e9 / batches
	o := LoaderOption{Name: LoaderPacked, EpochIOSeconds: secs, SSDBytesPerBatch: perBatch * (row + pieceRowOverhead) / row,
		RequestBytes: perBatch / float64(in.hw.SSDs), DiskSpaceGB: ssdRowsGB(in) + ssdGBPerEpoch(in)*(row+pieceRowOverhead)/row,
		AccuracyRisk: "none for the epochs packed (online's batches, bit for bit); later epochs reuse them in order"}
	o.EpochSeconds = math.Max(o.EpochIOSeconds, in.train)
	o.Fits = o.DiskSpaceGB <= float64(in.hw.SSDs)*in.hw.SSD.CapacityGB
	return o, nil
}

// multistageOption: each SSD row read once an epoch by each worker (one
// a GPU), sequentially, into host memory, which then serves the batches
// as a CPU cache does; the SSD reads overlap the host's traffic to the
// GPUs. Each worker holds its own macro-batches, pieces and overlay (a
// word a vertex, store.Overlay).
func multistageOption(in loaderInput) (LoaderOption, error) {
	s := in.s
	s.HostShare, s.SSDShare = s.HostShare+s.SSDShare, 0
	hostSecs, err := in.flow(tiersFor(s, 1, in.a))
	if err != nil {
		return LoaderOption{}, err
	}
	workers := float64(max(in.hw.GPUs, 1))
	rows := ssdRowsGB(in)
	read := workers * rows / (float64(in.hw.SSDs) * in.hw.SSD.ReadGBps)
	batches := float64(max(in.w.BatchesPerEpoch(), 1))
	macro := rows * plannedMacroParts / plannedParts
	held := macroBuffers*macro*1e9 + overlayBytesPerVertex*float64(in.w.Vertices)
	o := LoaderOption{Name: LoaderMultistage, EpochIOSeconds: math.Max(hostSecs, read), SSDBytesPerBatch: workers * rows * 1e9 / batches,
		RequestBytes: macro * 1e9 / plannedMacroParts / float64(in.hw.SSDs), DiskSpaceGB: 2 * rows, HostGiB: workers * held / (1 << 30),
		AccuracyRisk: "neighbours outside a macro-batch and the hubs are not sampled: within 1 point of online on Cora and CiteSeer, " +
			"15 points under it on a synthetic graph whose macro-batches held 36% of a training vertex's sampled neighbourhood (10 after 100 epochs, 4 with --halo-fraction 1); " +
			"train reports the share (docs/loaders.md)"}
	o.EpochSeconds = math.Max(o.EpochIOSeconds, in.train)
	room := in.hostGiB*(1-in.a.HostReserveShare) - s.CPUCacheRows*float64(in.w.FeatureRowBytes())/(1<<30)
	o.Fits = o.DiskSpaceGB <= float64(in.hw.SSDs)*in.hw.SSD.CapacityGB && o.HostGiB <= room
	return o, nil
}

// loaderWhy says in a sentence why opts[best] was chosen.
func loaderWhy(in loaderInput, opts []LoaderOption, best int) string {
	b := opts[best]
	if len(opts) == 1 {
		return "online: no feature rows are read from SSDs"
	}
	var others string
	for i, o := range opts {
		if i == best || (i == 0 && best != 0) { // online is named on its own
			continue
		}
		fit := ""
		if !o.Fits {
			fit = ", does not fit"
		}
		others += fmt.Sprintf("; %s %s%s", o.Name, FormatSeconds(o.EpochSeconds), fit)
	}
	switch {
	case b.EpochSeconds >= in.train*0.999 && best == 0:
		return fmt.Sprintf("online: training bounds the epoch (%s), so reading ahead would gain nothing%s", FormatSeconds(in.train), others)
	case best == 0 && len(in.allowed) > 0:
		return fmt.Sprintf("online: the loaders allowed (%s)%s", strings.Join(in.allowed, ", "), others)
	case best == 0:
		return fmt.Sprintf("online: the others gain under 2%% or do not fit%s", others)
	}
	return fmt.Sprintf("%s: epoch %s (reads %s, %.3g MB per read) against online's %s (%.3g KiB reads)%s", b.Name, FormatSeconds(b.EpochSeconds),
		FormatSeconds(b.EpochIOSeconds), b.RequestBytes/1e6, FormatSeconds(opts[0].EpochSeconds), opts[0].RequestBytes/1024, others)
}
