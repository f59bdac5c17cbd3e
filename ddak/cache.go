package ddak

import (
	"context"
	"fmt"
	"math"
	"sort"

	"github.com/gnnplan/gnnplan/topology"
)

// Hyperion's transaction sizes (section III-B2).
const (
	// DefaultCLSBytes is the PCIe transfer size a memory-resident read is
	// counted in (CLS).
	DefaultCLSBytes = 64
	// DefaultSSDSBytes is the smallest SSD read (SSDS): an SSD-resident
	// read moves whole SSDS units over PCIe.
	DefaultSSDSBytes = 512
	// DefaultChunkBytes is the chunk size Z memory is split into (Hyperion
	// gives 100 MB as its example).
	DefaultChunkBytes = 100_000_000
)

// CacheOptions size Hyperion's unified cache.
type CacheOptions struct {
	// GPUBytes and CPUBytes are the GPU and CPU memory available for
	// caching topology and features (one GPU's, as Hyperion trains on
	// one).
	GPUBytes, CPUBytes int64
	// FeatureRowBytes is the size of one vertex's feature row (D).
	FeatureRowBytes int64
	// ChunkBytes is Z; 0 means DefaultChunkBytes.
	ChunkBytes int64
	// CLSBytes and SSDSBytes are the PCIe and SSD transfer units; 0 means
	// the defaults (64 and 512).
	CLSBytes, SSDSBytes int64
}

// Data kinds a chunk holds.
const (
	ChunkTopology = "topology"
	ChunkFeature  = "feature"
)

// Where a chunk ends up.
const (
	WhereGPU = "gpu"
	WhereCPU = "cpu"
	WhereSSD = "ssd"
)

// Chunk is a run of consecutive vertices in hotness order whose topology
// (or features) fill about ChunkBytes.
type Chunk struct {
	Data      string `json:"data"`       // ChunkTopology or ChunkFeature
	FirstRank int64  `json:"first_rank"` // position of its first vertex in Split.Order
	Rows      int64  `json:"rows"`
	Bytes     int64  `json:"bytes"`
	// MemTx and SSDTx are the PCIe transactions an epoch spends on the
	// chunk when it sits in host memory and on SSD; in GPU memory it costs
	// none.
	MemTx float64 `json:"mem_tx"`
	SSDTx float64 `json:"ssd_tx"`
	Where string  `json:"where"`
}

// Split is the unified cache's decision.
type Split struct {
	GPUTopologyBytes int64 `json:"gpu_topology_bytes"`
	GPUFeatureBytes  int64 `json:"gpu_feature_bytes"`
	CPUTopologyBytes int64 `json:"cpu_topology_bytes"`
	CPUFeatureBytes  int64 `json:"cpu_feature_bytes"`
	// TxAllSSD is the PCIe transactions of an epoch with nothing cached;
	// Tx with the split.
	TxAllSSD float64 `json:"tx_all_ssd"`
	Tx       float64 `json:"tx"`
	Chunks   []Chunk `json:"chunks"`
	// Order is the vertex at each hotness position (descending hotness,
	// ties by vertex id): chunk c covers Order[c.FirstRank : c.FirstRank+c.Rows].
	Order []uint32 `json:"-"`
}

// CacheSplit decides how much of GPU and CPU memory holds graph topology
// and how much holds features, by the PCIe transactions each chunk saves
// (Hyperion section III-B2). hotness[v] counts vertex v's accesses per
// epoch and stands for both its topology hotness H^T and feature hotness
// H^F (a sampled vertex has its neighbor list read and its feature read, so
// pre-sampling counts both the same way). topoRowBytes[v] is the size of
// v's CSR neighbor list, N_v (TopologyRowBytes computes it from indptr).
//
// Transactions, per vertex and epoch: ceil(H x B / CLS) when its data (B
// bytes) is read from host memory, ceil(H x B / SSDS) x SSDS / CLS from an
// SSD, none from GPU memory. Topology and features are each cut into
// chunks of about ChunkBytes in hotness order. The GPU takes the chunks that
// save the most transactions per byte relative to host memory, until full;
// then the CPU, among the rest, the chunks that save the most relative to
// SSD; the rest stays on SSD. Hyperion solves each step with a dynamic
// program over chunks; chunks of one size make that knapsack the choice of
// the most valuable chunks, which the greedy by saving per byte finds (it
// can be off by the one chunk that does not fit at the end, or by the
// smaller last chunk of each kind).
func CacheSplit(hotness []uint32, topoRowBytes []uint32, opt CacheOptions) (*Split, error) {
	if err := checkCacheInput(hotness, topoRowBytes, &opt); err != nil {
		return nil, err
	}
	o, err := newOrder(context.Background(), hotness)
	if err != nil {
		return nil, fmt.Errorf("cache split: %w", err)
	}
	s := &Split{Order: o.vertices(hotness)}
	t := txCost{cls: uint64(opt.CLSBytes), ssds: uint64(opt.SSDSBytes)}
	s.Chunks = topologyChunks(s.Chunks, s.Order, hotness, topoRowBytes, opt.ChunkBytes, t)
	s.Chunks = featureChunks(s.Chunks, s.Order, hotness, opt, t)
	for i := range s.Chunks {
		s.Chunks[i].Where = WhereSSD
		s.TxAllSSD += s.Chunks[i].SSDTx
	}
	fillTier(s.Chunks, WhereGPU, opt.GPUBytes, func(ch *Chunk) float64 { return ch.MemTx })
	fillTier(s.Chunks, WhereCPU, opt.CPUBytes, func(ch *Chunk) float64 { return ch.SSDTx - ch.MemTx })
	s.sumTiers()
	return s, nil
}

// checkCacheInput checks CacheSplit's input and fills opt's defaults.
func checkCacheInput(hotness []uint32, topoRowBytes []uint32, opt *CacheOptions) error {
	if len(topoRowBytes) != len(hotness) {
		return &topology.InputError{Field: "topology", Msg: fmt.Sprintf("%d topology rows for %d vertices", len(topoRowBytes), len(hotness))}
	}
	if int64(len(hotness)) > math.MaxUint32 {
		return &topology.InputError{Field: "hotness", Msg: fmt.Sprintf("%d vertices, at most %d", len(hotness), uint64(math.MaxUint32))}
	}
	if opt.ChunkBytes == 0 {
		opt.ChunkBytes = DefaultChunkBytes
	}
	if opt.CLSBytes == 0 {
		opt.CLSBytes = DefaultCLSBytes
	}
	if opt.SSDSBytes == 0 {
		opt.SSDSBytes = DefaultSSDSBytes
	}
	for _, c := range []struct {
		name string
		v    int64
		min  int64
	}{{"gpu_bytes", opt.GPUBytes, 0}, {"cpu_bytes", opt.CPUBytes, 0}, {"feature_row_bytes", opt.FeatureRowBytes, 1},
		{"chunk_bytes", opt.ChunkBytes, 1}, {"cls_bytes", opt.CLSBytes, 1}, {"ssds_bytes", opt.SSDSBytes, 1}} {
		if c.v < c.min {
			return &topology.InputError{Field: c.name, Msg: fmt.Sprintf("%d (valid: %d or more)", c.v, c.min)}
		}
	}
	return nil
}

// txCost holds the transfer units, CLS and SSDS, in bytes.
type txCost struct{ cls, ssds uint64 }

// tx is the PCIe transactions of reading b bytes h times from host memory
// and from an SSD.
func (t txCost) tx(h uint32, b uint64) (mem, ssd float64) {
	x := uint64(h) * b // < 2^64: both factors fit 32 bits
	return float64((x + t.cls - 1) / t.cls), float64((x+t.ssds-1)/t.ssds) * float64(t.ssds) / float64(t.cls)
}

// closeChunk appends c to chunks unless it is empty, and starts the next
// chunk of its kind at position next.
func closeChunk(chunks []Chunk, c Chunk, next int64) ([]Chunk, Chunk) {
	if c.Rows > 0 {
		chunks = append(chunks, c)
	}
	return chunks, Chunk{Data: c.Data, FirstRank: next}
}

// topologyChunks appends the topology's chunks: close a chunk before a row
// would take it past chunkBytes (a chunk holds at least one row).
func topologyChunks(chunks []Chunk, order []uint32, hotness []uint32, topoRowBytes []uint32, chunkBytes int64, t txCost) []Chunk {
	c := Chunk{Data: ChunkTopology}
	for p, v := range order {
		b := int64(topoRowBytes[v])
		if c.Rows > 0 && c.Bytes+b > chunkBytes {
			chunks, c = closeChunk(chunks, c, int64(p))
		}
		m, d := t.tx(hotness[v], uint64(b))
		c.Rows++
		c.Bytes += b
		c.MemTx += m
		c.SSDTx += d
	}
	chunks, _ = closeChunk(chunks, c, 0)
	return chunks
}

// featureChunks appends the features' chunks: rows are all
// FeatureRowBytes, so only the hotness matters.
func featureChunks(chunks []Chunk, order []uint32, hotness []uint32, opt CacheOptions, t txCost) []Chunk {
	c := Chunk{Data: ChunkFeature}
	perChunk := max(1, opt.ChunkBytes/opt.FeatureRowBytes)
	for p, v := range order {
		if c.Rows == perChunk {
			chunks, c = closeChunk(chunks, c, int64(p))
		}
		m, d := t.tx(hotness[v], uint64(opt.FeatureRowBytes))
		c.Rows++
		c.Bytes += opt.FeatureRowBytes
		c.MemTx += m
		c.SSDTx += d
	}
	chunks, _ = closeChunk(chunks, c, 0)
	return chunks
}

// fillTier moves the chunks still on SSD that save the most per byte
// (saving) to where, until capacity bytes are taken.
func fillTier(chunks []Chunk, where string, capacity int64, saving func(*Chunk) float64) {
	idx := make([]int, 0, len(chunks))
	for i := range chunks {
		if chunks[i].Where == WhereSSD {
			idx = append(idx, i)
		}
	}
	density := func(i int) float64 {
		ch := &chunks[i]
		if ch.Bytes == 0 {
			return math.Inf(1) // free to hold
		}
		return saving(ch) / float64(ch.Bytes)
	}
	sort.SliceStable(idx, func(a, b int) bool { return density(idx[a]) > density(idx[b]) })
	for _, i := range idx {
		ch := &chunks[i]
		if saving(ch) <= 0 && ch.Bytes > 0 {
			break // the rest save nothing
		}
		if ch.Bytes <= capacity {
			ch.Where = where
			capacity -= ch.Bytes
		}
	}
}

// sumTiers adds up each tier's bytes and the epoch's transactions with
// the split.
func (s *Split) sumTiers() {
	for _, ch := range s.Chunks {
		switch ch.Where {
		case WhereGPU:
			if ch.Data == ChunkTopology {
				s.GPUTopologyBytes += ch.Bytes
			} else {
				s.GPUFeatureBytes += ch.Bytes
			}
		case WhereCPU:
			s.Tx += ch.MemTx
			if ch.Data == ChunkTopology {
				s.CPUTopologyBytes += ch.Bytes
			} else {
				s.CPUFeatureBytes += ch.Bytes
			}
		default:
			s.Tx += ch.SSDTx
		}
	}
}

// TopologyRowBytes is each vertex's CSR neighbor-list size: its degree
// (from the int64 offsets indptr, len = vertices + 1) times indexBytes (4
// or 8). Lists past 4 GiB are clamped.
func TopologyRowBytes(indptr []int64, indexBytes int) ([]uint32, error) {
	if len(indptr) == 0 {
		return nil, &topology.InputError{Field: "indptr", Msg: "empty (want vertices + 1 offsets)"}
	}
	if indexBytes != 4 && indexBytes != 8 {
		return nil, &topology.InputError{Field: "index_bytes", Msg: fmt.Sprintf("%d (valid: 4, 8)", indexBytes)}
	}
	out := make([]uint32, len(indptr)-1)
	for v := range out {
		d := indptr[v+1] - indptr[v]
		if d < 0 {
			return nil, &topology.InputError{Field: "indptr", Msg: fmt.Sprintf("offsets decrease at vertex %d", v)}
		}
		out[v] = uint32(min(d*int64(indexBytes), math.MaxUint32))
	}
	return out, nil
}
