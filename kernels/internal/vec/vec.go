package vec

// Add computes dst += src over len(dst) elements.
func Add(dst, src []float32) {
	n := len(dst)
	src = src[:n]
	if hasAVX2 && n >= 8 {
		addAVX2(&dst[0], &src[0], n)
		return
	}
	addGo(dst, src)
}

func addGo(dst, src []float32) {
	src = src[:len(dst)]
	for j := range dst {
		dst[j] += src[j]
	}
}

// Add4 computes dst += (a+b) + (c+d).
func Add4(dst, a, b, c, d []float32) {
	n := len(dst)
	a, b, c, d = a[:n], b[:n], c[:n], d[:n]
	if hasAVX2 && n >= 8 {
		add4AVX2(&dst[0], &a[0], &b[0], &c[0], &d[0], n)
		return
	}
	add4Go(dst, a, b, c, d)
}

func add4Go(dst, a, b, c, d []float32) {
	n := len(dst)
	a, b, c, d = a[:n], b[:n], c[:n], d[:n]
	for j := range dst {
		dst[j] += (a[j] + b[j]) + (c[j] + d[j])
	}
}

// Axpy computes dst += alpha*src (a multiply, then an add).
func Axpy(dst []float32, alpha float32, src []float32) {
	n := len(dst)
	src = src[:n]
	if hasAVX2 && n >= 8 {
		axpyAVX2(&dst[0], &src[0], alpha, n)
		return
	}
	axpyGo(dst, alpha, src)
}

func axpyGo(dst []float32, alpha float32, src []float32) {
	src = src[:len(dst)]
	for j := range dst {
		dst[j] += alpha * src[j]
	}
}

// Prefetch asks for the cache lines holding x ahead of their use.
func Prefetch(x []float32) {
	if len(x) > 0 {
		prefetch(&x[0], 4*len(x))
	}
}

// HasAVX2 reports whether the assembly loops run.
func HasAVX2() bool { return hasAVX2 }
