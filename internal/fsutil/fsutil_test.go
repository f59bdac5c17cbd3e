package fsutil

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// umask is the process's file mode mask (read by setting it and back).
func umask() int {
	m := syscall.Umask(0)
	syscall.Umask(m)
	return m
}

func TestWriteFileAtomicReplacesWholeAndLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "plan.json")
	for _, data := range []string{"first", "second, longer than the first"} {
		if err := WriteFileAtomic(path, []byte(data)); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != data {
			t.Fatalf("read back %q (%v), want %q", got, err, data)
		}
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := os.FileMode(0o644 &^ umask()); fi.Mode().Perm() != want {
		t.Errorf("mode %v, want %v (0644 less the umask): another account reads what was written", fi.Mode().Perm(), want)
	}
	// A directory that is not there: an error naming the path, no file.
	missing := filepath.Join(dir, "nope", "plan.json")
	if err := WriteFileAtomic(missing, []byte("x")); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("write into a missing directory: %v, want an error naming %s", err, missing)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("left in the directory: %v, want plan.json alone", ents)
	}
}

func TestTempNamesAndModes(t *testing.T) {
	dir := t.TempDir()
	f, err := CreateTemp(dir, "rows.*.tmp")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if base := filepath.Base(f.Name()); !strings.HasPrefix(base, "rows.") || !strings.HasSuffix(base, ".tmp") {
		t.Errorf("temporary file %s does not follow its pattern", base)
	}
	d, err := MkdirTemp(dir, "store-*")
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(d)
	if want := os.FileMode(0o755 &^ umask()); err != nil || !fi.IsDir() || fi.Mode().Perm() != want {
		t.Errorf("temporary directory %s: %v (%v), want a directory of mode %v", d, fi.Mode(), err, want)
	}
}

func TestOpenRegularRefusesAFIFOWithoutBlocking(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "features.npy")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := ReadRegularFile(fifo)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file (a FIFO)") {
			t.Errorf("reading a FIFO: %v, want it refused as one", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("reading a FIFO blocked")
	}
	if _, err := OpenRegular(dir); err == nil || !strings.Contains(err.Error(), "a directory") {
		t.Errorf("opening a directory: %v, want it refused as one", err)
	}
	good := filepath.Join(dir, "ok")
	if err := os.WriteFile(good, []byte("rows"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadRegularFile(good); err != nil || string(b) != "rows" {
		t.Errorf("a regular file: %q, %v", b, err)
	}
}
