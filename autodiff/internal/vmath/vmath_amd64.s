//go:build amd64 && !purego

#include "textflag.h"

DATA vconst<>+0(SB)/4, $0xc2aeac4f
DATA vconst<>+4(SB)/4, $0xc2aeac4f
DATA vconst<>+8(SB)/4, $0xc2aeac4f
DATA vconst<>+12(SB)/4, $0xc2aeac4f
DATA vconst<>+16(SB)/4, $0xc2aeac4f
DATA vconst<>+20(SB)/4, $0xc2aeac4f
DATA vconst<>+24(SB)/4, $0xc2aeac4f
DATA vconst<>+28(SB)/4, $0xc2aeac4f
DATA vconst<>+32(SB)/4, $0x42b00000
DATA vconst<>+36(SB)/4, $0x42b00000
DATA vconst<>+40(SB)/4, $0x42b00000
DATA vconst<>+44(SB)/4, $0x42b00000
DATA vconst<>+48(SB)/4, $0x42b00000
DATA vconst<>+52(SB)/4, $0x42b00000
DATA vconst<>+56(SB)/4, $0x42b00000
DATA vconst<>+60(SB)/4, $0x42b00000
DATA vconst<>+64(SB)/4, $0x3fb8aa3b
DATA vconst<>+68(SB)/4, $0x3fb8aa3b
DATA vconst<>+72(SB)/4, $0x3fb8aa3b
DATA vconst<>+76(SB)/4, $0x3fb8aa3b
DATA vconst<>+80(SB)/4, $0x3fb8aa3b
DATA vconst<>+84(SB)/4, $0x3fb8aa3b
DATA vconst<>+88(SB)/4, $0x3fb8aa3b
DATA vconst<>+92(SB)/4, $0x3fb8aa3b
DATA vconst<>+96(SB)/4, $0x4b400000
DATA vconst<>+100(SB)/4, $0x4b400000
DATA vconst<>+104(SB)/4, $0x4b400000
DATA vconst<>+108(SB)/4, $0x4b400000
DATA vconst<>+112(SB)/4, $0x4b400000
DATA vconst<>+116(SB)/4, $0x4b400000
DATA vconst<>+120(SB)/4, $0x4b400000
DATA vconst<>+124(SB)/4, $0x4b400000
DATA vconst<>+128(SB)/4, $0x3f318000
DATA vconst<>+132(SB)/4, $0x3f318000
DATA vconst<>+136(SB)/4, $0x3f318000
DATA vconst<>+140(SB)/4, $0x3f318000
DATA vconst<>+144(SB)/4, $0x3f318000
DATA vconst<>+148(SB)/4, $0x3f318000
DATA vconst<>+152(SB)/4, $0x3f318000
DATA vconst<>+156(SB)/4, $0x3f318000
DATA vconst<>+160(SB)/4, $0xb95e8083
DATA vconst<>+164(SB)/4, $0xb95e8083
DATA vconst<>+168(SB)/4, $0xb95e8083
DATA vconst<>+172(SB)/4, $0xb95e8083
DATA vconst<>+176(SB)/4, $0xb95e8083
DATA vconst<>+180(SB)/4, $0xb95e8083
DATA vconst<>+184(SB)/4, $0xb95e8083
DATA vconst<>+188(SB)/4, $0xb95e8083
DATA vconst<>+192(SB)/4, $0x39506967
DATA vconst<>+196(SB)/4, $0x39506967
DATA vconst<>+200(SB)/4, $0x39506967
DATA vconst<>+204(SB)/4, $0x39506967
DATA vconst<>+208(SB)/4, $0x39506967
DATA vconst<>+212(SB)/4, $0x39506967
DATA vconst<>+216(SB)/4, $0x39506967
DATA vconst<>+220(SB)/4, $0x39506967
DATA vconst<>+224(SB)/4, $0x3ab743ce
DATA vconst<>+228(SB)/4, $0x3ab743ce
DATA vconst<>+232(SB)/4, $0x3ab743ce
DATA vconst<>+236(SB)/4, $0x3ab743ce
DATA vconst<>+240(SB)/4, $0x3ab743ce
DATA vconst<>+244(SB)/4, $0x3ab743ce
DATA vconst<>+248(SB)/4, $0x3ab743ce
DATA vconst<>+252(SB)/4, $0x3ab743ce
DATA vconst<>+256(SB)/4, $0x3c088908
DATA vconst<>+260(SB)/4, $0x3c088908
DATA vconst<>+264(SB)/4, $0x3c088908
DATA vconst<>+268(SB)/4, $0x3c088908
DATA vconst<>+272(SB)/4, $0x3c088908
DATA vconst<>+276(SB)/4, $0x3c088908
DATA vconst<>+280(SB)/4, $0x3c088908
DATA vconst<>+284(SB)/4, $0x3c088908
DATA vconst<>+288(SB)/4, $0x3d2aa9c1
DATA vconst<>+292(SB)/4, $0x3d2aa9c1
DATA vconst<>+296(SB)/4, $0x3d2aa9c1
DATA vconst<>+300(SB)/4, $0x3d2aa9c1
DATA vconst<>+304(SB)/4, $0x3d2aa9c1
DATA vconst<>+308(SB)/4, $0x3d2aa9c1
DATA vconst<>+312(SB)/4, $0x3d2aa9c1
DATA vconst<>+316(SB)/4, $0x3d2aa9c1
DATA vconst<>+320(SB)/4, $0x3e2aaaaa
DATA vconst<>+324(SB)/4, $0x3e2aaaaa
DATA vconst<>+328(SB)/4, $0x3e2aaaaa
DATA vconst<>+332(SB)/4, $0x3e2aaaaa
DATA vconst<>+336(SB)/4, $0x3e2aaaaa
DATA vconst<>+340(SB)/4, $0x3e2aaaaa
DATA vconst<>+344(SB)/4, $0x3e2aaaaa
DATA vconst<>+348(SB)/4, $0x3e2aaaaa
DATA vconst<>+352(SB)/4, $0x3f000000
DATA vconst<>+356(SB)/4, $0x3f000000
DATA vconst<>+360(SB)/4, $0x3f000000
DATA vconst<>+364(SB)/4, $0x3f000000
DATA vconst<>+368(SB)/4, $0x3f000000
DATA vconst<>+372(SB)/4, $0x3f000000
DATA vconst<>+376(SB)/4, $0x3f000000
DATA vconst<>+380(SB)/4, $0x3f000000
DATA vconst<>+384(SB)/4, $0x3f800000
DATA vconst<>+388(SB)/4, $0x3f800000
DATA vconst<>+392(SB)/4, $0x3f800000
DATA vconst<>+396(SB)/4, $0x3f800000
DATA vconst<>+400(SB)/4, $0x3f800000
DATA vconst<>+404(SB)/4, $0x3f800000
DATA vconst<>+408(SB)/4, $0x3f800000
DATA vconst<>+412(SB)/4, $0x3f800000
DATA vconst<>+416(SB)/4, $0xbfcc422a
DATA vconst<>+420(SB)/4, $0xbfcc422a
DATA vconst<>+424(SB)/4, $0xbfcc422a
DATA vconst<>+428(SB)/4, $0xbfcc422a
DATA vconst<>+432(SB)/4, $0xbfcc422a
DATA vconst<>+436(SB)/4, $0xbfcc422a
DATA vconst<>+440(SB)/4, $0xbfcc422a
DATA vconst<>+444(SB)/4, $0xbfcc422a
DATA vconst<>+448(SB)/4, $0xbd922279
DATA vconst<>+452(SB)/4, $0xbd922279
DATA vconst<>+456(SB)/4, $0xbd922279
DATA vconst<>+460(SB)/4, $0xbd922279
DATA vconst<>+464(SB)/4, $0xbd922279
DATA vconst<>+468(SB)/4, $0xbd922279
DATA vconst<>+472(SB)/4, $0xbd922279
DATA vconst<>+476(SB)/4, $0xbd922279
DATA vconst<>+480(SB)/4, $0x7f
DATA vconst<>+484(SB)/4, $0x7f
DATA vconst<>+488(SB)/4, $0x7f
DATA vconst<>+492(SB)/4, $0x7f
DATA vconst<>+496(SB)/4, $0x7f
DATA vconst<>+500(SB)/4, $0x7f
DATA vconst<>+504(SB)/4, $0x7f
DATA vconst<>+508(SB)/4, $0x7f
GLOBL vconst<>(SB), RODATA|NOPTR, $512

#define C_lo vconst<>+0(SB)
#define C_hi vconst<>+32(SB)
#define C_log2e vconst<>+64(SB)
#define C_magic vconst<>+96(SB)
#define C_ln2hi vconst<>+128(SB)
#define C_ln2lo vconst<>+160(SB)
#define C_p0 vconst<>+192(SB)
#define C_p1 vconst<>+224(SB)
#define C_p2 vconst<>+256(SB)
#define C_p3 vconst<>+288(SB)
#define C_p4 vconst<>+320(SB)
#define C_p5 vconst<>+352(SB)
#define C_one vconst<>+384(SB)
#define C_k1 vconst<>+416(SB)
#define C_k2 vconst<>+448(SB)
#define C_i127 vconst<>+480(SB)

// EXP8 sets Y0 = exp(Y0) for eight float32 lanes (Cephes expf; arguments clamped to
// [−87.34, 88]); it clobbers Y1, Y2 and Y3.
#define EXP8 \
	VMAXPS C_lo, Y0, Y0 \
	VMINPS C_hi, Y0, Y0 \
	VMOVUPS C_log2e, Y1 \
	VFMADD213PS C_magic, Y0, Y1 \
	VSUBPS C_magic, Y1, Y2 \
	VPSUBD C_magic, Y1, Y1 \
	VFNMADD231PS C_ln2hi, Y2, Y0 \
	VFNMADD231PS C_ln2lo, Y2, Y0 \
	VMOVUPS C_p0, Y2 \
	VFMADD213PS C_p1, Y0, Y2 \
	VFMADD213PS C_p2, Y0, Y2 \
	VFMADD213PS C_p3, Y0, Y2 \
	VFMADD213PS C_p4, Y0, Y2 \
	VFMADD213PS C_p5, Y0, Y2 \
	VMULPS Y0, Y0, Y3 \
	VADDPS C_one, Y0, Y0 \
	VFMADD231PS Y3, Y2, Y0 \
	VPADDD C_i127, Y1, Y1 \
	VPSLLD $23, Y1, Y1 \
	VMULPS Y1, Y0, Y0

// EXPCS8 sets Y0 = exp(c·x − shift) for the eight x in Y0, with Y8 = c and Y7 = shift
// broadcast, 0 where c·x − shift < C_lo or is NaN (the product and the difference each
// rounded); it clobbers Y1, Y2, Y3 and Y5.
#define EXPCS8 \
	VMULPS Y8, Y0, Y0 \
	VSUBPS Y7, Y0, Y0 \
	VCMPPS $0x1d, C_lo, Y0, Y5 \
	EXP8 \
	VANDPS Y5, Y0, Y0

// EXP16 is EXP8 on sixteen lanes: Z0 = exp(Z0), the same operations on each lane with
// the constants broadcast from their first lane, so the same bits; it clobbers Z1, Z2 and
// Z3. AVX-512F only.
#define EXP16 \
	VMAXPS.BCST C_lo, Z0, Z0 \
	VMINPS.BCST C_hi, Z0, Z0 \
	VBROADCASTSS C_log2e, Z1 \
	VFMADD213PS.BCST C_magic, Z0, Z1 \
	VSUBPS.BCST C_magic, Z1, Z2 \
	VPSUBD.BCST C_magic, Z1, Z1 \
	VFNMADD231PS.BCST C_ln2hi, Z2, Z0 \
	VFNMADD231PS.BCST C_ln2lo, Z2, Z0 \
	VBROADCASTSS C_p0, Z2 \
	VFMADD213PS.BCST C_p1, Z0, Z2 \
	VFMADD213PS.BCST C_p2, Z0, Z2 \
	VFMADD213PS.BCST C_p3, Z0, Z2 \
	VFMADD213PS.BCST C_p4, Z0, Z2 \
	VFMADD213PS.BCST C_p5, Z0, Z2 \
	VMULPS Z0, Z0, Z3 \
	VADDPS.BCST C_one, Z0, Z0 \
	VFMADD231PS Z3, Z2, Z0 \
	VPADDD.BCST C_i127, Z1, Z1 \
	VPSLLD $23, Z1, Z1 \
	VMULPS Z1, Z0, Z0

// EXPCS16 is EXPCS8 on sixteen lanes (Z8 = c, Z7 = shift broadcast), the lanes below C_lo
// zeroed through K1; it clobbers Z1, Z2, Z3 and K1.
#define EXPCS16 \
	VMULPS Z8, Z0, Z0 \
	VSUBPS Z7, Z0, Z0 \
	VCMPPS.BCST $0x1d, C_lo, Z0, K1 \
	EXP16 \
	VMOVAPS.Z Z0, K1, Z0

// ADDHALVES adds the low then the high eight lanes of Z0 into the ymm accumulator acc: the
// order in which an eight-lane loop would add the same sixteen elements. Clobbers Y1.
#define ADDHALVES(acc) \
	VADDPS        Y0, acc, acc \
	VEXTRACTF64X4 $1, Z0, Y1 \
	VADDPS        Y1, acc, acc

// tailmask<>+32−4r holds eight dwords, the first r all ones: a load and store mask
// for the last r < 8 elements.
DATA tailmask<>+0(SB)/8, $-1
DATA tailmask<>+8(SB)/8, $-1
DATA tailmask<>+16(SB)/8, $-1
DATA tailmask<>+24(SB)/8, $-1
DATA tailmask<>+32(SB)/8, $0
DATA tailmask<>+40(SB)/8, $0
DATA tailmask<>+48(SB)/8, $0
DATA tailmask<>+56(SB)/8, $0
GLOBL tailmask<>(SB), RODATA|NOPTR, $64

// TAILMASK sets Y4 to the mask of the first DX < 8 lanes (DX becomes 4·DX; AX is used).
#define TAILMASK \
	LEAQ tailmask<>+32(SB), AX \
	SHLQ $2, DX \
	SUBQ DX, AX \
	VMOVUPS (AX), Y4

// LANES8 adds the eight lanes of Y6 as vmath.lanes8 does (j + 4, then j + 2, then
// j + 1) and leaves the total in the low lane of X6.
#define LANES8 \
	VEXTRACTF128 $1, Y6, X1 \
	VADDPS       X1, X6, X6 \
	VMOVHLPS     X6, X6, X1 \
	VADDPS       X1, X6, X6 \
	VMOVSHDUP    X6, X1 \
	VADDSS       X1, X6, X6

// LANESMAX sets X0's low lane to the largest of Y0's eight lanes; it clobbers X1.
#define LANESMAX \
	VEXTRACTF128 $1, Y0, X1 \
	VMAXPS       X1, X0, X0 \
	VMOVHLPS     X0, X0, X1 \
	VMAXPS       X1, X0, X0 \
	VMOVSHDUP    X0, X1 \
	VMAXSS       X1, X0, X0

// DISTDIV sets Y0 = Y0 / (Y1 + Y1), 0 where Y0 or Y1 is 0 (distGradAVX2's rule: a NaN
// stays), with Y5 = 0; it clobbers Y1, Y2 and Y3.
#define DISTDIV \
	VCMPPS $4, Y5, Y0, Y2 \
	VCMPPS $4, Y5, Y1, Y3 \
	VANDPS Y3, Y2, Y2 \
	VADDPS Y1, Y1, Y1 \
	VDIVPS Y1, Y0, Y0 \
	VANDPS Y2, Y0, Y0

DATA vneg2<>+0(SB)/8, $0xc0000000c0000000
DATA vneg2<>+8(SB)/8, $0xc0000000c0000000
DATA vneg2<>+16(SB)/8, $0xc0000000c0000000
DATA vneg2<>+24(SB)/8, $0xc0000000c0000000
GLOBL vneg2<>(SB), RODATA|NOPTR, $32

DATA vsign<>+0(SB)/8, $0x8000000080000000
DATA vsign<>+8(SB)/8, $0x8000000080000000
DATA vsign<>+16(SB)/8, $0x8000000080000000
DATA vsign<>+24(SB)/8, $0x8000000080000000
GLOBL vsign<>(SB), RODATA|NOPTR, $32

// TERMS3 stores a row's three pair terms for the eight pairs whose dot products are in
// Y1 and keys' squared norms in Y2, with Y4 = qq and Y14 = 0 broadcast: the dot products
// at 0(SP), the squared distances max(qq + kk − 2·dots, 0) at 32(SP) and the distances at
// 64(SP), formed as SQDIST8 and sqDistAVX2 form them (a Linear's term t is at 32·t(SP)).
// It leaves the squared distances in Y12 and the distances in Y13.
#define TERMS3 \
	VADDPS      Y2, Y4, Y12 \
	VFMADD231PS vneg2<>(SB), Y1, Y12 \
	VMAXPS      Y12, Y14, Y12 \
	VSQRTPS     Y12, Y13 \
	VMOVUPS     Y1, (SP) \
	VMOVUPS     Y12, 32(SP) \
	VMOVUPS     Y13, 64(SP)

// ZTERMS2 forms, from the dot products in Z1 and the keys' squared norms in Z2 (Z4 = qq
// broadcast, Z14 = 0), the squared distances in Z12 and the distances in Z13 (TERMS3's
// roundings); the loops pick a component's term through the masks set by ZTERMMASKS.
#define ZTERMS2 \
	VADDPS      Z2, Z4, Z12 \
	VFMADD231PS.BCST vneg2<>(SB), Z1, Z12 \
	VMAXPS      Z12, Z14, Z12 \
	VSQRTPS     Z12, Z13

// ZSCALETERM sets dst = c·x with x the term of 32·term in R: c·Z13, then c·Z12 in the
// lanes of ks (all when the term is the squared distance), then c·Z1 in those of kd (all
// for the dot product).
#define ZSCALETERM(c, ks, kd, dst) \
	VMULPS Z13, c, dst \
	VMULPS Z12, c, ks, dst \
	VMULPS Z1, c, kd, dst

// ZPICK sets dst to the term of 32·term in R: the distances Z13, the squared distances
// Z12 in the lanes of ks (all for the squared distance), the dot products Z1 in those of
// kd (all for the dot product).
#define ZPICK(ks, kd, dst) \
	VMOVAPS Z13, dst \
	VMOVAPS Z12, ks, dst \
	VMOVAPS Z1, kd, dst

// ADDZ adds the low then the high eight lanes of z (y its low half) into the ymm
// accumulator acc, as ADDHALVES does; t is a ymm scratch register.
#define ADDZ(z, y, acc, t) \
	VADDPS        y, acc, acc \
	VEXTRACTF64X4 $1, z, t \
	VADDPS        t, acc, acc

// ZDISTDIV is DISTDIV on sixteen lanes: Z0 = Z0/(x + x), 0 where Z0 or x is 0 (Z5 = 0);
// it doubles x and clobbers K4.
#define ZDISTDIV(x) \
	VCMPPS    $4, Z5, Z0, K4 \
	VCMPPS    $4, Z5, x, K4, K4 \
	VADDPS    x, x, x \
	VDIVPS    x, Z0, Z0 \
	VMOVAPS.Z Z0, K4, Z0

// func expScaleShiftSumAVX2(dst, x *float32, n int, c, shift float32, add bool) float32
// v[i] = exp(c·x[i] − shift) (the product and the difference each rounded), 0 where
// c·x[i] − shift < C_lo or is NaN, into dst[i] (added to it if add), and returns Σ v[i]
// with i in lane i mod 8, then LANES8; n > 0; dst may be x. The last n mod 8 elements
// go through masked loads and stores.
TEXT ·expScaleShiftSumAVX2(SB), NOSPLIT, $0-44
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS c+24(FP), Y8
	VBROADCASTSS shift+28(FP), Y7
	MOVBLZX add+32(FP), BX
	VXORPS Y6, Y6, Y6
	MOVQ CX, DX
	ANDQ $7, DX
	SHRQ $3, CX
	JZ   etail
eloop:
	VMOVUPS (SI), Y0
	EXPCS8
	TESTQ BX, BX
	JZ   estore
	VADDPS (DI), Y0, Y1
	VMOVUPS Y1, (DI)
	JMP  enext
estore:
	VMOVUPS Y0, (DI)
enext:
	VADDPS Y0, Y6, Y6
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNZ  eloop
etail:
	TESTQ DX, DX
	JZ   edone
	TAILMASK
	VMASKMOVPS (SI), Y4, Y0
	EXPCS8
	VANDPS Y4, Y0, Y0 // only the tail's lanes
	TESTQ BX, BX
	JZ   etstore
	VMASKMOVPS (DI), Y4, Y1
	VADDPS Y1, Y0, Y1
	VMASKMOVPS Y1, Y4, (DI)
	JMP  etnext
etstore:
	VMASKMOVPS Y0, Y4, (DI)
etnext:
	VADDPS Y0, Y6, Y6
edone:
	LANES8
	VMOVSS X6, ret+40(FP)
	VZEROUPPER
	RET

// func scaleDotAVX2(gr, x *float32, n int, c float32) float32
// Σ gr[i]·x[i] with i in lane i mod 8, then LANES8, and gr[i] = c·gr[i] for i < n &^ 7
// (the caller scales the tail); n > 0. The tail's products come from masked loads.
TEXT ·scaleDotAVX2(SB), NOSPLIT, $0-36
	MOVQ gr+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS c+24(FP), Y7
	VXORPS Y6, Y6, Y6
	MOVQ CX, DX
	ANDQ $7, DX
	SHRQ $3, CX
	JZ   sdtail
sdloop:
	VMOVUPS (DI), Y0
	VMULPS (SI), Y0, Y1
	VADDPS Y1, Y6, Y6
	VMULPS Y7, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	ADDQ $32, SI
	DECQ CX
	JNZ  sdloop
sdtail:
	TESTQ DX, DX
	JZ   sddone
	TAILMASK
	VMASKMOVPS (DI), Y4, Y0
	VMASKMOVPS (SI), Y4, Y1
	VMULPS Y1, Y0, Y1
	VADDPS Y1, Y6, Y6
sddone:
	LANES8
	VMOVSS X6, ret+32(FP)
	VZEROUPPER
	RET

// SQDIST8 sets Y0 to max(qq + kk − 2·dots, 0) for the 8 floats at (DX) and (SI), with
// Y4 = qq, Y5 = 0 and Y6 = −2 broadcast. The product 2·dots is exact, so the fused
// negative multiply-add rounds once, as the scalar expression's subtraction does; VMAXPS
// with the value as its second source keeps a NaN.
#define SQDIST8 \
	VADDPS      (DX), Y4, Y0 \
	VFMADD231PS (SI), Y6, Y0 \
	VMAXPS      Y0, Y5, Y0

// SQDIST8TAIL is SQDIST8 for the last R10 < 8 floats, through masked loads, and leaves
// their mask in Y9 (it uses AX, R9, Y12; DX is kept).
#define SQDIST8TAIL \
	MOVQ        DX, R9 \
	MOVQ        R10, DX \
	VMOVAPS     Y4, Y12 \
	TAILMASK \
	VMOVAPS     Y4, Y9 \
	VMOVAPS     Y12, Y4 \
	MOVQ        R9, DX \
	VMASKMOVPS  (DX), Y9, Y1 \
	VMASKMOVPS  (SI), Y9, Y2 \
	VADDPS      Y1, Y4, Y0 \
	VFMADD231PS Y2, Y6, Y0 \
	VMAXPS      Y0, Y5, Y0

// func sqDistAVX2(x, dots *float32, qq float32, kk *float32, n int, root bool)
// x = max(qq + kk − 2·dots, 0), its square root if root; n > 0. The last n mod 8
// elements go through masked loads and stores.
TEXT ·sqDistAVX2(SB), NOSPLIT, $0-41
	MOVQ         x+0(FP), DI
	MOVQ         dots+8(FP), SI
	VBROADCASTSS qq+16(FP), Y4
	MOVQ         kk+24(FP), DX
	MOVQ         n+32(FP), CX
	MOVBLZX      root+40(FP), BX
	VXORPS       Y5, Y5, Y5
	MOVL         $0xc0000000, AX // −2
	MOVL         AX, X6
	VBROADCASTSS X6, Y6
	MOVQ         CX, R10
	ANDQ         $7, R10
	SHRQ         $3, CX
	JZ           sdtail
	TESTQ        BX, BX
	JNZ          dloop

sdloop:
	SQDIST8
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, DI
	DECQ    CX
	JNZ     sdloop
	JMP     sdtail

dloop:
	SQDIST8
	VSQRTPS Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, DI
	DECQ    CX
	JNZ     dloop
sdtail:
	TESTQ   R10, R10
	JZ      sddone
	SQDIST8TAIL
	TESTQ   BX, BX
	JZ      sdtstore
	VSQRTPS Y0, Y0
sdtstore:
	VMASKMOVPS Y0, Y9, (DI)
sddone:
	VZEROUPPER
	RET

// func sqDistScaleMaxAVX2(e, dots *float32, qq float32, kk *float32, n int, root bool, c float32) float32
// e = c·max(qq + kk − 2·dots, 0) (c times its square root if root), sqDistAVX2's
// roundings, and returns the largest, NaN when one is NaN; n > 0. The last n mod 8
// elements go through masked loads and stores, the other lanes −Inf for the maximum.
TEXT ·sqDistScaleMaxAVX2(SB), NOSPLIT, $0-52
	MOVQ         e+0(FP), DI
	MOVQ         dots+8(FP), SI
	VBROADCASTSS qq+16(FP), Y4
	MOVQ         kk+24(FP), DX
	MOVQ         n+32(FP), CX
	MOVBLZX      root+40(FP), BX
	VBROADCASTSS c+44(FP), Y8
	VXORPS       Y5, Y5, Y5
	MOVL         $0xc0000000, AX // −2
	MOVL         AX, X6
	VBROADCASTSS X6, Y6
	MOVL         $0xff800000, AX // −Inf
	MOVL         AX, X7
	VBROADCASTSS X7, Y7
	VMOVAPS      Y7, Y11
	VXORPS       Y3, Y3, Y3
	MOVQ         CX, R10
	ANDQ         $7, R10
	SHRQ         $3, CX
	JZ           dmtail
dmloop:
	SQDIST8
	TESTQ   BX, BX
	JZ      dmscale
	VSQRTPS Y0, Y0
dmscale:
	VMULPS  Y8, Y0, Y0
	VMOVUPS Y0, (DI)
	VCMPPS  $3, Y0, Y0, Y2 // unordered: the NaN lanes
	VORPS   Y2, Y3, Y3
	VMAXPS  Y0, Y11, Y11
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, DI
	DECQ    CX
	JNZ     dmloop
dmtail:
	TESTQ   R10, R10
	JZ      dmdone
	SQDIST8TAIL
	TESTQ   BX, BX
	JZ      dmtscale
	VSQRTPS Y0, Y0
dmtscale:
	VMULPS     Y8, Y0, Y0
	VMASKMOVPS Y0, Y9, (DI)
	VBLENDVPS  Y9, Y0, Y7, Y0 // the tail's lanes, −Inf in the others
	VCMPPS     $3, Y0, Y0, Y2
	VORPS      Y2, Y3, Y3
	VMAXPS     Y0, Y11, Y11
dmdone:
	VMOVAPS      Y11, Y0
	LANESMAX
	VMOVMSKPS    Y3, AX
	TESTL        AX, AX
	JZ           dmret
	MOVL         $0x7fc00000, AX // NaN
	MOVL         AX, X0
dmret:
	VMOVSS X0, ret+48(FP)
	VZEROUPPER
	RET

// func expScoreGradAVX2(gr, x, d *float32, n int, c, shift, delta, f float32) float32
// gr[i] = (f·e[i])·(d[i] − delta) with e[i] = exp(c·x[i] − shift) as
// expScaleShiftSumAVX2 forms it (scoreGradSumAVX2's roundings), and returns Σ g[i] in
// its lanes and order; n > 0. The last n mod 8 elements go through masked loads and
// stores, their lanes masked out of the sum.
TEXT ·expScoreGradAVX2(SB), NOSPLIT, $0-52
	MOVQ         gr+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         d+16(FP), DX
	MOVQ         n+24(FP), CX
	VBROADCASTSS c+32(FP), Y8
	VBROADCASTSS shift+36(FP), Y7
	VBROADCASTSS delta+40(FP), Y9
	VBROADCASTSS f+44(FP), Y10
	VXORPS       Y6, Y6, Y6
	MOVQ         CX, BX
	ANDQ         $7, BX
	SHRQ         $3, CX
	JZ           xgtail
xgloop:
	VMOVUPS (SI), Y0
	EXPCS8
	VMULPS  Y10, Y0, Y0
	VMOVUPS (DX), Y1
	VSUBPS  Y9, Y1, Y1
	VMULPS  Y1, Y0, Y0
	VMOVUPS Y0, (DI)
	VADDPS  Y0, Y6, Y6
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, DI
	DECQ    CX
	JNZ     xgloop
xgtail:
	TESTQ BX, BX
	JZ    xgdone
	MOVQ  DX, R9
	MOVQ  BX, DX
	TAILMASK
	MOVQ  R9, DX
	VMASKMOVPS (SI), Y4, Y0
	EXPCS8
	VANDPS     Y4, Y0, Y0 // only the tail's lanes
	VMULPS     Y10, Y0, Y0
	VMASKMOVPS (DX), Y4, Y1
	VSUBPS     Y9, Y1, Y1
	VMULPS     Y1, Y0, Y0
	VMASKMOVPS Y0, Y4, (DI)
	VANDPS     Y4, Y0, Y0
	VADDPS     Y0, Y6, Y6
xgdone:
	LANES8
	VMOVSS X6, ret+48(FP)
	VZEROUPPER
	RET

// func scoreGradSumAVX2(dst, d, p *float32, n int, delta, scale float32) float32
// dst[i] = (scale·p[i])·(d[i] − delta) (scoreGradAVX2's roundings) and Σ dst[i] in
// scaleDotAVX2's lanes and order; n > 0. The last n mod 8 elements go through masked
// loads and stores, their lanes masked out of the sum.
TEXT ·scoreGradSumAVX2(SB), NOSPLIT, $0-44
	MOVQ dst+0(FP), DI
	MOVQ d+8(FP), SI
	MOVQ p+16(FP), BX
	MOVQ n+24(FP), CX
	VBROADCASTSS delta+32(FP), Y2
	VBROADCASTSS scale+36(FP), Y3
	VXORPS Y6, Y6, Y6
	MOVQ CX, DX
	ANDQ $7, DX
	SHRQ $3, CX
	JZ   sgtail
sgloop:
	VMULPS (BX), Y3, Y0
	VMOVUPS (SI), Y1
	VSUBPS Y2, Y1, Y1
	VMULPS Y1, Y0, Y0
	VMOVUPS Y0, (DI)
	VADDPS Y0, Y6, Y6
	ADDQ $32, BX
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNZ  sgloop
sgtail:
	TESTQ DX, DX
	JZ   sgdone
	TAILMASK
	VMASKMOVPS (BX), Y4, Y0
	VMULPS Y0, Y3, Y0
	VMASKMOVPS (SI), Y4, Y1
	VSUBPS Y2, Y1, Y1
	VMULPS Y1, Y0, Y0
	VMASKMOVPS Y0, Y4, (DI)
	VANDPS Y4, Y0, Y0
	VADDPS Y0, Y6, Y6
sgdone:
	LANES8
	VMOVSS X6, ret+40(FP)
	VZEROUPPER
	RET

// func addSumScaleAVX2(gr, acc *float32, n int, c float32) float32
// Σ gr[i] in scaleDotAVX2's lanes and order, and for i < n &^ 7 acc[i] += gr[i] and
// gr[i] = c·gr[i] (the caller updates the tail); n > 0.
TEXT ·addSumScaleAVX2(SB), NOSPLIT, $0-36
	MOVQ gr+0(FP), DI
	MOVQ acc+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS c+24(FP), Y7
	VXORPS Y6, Y6, Y6
	MOVQ CX, DX
	ANDQ $7, DX
	SHRQ $3, CX
	JZ   astail
asloop:
	VMOVUPS (DI), Y0
	VADDPS Y0, Y6, Y6
	VADDPS (SI), Y0, Y1
	VMOVUPS Y1, (SI)
	VMULPS Y7, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	ADDQ $32, SI
	DECQ CX
	JNZ  asloop
astail:
	TESTQ DX, DX
	JZ   asdone
	TAILMASK
	VMASKMOVPS (DI), Y4, Y0
	VADDPS Y0, Y6, Y6
asdone:
	LANES8
	VMOVSS X6, ret+32(FP)
	VZEROUPPER
	RET

// func linearCoefsAVX2(dst, gr, x, cs *float32, n int, c float32, term int, add bool) (gx, sd float32)
// For i < n: gx gets gr[i]·x[i] (scaleDotAVX2's lanes), v = c·gr[i]; for term 2 (the
// distance) v = v/(x[i] + x[i]), 0 where v or x[i] is 0 (distGradAVX2's rule); for terms
// 1 and 2 sd gets v (addSumScaleAVX2's lanes), cs[i] += v and v = −2·v; then dst[i] = v,
// or dst[i] += v if add. n > 0; the last n mod 8 elements go through masked loads and
// stores. cs is not read for term 0.
TEXT ·linearCoefsAVX2(SB), NOSPLIT, $0-72
	MOVQ         dst+0(FP), DI
	MOVQ         gr+8(FP), SI
	MOVQ         x+16(FP), DX
	MOVQ         cs+24(FP), BX
	MOVQ         n+32(FP), CX
	VBROADCASTSS c+40(FP), Y8
	MOVQ         term+48(FP), R8
	MOVBLZX      add+56(FP), R9
	VXORPS       Y5, Y5, Y5
	VXORPS       Y6, Y6, Y6
	VXORPS       Y11, Y11, Y11
	MOVL         $0xc0000000, AX // −2
	MOVL         AX, X7
	VBROADCASTSS X7, Y7
	MOVQ         CX, R10
	ANDQ         $7, R10
	SHRQ         $3, CX
	JZ           lctail
lcloop:
	VMOVUPS (SI), Y0
	VMOVUPS (DX), Y1
	VMULPS  Y1, Y0, Y2
	VADDPS  Y2, Y6, Y6
	VMULPS  Y8, Y0, Y0
	TESTQ   R8, R8
	JZ      lcstore
	CMPQ    R8, $2
	JNE     lcsq
	DISTDIV
lcsq:
	VADDPS  Y0, Y11, Y11
	VADDPS  (BX), Y0, Y1
	VMOVUPS Y1, (BX)
	VMULPS  Y7, Y0, Y0
	ADDQ    $32, BX
lcstore:
	TESTQ   R9, R9
	JZ      lcset
	VADDPS  (DI), Y0, Y0
lcset:
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, DI
	DECQ    CX
	JNZ     lcloop
lctail:
	TESTQ R10, R10
	JZ    lcdone
	MOVQ  DX, R11
	MOVQ  R10, DX
	TAILMASK
	MOVQ  R11, DX
	VMASKMOVPS (SI), Y4, Y0
	VMASKMOVPS (DX), Y4, Y1
	VMULPS     Y1, Y0, Y2
	VADDPS     Y2, Y6, Y6
	VMULPS     Y8, Y0, Y0
	TESTQ      R8, R8
	JZ         lctstore
	CMPQ       R8, $2
	JNE        lctsq
	DISTDIV
lctsq:
	VADDPS     Y0, Y11, Y11
	VMASKMOVPS (BX), Y4, Y1
	VADDPS     Y1, Y0, Y1
	VMASKMOVPS Y1, Y4, (BX)
	VMULPS     Y7, Y0, Y0
lctstore:
	TESTQ      R9, R9
	JZ         lctset
	VMASKMOVPS (DI), Y4, Y1
	VADDPS     Y1, Y0, Y0
lctset:
	VMASKMOVPS Y0, Y4, (DI)
lcdone:
	LANES8
	VMOVSS  X6, gx+64(FP)
	VMOVAPS Y11, Y6
	LANES8
	VMOVSS  X6, sd+68(FP)
	VZEROUPPER
	RET

// func recip1pAVX2(k, x *float32, n int, c float32)
// k[i] = 1/(1 + x[i]·c), each step rounded; n > 0. The last n mod 8 elements go
// through masked loads and stores.
TEXT ·recip1pAVX2(SB), NOSPLIT, $0-28
	MOVQ         k+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSS c+24(FP), Y8
	MOVL         $0x3f800000, AX // 1
	MOVL         AX, X7
	VBROADCASTSS X7, Y7
	MOVQ         CX, DX
	ANDQ         $7, DX
	SHRQ         $3, CX
	JZ           rptail
rploop:
	VMULPS  (SI), Y8, Y0
	VADDPS  Y7, Y0, Y0
	VDIVPS  Y0, Y7, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	DECQ    CX
	JNZ     rploop
rptail:
	TESTQ DX, DX
	JZ    rpdone
	TAILMASK
	VMASKMOVPS (SI), Y4, Y0
	VMULPS     Y8, Y0, Y0
	VADDPS     Y7, Y0, Y0
	VDIVPS     Y0, Y7, Y0
	VMASKMOVPS Y0, Y4, (DI)
rpdone:
	VZEROUPPER
	RET

// func ratioGradAVX2(gr, x *float32, n int, a float32) float32
// f = gr[i]/(a + x[i]), gr[i] = −f (the sign flipped), and returns Σ f·x[i] (scaleDotAVX2's lanes and
// order); n > 0. The last n mod 8 elements go through masked loads and stores, their
// lanes masked out of the sum.
TEXT ·ratioGradAVX2(SB), NOSPLIT, $0-36
	MOVQ         gr+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSS a+24(FP), Y8
	VXORPS       Y6, Y6, Y6
	MOVL         $0x80000000, AX // the sign bit
	MOVL         AX, X5
	VBROADCASTSS X5, Y5
	MOVQ         CX, DX
	ANDQ         $7, DX
	SHRQ         $3, CX
	JZ           rgtail
rgloop:
	VMOVUPS (SI), Y1
	VADDPS  Y8, Y1, Y2
	VMOVUPS (DI), Y0
	VDIVPS  Y2, Y0, Y0
	VMULPS  Y1, Y0, Y3
	VADDPS  Y3, Y6, Y6
	VXORPS  Y5, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	DECQ    CX
	JNZ     rgloop
rgtail:
	TESTQ DX, DX
	JZ    rgdone
	TAILMASK
	VMASKMOVPS (SI), Y4, Y1
	VADDPS     Y8, Y1, Y2
	VMASKMOVPS (DI), Y4, Y0
	VDIVPS     Y2, Y0, Y0
	VMULPS     Y1, Y0, Y3
	VANDPS     Y4, Y3, Y3
	VADDPS     Y3, Y6, Y6
	VXORPS     Y5, Y0, Y0
	VMASKMOVPS Y0, Y4, (DI)
rgdone:
	LANES8
	VMOVSS X6, ret+32(FP)
	VZEROUPPER
	RET

// func distCoefsAVX2(dst, dots, kk, cs *float32, n int, qq, c float32, root bool) (gx, sd float32)
// linearCoefsAVX2(dst, dst, x, cs, n, c, term, false) with x = max(qq + kk − 2·dots, 0)
// (its square root, term 2, if root; term 1 otherwise), formed as sqDistAVX2 forms it;
// n > 0. The last n mod 8 elements go through masked loads and stores.
TEXT ·distCoefsAVX2(SB), NOSPLIT, $0-64
	MOVQ         dst+0(FP), DI
	MOVQ         dots+8(FP), SI
	MOVQ         kk+16(FP), DX
	MOVQ         cs+24(FP), BX
	MOVQ         n+32(FP), CX
	VBROADCASTSS qq+40(FP), Y4
	VBROADCASTSS c+44(FP), Y8
	MOVBLZX      root+48(FP), R8
	VXORPS       Y5, Y5, Y5
	MOVL         $0xc0000000, AX // −2
	MOVL         AX, X6
	VBROADCASTSS X6, Y6
	VXORPS       Y10, Y10, Y10
	VXORPS       Y11, Y11, Y11
	MOVQ         CX, R10
	ANDQ         $7, R10
	SHRQ         $3, CX
	JZ           dctail
dcloop:
	SQDIST8
	TESTQ   R8, R8
	JZ      dcx
	VSQRTPS Y0, Y0
dcx:
	VMOVAPS Y0, Y1
	VMOVUPS (DI), Y0
	VMULPS  Y1, Y0, Y2
	VADDPS  Y2, Y10, Y10
	VMULPS  Y8, Y0, Y0
	TESTQ   R8, R8
	JZ      dcsq
	DISTDIV
dcsq:
	VADDPS  Y0, Y11, Y11
	VADDPS  (BX), Y0, Y1
	VMOVUPS Y1, (BX)
	VMULPS  Y6, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, DI
	ADDQ    $32, BX
	DECQ    CX
	JNZ     dcloop
dctail:
	TESTQ   R10, R10
	JZ      dcdone
	SQDIST8TAIL
	TESTQ   R8, R8
	JZ      dctx
	VSQRTPS Y0, Y0
dctx:
	VMOVAPS    Y0, Y1
	VMASKMOVPS (DI), Y9, Y0
	VMULPS     Y1, Y0, Y2
	VANDPS     Y9, Y2, Y2
	VADDPS     Y2, Y10, Y10
	VMULPS     Y8, Y0, Y0
	TESTQ      R8, R8
	JZ         dctsq
	DISTDIV
dctsq:
	VANDPS     Y9, Y0, Y0
	VADDPS     Y0, Y11, Y11
	VMASKMOVPS (BX), Y9, Y1
	VADDPS     Y1, Y0, Y1
	VMASKMOVPS Y1, Y9, (BX)
	VMULPS     Y6, Y0, Y0
	VMASKMOVPS Y0, Y9, (DI)
dcdone:
	VMOVAPS Y10, Y6
	LANES8
	VMOVSS  X6, gx+56(FP)
	VMOVAPS Y11, Y6
	LANES8
	VMOVSS  X6, sd+60(FP)
	VZEROUPPER
	RET

// func scoreGradSubAVX2(d, p, sub *float32, n int, delta float32) float32
// v = p[i]·(d[i] − delta) (scoreGradSumAVX2's roundings at scale 1), d[i] = v − sub[i],
// and returns Σ v in scoreGradSumAVX2's lanes and order; n > 0. The last n mod 8
// elements go through masked loads and stores, their lanes masked out of the sum.
TEXT ·scoreGradSubAVX2(SB), NOSPLIT, $0-44
	MOVQ         d+0(FP), DI
	MOVQ         p+8(FP), SI
	MOVQ         sub+16(FP), DX
	MOVQ         n+24(FP), CX
	VBROADCASTSS delta+32(FP), Y2
	VXORPS       Y6, Y6, Y6
	MOVQ         CX, BX
	ANDQ         $7, BX
	SHRQ         $3, CX
	JZ           sstail
ssloop:
	VMOVUPS (DI), Y1
	VSUBPS  Y2, Y1, Y1
	VMULPS  (SI), Y1, Y0
	VADDPS  Y0, Y6, Y6
	VSUBPS  (DX), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, DI
	DECQ    CX
	JNZ     ssloop
sstail:
	TESTQ BX, BX
	JZ    ssdone
	MOVQ  DX, R9
	MOVQ  BX, DX
	TAILMASK
	MOVQ  R9, DX
	VMASKMOVPS (DI), Y4, Y1
	VSUBPS     Y2, Y1, Y1
	VMASKMOVPS (SI), Y4, Y3
	VMULPS     Y3, Y1, Y0
	VANDPS     Y4, Y0, Y0
	VADDPS     Y0, Y6, Y6
	VMASKMOVPS (DX), Y4, Y3
	VSUBPS     Y3, Y0, Y0
	VMASKMOVPS Y0, Y4, (DI)
ssdone:
	LANES8
	VMOVSS X6, ret+40(FP)
	VZEROUPPER
	RET

// func maxAVX2(x *float32, n int, m *[8]float32) bool
// m holds eight lanes whose maximum is that of x[0:n], and the result says whether any
// x[i] is NaN (then m is meaningless); n ≥ 8. A tail of n mod 8 elements is covered by
// the last eight elements, overlapping the block before.
TEXT ·maxAVX2(SB), NOSPLIT, $0-25
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ m+16(FP), DI
	MOVQ CX, DX
	ANDQ $7, DX
	SHRQ $3, CX
	VMOVUPS (SI), Y0
	VXORPS Y3, Y3, Y3
mloop:
	VMOVUPS (SI), Y1
	VCMPPS $3, Y1, Y1, Y2 // unordered: the NaN lanes
	VORPS Y2, Y3, Y3
	VMAXPS Y1, Y0, Y0
	ADDQ $32, SI
	DECQ CX
	JNZ  mloop
	TESTQ DX, DX
	JZ   mdone
	LEAQ -32(SI)(DX*4), SI
	VMOVUPS (SI), Y1
	VCMPPS $3, Y1, Y1, Y2
	VORPS Y2, Y3, Y3
	VMAXPS Y1, Y0, Y0
mdone:
	VMOVUPS Y0, (DI)
	VMOVMSKPS Y3, AX
	TESTL AX, AX
	SETNE ret+24(FP)
	VZEROUPPER
	RET

// func scaleMaxAVX2(dst, x, b *float32, n int, c float32) float32
// dst[i] = c·x[i] (+ b[i], the product rounded first, where b is not nil) and returns
// the largest, NaN when one is NaN; n > 0. The last n mod 8 elements go through masked
// loads and stores, the other lanes −Inf for the maximum.
TEXT ·scaleMaxAVX2(SB), NOSPLIT, $0-44
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ b+16(FP), R8
	MOVQ n+24(FP), CX
	VBROADCASTSS c+32(FP), Y8
	MOVL $0xff800000, AX // −Inf
	MOVL AX, X5
	VBROADCASTSS X5, Y5
	VMOVAPS Y5, Y0
	VXORPS Y3, Y3, Y3
	MOVQ CX, DX
	ANDQ $7, DX
	SHRQ $3, CX
	JZ   smtail
smloop:
	VMULPS (SI), Y8, Y1
	TESTQ R8, R8
	JZ   smstore
	VADDPS (R8), Y1, Y1
	ADDQ $32, R8
smstore:
	VMOVUPS Y1, (DI)
	VCMPPS $3, Y1, Y1, Y2 // unordered: the NaN lanes
	VORPS Y2, Y3, Y3
	VMAXPS Y1, Y0, Y0
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNZ  smloop
smtail:
	TESTQ DX, DX
	JZ   smdone
	TAILMASK
	VMASKMOVPS (SI), Y4, Y1
	VMULPS Y8, Y1, Y1
	TESTQ R8, R8
	JZ   smtstore
	VMASKMOVPS (R8), Y4, Y6
	VADDPS Y6, Y1, Y1
smtstore:
	VMASKMOVPS Y1, Y4, (DI)
	VBLENDVPS Y4, Y1, Y5, Y1 // the tail's lanes, −Inf in the others
	VCMPPS $3, Y1, Y1, Y2
	VORPS Y2, Y3, Y3
	VMAXPS Y1, Y0, Y0
smdone:
	LANESMAX
	VMOVMSKPS Y3, AX
	TESTL AX, AX
	JZ   smret
	MOVL $0x7fc00000, AX // NaN
	MOVL AX, X0
smret:
	VMOVSS X0, ret+40(FP)
	VZEROUPPER
	RET

// func scaleToAVX2(dst, x *float32, n int, a float32)
// dst[i] = a·x[i]; n is a positive multiple of 8.
TEXT ·scaleToAVX2(SB), NOSPLIT, $0-28
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS a+24(FP), Y1
sloop:
	VMULPS (SI), Y1, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JNZ  sloop
	VZEROUPPER
	RET

// SFZROW is scaleFlushAVX2's sixteen-lane loop over the CX > 0 elements at SI (Z1 = a,
// Z2 = 2⁻¹²⁶); it clobbers AX, CX, R10, K2, K3, Z0 and SI.
#define SFZROW \
	MOVQ    CX, R10 \
	SHRQ    $4, R10 \
	JZ      sfztail \
sfzloop: \
	VMULPS    (SI), Z1, Z0 \
	VCMPPS    $5, Z2, Z0, K3 \
	VMOVAPS.Z Z0, K3, Z0 \
	VMOVUPS   Z0, (SI) \
	ADDQ      $64, SI \
	DECQ      R10 \
	JNZ       sfzloop \
sfztail: \
	ANDQ      $15, CX \
	JZ        sfzend \
	MOVL      $1, AX \
	SHLL      CX, AX \
	DECL      AX \
	KMOVW     AX, K2 \
	VMOVUPS.Z (SI), K2, Z0 \
	VMULPS    Z0, Z1, Z0 \
	VCMPPS    $5, Z2, Z0, K3 \
	VMOVAPS.Z Z0, K3, Z0 \
	VMOVUPS   Z0, K2, (SI) \
sfzend:

// func scaleFlushAVX2(x *float32, n int, a float32, wide bool)
// x[i] = a·x[i], 0 where that is below 2⁻¹²⁶ (an ordered comparison: a NaN stays); n is
// a positive multiple of 8. With wide (the CPU has AVX-512F), any n > 0: sixteen elements
// at a time through zmm registers (SFZROW), the last n mod 16 through the mask K2, with
// the same bits.
TEXT ·scaleFlushAVX2(SB), NOSPLIT, $0-21
	MOVQ    x+0(FP), SI
	MOVQ    n+8(FP), CX
	MOVL    $0x00800000, AX // 2⁻¹²⁶
	MOVBLZX wide+20(FP), R10
	TESTQ   R10, R10
	JNZ     sfwide
	VBROADCASTSS a+16(FP), Y1
	MOVL    AX, X2
	VBROADCASTSS X2, Y2
sfloop:
	VMULPS (SI), Y1, Y0
	VCMPPS $1, Y2, Y0, Y3 // a·x < 2⁻¹²⁶, ordered
	VANDNPS Y0, Y3, Y0
	VMOVUPS Y0, (SI)
	ADDQ $32, SI
	SUBQ $8, CX
	JNZ  sfloop
	VZEROUPPER
	RET
sfwide:
	VBROADCASTSS a+16(FP), Z1
	VPBROADCASTD AX, Z2
	SFZROW
sfzdone:
	VZEROUPPER
	RET

// func shiftAVX2(x *float32, n int, a float32)
// x[i] = x[i] + a; n is a positive multiple of 8.
TEXT ·shiftAVX2(SB), NOSPLIT, $0-20
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSS a+16(FP), Y1
shloop:
	VADDPS (SI), Y1, Y0
	VMOVUPS Y0, (SI)
	ADDQ $32, SI
	SUBQ $8, CX
	JNZ  shloop
	VZEROUPPER
	RET

// func geluTanhAVX2(x, s, y *float32, n int)
// s[i] = 1/(1 + exp(−2u)), u = √(2/π)(x + 0.044715x³), and y[i] = x[i]·s[i]; n is a
// positive multiple of 8.
TEXT ·geluTanhAVX2(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ s+8(FP), DI
	MOVQ y+16(FP), DX
	MOVQ n+24(FP), CX
gloop:
	VMOVUPS (SI), Y4
	VMULPS Y4, Y4, Y5
	VMOVUPS C_k2, Y0
	VFMADD213PS C_k1, Y5, Y0
	VMULPS Y4, Y0, Y0
	EXP8
	VADDPS C_one, Y0, Y0
	VMOVUPS C_one, Y5
	VDIVPS Y0, Y5, Y5
	VMOVUPS Y5, (DI)
	VMULPS Y4, Y5, Y5
	VMOVUPS Y5, (DX)
	ADDQ $32, SI
	ADDQ $32, DI
	ADDQ $32, DX
	SUBQ $8, CX
	JNZ  gloop
	VZEROUPPER
	RET

// func sigmoidAVX2(x, y *float32, n int)
// y[i] = 1/(1 + exp(−x[i])); n is a positive multiple of 8.
TEXT ·sigmoidAVX2(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ y+8(FP), DX
	MOVQ n+16(FP), CX
	VXORPS Y6, Y6, Y6
sloop:
	VMOVUPS (SI), Y0
	VSUBPS Y0, Y6, Y0
	EXP8
	VADDPS C_one, Y0, Y0
	VMOVUPS C_one, Y5
	VDIVPS Y0, Y5, Y5
	VMOVUPS Y5, (DX)
	ADDQ $32, SI
	ADDQ $32, DX
	SUBQ $8, CX
	JNZ  sloop
	VZEROUPPER
	RET

// func reluAVX2(x, y *float32, n int)
// y[i] = x[i] >= 0 ? x[i] : x[i]*0; n is a positive multiple of 8.
TEXT ·reluAVX2(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ y+8(FP), DI
	MOVQ n+16(FP), CX
	VXORPS Y7, Y7, Y7
rloop:
	VMOVUPS (SI), Y0
	VCMPPS $0x1d, Y7, Y0, Y1 // x >= 0 (GE_OQ)
	VMULPS Y7, Y0, Y2        // x*0
	VBLENDVPS Y1, Y0, Y2, Y3 // mask ? x : x*0
	VMOVUPS Y3, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JNZ  rloop
	VZEROUPPER
	RET

// func reluGradAVX2(x, gr, dx *float32, n int)
// dx[i] = x[i] >= 0 ? g[i] : g[i]*0; n is a positive multiple of 8.
TEXT ·reluGradAVX2(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ gr+8(FP), DX
	MOVQ dx+16(FP), DI
	MOVQ n+24(FP), CX
	VXORPS Y7, Y7, Y7
rgloop:
	VMOVUPS (SI), Y0
	VMOVUPS (DX), Y4
	VCMPPS $0x1d, Y7, Y0, Y1 // x >= 0 (GE_OQ)
	VMULPS Y7, Y4, Y2        // g*0
	VBLENDVPS Y1, Y4, Y2, Y3 // mask ? g : g*0
	VMOVUPS Y3, (DI)
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, DI
	SUBQ $8, CX
	JNZ  rgloop
	VZEROUPPER
	RET

// func scaledDiffAVX2(p, t, d *float32, n int, c float64)
// d[i] = float32(c*(float64(p[i]) - float64(t[i]))); n is a positive multiple of 8.
TEXT ·scaledDiffAVX2(SB), NOSPLIT, $0-40
	MOVQ p+0(FP), SI
	MOVQ t+8(FP), DX
	MOVQ d+16(FP), DI
	MOVQ n+24(FP), CX
	VBROADCASTSD c+32(FP), Y7
sdloop:
	VCVTPS2PD (SI), Y0
	VCVTPS2PD 16(SI), Y1
	VCVTPS2PD (DX), Y2
	VCVTPS2PD 16(DX), Y3
	VSUBPD Y2, Y0, Y0
	VSUBPD Y3, Y1, Y1
	VMULPD Y0, Y7, Y0
	VMULPD Y1, Y7, Y1
	VCVTPD2PSY Y0, X0
	VCVTPD2PSY Y1, X1
	VMOVUPS X0, (DI)
	VMOVUPS X1, 16(DI)
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, DI
	SUBQ $8, CX
	JNZ  sdloop
	VZEROUPPER
	RET

// func sqDiffSumAVX2(p, t *float32, n int, s *[16]float64)
// s[j] = Σ (float64(p[i]) - float64(t[i]))² over i ≡ j (mod 16); n is a positive
// multiple of 16.
TEXT ·sqDiffSumAVX2(SB), NOSPLIT, $0-32
	MOVQ p+0(FP), SI
	MOVQ t+8(FP), DX
	MOVQ n+16(FP), CX
	MOVQ s+24(FP), DI
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
sqloop:
	VCVTPS2PD (SI), Y4
	VCVTPS2PD 16(SI), Y5
	VCVTPS2PD 32(SI), Y6
	VCVTPS2PD 48(SI), Y7
	VCVTPS2PD (DX), Y8
	VCVTPS2PD 16(DX), Y9
	VCVTPS2PD 32(DX), Y10
	VCVTPS2PD 48(DX), Y11
	VSUBPD Y8, Y4, Y4
	VSUBPD Y9, Y5, Y5
	VSUBPD Y10, Y6, Y6
	VSUBPD Y11, Y7, Y7
	VMULPD Y4, Y4, Y4
	VMULPD Y5, Y5, Y5
	VMULPD Y6, Y6, Y6
	VMULPD Y7, Y7, Y7
	VADDPD Y4, Y0, Y0
	VADDPD Y5, Y1, Y1
	VADDPD Y6, Y2, Y2
	VADDPD Y7, Y3, Y3
	ADDQ $64, SI
	ADDQ $64, DX
	SUBQ $16, CX
	JNZ  sqloop
	VMOVUPD Y0, 0(DI)
	VMOVUPD Y1, 32(DI)
	VMOVUPD Y2, 64(DI)
	VMOVUPD Y3, 96(DI)
	VZEROUPPER
	RET

// func addAVX2(dst, x *float32, n int)
// dst[i] += x[i]; n > 0. The last n mod 8 elements go through masked loads and stores.
TEXT ·addAVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	MOVQ CX, DX
	ANDQ $7, DX
	ANDQ $-8, CX
	JZ   atail
	CMPQ CX, $32
	JLT  aone
aloop4:
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	VADDPS (SI), Y0, Y0
	VADDPS 32(SI), Y1, Y1
	VADDPS 64(SI), Y2, Y2
	VADDPS 96(SI), Y3, Y3
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ $128, DI
	ADDQ $128, SI
	SUBQ $32, CX
	CMPQ CX, $32
	JGE  aloop4
	TESTQ CX, CX
	JZ   atail
aone:
	VMOVUPS (DI), Y0
	VADDPS (SI), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	ADDQ $32, SI
	SUBQ $8, CX
	JNZ  aone
atail:
	TESTQ DX, DX
	JZ    adone
	TAILMASK
	VMASKMOVPS (DI), Y4, Y0
	VMASKMOVPS (SI), Y4, Y1
	VADDPS     Y1, Y0, Y0
	VMASKMOVPS Y0, Y4, (DI)
adone:
	VZEROUPPER
	RET

// GELUD8 stores dx = gr·(s + 2x·s·(1−s)·c1·(1 + c3·x·x)) for the eight x in Y0 and s in
// Y1 at (DX), gr at (R8), with Y8 = c1, Y10 = c3 and Y9 = 1 broadcast, each operation
// rounded in the order of GELUGrad's scalar loop; it clobbers Y2, Y3 and Y4.
#define GELUD8 \
	VADDPS Y0, Y0, Y2 \
	VMULPS Y1, Y2, Y2 \
	VSUBPS Y1, Y9, Y3 \
	VMULPS Y3, Y2, Y2 \
	VMULPS Y8, Y2, Y2 \
	VMULPS Y0, Y10, Y4 \
	VMULPS Y0, Y4, Y4 \
	VADDPS Y9, Y4, Y4 \
	VMULPS Y4, Y2, Y2 \
	VADDPS Y2, Y1, Y2 \
	VMULPS (R8), Y2, Y2 \
	VMOVUPS Y2, (DX)

// func geluGradAVX2(x, s, gr, dx *float32, n int, c1, c3, one float32)
// dx[i] = gr[i]·(s + 2x·s·(1−s)·c1·(1 + c3·x·x)) with s = s[i], x = x[i], each operation
// rounded in the order of GELUGrad's scalar loop; n is a positive multiple of 8.
TEXT ·geluGradAVX2(SB), NOSPLIT, $0-52
	MOVQ x+0(FP), SI
	MOVQ s+8(FP), DI
	MOVQ gr+16(FP), R8
	MOVQ dx+24(FP), DX
	MOVQ n+32(FP), CX
	VBROADCASTSS c1+40(FP), Y8
	VBROADCASTSS c3+44(FP), Y10
	VBROADCASTSS one+48(FP), Y9
ggloop:
	VMOVUPS (SI), Y0
	VMOVUPS (DI), Y1
	GELUD8
	ADDQ $32, SI
	ADDQ $32, DI
	ADDQ $32, R8
	ADDQ $32, DX
	SUBQ $8, CX
	JNZ  ggloop
	VZEROUPPER
	RET


// func softmaxExpScaleAVX2(x *float32, n int, shift float32)
// x[i] = exp(x[i] − shift) in place, 0 where x[i] − shift < C_lo or is NaN (as
// expShiftSumAVX2), s = their sum in ExpShiftSum's order (eight partials, combined
// pairwise), then x[i] = (1/s)·x[i]; n > 0, and s ≥ 1 (shift is the maximum of x).
// The last n mod 8 elements are loaded masked and stored one by one.
TEXT ·softmaxExpScaleAVX2(SB), NOSPLIT, $32-20
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSS shift+16(FP), Y7
	MOVQ SI, DI
	MOVQ CX, R8
	VXORPS Y6, Y6, Y6
	MOVQ CX, DX
	ANDQ $7, DX
	SHRQ $3, CX
	JZ   etail
eloop:
	VMOVUPS (SI), Y0
	VSUBPS Y7, Y0, Y0
	VCMPPS $0x1d, C_lo, Y0, Y5 // Y5 = Y0 ≥ C_lo (ordered: false for NaN)
	EXP8
	VANDPS Y5, Y0, Y0
	VMOVUPS Y0, (SI)
	VADDPS Y0, Y6, Y6
	ADDQ $32, SI
	DECQ CX
	JNZ  eloop
etail:
	TESTQ DX, DX
	JZ   esum
	TAILMASK
	VMASKMOVPS (SI), Y4, Y0
	VSUBPS Y7, Y0, Y0
	VCMPPS $0x1d, C_lo, Y0, Y5
	VANDPS Y4, Y5, Y5 // and only the tail's lanes
	EXP8
	VANDPS Y5, Y0, Y0
	VADDPS Y0, Y6, Y6
	// The tail's lanes go back one by one (a masked store is slow on some CPUs).
	VMOVUPS Y0, buf-32(SP)
	SHRQ $2, DX
	XORQ AX, AX
etail1:
	MOVL buf-32(SP)(AX*4), BX
	MOVL BX, (SI)(AX*4)
	INCQ AX
	CMPQ AX, DX
	JNE  etail1
esum:
	// s[j] += s[j+4], s[j] += s[j+2], s[0] += s[1]
	VEXTRACTF128 $1, Y6, X1
	VADDPS X1, X6, X0
	VMOVHLPS X0, X0, X1
	VADDPS X1, X0, X0
	VMOVSHDUP X0, X1
	VADDSS X1, X0, X0
	VMOVSS C_one, X1
	VDIVSS X0, X1, X1 // 1/s
	VBROADCASTSS X1, Y1
	MOVQ R8, CX
	MOVQ R8, DX
	ANDQ $7, DX
	SHRQ $3, CX
	JZ   stail
sloop:
	VMULPS (DI), Y1, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, DI
	DECQ CX
	JNZ  sloop
stail:
	TESTQ DX, DX
	JZ   sdone
stail1:
	VMULSS (DI), X1, X0
	VMOVSS X0, (DI)
	ADDQ $4, DI
	DECQ DX
	JNZ  stail1
sdone:
	VZEROUPPER
	RET

// func sqNormsAVX2(out, x *float32, rows, d, ld int)
// out[r] = Σ_i x[r·ld + i]² over i < d, the squares summed in lane i mod 8, then LANES8;
// rows > 0, d > 0. A row's last d mod 8 elements go through masked loads.
TEXT ·sqNormsAVX2(SB), NOSPLIT, $0-40
	MOVQ  out+0(FP), DI
	MOVQ  x+8(FP), SI
	MOVQ  rows+16(FP), R8
	MOVQ  d+24(FP), R9
	MOVQ  ld+32(FP), R10
	SHLQ  $2, R10
	MOVQ  R9, DX
	ANDQ  $7, DX
	MOVQ  DX, R11
	TESTQ DX, DX
	JZ    snrow
	TAILMASK
snrow:
	VXORPS Y6, Y6, Y6
	MOVQ   SI, BX
	MOVQ   R9, CX
	SHRQ   $3, CX
	JZ     sntail
snloop:
	VMOVUPS (BX), Y0
	VMULPS  Y0, Y0, Y0
	VADDPS  Y0, Y6, Y6
	ADDQ    $32, BX
	DECQ    CX
	JNZ     snloop
sntail:
	TESTQ R11, R11
	JZ    snsum
	VMASKMOVPS (BX), Y4, Y0
	VMULPS     Y0, Y0, Y0
	VADDPS     Y0, Y6, Y6
snsum:
	LANES8
	VMOVSS X6, (DI)
	ADDQ   $4, DI
	ADDQ   R10, SI
	DECQ   R8
	JNZ    snrow
	VZEROUPPER
	RET

// ZTERMMASKS sets the masks of the terms' choice for a two-component sixteen-lane loop
// (MS2ZROW, MC2ZROW) from R8 and R12 (32 times the first and second component's term):
// K5, K6 for the first (the squared distance, the dot product), K7, K1 for the second;
// K2 all ones.
#define ZTERMMASKS \
	KXORW        K5, K5, K5 \
	KXORW        K6, K6, K6 \
	KXORW        K7, K7, K7 \
	KXORW        K1, K1, K1 \
	KXNORW       K0, K0, K2 \
	CMPQ         R8, $32 \
	JNE          zk6 \
	KMOVW        K2, K5 \
zk6: \
	TESTQ        R8, R8 \
	JNZ          zk7 \
	KMOVW        K2, K6 \
zk7: \
	CMPQ         R12, $32 \
	JNE          zk1 \
	KMOVW        K2, K7 \
zk1: \
	TESTQ        R12, R12 \
	JNZ          zkdone \
	KMOVW        K2, K1 \
zkdone:

// MS2ZROW is mixScores2AVX2's sixteen-lane loop over the CX > 0 elements of a row (e0 at
// DI, e1 at R11, dots at SI, kk at DX; Z4 = qq, Z8 = c0, Z10 = c1, Z5 = 1, Z14 = 0, the
// masks of ZTERMMASKS, R13 = rational1): the largest score into Z11 and the NaN lanes into
// K3 (both set by the caller); it clobbers AX, CX, R10, K2, K4 and the pointers.
#define MS2ZROW \
	MOVQ         CX, R10 \
	SHRQ         $4, R10 \
	JZ           m2ztail \
m2zloop: \
	VMOVUPS (SI), Z1 \
	VMOVUPS (DX), Z2 \
	ZTERMS2 \
	ZSCALETERM(Z8, K5, K6, Z0) \
	VMOVUPS Z0, (DI) \
	VCMPPS  $3, Z0, Z0, K4 \
	KORW    K4, K3, K3 \
	VMAXPS  Z0, Z11, Z11 \
	ZSCALETERM(Z10, K7, K1, Z0) \
	TESTQ   R13, R13 \
	JNZ     m2zval \
	VMOVUPS Z0, (R11) \
	VCMPPS  $3, Z0, Z0, K4 \
	KORW    K4, K3, K3 \
	VMAXPS  Z0, Z11, Z11 \
	JMP     m2znext \
m2zval: \
	VADDPS  Z5, Z0, Z0 \
	VDIVPS  Z0, Z5, Z0 \
	VMOVUPS Z0, (R11) \
m2znext: \
	ADDQ    $64, SI \
	ADDQ    $64, DX \
	ADDQ    $64, DI \
	ADDQ    $64, R11 \
	DECQ    R10 \
	JNZ     m2zloop \
m2ztail: \
	ANDQ      $15, CX \
	JZ        m2zend \
	MOVL      $1, AX \
	SHLL      CX, AX \
	DECL      AX \
	KMOVW     AX, K2 \
	VMOVUPS.Z (SI), K2, Z1 \
	VMOVUPS.Z (DX), K2, Z2 \
	ZTERMS2 \
	ZSCALETERM(Z8, K5, K6, Z0) \
	VMOVUPS   Z0, K2, (DI) \
	VCMPPS    $3, Z0, Z0, K2, K4 \
	KORW      K4, K3, K3 \
	VMAXPS    Z0, Z11, K2, Z11 \
	ZSCALETERM(Z10, K7, K1, Z0) \
	TESTQ     R13, R13 \
	JNZ       m2ztval \
	VMOVUPS   Z0, K2, (R11) \
	VCMPPS    $3, Z0, Z0, K2, K4 \
	KORW      K4, K3, K3 \
	VMAXPS    Z0, Z11, K2, Z11 \
	JMP       m2zend \
m2ztval: \
	VADDPS    Z5, Z0, Z0 \
	VDIVPS    Z0, Z5, Z0 \
	VMOVUPS   Z0, K2, (R11) \
m2zend:

// XS2ZROW is expShiftSum2AVX2's sixteen-lane loop over the CX > 0 elements of a row (e0
// at DI, e1 at SI; Z9 = s0, Z10 = s1, Z8 = 1, R8 = values1): the sums into Y6 and Y12;
// it clobbers AX, CX, R10, K1, K2, Z0–Z3, Z7, Z11 and the pointers.
#define XS2ZROW \
	MOVQ         CX, R10 \
	SHRQ         $4, R10 \
	JZ           x2ztail \
x2zloop: \
	VMOVUPS (DI), Z0 \
	VMOVAPS Z9, Z7 \
	EXPCS16 \
	VMOVAPS Z0, Z11 \
	ADDHALVES(Y6) \
	TESTQ   R8, R8 \
	JNZ     x2zval \
	VMOVUPS (SI), Z0 \
	VMOVAPS Z10, Z7 \
	EXPCS16 \
	JMP     x2zadd \
x2zval: \
	VMULPS  (SI), Z10, Z0 \
x2zadd: \
	ADDHALVES(Y12) \
	VADDPS  Z11, Z0, Z0 \
	VMOVUPS Z0, (DI) \
	ADDQ    $64, SI \
	ADDQ    $64, DI \
	DECQ    R10 \
	JNZ     x2zloop \
x2ztail: \
	ANDQ      $15, CX \
	JZ        x2zend \
	MOVL      $1, AX \
	SHLL      CX, AX \
	DECL      AX \
	KMOVW     AX, K2 \
	VMOVUPS.Z (DI), K2, Z0 \
	VMOVAPS   Z9, Z7 \
	EXPCS16 \
	VMOVAPS.Z Z0, K2, Z0 \
	VMOVAPS   Z0, Z11 \
	ADDHALVES(Y6) \
	VMOVUPS.Z (SI), K2, Z0 \
	TESTQ     R8, R8 \
	JNZ       x2ztval \
	VMOVAPS   Z10, Z7 \
	EXPCS16 \
	JMP       x2ztadd \
x2ztval: \
	VMULPS    Z10, Z0, Z0 \
x2ztadd: \
	VMOVAPS.Z Z0, K2, Z0 \
	ADDHALVES(Y12) \
	VADDPS    Z11, Z0, Z0 \
	VMOVUPS   Z0, K2, (DI) \
	JMP       x2zend \
x2zend:

// MSHZROW is mixShareAVX2's sixteen-lane loop over the CX > 0 elements of a row (g at
// DI, d at BX, p at R11, dots at SI, kk at DX; Z4 = qq, Z8 = c, Z7 = shift, Z9 = delta,
// Z10 = f, Z14 = 0, R8 = 32·term, R13 = rational): the sums into Y11 and Y15; it clobbers
// AX, CX, R10, K1, K2, Z0–Z3, Z12 and the pointers.
#define MSHZROW \
	MOVQ         CX, R10 \
	SHRQ         $4, R10 \
	JZ           msztail \
mszloop: \
	VMOVUPS (SI), Z0 \
	TESTQ   R8, R8 \
	JZ      mszterm \
	VADDPS  (DX), Z4, Z1 \
	VFMADD231PS.BCST vneg2<>(SB), Z0, Z1 \
	VMAXPS  Z1, Z14, Z0 \
	CMPQ    R8, $64 \
	JNE     mszterm \
	VSQRTPS Z0, Z0 \
mszterm: \
	TESTQ   R13, R13 \
	JNZ     mszval \
	EXPCS16 \
	JMP     mszgot \
mszval: \
	VMULPS  Z8, Z0, Z0 \
	VADDPS.BCST C_one, Z0, Z0 \
	VBROADCASTSS C_one, Z3 \
	VDIVPS  Z0, Z3, Z0 \
mszgot: \
	VMULPS  Z10, Z0, Z0 \
	VMOVUPS (BX), Z12 \
	VSUBPS  Z9, Z12, Z12 \
	VMULPS  Z12, Z0, Z0 \
	VMOVUPS Z0, (DI) \
	ADDHALVES(Y11) \
	VMULPS  (R11), Z12, Z2 \
	VSUBPS  Z0, Z2, Z0 \
	VMOVUPS Z0, (BX) \
	VMOVAPS Z2, Z0 \
	ADDHALVES(Y15) \
	ADDQ    $64, SI \
	ADDQ    $64, DX \
	ADDQ    $64, DI \
	ADDQ    $64, BX \
	ADDQ    $64, R11 \
	DECQ    R10 \
	JNZ     mszloop \
msztail: \
	ANDQ      $15, CX \
	JZ        mszend \
	MOVL      $1, AX \
	SHLL      CX, AX \
	DECL      AX \
	KMOVW     AX, K2 \
	VMOVUPS.Z (SI), K2, Z0 \
	TESTQ     R8, R8 \
	JZ        msztterm \
	VMOVUPS.Z (DX), K2, Z2 \
	VADDPS    Z2, Z4, Z1 \
	VFMADD231PS.BCST vneg2<>(SB), Z0, Z1 \
	VMAXPS    Z1, Z14, Z0 \
	CMPQ      R8, $64 \
	JNE       msztterm \
	VSQRTPS   Z0, Z0 \
msztterm: \
	TESTQ     R13, R13 \
	JNZ       msztval \
	EXPCS16 \
	JMP       msztgot \
msztval: \
	VMULPS    Z8, Z0, Z0 \
	VADDPS.BCST C_one, Z0, Z0 \
	VBROADCASTSS C_one, Z3 \
	VDIVPS    Z0, Z3, Z0 \
msztgot: \
	VMOVAPS.Z Z0, K2, Z0 \
	VMULPS    Z10, Z0, Z0 \
	VMOVUPS.Z (BX), K2, Z12 \
	VSUBPS    Z9, Z12, Z12 \
	VMULPS    Z12, Z0, Z0 \
	VMOVUPS   Z0, K2, (DI) \
	VMOVAPS.Z Z0, K2, Z0 \
	ADDHALVES(Y11) \
	VMOVUPS.Z (R11), K2, Z3 \
	VMULPS    Z3, Z12, Z2 \
	VMOVAPS.Z Z2, K2, Z2 \
	VSUBPS    Z0, Z2, Z0 \
	VMOVUPS   Z0, K2, (BX) \
	VMOVAPS   Z2, Z0 \
	ADDHALVES(Y15) \
	JMP       mszend \
mszend:

// ZLINCOEF is one linear component's part of MC2ZROW's loop: from its score gradients
// at (src) and its term x (c its factor, term 32·its term), their products with the term
// into the lanes of ax, and c·g (over 2r for a distance, ZDISTDIV) into Z0, the lanes of as
// and cs at (BX), then −2·that into Z0 for a distance; a dot product's term jumps to
// skip with c·g in Z0. lsq and skip are the caller's labels.
#define ZLINCOEF(src, x, c, term, ax, as, lsq, skip) \
	VMOVUPS (src), Z0 \
	VMULPS  x, Z0, Z2 \
	ADDZ(Z2, Y2, ax, Y3) \
	VMULPS  c, Z0, Z0 \
	TESTQ   term, term \
	JZ      skip \
	CMPQ    term, $64 \
	JNE     lsq \
	VMOVAPS x, Z19 \
	ZDISTDIV(Z19) \
lsq: \
	ADDZ(Z0, Y0, as, Y3) \
	VADDPS  (BX), Z0, Z2 \
	VMOVUPS Z2, (BX) \
	VMULPS  Z7, Z0, Z0

// ZLINCOEFT is ZLINCOEF for a row's tail, its lanes in K2 (the others zeroed before the
// sums and left as they were in cs).
#define ZLINCOEFT(src, x, c, term, ax, as, lsq, skip) \
	VMOVUPS.Z (src), K2, Z0 \
	VMULPS    x, Z0, Z2 \
	VMOVAPS.Z Z2, K2, Z2 \
	ADDZ(Z2, Y2, ax, Y3) \
	VMULPS    c, Z0, Z0 \
	TESTQ     term, term \
	JZ        skip \
	CMPQ      term, $64 \
	JNE       lsq \
	VMOVAPS   x, Z19 \
	ZDISTDIV(Z19) \
lsq: \
	VMOVAPS.Z Z0, K2, Z0 \
	ADDZ(Z0, Y0, as, Y3) \
	VMOVUPS.Z (BX), K2, Z2 \
	VADDPS    Z2, Z0, Z2 \
	VMOVUPS   Z2, K2, (BX) \
	VMULPS    Z7, Z0, Z0

// MC2ZROW is mixCoefs2AVX2's sixteen-lane loop over the CX > 0 elements of a row (d at
// DI, g at R11, dots at SI, kk at DX, cs at BX; Z4 = qq, Z8 = cb, Z10 = ca, Z7 = −2, Z5 =
// Z14 = 0, the masks of ZTERMMASKS, R13 = rationalA): the sums into Y6, Y9, Y11 and Y15;
// it clobbers AX, CX, R10, K2, K4, Z0–Z3, Z12, Z13, Z16–Z19 and the pointers.
#define MC2ZROW \
	MOVQ         CX, R10 \
	SHRQ         $4, R10 \
	JZ           mcztail \
mczloop: \
	VMOVUPS (SI), Z1 \
	VMOVUPS (DX), Z2 \
	ZTERMS2 \
	ZPICK(K5, K6, Z17) \
	ZPICK(K7, K1, Z18) \
	ZLINCOEF(DI, Z17, Z8, R8, Y6, Y9, mczbsq, mczbset) \
mczbset: \
	VMOVAPS Z0, Z16 \
	TESTQ   R13, R13 \
	JNZ     mczarat \
	ZLINCOEF(R11, Z18, Z10, R12, Y11, Y15, mczasq, mczaadd) \
	JMP     mczaadd \
mczarat: \
	VMOVUPS (R11), Z0 \
	VADDPS  Z10, Z18, Z2 \
	VDIVPS  Z2, Z0, Z0 \
	VMULPS  Z18, Z0, Z3 \
	ADDZ(Z3, Y3, Y11, Y2) \
	VPXORD.BCST vsign<>(SB), Z0, Z0 \
	ADDZ(Z0, Y0, Y15, Y3) \
	VADDPS  (BX), Z0, Z2 \
	VMOVUPS Z2, (BX) \
	VMULPS  Z7, Z0, Z0 \
mczaadd: \
	VADDPS  Z16, Z0, Z0 \
	VMOVUPS Z0, (DI) \
	ADDQ    $64, SI \
	ADDQ    $64, DX \
	ADDQ    $64, DI \
	ADDQ    $64, R11 \
	ADDQ    $64, BX \
	DECQ    R10 \
	JNZ     mczloop \
mcztail: \
	ANDQ      $15, CX \
	JZ        mczend \
	MOVL      $1, AX \
	SHLL      CX, AX \
	DECL      AX \
	KMOVW     AX, K2 \
	VMOVUPS.Z (SI), K2, Z1 \
	VMOVUPS.Z (DX), K2, Z2 \
	ZTERMS2 \
	ZPICK(K5, K6, Z17) \
	ZPICK(K7, K1, Z18) \
	ZLINCOEFT(DI, Z17, Z8, R8, Y6, Y9, mcztbsq, mcztbset) \
mcztbset: \
	VMOVAPS.Z Z0, K2, Z16 \
	TESTQ     R13, R13 \
	JNZ       mcztarat \
	ZLINCOEFT(R11, Z18, Z10, R12, Y11, Y15, mcztasq, mcztaadd) \
	JMP       mcztaadd \
mcztarat: \
	VMOVUPS.Z (R11), K2, Z0 \
	VADDPS    Z10, Z18, Z2 \
	VDIVPS    Z2, Z0, Z0 \
	VMULPS    Z18, Z0, Z3 \
	VMOVAPS.Z Z3, K2, Z3 \
	ADDZ(Z3, Y3, Y11, Y2) \
	VPXORD.BCST vsign<>(SB), Z0, Z0 \
	VMOVAPS.Z Z0, K2, Z0 \
	ADDZ(Z0, Y0, Y15, Y3) \
	VMOVUPS.Z (BX), K2, Z2 \
	VADDPS    Z2, Z0, Z2 \
	VMOVUPS   Z2, K2, (BX) \
	VMULPS    Z7, Z0, Z0 \
mcztaadd: \
	VADDPS    Z16, Z0, Z0 \
	VMOVUPS   Z0, K2, (DI) \
mczend:

// func mixScores2AVX2(e0, e1, dots, kk *float32, n int, qq, c0, c1 float32, t0, t1 int, rational1, wide bool) float32
// e0 = c0·x0 and e1 = c1·x1 with x0, x1 the terms t0, t1 (TERMS3's), and returns the
// largest of both, NaN when one is NaN (scaleMaxAVX2's and sqDistScaleMaxAVX2's rules);
// if rational1, e1 = 1/(1 + c1·x1) (recip1pAVX2's roundings) instead, out of the largest.
// n > 0. The last n mod 8 elements go through masked loads and stores, the other lanes
// −Inf for the maximum. With wide (the CPU has AVX-512F), sixteen elements at a time go
// through zmm registers (MS2ZROW), the last n mod 16 through the mask K2, with the same
// bits (the largest by value: of a +0 and a −0 either may come back).
TEXT ·mixScores2AVX2(SB), NOSPLIT, $96-84
	MOVQ         e0+0(FP), DI
	MOVQ         e1+8(FP), R11
	MOVQ         dots+16(FP), SI
	MOVQ         kk+24(FP), DX
	MOVQ         n+32(FP), CX
	VBROADCASTSS qq+40(FP), Y4
	VBROADCASTSS c0+44(FP), Y8
	VBROADCASTSS c1+48(FP), Y10
	MOVQ         t0+56(FP), R8
	SHLQ         $5, R8
	MOVQ         t1+64(FP), R12
	SHLQ         $5, R12
	MOVBLZX      rational1+72(FP), R13
	VMOVUPS      C_one, Y5
	VXORPS       Y14, Y14, Y14
	MOVL         $0xff800000, AX // −Inf
	MOVL         AX, X7
	VBROADCASTSS X7, Y7
	VMOVAPS      Y7, Y11
	VXORPS       Y3, Y3, Y3
	MOVBLZX      wide+73(FP), R10
	TESTQ        R10, R10
	JZ           m2narrow
	VBROADCASTSS qq+40(FP), Z4
	VBROADCASTSS c0+44(FP), Z8
	VBROADCASTSS c1+48(FP), Z10
	VBROADCASTSS C_one, Z5
	VBROADCASTSS X7, Z11
	KXORW        K3, K3, K3 // the NaN lanes
	ZTERMMASKS
	MS2ZROW
m2zdone: // the largest of both halves, and the NaN lanes as the eight-lane loop keeps them
	VEXTRACTF64X4 $1, Z11, Y0
	VMAXPS        Y0, Y11, Y11
	KORTESTW      K3, K3
	JZ            m2done
	VPCMPEQD      Y3, Y3, Y3
	JMP           m2done
m2narrow:
	MOVQ         CX, R10
	ANDQ         $7, R10
	SHRQ         $3, CX
	JZ           m2tail
m2loop:
	VMOVUPS (SI), Y1
	VMOVUPS (DX), Y2
	TERMS3
	VMULPS  (SP)(R8*1), Y8, Y0
	VMOVUPS Y0, (DI)
	VCMPPS  $3, Y0, Y0, Y2 // unordered: the NaN lanes
	VORPS   Y2, Y3, Y3
	VMAXPS  Y0, Y11, Y11
	VMULPS  (SP)(R12*1), Y10, Y0
	TESTQ   R13, R13
	JNZ     m2val
	VMOVUPS Y0, (R11)
	VCMPPS  $3, Y0, Y0, Y2
	VORPS   Y2, Y3, Y3
	VMAXPS  Y0, Y11, Y11
	JMP     m2next
m2val:
	VADDPS  Y5, Y0, Y0
	VDIVPS  Y0, Y5, Y0
	VMOVUPS Y0, (R11)
m2next:
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, DI
	ADDQ    $32, R11
	DECQ    CX
	JNZ     m2loop
m2tail:
	TESTQ      R10, R10
	JZ         m2done
	LEAQ       tailmask<>+32(SB), AX
	SHLQ       $2, R10
	SUBQ       R10, AX
	VMOVUPS    (AX), Y9
	VMASKMOVPS (SI), Y9, Y1
	VMASKMOVPS (DX), Y9, Y2
	TERMS3
	VMULPS     (SP)(R8*1), Y8, Y0
	VMASKMOVPS Y0, Y9, (DI)
	VBLENDVPS  Y9, Y0, Y7, Y0 // the tail's lanes, −Inf in the others
	VCMPPS     $3, Y0, Y0, Y2
	VORPS      Y2, Y3, Y3
	VMAXPS     Y0, Y11, Y11
	VMULPS     (SP)(R12*1), Y10, Y0
	TESTQ      R13, R13
	JNZ        m2tval
	VMASKMOVPS Y0, Y9, (R11)
	VBLENDVPS  Y9, Y0, Y7, Y0
	VCMPPS     $3, Y0, Y0, Y2
	VORPS      Y2, Y3, Y3
	VMAXPS     Y0, Y11, Y11
	JMP        m2done
m2tval:
	VADDPS     Y5, Y0, Y0
	VDIVPS     Y0, Y5, Y0
	VMASKMOVPS Y0, Y9, (R11)
m2done:
	VMOVAPS   Y11, Y0
	LANESMAX
	VMOVMSKPS Y3, AX
	TESTL     AX, AX
	JZ        m2ret
	MOVL      $0x7fc00000, AX // NaN
	MOVL      AX, X0
m2ret:
	VMOVSS X0, ret+80(FP)
	VZEROUPPER
	RET

// func expShiftSum2AVX2(e0, e1 *float32, n int, s0, s1 float32, values1, wide bool) (sum0, sum1 float32)
// v0 = exp(e0 − s0), v1 = exp(e1 − s1) as expScaleShiftSumAVX2 forms them at c = 1 (v1 =
// s1·e1 if values1), e0 = v0 + v1, and returns Σ v0 and Σ v1 in its lanes and order;
// n > 0. The last n mod 8 elements go through masked loads and stores. With wide (the CPU
// has AVX-512F), sixteen elements at a time go through zmm registers first (XS2ZROW), with
// the same bits.
TEXT ·expShiftSum2AVX2(SB), NOSPLIT, $0-48
	MOVQ         e0+0(FP), DI
	MOVQ         e1+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSS s0+24(FP), Y9
	VBROADCASTSS s1+28(FP), Y10
	MOVBLZX      values1+32(FP), R8
	VMOVUPS      C_one, Y8
	VXORPS       Y6, Y6, Y6
	VXORPS       Y12, Y12, Y12
	MOVBLZX      wide+33(FP), R10
	TESTQ        R10, R10
	JZ           x2narrow
	VBROADCASTSS s0+24(FP), Z9
	VBROADCASTSS s1+28(FP), Z10
	VBROADCASTSS C_one, Z8
	XS2ZROW
	JMP          x2done
x2narrow:
	MOVQ         CX, DX
	ANDQ         $7, DX
	SHRQ         $3, CX
	JZ           x2tail
x2loop:
	VMOVUPS (DI), Y0
	VMOVAPS Y9, Y7
	EXPCS8
	VMOVAPS Y0, Y11
	VADDPS  Y0, Y6, Y6
	TESTQ   R8, R8
	JNZ     x2val
	VMOVUPS (SI), Y0
	VMOVAPS Y10, Y7
	EXPCS8
	JMP     x2add
x2val:
	VMULPS  (SI), Y10, Y0
x2add:
	VADDPS  Y0, Y12, Y12
	VADDPS  Y11, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	DECQ    CX
	JNZ     x2loop
x2tail:
	TESTQ      DX, DX
	JZ         x2done
	TAILMASK
	VMASKMOVPS (DI), Y4, Y0
	VMOVAPS    Y9, Y7
	EXPCS8
	VANDPS     Y4, Y0, Y0 // only the tail's lanes
	VMOVAPS    Y0, Y11
	VADDPS     Y0, Y6, Y6
	VMASKMOVPS (SI), Y4, Y0
	TESTQ      R8, R8
	JNZ        x2tval
	VMOVAPS    Y10, Y7
	EXPCS8
	JMP        x2tand
x2tval:
	VMULPS     Y10, Y0, Y0
x2tand:
	VANDPS     Y4, Y0, Y0
	VADDPS     Y0, Y12, Y12
	VADDPS     Y11, Y0, Y0
	VMASKMOVPS Y0, Y4, (DI)
x2done:
	LANES8
	VMOVSS  X6, sum0+40(FP)
	VMOVAPS Y12, Y6
	LANES8
	VMOVSS  X6, sum1+44(FP)
	VZEROUPPER
	RET

// func mixShareAVX2(gr, d, p, dots, kk *float32, n int, qq, c, shift, delta, f float32, term int, rational, wide bool) (sg, sd float32)
// g = (f·e)·(d − delta) with e = exp(c·x − shift) of the term x (TERMS3's), as
// expScoreGradAVX2 forms it (if rational, e = 1/(1 + c·x) as recip1pAVX2 forms it, and g
// as scoreGradSumAVX2 forms it at scale f), then v = p·(d − delta) and d = v − g as
// scoreGradSubAVX2 forms them; returns Σ g and Σ v in their lanes and order; n > 0. The
// last n mod 8 elements go through masked loads and stores, their lanes masked out of the
// sums. With wide (the CPU has AVX-512F), sixteen elements at a time go through zmm
// registers first (MSHZROW), with the same bits.
TEXT ·mixShareAVX2(SB), NOSPLIT, $0-96
	MOVQ         gr+0(FP), DI
	MOVQ         d+8(FP), BX
	MOVQ         p+16(FP), R11
	MOVQ         dots+24(FP), SI
	MOVQ         kk+32(FP), DX
	MOVQ         n+40(FP), CX
	VBROADCASTSS qq+48(FP), Y4
	VBROADCASTSS c+52(FP), Y8
	VBROADCASTSS shift+56(FP), Y7
	VBROADCASTSS delta+60(FP), Y9
	VBROADCASTSS f+64(FP), Y10
	MOVQ         term+72(FP), R8
	SHLQ         $5, R8
	MOVBLZX      rational+80(FP), R13
	VXORPS       Y14, Y14, Y14
	VXORPS       Y11, Y11, Y11
	VXORPS       Y15, Y15, Y15
	MOVBLZX      wide+81(FP), R10
	TESTQ        R10, R10
	JZ           msnarrow
	VBROADCASTSS qq+48(FP), Z4
	VBROADCASTSS c+52(FP), Z8
	VBROADCASTSS shift+56(FP), Z7
	VBROADCASTSS delta+60(FP), Z9
	VBROADCASTSS f+64(FP), Z10
	MSHZROW
	JMP          msdone
msnarrow:
	MOVQ         CX, R10
	ANDQ         $7, R10
	SHRQ         $3, CX
	JZ           mstail
msloop:
	VMOVUPS (SI), Y0
	TESTQ   R8, R8
	JZ      msterm // the dot product itself
	VADDPS  (DX), Y4, Y1
	VFMADD231PS vneg2<>(SB), Y0, Y1
	VMAXPS  Y1, Y14, Y0
	CMPQ    R8, $64
	JNE     msterm
	VSQRTPS Y0, Y0
msterm:
	TESTQ   R13, R13
	JNZ     msval
	EXPCS8
	JMP     msgot
msval:
	VMULPS  Y8, Y0, Y0
	VADDPS  C_one, Y0, Y0
	VMOVUPS C_one, Y3
	VDIVPS  Y0, Y3, Y0
msgot:
	VMULPS  Y10, Y0, Y0
	VMOVUPS (BX), Y1
	VSUBPS  Y9, Y1, Y1
	VMULPS  Y1, Y0, Y0
	VMOVUPS Y0, (DI)
	VADDPS  Y0, Y11, Y11
	VMULPS  (R11), Y1, Y2
	VADDPS  Y2, Y15, Y15
	VSUBPS  Y0, Y2, Y2
	VMOVUPS Y2, (BX)
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, DI
	ADDQ    $32, BX
	ADDQ    $32, R11
	DECQ    CX
	JNZ     msloop
mstail:
	TESTQ      R10, R10
	JZ         msdone
	LEAQ       tailmask<>+32(SB), AX
	SHLQ       $2, R10
	SUBQ       R10, AX
	VMOVUPS    (AX), Y6
	VMASKMOVPS (SI), Y6, Y0
	TESTQ      R8, R8
	JZ         mstterm
	VMASKMOVPS (DX), Y6, Y2
	VADDPS     Y2, Y4, Y1
	VFMADD231PS vneg2<>(SB), Y0, Y1
	VMAXPS     Y1, Y14, Y0
	CMPQ       R8, $64
	JNE        mstterm
	VSQRTPS    Y0, Y0
mstterm:
	TESTQ      R13, R13
	JNZ        mstval
	EXPCS8
	JMP        mstgot
mstval:
	VMULPS     Y8, Y0, Y0
	VADDPS     C_one, Y0, Y0
	VMOVUPS    C_one, Y3
	VDIVPS     Y0, Y3, Y0
mstgot:
	VANDPS     Y6, Y0, Y0 // only the tail's lanes
	VMULPS     Y10, Y0, Y0
	VMASKMOVPS (BX), Y6, Y1
	VSUBPS     Y9, Y1, Y1
	VMULPS     Y1, Y0, Y0
	VMASKMOVPS Y0, Y6, (DI)
	VANDPS     Y6, Y0, Y0
	VADDPS     Y0, Y11, Y11
	VMASKMOVPS (R11), Y6, Y3
	VMULPS     Y3, Y1, Y2
	VANDPS     Y6, Y2, Y2
	VADDPS     Y2, Y15, Y15
	VSUBPS     Y0, Y2, Y2
	VMASKMOVPS Y2, Y6, (BX)
msdone:
	VMOVAPS Y11, Y6
	LANES8
	VMOVSS  X6, sg+88(FP)
	VMOVAPS Y15, Y6
	LANES8
	VMOVSS  X6, sd+92(FP)
	VZEROUPPER
	RET

// func mixCoefs2AVX2(d, gr, dots, kk, cs *float32, n int, qq, cb, ca float32, tb, ta int, rationalA, wide bool) (gxb, sdb, gxa, sda float32)
// distCoefsAVX2(d, …, cb, tb) (linearCoefsAVX2(d, d, dots, …) for tb = 0), then
// linearCoefsAVX2(d, g, x, cs, n, ca, ta, true), with the terms TERMS3 forms; if
// rationalA, ratioGradAVX2(g, x, n, ca), addSumScaleAVX2(g, cs, n, −2) and addAVX2(d, g)
// instead of the second (g is not written). Returns the calls' sums. n > 0; cs is not
// read when both terms are 0. The last n mod 8 elements go through masked loads and
// stores (the mask kept at 96(SP)), each call's tail as its own. With wide (the CPU has
// AVX-512F), sixteen elements at a time go through zmm registers (MC2ZROW), the last n mod
// 16 through the mask K2, with the same bits.
TEXT ·mixCoefs2AVX2(SB), NOSPLIT, $128-104
	MOVQ         d+0(FP), DI
	MOVQ         gr+8(FP), R11
	MOVQ         dots+16(FP), SI
	MOVQ         kk+24(FP), DX
	MOVQ         cs+32(FP), BX
	MOVQ         n+40(FP), CX
	VBROADCASTSS qq+48(FP), Y4
	VBROADCASTSS cb+52(FP), Y8
	VBROADCASTSS ca+56(FP), Y10
	MOVQ         tb+64(FP), R8
	SHLQ         $5, R8
	MOVQ         ta+72(FP), R12
	SHLQ         $5, R12
	MOVBLZX      rationalA+80(FP), R13
	VXORPS       Y5, Y5, Y5
	VXORPS       Y14, Y14, Y14
	MOVL         $0xc0000000, AX // −2
	MOVL         AX, X7
	VBROADCASTSS X7, Y7
	VXORPS       Y6, Y6, Y6
	VXORPS       Y9, Y9, Y9
	VXORPS       Y11, Y11, Y11
	VXORPS       Y15, Y15, Y15
	MOVBLZX      wide+81(FP), R10
	TESTQ        R10, R10
	JZ           mcnarrow
	VBROADCASTSS qq+48(FP), Z4
	VBROADCASTSS cb+52(FP), Z8
	VBROADCASTSS ca+56(FP), Z10
	VBROADCASTSS X7, Z7
	ZTERMMASKS
	MC2ZROW
	JMP          mcdone
mcnarrow:
	MOVQ         CX, R10
	ANDQ         $7, R10
	SHRQ         $3, CX
	JZ           mctail
mcloop:
	VMOVUPS (SI), Y1
	VMOVUPS (DX), Y2
	TERMS3
	VMOVUPS (DI), Y0 // b: its score gradients in d
	VMULPS  (SP)(R8*1), Y0, Y2
	VADDPS  Y2, Y6, Y6
	VMULPS  Y8, Y0, Y0
	TESTQ   R8, R8
	JZ      mcbset
	CMPQ    R8, $64
	JNE     mcbsq
	VMOVUPS 64(SP), Y1
	DISTDIV
mcbsq:
	VADDPS  Y0, Y9, Y9
	VADDPS  (BX), Y0, Y1
	VMOVUPS Y1, (BX)
	VMULPS  Y7, Y0, Y0
mcbset:
	VMOVUPS Y0, (DI)
	TESTQ   R13, R13
	JNZ     mcarat
	VMOVUPS (R11), Y0 // a: its score gradients in g, added
	VMULPS  (SP)(R12*1), Y0, Y2
	VADDPS  Y2, Y11, Y11
	VMULPS  Y10, Y0, Y0
	TESTQ   R12, R12
	JZ      mcaadd
	CMPQ    R12, $64
	JNE     mcasq
	VMOVUPS 64(SP), Y1
	DISTDIV
mcasq:
	VADDPS  Y0, Y15, Y15
	VADDPS  (BX), Y0, Y1
	VMOVUPS Y1, (BX)
	VMULPS  Y7, Y0, Y0
	JMP     mcaadd
mcarat: // a rational: f = g/(ca + x), then −f as the score gradient of a squared distance
	VMOVUPS (R11), Y0
	VMOVUPS (SP)(R12*1), Y1
	VADDPS  Y10, Y1, Y2
	VDIVPS  Y2, Y0, Y0
	VMULPS  Y1, Y0, Y3
	VADDPS  Y3, Y11, Y11
	VXORPS  vsign<>(SB), Y0, Y0
	VADDPS  Y0, Y15, Y15
	VADDPS  (BX), Y0, Y1
	VMOVUPS Y1, (BX)
	VMULPS  Y7, Y0, Y0
mcaadd:
	VADDPS  (DI), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, DI
	ADDQ    $32, R11
	ADDQ    $32, BX
	DECQ    CX
	JNZ     mcloop
mctail:
	TESTQ      R10, R10
	JZ         mcdone
	LEAQ       tailmask<>+32(SB), AX
	SHLQ       $2, R10
	SUBQ       R10, AX
	VMOVUPS    (AX), Y12
	VMOVUPS    Y12, 96(SP)
	VMASKMOVPS (SI), Y12, Y1
	VMASKMOVPS (DX), Y12, Y2
	TERMS3
	VMOVUPS    96(SP), Y12
	VMASKMOVPS (DI), Y12, Y0
	VMULPS     (SP)(R8*1), Y0, Y2
	VANDPS     Y12, Y2, Y2
	VADDPS     Y2, Y6, Y6
	VMULPS     Y8, Y0, Y0
	TESTQ      R8, R8
	JZ         mctbset
	CMPQ       R8, $64
	JNE        mctbsq
	VMOVUPS    64(SP), Y1
	DISTDIV
mctbsq:
	VANDPS     Y12, Y0, Y0 // distCoefsAVX2's tail
	VADDPS     Y0, Y9, Y9
	VMASKMOVPS (BX), Y12, Y1
	VADDPS     Y1, Y0, Y1
	VMASKMOVPS Y1, Y12, (BX)
	VMULPS     Y7, Y0, Y0
mctbset:
	VMASKMOVPS Y0, Y12, (DI)
	TESTQ      R13, R13
	JNZ        mctarat
	VMASKMOVPS (R11), Y12, Y0
	VMULPS     (SP)(R12*1), Y0, Y2
	VANDPS     Y12, Y2, Y2
	VADDPS     Y2, Y11, Y11
	VMULPS     Y10, Y0, Y0
	TESTQ      R12, R12
	JZ         mctaadd
	CMPQ       R12, $64
	JNE        mctasq
	VMOVUPS    64(SP), Y1
	DISTDIV
mctasq:
	VADDPS     Y0, Y15, Y15 // linearCoefsAVX2's tail: the lanes not masked
	VMASKMOVPS (BX), Y12, Y1
	VADDPS     Y1, Y0, Y1
	VMASKMOVPS Y1, Y12, (BX)
	VMULPS     Y7, Y0, Y0
	JMP        mctaadd
mctarat:
	VMASKMOVPS (R11), Y12, Y0
	VMOVUPS    (SP)(R12*1), Y1
	VADDPS     Y10, Y1, Y2
	VDIVPS     Y2, Y0, Y0
	VMULPS     Y1, Y0, Y3
	VANDPS     Y12, Y3, Y3
	VADDPS     Y3, Y11, Y11
	VXORPS     vsign<>(SB), Y0, Y0
	VANDPS     Y12, Y0, Y0
	VADDPS     Y0, Y15, Y15
	VMASKMOVPS (BX), Y12, Y1
	VADDPS     Y1, Y0, Y1
	VMASKMOVPS Y1, Y12, (BX)
	VMULPS     Y7, Y0, Y0
mctaadd:
	VMASKMOVPS (DI), Y12, Y1
	VADDPS     Y1, Y0, Y0
	VMASKMOVPS Y0, Y12, (DI)
mcdone:
	LANES8
	VMOVSS  X6, gxb+88(FP)
	VMOVAPS Y9, Y6
	LANES8
	VMOVSS  X6, sdb+92(FP)
	VMOVAPS Y11, Y6
	LANES8
	VMOVSS  X6, gxa+96(FP)
	VMOVAPS Y15, Y6
	LANES8
	VMOVSS  X6, sda+100(FP)
	VZEROUPPER
	RET

// func prefetchLines(x *float32, n int)
// PREFETCHT0 of each 64-byte line that holds x[0:n]; n > 0.
TEXT ·prefetchLines(SB), NOSPLIT, $0-16
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	LEAQ (SI)(CX*4), CX
	ANDQ $-64, SI
pfloop:
	PREFETCHT0 (SI)
	ADDQ $64, SI
	CMPQ SI, CX
	JB   pfloop
	RET

// The row-block loops: each runs one of the sixteen-lane loops above over the rows of a
// block, a MixRow at a time (vmath.MixRow, its offsets in mixrows.go), in zmm registers
// (AVX-512F); each row's results are the one-row loop's bits. A row of no elements is
// skipped (its results are −Inf or 0). nrows > 0.
#define ROW_E0 0
#define ROW_N 8
#define ROW_E1 24
#define ROW_DOTS 48
#define ROW_KK 72
#define ROW_P 96
#define ROW_CS 120
#define ROW_QQ 144
#define ROW_S0 148
#define ROW_S1 152
#define ROW_S2 156
#define ROW_R0 160
#define ROW_R1 164
#define ROW_R2 168
#define ROW_R3 172
#define ROW_SIZE 176

// func mixScores2Rows512(rows *MixRow, nrows int, c0, c1 float32, t0, t1 int, rational1 bool) (bad int)
// mixScores2AVX2 for each row: R0 the largest of both rows' scores, NaN when one is NaN.
// bad is −1, or the first row whose E1, Dots or (with a distance) KK is shorter than its
// E0, where the loop stopped.
TEXT ·mixScores2Rows512(SB), NOSPLIT, $0-56
	MOVQ         rows+0(FP), BX
	MOVQ         nrows+8(FP), R9
	VBROADCASTSS c0+16(FP), Z8
	VBROADCASTSS c1+20(FP), Z10
	MOVQ         t0+24(FP), R8
	SHLQ         $5, R8
	MOVQ         t1+32(FP), R12
	SHLQ         $5, R12
	MOVBLZX      rational1+40(FP), R13
	VBROADCASTSS C_one, Z5
	VXORPS       Y14, Y14, Y14
	MOVL         $0xff800000, AX // −Inf
	VPBROADCASTD AX, Z7
	ZTERMMASKS
rsrow:
	MOVQ         ROW_N(BX), CX
	TESTQ        CX, CX
	JZ           rsempty
	CMPQ         ROW_E1+8(BX), CX
	JLT          rsbad
	CMPQ         ROW_DOTS+8(BX), CX
	JLT          rsbad
	MOVQ         R8, AX
	ORQ          R12, AX
	JZ           rsok
	CMPQ         ROW_KK+8(BX), CX
	JLT          rsbad
rsok:
	MOVQ         ROW_E0(BX), DI
	MOVQ         ROW_E1(BX), R11
	MOVQ         ROW_DOTS(BX), SI
	MOVQ         ROW_KK(BX), DX
	VBROADCASTSS ROW_QQ(BX), Z4
	VMOVAPS      Z7, Z11
	KXORW        K3, K3, K3 // the NaN lanes
	MS2ZROW
	VEXTRACTF64X4 $1, Z11, Y0 // the largest of both halves, then of the eight lanes as the eight-lane loop takes it
	VMAXPS        Y0, Y11, Y11
	VMOVAPS       Y11, Y0
	LANESMAX
	KORTESTW      K3, K3
	JZ            rsstore
	MOVL          $0x7fc00000, AX // NaN
	MOVL          AX, X0
rsstore:
	VMOVSS        X0, ROW_R0(BX)
	JMP           rsadv
rsempty:
	VMOVSS        X7, ROW_R0(BX)
rsadv:
	ADDQ          $ROW_SIZE, BX
	DECQ          R9
	JNZ           rsrow
	MOVQ          $-1, bad+48(FP)
	VZEROUPPER
	RET
rsbad:
	MOVQ          nrows+8(FP), AX
	SUBQ          R9, AX
	MOVQ          AX, bad+48(FP)
	VZEROUPPER
	RET

// func expShiftSum2Rows512(rows *MixRow, nrows int, values1 bool) (bad int)
// expShiftSum2AVX2 for each row at its shifts S0 and S1: R0 and R1 the two sums. bad is
// −1, or the first row whose E1 is shorter than its E0, where the loop stopped.
TEXT ·expShiftSum2Rows512(SB), NOSPLIT, $0-32
	MOVQ         rows+0(FP), BX
	MOVQ         nrows+8(FP), R9
	MOVBLZX      values1+16(FP), R8
	VBROADCASTSS C_one, Z8
xrrow:
	VXORPS       Y6, Y6, Y6
	VXORPS       Y12, Y12, Y12
	MOVQ         ROW_N(BX), CX
	TESTQ        CX, CX
	JZ           xrdone
	CMPQ         ROW_E1+8(BX), CX
	JLT          xrbad
	MOVQ         ROW_E0(BX), DI
	MOVQ         ROW_E1(BX), SI
	VBROADCASTSS ROW_S0(BX), Z9
	VBROADCASTSS ROW_S1(BX), Z10
	XS2ZROW
xrdone:
	LANES8
	VMOVSS  X6, ROW_R0(BX)
	VMOVAPS Y12, Y6
	LANES8
	VMOVSS  X6, ROW_R1(BX)
	ADDQ    $ROW_SIZE, BX
	DECQ    R9
	JNZ     xrrow
	MOVQ    $-1, bad+24(FP)
	VZEROUPPER
	RET
xrbad:
	MOVQ    nrows+8(FP), AX
	SUBQ    R9, AX
	MOVQ    AX, bad+24(FP)
	VZEROUPPER
	RET

// func scaleFlushRows512(rows *MixRow, nrows int)
// scaleFlushAVX2 for each row's E0 at the factor S0.
TEXT ·scaleFlushRows512(SB), NOSPLIT, $0-16
	MOVQ         rows+0(FP), BX
	MOVQ         nrows+8(FP), R9
	MOVL         $0x00800000, AX // 2⁻¹²⁶
	VPBROADCASTD AX, Z2
sfrow:
	MOVQ         ROW_N(BX), CX
	TESTQ        CX, CX
	JZ           sfadv
	MOVQ         ROW_E0(BX), SI
	VBROADCASTSS ROW_S0(BX), Z1
	SFZROW
sfadv:
	ADDQ         $ROW_SIZE, BX
	DECQ         R9
	JNZ          sfrow
	VZEROUPPER
	RET

// func mixShareRows512(rows *MixRow, nrows int, c float32, term int, rational bool) (bad int)
// mixShareAVX2 for each row: g = E1, d = E0, p = P, the dot products Dots (and KK), the
// row's qq, shift, delta and f in QQ, S0, S1 and S2; R0 = Σ g, R1 = Σ v. bad is −1, or the
// first row whose E1, P, Dots or (with a distance) KK is shorter than its E0, where the
// loop stopped.
TEXT ·mixShareRows512(SB), NOSPLIT, $0-48
	MOVQ         rows+0(FP), R12
	MOVQ         nrows+8(FP), R9
	VBROADCASTSS c+16(FP), Z8
	MOVQ         term+24(FP), R8
	SHLQ         $5, R8
	MOVBLZX      rational+32(FP), R13
	VXORPS       Y14, Y14, Y14
mrrow:
	VXORPS       Y11, Y11, Y11
	VXORPS       Y15, Y15, Y15
	MOVQ         ROW_N(R12), CX
	TESTQ        CX, CX
	JZ           mrdone
	CMPQ         ROW_E1+8(R12), CX
	JLT          mrbad
	CMPQ         ROW_P+8(R12), CX
	JLT          mrbad
	CMPQ         ROW_DOTS+8(R12), CX
	JLT          mrbad
	TESTQ        R8, R8
	JZ           mrok
	CMPQ         ROW_KK+8(R12), CX
	JLT          mrbad
mrok:
	MOVQ         ROW_E1(R12), DI
	MOVQ         ROW_E0(R12), BX
	MOVQ         ROW_P(R12), R11
	MOVQ         ROW_DOTS(R12), SI
	MOVQ         ROW_KK(R12), DX
	VBROADCASTSS ROW_QQ(R12), Z4
	VBROADCASTSS ROW_S0(R12), Z7
	VBROADCASTSS ROW_S1(R12), Z9
	VBROADCASTSS ROW_S2(R12), Z10
	MSHZROW
mrdone:
	VMOVAPS Y11, Y6
	LANES8
	VMOVSS  X6, ROW_R0(R12)
	VMOVAPS Y15, Y6
	LANES8
	VMOVSS  X6, ROW_R1(R12)
	ADDQ    $ROW_SIZE, R12
	DECQ    R9
	JNZ     mrrow
	MOVQ    $-1, bad+40(FP)
	VZEROUPPER
	RET
mrbad:
	MOVQ    nrows+8(FP), AX
	SUBQ    R9, AX
	MOVQ    AX, bad+40(FP)
	VZEROUPPER
	RET

// func mixCoefs2Rows512(rows *MixRow, nrows int, cb, ca float32, tb, ta int, rationalA bool) (bad int)
// mixCoefs2AVX2 for each row: d = E0, g = E1, the dot products Dots (and KK), cs = CS, the
// row's qq in QQ; R0..R3 = gxb, sdb, gxa, sda. The rows add into their CS in order. bad is
// −1, or the first row whose E1, Dots or (with a distance) KK or CS is shorter than its
// E0, where the loop stopped.
TEXT ·mixCoefs2Rows512(SB), NOSPLIT, $0-56
	MOVQ         rows+0(FP), R9
	MOVQ         nrows+8(FP), AX
	MOVQ         AX, bad+48(FP) // the count, until the end: nrows+8(FP) counts down
	VBROADCASTSS cb+16(FP), Z8
	VBROADCASTSS ca+20(FP), Z10
	MOVQ         tb+24(FP), R8
	SHLQ         $5, R8
	MOVQ         ta+32(FP), R12
	SHLQ         $5, R12
	MOVBLZX      rationalA+40(FP), R13
	VXORPS       Y5, Y5, Y5
	VXORPS       Y14, Y14, Y14
	MOVL         $0xc0000000, AX // −2
	VPBROADCASTD AX, Z7
	ZTERMMASKS
mkrow: // the row count stays in nrows+8(FP): every general register is taken
	VXORPS       Y6, Y6, Y6
	VXORPS       Y9, Y9, Y9
	VXORPS       Y11, Y11, Y11
	VXORPS       Y15, Y15, Y15
	MOVQ         ROW_N(R9), CX
	TESTQ        CX, CX
	JZ           mkdone
	CMPQ         ROW_E1+8(R9), CX
	JLT          mkbad
	CMPQ         ROW_DOTS+8(R9), CX
	JLT          mkbad
	MOVQ         R8, AX
	ORQ          R12, AX
	JZ           mkok
	CMPQ         ROW_KK+8(R9), CX
	JLT          mkbad
	CMPQ         ROW_CS+8(R9), CX
	JLT          mkbad
mkok:
	MOVQ         ROW_E0(R9), DI
	MOVQ         ROW_E1(R9), R11
	MOVQ         ROW_DOTS(R9), SI
	MOVQ         ROW_KK(R9), DX
	MOVQ         ROW_CS(R9), BX
	VBROADCASTSS ROW_QQ(R9), Z4
	MC2ZROW
mkdone:
	LANES8
	VMOVSS  X6, ROW_R0(R9)
	VMOVAPS Y9, Y6
	LANES8
	VMOVSS  X6, ROW_R1(R9)
	VMOVAPS Y11, Y6
	LANES8
	VMOVSS  X6, ROW_R2(R9)
	VMOVAPS Y15, Y6
	LANES8
	VMOVSS  X6, ROW_R3(R9)
	ADDQ    $ROW_SIZE, R9
	DECQ    nrows+8(FP)
	JNZ     mkrow
	MOVQ    $-1, bad+48(FP)
	VZEROUPPER
	RET
mkbad:
	MOVQ    bad+48(FP), AX
	SUBQ    nrows+8(FP), AX
	MOVQ    AX, bad+48(FP)
	VZEROUPPER
	RET

// gconst: the erfc fit's coefficients c0..c9 (Numerical Recipes' erfcc), then 1/√2, ½, 1,
// 1/√(2π) and the absolute-value mask, one float32 each, for geluExactAVX2.
DATA gconst<>+0(SB)/4, $0xbfa1fc4e
DATA gconst<>+4(SB)/4, $0x3f8000c7
DATA gconst<>+8(SB)/4, $0x3ebf88fb
DATA gconst<>+12(SB)/4, $0x3dc636c9
DATA gconst<>+16(SB)/4, $0xbe3ec24c
DATA gconst<>+20(SB)/4, $0x3e8ec7cc
DATA gconst<>+24(SB)/4, $0xbf914e5d
DATA gconst<>+28(SB)/4, $0x3fbe87b0
DATA gconst<>+32(SB)/4, $0xbf527892
DATA gconst<>+36(SB)/4, $0x3e2ef945
DATA gconst<>+40(SB)/4, $0x3f3504f3
DATA gconst<>+44(SB)/4, $0x3f000000
DATA gconst<>+48(SB)/4, $0x3f800000
DATA gconst<>+52(SB)/4, $0x3ecc422a
DATA gconst<>+56(SB)/4, $0x7fffffff
GLOBL gconst<>(SB), RODATA|NOPTR, $60

// GELUPHI8 sets Y14 = Φ(x) for the eight x in Y4, with Y8..Y12 and Y15 as geluExactAVX2
// sets them, and leaves Y13 = x/2: z = |x|/√2, t = 1/(1 + z/2), erfc(z) = t·exp(P(t) − z²)
// (P by Horner in FMAs, the exponent P(t) − x·(x/2) one FMA, so rounded once), Φ(x) =
// ½·erfc(z) for x < 0 and 1 − ½·erfc(z) otherwise. It clobbers Y0..Y3 and Y5..Y7.
#define GELUPHI8 \
	VANDPS Y8, Y4, Y5 \
	VMULPS Y9, Y5, Y5 \
	VMOVAPS Y10, Y6 \
	VFMADD213PS Y11, Y5, Y6 \
	VDIVPS Y6, Y11, Y6 \
	VBROADCASTSS gconst<>+36(SB), Y7 \
	VBROADCASTSS gconst<>+32(SB), Y13 \
	VFMADD213PS Y13, Y6, Y7 \
	VBROADCASTSS gconst<>+28(SB), Y13 \
	VFMADD213PS Y13, Y6, Y7 \
	VBROADCASTSS gconst<>+24(SB), Y13 \
	VFMADD213PS Y13, Y6, Y7 \
	VBROADCASTSS gconst<>+20(SB), Y13 \
	VFMADD213PS Y13, Y6, Y7 \
	VBROADCASTSS gconst<>+16(SB), Y13 \
	VFMADD213PS Y13, Y6, Y7 \
	VBROADCASTSS gconst<>+12(SB), Y13 \
	VFMADD213PS Y13, Y6, Y7 \
	VBROADCASTSS gconst<>+8(SB), Y13 \
	VFMADD213PS Y13, Y6, Y7 \
	VBROADCASTSS gconst<>+4(SB), Y13 \
	VFMADD213PS Y13, Y6, Y7 \
	VBROADCASTSS gconst<>+0(SB), Y13 \
	VFMADD213PS Y13, Y6, Y7 \
	VMULPS Y10, Y4, Y13 \
	VMOVAPS Y7, Y0 \
	VFNMADD231PS Y13, Y4, Y0 \
	EXP8 \
	VMULPS Y6, Y0, Y14 \
	VMULPS Y10, Y14, Y14 \
	VSUBPS Y14, Y11, Y1 \
	VCMPPS $0x1d, Y15, Y4, Y2 \
	VBLENDVPS Y2, Y1, Y14, Y14

// GELUCONSTS loads the constants of GELUPHI8.
#define GELUCONSTS \
	VBROADCASTSS gconst<>+56(SB), Y8 \
	VBROADCASTSS gconst<>+40(SB), Y9 \
	VBROADCASTSS gconst<>+44(SB), Y10 \
	VBROADCASTSS gconst<>+48(SB), Y11 \
	VBROADCASTSS gconst<>+52(SB), Y12 \
	VXORPS Y15, Y15, Y15

// func geluExactAVX2(x, y *float32, n int)
// y[i] = x[i]·Φ(x[i]) (GELUPHI8); n is a positive multiple of 8.
TEXT ·geluExactAVX2(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ y+8(FP), DX
	MOVQ n+16(FP), CX
	GELUCONSTS
xloop:
	VMOVUPS (SI), Y4
	GELUPHI8
	VMULPS Y4, Y14, Y14
	VMOVUPS Y14, (DX)
	ADDQ $32, SI
	ADDQ $32, DX
	SUBQ $8, CX
	JNZ  xloop
	VZEROUPPER
	RET

// func geluExactGradAVX2(x, gr, out *float32, n int)
// out[i] = gr[i]·(Φ(x) + x·φ(x)), x = x[i], with Φ from GELUPHI8 and x·φ(x) =
// x·exp(−x·(x/2))/√(2π) (the exponent one FMA); n is a positive multiple of 8.
TEXT ·geluExactGradAVX2(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ gr+8(FP), DX
	MOVQ out+16(FP), DI
	MOVQ n+24(FP), CX
	GELUCONSTS
xgloop:
	VMOVUPS (SI), Y4
	GELUPHI8
	VXORPS Y0, Y0, Y0
	VFNMADD231PS Y13, Y4, Y0
	EXP8
	VMULPS Y12, Y0, Y0
	VMULPS Y4, Y0, Y0
	VADDPS Y14, Y0, Y0
	VMULPS (DX), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $32, DI
	SUBQ $8, CX
	JNZ  xgloop
	VZEROUPPER
	RET

// func geluGradOutAVX2(x, y, gr, dx *float32, n int, c1, c3, one, half, tiny float32)
// dx = gr·(s + 2x·s·(1 − s)·c1·(1 + c3·x²)) as geluGradAVX2, with s = y/x, or half where
// |x| < tiny; n > 0, a multiple of 8.
TEXT ·geluGradOutAVX2(SB), NOSPLIT, $0-60
	MOVQ x+0(FP), SI
	MOVQ y+8(FP), DI
	MOVQ gr+16(FP), R8
	MOVQ dx+24(FP), DX
	MOVQ n+32(FP), CX
	VBROADCASTSS c1+40(FP), Y8
	VBROADCASTSS c3+44(FP), Y10
	VBROADCASTSS one+48(FP), Y9
	VBROADCASTSS half+52(FP), Y11
	VBROADCASTSS tiny+56(FP), Y12
	VPCMPEQD Y13, Y13, Y13
	VPSRLD $1, Y13, Y13 // 0x7fffffff: |·|
goloop:
	VMOVUPS (SI), Y0
	VMOVUPS (DI), Y1
	VDIVPS Y0, Y1, Y1 // s = y/x
	VANDPS Y13, Y0, Y5
	VCMPPS $1, Y12, Y5, Y5 // |x| < tiny
	VBLENDVPS Y5, Y11, Y1, Y1
	GELUD8
	ADDQ $32, SI
	ADDQ $32, DI
	ADDQ $32, R8
	ADDQ $32, DX
	SUBQ $8, CX
	JNZ  goloop
	VZEROUPPER
	RET
