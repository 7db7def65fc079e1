package layers

import (
	"fmt"

	"github.com/locusml/locus/autodiff"
)

// LinearConfig configures a Linear layer.
type LinearConfig struct {
	In, Out int  // input and output widths, > 0
	NoBias  bool // omit the bias
	Init    Init
}

// Validate reports the first invalid field.
func (c LinearConfig) Validate() error {
	if c.In <= 0 {
		return fmt.Errorf("LinearConfig.In = %d, want > 0", c.In)
	}
	if c.Out <= 0 {
		return fmt.Errorf("LinearConfig.Out = %d, want > 0", c.Out)
	}
	return c.Init.validate("LinearConfig.Init")
}

// Linear is the affine map y = x Wᵀ + b. The weight is stored [out, in], PyTorch's
// nn.Linear layout, so its parameters `<scope>.weight` and `<scope>.bias` [out] load and
// export without a transpose.
type Linear struct {
	Weight *autodiff.Param // [Out, In]
	Bias   *autodiff.Param // [Out], nil with NoBias
	In     int
	Out    int
	scope  string
}

// NewLinear creates a Linear layer's parameters under s.
func NewLinear(s autodiff.Scope, cfg LinearConfig) (*Linear, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("linear %q: %w", s.Name(), err)
	}
	l := &Linear{In: cfg.In, Out: cfg.Out, scope: s.Name()}
	var err error
	if l.Weight, err = newParam(s, "linear", "weight", []int{cfg.Out, cfg.In}, cfg.Init.linearWeight(cfg.In)); err != nil {
		return nil, err
	}
	if !cfg.NoBias {
		if l.Bias, err = newParam(s, "linear", "bias", []int{cfg.Out}, cfg.Init.linearBias(cfg.In)); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// Forward maps x [..., In] (for example [N, In] or [B, T, In]) to [..., Out].
func (l *Linear) Forward(g *autodiff.Graph, x *autodiff.Node) *autodiff.Node {
	if !ready(g, "linear", l.scope, x) {
		return nil
	}
	shape := x.Shape()
	if len(shape) < 1 || shape[len(shape)-1] != l.In {
		return fail(g, "linear", l.scope, "input %v, want [..., %d]", shape, l.In)
	}
	var b *autodiff.Node
	if l.Bias != nil {
		b = g.Param(l.Bias)
	}
	// One fused op: x·Wᵀ + b on the flattened rows, with no transposed copy of W and no
	// reshape copies of x or y.
	return g.Linear(x, g.Param(l.Weight), b)
}
