package trainer

import (
	"go/build"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestTrainerImportsNoPlanner holds the packages' arrows one way (issue
// 36): nothing under trainer/ imports, even through another package, the
// machine model, the flow model, the planner or the layout algorithm. The
// trainer reads what they write (a layout, a plan's numbers) through
// leaf packages instead: ddak/layout and those under internal/.
func TestTrainerImportsNoPlanner(t *testing.T) {
	const module = "github.com/gnnplan/gnnplan/"
	forbidden := []string{"topology", "maxflow", "tpc", "ddak"}
	leaves := map[string]bool{module + "ddak/layout": true} // the layout's file format alone
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	imports := map[string][]string{} // module package -> its module imports, not tests'
	load := func(pkg string) []string {
		if deps, ok := imports[pkg]; ok {
			return deps
		}
		imports[pkg] = nil
		p, err := build.ImportDir(filepath.Join(root, strings.TrimPrefix(pkg, module)), 0)
		if err != nil {
			return nil
		}
		var deps []string
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, module) {
				deps = append(deps, imp)
			}
		}
		imports[pkg] = deps
		return deps
	}
	var checked int
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() || d.Name() == "testdata" {
			if err == nil && d.IsDir() {
				return filepath.SkipDir
			}
			return err
		}
		start := module + filepath.ToSlash(filepath.Join("trainer", path))
		if _, err := build.ImportDir(path, 0); err != nil {
			return nil // no Go files here
		}
		checked++
		// Every package start reaches, with the path it took.
		via := map[string]string{start: start}
		queue := []string{start}
		for len(queue) > 0 {
			pkg := queue[0]
			queue = queue[1:]
			for _, dep := range load(pkg) {
				if _, seen := via[dep]; seen {
					continue
				}
				via[dep] = via[pkg] + " -> " + dep
				queue = append(queue, dep)
			}
		}
		for dep, path := range via {
			for _, f := range forbidden {
				if !leaves[dep] && (dep == module+f || strings.HasPrefix(dep, module+f+"/")) {
					t.Errorf("%s", path)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 8 {
		t.Errorf("checked %d packages under trainer/, want all of them (8 or more)", checked)
	}
}
