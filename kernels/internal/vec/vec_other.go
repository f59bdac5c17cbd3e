//go:build !amd64

package vec

func hasAVX2() bool { return false }

func add4AVX2(dst, a, b, c, d *float32, n int)         { panic("vec: no AVX2 on this architecture") }
func addAVX2(dst, src *float32, n int)                 { panic("vec: no AVX2 on this architecture") }
func axpyAVX2(dst, src *float32, alpha float32, n int) { panic("vec: no AVX2 on this architecture") }

// prefetch is a hint; without it the loads simply miss later.
func prefetch(p *float32, bytes int) {}

func dropAVX2(y, x *float32, n, base int, m *DropMask, relu int) {
	panic("vec: no AVX2 on this architecture")
}
func reluBackAVX2(dx, dy, y *float32, scale float32, n int) {
	panic("vec: no AVX2 on this architecture")
}

func reluAVX2(y, x *float32, n int) { panic("vec: no AVX2 on this architecture") }
