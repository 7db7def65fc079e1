//go:build amd64 && !purego

#include "textflag.h"

// func transpose8(blocks int, b *float32, ldb int, dst *float32, nr int, alpha float32)
// For eight rows of b (row stride ldb floats) and blocks·8 columns p, writes
// dst[p·nr + i] = alpha·b[i·ldb + p], i = 0..7: eight rows of a transposed B into a packed
// panel of nr columns, one 8×8 block (AVX) at a time.
TEXT ·transpose8(SB), NOSPLIT, $0-44
	MOVQ blocks+0(FP), CX
	MOVQ b+8(FP), SI
	MOVQ ldb+16(FP), R8
	SHLQ $2, R8                // ldb in bytes
	MOVQ dst+24(FP), DI
	MOVQ nr+32(FP), R9
	SHLQ $2, R9                // a panel row in bytes
	VBROADCASTSS alpha+40(FP), Y15
	LEAQ (R8)(R8*2), R10       // 3·ldb
	LEAQ (R8)(R8*4), R11       // 5·ldb
	LEAQ (R10)(R8*4), R12      // 7·ldb
	LEAQ (R9)(R9*2), R13       // 3·nr
	LEAQ (R9)(R9*4), R14       // 5·nr
	LEAQ (R13)(R9*4), DX       // 7·nr
	TESTQ CX, CX
	JZ   done

loop:
	VMULPS (SI), Y15, Y0
	VMULPS (SI)(R8*1), Y15, Y1
	VMULPS (SI)(R8*2), Y15, Y2
	VMULPS (SI)(R10*1), Y15, Y3
	VMULPS (SI)(R8*4), Y15, Y4
	VMULPS (SI)(R11*1), Y15, Y5
	VMULPS (SI)(R10*2), Y15, Y6
	VMULPS (SI)(R12*1), Y15, Y7

	VUNPCKLPS Y1, Y0, Y8       // r0[0] r1[0] r0[1] r1[1] | [4] [5]
	VUNPCKHPS Y1, Y0, Y9       // r0[2] r1[2] r0[3] r1[3] | [6] [7]
	VUNPCKLPS Y3, Y2, Y0
	VUNPCKHPS Y3, Y2, Y1
	VUNPCKLPS Y5, Y4, Y2
	VUNPCKHPS Y5, Y4, Y3
	VUNPCKLPS Y7, Y6, Y4
	VUNPCKHPS Y7, Y6, Y5

	VSHUFPS $0x44, Y0, Y8, Y6  // r0..r3 [0] | [4]
	VSHUFPS $0xEE, Y0, Y8, Y7  // r0..r3 [1] | [5]
	VSHUFPS $0x44, Y1, Y9, Y10 // r0..r3 [2] | [6]
	VSHUFPS $0xEE, Y1, Y9, Y11 // r0..r3 [3] | [7]
	VSHUFPS $0x44, Y4, Y2, Y12 // r4..r7 [0] | [4]
	VSHUFPS $0xEE, Y4, Y2, Y13 // r4..r7 [1] | [5]
	VSHUFPS $0x44, Y5, Y3, Y14 // r4..r7 [2] | [6]
	VSHUFPS $0xEE, Y5, Y3, Y0  // r4..r7 [3] | [7]

	VPERM2F128 $0x20, Y12, Y6, Y1
	VMOVUPS Y1, (DI)
	VPERM2F128 $0x20, Y13, Y7, Y2
	VMOVUPS Y2, (DI)(R9*1)
	VPERM2F128 $0x20, Y14, Y10, Y3
	VMOVUPS Y3, (DI)(R9*2)
	VPERM2F128 $0x20, Y0, Y11, Y4
	VMOVUPS Y4, (DI)(R13*1)
	VPERM2F128 $0x31, Y12, Y6, Y1
	VMOVUPS Y1, (DI)(R9*4)
	VPERM2F128 $0x31, Y13, Y7, Y2
	VMOVUPS Y2, (DI)(R14*1)
	VPERM2F128 $0x31, Y14, Y10, Y3
	VMOVUPS Y3, (DI)(R13*2)
	VPERM2F128 $0x31, Y0, Y11, Y4
	VMOVUPS Y4, (DI)(DX*1)

	ADDQ $32, SI
	LEAQ (DI)(R9*8), DI
	DECQ CX
	JNZ  loop

done:
	VZEROUPPER
	RET

// func cpuid(eax, ecx uint32) (a, b, c, d uint32)
TEXT ·cpuid(SB), NOSPLIT, $0-24
	MOVL eax+0(FP), AX
	MOVL ecx+4(FP), CX
	CPUID
	MOVL AX, a+8(FP)
	MOVL BX, b+12(FP)
	MOVL CX, c+16(FP)
	MOVL DX, d+20(FP)
	RET

// func copyRows16(rows int, b *float32, ldb int, dst *float32, chunks int)
// For p < rows, copies the chunks·16 values b[p·ldb ...] to dst[p·chunks·16 ...]: rows of a
// plain B into a packed panel (chunks 1 or 2).
TEXT ·copyRows16(SB), NOSPLIT, $0-40
	MOVQ rows+0(FP), CX
	MOVQ b+8(FP), SI
	MOVQ ldb+16(FP), R8
	SHLQ $2, R8                // ldb in bytes
	MOVQ dst+24(FP), DI
	MOVQ chunks+32(FP), R9
	TESTQ CX, CX
	JZ   copydone
	CMPQ R9, $2
	JEQ  copy32

copy16:
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	ADDQ R8, SI
	ADDQ $64, DI
	DECQ CX
	JNZ  copy16
	JMP  copydone

copy32:
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ R8, SI
	ADDQ $128, DI
	DECQ CX
	JNZ  copy32

copydone:
	VZEROUPPER
	RET

// func packATRows(kb int, a *float32, lda int, dst *float32, panels, mr, ahead int)
// For p < kb and r < panels, copies the mr (12 or 6) values a[p·lda + r·mr ...] to
// dst[r·kb·mr + p·mr ...]: kb rows of a stored A into the panels of a packed Aᵀ
// (packAT). Before copying row p it prefetches row p+ahead: with lda of 1024 floats or
// more each row's lines lie on a page of their own, where the hardware prefetchers stop
// (the Go loop this replaced, which prefetched nothing, ran at about a third of its speed
// on a weight gradient's dY).
TEXT ·packATRows(SB), NOSPLIT, $0-56
	MOVQ kb+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ lda+16(FP), R8
	SHLQ $2, R8                // lda in bytes
	MOVQ dst+24(FP), DI
	MOVQ panels+32(FP), R9
	MOVQ mr+40(FP), R12
	MOVQ ahead+48(FP), R10
	IMULQ R8, R10              // bytes to the prefetched row
	MOVQ CX, R11
	IMULQ R12, R11
	SHLQ $2, R11               // a panel in bytes: kb·mr·4
	TESTQ CX, CX
	JZ   patdone
	TESTQ R9, R9
	JZ   patdone
	CMPQ R12, $6
	JEQ  pat6row

pat12row:
	LEAQ (SI)(R10*1), AX
	MOVQ R9, DX
pat12pf:
	PREFETCHT0 (AX)
	ADDQ $48, AX
	DECQ DX
	JNZ  pat12pf
	PREFETCHT0 -1(AX)
	MOVQ SI, AX
	MOVQ DI, BX
	MOVQ R9, DX
pat12copy:
	VMOVUPS (AX), Y0
	VMOVUPS 32(AX), X1
	VMOVUPS Y0, (BX)
	VMOVUPS X1, 32(BX)
	ADDQ $48, AX
	ADDQ R11, BX
	DECQ DX
	JNZ  pat12copy
	ADDQ R8, SI
	ADDQ $48, DI
	DECQ CX
	JNZ  pat12row
	JMP  patdone

pat6row:
	LEAQ (SI)(R10*1), AX
	MOVQ R9, DX
pat6pf:
	PREFETCHT0 (AX)
	ADDQ $48, AX
	SUBQ $2, DX
	JG   pat6pf
	PREFETCHT0 -1(AX)
	MOVQ SI, AX
	MOVQ DI, BX
	MOVQ R9, DX
pat6copy:
	VMOVUPS (AX), X0
	MOVQ 16(AX), R13
	VMOVUPS X0, (BX)
	MOVQ R13, 16(BX)
	ADDQ $24, AX
	ADDQ R11, BX
	DECQ DX
	JNZ  pat6copy
	ADDQ R8, SI
	ADDQ $24, DI
	DECQ CX
	JNZ  pat6row

patdone:
	VZEROUPPER
	RET
