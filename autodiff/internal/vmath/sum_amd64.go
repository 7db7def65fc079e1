//go:build amd64 && !purego

package vmath

//go:noescape
func addToAVX2(a, b, y *float32, n int)

//go:noescape
func sigmoidGradAVX2(y, gr, d *float32, n int)
