//go:build !unix

package fslock

// TryLock takes no lock where flock is missing.
func TryLock(dir string) (*Lock, error) { return &Lock{}, nil }
