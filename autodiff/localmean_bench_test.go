package autodiff

import (
	"math/rand/v2"
	"testing"

	"gorgonia.org/tensor"
)

// BenchmarkLocalMeanAttn runs the fused local-mean op forward and backward at the shapes
// of the reference attn workload (../shared/peers/WORKLOADS.md): B=32, T=128, 8 heads of
// d_head 16, causal, float32.
func BenchmarkLocalMeanAttn(b *testing.B) {
	const batch, heads, T, dh = 32, 8, 128, 16
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
		out := g.LocalMean(g.Input("s"), g.Input("v"), nil, Mask{Causal: true})
		return Outputs{Loss: g.Sum(out)}, g.Err()
	}, 0)
	in := map[string]*tensor.Dense{
		"s": tensor.New(tensor.WithShape(batch, heads, T, T), tensor.WithBacking(randn(batch*heads*T*T))),
		"v": tensor.New(tensor.WithShape(batch, heads, T, dh), tensor.WithBacking(randn(batch*heads*T*dh))),
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
}
