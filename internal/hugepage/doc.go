// Package hugepage asks for transparent huge pages under large buffers
// about to be written for the first time. On a virtual machine a page
// fault can cost tens of microseconds: a billion-vertex layout is 5 GB of
// fresh memory, 1.2 M faults in 4 KiB pages (most of ddak.Place's time on
// a small machine, issue 13) and 2,400 in 2 MiB pages; packing batches
// fills buffers of gigabytes the same way.
package hugepage
