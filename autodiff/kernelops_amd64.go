//go:build amd64 && !purego

package autodiff

import (
	"golang.org/x/sys/cpu"

	"github.com/locusml/locus/internal/simd"
)

// hasAVX512 selects the AVX-512 kernels of PairwiseDist (x/sys/cpu reports AVX-512F only
// where the OS saves its registers) where LOCUS_CPU allows them.
var hasAVX512 = cpu.X86.HasAVX512F && simd.Allows(simd.AVX512)

// sqDistsAVX512 sets out[j] = Σ_{i<d} (q[i] − kt[i·ldk + j])² for the lanes j < 16 that
// mask selects, and its square root if root is set.
//
//go:noescape
func sqDistsAVX512(q *float32, d int, kt *float32, ldk int, out *float32, mask uint16, root bool)

// diffSumsAVX512 sets out[i] = Σ_{u<count} c[u·stride]·(x[i] − ys[u·ld + i]) for the lanes
// i < 16 that mask selects, skipping the u with c[u·stride] = ±0.
//
//go:noescape
func diffSumsAVX512(c *float32, stride, count int, x, ys *float32, ld int, out *float32, mask uint16)
