package layers_test

import (
	"fmt"

	"gorgonia.org/tensor"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/layers"
)

// A pre-LN Transformer block whose attention is a Gaussian-kernel local mean with one
// learned bandwidth per head.
func ExampleNewBlock() {
	ps, _ := autodiff.NewParams(autodiff.Float32, 0)
	blk, err := layers.NewBlock(ps.Scope("blocks").Sub("0"), layers.BlockConfig{
		Dim: 16, Heads: 4, Init: layers.InitGPT,
		Attention: layers.AttentionConfig{
			Causal:    true,
			Kernel:    layers.Gaussian{},
			Bandwidth: layers.BandwidthConfig{Mode: layers.BandwidthHead, Init: 2},
		},
	})
	if err != nil {
		panic(err)
	}
	m := autodiff.NewModel(ps, func(g *autodiff.Graph) (autodiff.Outputs, error) {
		y := blk.Forward(g, g.Input("x"))
		return autodiff.Outputs{Values: map[string]*autodiff.Node{"y": y}}, g.Err()
	}, 0)
	res, err := m.Forward(map[string]*tensor.Dense{"x": tensor.New(tensor.WithShape(2, 5, 16), tensor.Of(tensor.Float32))})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Values["y"].Shape())
	fmt.Printf("%.4g\n", blk.Bandwidths()["blocks.0.attn.bandwidth"])
	// Output:
	// (2, 5, 16)
	// [2 2 2 2]
}
