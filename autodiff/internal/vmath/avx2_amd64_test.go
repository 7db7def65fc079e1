//go:build amd64 && !purego

package vmath

func setAVX2(on bool) { hasAVX2 = on }
