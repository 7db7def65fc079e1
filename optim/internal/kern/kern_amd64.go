//go:build amd64 && !purego

package kern

import (
	"golang.org/x/sys/cpu"

	"github.com/locusml/locus/internal/simd"
)

var (
	hasAVX512 = cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL && simd.Allows(simd.AVX512)
	hasAVX2   = cpu.X86.HasAVX2 && simd.Allows(simd.AVX2)
)

//go:noescape
func adamAVX512(p, gr, m, v *float32, n int, k *AdamCoefs)

//go:noescape
func adamAVX2(p, gr, m, v *float32, n int, k *AdamCoefs)

//go:noescape
func sumSqAVX512(x *float32, n int, s *[16]float64)

//go:noescape
func sumSqAVX2(x *float32, n int, s *[16]float64)
