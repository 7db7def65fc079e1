//go:build amd64 && !purego

#include "textflag.h"

DATA cone<>+0(SB)/4, $0x3f800000 // 1
DATA cnine<>+0(SB)/4, $0x41100000 // 9
DATA csign<>+0(SB)/4, $0x80000000
GLOBL cone<>(SB), RODATA|NOPTR, $4
GLOBL cnine<>(SB), RODATA|NOPTR, $4
GLOBL csign<>(SB), RODATA|NOPTR, $4

// func tricubeValuesAVX2(k, r *float32, n int, c float32)
// k = ((1 − (u·u)·u)²)·(1 − u³) with u = r·c, 0 where u ≥ 1 (ordered); n a positive
// multiple of 8.
TEXT ·tricubeValuesAVX2(SB), NOSPLIT, $0-28
	MOVQ         k+0(FP), DI
	MOVQ         r+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSS c+24(FP), Y8
	VBROADCASTSS cone<>(SB), Y9
	SHRQ         $3, CX
tvloop:
	VMULPS  (SI), Y8, Y0   // u
	VMULPS  Y0, Y0, Y1
	VMULPS  Y0, Y1, Y1     // (u·u)·u
	VSUBPS  Y1, Y9, Y1     // w = 1 − u³
	VMULPS  Y1, Y1, Y2
	VMULPS  Y1, Y2, Y2     // (w·w)·w
	VCMPPS  $0x1d, Y9, Y0, Y3 // u ≥ 1
	VANDNPS Y2, Y3, Y2
	VMOVUPS Y2, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	DECQ    CX
	JNZ     tvloop
	VZEROUPPER
	RET

// func tricubeGradsAVX2(gr, r *float32, n int, ih float32, s *[8]float32)
// With u = r·ih and f = ((9·g)·(u·u))/(1 − (u·u)·u): g = −(f·ih) and s[lane] += f·u, both
// 0 where g = 0 or u ≥ 1 (ordered); n a positive multiple of 8.
TEXT ·tricubeGradsAVX2(SB), NOSPLIT, $0-40
	MOVQ         gr+0(FP), DI
	MOVQ         r+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSS ih+24(FP), Y8
	MOVQ         s+32(FP), DX
	VBROADCASTSS cone<>(SB), Y9
	VBROADCASTSS cnine<>(SB), Y10
	VBROADCASTSS csign<>(SB), Y11
	VXORPS       Y7, Y7, Y7
	VXORPS       Y6, Y6, Y6
	SHRQ         $3, CX
tgloop:
	VMOVUPS (DI), Y4       // v
	VMULPS  (SI), Y8, Y0   // u
	VMULPS  Y0, Y0, Y1     // u2
	VMULPS  Y10, Y4, Y2    // 9·v
	VMULPS  Y1, Y2, Y2     // (9·v)·u2
	VMULPS  Y0, Y1, Y3     // u2·u
	VSUBPS  Y3, Y9, Y3     // 1 − u2·u
	VDIVPS  Y3, Y2, Y2     // f
	VCMPPS  $0x00, Y7, Y4, Y5 // v == 0
	VCMPPS  $0x1d, Y9, Y0, Y3 // u ≥ 1
	VORPS   Y3, Y5, Y5     // the lanes set to 0
	VMULPS  Y0, Y2, Y3     // f·u
	VANDNPS Y3, Y5, Y3
	VADDPS  Y3, Y6, Y6
	VMULPS  Y8, Y2, Y2     // f·ih
	VXORPS  Y11, Y2, Y2
	VANDNPS Y2, Y5, Y2
	VMOVUPS Y2, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	DECQ    CX
	JNZ     tgloop
	VMOVUPS Y6, (DX)
	VZEROUPPER
	RET

// func epanechnikovGradsAVX2(gr, x *float32, n int, hh float32, s *[8]float32)
// With f = g/(hh − x): g = −f and s[lane] += f·x, both 0 where g = 0 or hh − x ≤ 0
// (ordered); n a positive multiple of 8.
TEXT ·epanechnikovGradsAVX2(SB), NOSPLIT, $0-40
	MOVQ         gr+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSS hh+24(FP), Y8
	MOVQ         s+32(FP), DX
	VBROADCASTSS csign<>(SB), Y11
	VXORPS       Y7, Y7, Y7
	VXORPS       Y6, Y6, Y6
	SHRQ         $3, CX
egloop:
	VMOVUPS (DI), Y4       // v
	VMOVUPS (SI), Y0       // x
	VSUBPS  Y0, Y8, Y1     // den = hh − x
	VDIVPS  Y1, Y4, Y2     // f
	VCMPPS  $0x00, Y7, Y4, Y5 // v == 0
	VCMPPS  $0x12, Y7, Y1, Y3 // den ≤ 0
	VORPS   Y3, Y5, Y5
	VMULPS  Y0, Y2, Y3     // f·x
	VANDNPS Y3, Y5, Y3
	VADDPS  Y3, Y6, Y6
	VXORPS  Y11, Y2, Y2    // −f
	VANDNPS Y2, Y5, Y2
	VMOVUPS Y2, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	DECQ    CX
	JNZ     egloop
	VMOVUPS Y6, (DX)
	VZEROUPPER
	RET
