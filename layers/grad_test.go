package layers

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/locusml/locus/autodiff"
)

func TestLayerGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	x2 := randDense(rng, 1, 3, 4)
	x3 := randDense(rng, 1, 2, 3, 4)
	ids := tensor.New(tensor.WithShape(2, 3), tensor.WithBacking([]int{0, 4, 2, 2, 1, 4}))
	in := func(name string, d *tensor.Dense) map[string]*tensor.Dense { return map[string]*tensor.Dense{name: d} }
	cases := []struct {
		name   string
		make   func(s autodiff.Scope) (forwardFunc, error)
		inputs map[string]*tensor.Dense
		train  bool
	}{
		{"linear2d", func(s autodiff.Scope) (forwardFunc, error) {
			l, err := NewLinear(s, LinearConfig{In: 4, Out: 5})
			return func(g *autodiff.Graph) *autodiff.Node { return l.Forward(g, g.Input("x")) }, err
		}, in("x", x2), false},
		{"linear3dNoBias", func(s autodiff.Scope) (forwardFunc, error) {
			l, err := NewLinear(s, LinearConfig{In: 4, Out: 2, NoBias: true, Init: InitGPT})
			return func(g *autodiff.Graph) *autodiff.Node { return l.Forward(g, g.Input("x")) }, err
		}, in("x", x3), false},
		{"embedding", func(s autodiff.Scope) (forwardFunc, error) {
			e, err := NewEmbedding(s, EmbeddingConfig{Vocab: 5, Dim: 3})
			return func(g *autodiff.Graph) *autodiff.Node { return e.Forward(g, g.Input("ids")) }, err
		}, in("ids", ids), false},
		{"layerNorm", func(s autodiff.Scope) (forwardFunc, error) {
			n, err := NewLayerNorm(s, NormConfig{Dim: 4})
			return func(g *autodiff.Graph) *autodiff.Node { return n.Forward(g, g.Input("x")) }, err
		}, in("x", x3), false},
		{"rmsNorm", func(s autodiff.Scope) (forwardFunc, error) {
			n, err := NewRMSNorm(s, NormConfig{Dim: 4})
			return func(g *autodiff.Graph) *autodiff.Node { return n.Forward(g, g.Input("x")) }, err
		}, in("x", x3), false},
		{"learnedPositions", func(s autodiff.Scope) (forwardFunc, error) {
			p, err := NewLearnedPositions(s, PositionsConfig{MaxLen: 5, Dim: 4})
			return func(g *autodiff.Graph) *autodiff.Node { return p.Forward(g, g.Input("x"), 1) }, err
		}, in("x", x3), false},
		{"sinusoidal", func(s autodiff.Scope) (forwardFunc, error) {
			return func(g *autodiff.Graph) *autodiff.Node { return AddSinusoidal(g, g.Input("x"), 2) }, nil
		}, in("x", x3), false},
		{"rotary", func(s autodiff.Scope) (forwardFunc, error) {
			return func(g *autodiff.Graph) *autodiff.Node { return ApplyRotary(g, g.Input("x"), 1, 0) }, nil
		}, in("x", x3), false},
	}
	for _, act := range []Activation{GELUTanh, GELUExact, ReLU} {
		cases = append(cases, struct {
			name   string
			make   func(s autodiff.Scope) (forwardFunc, error)
			inputs map[string]*tensor.Dense
			train  bool
		}{"ffn-" + act.String(), func(s autodiff.Scope) (forwardFunc, error) {
			f, err := NewFeedForward(s, FeedForwardConfig{Dim: 4, Hidden: 6, Activation: act, Dropout: 0.25})
			return func(g *autodiff.Graph) *autodiff.Node { return f.Forward(g, g.Input("x")) }, err
		}, in("x", x3), act == ReLU})
	}
	for _, post := range []bool{false, true} {
		cases = append(cases, struct {
			name   string
			make   func(s autodiff.Scope) (forwardFunc, error)
			inputs map[string]*tensor.Dense
			train  bool
		}{fmt.Sprintf("block-postLN-RMSNorm=%v", post), func(s autodiff.Scope) (forwardFunc, error) {
			b, err := NewBlock(s, BlockConfig{Dim: 4, Heads: 2, Hidden: 8, PostLN: post, RMSNorm: post, Attention: AttentionConfig{Causal: true}})
			return func(g *autodiff.Graph) *autodiff.Node { return b.Forward(g, g.Input("x")) }, err
		}, in("x", x3), false})
	}
	for _, c := range cases {
		checkLayer(t, c.name, c.make, c.inputs, autodiff.GradCheck{Train: c.train})
	}
}

// kernelCases are the kernels every bandwidth mode is checked with.
func kernelCases() []ContentKernel {
	return []ContentKernel{
		Exponential{}, Gaussian{}, Laplacian{}, Cauchy{}, Epanechnikov{},
		Mixture{Kernels: []ContentKernel{Gaussian{}, Exponential{}, Epanechnikov{}}},
		Product{Content: Gaussian{}, Position: RelativeBias{MaxDistance: 1}},
		Product{Content: Cauchy{}, Position: DistancePenalty{Slope: 0.3}},
		Product{Content: Laplacian{}, Position: Box{Window: 2}},
		// Position kernels alone (uniform content) and a product of several.
		MustParseKernelSpec("window(2) * distance(0.5)").Kernel,
		MustParseKernelSpec("relbias(1)").Kernel,
		MustParseKernelSpec("gaussian * relbias(2) * window(3) * relbias(1)").Kernel,
	}
}

var bandwidthModes = []BandwidthMode{BandwidthFixed, BandwidthLayer, BandwidthHead, BandwidthQuery, BandwidthKNN}

// TestKernelBandwidthGradients gradient-checks kernel attention for every kernel ×
// bandwidth mode, alternating causal self-attention and padded cross-attention.
func TestKernelBandwidthGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	x := randDense(rng, 1, 2, 3, 4)
	mem := randDense(rng, 1, 2, 4, 3)
	keyMask := []float64{1, 1, 1, 0, 1, 1, 0, 0}
	i := 0
	for _, kern := range kernelCases() {
		for _, mode := range bandwidthModes {
			if _, uniform := contentOf(kern).(Uniform); uniform && learnsBandwidth(mode) {
				ps, _ := autodiff.NewParams(autodiff.Float64, 1)
				_, err := NewKernelAttention(ps.Scope("a"), AttentionConfig{Dim: 4, Heads: 2, Kernel: kern, Bandwidth: BandwidthConfig{Mode: mode}})
				if err == nil || !strings.Contains(err.Error(), "no bandwidth to learn") {
					t.Errorf("%s with bandwidth %v: %v, want a refusal", kern.Name(), mode, err)
				}
				continue
			}
			cross := i%2 == 1
			i++
			name := fmt.Sprintf("%s/%v/cross=%v", kern.Name(), mode, cross)
			inputs := map[string]*tensor.Dense{"x": x}
			cfg := AttentionConfig{Dim: 4, Heads: 2, Kernel: kern, Bandwidth: BandwidthConfig{Mode: mode, K: 2, Min: 0.05}, Causal: !cross}
			if cross {
				cfg.KVDim = 3
				inputs["mem"] = mem

			}
			checkLayer(t, name, func(s autodiff.Scope) (forwardFunc, error) {
				a, err := NewKernelAttention(s, cfg)
				return func(g *autodiff.Graph) *autodiff.Node {
					if cross {
						return a.Attend(g, g.Input("x"), g.Input("mem"), AttendOptions{KeyMask: g.ConstTensor([]int{2, 4}, keyMask)})
					}
					return a.Forward(g, g.Input("x"))
				}, err
			}, inputs, autodiff.GradCheck{MaxPerTensor: 3})
		}
	}
}

// TestAttentionOptionGradients covers hollow, sliding-window, rotary and bias-free
// attention and the standalone LocalMean.
func TestAttentionOptionGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	x := randDense(rng, 1, 2, 4, 4)
	for _, cfg := range []AttentionConfig{
		{Dim: 4, Heads: 2, Hollow: true, Kernel: Gaussian{}},
		{Dim: 4, Heads: 1, Window: 2, Rotary: true, NoBias: true},
		{Dim: 4, Heads: 2, Causal: true, Rotary: true, Kernel: Laplacian{}, Bandwidth: BandwidthConfig{Mode: BandwidthHead, Init: 1}},
	} {
		checkLayer(t, fmt.Sprintf("%+v", cfg), func(s autodiff.Scope) (forwardFunc, error) {
			a, err := NewKernelAttention(s, cfg)
			return func(g *autodiff.Graph) *autodiff.Node { return a.Forward(g, g.Input("x")) }, err
		}, map[string]*tensor.Dense{"x": x}, autodiff.GradCheck{})
	}
	q := randDense(rng, 1, 2, 3, 2)
	k := randDense(rng, 1, 2, 4, 2)
	v := randDense(rng, 1, 2, 4, 3)
	checkLayer(t, "LocalMean", func(s autodiff.Scope) (forwardFunc, error) {
		return func(g *autodiff.Graph) *autodiff.Node {
			h := KNNWidth(g, g.Input("q"), g.Input("k"), nil, 2, 0.1, autodiff.Mask{}, 1)
			return LocalMean(g, g.Input("q"), g.Input("k"), g.Input("v"), Cauchy{}, h, LocalMeanOptions{Mask: autodiff.Mask{Causal: true, Offset: 1}})
		}, nil
	}, map[string]*tensor.Dense{"q": q, "k": k, "v": v}, autodiff.GradCheck{})
}
