//go:build !amd64 || purego

package vmath

func addToAVX2(a, b, y *float32, n int) { panic("vmath: no AVX2") }

func sigmoidGradAVX2(y, gr, d *float32, n int) { panic("vmath: no AVX2") }
