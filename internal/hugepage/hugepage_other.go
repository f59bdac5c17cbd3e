//go:build !linux

package hugepage

// Advise does nothing where there are no transparent huge pages.
func Advise[T any](s []T) {}
