package ddak

import (
	"math"
	"sync"

	"github.com/gnnplan/gnnplan/maxflow/placement"
)

// Evaluation compares a layout's traffic with the plan's targets.
type Evaluation struct {
	TotalAccesses uint64    `json:"total_accesses"`
	Bins          []BinEval `json:"bins"`
	// TargetDistance is the sum over bins of |share - target| (targets
	// normalized to sum to 1): 0 when every bin serves exactly its target,
	// at most 2.
	TargetDistance float64 `json:"target_distance"`
	// SSDMaxImbalance and SSDMeanImbalance are the largest and the mean,
	// over SSD bins with a target, of achieved / target, both taken as
	// shares of the SSD tier alone (so the caches serving more or less than
	// planned does not move them). 1 is perfect; the SSD with the largest
	// ratio sets the epoch time when the SSDs bind.
	SSDMaxImbalance  float64 `json:"ssd_max_imbalance"`
	SSDMeanImbalance float64 `json:"ssd_mean_imbalance"`
	// SSDTargetDistance is TargetDistance within the SSD tier: the sum of
	// |share of SSD traffic - share of SSD targets| over the SSD bins. When
	// the caches serve more than planned, every SSD falls short of its
	// target and TargetDistance no longer sees how the SSDs split their
	// traffic; this does.
	SSDTargetDistance float64 `json:"ssd_target_distance"`
	// CrossSocketShare is the share of all feature accesses that cross the
	// socket link (see Evaluate).
	CrossSocketShare float64 `json:"cross_socket_share"`
}

// BinEval is one bin's achieved traffic against its target.
type BinEval struct {
	ID          string                `json:"id"`
	Kind        placement.StorageKind `json:"kind"`
	Socket      int                   `json:"socket"`
	Rows        int64                 `json:"rows"`
	Accesses    uint64                `json:"accesses"`
	Share       float64               `json:"share"`        // of all accesses
	TargetShare float64               `json:"target_share"` // normalized to sum to 1
	// Ratio is Share / TargetShare, 0 when the bin has no target.
	Ratio float64 `json:"ratio"`
	// CrossSocketShare is the share of all accesses this bin sends across
	// the socket link.
	CrossSocketShare float64 `json:"cross_socket_share"`
}

// Evaluate measures layout l against bins under hotness (the one the
// layout was made with, or another epoch's, to see how well it
// generalizes). gpuSocket lists the NUMA socket of each compute node
// (GPUSockets(plan)).
//
// Cross-socket traffic: training is data parallel, so each of the G GPUs
// reads an equal share 1/G of every vertex's accesses. A row in a CPU cache
// or on an SSD under socket s is read across the socket link by every GPU
// on another socket: a bin on socket 0 read by 2 GPUs on socket 0 and 2 on
// socket 1 sends half of its accesses across. GPU caches count as local to
// their GPU, as the flow model feeds each GPU cache only to its own GPU
// (tpc replicates the hottest rows into every GPU); both policies fill the
// GPU tier alike, so this does not move a comparison. Bins or GPUs on an
// unknown socket (-1) are counted as not crossing.
func Evaluate(l *Layout, hotness []uint32, bins []Bin, gpuSocket []int) Evaluation {
	acc := binAccesses(l, hotness, len(bins))
	ev := Evaluation{Bins: make([]BinEval, len(bins))}
	rows := make([]int64, len(bins))
	if l != nil && len(l.Stats) == len(bins) {
		for i, s := range l.Stats {
			rows[i] = s.Rows
		}
	}
	var sumTarget float64
	for i, b := range bins {
		ev.TotalAccesses += acc[i]
		sumTarget += b.TargetShare
	}
	var ssdAcc float64
	var ssdTarget float64
	for i, b := range bins {
		if b.Kind == placement.StorageSSD {
			ssdAcc += float64(acc[i])
			ssdTarget += b.TargetShare
		}
	}
	nSSD := 0
	for i, b := range bins {
		e := BinEval{ID: b.ID, Kind: b.Kind, Socket: b.Socket, Rows: rows[i], Accesses: acc[i]}
		if ev.TotalAccesses > 0 {
			e.Share = float64(acc[i]) / float64(ev.TotalAccesses)
		}
		if sumTarget > 0 {
			e.TargetShare = b.TargetShare / sumTarget
		}
		if e.TargetShare > 0 {
			e.Ratio = e.Share / e.TargetShare
		}
		ev.TargetDistance += math.Abs(e.Share - e.TargetShare)
		if b.Kind != placement.StorageGPUMem && b.Socket >= 0 && len(gpuSocket) > 0 {
			remote := 0
			for _, s := range gpuSocket {
				if s >= 0 && s != b.Socket {
					remote++
				}
			}
			e.CrossSocketShare = e.Share * float64(remote) / float64(len(gpuSocket))
		}
		ev.CrossSocketShare += e.CrossSocketShare
		if b.Kind == placement.StorageSSD && ssdTarget > 0 && ssdAcc > 0 {
			ev.SSDTargetDistance += math.Abs(float64(acc[i])/ssdAcc - b.TargetShare/ssdTarget)
		}
		if b.Kind == placement.StorageSSD && b.TargetShare > 0 && ssdTarget > 0 {
			ratio := 0.0
			if ssdAcc > 0 {
				ratio = (float64(acc[i]) / ssdAcc) / (b.TargetShare / ssdTarget)
			}
			ev.SSDMaxImbalance = math.Max(ev.SSDMaxImbalance, ratio)
			ev.SSDMeanImbalance += ratio
			nSSD++
		}
		ev.Bins[i] = e
	}
	if nSSD > 0 {
		ev.SSDMeanImbalance /= float64(nSSD)
	}
	return ev
}

// binAccesses sums hotness per bin over the layout, in parallel. Vertices
// the layout does not cover, or bins it names that do not exist, are left
// out.
func binAccesses(l *Layout, hotness []uint32, nBins int) []uint64 {
	out := make([]uint64, nBins)
	if l == nil {
		return out
	}
	n := min(len(hotness), len(l.Bin))
	w := workers(int64(n))
	parts := make([][]uint64, w)
	var wg sync.WaitGroup
	for i := range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var local [256]uint64
			lo, hi := n*i/w, n*(i+1)/w
			for v, h := range hotness[lo:hi] {
				local[l.Bin[lo+v]] += uint64(h)
			}
			parts[i] = local[:]
		}()
	}
	wg.Wait()
	for _, p := range parts {
		for b := range nBins {
			out[b] += p[b]
		}
	}
	return out
}
