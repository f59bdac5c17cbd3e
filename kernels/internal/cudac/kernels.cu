// gnnplan's CUDA kernels: the compute of package kernels' Backend on an
// NVIDIA GPU. `make ptx` compiles this file to PTX with NVRTC
// (kernels/internal/ptxgen) into kernels/cuda_kernels.ptx, the CUDA
// backend embeds the PTX and the driver JITs it for the GPU present.
//
// Conventions, which the Go side (kernels/gpu.go, gpu_launch.go) and the host
// emulation (cudac.go) rely on:
//
//   - Every kernel takes the same 24 parameters, the fields of a gp_args:
//     8 pointers (p), 8 integers (n), 8 floating-point values (f, as
//     double; every float32 is exact in one), each 8 bytes, and reads them
//     back into a gp_args (GP_UNPACK). One signature for all keeps the
//     Go side to one launch path, and 8-byte scalars are what the
//     driver-API binding passes.
//   - Every kernel walks its work with a grid-stride loop over a 64-bit
//     index, so any launch geometry covers all of it and no size
//     overflows 32 bits.
//   - No shared memory, no __syncthreads, no atomics, no warp functions:
//     each thread's work is independent, so a launch computes the same
//     bits whatever its geometry, and the host emulation can run each
//     thread to its end in turn.
//   - The arithmetic follows the CPU backend's order of operations
//     (kernels/cpu_*.go): sums run over the same terms in the same order,
//     a*b+c is not fused (NVRTC runs with --fmad=false), exponentials and
//     logarithms are taken in double as Go's math package does. Where the
//     CPU's float32 results are bitwise fixed, these are the same bits.
//   - Reductions across rows (column sums) are cut into chunks of
//     GP_REDUCE_CHUNK rows summed in order, then the chunks' partial sums
//     added in order: the CPU backend's reduceChunk.

#ifdef __CUDACC_RTC__
#define GP_KERNEL extern "C" __global__
#define GP_DEVICE static __device__ __forceinline__
#define GP_THREADS_SETUP
#else
// Host emulation: plain C, one thread at a time.
#include <math.h>
#include <string.h>
typedef struct {
	unsigned int x, y, z;
} gp_dim3;
// Thread-local: emulated GPUs launch from several goroutines at once, each
// launch a whole cgo call on one OS thread.
static _Thread_local gp_dim3 threadIdx, blockIdx, blockDim, gridDim;
#define GP_KERNEL static
#define GP_DEVICE static inline
#endif

typedef long long i64;
typedef unsigned int u32;
typedef unsigned long long u64;

typedef struct {
	u64 p[8];
	i64 n[8];
	double f[8];
} gp_args;

// GP_PARAMS is every kernel's parameter list, GP_UNPACK its gp_args.
#define GP_PARAMS                                                                                \
	u64 p0, u64 p1, u64 p2, u64 p3, u64 p4, u64 p5, u64 p6, u64 p7, i64 n0, i64 n1, i64 n2, i64 n3, \
	    i64 n4, i64 n5, i64 n6, i64 n7, double f0, double f1, double f2, double f3, double f4,     \
	    double f5, double f6, double f7
#define GP_UNPACK                                                                   \
	const gp_args a = {{p0, p1, p2, p3, p4, p5, p6, p7}, {n0, n1, n2, n3, n4, n5, n6, n7}, \
			   {f0, f1, f2, f3, f4, f5, f6, f7}}

#define GP_REDUCE_CHUNK 256

// The activations, numbered as kernels.ActKind.
#define GP_IDENTITY 0
#define GP_RELU 1
#define GP_LEAKY_RELU 2
#define GP_ELU 3

// GP_FOR walks i over [0, total) with a grid-stride loop.
#define GP_FOR(i, total)                                                      \
	for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < (total); \
	     i += (i64)gridDim.x * blockDim.x)

#ifdef __CUDACC_RTC__
GP_DEVICE u32 gp_bits(float v) { return __float_as_uint(v); }
GP_DEVICE float gp_float(u32 b) { return __uint_as_float(b); }
#else
GP_DEVICE u32 gp_bits(float v) {
	u32 b;
	memcpy(&b, &v, 4);
	return b;
}
GP_DEVICE float gp_float(u32 b) {
	float v;
	memcpy(&v, &b, 4);
	return v;
}
#endif

// gp_signs sets *pos and *neg to all ones when v > 0 or v < 0 (neither
// for NaN or zeros): vec.signs.
GP_DEVICE void gp_signs(float v, u32 *pos, u32 *neg) {
	u32 b = gp_bits(v);
	i64 mag = (i64)(b & 0x7fffffffu);
	u32 sign = (u32)((int)b >> 31);
	u32 nonzero = (u32)((0 - mag) >> 63);
	u32 notNaN = (u32)((mag - 0x7f800001LL) >> 63);
	*pos = ~sign & nonzero & notNaN;
	*neg = sign & nonzero & notNaN;
}

GP_DEVICE u32 gp_negative(float v) {
	u32 p, n;
	gp_signs(v, &p, &n);
	return n;
}

GP_DEVICE u32 gp_positive(float v) {
	u32 p, n;
	gp_signs(v, &p, &n);
	return p;
}

GP_DEVICE float gp_choose(u32 mask, float a, float b) {
	return gp_float((gp_bits(a) & mask) | (gp_bits(b) & ~mask));
}

// gp_mix32 is MurmurHash3's 32-bit finalizer (vec.mix32).
GP_DEVICE u32 gp_mix32(u32 h) {
	h ^= h >> 16;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	h *= 0xc2b2ae35u;
	h ^= h >> 16;
	return h;
}

// gp_keep_bits is all ones when element k survives dropout (vec.keepBits).
GP_DEVICE u32 gp_keep_bits(i64 k, u32 s0, u32 s1, u32 threshold) {
	u32 h = gp_mix32(gp_mix32((u32)k ^ s0) ^ s1);
	return (u32)(((i64)(h >> 16) - (i64)threshold) >> 63) ^ 0xffffffffu;
}

// gp_dot is the CPU's dot: four running sums, then (s0+s1)+(s2+s3).
GP_DEVICE float gp_dot(const float *a, const float *b, i64 n) {
	float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
	i64 j = 0;
	for (; j + 4 <= n; j += 4) {
		s0 += a[j] * b[j];
		s1 += a[j + 1] * b[j + 1];
		s2 += a[j + 2] * b[j + 2];
		s3 += a[j + 3] * b[j + 3];
	}
	for (; j < n; j++) s0 += a[j] * b[j];
	return (s0 + s1) + (s2 + s3);
}

// gp_act is actRow's f(v).
GP_DEVICE float gp_act(int kind, float slope, float v) {
	switch (kind) {
	case GP_RELU:
		return gp_float(gp_bits(v) & ~gp_negative(v));
	case GP_LEAKY_RELU:
		return v * gp_choose(gp_negative(v), slope, 1);
	case GP_ELU:
		if (v < 0) return slope * (float)expm1((double)v);
		return v;
	}
	return v;
}

// ---- Memory ----------------------------------------------------------

// gp_fill sets every element of a rows x cols matrix to f[0].
GP_KERNEL void gp_fill(GP_PARAMS) {
	GP_UNPACK;
	float *m = (float *)a.p[0];
	i64 rows = a.n[0], cols = a.n[1], stride = a.n[2];
	float v = (float)a.f[0];
	GP_FOR(t, rows * cols) { m[(t / cols) * stride + t % cols] = v; }
}

// gp_copy copies src into dst (both rows x cols).
GP_KERNEL void gp_copy(GP_PARAMS) {
	GP_UNPACK;
	float *dst = (float *)a.p[0];
	const float *src = (const float *)a.p[1];
	i64 rows = a.n[0], cols = a.n[1], ds = a.n[2], ss = a.n[3];
	GP_FOR(t, rows * cols) {
		i64 r = t / cols, c = t % cols;
		dst[r * ds + c] = src[r * ss + c];
	}
}

// ---- Rows --------------------------------------------------------------

// gp_gather_rows sets dst row i to src row idx[i].
GP_KERNEL void gp_gather_rows(GP_PARAMS) {
	GP_UNPACK;
	float *dst = (float *)a.p[0];
	const float *src = (const float *)a.p[1];
	const int *idx = (const int *)a.p[2];
	i64 rows = a.n[0], cols = a.n[1], ds = a.n[2], ss = a.n[3];
	GP_FOR(t, rows * cols) {
		i64 r = t / cols, c = t % cols;
		dst[r * ds + c] = src[(i64)idx[r] * ss + c];
	}
}

// gp_gather_rows2 sets dst row i to a's row idx[i] when idx[i] >= 0, else
// to b's row -1-idx[i].
GP_KERNEL void gp_gather_rows2(GP_PARAMS) {
	GP_UNPACK;
	float *dst = (float *)a.p[0];
	const float *x = (const float *)a.p[1], *y = (const float *)a.p[2];
	const int *idx = (const int *)a.p[3];
	i64 rows = a.n[0], cols = a.n[1], ds = a.n[2], xs = a.n[3], ys = a.n[4];
	GP_FOR(t, rows * cols) {
		i64 r = t / cols, c = t % cols;
		int i = idx[r];
		dst[r * ds + c] = i >= 0 ? x[(i64)i * xs + c] : y[(i64)(-1 - i) * ys + c];
	}
}

// gp_scatter_add_rows adds to dst row r the src rows order[start[r]] ..
// order[start[r+1]-1], in that order (the host groups the indices with
// a stable sort, as the CPU backend does).
GP_KERNEL void gp_scatter_add_rows(GP_PARAMS) {
	GP_UNPACK;
	float *dst = (float *)a.p[0];
	const float *src = (const float *)a.p[1];
	const int *start = (const int *)a.p[2], *order = (const int *)a.p[3];
	i64 rows = a.n[0], cols = a.n[1], ds = a.n[2], ss = a.n[3];
	GP_FOR(t, rows * cols) {
		i64 r = t / cols, c = t % cols;
		float o = dst[r * ds + c];
		for (int k = start[r]; k < start[r + 1]; k++) o += src[(i64)order[k] * ss + c];
		dst[r * ds + c] = o;
	}
}

// gp_add_bias adds the row bias to every row of m.
GP_KERNEL void gp_add_bias(GP_PARAMS) {
	GP_UNPACK;
	float *m = (float *)a.p[0];
	const float *bias = (const float *)a.p[1];
	i64 rows = a.n[0], cols = a.n[1], stride = a.n[2];
	GP_FOR(t, rows * cols) { m[(t / cols) * stride + t % cols] += bias[t % cols]; }
}

// gp_column_partials sets partial[k*cols + c] to the sum of column c over
// rows [k*GP_REDUCE_CHUNK, (k+1)*GP_REDUCE_CHUNK) of m, in row order; with
// p[2] set (HeadDot's da), each term is m[r, c] * w[r, c / F] instead.
GP_KERNEL void gp_column_partials(GP_PARAMS) {
	GP_UNPACK;
	float *partial = (float *)a.p[0];
	const float *m = (const float *)a.p[1];
	const float *w = (const float *)a.p[2];
	i64 rows = a.n[0], cols = a.n[1], stride = a.n[2], ws = a.n[3], F = a.n[4];
	i64 chunks = (rows + GP_REDUCE_CHUNK - 1) / GP_REDUCE_CHUNK;
	GP_FOR(t, chunks * cols) {
		i64 k = t / cols, c = t % cols;
		i64 hi = (k + 1) * GP_REDUCE_CHUNK;
		if (hi > rows) hi = rows;
		float s = 0;
		for (i64 r = k * GP_REDUCE_CHUNK; r < hi; r++) {
			if (w)
				s += w[r * ws + c / F] * m[r * stride + c];
			else
				s += m[r * stride + c];
		}
		partial[k * cols + c] = s;
	}
}

// gp_add_partials sets out[c] = beta*out[c] (0 when beta is 0, whatever
// out held) plus the chunks' partial sums of column c, in chunk order.
GP_KERNEL void gp_add_partials(GP_PARAMS) {
	GP_UNPACK;
	float *out = (float *)a.p[0];
	const float *partial = (const float *)a.p[1];
	i64 cols = a.n[0], chunks = a.n[1];
	float beta = (float)a.f[0];
	GP_FOR(c, cols) {
		float o = beta == 0 ? 0 : out[c] * beta;
		for (i64 k = 0; k < chunks; k++) o += partial[k * cols + c];
		out[c] = o;
	}
}

// gp_axpy computes y += alpha*x.
GP_KERNEL void gp_axpy(GP_PARAMS) {
	GP_UNPACK;
	float *y = (float *)a.p[0];
	const float *x = (const float *)a.p[1];
	i64 rows = a.n[0], cols = a.n[1], ys = a.n[2], xs = a.n[3];
	float alpha = (float)a.f[0];
	GP_FOR(t, rows * cols) {
		i64 r = t / cols, c = t % cols;
		y[r * ys + c] += alpha * x[r * xs + c];
	}
}

// gp_scale computes m *= alpha.
GP_KERNEL void gp_scale(GP_PARAMS) {
	GP_UNPACK;
	float *m = (float *)a.p[0];
	i64 rows = a.n[0], cols = a.n[1], stride = a.n[2];
	float alpha = (float)a.f[0];
	GP_FOR(t, rows * cols) { m[(t / cols) * stride + t % cols] *= alpha; }
}

// ---- Activations and dropout ---------------------------------------

// gp_act_dropout sets y = f(x), then, when threshold > 0, applies
// dropout: element k (its row-major position r*cols + c) is kept when
// the top 16 bits of its hash reach threshold and scaled by f[1], else
// set to +0 (vec.Dropout, vec.ReLUDropout).
GP_KERNEL void gp_act_dropout(GP_PARAMS) {
	GP_UNPACK;
	float *y = (float *)a.p[0];
	const float *x = (const float *)a.p[1];
	i64 rows = a.n[0], cols = a.n[1], ys = a.n[2], xs = a.n[3];
	int kind = (int)a.n[4];
	u32 threshold = (u32)a.n[5];
	u64 seed = (u64)a.n[6];
	float slope = (float)a.f[0], scale = (float)a.f[1];
	GP_FOR(t, rows * cols) {
		i64 r = t / cols, c = t % cols;
		float v = gp_act(kind, slope, x[r * xs + c]);
		if (threshold > 0) v = gp_float(gp_bits(v * scale) & gp_keep_bits(t, (u32)seed, (u32)(seed >> 32), threshold));
		y[r * ys + c] = v;
	}
}

// gp_act_backward sets dx = dy * f'(x), given x and y = f(x).
GP_KERNEL void gp_act_backward(GP_PARAMS) {
	GP_UNPACK;
	float *dx = (float *)a.p[0];
	const float *dy = (const float *)a.p[1], *x = (const float *)a.p[2], *y = (const float *)a.p[3];
	i64 rows = a.n[0], cols = a.n[1], dxs = a.n[2], dys = a.n[3], xs = a.n[4], ys = a.n[5];
	int kind = (int)a.n[6];
	float slope = (float)a.f[0];
	GP_FOR(t, rows * cols) {
		i64 r = t / cols, c = t % cols;
		float d = dy[r * dys + c], v = x[r * xs + c];
		switch (kind) {
		case GP_RELU:
			d = gp_float(gp_bits(d) & gp_positive(v));
			break;
		case GP_LEAKY_RELU:
			d = d * gp_choose(gp_negative(v), slope, 1);
			break;
		case GP_ELU:
			if (v < 0) d = d * (y[r * ys + c] + slope);
			break;
		}
		dx[r * dxs + c] = d;
	}
}

// gp_act_dropout_backward sets dx from dy through gp_act_dropout, given
// its output y (f's derivative read from y's sign; for ReLU a dropped or
// non-positive y passes nothing).
GP_KERNEL void gp_act_dropout_backward(GP_PARAMS) {
	GP_UNPACK;
	float *dx = (float *)a.p[0];
	const float *dy = (const float *)a.p[1], *y = (const float *)a.p[2];
	i64 rows = a.n[0], cols = a.n[1], dxs = a.n[2], dys = a.n[3], ys = a.n[4];
	int kind = (int)a.n[5];
	u32 threshold = (u32)a.n[6];
	u64 seed = (u64)a.n[7];
	float slope = (float)a.f[0], scale = (float)a.f[1];
	GP_FOR(t, rows * cols) {
		i64 r = t / cols, c = t % cols;
		float d = dy[r * dys + c], v = y[r * ys + c];
		if (kind == GP_RELU) {
			dx[r * dxs + c] = gp_float(gp_bits(d * scale) & gp_positive(v));
			continue;
		}
		if (threshold > 0) d = gp_float(gp_bits(d * scale) & gp_keep_bits(t, (u32)seed, (u32)(seed >> 32), threshold));
		if (kind == GP_LEAKY_RELU) d *= gp_choose(gp_negative(v), slope, 1);
		if (kind == GP_ELU && v < 0) d *= v * (1 / scale) + slope;
		dx[r * dxs + c] = d;
	}
}

// ---- Loss and optimizer ----------------------------------------------

// gp_softmax_xent computes each row's cross-entropy against its label
// into loss[r] (double) and hit[r] (1 when the largest logit is the
// label), and, when p[0] is set, the gradient of f[0] times the summed
// loss into dlogits. A row with a negative label gets loss 0, hit 0 and a
// zero gradient. The host sums loss and hit in row order.
GP_KERNEL void gp_softmax_xent(GP_PARAMS) {
	GP_UNPACK;
	float *dl = (float *)a.p[0];
	const float *logits = (const float *)a.p[1];
	const int *labels = (const int *)a.p[2];
	double *loss = (double *)a.p[3];
	int *hit = (int *)a.p[4];
	i64 rows = a.n[0], cols = a.n[1], dls = a.n[2], ls = a.n[3];
	float scale = (float)a.f[0];
	GP_FOR(r, rows) {
		const float *lr = logits + r * ls;
		int lab = labels[r];
		loss[r] = 0;
		hit[r] = 0;
		if (lab < 0 || cols == 0) {
			if (dl)
				for (i64 j = 0; j < cols; j++) dl[r * dls + j] = 0;
			continue;
		}
		i64 best = 0;
		float mx = lr[0];
		for (i64 j = 0; j < cols; j++)
			if (lr[j] > mx) {
				mx = lr[j];
				best = j;
			}
		double sum = 0;
		for (i64 j = 0; j < cols; j++) sum += exp((double)lr[j] - (double)mx);
		loss[r] = log(sum) - ((double)lr[lab] - (double)mx);
		hit[r] = best == lab;
		if (dl) {
			for (i64 j = 0; j < cols; j++) dl[r * dls + j] = (float)(exp((double)lr[j] - (double)mx) / sum) * scale;
			dl[r * dls + lab] -= scale;
		}
	}
}

// gp_argmax writes each row's first largest column into dst.
GP_KERNEL void gp_argmax(GP_PARAMS) {
	GP_UNPACK;
	int *dst = (int *)a.p[0];
	const float *m = (const float *)a.p[1];
	i64 rows = a.n[0], cols = a.n[1], stride = a.n[2];
	GP_FOR(r, rows) {
		i64 best = 0;
		for (i64 j = 0; j < cols; j++)
			if (m[r * stride + j] > m[r * stride + best]) best = j;
		dst[r] = (int)best;
	}
}

// gp_adam applies one Adam step with L2 weight decay (PyTorch's form),
// f = {lr/(1-b1^t), sqrt(1-b2^t), b1, b2, weight decay, eps}.
GP_KERNEL void gp_adam(GP_PARAMS) {
	GP_UNPACK;
	float *p = (float *)a.p[0];
	const float *g = (const float *)a.p[1];
	float *m = (float *)a.p[2], *v = (float *)a.p[3];
	i64 rows = a.n[0], cols = a.n[1], ps = a.n[2], gs = a.n[3], ms = a.n[4], vs = a.n[5];
	float step = (float)a.f[0], bc2sqrt = (float)a.f[1], b1 = (float)a.f[2], b2 = (float)a.f[3];
	float wd = (float)a.f[4], eps = (float)a.f[5];
	GP_FOR(t, rows * cols) {
		i64 r = t / cols, c = t % cols;
		float *pk = p + r * ps + c, *mk = m + r * ms + c, *vk = v + r * vs + c;
		float gj = g[r * gs + c] + wd * *pk;
		*mk = b1 * *mk + (1 - b1) * gj;
		*vk = b2 * *vk + (1 - b2) * gj * gj;
		float denom = (float)sqrt((double)*vk) / bc2sqrt + eps;
		*pk -= step * *mk / denom;
	}
}

// ---- Graph: aggregation over a sampled block ---------------------------
//
// A block is a CSR by destination: the edges of destination i are
// [off[i], off[i+1]) and edge j's source row is src[j]. Its transpose,
// built by the host with a stable sort, lists the edges of source u as
// tedge[tstart[u] .. tstart[u+1]) in edge order, with their destinations
// in tdst.

// gp_segment_mean sets out row i to the mean of x's rows that i's edges
// reach (0 when none), adding them as the CPU does: the first row, then
// groups of four as (a+b)+(c+d), then the rest, times 1/degree. x may be
// the whole feature matrix: the gather is fused into the aggregation.
GP_KERNEL void gp_segment_mean(GP_PARAMS) {
	GP_UNPACK;
	float *out = (float *)a.p[0];
	const float *x = (const float *)a.p[1];
	const int *off = (const int *)a.p[2], *src = (const int *)a.p[3];
	i64 rows = a.n[0], cols = a.n[1], os = a.n[2], xs = a.n[3];
	GP_FOR(t, rows * cols) {
		i64 i = t / cols, c = t % cols;
		int lo = off[i], hi = off[i + 1];
		if (lo == hi) {
			out[i * os + c] = 0;
			continue;
		}
		float o = x[(i64)src[lo] * xs + c];
		int j = lo + 1;
		for (; j + 4 <= hi; j += 4)
			o += (x[(i64)src[j] * xs + c] + x[(i64)src[j + 1] * xs + c]) +
			     (x[(i64)src[j + 2] * xs + c] + x[(i64)src[j + 3] * xs + c]);
		for (; j < hi; j++) o += x[(i64)src[j] * xs + c];
		out[i * os + c] = o * (1 / (float)(hi - lo));
	}
}

// gp_segment_mean_backward adds to dx row u, for each edge of u in edge
// order, dout's row of the edge's destination over its degree.
GP_KERNEL void gp_segment_mean_backward(GP_PARAMS) {
	GP_UNPACK;
	float *dx = (float *)a.p[0];
	const float *dout = (const float *)a.p[1];
	const int *tstart = (const int *)a.p[2], *tdst = (const int *)a.p[3], *off = (const int *)a.p[4];
	i64 rows = a.n[0], cols = a.n[1], dxs = a.n[2], ds = a.n[3];
	GP_FOR(t, rows * cols) {
		i64 u = t / cols, c = t % cols;
		float d = dx[u * dxs + c];
		for (int k = tstart[u]; k < tstart[u + 1]; k++) {
			int i = tdst[k];
			d += (1 / (float)(off[i + 1] - off[i])) * dout[(i64)i * ds + c];
		}
		dx[u * dxs + c] = d;
	}
}

// gp_weighted_sum sets out[i, c] to the sum over i's edges j of
// w[j, c/F] * x[src(j), c] (H heads of F columns).
GP_KERNEL void gp_weighted_sum(GP_PARAMS) {
	GP_UNPACK;
	float *out = (float *)a.p[0];
	const float *x = (const float *)a.p[1], *w = (const float *)a.p[2];
	const int *off = (const int *)a.p[3], *src = (const int *)a.p[4];
	i64 rows = a.n[0], cols = a.n[1], F = a.n[2], os = a.n[3], xs = a.n[4], ws = a.n[5];
	GP_FOR(t, rows * cols) {
		i64 i = t / cols, c = t % cols, h = c / F;
		float o = 0;
		for (int j = off[i]; j < off[i + 1]; j++) o += w[(i64)j * ws + h] * x[(i64)src[j] * xs + c];
		out[i * os + c] = o;
	}
}

// gp_weighted_sum_backward adds to dx[u, c] the sum over u's edges j, in
// edge order, of w[j, c/F] * dout[dst(j), c].
GP_KERNEL void gp_weighted_sum_backward(GP_PARAMS) {
	GP_UNPACK;
	float *dx = (float *)a.p[0];
	const float *dout = (const float *)a.p[1], *w = (const float *)a.p[2];
	const int *tstart = (const int *)a.p[3], *tedge = (const int *)a.p[4], *tdst = (const int *)a.p[5];
	i64 rows = a.n[0], cols = a.n[1], F = a.n[2], dxs = a.n[3], ds = a.n[4], ws = a.n[5];
	GP_FOR(t, rows * cols) {
		i64 u = t / cols, c = t % cols, h = c / F;
		float d = dx[u * dxs + c];
		for (int k = tstart[u]; k < tstart[u + 1]; k++) d += w[(i64)tedge[k] * ws + h] * dout[(i64)tdst[k] * ds + c];
		dx[u * dxs + c] = d;
	}
}

// gp_edge_dot sets s[j, h] to the dot product over head h's F columns of
// a's row of j's destination and b's row of j's source.
GP_KERNEL void gp_edge_dot(GP_PARAMS) {
	GP_UNPACK;
	float *s = (float *)a.p[0];
	const float *am = (const float *)a.p[1], *bm = (const float *)a.p[2];
	const int *off = (const int *)a.p[3], *src = (const int *)a.p[4];
	i64 rows = a.n[0], H = a.n[1], F = a.n[2], ss = a.n[3], as = a.n[4], bs = a.n[5];
	GP_FOR(t, rows * H) {
		i64 i = t / H, h = t % H;
		for (int j = off[i]; j < off[i + 1]; j++) s[(i64)j * ss + h] = gp_dot(am + i * as + h * F, bm + (i64)src[j] * bs + h * F, F);
	}
}

// gp_head_dot sets out[n, h] to the dot product of x's row n over head
// h's F columns with the row vector v's head h.
GP_KERNEL void gp_head_dot(GP_PARAMS) {
	GP_UNPACK;
	float *out = (float *)a.p[0];
	const float *x = (const float *)a.p[1], *v = (const float *)a.p[2];
	i64 rows = a.n[0], H = a.n[1], F = a.n[2], os = a.n[3], xs = a.n[4];
	GP_FOR(t, rows * H) {
		i64 n = t / H, h = t % H;
		out[n * os + h] = gp_dot(x + n * xs + h * F, v + h * F, F);
	}
}

// gp_head_dot_backward_dx adds dout[n, c/F] * v[c] to dx[n, c].
GP_KERNEL void gp_head_dot_backward_dx(GP_PARAMS) {
	GP_UNPACK;
	float *dx = (float *)a.p[0];
	const float *dout = (const float *)a.p[1], *v = (const float *)a.p[2];
	i64 rows = a.n[0], cols = a.n[1], F = a.n[2], dxs = a.n[3], ds = a.n[4];
	GP_FOR(t, rows * cols) {
		i64 n = t / cols, c = t % cols;
		dx[n * dxs + c] += dout[n * ds + c / F] * v[c];
	}
}

// gp_edge_add sets s[j, h] = el[src(j), h] + er[i, h] for i's edges j.
GP_KERNEL void gp_edge_add(GP_PARAMS) {
	GP_UNPACK;
	float *s = (float *)a.p[0];
	const float *el = (const float *)a.p[1], *er = (const float *)a.p[2];
	const int *off = (const int *)a.p[3], *src = (const int *)a.p[4];
	i64 rows = a.n[0], H = a.n[1], ss = a.n[2], ls = a.n[3], rs = a.n[4];
	GP_FOR(t, rows * H) {
		i64 i = t / H, h = t % H;
		for (int j = off[i]; j < off[i + 1]; j++) s[(i64)j * ss + h] = el[(i64)src[j] * ls + h] + er[i * rs + h];
	}
}

// gp_edge_add_backward_dst adds to der[i, h] ds[j, h] for i's edges j in
// order.
GP_KERNEL void gp_edge_add_backward_dst(GP_PARAMS) {
	GP_UNPACK;
	float *der = (float *)a.p[0];
	const float *ds = (const float *)a.p[1];
	const int *off = (const int *)a.p[2];
	i64 rows = a.n[0], H = a.n[1], rs = a.n[2], dss = a.n[3];
	GP_FOR(t, rows * H) {
		i64 i = t / H, h = t % H;
		float d = der[i * rs + h];
		for (int j = off[i]; j < off[i + 1]; j++) d += ds[(i64)j * dss + h];
		der[i * rs + h] = d;
	}
}

// gp_edge_add_backward_src adds to del[u, h] ds[j, h] for u's edges j in
// edge order.
GP_KERNEL void gp_edge_add_backward_src(GP_PARAMS) {
	GP_UNPACK;
	float *del = (float *)a.p[0];
	const float *ds = (const float *)a.p[1];
	const int *tstart = (const int *)a.p[2], *tedge = (const int *)a.p[3];
	i64 rows = a.n[0], H = a.n[1], ls = a.n[2], dss = a.n[3];
	GP_FOR(t, rows * H) {
		i64 u = t / H, h = t % H;
		float d = del[u * ls + h];
		for (int k = tstart[u]; k < tstart[u + 1]; k++) d += ds[(i64)tedge[k] * dss + h];
		del[u * ls + h] = d;
	}
}

// gp_edge_softmax sets as[j, h] to the softmax of e[., h] over i's edges.
GP_KERNEL void gp_edge_softmax(GP_PARAMS) {
	GP_UNPACK;
	float *am = (float *)a.p[0];
	const float *e = (const float *)a.p[1];
	const int *off = (const int *)a.p[2];
	i64 rows = a.n[0], H = a.n[1], as = a.n[2], es = a.n[3];
	GP_FOR(t, rows * H) {
		i64 i = t / H, h = t % H;
		int lo = off[i], hi = off[i + 1];
		if (lo == hi) continue;
		float mx = gp_float(0xff800000u); // -Inf
		for (int j = lo; j < hi; j++) mx = fmaxf(mx, e[(i64)j * es + h]);
		float sum = 0;
		for (int j = lo; j < hi; j++) {
			float v = (float)exp((double)(e[(i64)j * es + h] - mx));
			am[(i64)j * as + h] = v;
			sum += v;
		}
		float inv = 1 / sum;
		for (int j = lo; j < hi; j++) am[(i64)j * as + h] *= inv;
	}
}

// gp_edge_softmax_backward sets de = a * (da - sum over i's edges of a*da).
GP_KERNEL void gp_edge_softmax_backward(GP_PARAMS) {
	GP_UNPACK;
	float *de = (float *)a.p[0];
	const float *da = (const float *)a.p[1], *am = (const float *)a.p[2];
	const int *off = (const int *)a.p[3];
	i64 rows = a.n[0], H = a.n[1], des = a.n[2], das = a.n[3], as = a.n[4];
	GP_FOR(t, rows * H) {
		i64 i = t / H, h = t % H;
		float s = 0;
		for (int j = off[i]; j < off[i + 1]; j++) s += am[(i64)j * as + h] * da[(i64)j * das + h];
		for (int j = off[i]; j < off[i + 1]; j++) de[(i64)j * des + h] = am[(i64)j * as + h] * (da[(i64)j * das + h] - s);
	}
}

// gp_head_mean sets out[n, f] to the mean of x[n, h*F + f] over H heads.
GP_KERNEL void gp_head_mean(GP_PARAMS) {
	GP_UNPACK;
	float *out = (float *)a.p[0];
	const float *x = (const float *)a.p[1];
	i64 rows = a.n[0], F = a.n[1], H = a.n[2], os = a.n[3], xs = a.n[4];
	float inv = 1 / (float)H;
	GP_FOR(t, rows * F) {
		i64 n = t / F, f = t % F;
		float o = x[n * xs + f];
		for (i64 h = 1; h < H; h++) o += x[n * xs + h * F + f];
		out[n * os + f] = o * inv;
	}
}

// gp_head_mean_backward sets dx[n, h*F + f] = dout[n, f] / H.
GP_KERNEL void gp_head_mean_backward(GP_PARAMS) {
	GP_UNPACK;
	float *dx = (float *)a.p[0];
	const float *dout = (const float *)a.p[1];
	i64 rows = a.n[0], F = a.n[1], H = a.n[2], dxs = a.n[3], ds = a.n[4];
	float inv = 1 / (float)H;
	GP_FOR(t, rows * H * F) {
		i64 n = t / (H * F), c = t % (H * F);
		dx[n * dxs + c] = dout[n * ds + c % F] * inv;
	}
}

#ifndef __CUDACC_RTC__
// GP_KERNEL_LIST names every kernel, for the host emulation's table.
#define GP_KERNEL_LIST(X)                                                                            \
	X(gp_fill) X(gp_copy) X(gp_gather_rows) X(gp_scatter_add_rows) X(gp_add_bias)               \
	X(gp_column_partials) X(gp_add_partials) X(gp_axpy) X(gp_scale) X(gp_act_dropout)            \
	X(gp_act_backward) X(gp_act_dropout_backward) X(gp_softmax_xent) X(gp_argmax) X(gp_adam)     \
	X(gp_segment_mean) X(gp_segment_mean_backward) X(gp_weighted_sum) X(gp_weighted_sum_backward) \
	X(gp_edge_dot) X(gp_head_dot) X(gp_head_dot_backward_dx) X(gp_edge_add)                       \
	X(gp_edge_add_backward_dst) X(gp_edge_add_backward_src) X(gp_edge_softmax)                    \
	X(gp_edge_softmax_backward) X(gp_head_mean) X(gp_head_mean_backward) \
	X(gp_gather_rows2)
#endif
