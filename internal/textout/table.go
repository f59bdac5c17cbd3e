package textout

import (
	"fmt"
	"io"
	"strings"
)

// Column is one column of a Table.
type Column struct {
	// Name is the header, upper case by convention ("EPOCH s").
	Name string
	// Right aligns the column's cells right (numbers).
	Right bool
	// Optional columns are hidden, rightmost first, while the table is
	// wider than its width, and always when no row fills them.
	Optional bool
	// Elastic columns (free text) are narrowed when hiding the optional
	// columns was not enough, never below their header's width or 12
	// columns: their cells are cut with "…", or with Wrap continued on
	// the next lines.
	Elastic bool
	Wrap    bool
	// KeepEnd cuts a cell at its start instead ("…/nvme0/bin.rows"): for
	// paths, whose end names the file.
	KeepEnd bool
}

// Table is rows of cells under a header, written as columns two spaces
// apart.
type Table struct {
	cols []Column
	rows [][]string
}

// NewTable starts a table with these columns.
func NewTable(cols ...Column) *Table { return &Table{cols: cols} }

// Row adds a row; missing cells are empty and extra cells are dropped.
func (t *Table) Row(cells ...string) {
	r := make([]string, len(t.cols))
	copy(r, cells)
	t.rows = append(t.rows, r)
}

// Len is the number of rows.
func (t *Table) Len() int { return len(t.rows) }

const gap = "  "

// Write writes the table to w fitted to width columns (width <= 0: every
// column and cell whole). When it hides columns or cuts cells to fit, a
// last line names what it left out and that -o wide shows it.
func (t *Table) Write(w io.Writer, width int) error {
	widths := make([]int, len(t.cols))
	for i, c := range t.cols {
		widths[i] = Width(c.Name)
		for _, r := range t.rows {
			widths[i] = max(widths[i], Width(r[i]))
		}
	}
	shown := make([]bool, len(t.cols))
	for i, c := range t.cols {
		// An optional column no row fills says nothing: left out.
		shown[i] = !c.Optional || !t.empty(i)
	}
	total := func() int {
		n, s := 0, 0
		for i, on := range shown {
			if on {
				n += widths[i]
				s++
			}
		}
		return n + len(gap)*max(s-1, 0)
	}
	var hidden []string
	if width > 0 {
		for i := len(t.cols) - 1; i >= 0 && total() > width; i-- {
			if t.cols[i].Optional {
				shown[i] = false
				hidden = append([]string{t.cols[i].Name}, hidden...)
			}
		}
	}
	for width > 0 && total() > width {
		// Cut the widest elastic column that can still give way.
		best := -1
		for i, c := range t.cols {
			if shown[i] && c.Elastic && widths[i] > minElastic(c) && (best < 0 || widths[i] > widths[best]) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		widths[best] = max(minElastic(t.cols[best]), widths[best]-(total()-width))
	}
	cut := false
	var b strings.Builder
	line := func(cells []string) {
		// Each cell as its lines: one, or a wrapped cell's several.
		parts := make([][]string, len(t.cols))
		n := 1
		for i, c := range t.cols {
			s := cells[i]
			switch {
			case !shown[i]:
				continue
			case Width(s) <= widths[i]:
				parts[i] = []string{s}
			case c.Wrap:
				parts[i] = strings.Split(wrapPlain(s, widths[i]), "\n")
			default:
				parts[i] = []string{s}
			}
			for k, p := range parts[i] {
				if Width(p) > widths[i] {
					parts[i][k] = truncate(p, widths[i], c.KeepEnd)
					cut = true
				}
			}
			n = max(n, len(parts[i]))
		}
		for k := range n {
			var l strings.Builder
			first := true
			for i, c := range t.cols {
				if !shown[i] {
					continue
				}
				if !first {
					l.WriteString(gap)
				}
				first = false
				s := ""
				if k < len(parts[i]) {
					s = parts[i][k]
				}
				pad := strings.Repeat(" ", widths[i]-Width(s))
				if c.Right {
					l.WriteString(pad + s)
				} else {
					l.WriteString(s + pad)
				}
			}
			b.WriteString(strings.TrimRight(l.String(), " "))
			b.WriteByte('\n')
		}
	}
	names := make([]string, len(t.cols))
	for i, c := range t.cols {
		names[i] = c.Name
	}
	line(names)
	for _, r := range t.rows {
		line(r)
	}
	if len(hidden) > 0 || cut {
		var what []string
		if len(hidden) > 0 {
			what = append(what, "hid "+strings.Join(hidden, ", "))
		}
		if cut {
			what = append(what, "cut long cells at …")
		}
		b.WriteString(WrapLine(fmt.Sprintf("(%s to fit %d columns; -o wide shows the whole table)", strings.Join(what, " and "), width), width))
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// wrapPlain breaks s at spaces into lines of at most width columns, with
// no indentation.
func wrapPlain(s string, width int) string {
	return wrapWords("", "", s, width)
}

// empty reports whether no row has a cell in column i.
func (t *Table) empty(i int) bool {
	for _, r := range t.rows {
		if r[i] != "" {
			return false
		}
	}
	return true
}

func minElastic(c Column) int { return max(Width(c.Name), 12) }

// truncate cuts s to width columns, with "…" in the last (or with
// keepEnd the first) one.
func truncate(s string, width int, keepEnd bool) string {
	if width <= 0 {
		return ""
	}
	r := []rune(s)
	if keepEnd {
		for i := range r {
			if Width(string(r[i:])) <= width-1 {
				return "…" + string(r[i:])
			}
		}
		return "…"
	}
	for i := len(r); i >= 0; i-- {
		if Width(string(r[:i])) <= width-1 {
			return string(r[:i]) + "…"
		}
	}
	return "…"
}

// Left, Num, Text and Opt name table columns: left-aligned, right-aligned
// (a number), free text (cut with "…" to fit) and optional (hidden to
// fit; width 0 shows it).
func Left(name string) Column { return Column{Name: name} }

// Num is a right-aligned column (see Left).
func Num(name string) Column { return Column{Name: name, Right: true} }

// Text is a free-text column (see Left).
func Text(name string) Column { return Column{Name: name, Elastic: true} }

// Opt makes c optional (see Left).
func Opt(c Column) Column {
	c.Optional = true
	return c
}
