//go:build amd64 && !purego

package simd

import "golang.org/x/sys/cpu"

// detect reads CPUID through x/sys/cpu, which reports AVX2 and AVX-512 only where the
// operating system saves their registers.
func detect() Level {
	switch {
	case cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL && cpu.X86.HasAVX2 && cpu.X86.HasFMA:
		return AVX512
	case cpu.X86.HasAVX2 && cpu.X86.HasFMA:
		return AVX2
	}
	return Generic
}
