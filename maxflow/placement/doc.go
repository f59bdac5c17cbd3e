// Package placement models where a machine's GPUs and SSDs sit and how
// fast that lets it feed an epoch (Moment, SC'25, sections 2.3 and 3.2):
// BuildGraph turns a machine and its storage Tiers into a flow network
// (storage -> PCIe fabric -> GPUs -> sink), Evaluate predicts the epoch
// IO time, per-GPU inlets and bottlenecks from its least time, and Search
// ranks the placements of an Inventory of devices in a stripped machine's
// free slots, up to symmetry, with Moment's four classic ones beside them.
// The flow itself is package maxflow's; the machine is package topology's.
//
// Units: rates in GB/s (decimal), volumes in GB, times in seconds.
package placement
