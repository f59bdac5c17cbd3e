//go:build !cgo

package kernels

import "errors"

// haveDlopen says whether loadBLAS can open shared libraries.
const haveDlopen = false

// openCBLAS fails: without cgo there is no dlopen, so loadBLAS("") runs on
// gonum and loadBLAS("openblas") reports why.
func openCBLAS(names []string, probe coreProbe) (blasLib, error) {
	return nil, errors.New("built without cgo")
}
