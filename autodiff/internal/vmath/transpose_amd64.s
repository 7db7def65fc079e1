//go:build amd64 && !purego

#include "textflag.h"

// func transposeAVX2(dst *float32, ldd int, src *float32, lds, rows, cols int, a float32)
// dst[c·ldd + s] = a·src[s·lds + c] for s < rows, c < cols, both positive multiples of
// 8, one 8×8 tile at a time: eight scaled rows loaded, transposed by unpack, shuffle
// and 128-bit permute, stored as eight rows of dst.
TEXT ·transposeAVX2(SB), NOSPLIT, $0-52
	MOVQ dst+0(FP), DI
	MOVQ ldd+8(FP), R8
	SHLQ $2, R8 // ldd in bytes
	MOVQ src+16(FP), SI
	MOVQ lds+24(FP), R9
	SHLQ $2, R9 // lds in bytes
	MOVQ rows+32(FP), R10
	MOVQ cols+40(FP), R11
	XORQ R12, R12 // s, the first row of the tile
rowloop:
	XORQ R13, R13 // c, the first column of the tile
colloop:
	// AX = &src[s·lds + c], BX = &dst[c·ldd + s]
	MOVQ R12, AX
	IMULQ R9, AX
	LEAQ (SI)(AX*1), AX
	LEAQ (AX)(R13*4), AX
	MOVQ R13, BX
	IMULQ R8, BX
	LEAQ (DI)(BX*1), BX
	LEAQ (BX)(R12*4), BX
	VBROADCASTSS a+48(FP), Y15
	VMULPS (AX), Y15, Y0
	ADDQ R9, AX
	VMULPS (AX), Y15, Y1
	ADDQ R9, AX
	VMULPS (AX), Y15, Y2
	ADDQ R9, AX
	VMULPS (AX), Y15, Y3
	ADDQ R9, AX
	VMULPS (AX), Y15, Y4
	ADDQ R9, AX
	VMULPS (AX), Y15, Y5
	ADDQ R9, AX
	VMULPS (AX), Y15, Y6
	ADDQ R9, AX
	VMULPS (AX), Y15, Y7
	VUNPCKLPS Y1, Y0, Y8
	VUNPCKHPS Y1, Y0, Y9
	VUNPCKLPS Y3, Y2, Y10
	VUNPCKHPS Y3, Y2, Y11
	VUNPCKLPS Y5, Y4, Y12
	VUNPCKHPS Y5, Y4, Y13
	VUNPCKLPS Y7, Y6, Y14
	VUNPCKHPS Y7, Y6, Y15
	VSHUFPS $0x44, Y10, Y8, Y0
	VSHUFPS $0xEE, Y10, Y8, Y1
	VSHUFPS $0x44, Y11, Y9, Y2
	VSHUFPS $0xEE, Y11, Y9, Y3
	VSHUFPS $0x44, Y14, Y12, Y4
	VSHUFPS $0xEE, Y14, Y12, Y5
	VSHUFPS $0x44, Y15, Y13, Y6
	VSHUFPS $0xEE, Y15, Y13, Y7
	VPERM2F128 $0x20, Y4, Y0, Y8
	VPERM2F128 $0x20, Y5, Y1, Y9
	VPERM2F128 $0x20, Y6, Y2, Y10
	VPERM2F128 $0x20, Y7, Y3, Y11
	VPERM2F128 $0x31, Y4, Y0, Y12
	VPERM2F128 $0x31, Y5, Y1, Y13
	VPERM2F128 $0x31, Y6, Y2, Y14
	VPERM2F128 $0x31, Y7, Y3, Y15
	VMOVUPS Y8, (BX)
	ADDQ R8, BX
	VMOVUPS Y9, (BX)
	ADDQ R8, BX
	VMOVUPS Y10, (BX)
	ADDQ R8, BX
	VMOVUPS Y11, (BX)
	ADDQ R8, BX
	VMOVUPS Y12, (BX)
	ADDQ R8, BX
	VMOVUPS Y13, (BX)
	ADDQ R8, BX
	VMOVUPS Y14, (BX)
	ADDQ R8, BX
	VMOVUPS Y15, (BX)
	ADDQ $8, R13
	CMPQ R13, R11
	JLT  colloop
	ADDQ $8, R12
	CMPQ R12, R10
	JLT  rowloop
	VZEROUPPER
	RET
