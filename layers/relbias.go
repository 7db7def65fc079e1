package layers

import (
	"fmt"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/onnx"
)

func init() {
	RegisterKernel(KernelForm{
		Name: "relbias", Syntax: "relbias(M)", Example: "exponential * relbias(32)", MinArgs: 1, MaxArgs: 1,
		Doc: "log K = b_head[clip(s − t, ±M)]: learned relative-position biases",
		Parse: func(args []SpecArg) (Term, error) {
			m, err := args[0].Int("max distance M", 1, maxSpecLength)
			return RelativeBias{MaxDistance: m}, err
		},
	})
}

// RelativeBias is a learned position kernel, log K(t, s) = b_head[clip(s − t)], with one
// bias per head and relative distance clipped to ±MaxDistance (Shaw et al., T5 without
// buckets): every distance beyond ±MaxDistance takes the bias of ±MaxDistance, so the
// kernel is defined at any sequence length, past the distances it trained on. Binding creates `<scope>.weight` [heads, 2·MaxDistance+1], initialised to 0
// so that a fresh layer is content-only.
type RelativeBias struct {
	MaxDistance int
	weight      *autodiff.Param
}

// Name returns the spec "relbias(M)".
func (r RelativeBias) Name() string { return formatArgs("relbias", r.MaxDistance) }

// MarshalText returns the spec.
func (r RelativeBias) MarshalText() ([]byte, error) { return []byte(r.Name()), nil }

// UnmarshalText parses a spec of a relative bias.
func (r *RelativeBias) UnmarshalText(b []byte) error { return unmarshalTerm(b, r) }

// Restrict returns m unchanged.
func (RelativeBias) Restrict(m autodiff.Mask) autodiff.Mask { return m }

// BindPosition creates the bias table under s.
func (r RelativeBias) BindPosition(s autodiff.Scope, heads int) (PositionKernel, error) {
	if r.MaxDistance < 0 {
		return nil, fmt.Errorf("relative bias %q: MaxDistance = %d, want >= 0", s.Name(), r.MaxDistance)
	}
	if heads <= 0 {
		return nil, fmt.Errorf("relative bias %q: heads = %d, want > 0", s.Name(), heads)
	}
	w, err := newParam(s, "relative bias", "weight", []int{heads, 2*r.MaxDistance + 1}, autodiff.Zeros())
	if err != nil {
		return nil, err
	}
	r.weight = w
	return r, nil
}

// Bind creates the bias table under s and returns it as the product of the uniform
// content kernel and the bound RelativeBias.
func (r RelativeBias) Bind(s autodiff.Scope, heads int) (ContentKernel, error) {
	b, err := r.BindPosition(s, heads)
	if err != nil {
		return nil, err
	}
	return Product{Content: Uniform{}, Position: b}, nil
}

// PositionScores returns the learned biases (P = heads), a one-hot selection of the
// table's columns (so the gradient reaches every used entry).
func (r RelativeBias) PositionScores(g *autodiff.Graph, tq, tk, offset int) *autodiff.Node {
	if r.weight == nil {
		return g.Fail(fmt.Errorf("relative bias: not bound to parameters (use it inside KernelAttention or call Bind)"))
	}
	width := 2*r.MaxDistance + 1
	onehot := make([]float64, width*tq*tk) // [width, tq·tk]
	for t := range tq {
		for s := range tk {
			d := min(max(s-(t+offset), -r.MaxDistance), r.MaxDistance)
			onehot[(d+r.MaxDistance)*tq*tk+t*tk+s] = 1
		}
	}
	heads := r.weight.Shape()[0]
	sel := g.MatMul(g.Param(r.weight), g.ConstTensor([]int{width, tq * tk}, onehot)) // [heads, tq·tk]
	return g.Reshape(sel, []int{heads * tq * tk})
}

// ONNXPositionScores writes the learned biases b_head[clip(s − t)] [H, Tq, Tk] into g.
func (r RelativeBias) ONNXPositionScores(g *onnx.Graph, pos ONNXPositions) string {
	if r.weight == nil {
		return g.Failf("relative bias: not bound to parameters")
	}
	m := int64(r.MaxDistance)
	d := g.Op("Min", []string{g.Op("Max", []string{pos.Diff, g.IntScalar(-m)}), g.IntScalar(m)})
	return g.Op("Gather", []string{ONNXParam(g, r.weight), g.Add(d, g.IntScalar(m))}, onnx.AttrInt("axis", 1))
}

// RelativeScores returns the learned table itself, [heads, 2·MaxDistance+1].
func (r RelativeBias) RelativeScores(g *autodiff.Graph, _, _, _ int) *autodiff.Node {
	if r.weight == nil {
		return g.Fail(fmt.Errorf("relative bias: not bound to parameters (use it inside KernelAttention or call Bind)"))
	}
	return g.Param(r.weight)
}
