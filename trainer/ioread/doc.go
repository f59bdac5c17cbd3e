// Package ioread reads byte ranges ("rows") of feature files at the speed of
// the disk, for the out-of-core feature store (docs/architecture.md section 9, issue 6).
//
// A batch of Requests is turned into device reads: each request is widened
// to the aligned span around it (the file's direct-IO alignment, queried with
// statx STATX_DIOALIGN), spans that overlap or touch in the same file are
// merged into one read of at most Options.MaxMergeBytes, the reads go to the
// disk with O_DIRECT into page-aligned staging buffers, and the useful bytes
// are copied out to each request's Dst. Planning sorts the spans with a radix
// sort, 25-36 ns a request here, so the disk waits little before a batch's
// first read.
//
// Ideas from the papers:
//   - Hyperion section III-A (disaggregated IO submission and completion), CPU
//     edition: one goroutine keeps the io_uring submission queue full, another
//     reaps completions and copies rows out. They meet only at a small
//     hand-off (credits for reads in flight, free staging buffers, reads to
//     reissue) taken once per batch, and a wake-up channel; neither waits for
//     the other's IO. Credits come back before the rows are copied out, so
//     the disk is refilled while the completion side copies.
//     At queue depths up to 4 a single goroutine does both instead, the way
//     fio does: with so few reads in flight the disk answers in about the
//     time a wake-up between goroutines takes, and the hand-off would sit
//     between one read and the next. It still refills the queue before it
//     copies rows out.
//     Where it can, Read skips both modes: one goroutine keeps the queue full
//     on a ring of the reader's own in one long system call to the Go
//     scheduler (uring_raw.go), as the pread pool does and as fio does in
//     one thread. Blocked in ordinary system calls, the runtime's other
//     threads woke about once per read; the two modes above remain for
//     injected faults, the race detector, and kernels where the raw ring
//     cannot be set up, and they take over a Read's reads from the first
//     one that does not return its whole span.
//   - GNNDrive section 4.2 and appendix A: asynchronous io_uring reads with
//     direct IO, so features never occupy the page cache, into a staging
//     buffer bounded by the queue depth (2 x QueueDepth buffers of
//     MaxMergeBytes, allocated once with an anonymous mmap and registered
//     with the ring, as are the files).
//   - DiskGNN section 2: rows smaller than a block cost a whole block each;
//     requests for the same block are merged, and read amplification
//     (Stats.DeviceBytes / Stats.UsefulBytes) is counted.
//
// When io_uring is unavailable (io_uring_setup fails with ENOSYS or EPERM, as
// in some sandboxes) the reader falls back to a pool of goroutines calling
// pread on the same merged spans, and says so in Notes. The pool is fio's
// psync engine with numjobs equal to the queue depth: QueueDepth-1 workers
// that live as long as the Reader plus the caller, a batch handed over once
// per worker, reads claimed with an atomic add, and each participant's run
// of preads made as one long system call to the Go scheduler
// (entersyscallblock ... exitsyscall around a nosplit loop, pread_raw.go),
// so that blocked reads do not wait for sysmon to free a P.
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
