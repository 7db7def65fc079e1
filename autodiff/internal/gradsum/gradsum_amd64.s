//go:build amd64 && !purego

#include "textflag.h"

// func addScaled2AVX2(dst, a, b *float32, n int, ca, cb float32)
// dst[i] += ca·a[i] + cb·b[i]: two products, their sum, then dst (no FMA, the bits of
// the Go loop); n is a positive multiple of 8.
TEXT ·addScaled2AVX2(SB), NOSPLIT, $0-40
	MOVQ         dst+0(FP), DI
	MOVQ         a+8(FP), SI
	MOVQ         b+16(FP), DX
	MOVQ         n+24(FP), CX
	VBROADCASTSS ca+32(FP), Y14
	VBROADCASTSS cb+36(FP), Y15
	CMPQ         CX, $32
	JLT          one

four:
	VMULPS  (SI), Y14, Y0
	VMULPS  32(SI), Y14, Y1
	VMULPS  64(SI), Y14, Y2
	VMULPS  96(SI), Y14, Y3
	VMULPS  (DX), Y15, Y4
	VMULPS  32(DX), Y15, Y5
	VMULPS  64(DX), Y15, Y6
	VMULPS  96(DX), Y15, Y7
	VADDPS  Y4, Y0, Y0
	VADDPS  Y5, Y1, Y1
	VADDPS  Y6, Y2, Y2
	VADDPS  Y7, Y3, Y3
	VADDPS  (DI), Y0, Y0
	VADDPS  32(DI), Y1, Y1
	VADDPS  64(DI), Y2, Y2
	VADDPS  96(DI), Y3, Y3
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ    $128, SI
	ADDQ    $128, DX
	ADDQ    $128, DI
	SUBQ    $32, CX
	CMPQ    CX, $32
	JGE     four
	TESTQ   CX, CX
	JZ      done

one:
	VMULPS  (SI), Y14, Y0
	VMULPS  (DX), Y15, Y4
	VADDPS  Y4, Y0, Y0
	VADDPS  (DI), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, DI
	SUBQ    $8, CX
	JNZ     one

done:
	VZEROUPPER
	RET
