//go:build amd64 && !purego

package vmath

//go:noescape
func softmaxExpScaleAVX2(x *float32, n int, shift float32)
