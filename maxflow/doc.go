// Package maxflow solves the flow problems behind gnnplan's placement
// advice (Moment, SC'25, section 3.2): an exact maximum flow with per-edge
// flows and a minimum cut on a directed network with float64 capacities,
// and the least time in which a network delivers a demand when some
// sources are volumes rather than rates (a CPU cache holds a fixed share
// of the data). It knows nothing of machines: package maxflow/placement
// builds a machine's capacity graph on it and searches placements.
//
// Units: rates in GB/s (decimal), volumes in GB, times in seconds. The
// algorithms themselves are unit-free.
package maxflow
