//go:build !amd64 || purego

package vmath

func sum64AVX2(x *float32, n int) float64               { panic("vmath: no AVX2") }
func sqDev64AVX2(x *float32, n int, mu float64) float64 { panic("vmath: no AVX2") }
func normAffineAVX2(x, w, b, y *float32, n int, mu, rstd float64) {
	panic("vmath: no AVX2")
}
func normGradSumsAVX2(x, gr, w *float32, n int, mu, rstd float64) (s1, s2 float64) {
	panic("vmath: no AVX2")
}
func normGradAVX2(x, gr, w, d *float32, n int, mu, rstd, m1, m2 float64) {
	panic("vmath: no AVX2")
}
func normParamGradAddAVX2(x, gr *float32, n int, mu, rstd float64, dw, db *float64) {
	panic("vmath: no AVX2")
}
func layerNormRowAVX2(x, w, b, y *float32, n int, eps float64) (mu, rstd float64) {
	panic("vmath: no AVX2")
}
func layerNormRowGradAVX2(x, gr, w, d *float32, n int, mu, rstd float64) {
	panic("vmath: no AVX2")
}
