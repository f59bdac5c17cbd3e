// Package trainer is the training loop (docs/architecture.md section 10): it trains
// a GNN (package nn) on a dataset through a kernels.Backend, its
// features in memory or served by a FeatureSource (a store's tiers, out
// of core). Each data-parallel worker's Loader delivers its batches
// (sampled, blocks built, input rows gathered), by default prefetched on
// goroutines ahead of the step; the Trainer steps, averages the workers'
// gradients, evaluates on the validation and test splits, tracks the best
// validation epoch and early stopping, and writes and resumes
// checkpoints; Run reports each epoch's time per stage (sampling wait,
// feature gather, forward and backward, optimizer) and accuracies.
//
// What the loop builds on lives in one subpackage per idea:
//   - dataset: the dataset directory format (meta.json and NumPy .npy
//     arrays, docs/architecture.md section 8), importers for LINQS, SNAP and Geom-GCN
//     files, dataset statistics, and the synthetic graph generator.
//   - sample: the neighbor sampler that cuts mini-batches into per-hop
//     blocks, and access hotness measured by running it ahead of training
//     (Moment section 3.3, Hyperion section III-B).
//   - nn: the models (GraphSAGE, GCN, GAT) on sampled blocks, their
//     backward passes and the optimizer.
//   - store: the tiered feature store that serves a batch's feature rows
//     from GPU, CPU and SSD bins as a ddak layout placed them.
//   - ioread: the io_uring reader the store reads SSD bins with.
//
// Units: vertices, mini-batches and epochs are counts; sizes are bytes;
// times are seconds of wall time.
package trainer
