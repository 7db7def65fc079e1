package autodiff

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"gorgonia.org/tensor"
)

// BenchmarkLongAttention runs causal attention forward and backward on the charlm sweep's
// shapes (batch 8, 4 heads of d_head 16, [B, T, H·d] layout, float32) at T = 512 and 2048:
// the fused Attention, which stores the weights, against TiledLocalMean with the
// exponential kernel, which recomputes them. Long lengths belong here and in locus bench,
// not in tests.
func BenchmarkLongAttention(b *testing.B) {
	const batch, heads, dh = 8, 4, 16
	for _, T := range []int{512, 2048} {
		rng := rand.New(rand.NewPCG(1, 1))
		randn := func(n int) []float32 {
			v := make([]float32, n)
			for i := range v {
				v[i] = float32(rng.NormFloat64())
			}
			return v
		}
		in := map[string]*tensor.Dense{}
		for _, n := range []string{"q", "k", "v"} {
			in[n] = tensor.New(tensor.WithShape(batch, T, heads*dh), tensor.WithBacking(randn(batch*T*heads*dh)))
		}
		for _, tiled := range []bool{false, true} {
			b.Run(fmt.Sprintf("T=%d/tiled=%v", T, tiled), func(b *testing.B) {
				ps, _ := NewParams(Float32, 0)
				m := NewModel(ps, func(g *Graph) (Outputs, error) {
					q, k, v := g.Input("q"), g.Input("k"), g.Input("v")
					var out *Node
					if tiled {
						out = g.TiledLocalMean(testExp{}, q, k, v, TiledOptions{BandwidthValue: 4, Heads: heads, Mask: Mask{Causal: true}, HeadsInFeatures: true})
					} else {
						out = g.Attention(q, k, v, nil, heads, 0.25, Mask{Causal: true})
					}
					return Outputs{Loss: g.Sum(out)}, g.Err()
				}, 0)
				mode := RunMode{InputGrads: true}
				if _, err := m.Run(in, mode); err != nil {
					b.Fatal(err)
				}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if _, err := m.Run(in, mode); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
