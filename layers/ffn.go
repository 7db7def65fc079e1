package layers

import (
	"fmt"

	"github.com/locusml/locus/autodiff"
)

// Activation is the pointwise non-linearity of a feed-forward layer.
type Activation int

const (
	// GELUTanh is GELU in its tanh form, the reference workloads' choice (the zero value).
	GELUTanh Activation = iota
	// GELUExact is GELU with erf, PyTorch's nn.GELU default.
	GELUExact
	// ReLU is max(x, 0).
	ReLU
)

var activationNames = []string{"gelu_tanh", "gelu", "relu"}

// ActivationNames returns the text forms of the activations.
func ActivationNames() []string { return append([]string(nil), activationNames...) }

// String returns "gelu_tanh", "gelu" or "relu".
func (a Activation) String() string { return stringEnum("Activation", activationNames, a) }

// MarshalText returns the activation's name.
func (a Activation) MarshalText() ([]byte, error) {
	return marshalEnum("activation", activationNames, a)
}

// UnmarshalText parses an activation's name.
func (a *Activation) UnmarshalText(b []byte) (err error) {
	*a, err = parseEnum[Activation]("activation", activationNames, string(b))
	return err
}

// Apply applies the activation to x.
func (a Activation) Apply(g *autodiff.Graph, x *autodiff.Node) *autodiff.Node {
	switch a {
	case GELUTanh:
		return g.GELU(x, autodiff.GELUTanh)
	case GELUExact:
		return g.GELU(x, autodiff.GELUExact)
	case ReLU:
		return g.ReLU(x)
	}
	return g.Fail(fmt.Errorf("unknown activation %v", a))
}

func (a Activation) validate(field string) error {
	if a < GELUTanh || a > ReLU {
		return fmt.Errorf("%s: unknown activation %v", field, a)
	}
	return nil
}

// FeedForwardConfig configures a position-wise feed-forward layer.
type FeedForwardConfig struct {
	Dim        int        // input and output width
	Hidden     int        // inner width d_ff; 0 means 4·Dim
	Activation Activation // GELUTanh by default
	Dropout    float64    // dropout on the inner activations, in training; 0: none
	NoBias     bool       // omit the biases of fc1 and fc2
	Init       Init
}

// Validate reports the first invalid field.
func (c FeedForwardConfig) Validate() error {
	if c.Dim <= 0 {
		return fmt.Errorf("FeedForwardConfig.Dim = %d, want > 0", c.Dim)
	}
	if c.Hidden < 0 {
		return fmt.Errorf("FeedForwardConfig.Hidden = %d, want >= 0 (0 means 4·Dim)", c.Hidden)
	}
	if !(c.Dropout >= 0 && c.Dropout < 1) {
		return fmt.Errorf("FeedForwardConfig.Dropout = %g, want 0 <= p < 1", c.Dropout)
	}
	if err := c.Activation.validate("FeedForwardConfig.Activation"); err != nil {
		return err
	}
	return c.Init.validate("FeedForwardConfig.Init")
}

// FeedForward is the non-linear map between local means (THEORY.md §5):
// fc2(act(fc1(x))), with parameters `<scope>.fc1.weight/bias` [Hidden, Dim], [Hidden]
// and `<scope>.fc2.weight/bias` [Dim, Hidden], [Dim] (no biases with NoBias).
type FeedForward struct {
	FC1, FC2   *Linear
	Activation Activation
	Dropout    float64
	scope      string
}

// NewFeedForward creates a FeedForward's parameters under s.
func NewFeedForward(s autodiff.Scope, cfg FeedForwardConfig) (*FeedForward, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("feed-forward %q: %w", s.Name(), err)
	}
	hidden := cfg.Hidden
	if hidden == 0 {
		hidden = 4 * cfg.Dim
	}
	fc1, err := NewLinear(s.Sub("fc1"), LinearConfig{In: cfg.Dim, Out: hidden, NoBias: cfg.NoBias, Init: cfg.Init})
	if err != nil {
		return nil, err
	}
	fc2, err := NewLinear(s.Sub("fc2"), LinearConfig{In: hidden, Out: cfg.Dim, NoBias: cfg.NoBias, Init: cfg.Init})
	if err != nil {
		return nil, err
	}
	return &FeedForward{FC1: fc1, FC2: fc2, Activation: cfg.Activation, Dropout: cfg.Dropout, scope: s.Name()}, nil
}

// Forward maps x [..., Dim] to [..., Dim].
func (f *FeedForward) Forward(g *autodiff.Graph, x *autodiff.Node) *autodiff.Node {
	if !ready(g, "feed-forward", f.scope, x) {
		return nil
	}
	h := f.Activation.Apply(g, f.FC1.Forward(g, x))
	if f.Dropout > 0 {
		h = g.Dropout(h, f.Dropout)
	}
	return f.FC2.Forward(g, h)
}

// Dropout zeroes each element with probability P in training mode and scales the rest
// by 1/(1−P); in evaluation it is the identity. It has no parameters.
type Dropout struct{ P float64 }

// Forward applies dropout to x.
func (d Dropout) Forward(g *autodiff.Graph, x *autodiff.Node) *autodiff.Node {
	if g == nil || g.Err() != nil {
		return nil
	}
	return g.Dropout(x, d.P)
}
