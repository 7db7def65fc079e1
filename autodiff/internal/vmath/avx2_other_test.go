//go:build !amd64 || purego

package vmath

func setAVX2(bool) {}
