// Package ddak places every vertex's embedding (feature row) in a storage
// bin: a GPU cache, a per-socket CPU cache or an NVMe SSD (docs/architecture.md
// section 7).
//
// Place implements Moment's data-distribution-aware knapsack (SC'25 section
// 3.3): vertices in descending hotness, the hierarchy GPU > CPU > SSD (fast
// tiers take the hottest rows until full), and within a tier the bin with
// the lowest priority, so that each bin's share of the epoch's accesses
// lands on the target traffic the max-flow model gave its storage node
// (tpc.Plan.StorageTraffic). PlaceHash is the baseline Moment compares
// against (section 4.5). Evaluate reports per-bin achieved traffic against
// target, SSD imbalance and the share of traffic crossing the socket link.
// CacheSplit is the unified cache policy (Hyperion section III-B2):
// how much GPU and CPU memory holds topology versus features, chosen by the
// PCIe transactions each chunk saves.
//
// Units: hotness is accesses per vertex per epoch (pre-sampling counts);
// capacities are rows (one row = one vertex's feature vector); traffic is a
// share of the epoch's feature accesses (0-1); memory sizes are bytes, GiB
// (2^30) where the plan's GPU memory is given in GiB, and decimal GB for SSD
// capacities as vendors quote them. Layouts are written as NumPy .npy
// arrays (layout_bin.npy, layout_row.npy) plus layout.json.
package ddak
