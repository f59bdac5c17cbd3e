package cudac

import _ "embed"

// Source is kernels.cu. Embedding it also makes Go's build cache rebuild
// this package when the file changes (cgo alone does not track a file it
// includes that is not a .h), and keeps it available to builds without
// cgo.
//
//go:embed kernels.cu
var Source string
