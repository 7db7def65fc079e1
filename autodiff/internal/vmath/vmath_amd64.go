//go:build amd64 && !purego

package vmath

import (
	"golang.org/x/sys/cpu"

	"github.com/locusml/locus/internal/simd"
)

// hasAVX2 selects the AVX2 kernels, where the CPU has them and LOCUS_CPU allows them.
var hasAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA && simd.Allows(simd.AVX2)

// hasAVX512 lets the AVX2 kernels that have a sixteen-lane loop (ExpShiftSum2, MixShare)
// run it, where the CPU and the OS have AVX-512F and LOCUS_CPU allows it; its results are
// the AVX2 loop's bits.
var hasAVX512 = hasAVX2 && cpu.X86.HasAVX512F && simd.Allows(simd.AVX512)

//go:noescape
func expScaleShiftSumAVX2(dst, x *float32, n int, c, shift float32, add bool) float32

//go:noescape
func geluTanhAVX2(x, s, y *float32, n int)

//go:noescape
func geluExactAVX2(x, y *float32, n int)

//go:noescape
func geluExactGradAVX2(x, gr, out *float32, n int)

//go:noescape
func sigmoidAVX2(x, y *float32, n int)

//go:noescape
func reluAVX2(x, y *float32, n int)

//go:noescape
func reluGradAVX2(x, gr, dx *float32, n int)

//go:noescape
func scaledDiffAVX2(p, t, d *float32, n int, c float64)

//go:noescape
func sqDiffSumAVX2(p, t *float32, n int, s *[16]float64)

//go:noescape
func maxAVX2(x *float32, n int, m *[8]float32) bool

//go:noescape
func scaleMaxAVX2(dst, x, b *float32, n int, c float32) float32

//go:noescape
func scaleToAVX2(dst, x *float32, n int, a float32)

//go:noescape
func shiftAVX2(x *float32, n int, a float32)

//go:noescape
func scaleFlushAVX2(x *float32, n int, a float32, wide bool)

//go:noescape
func addAVX2(dst, x *float32, n int)

//go:noescape
func geluGradAVX2(x, s, gr, dx *float32, n int, c1, c3, one float32)

//go:noescape
func geluGradOutAVX2(x, y, gr, dx *float32, n int, c1, c3, one, half, tiny float32)

//go:noescape
func scaleDotAVX2(gr, x *float32, n int, c float32) float32

//go:noescape
func expScoreGradAVX2(gr, x, d *float32, n int, c, shift, delta, f float32) float32

//go:noescape
func linearCoefsAVX2(dst, gr, x, cs *float32, n int, c float32, term int, add bool) (gx, sd float32)

//go:noescape
func recip1pAVX2(k, x *float32, n int, c float32)

//go:noescape
func ratioGradAVX2(gr, x *float32, n int, a float32) float32

//go:noescape
func scoreGradSumAVX2(dst, d, p *float32, n int, delta, scale float32) float32

//go:noescape
func addSumScaleAVX2(gr, acc *float32, n int, c float32) float32

//go:noescape
func sqNormsAVX2(out, x *float32, rows, d, ld int)

//go:noescape
func distCoefsAVX2(dst, dots, kk, cs *float32, n int, qq, c float32, root bool) (gx, sd float32)

//go:noescape
func scoreGradSubAVX2(d, p, sub *float32, n int, delta float32) float32

//go:noescape
func mixScores2AVX2(e0, e1, dots, kk *float32, n int, qq, c0, c1 float32, t0, t1 int, rational1, wide bool) float32

//go:noescape
func expShiftSum2AVX2(e0, e1 *float32, n int, s0, s1 float32, values1, wide bool) (sum0, sum1 float32)

//go:noescape
func mixScores2Rows512(rows *MixRow, nrows int, c0, c1 float32, t0, t1 int, rational1 bool) (bad int)

//go:noescape
func expShiftSum2Rows512(rows *MixRow, nrows int, values1 bool) (bad int)

//go:noescape
func scaleFlushRows512(rows *MixRow, nrows int)

//go:noescape
func mixShareAVX2(gr, d, p, dots, kk *float32, n int, qq, c, shift, delta, f float32, term int, rational, wide bool) (sg, sd float32)

//go:noescape
func mixCoefs2AVX2(d, gr, dots, kk, cs *float32, n int, qq, cb, ca float32, tb, ta int, rationalA, wide bool) (gxb, sdb, gxa, sda float32)

//go:noescape
func mixShareRows512(rows *MixRow, nrows int, c float32, term int, rational bool) (bad int)

//go:noescape
func mixCoefs2Rows512(rows *MixRow, nrows int, cb, ca float32, tb, ta int, rationalA bool) (bad int)

//go:noescape
func prefetchLines(x *float32, n int)

// Prefetch asks the CPU to bring the n floats from x into its nearest cache ahead of
// use; it reads nothing (a prefetch never faults) and n ≤ 0 asks for nothing.
func Prefetch(x *float32, n int) {
	if n > 0 {
		prefetchLines(x, n)
	}
}
