//go:build !amd64 || purego

package vmath

func transposeAVX2(dst *float32, ldd int, src *float32, lds, rows, cols int, a float32) {
	panic("vmath: no AVX2")
}
