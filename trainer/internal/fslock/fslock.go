// Package fslock takes advisory locks on directories, so that two gnnplan
// processes never write one checkpoint directory or one store at once.
//
// A lock is flock(2) on the directory itself: it needs no lock file, the
// kernel drops it when the process exits however it exits, and it does
// not stop readers. Where flock is missing (not a Unix), TryLock succeeds
// without locking.
package fslock

import "errors"

// ErrBusy is returned, wrapped, when another holder has the lock.
var ErrBusy = errors.New("locked by another process")

// Lock is a held lock; Unlock releases it.
type Lock struct {
	release func() error
}

// Unlock releases the lock. It is safe to call on a nil Lock.
func (l *Lock) Unlock() error {
	if l == nil || l.release == nil {
		return nil
	}
	r := l.release
	l.release = nil
	return r()
}
