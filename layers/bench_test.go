package layers

import (
	"math/rand/v2"
	"testing"

	"gorgonia.org/tensor"

	"github.com/locusml/locus/autodiff"
)

// benchBlock times one forward+backward pass of a charlm-sized block (B=32, T=64, d=64,
// 4 heads, d_ff=256, causal) in float32 with the given kernel.
func benchBlock(b *testing.B, kern ContentKernel) {
	ps, _ := autodiff.NewParams(autodiff.Float32, 0)
	blk, err := NewBlock(ps.Root(), BlockConfig{Dim: 64, Heads: 4, Hidden: 256, Init: InitGPT, Attention: AttentionConfig{Causal: true, Kernel: kern}})
	if err != nil {
		b.Fatal(err)
	}
	x := randDense(rand.New(rand.NewPCG(1, 1)), 1, 32, 64, 64)
	xf := denseOf(autodiff.Float32, x.Shape(), x.Data().([]float64))
	m := autodiff.NewModel(ps, func(g *autodiff.Graph) (autodiff.Outputs, error) {
		return autodiff.Outputs{Loss: g.Sum(g.Square(blk.Forward(g, g.Input("x"))))}, g.Err()
	}, 0)
	in := map[string]*tensor.Dense{"x": xf}
	for b.Loop() {
		ps.ZeroGrad()
		if _, err := m.Run(in, autodiff.RunMode{Backward: true}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBlockExponential(b *testing.B) { benchBlock(b, Exponential{}) }
func BenchmarkBlockGaussian(b *testing.B)    { benchBlock(b, Gaussian{}) }
