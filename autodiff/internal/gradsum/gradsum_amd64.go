//go:build amd64 && !purego

package gradsum

import (
	"golang.org/x/sys/cpu"

	"github.com/locusml/locus/internal/simd"
)

// hasAVX2 selects the AVX2 loop where the CPU has it and LOCUS_CPU allows it. The loops
// are bound by memory, so wider vectors would not pay.
var hasAVX2 = cpu.X86.HasAVX2 && simd.Allows(simd.AVX2)

// addScaled2AVX2 sets dst[i] += ca·a[i] + cb·b[i]; n is a positive multiple of 8.
//
//go:noescape
func addScaled2AVX2(dst, a, b *float32, n int, ca, cb float32)
