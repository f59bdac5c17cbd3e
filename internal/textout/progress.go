package textout

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
)

// Progress is the progress stream long commands write to stderr (it is
// a dataset.Progress): on a terminal each phase gets a progress bar (units
// done, rate, ETA) and other lines print above it; otherwise a phase is
// one line when it starts, and other lines pass through.
type Progress struct {
	w     io.Writer
	lines *Wrapper // w, lines wrapped to its width
	tty   bool

	mu  sync.Mutex
	bar *progressbar.ProgressBar
}

// NewProgress is a Progress writing to w.
func NewProgress(w io.Writer) *Progress {
	return &Progress{w: w, lines: NewWrapper(w, Columns(w)), tty: IsTerminal(w)}
}

// Write prints lines, above the current bar on a terminal.
func (p *Progress) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		p.bar.Clear()
	}
	n, err := p.lines.Write(b)
	if p.bar != nil {
		p.bar.RenderBlank()
	}
	return n, err
}

// Phase ends the current phase and starts the next.
func (p *Progress) Phase(name string, total int64) func(int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.finishLocked()
	if !p.tty {
		if total > 0 {
			fmt.Fprintf(p.lines, "%s (%d)\n", name, total)
		} else {
			fmt.Fprintf(p.lines, "%s\n", name)
		}
		return func(int64) {}
	}
	if total <= 0 {
		total = -1 // a spinner
	}
	bar := progressbar.NewOptions64(total, progressbar.OptionSetWriter(p.w), progressbar.OptionSetDescription(name),
		progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(true),
		progressbar.OptionSetWidth(BarWidth(Columns(p.w), len(name))), progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())
	p.bar = bar
	return func(k int64) { bar.Add64(k) }
}

// Close ends the last phase.
func (p *Progress) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.finishLocked()
	p.lines.Flush()
}

func (p *Progress) finishLocked() {
	if p.bar != nil {
		p.bar.Finish()
		p.bar = nil
	}
}

// IsTerminal reports whether w is a character device (a terminal).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// barStatsColumns is what a bar prints besides its description and its
// bar: " 100% |", "| (123456/123456, 1234 it/s) [1h2m3s:4m5s]".
const barStatsColumns = 48

// BarWidth is the width of a progress bar whose line, with a description
// of descLen characters and its counts, fits cols columns: 10 to 30.
func BarWidth(cols, descLen int) int {
	return max(10, min(30, cols-descLen-barStatsColumns))
}

// TTY says p draws bars (its writer is a terminal).
func (p *Progress) TTY() bool { return p.tty }

// NewTerminalProgress is a Progress that draws bars on w as on a
// terminal, whatever w is (a recorded terminal session, a test).
func NewTerminalProgress(w io.Writer) *Progress {
	p := NewProgress(w)
	p.tty = true
	return p
}
