package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/gnnplan/gnnplan/internal/textout"
	"github.com/spf13/pflag"
)

// -o/--output is a format on every command: "table" (the default where a
// command prints tables) fits tables and prose to the terminal, 100
// columns when stdout is not one; "wide" is the same output at full
// length; the others are machine formats written unchanged. Files are
// named by --save (also write this as JSON) and --out (the command's
// product: a report, a dataset directory).

// enumValue is a string flag that takes one of a fixed set of values: a
// value outside it is refused as the flags are parsed, naming the valid
// ones (exit 2). fileFlag, for -o, names the flag that writes files, for
// a value that looks like a file name.
type enumValue struct {
	p        *string
	valid    []string
	fileFlag string
}

func (e *enumValue) String() string { return *e.p }
func (e *enumValue) Type() string   { return "string" }

func (e *enumValue) Set(v string) error {
	if !slices.Contains(e.valid, v) {
		hint := ""
		if e.fileFlag != "" && (strings.ContainsAny(v, "./") || v == "-") {
			hint = "; -o is the output format on every command: write the file with " + e.fileFlag + " " + v
		}
		return fmt.Errorf("valid: %s%s", strings.Join(e.valid, ", "), hint)
	}
	*e.p = v
	return nil
}

// enumFlag defines --name, whose value is one of valid, with its default
// and usage.
func enumFlag(f *pflag.FlagSet, p *string, name, def, usage string, valid ...string) {
	*p = def
	f.Var(&enumValue{p: p, valid: valid}, name, usage)
}

// outputFlag defines -o/--output, the output format: one of formats (the
// first is the default), with what the usage adds after them; fileFlag is
// the flag that writes files ("" for none).
func outputFlag(f *pflag.FlagSet, p *string, fileFlag, more string, formats ...string) {
	*p = formats[0]
	usage := "output format: " + strings.Join(formats, ", ")
	if more != "" {
		usage += " (" + more + ")"
	}
	f.VarP(&enumValue{p: p, valid: formats, fileFlag: fileFlag}, "output", "o", usage)
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

// writeJSON writes v to w as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
