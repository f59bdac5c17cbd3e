// Package importer reads a machine from a file whose format it recognises
// by content, not by name: gnnplan machine JSON (topology.Decode), NCCL or
// RCCL topology XML (package nccl), hwloc XML (package hwloc), `nvidia-smi
// topo -m` (package nvsmi), `lspci -vvv` / `lspci -tv` (package lspci),
// or a sysfs snapshot archive (package snapshot). ImportFilesContext also
// combines lspci captures with one nvidia-smi matrix of the same machine.
//
// Files over MaxBytes are refused (archives have their own limits); a file
// in no known format, or a bad one, comes back as a *topology.InputError.
// Cancelling the context stops an import and returns the context's error.
package importer
