// Package trainer holds what training needs at run time: the dataset
// store (a directory of meta.json and NumPy .npy arrays, DESIGN.md section
// 8), importers for public graph formats, a synthetic graph generator, the
// neighbor sampler and access-hotness counting (Moment section 3.3,
// Hyperion section III-B), and later the tiered feature store, models and
// the pipelined training loop.
//
// Units: vertex and edge counts, bytes in files, float32 features.
package trainer
