package layers

import (
	"fmt"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/onnx"
)

func init() {
	RegisterKernel(KernelForm{
		Name: "causal", Example: "exponential * causal", Doc: "box 1[s ≤ t]: a query sees no later key",
		Parse: func([]SpecArg) (Term, error) { return Box{Causal: true}, nil },
	})
	RegisterKernel(KernelForm{
		Name: "window", Syntax: "window(W)", Example: "gaussian * window(16)", MinArgs: 1, MaxArgs: 1,
		Doc: "box 1[|t − s| < W]: a sliding window of W keys each side",
		Parse: func(args []SpecArg) (Term, error) {
			w, err := args[0].Int("window width W", 1, maxSpecLength)
			return Box{Window: w}, err
		},
	})
}

// maxSpecLength bounds the lengths a spec may name (window widths, relative distances).
const maxSpecLength = 1 << 20

// Box is the box position kernel: 0 inside its support and −Inf outside, i.e. exactly
// a mask. Causal keeps keys s <= t; Window > 0 keeps |t − s| < Window (a sliding window
// of width 2·Window − 1, or Window with Causal). Key padding is the KeyMask of the
// attention call.
type Box struct {
	Causal bool
	Window int
}

// Name returns the spec: "causal", "window(W)", "causal * window(W)", or "uniform" for
// the box that keeps every key.
func (b Box) Name() string {
	switch {
	case b.Causal && b.Window > 0:
		return "causal * " + formatArgs("window", b.Window)
	case b.Causal:
		return "causal"
	case b.Window > 0:
		return formatArgs("window", b.Window)
	}
	return "uniform"
}

// MarshalText returns the spec.
func (b Box) MarshalText() ([]byte, error) { return []byte(b.Name()), nil }

// UnmarshalText parses a spec of a box.
func (b *Box) UnmarshalText(t []byte) error { return unmarshalTerm(t, b) }

// merge returns the product of two boxes: the intersection of their supports.
func (b Box) merge(c Box) Box {
	m := c.Restrict(autodiff.Mask{Causal: b.Causal, Window: b.Window})
	return Box{Causal: m.Causal, Window: m.Window}
}

// Restrict adds the box's rules to m.
func (b Box) Restrict(m autodiff.Mask) autodiff.Mask {
	m.Causal = m.Causal || b.Causal
	if b.Window > 0 && (m.Window == 0 || b.Window < m.Window) {
		m.Window = b.Window
	}
	return m
}

// PositionScores returns nil: a box is all mask.
func (Box) PositionScores(*autodiff.Graph, int, int, int) *autodiff.Node { return nil }

// ONNXPositionScores returns "": a box is all mask, applied through pos.Visible.
func (Box) ONNXPositionScores(*onnx.Graph, ONNXPositions) string { return "" }

// RelativeScores returns nil: a box is all mask.
func (Box) RelativeScores(*autodiff.Graph, int, int, int) *autodiff.Node { return nil }

// CheckWindow reports a window of k's box kernels wider than a sequence of maxLen
// positions: window(W) keeps |t − s| < W, so with W > maxLen it hides no key and the
// spec asks for a sparsity it cannot have.
func CheckWindow(k ContentKernel, maxLen int) error {
	for _, f := range positionFactors(k) {
		if b, ok := f.(Box); ok && b.Window > maxLen {
			return fmt.Errorf("kernel %s: window(%d) is wider than the sequence (%d positions), so it hides no key; use a window of at most %d or none", k.Name(), b.Window, maxLen, maxLen)
		}
	}
	return nil
}
