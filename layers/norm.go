package layers

import (
	"fmt"
	"math"

	"github.com/locusml/locus/autodiff"
)

// defaultNormEps is PyTorch's nn.LayerNorm default.
const defaultNormEps = 1e-5

// NormConfig configures LayerNorm and RMSNorm.
type NormConfig struct {
	Dim    int     // width of the normalised (last) axis, > 0
	Eps    float64 // added to the variance; 0 means 1e-5
	NoBias bool    // LayerNorm without the additive bias (RMSNorm never has one)
}

// Validate reports the first invalid field.
func (c NormConfig) Validate() error {
	if c.Dim <= 0 {
		return fmt.Errorf("NormConfig.Dim = %d, want > 0", c.Dim)
	}
	if c.Eps < 0 || math.IsNaN(c.Eps) || math.IsInf(c.Eps, 0) {
		return fmt.Errorf("NormConfig.Eps = %g, want a finite value >= 0", c.Eps)
	}
	return nil
}

func (c NormConfig) eps() float64 {
	if c.Eps == 0 {
		return defaultNormEps
	}
	return c.Eps
}

// Norm is a normalisation layer: LayerNorm or RMSNorm.
type Norm interface {
	Forward(g *autodiff.Graph, x *autodiff.Node) *autodiff.Node
}

// LayerNorm is PyTorch's nn.LayerNorm over the last axis: (x − mean)/√(var + eps)·weight
// + bias with the biased variance. Parameters: `<scope>.weight` [Dim] (init 1) and
// `<scope>.bias` [Dim] (init 0).
type LayerNorm struct {
	Weight *autodiff.Param
	Bias   *autodiff.Param // nil with NoBias
	Eps    float64
	scope  string
}

// NewLayerNorm creates a LayerNorm's parameters under s.
func NewLayerNorm(s autodiff.Scope, cfg NormConfig) (*LayerNorm, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("layer norm %q: %w", s.Name(), err)
	}
	n := &LayerNorm{Eps: cfg.eps(), scope: s.Name()}
	var err error
	if n.Weight, err = newParam(s, "layer norm", "weight", []int{cfg.Dim}, autodiff.Ones()); err != nil {
		return nil, err
	}
	if !cfg.NoBias {
		if n.Bias, err = newParam(s, "layer norm", "bias", []int{cfg.Dim}, autodiff.Zeros()); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// Forward normalises x [..., Dim].
func (n *LayerNorm) Forward(g *autodiff.Graph, x *autodiff.Node) *autodiff.Node {
	if !ready(g, "layer norm", n.scope, x) {
		return nil
	}
	var b *autodiff.Node
	if n.Bias != nil {
		b = g.Param(n.Bias)
	}
	return g.LayerNorm(x, g.Param(n.Weight), b, n.Eps)
}

// RMSNorm normalises by the root mean square: x/√(mean(x²) + eps)·weight, with
// `<scope>.weight` [Dim] (init 1).
type RMSNorm struct {
	Weight *autodiff.Param
	Eps    float64
	scope  string
}

// NewRMSNorm creates an RMSNorm's parameter under s.
func NewRMSNorm(s autodiff.Scope, cfg NormConfig) (*RMSNorm, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("rms norm %q: %w", s.Name(), err)
	}
	w, err := newParam(s, "rms norm", "weight", []int{cfg.Dim}, autodiff.Ones())
	if err != nil {
		return nil, err
	}
	return &RMSNorm{Weight: w, Eps: cfg.eps(), scope: s.Name()}, nil
}

// Forward normalises x [..., Dim].
func (n *RMSNorm) Forward(g *autodiff.Graph, x *autodiff.Node) *autodiff.Node {
	if !ready(g, "rms norm", n.scope, x) {
		return nil
	}
	return g.RMSNorm(x, g.Param(n.Weight), n.Eps)
}
