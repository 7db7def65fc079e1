//go:build amd64 && !purego

#include "textflag.h"

// LayerNorm row kernels (norm.go): float32 data, float64 arithmetic, four doubles per
// register. The sums keep sixteen partial sums in Y0–Y3 (and Y4–Y7): lane l of Yk sums
// the elements i ≡ 4k+l (mod 16), the order of the Go loops. n is a multiple of 16 for
// the sums and of 4 for the element-wise kernels, and positive.

// COMBINE16 adds the partial sums in Y0–Y3 pairwise as vmath.combine16 does
// (s[j] += s[j+w], w = 8, 4, 2, 1) and leaves the total in the low lane of X0.
#define COMBINE16 \
	VADDPD Y2, Y0, Y0 \
	VADDPD Y3, Y1, Y1 \
	VADDPD Y1, Y0, Y0 \
	VEXTRACTF128 $1, Y0, X1 \
	VADDPD X1, X0, X0 \
	VPERMILPD $1, X0, X1 \
	VADDSD X1, X0, X0

// func sum64AVX2(x *float32, n int) float64
TEXT ·sum64AVX2(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
s64loop:
	VCVTPS2PD (SI), Y4
	VCVTPS2PD 16(SI), Y5
	VCVTPS2PD 32(SI), Y6
	VCVTPS2PD 48(SI), Y7
	VADDPD Y4, Y0, Y0
	VADDPD Y5, Y1, Y1
	VADDPD Y6, Y2, Y2
	VADDPD Y7, Y3, Y3
	ADDQ $64, SI
	SUBQ $16, CX
	JNZ  s64loop
	COMBINE16
	VMOVSD X0, ret+16(FP)
	VZEROUPPER
	RET

// func sqDev64AVX2(x *float32, n int, mu float64) float64
TEXT ·sqDev64AVX2(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSD mu+16(FP), Y8
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
sdvloop:
	VCVTPS2PD (SI), Y4
	VCVTPS2PD 16(SI), Y5
	VCVTPS2PD 32(SI), Y6
	VCVTPS2PD 48(SI), Y7
	VSUBPD Y8, Y4, Y4
	VSUBPD Y8, Y5, Y5
	VSUBPD Y8, Y6, Y6
	VSUBPD Y8, Y7, Y7
	VMULPD Y4, Y4, Y4
	VMULPD Y5, Y5, Y5
	VMULPD Y6, Y6, Y6
	VMULPD Y7, Y7, Y7
	VADDPD Y4, Y0, Y0
	VADDPD Y5, Y1, Y1
	VADDPD Y6, Y2, Y2
	VADDPD Y7, Y3, Y3
	ADDQ $64, SI
	SUBQ $16, CX
	JNZ  sdvloop
	COMBINE16
	VMOVSD X0, ret+24(FP)
	VZEROUPPER
	RET

// func normAffineAVX2(x, w, b, y *float32, n int, mu, rstd float64)
// y = float32(((x − mu)·rstd)·w + b); b nil: no addition.
TEXT ·normAffineAVX2(SB), NOSPLIT, $0-56
	MOVQ x+0(FP), SI
	MOVQ w+8(FP), DX
	MOVQ b+16(FP), BX
	MOVQ y+24(FP), DI
	MOVQ n+32(FP), CX
	VBROADCASTSD mu+40(FP), Y8
	VBROADCASTSD rstd+48(FP), Y9
	TESTQ BX, BX
	JZ   nanobias
naloop:
	VCVTPS2PD (SI), Y0
	VCVTPS2PD (DX), Y1
	VCVTPS2PD (BX), Y2
	VSUBPD Y8, Y0, Y0
	VMULPD Y9, Y0, Y0
	VMULPD Y1, Y0, Y0
	VADDPD Y2, Y0, Y0
	VCVTPD2PSY Y0, X0
	VMOVUPS X0, (DI)
	ADDQ $16, SI
	ADDQ $16, DX
	ADDQ $16, BX
	ADDQ $16, DI
	SUBQ $4, CX
	JNZ  naloop
	VZEROUPPER
	RET
nanobias:
	VCVTPS2PD (SI), Y0
	VCVTPS2PD (DX), Y1
	VSUBPD Y8, Y0, Y0
	VMULPD Y9, Y0, Y0
	VMULPD Y1, Y0, Y0
	VCVTPD2PSY Y0, X0
	VMOVUPS X0, (DI)
	ADDQ $16, SI
	ADDQ $16, DX
	ADDQ $16, DI
	SUBQ $4, CX
	JNZ  nanobias
	VZEROUPPER
	RET

// func normGradSumsAVX2(x, gr, w *float32, n int, mu, rstd float64) (s1, s2 float64)
// s1 = Σ dh, s2 = Σ dh·h, dh = g·w, h = (x − mu)·rstd.
TEXT ·normGradSumsAVX2(SB), NOSPLIT, $0-64
	MOVQ x+0(FP), SI
	MOVQ gr+8(FP), DX
	MOVQ w+16(FP), BX
	MOVQ n+24(FP), CX
	VBROADCASTSD mu+32(FP), Y8
	VBROADCASTSD rstd+40(FP), Y9
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	VXORPD Y4, Y4, Y4
	VXORPD Y5, Y5, Y5
	VXORPD Y6, Y6, Y6
	VXORPD Y7, Y7, Y7
ngsloop:
	VCVTPS2PD (DX), Y10
	VCVTPS2PD (BX), Y11
	VCVTPS2PD (SI), Y12
	VMULPD Y11, Y10, Y10
	VSUBPD Y8, Y12, Y12
	VADDPD Y10, Y0, Y0
	VMULPD Y9, Y12, Y12
	VMULPD Y12, Y10, Y12
	VADDPD Y12, Y4, Y4
	VCVTPS2PD 16(DX), Y13
	VCVTPS2PD 16(BX), Y14
	VCVTPS2PD 16(SI), Y15
	VMULPD Y14, Y13, Y13
	VSUBPD Y8, Y15, Y15
	VADDPD Y13, Y1, Y1
	VMULPD Y9, Y15, Y15
	VMULPD Y15, Y13, Y15
	VADDPD Y15, Y5, Y5
	VCVTPS2PD 32(DX), Y10
	VCVTPS2PD 32(BX), Y11
	VCVTPS2PD 32(SI), Y12
	VMULPD Y11, Y10, Y10
	VSUBPD Y8, Y12, Y12
	VADDPD Y10, Y2, Y2
	VMULPD Y9, Y12, Y12
	VMULPD Y12, Y10, Y12
	VADDPD Y12, Y6, Y6
	VCVTPS2PD 48(DX), Y13
	VCVTPS2PD 48(BX), Y14
	VCVTPS2PD 48(SI), Y15
	VMULPD Y14, Y13, Y13
	VSUBPD Y8, Y15, Y15
	VADDPD Y13, Y3, Y3
	VMULPD Y9, Y15, Y15
	VMULPD Y15, Y13, Y15
	VADDPD Y15, Y7, Y7
	ADDQ $64, SI
	ADDQ $64, DX
	ADDQ $64, BX
	SUBQ $16, CX
	JNZ  ngsloop
	COMBINE16
	VMOVSD X0, s1+48(FP)
	VMOVAPD Y4, Y0
	VMOVAPD Y5, Y1
	VMOVAPD Y6, Y2
	VMOVAPD Y7, Y3
	COMBINE16
	VMOVSD X0, s2+56(FP)
	VZEROUPPER
	RET

// func normGradAVX2(x, gr, w, d *float32, n int, mu, rstd, m1, m2 float64)
// dx = float32(rstd·((dh − m1) − h·m2)).
TEXT ·normGradAVX2(SB), NOSPLIT, $0-72
	MOVQ x+0(FP), SI
	MOVQ gr+8(FP), DX
	MOVQ w+16(FP), BX
	MOVQ d+24(FP), DI
	MOVQ n+32(FP), CX
	VBROADCASTSD mu+40(FP), Y8
	VBROADCASTSD rstd+48(FP), Y9
	VBROADCASTSD m1+56(FP), Y10
	VBROADCASTSD m2+64(FP), Y11
ngloop:
	VCVTPS2PD (DX), Y0
	VCVTPS2PD (BX), Y1
	VCVTPS2PD (SI), Y2
	VMULPD Y1, Y0, Y0
	VSUBPD Y8, Y2, Y2
	VMULPD Y9, Y2, Y2
	VMULPD Y11, Y2, Y2
	VSUBPD Y10, Y0, Y0
	VSUBPD Y2, Y0, Y0
	VMULPD Y9, Y0, Y0
	VCVTPD2PSY Y0, X0
	VMOVUPS X0, (DI)
	ADDQ $16, SI
	ADDQ $16, DX
	ADDQ $16, BX
	ADDQ $16, DI
	SUBQ $4, CX
	JNZ  ngloop
	VZEROUPPER
	RET

// func normParamGradAddAVX2(x, gr *float32, n int, mu, rstd float64, dw, db *float64)
// dw += (g·(x − mu))·rstd; db += g unless db is nil.
TEXT ·normParamGradAddAVX2(SB), NOSPLIT, $0-56
	MOVQ x+0(FP), SI
	MOVQ gr+8(FP), DX
	MOVQ n+16(FP), CX
	VBROADCASTSD mu+24(FP), Y8
	VBROADCASTSD rstd+32(FP), Y9
	MOVQ dw+40(FP), DI
	MOVQ db+48(FP), BX
	TESTQ BX, BX
	JZ   npnobias
nploop:
	VCVTPS2PD (DX), Y0
	VCVTPS2PD (SI), Y1
	VSUBPD Y8, Y1, Y1
	VMULPD Y1, Y0, Y1
	VMULPD Y9, Y1, Y1
	VADDPD (DI), Y1, Y1
	VMOVUPD Y1, (DI)
	VADDPD (BX), Y0, Y0
	VMOVUPD Y0, (BX)
	ADDQ $16, SI
	ADDQ $16, DX
	ADDQ $32, DI
	ADDQ $32, BX
	SUBQ $4, CX
	JNZ  nploop
	VZEROUPPER
	RET
npnobias:
	VCVTPS2PD (DX), Y0
	VCVTPS2PD (SI), Y1
	VSUBPD Y8, Y1, Y1
	VMULPD Y1, Y0, Y1
	VMULPD Y9, Y1, Y1
	VADDPD (DI), Y1, Y1
	VMOVUPD Y1, (DI)
	ADDQ $16, SI
	ADDQ $16, DX
	ADDQ $32, DI
	SUBQ $4, CX
	JNZ  npnobias
	VZEROUPPER
	RET
