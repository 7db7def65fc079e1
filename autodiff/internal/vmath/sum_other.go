//go:build !amd64 || purego

package vmath

func addToAVX2(a, b, y *float32, n int) { panic("vmath: no AVX2") }

func sigmoidGradAVX2(y, gr, d *float32, n int) { panic("vmath: no AVX2") }

func sqDistAVX2(x, dots *float32, qq float32, kk *float32, n int, root bool) { panic("vmath: no AVX2") }
func sqDistScaleMaxAVX2(e, dots *float32, qq float32, kk *float32, n int, root bool, c float32) float32 {
	panic("vmath: no AVX2")
}

func distGradAVX2(gr, r *float32, n int) { panic("vmath: no AVX2") }

func addScaledRowsAVX2(y, x, a *float32, rows, ld, n int) { panic("vmath: no AVX2") }
