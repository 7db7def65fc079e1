//go:build amd64 && !purego

package vmath

import "golang.org/x/sys/cpu"

var hasAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

//go:noescape
func expShiftAVX2(x *float32, n int, shift float32)

//go:noescape
func geluTanhAVX2(x, s, y *float32, n int)

//go:noescape
func sigmoidAVX2(x, y *float32, n int)
