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
