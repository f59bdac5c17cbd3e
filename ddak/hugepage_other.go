//go:build !linux

package ddak

func adviseHuge[T any](s []T) {}
