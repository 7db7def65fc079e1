//go:build !amd64 || purego

package vmath

const hasAVX2 = false

func expShiftAVX2(x *float32, n int, shift float32) { panic("vmath: no AVX2") }
func geluTanhAVX2(x, s, y *float32, n int)          { panic("vmath: no AVX2") }

func sigmoidAVX2(x, y *float32, n int) { panic("vmath: no AVX2") }
