//go:build amd64 && !purego

package vmath

import "golang.org/x/sys/cpu"

func setAVX2(on bool) { hasAVX2 = on }

// setAVX512 lets the sixteen-lane loops run (on: where the CPU has AVX-512F) or not.
func setAVX512(on bool) { hasAVX512 = on && hasAVX2 && cpu.X86.HasAVX512F }

// canAVX512 says whether the CPU runs the sixteen-lane loops.
func canAVX512() bool { return cpu.X86.HasAVX512F }
