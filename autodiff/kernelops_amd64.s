//go:build amd64 && !purego

#include "textflag.h"

// func sqDistsAVX512(q *float32, d int, kt *float32, ldk int, out *float32, mask uint16, root bool)
TEXT ·sqDistsAVX512(SB), NOSPLIT, $0-43
	MOVQ    q+0(FP), SI
	MOVQ    d+8(FP), CX
	MOVQ    kt+16(FP), BX
	MOVQ    ldk+24(FP), R8
	SHLQ    $2, R8
	MOVQ    out+32(FP), DI
	MOVWQZX mask+40(FP), AX
	KMOVW   AX, K1
	VXORPS  Z0, Z0, Z0
	VXORPS  Z1, Z1, Z1

pairs:
	CMPQ         CX, $2
	JLT          tail
	VBROADCASTSS (SI), Z2
	VMOVUPS.Z    (BX), K1, Z3
	VSUBPS       Z3, Z2, Z3
	VFMADD231PS  Z3, Z3, Z0
	ADDQ         R8, BX
	VBROADCASTSS 4(SI), Z4
	VMOVUPS.Z    (BX), K1, Z5
	VSUBPS       Z5, Z4, Z5
	VFMADD231PS  Z5, Z5, Z1
	ADDQ         R8, BX
	ADDQ         $8, SI
	SUBQ         $2, CX
	JMP          pairs

tail:
	TESTQ        CX, CX
	JZ           sum
	VBROADCASTSS (SI), Z2
	VMOVUPS.Z    (BX), K1, Z3
	VSUBPS       Z3, Z2, Z3
	VFMADD231PS  Z3, Z3, Z0

sum:
	VADDPS  Z1, Z0, Z0
	MOVBLZX root+42(FP), AX
	TESTL   AX, AX
	JZ      store
	VSQRTPS Z0, Z0

store:
	VMOVUPS    Z0, K1, (DI)
	VZEROUPPER
	RET

// func diffSumsAVX512(c *float32, stride, count int, x, ys *float32, ld int, out *float32, mask uint16)
TEXT ·diffSumsAVX512(SB), NOSPLIT, $0-58
	MOVQ    c+0(FP), SI
	MOVQ    stride+8(FP), R8
	SHLQ    $2, R8
	MOVQ    count+16(FP), CX
	MOVQ    x+24(FP), DI
	MOVQ    ys+32(FP), BX
	MOVQ    ld+40(FP), R10
	SHLQ    $2, R10
	MOVQ    out+48(FP), R9
	MOVWQZX mask+56(FP), AX
	KMOVW   AX, K1
	VMOVUPS.Z (DI), K1, Z0
	VXORPS  Z1, Z1, Z1
	VXORPS  Z6, Z6, Z6

pairs:
	CMPQ CX, $2
	JLT  last
	MOVL (SI), AX
	TESTL $0x7fffffff, AX
	JZ   second
	VBROADCASTSS (SI), Z2
	VMOVUPS.Z    (BX), K1, Z3
	VSUBPS       Z3, Z0, Z3
	VFMADD231PS  Z3, Z2, Z1

second:
	ADDQ  R8, SI
	ADDQ  R10, BX
	MOVL  (SI), AX
	TESTL $0x7fffffff, AX
	JZ    next
	VBROADCASTSS (SI), Z4
	VMOVUPS.Z    (BX), K1, Z5
	VSUBPS       Z5, Z0, Z5
	VFMADD231PS  Z5, Z4, Z6

next:
	ADDQ R8, SI
	ADDQ R10, BX
	SUBQ $2, CX
	JMP  pairs

last:
	TESTQ CX, CX
	JZ    store
	MOVL  (SI), AX
	TESTL $0x7fffffff, AX
	JZ    store
	VBROADCASTSS (SI), Z2
	VMOVUPS.Z    (BX), K1, Z3
	VSUBPS       Z3, Z0, Z3
	VFMADD231PS  Z3, Z2, Z1

store:
	VADDPS     Z6, Z1, Z1
	VMOVUPS    Z1, K1, (R9)
	VZEROUPPER
	RET
