// Package nvsmi imports the matrix `nvidia-smi topo -m` prints: one row and
// one column per GPU and NIC, each cell the path between the two (SYS,
// NODE, PHB, PXB, PIX, NV#), then each GPU's CPU and NUMA affinity. Parse
// builds a machine from the matrix alone (switches and host bridges
// inferred from the path words); Combine adds its NVLinks and the NICs'
// RDMA names to a machine imported from lspci captures of the same machine.
//
// LooksLike tells a capture by content. Bad input comes back as a
// *topology.InputError naming the file and line; link capacities are in
// GBps (decimal GB/s per direction), as in package topology.
package nvsmi
