// Package sample draws the mini-batches GNN training reads: GraphSAGE's
// uniform neighbor sampling, as DGL's NeighborSampler and PyG's
// NeighborLoader implement it, cut into one DGL-style block per hop
// (destination vertices first among the sources). A fanout of -1 takes
// every neighbor, so a small graph can train full-batch.
//
// Hotness runs the same sampler ahead of training and counts, per
// vertex, the mini-batches that read its feature row: the access
// distribution DDAK places by (Moment section 3.3) and Hyperion's cache
// split sizes by (section III-B). SkewOf summarizes it as DiskGNN does.
//
// Units: vertices and edges are counts (vertex ids are int32 in memory),
// hotness is mini-batches per vertex, skew shares are fractions in [0, 1].
package sample
