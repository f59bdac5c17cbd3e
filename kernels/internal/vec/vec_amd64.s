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
