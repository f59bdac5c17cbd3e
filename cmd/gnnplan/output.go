package main

import (
	"io"
	"slices"
	"strings"

	"github.com/gnnplan/gnnplan/cmd/gnnplan/internal/textout"
)

// -o/--output is a format on every command: "table" (the default where a
// command prints tables) fits tables and prose to the terminal, 100
// columns when stdout is not one; "wide" is the same output at full
// length; the others are machine formats written unchanged. Files are
// named by --save (also write this as JSON) and --out (the command's
// product: a report, a dataset directory).

// checkOutput refuses an -o value that is not one of valid, saying which
// are; a value that looks like a file name says where files are named.
func checkOutput(value string, fileFlag string, valid ...string) error {
	if slices.Contains(valid, value) {
		return nil
	}
	hint := ""
	if fileFlag != "" && (strings.ContainsAny(value, "./") || value == "-") {
		hint = "; -o is the output format on every command: write the file with " + fileFlag + " " + value
	}
	return usageErrorf("-o/--output: %q (valid: %s)%s", value, strings.Join(valid, ", "), hint)
}

// human is stdout laid out for a person: Out wraps prose lines at Width
// columns (the terminal's, or 100), and tables fit Width; for -o wide,
// Width is 0 and nothing is fitted. Call Flush when done.
type human struct {
	*textout.Wrapper
	Width int
}

func newHuman(out io.Writer, format string) *human {
	width := textout.Columns(out)
	if format == "wide" {
		width = 0
	}
	return &human{Wrapper: textout.NewWrapper(out, width), Width: width}
}

// table starts a table of these columns; write it with h.write.
func (h *human) write(t *textout.Table) error { return t.Write(h, h.Width) }

// col, num, opt and text name table columns: left-aligned, right-aligned
// (a number), optional (hidden to fit; -o wide shows it) and free text
// (cut with "…" to fit).
func col(name string) textout.Column  { return textout.Column{Name: name} }
func num(name string) textout.Column  { return textout.Column{Name: name, Right: true} }
func text(name string) textout.Column { return textout.Column{Name: name, Elastic: true} }
func opt(c textout.Column) textout.Column {
	c.Optional = true
	return c
}
