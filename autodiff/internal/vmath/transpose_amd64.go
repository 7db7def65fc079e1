//go:build amd64 && !purego

package vmath

//go:noescape
func transposeAVX2(dst *float32, ldd int, src *float32, lds, rows, cols int, a float32)
