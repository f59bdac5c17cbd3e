package vec

import "golang.org/x/sys/cpu"

// hasAVX2 reports whether the CPU the process runs on has AVX2 (x/sys/cpu
// reads it once at start-up).
func hasAVX2() bool { return cpu.X86.HasAVX2 }

//go:noescape
func add4AVX2(dst, a, b, c, d *float32, n int)

//go:noescape
func addAVX2(dst, src *float32, n int)

//go:noescape
func axpyAVX2(dst, src *float32, alpha float32, n int)

//go:noescape
func prefetch(p *float32, bytes int)

//go:noescape
func dropAVX2(y, x *float32, n, base int, m *DropMask, relu int)

//go:noescape
func reluBackAVX2(dx, dy, y *float32, scale float32, n int)

//go:noescape
func reluAVX2(y, x *float32, n int)
