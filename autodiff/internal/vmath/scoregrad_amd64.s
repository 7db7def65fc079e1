//go:build amd64 && !purego

#include "textflag.h"

// func scoreGradAVX2(d, p *float32, n int, delta, scale float32)
// d[i] = (scale·p[i])·(d[i] − delta); n is a positive multiple of 8.
TEXT ·scoreGradAVX2(SB), NOSPLIT, $0-32
	MOVQ d+0(FP), DI
	MOVQ p+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS delta+24(FP), Y2
	VBROADCASTSS scale+28(FP), Y3
loop:
	VMULPS (SI), Y3, Y0
	VMOVUPS (DI), Y1
	VSUBPS Y2, Y1, Y1
	VMULPS Y1, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JNZ  loop
	VZEROUPPER
	RET
