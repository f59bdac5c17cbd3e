// Package gather holds the statistics of a feature gather, shared by the
// trainer's FeatureSource interface and the feature store that implements
// it, so neither names the other's type.
package gather

// Stats describe one gather of feature rows (or, added up, many): where
// the rows came from, over the tiers of Moment's and Hyperion's machines
// (a worker's GPU cache, the sockets' CPU caches, the SSDs), and what
// reading them cost.
type Stats struct {
	Rows            int `json:"rows"`
	WorkerCacheHits int `json:"worker_cache_hits"` // rows from the worker-local (GPU) cache
	// ResidentHits is how many of those a worker's device held resident
	// (GatherResident): not copied at all.
	ResidentHits    int `json:"resident_hits,omitempty"`
	SocketCacheHits int `json:"socket_cache_hits"` // rows from the CPU caches
	SSDRows         int `json:"ssd_rows"`
	// Bytes is the matrix gathered: Rows x row bytes.
	Bytes int64 `json:"bytes"`
	// UsefulBytes is what the SSD rows hold, DeviceBytes what the reader
	// read from the devices for them (aligned blocks; rows sharing a block
	// read it once), DeviceReads in how many reads.
	UsefulBytes int64   `json:"useful_bytes"`
	DeviceBytes int64   `json:"device_bytes"`
	DeviceReads int     `json:"device_reads"`
	Seconds     float64 `json:"seconds"`
	// CheckSeconds is the time the checks of the SSD rows against their
	// checksums took, summed over the goroutines they run on alongside
	// the reads; CheckWaitSeconds is the part of Seconds spent waiting for
	// them after the last read: what the checks added to the gather.
	CheckSeconds     float64 `json:"check_seconds"`
	CheckWaitSeconds float64 `json:"check_wait_seconds"`
	// ReadSeconds is the part of Seconds spent on the SSD rows: their
	// requests built, read and checked. The disk rows' pace as the gather
	// handles them, apart from the copies of cached rows.
	ReadSeconds float64 `json:"read_seconds"`
	// BinRows counts the rows each bin served, in the order of
	// store.Store.BinIDs: the traffic a layout sent to each bin.
	BinRows []int `json:"bin_rows,omitempty"`
}

// ReadAmplification is device bytes per useful byte read from SSD
// (DiskGNN's measure), 0 when nothing was read.
func (g Stats) ReadAmplification() float64 {
	if g.UsefulBytes == 0 {
		return 0
	}
	return float64(g.DeviceBytes) / float64(g.UsefulBytes)
}

// Add accumulates o into g.
func (g *Stats) Add(o Stats) {
	g.Rows += o.Rows
	g.WorkerCacheHits += o.WorkerCacheHits
	g.ResidentHits += o.ResidentHits
	g.SocketCacheHits += o.SocketCacheHits
	g.SSDRows += o.SSDRows
	g.Bytes += o.Bytes
	g.UsefulBytes += o.UsefulBytes
	g.DeviceBytes += o.DeviceBytes
	g.DeviceReads += o.DeviceReads
	g.Seconds += o.Seconds
	g.CheckSeconds += o.CheckSeconds
	g.CheckWaitSeconds += o.CheckWaitSeconds
	g.ReadSeconds += o.ReadSeconds
	if len(g.BinRows) < len(o.BinRows) {
		g.BinRows = append(g.BinRows, make([]int, len(o.BinRows)-len(g.BinRows))...)
	}
	for i, n := range o.BinRows {
		g.BinRows[i] += n
	}
}
