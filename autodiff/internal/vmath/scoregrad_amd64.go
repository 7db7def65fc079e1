//go:build amd64 && !purego

package vmath

//go:noescape
func scoreGradAVX2(d, p *float32, n int, delta, scale float32)
