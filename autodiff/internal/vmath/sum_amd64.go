//go:build amd64 && !purego

package vmath

//go:noescape
func addToAVX2(a, b, y *float32, n int)

//go:noescape
func sigmoidGradAVX2(y, gr, d *float32, n int)

//go:noescape
func sqDistAVX2(x, dots *float32, qq float32, kk *float32, n int, root bool)

//go:noescape
func sqDistScaleMaxAVX2(e, dots *float32, qq float32, kk *float32, n int, root bool, c float32) float32

//go:noescape
func distGradAVX2(gr, r *float32, n int)

//go:noescape
func addScaledRowsAVX2(y, x, a *float32, rows, ld, n int)
