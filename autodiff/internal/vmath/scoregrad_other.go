//go:build !amd64 || purego

package vmath

func scoreGradAVX2(d, p *float32, n int, delta, scale float32) { panic("vmath: no AVX2") }
