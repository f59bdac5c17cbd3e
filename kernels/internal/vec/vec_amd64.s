#include "textflag.h"

// The vector loops (AVX2, 8 float32 a step). Each
// element is computed with the same operations in the same order as the
// scalar Go loops in vec.go (no FMA), so results are bitwise the same
// with and without AVX2.

// func add4AVX2(dst, a, b, c, d *float32, n int)
// dst[j] += (a[j]+b[j]) + (c[j]+d[j])
TEXT ·add4AVX2(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ a+8(FP), AX
	MOVQ b+16(FP), BX
	MOVQ c+24(FP), CX
	MOVQ d+32(FP), DX
	MOVQ n+40(FP), SI
	XORQ R8, R8
	MOVQ SI, R9
	SHRQ $3, R9
	JZ   add4tail
add4loop:
	VMOVUPS (AX)(R8*1), Y0
	VADDPS  (BX)(R8*1), Y0, Y0
	VMOVUPS (CX)(R8*1), Y1
	VADDPS  (DX)(R8*1), Y1, Y1
	VADDPS  Y1, Y0, Y0
	VADDPS  (DI)(R8*1), Y0, Y0
	VMOVUPS Y0, (DI)(R8*1)
	ADDQ    $32, R8
	DECQ    R9
	JNZ     add4loop
add4tail:
	ANDQ $7, SI
	JZ   add4done
add4one:
	VMOVSS (AX)(R8*1), X0
	VADDSS (BX)(R8*1), X0, X0
	VMOVSS (CX)(R8*1), X1
	VADDSS (DX)(R8*1), X1, X1
	VADDSS X1, X0, X0
	VADDSS (DI)(R8*1), X0, X0
	VMOVSS X0, (DI)(R8*1)
	ADDQ   $4, R8
	DECQ   SI
	JNZ    add4one
add4done:
	VZEROUPPER
	RET

// func addAVX2(dst, src *float32, n int)
// dst[j] += src[j]
TEXT ·addAVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), AX
	MOVQ n+16(FP), SI
	XORQ R8, R8
	MOVQ SI, R9
	SHRQ $3, R9
	JZ   addtail
addloop:
	VMOVUPS (AX)(R8*1), Y0
	VADDPS  (DI)(R8*1), Y0, Y0
	VMOVUPS Y0, (DI)(R8*1)
	ADDQ    $32, R8
	DECQ    R9
	JNZ     addloop
addtail:
	ANDQ $7, SI
	JZ   adddone
addone:
	VMOVSS (AX)(R8*1), X0
	VADDSS (DI)(R8*1), X0, X0
	VMOVSS X0, (DI)(R8*1)
	ADDQ   $4, R8
	DECQ   SI
	JNZ    addone
adddone:
	VZEROUPPER
	RET

// func axpyAVX2(dst, src *float32, alpha float32, n int)
// dst[j] += alpha*src[j], a multiply then an add (no FMA).
TEXT ·axpyAVX2(SB), NOSPLIT, $0-32
	MOVQ         dst+0(FP), DI
	MOVQ         src+8(FP), AX
	VBROADCASTSS alpha+16(FP), Y2
	MOVQ         n+24(FP), SI
	XORQ         R8, R8
	MOVQ         SI, R9
	SHRQ         $3, R9
	JZ           axpytail
axpyloop:
	VMULPS  (AX)(R8*1), Y2, Y0
	VADDPS  (DI)(R8*1), Y0, Y0
	VMOVUPS Y0, (DI)(R8*1)
	ADDQ    $32, R8
	DECQ    R9
	JNZ     axpyloop
axpytail:
	ANDQ $7, SI
	JZ   axpydone
axpyone:
	VMULSS (AX)(R8*1), X2, X0
	VADDSS (DI)(R8*1), X0, X0
	VMOVSS X0, (DI)(R8*1)
	ADDQ   $4, R8
	DECQ   SI
	JNZ    axpyone
axpydone:
	VZEROUPPER
	RET

// func prefetch(p *float32, bytes int)
// Asks for the cache lines of [p, p+bytes) ahead of their use.
TEXT ·prefetch(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), AX
	MOVQ bytes+8(FP), CX
prefetchloop:
	PREFETCHT0 (AX)
	ADDQ       $64, AX
	SUBQ       $64, CX
	JGT        prefetchloop
	RET

DATA iota<>+0(SB)/4, $0
DATA iota<>+4(SB)/4, $1
DATA iota<>+8(SB)/4, $2
DATA iota<>+12(SB)/4, $3
DATA iota<>+16(SB)/4, $4
DATA iota<>+20(SB)/4, $5
DATA iota<>+24(SB)/4, $6
DATA iota<>+28(SB)/4, $7
GLOBL iota<>(SB), RODATA|NOPTR, $32

// MIX32 is MurmurHash3's fmix32 on the 8 lanes of R, with T a temporary
// and C1, C2 the multipliers broadcast.
#define MIX32(R, T, C1, C2) \
	VPSRLD  $16, R, T \
	VPXOR   T, R, R   \
	VPMULLD C1, R, R  \
	VPSRLD  $13, R, T \
	VPXOR   T, R, R   \
	VPMULLD C2, R, R  \
	VPSRLD  $16, R, T \
	VPXOR   T, R, R

// func dropAVX2(y, x *float32, n, base int, m *DropMask, relu int)
// For n a multiple of 8: y[j] = (relu ? max(0, x[j]) : x[j]) * Scale,
// masked by the keep decision of element base+j (DropMask.keepBits).
TEXT ·dropAVX2(SB), NOSPLIT, $0-48
	MOVQ y+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	MOVQ base+24(FP), AX
	MOVQ m+32(FP), BX
	MOVQ relu+40(FP), R10
	VPBROADCASTD 0(BX), Y8        // S0
	VPBROADCASTD 4(BX), Y9        // S1
	MOVL         8(BX), DX
	SUBL         $1, DX
	VMOVD        DX, X10
	VPBROADCASTD X10, Y10         // Threshold-1
	VBROADCASTSS 12(BX), Y11      // Scale
	MOVL         $0x85ebca6b, DX
	VMOVD        DX, X12
	VPBROADCASTD X12, Y12
	MOVL         $0xc2b2ae35, DX
	VMOVD        DX, X13
	VPBROADCASTD X13, Y13
	VMOVD        AX, X14
	VPBROADCASTD X14, Y14
	VPADDD       iota<>(SB), Y14, Y14 // element indices base..base+7
	MOVL         $8, DX
	VMOVD        DX, X15
	VPBROADCASTD X15, Y15
	VXORPS       Y7, Y7, Y7
	SHRQ         $3, CX
	JZ           dropdone
droploop:
	VPXOR    Y8, Y14, Y0
	MIX32(Y0, Y1, Y12, Y13)
	VPXOR    Y9, Y0, Y0
	MIX32(Y0, Y1, Y12, Y13)
	VPSRLD   $16, Y0, Y0
	VPCMPGTD Y10, Y0, Y0          // keep: top 16 bits > Threshold-1
	VMOVUPS  (SI), Y1
	TESTQ    R10, R10
	JZ       dropnorelu
	VMAXPS   Y1, Y7, Y1           // MAXPS(0, x): NaN and -0 pass
dropnorelu:
	VMULPS   Y11, Y1, Y1
	VANDPS   Y0, Y1, Y1
	VMOVUPS  Y1, (DI)
	VPADDD   Y15, Y14, Y14
	ADDQ     $32, SI
	ADDQ     $32, DI
	DECQ     CX
	JNZ      droploop
dropdone:
	VZEROUPPER
	RET

// func reluBackAVX2(dx, dy, y *float32, scale float32, n int)
// For n a multiple of 8: dx[j] = dy[j]*scale where y[j] > 0, else +0.
TEXT ·reluBackAVX2(SB), NOSPLIT, $0-40
	MOVQ         dx+0(FP), DI
	MOVQ         dy+8(FP), SI
	MOVQ         y+16(FP), BX
	VBROADCASTSS scale+24(FP), Y11
	MOVQ         n+32(FP), CX
	VXORPS       Y7, Y7, Y7
	SHRQ         $3, CX
	JZ           rbdone
rbloop:
	VMOVUPS (BX), Y0
	VCMPPS  $0x1e, Y7, Y0, Y1     // y > 0 (ordered: NaN is not)
	VMOVUPS (SI), Y2
	VMULPS  Y11, Y2, Y2
	VANDPS  Y1, Y2, Y2
	VMOVUPS Y2, (DI)
	ADDQ    $32, BX
	ADDQ    $32, SI
	ADDQ    $32, DI
	DECQ    CX
	JNZ     rbloop
rbdone:
	VZEROUPPER
	RET

// func reluAVX2(y, x *float32, n int)
// For n a multiple of 8: y[j] = MAXPS(0, x[j]) (negatives to +0; NaN and
// -0 pass).
TEXT ·reluAVX2(SB), NOSPLIT, $0-24
	MOVQ   y+0(FP), DI
	MOVQ   x+8(FP), SI
	MOVQ   n+16(FP), CX
	VXORPS Y7, Y7, Y7
	SHRQ   $3, CX
	JZ     reludone
reluloop:
	VMOVUPS (SI), Y1
	VMAXPS  Y1, Y7, Y1
	VMOVUPS Y1, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	DECQ    CX
	JNZ     reluloop
reludone:
	VZEROUPPER
	RET
