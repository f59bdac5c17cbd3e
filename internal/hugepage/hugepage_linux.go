//go:build linux

package hugepage

import (
	"syscall"
	"unsafe"
)

// Advise marks the memory under s for transparent huge pages before it is
// first written. Best effort: where THP is off or the call fails, the
// pages are simply small.
func Advise[T any](s []T) {
	if len(s) == 0 {
		return
	}
	var zero T
	b := unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), uintptr(len(s))*unsafe.Sizeof(zero))
	// madvise wants a page-aligned start: round in to whole pages.
	const page = 4096
	start := (uintptr(unsafe.Pointer(&b[0])) + page - 1) &^ (page - 1)
	off := start - uintptr(unsafe.Pointer(&b[0]))
	if off >= uintptr(len(b)) {
		return
	}
	_ = syscall.Madvise(b[off:], syscall.MADV_HUGEPAGE)
}
