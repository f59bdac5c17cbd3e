// Package store is the tiered feature store (docs/architecture.md section 9; Hyperion
// section III-A, GNNDrive, DiskGNN): it serves the feature rows a batch
// needs from where a ddak layout put them.
//
// Materialize turns a layout into files: each SSD bin's rows, in row order,
// in one file per bin under that SSD's directory, after a 4 KiB header
// naming the store, the bin and the rows' CRC-32C, each row at a stride
// aligned for direct IO, plus the manifest store.json in the dataset
// directory; it replaces a store all or nothing. Open checks every bin
// file's size and header; Verify reads the files for their checksums. Open loads the cache bins from features.npy (the worker-local
// cache, which stands in for the GPU cache when there is no GPU, and one
// CPU cache per socket) and opens the SSD bin files with the io_uring
// reader of package ioread, O_DIRECT so that features never go through the
// page cache. Gather assembles one contiguous row-major matrix for a batch:
// cache hits are copied from memory, SSD rows come from one ioread.Read per
// batch, which merges rows that share a device block.
//
// Units: rows (one vertex's feature vector of float32), bytes in files,
// seconds of wall time.
package store
