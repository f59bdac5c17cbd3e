// Package topology models a training server as the planner sees it: CPU
// sockets with their memory, root ports, PCIe switches, slots (occupied or
// empty), GPUs, NVMe SSDs, NICs and the links between them, each link with a
// per-direction capacity in GB/s (decimal, 1 GB = 1e9 bytes).
//
// It implements the "communication topology" input of Moment (SC'25,
// section 3.1-3.2): storage, interconnect and compute nodes joined by links
// whose capacities come from PCIe generation x lane width, the CPU family's
// inter-socket link, or NVLink/xGMI link counts x per-link rate.
//
// A Machine is built by discovery from sysfs (ghw plus direct sysfs reads,
// SMBIOS type 9 slot records and type 17 DIMM slots; the running machine's
// or an unpacked snapshot's), by loading a saved JSON file (Decode), from an
// embedded profile (package profiles), or by an importer of a foreign
// format, one subpackage each: hwloc (hwloc XML), nccl (NCCL/RCCL topology
// XML), nvsmi (nvidia-smi topo -m), lspci (lspci -vvv / -tv) and snapshot
// (sysfs snapshot archives); package importer tells them apart by a file's
// content. It renders as JSON (schema versioned, round trip exact), a tree,
// a table and Graphviz DOT.
//
// Units: link capacities in GBps (decimal GB/s per direction), memory in GiB,
// sizes in files in bytes.
package topology
