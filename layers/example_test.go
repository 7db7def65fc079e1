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

// A Nadaraya–Watson regressor whose bandwidth is a parameter: the leave-one-out local
// mean of y (a hollow mask hides each point from itself), its squared error as the loss,
// and the gradient that an optimizer would step h with.
func ExampleNewBandwidth() {
	ps, _ := autodiff.NewParams(autodiff.Float64, 0)
	bw, err := layers.NewBandwidth(ps.Scope("nw"), layers.BandwidthConfig{Mode: layers.BandwidthLayer, Init: 0.5})
	if err != nil {
		panic(err)
	}
	m := autodiff.NewModel(ps, func(g *autodiff.Graph) (autodiff.Outputs, error) {
		x, y := g.Input("x"), g.Input("y") // [1, n, 1]
		pred := layers.LocalMean(g, x, x, y, layers.Gaussian{}, bw.Width(g), layers.LocalMeanOptions{Mask: autodiff.Mask{Hollow: true}})
		return autodiff.Outputs{Loss: g.Mean(g.Square(g.Sub(pred, y)))}, g.Err()
	}, 0)
	x, _ := autodiff.FromSlice([]float64{0, 0.5, 1, 1.5, 2}, 1, 5, 1)
	y, _ := autodiff.FromSlice([]float64{0, 0.5, 1, 1.5, 2}, 1, 5, 1) // y = x
	res, err := m.ForwardBackward(map[string]*tensor.Dense{"x": x, "y": y})
	if err != nil {
		panic(err)
	}
	fmt.Println(bw.Bandwidths())
	fmt.Printf("leave-one-out loss %.4f; a smaller h lowers it: %v\n", res.Loss, ps.Get("nw.bandwidth.rho").GradFloat64s()[0] > 0)
	// Output:
	// map[nw.bandwidth:[0.5]]
	// leave-one-out loss 0.1515; a smaller h lowers it: true
}
