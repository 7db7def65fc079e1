package layers

import (
	"math/rand/v2"
	"runtime"
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

// BenchmarkBlockDropout runs training steps (forward and backward, float32) of a GPT-2
// block with dropout 0.2 on its attention weights and residual branches, at the sizes of
// nanoGPT's CPU recipe (d=128, 4 heads, d_ff=512, T=64, B=12) and of its baby GPT (d=384,
// 6 heads, d_ff=1536, T=256, B=4 here), on the fused path and on the general one (scores,
// then LocalMeanDropout: the path attention dropout took before the fused ops dropped
// inside), and for reference without the attention dropout (noattndrop). Besides B/op and allocs/op of the steps it reports first-B, the bytes the
// first step allocates (compiling the graph and its buffers): the step's memory.
func BenchmarkBlockDropout(b *testing.B) {
	for _, size := range []struct {
		name                  string
		dim, heads, hidden, t int
		batch                 int
	}{{"recipe", 128, 4, 512, 64, 12}, {"baby", 384, 6, 1536, 256, 4}} {
		for _, path := range []string{"fused", "general", "noattndrop"} {
			b.Run(size.name+"/"+path, func(b *testing.B) {
				ps, _ := autodiff.NewParams(autodiff.Float32, 0)
				attnDrop := 0.2
				if path == "noattndrop" {
					attnDrop = 0
				}
				blk, err := NewBlock(ps.Root(), BlockConfig{Dim: size.dim, Heads: size.heads, Hidden: size.hidden, Init: InitGPT2, Depth: 6,
					Activation: GELUExact, Dropout: 0.2, Attention: AttentionConfig{Causal: true, Dropout: attnDrop}})
				if err != nil {
					b.Fatal(err)
				}
				blk.Attn.unfused = path == "general"
				x := randDense(rand.New(rand.NewPCG(1, 1)), 1, size.batch, size.t, size.dim)
				xf := denseOf(autodiff.Float32, x.Shape(), x.Data().([]float64))
				m := autodiff.NewModel(ps, func(g *autodiff.Graph) (autodiff.Outputs, error) {
					return autodiff.Outputs{Loss: g.Sum(g.Square(blk.Forward(g, g.Input("x"))))}, g.Err()
				}, 0)
				in := map[string]*tensor.Dense{"x": xf}
				run := func() {
					ps.ZeroGrad()
					if _, err := m.Run(in, autodiff.RunMode{Train: true, Backward: true}); err != nil {
						b.Fatal(err)
					}
				}
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				run()
				runtime.ReadMemStats(&after)
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					run()
				}
				b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc), "first-B")
			})
		}
	}
}
