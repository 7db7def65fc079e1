package autodiff

import (
	"math/rand/v2"
	"testing"

	"gorgonia.org/tensor"
)

// BenchmarkPairwiseDist runs PairwiseDist forward and backward (both inputs) at the
// shapes of charlm's kernel attention: 32 sequences × 4 heads, T=64, d_head 16, float32.
func BenchmarkPairwiseDist(b *testing.B) {
	for _, squared := range []bool{true, false} {
		name := "dist"
		if squared {
			name = "squared"
		}
		b.Run(name, func(b *testing.B) {
			const n, T, dh = 128, 64, 16
			rng := rand.New(rand.NewPCG(1, 1))
			randn := func(n int) []float32 {
				v := make([]float32, n)
				for i := range v {
					v[i] = float32(rng.NormFloat64())
				}
				return v
			}
			ps, _ := NewParams(Float32, 0)
			m := NewModel(ps, func(g *Graph) (Outputs, error) {
				out := g.PairwiseDist(g.Input("q"), g.Input("k"), squared)
				return Outputs{Loss: g.Sum(out)}, g.Err()
			}, 0)
			in := map[string]*tensor.Dense{
				"q": tensor.New(tensor.WithShape(n, T, dh), tensor.WithBacking(randn(n*T*dh))),
				"k": tensor.New(tensor.WithShape(n, T, dh), tensor.WithBacking(randn(n*T*dh))),
			}
			mode := RunMode{InputGrads: true}
			if _, err := m.Run(in, mode); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := m.Run(in, mode); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
