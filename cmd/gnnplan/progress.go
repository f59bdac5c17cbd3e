package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// phaseProgress is the progress stream long commands write to stderr
// (dataset.Progress): on a terminal each phase gets a progress bar (units
// done, rate, ETA) and other lines print above it; otherwise a phase is
// one line when it starts, and other lines pass through.
type phaseProgress struct {
	w   io.Writer
	tty bool

	mu  sync.Mutex
	bar *progressbar.ProgressBar
}

func newPhaseProgress(w io.Writer) *phaseProgress {
	return &phaseProgress{w: w, tty: isTerminal(w)}
}

// Write prints lines, above the current bar on a terminal.
func (p *phaseProgress) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		p.bar.Clear()
	}
	n, err := p.w.Write(b)
	if p.bar != nil {
		p.bar.RenderBlank()
	}
	return n, err
}

// Phase ends the current phase and starts the next.
func (p *phaseProgress) Phase(name string, total int64) func(int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.finishLocked()
	if !p.tty {
		if total > 0 {
			fmt.Fprintf(p.w, "%s (%d)\n", name, total)
		} else {
			fmt.Fprintf(p.w, "%s\n", name)
		}
		return func(int64) {}
	}
	if total <= 0 {
		total = -1 // a spinner
	}
	bar := progressbar.NewOptions64(total, progressbar.OptionSetWriter(p.w), progressbar.OptionSetDescription(name),
		progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(true),
		progressbar.OptionSetWidth(barWidth(columns(p.w), len(name))), progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())
	p.bar = bar
	return func(k int64) { bar.Add64(k) }
}

// Close ends the last phase.
func (p *phaseProgress) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.finishLocked()
}

func (p *phaseProgress) finishLocked() {
	if p.bar != nil {
		p.bar.Finish()
		p.bar = nil
	}
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// defaultColumns is the width output fits when the terminal's is unknown.
const defaultColumns = 100

// barStatsColumns is what a bar prints besides its description and its
// bar: " 100% |", "| (123456/123456, 1234 it/s) [1h2m3s:4m5s]".
const barStatsColumns = 48

// columns is w's terminal width, or defaultColumns.
func columns(w io.Writer) int {
	if f, ok := w.(*os.File); ok {
		if c, _, err := term.GetSize(int(f.Fd())); err == nil && c > 0 {
			return c
		}
	}
	return defaultColumns
}

// barWidth is the width of a progress bar whose line, with a description
// of descLen characters and its counts, fits cols columns: 10 to 30.
func barWidth(cols, descLen int) int {
	return max(10, min(30, cols-descLen-barStatsColumns))
}
