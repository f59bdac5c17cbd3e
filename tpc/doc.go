// Package tpc models training throughput per dollar (Hyperion section III-C)
// for a GNN training server: TPC = B_s / (T_batch x Cost), where B_s is the
// batch size in training seeds, T_batch = max(T_ssd, T_pcie, T_train) because
// the pipeline overlaps IO with compute (Hyperion equations 3 and 4), and
// Cost is the five-year total cost of ownership (Hyperion section VI).
//
// The workload model (Workload, PerBatch) gives what one mini-batch costs: the
// vertices a layered neighbor sampler reaches, the feature and CSR bytes it
// reads and the forward+backward FLOPs of GraphSAGE, GCN or GAT, for the
// datasets Moment (SC'25, table 2) and Hyperion (table II) train on. Those
// bytes feed the transaction counts of Hyperion section III-B and the epoch
// demand of the flow model (Moment section 3.2, package maxflow/placement); the FLOPs
// feed T_train when no measured profile exists. The rest of the package
// prices hardware, searches GPU count x SSD count x placement under a budget
// and writes the plan.
//
// Units: bytes (decimal GB = 1e9 bytes where rates appear), FLOPs (one
// multiply-add counts as 2), seconds, US dollars. Per-batch quantities are
// expectations, so they are float64.
package tpc
