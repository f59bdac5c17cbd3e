// Package kernels is the compute the GNN models need, behind one interface
// (Backend) so a CUDA implementation can stand beside the CPU one without
// the trainer changing (docs/architecture.md sections 10 and 11): dense GEMM with
// transposes, row gather and scatter-add, segment mean and weighted sums
// over a sampled block (CSR) with their backward passes, GAT's edge scores,
// edge softmax and attention-weighted aggregation, bias, activations,
// dropout, softmax cross-entropy and the Adam update.
//
// Matrices are float32, row-major, with a row stride, and live on their
// Backend: the trainer reads or writes their contents only through the
// Backend (Upload, Download, Host where a backend is host-resident).
//
// The CPU backend calls OpenBLAS's cblas_sgemm for GEMM when the shared
// library can be loaded at run time (dlopen: the binary does not link
// against it) and gonum's pure-Go BLAS otherwise; Backend.Name says which,
// and which OpenBLAS kernels run and who chose them (coretype.go). A
// product is cut into pieces by its shape alone (planGemm), each one
// single-threaded library call, run on threads of the backend's own.
// Every other kernel is written here and runs on all cores.
//
// Determinism: every kernel's result is a function of its inputs alone,
// never of the number of threads or of scheduling. Products are the same
// library calls on any thread count; reductions run over
// fixed-size chunks whose partial sums are added in chunk order, scatters
// go through a transposed CSR built by a stable counting sort, and dropout
// masks come from a counter-based hash of (seed, element), so the same
// seed gives bitwise the same training run.
package kernels
