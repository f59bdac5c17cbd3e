// Package textout lays out gnnplan's human-readable output to a width, so
// that nothing wraps in a terminal of that width: tables whose optional
// columns give way and whose long text cells are cut with "…" (and a line
// saying what was left out), and prose lines wrapped at spaces under their
// own indentation. Width 0 lays out nothing: everything at full length,
// as -o wide asks.
//
// Widths are display columns (go-runewidth), so box-drawing characters and
// "…" count one each.
package textout

import (
	"bytes"
	"io"
	"os"
	"regexp"
	"strings"

	"github.com/mattn/go-runewidth"
	"golang.org/x/term"
)

// DefaultColumns is the width used where the output is not a terminal
// (a pipe, a file, a test's buffer).
const DefaultColumns = 100

// Columns is w's terminal width, or DefaultColumns when w is not a
// terminal.
func Columns(w io.Writer) int {
	if f, ok := w.(*os.File); ok {
		if c, _, err := term.GetSize(int(f.Fd())); err == nil && c > 0 {
			return c
		}
	}
	return DefaultColumns
}

// Width is s's width in display columns.
func Width(s string) int { return runewidth.StringWidth(s) }

// Wrapper is an io.Writer that passes whole lines through, wrapping each
// line longer than its width at spaces. A continuation line keeps the
// line's indentation (a tree's "│" included) and adds four spaces. A word
// longer than the width is not broken: paths stay whole for copying.
// Call Flush after the last Write to pass a final line without a newline.
type Wrapper struct {
	w     io.Writer
	width int
	tail  []byte
}

// NewWrapper wraps lines written to w at width columns; width <= 0
// passes everything through unchanged.
func NewWrapper(w io.Writer, width int) *Wrapper {
	return &Wrapper{w: w, width: width}
}

// Write writes p's complete lines, wrapped, and keeps an incomplete last
// line until the next Write or Flush.
func (x *Wrapper) Write(p []byte) (int, error) {
	if x.width <= 0 {
		return x.w.Write(p)
	}
	x.tail = append(x.tail, p...)
	var out strings.Builder
	for {
		i := bytes.IndexByte(x.tail, '\n')
		if i < 0 {
			break
		}
		out.WriteString(WrapLine(string(x.tail[:i]), x.width))
		out.WriteByte('\n')
		x.tail = x.tail[i+1:]
	}
	if len(x.tail) == 0 {
		x.tail = nil // let the consumed buffer go
	}
	if out.Len() > 0 {
		if _, err := io.WriteString(x.w, out.String()); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// Flush writes a final line that had no newline.
func (x *Wrapper) Flush() error {
	if len(x.tail) == 0 {
		return nil
	}
	s := WrapLine(string(x.tail), x.width)
	x.tail = nil
	_, err := io.WriteString(x.w, s)
	return err
}

// WrapLine breaks line at spaces into lines of at most width columns,
// joined by "\n"; continuation lines carry the line's indentation (spaces
// and a tree's branch characters, "├─" continued as "│") and four more
// spaces. A command to copy (a line that starts "gnnplan ") ends each
// broken line with " \" so that it pastes into a shell whole. A line that
// fits, or width <= 0, comes back as it is.
func WrapLine(line string, width int) string {
	if width <= 0 || Width(line) <= width {
		return line
	}
	body := strings.TrimLeft(line, " │├└─")
	lead := line[:len(line)-len(body)]
	cont := strings.NewReplacer("├", "│", "└", " ", "─", " ").Replace(lead) + "    "
	if Width(cont) >= width/2 {
		cont = "    "
	}
	if strings.HasPrefix(body, "gnnplan ") {
		return strings.ReplaceAll(wrapWords(lead, cont, body, width-2), "\n", " \\\n")
	}
	return wrapWords(lead, cont, body, width)
}

// wrapWords lays body's words after lead, breaking lines before width
// columns and starting each new line with cont. Spaces between words on
// one line are kept as they were (aligned columns stay aligned); a break
// drops them.
func wrapWords(lead, cont, body string, width int) string {
	var b strings.Builder
	cur, curW := lead, Width(lead)
	empty := true // cur holds no word yet
	for _, m := range wordRE.FindAllStringSubmatch(body, -1) {
		space, word := m[1], m[2]
		if empty {
			space = ""
		}
		w := Width(word)
		if !empty && curW+len(space)+w > width {
			b.WriteString(cur)
			b.WriteByte('\n')
			cur, curW = cont, Width(cont)
			space = ""
		}
		cur += space + word
		curW += len(space) + w
		empty = false
	}
	b.WriteString(cur)
	return b.String()
}

// wordRE matches a word with the spaces before it.
var wordRE = regexp.MustCompile(`( *)([^ ]+)`)
