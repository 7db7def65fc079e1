//go:build !amd64 || purego

package vmath

func softmaxExpScaleAVX2(x *float32, n int, shift float32) { panic("vmath: no AVX2") }
