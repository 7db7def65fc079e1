package layers

import (
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/locusml/locus/autodiff"
)

func TestConfigErrorsNameTheField(t *testing.T) {
	ps, _ := autodiff.NewParams(autodiff.Float64, 0)
	s := ps.Root()
	for _, c := range []struct {
		err  error
		want string
	}{
		{second(NewLinear(s.Sub("a"), LinearConfig{In: 0, Out: 3})), "LinearConfig.In"},
		{second(NewLinear(s.Sub("b"), LinearConfig{In: 2, Out: -1})), "LinearConfig.Out"},
		{second(NewEmbedding(s.Sub("c"), EmbeddingConfig{Vocab: 3})), "EmbeddingConfig.Dim"},
		{second(NewLayerNorm(s.Sub("d"), NormConfig{Dim: 4, Eps: -1})), "NormConfig.Eps"},
		{second(NewFeedForward(s.Sub("e"), FeedForwardConfig{Dim: 4, Dropout: 1})), "FeedForwardConfig.Dropout"},
		{second(NewFeedForward(s.Sub("f"), FeedForwardConfig{Dim: 4, Activation: 9})), "FeedForwardConfig.Activation"},
		{second(NewKernelAttention(s.Sub("g"), AttentionConfig{Dim: 6, Heads: 4})), "AttentionConfig.Dim"},
		{second(NewKernelAttention(s.Sub("h"), AttentionConfig{Dim: 6, Heads: 2, Rotary: true})), "AttentionConfig.Rotary"},
		{second(NewKernelAttention(s.Sub("i"), AttentionConfig{Dim: 4, Heads: 2, Bandwidth: BandwidthConfig{Mode: BandwidthHead, Init: 0.01, Min: 0.1}})), "BandwidthConfig.Init"},
		{second(NewKernelAttention(s.Sub("j"), AttentionConfig{Dim: 4, Heads: 2, Bandwidth: BandwidthConfig{K: -1}})), "BandwidthConfig.K"},
		{second(NewKernelAttention(s.Sub("k"), AttentionConfig{Dim: 4, Heads: 2, Kernel: Mixture{}})), "no components"},
		{second(NewBlock(s.Sub("l"), BlockConfig{Dim: 4, Heads: 3})), "AttentionConfig.Dim"},
		{second(NewBlock(s.Sub("m"), BlockConfig{Dim: 4, Heads: 2, Init: 7})), "Init"},
		{second(NewLearnedPositions(s.Sub("n"), PositionsConfig{Dim: 4})), "PositionsConfig.MaxLen"},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("error %v, want one naming %s", c.err, c.want)
		}
	}
	if _, err := NewLinear(s.Sub("dup"), LinearConfig{In: 1, Out: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := NewLinear(s.Sub("dup"), LinearConfig{In: 1, Out: 1}); err == nil || !strings.Contains(err.Error(), "dup.weight") {
		t.Errorf("duplicate scope: %v", err)
	}
}

func second[T any](_ T, err error) error { return err }

// TestShapeErrors checks that wrong input shapes become graph errors naming the layer
// and the shapes, never panics.
func TestShapeErrors(t *testing.T) {
	ps, _ := autodiff.NewParams(autodiff.Float64, 0)
	lin, _ := NewLinear(ps.Scope("proj"), LinearConfig{In: 4, Out: 2})
	attn, _ := NewKernelAttention(ps.Scope("attn"), AttentionConfig{Dim: 4, Heads: 2, KVDim: 3})
	blk, _ := NewBlock(ps.Scope("blk"), BlockConfig{Dim: 4, Heads: 2})
	pos, _ := NewLearnedPositions(ps.Scope("pos"), PositionsConfig{MaxLen: 2, Dim: 4})
	for _, c := range []struct {
		name string
		f    func(g *autodiff.Graph) *autodiff.Node
		want string
	}{
		{"linear", func(g *autodiff.Graph) *autodiff.Node { return lin.Forward(g, g.Input("x5")) }, `linear "proj": input [2 3 5], want [..., 4]`},
		{"attnQuery", func(g *autodiff.Graph) *autodiff.Node { return attn.Forward(g, g.Input("x5")) }, `kernel attention "attn"`},
		{"attnMem", func(g *autodiff.Graph) *autodiff.Node {
			return attn.Attend(g, g.Input("x4"), g.Input("x4"), AttendOptions{})
		}, "keys/values input [2 3 4], want [B, Tk, 3]"},
		{"keyMask", func(g *autodiff.Graph) *autodiff.Node {
			return blk.ForwardWith(g, g.Input("x4"), AttendOptions{KeyMask: g.Input("x4")})
		}, "key mask"},
		{"block2d", func(g *autodiff.Graph) *autodiff.Node { return blk.Forward(g, g.Input("flat")) }, "want [B, Tk, 4]"},
		{"positions", func(g *autodiff.Graph) *autodiff.Node { return pos.Forward(g, g.Input("x4"), 0) }, "outside the table"},
		{"nil", func(g *autodiff.Graph) *autodiff.Node { return lin.Forward(g, nil) }, "input 0 is nil"},
	} {
		m := autodiff.NewModel(ps, func(g *autodiff.Graph) (autodiff.Outputs, error) {
			return autodiff.Outputs{Values: map[string]*autodiff.Node{"y": c.f(g)}}, g.Err()
		}, 0)
		_, err := m.Forward(map[string]*tensor.Dense{
			"x5":   tensor.New(tensor.WithShape(2, 3, 5), tensor.Of(tensor.Float64)),
			"x4":   tensor.New(tensor.WithShape(2, 3, 4), tensor.Of(tensor.Float64)),
			"flat": tensor.New(tensor.WithShape(6, 4), tensor.Of(tensor.Float64)),
		})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}

func TestUnboundKernelErrors(t *testing.T) {
	ps, _ := autodiff.NewParams(autodiff.Float64, 0)
	m := autodiff.NewModel(ps, func(g *autodiff.Graph) (autodiff.Outputs, error) {
		q := g.Input("q")
		return autodiff.Outputs{Values: map[string]*autodiff.Node{"s": Mixture{Kernels: []ContentKernel{Gaussian{}}}.Scores(g, q, q, Fixed(1))}}, g.Err()
	}, 0)
	_, err := m.Forward(map[string]*tensor.Dense{"q": tensor.New(tensor.WithShape(1, 2, 2), tensor.Of(tensor.Float64))})
	if err == nil || !strings.Contains(err.Error(), "not bound") {
		t.Errorf("unbound mixture: %v", err)
	}
}
