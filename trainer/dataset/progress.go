package dataset

import "io"

// Progress is how a long operation (synth, hotness sampling,
// materialize) reports its phases, so a command can draw a progress bar
// on a terminal and print one line per phase otherwise. An operation
// given a plain io.Writer for progress checks whether it is also a
// Progress; if not, it prints lines to it.
type Progress interface {
	io.Writer
	// Phase starts a phase of total units (0 when unknown), ending the
	// one before, and returns the function that adds units done; it may
	// be called from several goroutines.
	Phase(name string, total int64) func(done int64)
}

// AsProgress returns w as a Progress when it is one, or nil.
func AsProgress(w io.Writer) Progress {
	p, _ := w.(Progress)
	return p
}
