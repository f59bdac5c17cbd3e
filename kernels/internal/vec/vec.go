package vec

import "math"

// Add computes dst += src over len(dst) elements.
func Add(dst, src []float32) {
	n := len(dst)
	src = src[:n]
	if hasAVX2() && n >= 8 {
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
	if hasAVX2() && n >= 8 {
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
	if hasAVX2() && n >= 8 {
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
func HasAVX2() bool { return hasAVX2() }

// DropMask is the dropout decision of a matrix: element k (its row-major
// position) is kept when the top 16 bits of a hash of (k, seed) are at
// least Threshold, and a kept element is multiplied by Scale.
type DropMask struct {
	// S0 and S1 are the seed's halves.
	S0, S1 uint32
	// Threshold is p * 2^16: 0 keeps everything, 65536 drops everything.
	Threshold uint32
	Scale     float32
}

// mix32 is MurmurHash3's 32-bit finalizer, a bijection with full
// avalanche.
func mix32(h uint32) uint32 {
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return h
}

// Keep reports whether element k survives.
func (m DropMask) Keep(k int) bool {
	h := mix32(mix32(uint32(k)^m.S0) ^ m.S1)
	return h>>16 >= m.Threshold
}

// keepBits returns all ones when element k survives, else 0.
func (m DropMask) keepBits(k int) uint32 {
	h := mix32(mix32(uint32(k)^m.S0) ^ m.S1)
	return uint32((int64(h>>16)-int64(m.Threshold))>>63) ^ 0xffffffff
}

// Dropout sets y[j] = x[j]*Scale where element base+j survives and +0
// elsewhere.
func Dropout(y, x []float32, base int, m DropMask) { drop(y, x, base, m, false) }

// ReLUDropout sets y[j] = Dropout(max(x[j], 0)), where max zeroes the
// negatives only (a NaN and -0 pass through, as x86's MAXPS(0, x)).
func ReLUDropout(y, x []float32, base int, m DropMask) { drop(y, x, base, m, true) }

func drop(y, x []float32, base int, m DropMask, relu bool) {
	n := len(x)
	y = y[:n]
	n8 := 0
	if hasAVX2() {
		n8 = n &^ 7
	}
	if n8 > 0 {
		flag := 0
		if relu {
			flag = 1
		}
		dropAVX2(&y[0], &x[0], n8, base, &m, flag)
	}
	dropGo(y[n8:], x[n8:], base+n8, m, relu)
}

// ReLUDropoutBackward sets dx[j] = dy[j]*scale where y[j] > 0 and +0
// elsewhere: the gradient through ReLUDropout read from its output y
// (a dropped or non-positive element is not > 0).
func ReLUDropoutBackward(dx, dy, y []float32, scale float32) {
	n := len(y)
	dx, dy = dx[:n], dy[:n]
	n8 := 0
	if hasAVX2() {
		n8 = n &^ 7
	}
	if n8 > 0 {
		reluBackAVX2(&dx[0], &dy[0], &y[0], scale, n8)
	}
	reluBackGo(dx[n8:], dy[n8:], y[n8:], scale)
}

func dropGo(y, x []float32, base int, m DropMask, relu bool) {
	y = y[:len(x)]
	for j, v := range x {
		if relu {
			v = math.Float32frombits(math.Float32bits(v) &^ negative(v))
		}
		y[j] = math.Float32frombits(math.Float32bits(v*m.Scale) & m.keepBits(base+j))
	}
}

func reluBackGo(dx, dy, y []float32, scale float32) {
	dx, dy = dx[:len(y)], dy[:len(y)]
	for j, v := range y {
		dx[j] = math.Float32frombits(math.Float32bits(dy[j]*scale) & positive(v))
	}
}

// NegativeMask returns all ones when v < 0 (not -0, not NaN), else 0,
// without a branch (a branch on a sign mispredicts half the time).
func NegativeMask(v float32) uint32 { return negative(v) }

// PositiveMask returns all ones when v > 0 (not NaN), else 0, without a
// branch.
func PositiveMask(v float32) uint32 { return positive(v) }

func negative(v float32) uint32 { _, n := signs(v); return n }

func positive(v float32) uint32 { p, _ := signs(v); return p }

// signs returns all-ones masks for v > 0 and v < 0 (neither for NaN and
// zeros) from v's bits.
func signs(v float32) (pos, neg uint32) {
	b := math.Float32bits(v)
	mag := int64(b & 0x7fffffff)
	sign := uint32(int32(b) >> 31)
	nonzero := uint32((0 - mag) >> 63)         // mag > 0
	notNaN := uint32((mag - 0x7f800001) >> 63) // mag <= +Inf
	return ^sign & nonzero & notNaN, sign & nonzero & notNaN
}

// ReLU sets y[j] = x[j] where x[j] is not negative and +0 where it is (a
// NaN and -0 pass, as x86's MAXPS(0, x)).
func ReLU(y, x []float32) {
	n := len(x)
	y = y[:n]
	n8 := 0
	if hasAVX2() {
		n8 = n &^ 7
	}
	if n8 > 0 {
		reluAVX2(&y[0], &x[0], n8)
	}
	reluGo(y[n8:], x[n8:])
}

func reluGo(y, x []float32) {
	y = y[:len(x)]
	for j, v := range x {
		y[j] = math.Float32frombits(math.Float32bits(v) &^ negative(v))
	}
}
