package textout

import (
	"bytes"
	"strings"
	"testing"
)

func maxWidth(s string) int {
	m := 0
	for _, l := range strings.Split(s, "\n") {
		m = max(m, Width(l))
	}
	return m
}

func TestTableFits(t *testing.T) {
	long := "PCIe Gen5 x16 link to the second socket's root complex through a retimer card"
	tab := NewTable(Column{Name: "ID"}, Column{Name: "DESCRIPTION", Elastic: true}, Column{Name: "GB/s", Right: true},
		Column{Name: "SOURCE", Optional: true}, Column{Name: "NOTE", Optional: true})
	tab.Row("gpu0", long, "63.02", "catalog", "measured on the vendor's own benchmark machine")
	tab.Row("nvme12", "Samsung PM1743", "6.00", "lspci", "")
	for _, tc := range []struct {
		name       string
		width      int
		wantShown  []string
		wantHidden []string
		wantCut    bool
	}{
		{"wide", 0, []string{"SOURCE", "NOTE", long}, nil, false},
		{"wide enough", 400, []string{"SOURCE", "NOTE", long}, nil, false},
		{"optional column gives way", 130, []string{"SOURCE", long}, []string{"NOTE"}, false},
		{"both optional columns give way", 100, []string{"GB/s", long}, []string{"NOTE", "SOURCE"}, false},
		{"then the text is cut", 60, []string{"GB/s", "63.02", "PCIe Gen5"}, []string{"NOTE", "SOURCE", long}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tab.Write(&b, tc.width); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			if tc.width > 0 && maxWidth(out) > tc.width {
				t.Errorf("a line is %d columns, want <= %d:\n%s", maxWidth(out), tc.width, out)
			}
			for _, s := range tc.wantShown {
				if !strings.Contains(out, s) {
					t.Errorf("%q missing:\n%s", s, out)
				}
			}
			for _, s := range tc.wantHidden {
				if strings.Contains(out, s+"\n") || strings.Contains(out, s+"  ") {
					t.Errorf("%q shown, want hidden:\n%s", s, out)
				}
			}
			said := strings.Contains(out, "-o wide shows the whole table")
			if said != (len(tc.wantHidden) > 0) {
				t.Errorf("note on -o wide: %v, want %v:\n%s", said, len(tc.wantHidden) > 0, out)
			}
			if tc.wantCut != strings.Contains(out, "…") {
				t.Errorf("cut cells: want %v:\n%s", tc.wantCut, out)
			}
		})
	}
}

func TestTableAligns(t *testing.T) {
	tab := NewTable(Column{Name: "RANK"}, Column{Name: "EPOCH s", Right: true})
	tab.Row("1 (fastest)", "3.7")
	tab.Row("10", "12.5")
	var b bytes.Buffer
	if err := tab.Write(&b, 100); err != nil {
		t.Fatal(err)
	}
	want := "RANK         EPOCH s\n1 (fastest)      3.7\n10              12.5\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

func TestWrapLine(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		width      int
		want       string
	}{
		{"fits", "saturated: 15 SSD link(s)", 40, "saturated: 15 SSD link(s)"},
		{"wide", "one two three four five", 0, "one two three four five"},
		{"indented", "  bytes per epoch: 606 GB from SSDs", 20, "  bytes per epoch:\n      606 GB from\n      SSDs"},
		{"tree keeps its trunk", "│  ├─ sw0 [switch] PCIe Gen4 x16", 24, "│  ├─ sw0 [switch] PCIe\n│  │      Gen4 x16"},
		{"a path is not broken", "wrote /tmp/a/very/long/path/plan.json", 12, "wrote\n    /tmp/a/very/long/path/plan.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := WrapLine(tc.line, tc.width); got != tc.want {
				t.Errorf("got\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

func TestWrapperAcrossWrites(t *testing.T) {
	var b bytes.Buffer
	w := NewWrapper(&b, 10)
	for _, p := range []string{"alpha be", "ta gamma\nshort\nlast line", " here"} {
		if _, err := w.Write([]byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	want := "alpha beta\n    gamma\nshort\nlast line\n    here"
	if b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}

func TestTableWrapsTextCells(t *testing.T) {
	tab := NewTable(Column{Name: "PROPERTY"}, Column{Name: "VALUE", Elastic: true, Wrap: true})
	tab.Row("source", "Cora citation graph, Planetoid split, from the PyG mirror of the Kipf and Welling release")
	tab.Row("nodes", "2708")
	var b bytes.Buffer
	if err := tab.Write(&b, 40); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if maxWidth(out) > 40 || strings.Contains(out, "…") || strings.Contains(out, "-o wide") {
		t.Errorf("want the value wrapped within 40 columns, whole, with no note:\n%s", out)
	}
	words := strings.Fields(out)
	if !strings.Contains(strings.Join(words, " "), "Planetoid split, from the PyG mirror of the Kipf and Welling release nodes 2708") {
		t.Errorf("wrapped value lost words or order:\n%s", out)
	}
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) < 4 || !strings.HasPrefix(lines[2], "          ") {
		t.Errorf("want continuation lines under the VALUE column:\n%s", out)
	}
}

func TestWrapLineKeepsAlignment(t *testing.T) {
	got := WrapLine("ddak  distance from targets 0.0012, SSD imbalance max 1.020", 40)
	want := "ddak  distance from targets 0.0012, SSD\n    imbalance max 1.020"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestTableCutsPathsAtTheStart(t *testing.T) {
	tab := NewTable(Column{Name: "BIN"}, Column{Name: "FILE", Elastic: true, KeepEnd: true})
	tab.Row("nvme0", "/mnt/a/very/long/directory/under/which/the/bins/are/skewed-nvme0.rows")
	var b bytes.Buffer
	if err := tab.Write(&b, 30); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); maxWidth(out) > 30 || !strings.Contains(out, "…") || !strings.Contains(out, "skewed-nvme0.rows\n") {
		t.Errorf("want the path cut at its start, its file name kept, within 30 columns:\n%s", out)
	}
}

func TestTableLeavesOutAnEmptyOptionalColumn(t *testing.T) {
	tab := NewTable(Column{Name: "GPUS"}, Column{Name: "DRAM", Optional: true}, Column{Name: "COST", Right: true})
	tab.Row("4 x l40s", "", "63,898")
	var b bytes.Buffer
	if err := tab.Write(&b, 0); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "DRAM") || strings.Contains(b.String(), "-o wide") {
		t.Errorf("an optional column no row fills is shown, or noted:\n%s", b.String())
	}
}
