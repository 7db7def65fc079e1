//go:build amd64 && !purego

#include "textflag.h"

// The one-row product of gemv.go, y = x·B with B row-major k×n read in place (x·Bᵀ reads
// panels of Bᵀ packed by gemvTVec). Each output is summed in a register over the depth
// (a panel of kc) and stored (set) or added to y once.

// func gemvN8(k, n int, x, b *float32, ldb int, y *float32, set bool)
// y[j] += Σ_p x[p]·b[p·ldb+j] (= if set), j < n; n a multiple of 8, k ≥ 1. Columns in
// blocks of 32 (four ymm sums), then of 8; each element is summed over p in order.
TEXT ·gemvN8(SB), NOSPLIT, $0-49
	MOVQ k+0(FP), CX
	MOVQ n+8(FP), DX
	MOVQ x+16(FP), SI
	MOVQ b+24(FP), DI
	MOVQ ldb+32(FP), BX
	SHLQ $2, BX
	MOVQ y+40(FP), R8
	MOVBLZX set+48(FP), R9

n32:
	CMPQ DX, $32
	JLT  n8
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVQ SI, R10
	MOVQ DI, R11
	MOVQ CX, R12

n32loop:
	VBROADCASTSS (R10), Y4
	VFMADD231PS (R11), Y4, Y0
	VFMADD231PS 32(R11), Y4, Y1
	VFMADD231PS 64(R11), Y4, Y2
	VFMADD231PS 96(R11), Y4, Y3
	ADDQ $4, R10
	ADDQ BX, R11
	DECQ R12
	JNZ  n32loop

	TESTQ R9, R9
	JNZ   n32set
	VADDPS (R8), Y0, Y0
	VADDPS 32(R8), Y1, Y1
	VADDPS 64(R8), Y2, Y2
	VADDPS 96(R8), Y3, Y3

n32set:
	VMOVUPS Y0, (R8)
	VMOVUPS Y1, 32(R8)
	VMOVUPS Y2, 64(R8)
	VMOVUPS Y3, 96(R8)
	ADDQ $128, DI
	ADDQ $128, R8
	SUBQ $32, DX
	JMP  n32

n8:
	CMPQ DX, $8
	JLT  ndone
	VXORPS Y0, Y0, Y0
	MOVQ SI, R10
	MOVQ DI, R11
	MOVQ CX, R12

n8loop:
	VBROADCASTSS (R10), Y4
	VFMADD231PS (R11), Y4, Y0
	ADDQ $4, R10
	ADDQ BX, R11
	DECQ R12
	JNZ  n8loop

	TESTQ R9, R9
	JNZ   n8set
	VADDPS (R8), Y0, Y0

n8set:
	VMOVUPS Y0, (R8)
	ADDQ $32, DI
	ADDQ $32, R8
	SUBQ $8, DX
	JMP  n8

ndone:
	VZEROUPPER
	RET

// func gemvN16z(k, n int, x, b *float32, ldb int, y *float32, set bool)
// gemvN8 in zmm: n a multiple of 16, columns in blocks of 64, then of 16.
TEXT ·gemvN16z(SB), NOSPLIT, $0-49
	MOVQ k+0(FP), CX
	MOVQ n+8(FP), DX
	MOVQ x+16(FP), SI
	MOVQ b+24(FP), DI
	MOVQ ldb+32(FP), BX
	SHLQ $2, BX
	MOVQ y+40(FP), R8
	MOVBLZX set+48(FP), R9

z64:
	CMPQ DX, $64
	JLT  z16
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	MOVQ SI, R10
	MOVQ DI, R11
	MOVQ CX, R12

z64loop:
	VBROADCASTSS (R10), Z4
	VFMADD231PS (R11), Z4, Z0
	VFMADD231PS 64(R11), Z4, Z1
	VFMADD231PS 128(R11), Z4, Z2
	VFMADD231PS 192(R11), Z4, Z3
	ADDQ $4, R10
	ADDQ BX, R11
	DECQ R12
	JNZ  z64loop

	TESTQ R9, R9
	JNZ   z64set
	VADDPS (R8), Z0, Z0
	VADDPS 64(R8), Z1, Z1
	VADDPS 128(R8), Z2, Z2
	VADDPS 192(R8), Z3, Z3

z64set:
	VMOVUPS Z0, (R8)
	VMOVUPS Z1, 64(R8)
	VMOVUPS Z2, 128(R8)
	VMOVUPS Z3, 192(R8)
	ADDQ $256, DI
	ADDQ $256, R8
	SUBQ $64, DX
	JMP  z64

z16:
	CMPQ DX, $16
	JLT  zdone
	VPXORD Z0, Z0, Z0
	MOVQ SI, R10
	MOVQ DI, R11
	MOVQ CX, R12

z16loop:
	VBROADCASTSS (R10), Z4
	VFMADD231PS (R11), Z4, Z0
	ADDQ $4, R10
	ADDQ BX, R11
	DECQ R12
	JNZ  z16loop

	TESTQ R9, R9
	JNZ   z16set
	VADDPS (R8), Z0, Z0

z16set:
	VMOVUPS Z0, (R8)
	ADDQ $64, DI
	ADDQ $64, R8
	SUBQ $16, DX
	JMP  z16

zdone:
	VZEROUPPER
	RET
