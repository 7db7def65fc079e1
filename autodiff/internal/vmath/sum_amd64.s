//go:build amd64 && !purego

#include "textflag.h"

// func addToAVX2(a, b, y *float32, n int)
// y = a + b for n a positive multiple of 8: 32 elements a round, then 8.
TEXT ·addToAVX2(SB), NOSPLIT, $0-32
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DX
	MOVQ y+16(FP), DI
	MOVQ n+24(FP), CX
	CMPQ CX, $32
	JLT  atone
atloop4:
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VADDPS (DX), Y0, Y0
	VADDPS 32(DX), Y1, Y1
	VADDPS 64(DX), Y2, Y2
	VADDPS 96(DX), Y3, Y3
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ $128, SI
	ADDQ $128, DX
	ADDQ $128, DI
	SUBQ $32, CX
	CMPQ CX, $32
	JGE  atloop4
	TESTQ CX, CX
	JZ   atdone
atone:
	VMOVUPS (SI), Y0
	VADDPS (DX), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, DI
	SUBQ $8, CX
	JNZ  atone
atdone:
	VZEROUPPER
	RET

// func sigmoidGradAVX2(y, gr, d *float32, n int)
// d = (g·y)·(1 − y) for n a positive multiple of 8.
TEXT ·sigmoidGradAVX2(SB), NOSPLIT, $0-32
	MOVQ y+0(FP), SI
	MOVQ gr+8(FP), DX
	MOVQ d+16(FP), DI
	MOVQ n+24(FP), CX
	MOVL $0x3f800000, AX
	VMOVD AX, X7
	VBROADCASTSS X7, Y7
sgloop:
	VMOVUPS (SI), Y0
	VMOVUPS (DX), Y1
	VSUBPS Y0, Y7, Y2
	VMULPS Y0, Y1, Y1
	VMULPS Y2, Y1, Y1
	VMOVUPS Y1, (DI)
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, DI
	SUBQ $8, CX
	JNZ  sgloop
	VZEROUPPER
	RET

// func distGradAVX2(gr, r *float32, n int)
// g = g / (2r), 0 where g or r is 0 (a NaN compares unequal and stays), for n a positive
// multiple of 8.
TEXT ·distGradAVX2(SB), NOSPLIT, $0-24
	MOVQ   gr+0(FP), DI
	MOVQ   r+8(FP), SI
	MOVQ   n+16(FP), CX
	VXORPS Y5, Y5, Y5

dgloop:
	VMOVUPS (DI), Y0
	VMOVUPS (SI), Y1
	VCMPPS  $4, Y5, Y0, Y2 // g ≠ 0, unordered
	VCMPPS  $4, Y5, Y1, Y3 // r ≠ 0, unordered
	VANDPS  Y3, Y2, Y2
	VADDPS  Y1, Y1, Y1
	VDIVPS  Y1, Y0, Y0
	VANDPS  Y2, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, DI
	ADDQ    $32, SI
	SUBQ    $8, CX
	JNZ     dgloop
	VZEROUPPER
	RET

// func addScaledRowsAVX2(y, x, a *float32, rows, ld, n int)
// y_r = y_r + a[r]·x_r (two roundings) for each of the rows > 0, y_r and x_r the n
// elements from r·ld (n a positive multiple of 8).
TEXT ·addScaledRowsAVX2(SB), NOSPLIT, $0-48
	MOVQ y+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ a+16(FP), DX
	MOVQ rows+24(FP), R8
	MOVQ ld+32(FP), R9
	SHLQ $2, R9
	MOVQ n+40(FP), R10
asrrow:
	VBROADCASTSS (DX), Y4
	MOVQ         DI, R11
	MOVQ         SI, R12
	MOVQ         R10, CX
asrloop:
	VMULPS  (R12), Y4, Y0
	VADDPS  (R11), Y0, Y0
	VMOVUPS Y0, (R11)
	ADDQ    $32, R11
	ADDQ    $32, R12
	SUBQ    $8, CX
	JNZ     asrloop
	ADDQ    R9, DI
	ADDQ    R9, SI
	ADDQ    $4, DX
	DECQ    R8
	JNZ     asrrow
	VZEROUPPER
	RET
