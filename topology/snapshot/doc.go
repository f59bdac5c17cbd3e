// Package snapshot imports a sysfs snapshot archive: a .tar, .tar.gz or
// .tar.bz2 of a captured /sys (and /proc), as ghw-snapshot and
// hwloc-gather-topology make. Import unpacks it into a temporary directory,
// refusing entries and symlinks that lead outside it and stopping at
// MaxBytes or MaxEntries, runs topology.Discover there, and removes the
// directory.
//
// Format tells an archive by its magic bytes. Bad input comes back as a
// *topology.InputError naming the archive; the machine's units are package
// topology's.
package snapshot
