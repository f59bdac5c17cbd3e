package docrefs

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// pathRef is a path with a directory ending in .go or .md, standing on its
// own: not the tail of a longer path or a URL.
var pathRef = regexp.MustCompile(`(?:^|[^\w./-])((?:[\w.-]+/)+[\w.-]+\.(?:go|md))(?:$|[^\w/])`)

// TestCitedFilesExist: every path to a .go or .md file that starts at one
// of the repository's top-level directories (or testdata/, or ../) names a
// file there, read from the repository's root or from the citing file's
// directory.
func TestCitedFilesExist(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("no go.mod at %s: %v", root, err)
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	tops := map[string]bool{"testdata": true, "..": true}
	for _, e := range entries {
		if e.IsDir() {
			tops[e.Name()] = true
		}
	}
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }
	inside := func(p string) bool {
		rel, err := filepath.Rel(root, p)
		return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
	}
	checked := 0
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		name := d.Name()
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(name, ".") && rel != ".ci" || name == "testdata" || rel == "bin" || rel == "gpu-bundle") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") && !(strings.HasPrefix(rel, "docs/") && strings.HasSuffix(name, ".md")) &&
			rel != "README.md" && rel != "Makefile" && !strings.HasPrefix(rel, ".ci/") {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		checked++
		s := bufio.NewScanner(f)
		s.Buffer(nil, 1<<20)
		for n := 1; s.Scan(); n++ {
			for _, m := range pathRef.FindAllStringSubmatch(s.Text(), -1) {
				ref := m[1]
				if !tops[strings.SplitN(ref, "/", 2)[0]] {
					continue
				}
				fromDir := filepath.Join(filepath.Dir(path), filepath.FromSlash(ref))
				fromRoot := filepath.Join(root, filepath.FromSlash(ref))
				switch {
				case strings.HasPrefix(ref, "../") && !inside(fromDir):
					t.Errorf("%s:%d: cites %s, outside the repository", rel, n, ref)
				case !(inside(fromRoot) && exists(fromRoot)) && !(inside(fromDir) && exists(fromDir)):
					t.Errorf("%s:%d: cites %s, which the repository lacks", rel, n, ref)
				}
			}
		}
		return s.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 10 {
		t.Fatalf("checked %d files under %s: the walk missed the repository", checked, root)
	}
}
