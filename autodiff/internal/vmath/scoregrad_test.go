package vmath

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestScoreGrad checks ScoreGrad on both paths against its scalar definition, bit for
// bit, special values included, at lengths around the vector width.
func TestScoreGrad(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 64, 100, 128} {
		p, d0 := elemInput(rng, n), elemInput(rng, n)
		for _, c := range []struct{ delta, scale float32 }{{0.37, 0.25}, {-1.5, 0.7}, {float32(math.NaN()), 1}} {
			for _, avx := range []bool{true, false} {
				d := append([]float32(nil), d0...)
				old := hasAVX2
				setAVX2(avx && old)
				ScoreGrad(d, p, c.delta, c.scale)
				setAVX2(old)
				want := make([]float32, n)
				for i := range want {
					want[i] = c.scale * p[i] * (d0[i] - c.delta)
				}
				if i := sameBits(d, want); i >= 0 {
					t.Fatalf("n=%d delta %v AVX2 %v: d[%d] = %v, want %v", n, c.delta, avx && old, i, d[i], want[i])
				}
			}
		}
	}
}
