// Package ioread reads byte ranges ("rows") of feature files at the speed of
// the disk, for the out-of-core feature store (docs/architecture.md section 9, issue 6).
//
// A batch of Requests is turned into device reads: each request is widened
// to the aligned span around it (the file's direct-IO alignment, queried with
// statx STATX_DIOALIGN), spans that overlap or touch in the same file are
// merged into one read of at most Options.MaxMergeBytes, the reads go to the
// disk with O_DIRECT into page-aligned staging buffers (2 x QueueDepth, never
// the page cache), and the useful bytes are copied out to each request's Dst.
// Read amplification (Stats.DeviceBytes / Stats.UsefulBytes) is counted.
// io_uring keeps the queue full, with submission and completion decoupled
// (Hyperion III-A); where io_uring is unavailable (io_uring_setup fails with
// ENOSYS or EPERM, as in some sandboxes) a pool of pread workers reads the
// same spans, and Notes says so. How each mode keeps the disk busy, and
// which paper each idea comes from: docs/architecture.md, section 9.
//
// Read takes a batch and returns when it is done, so the queue drains at the
// end of every batch. Stream takes requests from a source until it runs dry
// and keeps QueueDepth reads in flight throughout (`gnnplan profile` uses
// it).
//
// Units: offsets, lengths and alignments are bytes; QueueDepth is device
// reads in flight.
//
// Building: giouring reaches into the runtime with //go:linkname, so binaries
// and tests that import this package need -ldflags=-checklinkname=0 on Go >=
// 1.23, e.g. go test -ldflags=-checklinkname=0 ./trainer/ioread.
package ioread
