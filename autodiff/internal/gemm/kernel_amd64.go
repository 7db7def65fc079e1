//go:build amd64 && !purego

package gemm

import (
	"golang.org/x/sys/cpu"

	"github.com/locusml/locus/internal/simd"
)

//go:generate go run gen_avx512.go

// kernels lists the micro-kernels this CPU can run, best first, whatever LOCUS_CPU says
// (active picks the first that simd allows). x/sys/cpu reports AVX-512F and AVX2 only
// where the OS saves their registers.
func kernels() []*microKernel {
	var ks []*microKernel
	if cpu.X86.HasAVX512F {
		ks = append(ks, avx512Kernel)
	}
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		ks = append(ks, avx2Kernel)
	}
	return append(ks, goKernel)
}

// avx2PackATCols and avx2PackATTall are the AVX2 kernel's rule for packing a transposed
// A (packATCols, packATTall): at least 128 columns, any shape, as measured on an Intel
// Xeon (family 6 model 167); on an AMD family 19h core the rule measured on Zen 3
// (bench/PROFILE.md round fourteen), at least 256 columns and no more rows than columns:
// there 1152×128×2048 ran at 0.84 of the peak in place against 0.63 packed, with the Go
// copy that copyAT has since replaced.
var avx2PackATCols, avx2PackATTall = avx2PackAT()

func avx2PackAT() (cols int, tall bool) {
	if amdFamily19h() {
		return 256, false
	}
	return 128, true
}

var avx2Kernel = &microKernel{name: "avx2", level: simd.AVX2, mr: 6, nr: 16, packed: kernelAVX2, direct: kernelAVX2Direct, directT: kernelAVX2DirectT, packATCols: avx2PackATCols, packATTall: avx2PackATTall, packsBForT: true, stridedB: true, transposeB8: transposeB8AVX, copyRows: copyRowsAVX, copyAT: copyATAVX(6),
	gemvN: gemvNVec(gemvN8, 8), gemvT: gemvTVec,
	tails: []*microKernel{
		tailKernel("avx2", simd.AVX2, 2, 16, kernel2x16yu, kernel2x16yt),
		tailKernel("avx2", simd.AVX2, 4, 16, kernel4x16yu, kernel4x16yt),
	}}

var avx512Kernel = &microKernel{name: "avx512", level: simd.AVX512, mr: 12, nr: 32, packed: kernelAVX512, direct: kernelAVX512Direct, directT: kernelAVX512DirectT, packATCols: 256, packATRows: 384, packATTall: true, copyAT: copyATAVX(12), packsBForT: true, stridedB: true, narrow: narrowAVX512(), transposeB8: transposeB8AVX, copyRows: copyRowsAVX,
	gemvN: gemvNVec(gemvN16z, 16), gemvT: gemvTVec,
	tails: []*microKernel{
		tailKernel("avx512", simd.AVX512, 4, 32, kernel4x32zu, kernel4x32zt),
		tailKernel("avx512", simd.AVX512, 8, 32, kernel8x32zu, kernel8x32zt),
	}}

// narrowAVX512 is the AVX-512 kernel's narrow kernel: the 12×16 zmm kernel, or the AVX2
// 6×16 one on cores that run a 512-bit FMA as two 256-bit halves (zmmHalfRate). A 16-column
// tile takes one zmm or two ymm vectors of B per step: with zmm, every broadcast of A feeds
// one FMA, with ymm two, and where a zmm FMA costs two ymm ones, the broadcasts (loads) of
// the zmm kernel bound it. Single-thread fraction of the FMA peak at attention's 16-column
// products (BenchmarkShapes/.../head-{PV,dQ,dK}, AMD EPYC Zen 4): 12×16 zmm 0.58-0.66,
// 6×16 ymm 0.76-0.83. Both sum every element over the depth in the same order, with the
// same FMAs: results are bit-identical either way.
func narrowAVX512() *microKernel {
	if zmmHalfRate() && cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		return avx2Kernel
	}
	return avx512Narrow
}

//go:noescape
func cpuid(eax, ecx uint32) (a, b, c, d uint32)

// zmmHalfRate reports an AMD family 19h core (Zen 3, Zen 4; of them only Zen 4 has
// AVX-512), whose 512-bit FMAs issue as two 256-bit halves: the same FLOPs per cycle as
// ymm FMAs (BenchmarkPeakFMA: 110 and 108 GFLOP/s on one core).
func zmmHalfRate() bool { return amdFamily19h() }

// amdFamily19h reports an AMD family 19h core (Zen 3, Zen 4).
func amdFamily19h() bool {
	_, b, c, d := cpuid(0, 0)
	if b != 0x68747541 || d != 0x69746e65 || c != 0x444d4163 { // "AuthenticAMD"
		return false
	}
	a, _, _, _ := cpuid(1, 0)
	family := a >> 8 & 0xf
	if family == 0xf {
		family += a >> 20 & 0xff
	}
	return family == 0x19
}

// avx512Narrow is the 12×16 AVX-512 kernel for products of at most 16 columns.
var avx512Narrow = &microKernel{name: "avx512", level: simd.AVX512, mr: 12, nr: 16, packed: kernelAVX512N, direct: kernelAVX512NDirect, directT: kernelAVX512NDirectT, stridedB: true, transposeB8: transposeB8AVX, copyRows: copyRowsAVX,
	tails: []*microKernel{
		tailKernel("avx512", simd.AVX512, 4, 16, kernel4x16zu, kernel4x16zt),
		tailKernel("avx512", simd.AVX512, 8, 16, kernel8x16zu, kernel8x16zt),
	}}

// biasAt is the pointer an assembly kernel takes for the bias row of its tile: nil
// without a bias, else &bias[0] after checking that the tile's nr values are there.
func biasAt(bias []float32, nr int) *float32 {
	if bias == nil {
		return nil
	}
	_ = bias[nr-1]
	return &bias[0]
}

// An asmKernel is a generated micro-kernel that reads A in place (kernel_avx512_amd64.s).
type asmKernel func(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int, set bool, bias *float32)

// tailKernel is the generated kernel (kernel_avx512_amd64.s) of mr rows (fewer than its
// full kernel's) and nr columns that reads A in place, plain (direct) or transposed
// (directT).
func tailKernel(name string, level simd.Level, mr, nr int, direct, directT asmKernel) *microKernel {
	return &microKernel{
		name: name, level: level, mr: mr, nr: nr, stridedB: true,
		direct: func(k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, set bool, bias []float32) {
			_ = a[(mr-1)*lda+k-1]
			_ = b[(k-1)*ldb+nr-1]
			_ = c[(mr-1)*ldc+nr-1]
			direct(k, &a[0], lda, &b[0], ldb, &c[0], ldc, set, biasAt(bias, nr))
		},
		directT: func(k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, set bool, bias []float32) {
			_ = a[(k-1)*lda+mr-1]
			_ = b[(k-1)*ldb+nr-1]
			_ = c[(mr-1)*ldc+nr-1]
			directT(k, &a[0], lda, &b[0], ldb, &c[0], ldc, set, biasAt(bias, nr))
		},
	}
}

//go:noescape
func kernel4x16yu(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int, set bool, bias *float32)

//go:noescape
func kernel4x16yt(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int, set bool, bias *float32)

//go:noescape
func kernel2x16yu(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int, set bool, bias *float32)

//go:noescape
func kernel2x16yt(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int, set bool, bias *float32)

//go:noescape
func kernel8x32zu(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int, set bool, bias *float32)

//go:noescape
func kernel8x32zt(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int, set bool, bias *float32)

//go:noescape
func kernel4x32zu(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int, set bool, bias *float32)

//go:noescape
func kernel4x32zt(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int, set bool, bias *float32)

//go:noescape
func kernel8x16zu(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int, set bool, bias *float32)

//go:noescape
func kernel8x16zt(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int, set bool, bias *float32)

//go:noescape
func kernel4x16zu(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int, set bool, bias *float32)

//go:noescape
func kernel4x16zt(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int, set bool, bias *float32)

//go:noescape
func transpose8(blocks int, b *float32, ldb int, dst *float32, nr int, alpha float32)

// transposeB8AVX is transposeB8 with 8×8 AVX transposes (pack_amd64.s).
func transposeB8AVX(blocks int, b []float32, ldb int, dst []float32, nr int, alpha float32) {
	if blocks == 0 {
		return
	}
	_ = b[7*ldb+blocks*8-1]
	_ = dst[(blocks*8-1)*nr+7]
	transpose8(blocks, &b[0], ldb, &dst[0], nr, alpha)
}

//go:noescape
func packATRows(kb int, a *float32, lda int, dst *float32, panels, mr, ahead int)

// packATAhead is how many rows of A ahead packATRows prefetches: 8 and 16 are within 2 %
// of each other on the baby GPT's and the mid size's weight gradients, 32 up to 5 %
// slower (384×384×2048).
const packATAhead = 16

// copyATAVX returns copyAT for panels of mr (12 or 6) rows: packATRows (pack_amd64.s).
// The Go loop it replaces ran at about 3 GB/s on a weight gradient's dY (a row of 1536
// floats, each row's 384 bytes on a page of its own, so every row waited on L3); with
// each row prefetched 16 rows ahead, about 9 GB/s.
func copyATAVX(mr int) func(kb int, a []float32, lda int, dst []float32, panels int) {
	return func(kb int, a []float32, lda int, dst []float32, panels int) {
		if kb == 0 || panels == 0 {
			return
		}
		_ = a[(kb-1)*lda+panels*mr-1]
		_ = dst[panels*kb*mr-1]
		packATRows(kb, &a[0], lda, &dst[0], panels, mr, packATAhead)
	}
}

//go:noescape
func copyRows16(rows int, b *float32, ldb int, dst *float32, chunks int)

// copyRowsAVX is copyRows for panels of 16 or 32 columns (pack_amd64.s): a 16-value copy
// through copyN is a call to memmove per row, 3.4 % of the mid-size step's time.
func copyRowsAVX(rows int, b []float32, ldb int, dst []float32, nr int) {
	if rows == 0 {
		return
	}
	if nr != 16 && nr != 32 {
		for p := range rows {
			copy(dst[p*nr:p*nr+nr], b[p*ldb:p*ldb+nr])
		}
		return
	}
	_ = b[(rows-1)*ldb+nr-1]
	_ = dst[rows*nr-1]
	copyRows16(rows, &b[0], ldb, &dst[0], nr/16)
}

// fmaPeak512 and fmaPeak256 run n iterations of 12 independent FMA chains on zmm and ymm
// registers (peak_amd64.s): the core's float32 FMA peak that BenchmarkShapes divides by.
//
//go:noescape
func fmaPeak512(n int)

//go:noescape
func fmaPeak256(n int)

// peakLoops returns the FMA peak loops this CPU can run and the float32 FLOPs of one
// iteration of each, by width.
func peakLoops() map[string]peakLoop {
	m := map[string]peakLoop{}
	if cpu.X86.HasAVX512F {
		m["zmm"] = peakLoop{fmaPeak512, 12 * 16 * 2}
	}
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		m["ymm"] = peakLoop{fmaPeak256, 12 * 8 * 2}
	}
	return m
}

//go:noescape
func kernel6x16(k int, a, b *float32, ldb int, c *float32, ldc int, set bool, bias *float32)

//go:noescape
func kernel6x16u(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int, set bool, bias *float32)

//go:noescape
func kernel6x16t(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int, set bool, bias *float32)

//go:noescape
func kernel12x32z(k int, a, b *float32, ldb int, c *float32, ldc int, set bool, bias *float32)

//go:noescape
func kernel12x32zt(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int, set bool, bias *float32)

//go:noescape
func kernel12x16z(k int, a, b *float32, ldb int, c *float32, ldc int, set bool, bias *float32)

//go:noescape
func kernel12x16zu(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int, set bool, bias *float32)

//go:noescape
func kernel12x16zt(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int, set bool, bias *float32)

//go:noescape
func kernel12x32zu(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int, set bool, bias *float32)

func kernelAVX2(k int, a, b []float32, ldb int, c []float32, ldc int, set bool, bias []float32) {
	_ = a[k*6-1]
	_ = b[(k-1)*ldb+15]
	_ = c[5*ldc+15]
	kernel6x16(k, &a[0], &b[0], ldb, &c[0], ldc, set, biasAt(bias, 16))
}

func kernelAVX2Direct(k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, set bool, bias []float32) {
	_ = a[5*lda+k-1]
	_ = b[(k-1)*ldb+15]
	_ = c[5*ldc+15]
	kernel6x16u(k, &a[0], lda, &b[0], ldb, &c[0], ldc, set, biasAt(bias, 16))
}

func kernelAVX512(k int, a, b []float32, ldb int, c []float32, ldc int, set bool, bias []float32) {
	_ = a[k*12-1]
	_ = b[(k-1)*ldb+31]
	_ = c[11*ldc+31]
	kernel12x32z(k, &a[0], &b[0], ldb, &c[0], ldc, set, biasAt(bias, 32))
}

func kernelAVX512Direct(k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, set bool, bias []float32) {
	_ = a[11*lda+k-1]
	_ = b[(k-1)*ldb+31]
	_ = c[11*ldc+31]
	kernel12x32zu(k, &a[0], lda, &b[0], ldb, &c[0], ldc, set, biasAt(bias, 32))
}

func kernelAVX512DirectT(k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, set bool, bias []float32) {
	_ = a[(k-1)*lda+11]
	_ = b[(k-1)*ldb+31]
	_ = c[11*ldc+31]
	kernel12x32zt(k, &a[0], lda, &b[0], ldb, &c[0], ldc, set, biasAt(bias, 32))
}

func kernelAVX2DirectT(k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, set bool, bias []float32) {
	_ = a[(k-1)*lda+5]
	_ = b[(k-1)*ldb+15]
	_ = c[5*ldc+15]
	kernel6x16t(k, &a[0], lda, &b[0], ldb, &c[0], ldc, set, biasAt(bias, 16))
}

func kernelAVX512N(k int, a, b []float32, ldb int, c []float32, ldc int, set bool, bias []float32) {
	_ = a[k*12-1]
	_ = b[(k-1)*ldb+15]
	_ = c[11*ldc+15]
	kernel12x16z(k, &a[0], &b[0], ldb, &c[0], ldc, set, biasAt(bias, 16))
}

func kernelAVX512NDirect(k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, set bool, bias []float32) {
	_ = a[11*lda+k-1]
	_ = b[(k-1)*ldb+15]
	_ = c[11*ldc+15]
	kernel12x16zu(k, &a[0], lda, &b[0], ldb, &c[0], ldc, set, biasAt(bias, 16))
}

func kernelAVX512NDirectT(k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, set bool, bias []float32) {
	_ = a[(k-1)*lda+11]
	_ = b[(k-1)*ldb+15]
	_ = c[11*ldc+15]
	kernel12x16zt(k, &a[0], lda, &b[0], ldb, &c[0], ldc, set, biasAt(bias, 16))
}
