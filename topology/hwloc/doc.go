// Package hwloc imports a machine from an hwloc XML export (`lstopo --of
// xml`, hwloc 1.x and 2.x): packages with their NUMA nodes become sockets,
// the I/O tree (host bridges, PCI bridges, PCI devices and OS devices)
// becomes root ports, switches and devices, and NVLink bandwidth matrices
// become NVLinks.
//
// Parse never panics on input: a file it cannot read as a machine comes back
// as a *topology.InputError naming the file, the line and the attribute.
// Units are package topology's: link capacities in GBps (decimal GB/s per
// direction), memory in GiB.
package hwloc
