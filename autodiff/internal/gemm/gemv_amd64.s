//go:build amd64 && !purego

#include "textflag.h"

// The one-row products (gemv.go): y = x·B, B row-major k×n read in place (gemvN*), and
// y = x·Bᵀ, B n×k (gemvT*). Each output is summed in registers over the whole depth and
// stored (set) or added to y once.

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

// func gemvT8(k, n int, x, b *float32, ldb int, y *float32, set bool)
// y[j] += Σ_p x[p]·b[j·ldb+p] (= if set), j < n; k a multiple of 8, k ≥ 8. Rows of b four
// at a time (four ymm sums, one load of x for four FMAs), then one at a time. Lane l of a
// row's sum adds the products of p ≡ l (mod 8) in order; the eight lanes are then added
// as (l0+l4, l1+l5, l2+l6, l3+l7) and those pairwise: ((0+1)+(2+3)).
TEXT ·gemvT8(SB), NOSPLIT, $0-49
	MOVQ k+0(FP), CX
	SHLQ $2, CX
	MOVQ n+8(FP), DX
	MOVQ x+16(FP), SI
	MOVQ b+24(FP), DI
	MOVQ ldb+32(FP), BX
	SHLQ $2, BX
	MOVQ y+40(FP), R8
	MOVBLZX set+48(FP), R9

t4:
	CMPQ DX, $4
	JLT  t1
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	LEAQ (DI)(BX*1), R11
	LEAQ (R11)(BX*1), R12
	LEAQ (R12)(BX*1), R13
	XORQ AX, AX

t4loop:
	VMOVUPS (SI)(AX*1), Y4
	VFMADD231PS (DI)(AX*1), Y4, Y0
	VFMADD231PS (R11)(AX*1), Y4, Y1
	VFMADD231PS (R12)(AX*1), Y4, Y2
	VFMADD231PS (R13)(AX*1), Y4, Y3
	ADDQ $32, AX
	CMPQ AX, CX
	JLT  t4loop

	VEXTRACTF128 $1, Y0, X4
	VADDPS       X4, X0, X0
	VEXTRACTF128 $1, Y1, X4
	VADDPS       X4, X1, X1
	VEXTRACTF128 $1, Y2, X4
	VADDPS       X4, X2, X2
	VEXTRACTF128 $1, Y3, X4
	VADDPS       X4, X3, X3
	VHADDPS      X1, X0, X0
	VHADDPS      X3, X2, X2
	VHADDPS      X2, X0, X0
	TESTQ        R9, R9
	JNZ          t4set
	VADDPS       (R8), X0, X0

t4set:
	VMOVUPS X0, (R8)
	LEAQ    (DI)(BX*4), DI
	ADDQ    $16, R8
	SUBQ    $4, DX
	JMP     t4

t1:
	TESTQ DX, DX
	JZ    tdone
	VXORPS Y0, Y0, Y0
	XORQ  AX, AX

t1loop:
	VMOVUPS     (SI)(AX*1), Y4
	VFMADD231PS (DI)(AX*1), Y4, Y0
	ADDQ        $32, AX
	CMPQ        AX, CX
	JLT         t1loop

	VEXTRACTF128 $1, Y0, X4
	VADDPS       X4, X0, X0
	VHADDPS      X0, X0, X0
	VHADDPS      X0, X0, X0
	TESTQ        R9, R9
	JNZ          t1set
	VADDSS       (R8), X0, X0

t1set:
	VMOVSS X0, (R8)
	ADDQ   BX, DI
	ADDQ   $4, R8
	DECQ   DX
	JMP    t1

tdone:
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

// func gemvT16z(k, n int, x, b *float32, ldb int, y *float32, set bool)
// gemvT8 in zmm: k a multiple of 16, k ≥ 16. Lane l of a row's sum adds the products of
// p ≡ l (mod 16) in order; the lanes are added as (l0+l8 … l7+l15) and then as gemvT8's.
TEXT ·gemvT16z(SB), NOSPLIT, $0-49
	MOVQ k+0(FP), CX
	SHLQ $2, CX
	MOVQ n+8(FP), DX
	MOVQ x+16(FP), SI
	MOVQ b+24(FP), DI
	MOVQ ldb+32(FP), BX
	SHLQ $2, BX
	MOVQ y+40(FP), R8
	MOVBLZX set+48(FP), R9

zt4:
	CMPQ DX, $4
	JLT  zt1
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	LEAQ (DI)(BX*1), R11
	LEAQ (R11)(BX*1), R12
	LEAQ (R12)(BX*1), R13
	XORQ AX, AX

zt4loop:
	VMOVUPS (SI)(AX*1), Z4
	VFMADD231PS (DI)(AX*1), Z4, Z0
	VFMADD231PS (R11)(AX*1), Z4, Z1
	VFMADD231PS (R12)(AX*1), Z4, Z2
	VFMADD231PS (R13)(AX*1), Z4, Z3
	ADDQ $64, AX
	CMPQ AX, CX
	JLT  zt4loop

	VEXTRACTF64X4 $1, Z0, Y4
	VADDPS        Y4, Y0, Y0
	VEXTRACTF64X4 $1, Z1, Y4
	VADDPS        Y4, Y1, Y1
	VEXTRACTF64X4 $1, Z2, Y4
	VADDPS        Y4, Y2, Y2
	VEXTRACTF64X4 $1, Z3, Y4
	VADDPS        Y4, Y3, Y3
	VEXTRACTF128  $1, Y0, X4
	VADDPS        X4, X0, X0
	VEXTRACTF128  $1, Y1, X4
	VADDPS        X4, X1, X1
	VEXTRACTF128  $1, Y2, X4
	VADDPS        X4, X2, X2
	VEXTRACTF128  $1, Y3, X4
	VADDPS        X4, X3, X3
	VHADDPS       X1, X0, X0
	VHADDPS       X3, X2, X2
	VHADDPS       X2, X0, X0
	TESTQ         R9, R9
	JNZ           zt4set
	VADDPS        (R8), X0, X0

zt4set:
	VMOVUPS X0, (R8)
	LEAQ    (DI)(BX*4), DI
	ADDQ    $16, R8
	SUBQ    $4, DX
	JMP     zt4

zt1:
	TESTQ DX, DX
	JZ    ztdone
	VPXORD Z0, Z0, Z0
	XORQ  AX, AX

zt1loop:
	VMOVUPS     (SI)(AX*1), Z4
	VFMADD231PS (DI)(AX*1), Z4, Z0
	ADDQ        $64, AX
	CMPQ        AX, CX
	JLT         zt1loop

	VEXTRACTF64X4 $1, Z0, Y4
	VADDPS        Y4, Y0, Y0
	VEXTRACTF128  $1, Y0, X4
	VADDPS        X4, X0, X0
	VHADDPS       X0, X0, X0
	VHADDPS       X0, X0, X0
	TESTQ         R9, R9
	JNZ           zt1set
	VADDSS        (R8), X0, X0

zt1set:
	VMOVSS X0, (R8)
	ADDQ   BX, DI
	ADDQ   $4, R8
	DECQ   DX
	JMP    zt1

ztdone:
	VZEROUPPER
	RET
