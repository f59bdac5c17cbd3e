// Package lspci imports what `lspci -vvv` and `lspci -tv` print: -vvv
// gives each PCI function's class, NUMA node, LnkCap and LnkSta and each
// bridge's secondary bus; -tv gives the tree and names. Parse takes one or
// more captures of one machine and builds it through the same construction
// as sysfs discovery (topology.AddPCIFunctions): host bridges per root
// bus, switches, links at LnkCap.
//
// LooksLike tells a capture by content. Bad input comes back as a
// *topology.InputError naming the file, line and PCI address; link
// capacities are in GBps (decimal GB/s per direction), as in package
// topology.
package lspci
