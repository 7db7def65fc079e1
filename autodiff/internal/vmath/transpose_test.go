package vmath

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestTranspose checks Transpose on both paths against its scalar definition, bit for
// bit, for shapes with and without 8×8 tiles and edges, at padded strides, and that it
// writes nothing outside the transposed block.
func TestTranspose(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 30))
	for _, sh := range [][2]int{{0, 5}, {1, 1}, {3, 7}, {8, 8}, {9, 16}, {16, 8}, {64, 16}, {70, 16}, {128, 16}, {17, 23}} {
		rows, cols := sh[0], sh[1]
		lds, ldd := cols+5, rows+11
		src := elemInput(rng, max(1, rows*lds))
		for _, avx := range []bool{true, false} {
			dst := make([]float32, max(1, cols*ldd))
			for i := range dst {
				dst[i] = -7
			}
			old := hasAVX2
			setAVX2(avx && old)
			Transpose(dst, ldd, src, lds, rows, cols, 0.3)
			setAVX2(old)
			for c := range cols {
				for s := range ldd {
					want := float32(-7)
					if s < rows {
						want = 0.3 * src[s*lds+c]
					}
					if got := dst[c*ldd+s]; math.Float32bits(got) != math.Float32bits(want) {
						t.Fatalf("%dx%d AVX2 %v: dst[%d·ldd+%d] = %v, want %v", rows, cols, avx && old, c, s, got, want)
					}
				}
			}
		}
	}
}
