//go:build !amd64 || purego

package vmath

func setAVX2(bool) {}

func setAVX512(bool) {}

func canAVX512() bool { return false }
