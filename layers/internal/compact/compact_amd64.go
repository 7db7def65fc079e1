//go:build amd64 && !purego

package compact

import (
	"golang.org/x/sys/cpu"

	"github.com/locusml/locus/internal/simd"
)

// hasAVX2 selects the AVX2 loops, where the CPU has them and LOCUS_CPU allows them.
var hasAVX2 = cpu.X86.HasAVX2 && simd.Allows(simd.AVX2)

//go:noescape
func tricubeValuesAVX2(k, r *float32, n int, c float32)

//go:noescape
func tricubeGradsAVX2(gr, r *float32, n int, ih float32, s *[8]float32)

//go:noescape
func epanechnikovGradsAVX2(gr, x *float32, n int, hh float32, s *[8]float32)
