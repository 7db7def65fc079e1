//go:build !amd64 || purego

package vmath

const hasAVX2, hasAVX512 = false, false

func expScaleShiftSumAVX2(dst, x *float32, n int, c, shift float32, add bool) float32 {
	panic("vmath: no AVX2")
}
func scaleMaxAVX2(dst, x, b *float32, n int, c float32) float32 { panic("vmath: no AVX2") }
func geluTanhAVX2(x, s, y *float32, n int)                      { panic("vmath: no AVX2") }
func geluExactAVX2(x, y *float32, n int)                        { panic("vmath: no AVX2") }
func geluExactGradAVX2(x, gr, out *float32, n int)              { panic("vmath: no AVX2") }

func sigmoidAVX2(x, y *float32, n int) { panic("vmath: no AVX2") }

func reluAVX2(x, y *float32, n int)                      { panic("vmath: no AVX2") }
func reluGradAVX2(x, gr, dx *float32, n int)             { panic("vmath: no AVX2") }
func scaledDiffAVX2(p, t, d *float32, n int, c float64)  { panic("vmath: no AVX2") }
func sqDiffSumAVX2(p, t *float32, n int, s *[16]float64) { panic("vmath: no AVX2") }

func maxAVX2(x *float32, n int, m *[8]float32) bool          { panic("vmath: no AVX2") }
func scaleToAVX2(dst, x *float32, n int, a float32)          { panic("vmath: no AVX2") }
func shiftAVX2(x *float32, n int, a float32)                 { panic("vmath: no AVX2") }
func scaleFlushAVX2(x *float32, n int, a float32, wide bool) { panic("vmath: no AVX2") }
func addAVX2(dst, x *float32, n int)                         { panic("vmath: no AVX2") }

func geluGradAVX2(x, s, gr, dx *float32, n int, c1, c3, one float32) { panic("vmath: no AVX2") }
func geluGradOutAVX2(x, y, gr, dx *float32, n int, c1, c3, one, half, tiny float32) {
	panic("vmath: no AVX2")
}

func scaleDotAVX2(gr, x *float32, n int, c float32) float32 { panic("vmath: no AVX2") }
func expScoreGradAVX2(gr, x, d *float32, n int, c, shift, delta, f float32) float32 {
	panic("vmath: no AVX2")
}
func linearCoefsAVX2(dst, gr, x, cs *float32, n int, c float32, term int, add bool) (gx, sd float32) {
	panic("vmath: no AVX2")
}
func recip1pAVX2(k, x *float32, n int, c float32)            { panic("vmath: no AVX2") }
func ratioGradAVX2(gr, x *float32, n int, a float32) float32 { panic("vmath: no AVX2") }
func scoreGradSumAVX2(dst, d, p *float32, n int, delta, scale float32) float32 {
	panic("vmath: no AVX2")
}

func addSumScaleAVX2(gr, acc *float32, n int, c float32) float32 { panic("vmath: no AVX2") }

func sqNormsAVX2(out, x *float32, rows, d, ld int) { panic("vmath: no AVX2") }

func distCoefsAVX2(dst, dots, kk, cs *float32, n int, qq, c float32, root bool) (gx, sd float32) {
	panic("vmath: no AVX2")
}

func scoreGradSubAVX2(d, p, sub *float32, n int, delta float32) float32 { panic("vmath: no AVX2") }

func mixScores2AVX2(e0, e1, dots, kk *float32, n int, qq, c0, c1 float32, t0, t1 int, rational1, wide bool) float32 {
	panic("vmath: no AVX2")
}
func expShiftSum2AVX2(e0, e1 *float32, n int, s0, s1 float32, values1, wide bool) (sum0, sum1 float32) {
	panic("vmath: no AVX2")
}
func mixScores2Rows512(rows *MixRow, nrows int, c0, c1 float32, t0, t1 int, rational1 bool) (bad int) {
	panic("vmath: no AVX-512")
}
func expShiftSum2Rows512(rows *MixRow, nrows int, values1 bool) (bad int) { panic("vmath: no AVX-512") }
func scaleFlushRows512(rows *MixRow, nrows int)                           { panic("vmath: no AVX-512") }
func mixShareAVX2(gr, d, p, dots, kk *float32, n int, qq, c, shift, delta, f float32, term int, rational, wide bool) (sg, sd float32) {
	panic("vmath: no AVX2")
}
func mixCoefs2AVX2(d, gr, dots, kk, cs *float32, n int, qq, cb, ca float32, tb, ta int, rationalA, wide bool) (gxb, sdb, gxa, sda float32) {
	panic("vmath: no AVX2")
}
func mixShareRows512(rows *MixRow, nrows int, c float32, term int, rational bool) (bad int) {
	panic("vmath: no AVX-512")
}
func mixCoefs2Rows512(rows *MixRow, nrows int, cb, ca float32, tb, ta int, rationalA bool) (bad int) {
	panic("vmath: no AVX-512")
}

// Prefetch asks the CPU to bring the n floats from x into its nearest cache ahead of
// use: nothing without the assembly kernels.
func Prefetch(x *float32, n int) {}
