//go:build amd64 && !purego

#include "textflag.h"

// One Adam element-wise update of the lanes at index BX of p (DI), g (SI), m (R8) and
// v (R9), in the order of optim's scalar code:
//
//	p = p*shrink            (mode 2)
//	d = g + wd*p            (mode 1; else d = g)
//	m = m*b1 + c1*d,       0 where |m| < 2⁻¹²⁶
//	v = v*b2 + (c2*d)*d,   0 where v < 2⁻¹²⁶
//	p = p + (negStep*m) / (sqrt(v)/bc2 + eps)
//
// ADAM_LOAD loads p into P and g into G; ADAM_SHRINK or ADAM_L2 (by the mode, in DX)
// apply the weight decay, leaving d in G; ADAM_M, ADAM_V, the flushes and ADAM_P do the
// rest and store m, v and p. K* are the broadcast coefficients in AdamCoefs order (KFAC
// is wd or shrink); T0..T5 are scratch.
#define ADAM_LOAD(P, G) \
	VMOVUPS (DI)(BX*4), P \
	VMOVUPS (SI)(BX*4), G

#define ADAM_SHRINK(P, KFAC) \
	VMULPS KFAC, P, P

#define ADAM_L2(P, G, T0, KFAC) \
	VMULPS P, KFAC, T0 \
	VADDPS T0, G, G

// ADAM_M leaves m = m*b1 + c1*d in T0 and ADAM_V v = v*b2 + (c2*d)*d in T2 (T1, T3
// scratch); FLUSH512 or FLUSH2 then set the lanes of X below the smallest normal float32
// in magnitude to +0 (NaN kept), as optim's scalar code does, so that a moment decaying
// where the gradient is zero goes to 0 instead of through the subnormals, each of whose
// operations takes a microcode assist; ADAM_P stores m and v and updates p.
#define ADAM_M(G, T0, T1, KB1, KC1) \
	VMOVUPS (R8)(BX*4), T0 \
	VMULPS  KB1, T0, T0    \
	VMULPS  G, KC1, T1     \
	VADDPS  T1, T0, T0

#define ADAM_V(G, T2, T3, KB2, KC2) \
	VMOVUPS (R9)(BX*4), T2 \
	VMULPS  KB2, T2, T2    \
	VMULPS  G, KC2, T3     \
	VMULPS  G, T3, T3      \
	VADDPS  T3, T2, T2

// FLUSH512: Z24 holds 0x7fffffff and Z25 the smallest normal float32 in every lane.
#define FLUSH512(X, T) \
	VPANDD    Z24, X, T      \
	VCMPPS    $5, Z25, T, K1 \
	VMOVAPS.Z X, K1, X

#define FLUSH2(X, T) \
	VANDPS absmask<>(SB), X, T      \
	VCMPPS $5, minnormal<>(SB), T, T \
	VANDPS T, X, X

#define ADAM_P(P, T0, T2, T4, T5, KNEG, KBC2, KEPS) \
	VMOVUPS T0, (R8)(BX*4) \
	VMOVUPS T2, (R9)(BX*4) \
	VSQRTPS T2, T4         \
	VDIVPS  KBC2, T4, T4   \
	VADDPS  KEPS, T4, T4   \
	VMULPS  T0, KNEG, T5   \
	VDIVPS  T4, T5, T5     \
	VADDPS  T5, P, P       \
	VMOVUPS P, (DI)(BX*4)

DATA absmask<>+0(SB)/4, $0x7fffffff
DATA absmask<>+4(SB)/4, $0x7fffffff
DATA absmask<>+8(SB)/4, $0x7fffffff
DATA absmask<>+12(SB)/4, $0x7fffffff
DATA absmask<>+16(SB)/4, $0x7fffffff
DATA absmask<>+20(SB)/4, $0x7fffffff
DATA absmask<>+24(SB)/4, $0x7fffffff
DATA absmask<>+28(SB)/4, $0x7fffffff
GLOBL absmask<>(SB), RODATA|NOPTR, $32

DATA minnormal<>+0(SB)/4, $0x00800000
DATA minnormal<>+4(SB)/4, $0x00800000
DATA minnormal<>+8(SB)/4, $0x00800000
DATA minnormal<>+12(SB)/4, $0x00800000
DATA minnormal<>+16(SB)/4, $0x00800000
DATA minnormal<>+20(SB)/4, $0x00800000
DATA minnormal<>+24(SB)/4, $0x00800000
DATA minnormal<>+28(SB)/4, $0x00800000
GLOBL minnormal<>(SB), RODATA|NOPTR, $32

// func adamAVX512(p, gr, m, v *float32, n int, k *AdamCoefs)
TEXT ·adamAVX512(SB), NOSPLIT, $0-48
	MOVQ p+0(FP), DI
	MOVQ gr+8(FP), SI
	MOVQ m+16(FP), R8
	MOVQ v+24(FP), R9
	MOVQ n+32(FP), CX
	MOVQ k+40(FP), AX
	VBROADCASTSS 0(AX), Z16
	VBROADCASTSS 4(AX), Z17
	VBROADCASTSS 8(AX), Z18
	VBROADCASTSS 12(AX), Z19
	VBROADCASTSS 16(AX), Z20
	VBROADCASTSS 20(AX), Z21
	VBROADCASTSS 24(AX), Z22
	VBROADCASTSS 28(AX), Z23
	MOVQ 32(AX), DX
	VPBROADCASTD absmask<>(SB), Z24
	VPBROADCASTD minnormal<>(SB), Z25
	XORQ BX, BX
	TESTQ CX, CX
	JE done512

loop512:
	ADAM_LOAD(Z0, Z1)
	CMPQ DX, $1
	JB   rest512
	JE   l2_512
	ADAM_SHRINK(Z0, Z23)
	JMP  rest512

l2_512:
	ADAM_L2(Z0, Z1, Z2, Z23)

rest512:
	ADAM_M(Z1, Z2, Z3, Z16, Z18)
	FLUSH512(Z2, Z3)
	ADAM_V(Z1, Z4, Z5, Z17, Z19)
	FLUSH512(Z4, Z5)
	ADAM_P(Z0, Z2, Z4, Z6, Z7, Z20, Z21, Z22)
	ADDQ $16, BX
	CMPQ BX, CX
	JB   loop512

done512:
	VZEROUPPER
	RET

// func adamAVX2(p, gr, m, v *float32, n int, k *AdamCoefs)
TEXT ·adamAVX2(SB), NOSPLIT, $0-48
	MOVQ p+0(FP), DI
	MOVQ gr+8(FP), SI
	MOVQ m+16(FP), R8
	MOVQ v+24(FP), R9
	MOVQ n+32(FP), CX
	MOVQ k+40(FP), AX
	VBROADCASTSS 0(AX), Y8
	VBROADCASTSS 4(AX), Y9
	VBROADCASTSS 8(AX), Y10
	VBROADCASTSS 12(AX), Y11
	VBROADCASTSS 16(AX), Y12
	VBROADCASTSS 20(AX), Y13
	VBROADCASTSS 24(AX), Y14
	VBROADCASTSS 28(AX), Y15
	MOVQ 32(AX), DX
	XORQ BX, BX
	TESTQ CX, CX
	JE done2

loop2:
	ADAM_LOAD(Y0, Y1)
	CMPQ DX, $1
	JB   rest2
	JE   l2_2
	ADAM_SHRINK(Y0, Y15)
	JMP  rest2

l2_2:
	ADAM_L2(Y0, Y1, Y2, Y15)

rest2:
	ADAM_M(Y1, Y2, Y3, Y8, Y10)
	FLUSH2(Y2, Y3)
	ADAM_V(Y1, Y4, Y5, Y9, Y11)
	FLUSH2(Y4, Y5)
	ADAM_P(Y0, Y2, Y4, Y6, Y7, Y12, Y13, Y14)
	ADDQ $8, BX
	CMPQ BX, CX
	JB   loop2

done2:
	VZEROUPPER
	RET

// func sumSqAVX512(x *float32, n int, s *[16]float64)
// s[j] = Σ x[i]² over i ≡ j (mod 16); n is a multiple of 16.
TEXT ·sumSqAVX512(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ s+16(FP), DI
	VPXORQ Z0, Z0, Z0
	VPXORQ Z1, Z1, Z1
	XORQ BX, BX
	TESTQ CX, CX
	JE sdone512

sloop512:
	VCVTPS2PD (SI)(BX*4), Z2
	VCVTPS2PD 32(SI)(BX*4), Z3
	VMULPD Z2, Z2, Z2
	VMULPD Z3, Z3, Z3
	VADDPD Z2, Z0, Z0
	VADDPD Z3, Z1, Z1
	ADDQ $16, BX
	CMPQ BX, CX
	JB   sloop512

sdone512:
	VMOVUPD Z0, 0(DI)
	VMOVUPD Z1, 64(DI)
	VZEROUPPER
	RET

// func sumSqAVX2(x *float32, n int, s *[16]float64)
TEXT ·sumSqAVX2(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ s+16(FP), DI
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	XORQ BX, BX
	TESTQ CX, CX
	JE sdone2

sloop2:
	VCVTPS2PD (SI)(BX*4), Y4
	VCVTPS2PD 16(SI)(BX*4), Y5
	VCVTPS2PD 32(SI)(BX*4), Y6
	VCVTPS2PD 48(SI)(BX*4), Y7
	VMULPD Y4, Y4, Y4
	VMULPD Y5, Y5, Y5
	VMULPD Y6, Y6, Y6
	VMULPD Y7, Y7, Y7
	VADDPD Y4, Y0, Y0
	VADDPD Y5, Y1, Y1
	VADDPD Y6, Y2, Y2
	VADDPD Y7, Y3, Y3
	ADDQ $16, BX
	CMPQ BX, CX
	JB   sloop2

sdone2:
	VMOVUPD Y0, 0(DI)
	VMOVUPD Y1, 32(DI)
	VMOVUPD Y2, 64(DI)
	VMOVUPD Y3, 96(DI)
	VZEROUPPER
	RET
