//go:build !amd64 || purego

package autodiff

var hasAVX512 = false

func sqDistsAVX512(q *float32, d int, kt *float32, ldk int, out *float32, mask uint16, root bool) {
	panic("autodiff: no AVX-512")
}

func diffSumsAVX512(c *float32, stride, count int, x, ys *float32, ld int, out *float32, mask uint16) {
	panic("autodiff: no AVX-512")
}
