// Package vec holds the vector loops of package kernels' CPU backend:
// dst += src, dst += (a+b)+(c+d), dst += alpha*src over float32 rows, and
// a cache prefetch. On amd64 with AVX2 they run 8 floats a step in
// assembly; elsewhere in Go. Both compute each element with the same
// operations in the same order (no FMA), so results are bitwise the same
// whichever runs. It is separate from kernels because a package that uses
// cgo cannot hold assembly.
package vec
