package autodiff

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkSoftmaxVisible normalises every row of 16 float32 score matrices of 128 × 128
// in row blocks, as LocalMean does, for the common masks.
func BenchmarkSoftmaxVisible(b *testing.B) {
	const pairs, T = 16, 128
	rng := rand.New(rand.NewPCG(1, 2))
	s := make([]float32, pairs*T*T)
	for i := range s {
		s[i] = 2 * float32(rng.NormFloat64())
	}
	w := make([]float32, len(s))
	pad := make([]float32, T)
	for i := range pad {
		pad[i] = float32(i % 7 % 2) // 0 marks a padding key
	}
	for _, c := range []struct {
		name string
		mask Mask
		km   []float32
	}{
		{"full", Mask{}, nil},
		{"causal", Mask{Causal: true}, nil},
		{"causalKeyMask", Mask{Causal: true}, pad},
		{"hollow", Mask{Hollow: true}, nil},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(s) * 4))
			for b.Loop() {
				for p := range pairs {
					sp, wp := s[p*T*T:(p+1)*T*T], w[p*T*T:(p+1)*T*T]
					for r0 := 0; r0 < T; r0 += rowBlock {
						r1 := min(r0+rowBlock, T)
						clo, chi := keyRange(c.mask, r0, r1, T)
						for t := r0; t < r1; t++ {
							softmaxVisible(sp[t*T:(t+1)*T], wp[t*T:(t+1)*T], c.km, c.mask, t, clo, chi)
						}
					}
				}
			}
		})
	}
}
