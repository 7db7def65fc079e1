//go:build !amd64 || purego

package simd

func detect() Level { return Generic }
