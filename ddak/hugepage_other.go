//go:build !linux

package ddak

var hugePages = false

func adviseHuge[T any](s []T) {}
