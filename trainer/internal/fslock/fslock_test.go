package fslock

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestTryLock(t *testing.T) {
	dir := t.TempDir()
	a, err := TryLock(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := TryLock(dir); !errors.Is(err, ErrBusy) {
		t.Fatalf("a second lock while the first is held: %v, want ErrBusy", err)
	}
	if err := a.Unlock(); err != nil {
		t.Fatal(err)
	}
	b, err := TryLock(dir)
	if err != nil {
		t.Fatalf("after Unlock: %v", err)
	}
	b.Unlock()
	if err := b.Unlock(); err != nil {
		t.Errorf("a second Unlock: %v", err)
	}
	if _, err := TryLock(filepath.Join(dir, "missing")); err == nil || errors.Is(err, ErrBusy) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing directory: %v, want not-exist", err)
	}
}
