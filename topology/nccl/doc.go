// Package nccl imports a machine from an NCCL or RCCL topology XML file
// (<system>, as NCCL_TOPO_DUMP_FILE writes and NCCL_TOPO_FILE reads): each
// <cpu> becomes a socket, the nested <pci> elements the PCI tree below it,
// <gpu> and <nic> the devices, and <nvlink>/<xgmi> the GPU fabric. An NCCL
// channel graph (<graphs>, NCCL_GRAPH_FILE) is not a topology and is
// refused.
//
// Parse never panics on input: a file it cannot read as a machine comes back
// as a *topology.InputError naming the file, the line and the attribute.
// Units are package topology's: link capacities in GBps (decimal GB/s per
// direction), memory in GiB.
package nccl
