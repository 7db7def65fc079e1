package layers

import (
	"fmt"
	"math"

	"github.com/locusml/locus/autodiff"
)

// PositionKernel is a kernel K(t, s) on the positions of a query t and a key s
// (THEORY.md §1): a box part, which narrows which keys a query may see, and an optional
// smooth part added to the content scores (the product kernel K₁(q,k)·K₂(t,s)).
type PositionKernel interface {
	// Name identifies the kernel in logs.
	Name() string
	// Restrict returns m narrowed by the kernel's box (support).
	Restrict(m autodiff.Mask) autodiff.Mask
	// PositionScores returns log K(t, s) for queries at positions offset..offset+tq−1 and
	// keys 0..tk−1, or nil when the kernel is a pure box (0 inside). The result is a
	// vector [P·tq·tk] holding P row-major [tq, tk] slices, P = 1 (shared by all heads)
	// or one per head; it is flat so that a constant needs no graph op to build.
	PositionScores(g *autodiff.Graph, tq, tk, offset int) *autodiff.Node
}

// Learnable is a kernel with parameters. KernelAttention (or the caller of LocalMean)
// calls Bind once per layer; the kernel returned owns parameters under s, with one set
// per head where the kernel has per-head parameters.
type Learnable interface {
	Bind(s autodiff.Scope, heads int) (ContentKernel, error)
}

// Box is the box position kernel: 0 inside its support and −Inf outside, i.e. exactly
// a mask. Causal keeps keys s <= t; Window > 0 keeps |t − s| < Window (a sliding window
// of width 2·Window − 1, or Window with Causal). Key padding is the KeyMask of the
// attention call.
type Box struct {
	Causal bool
	Window int
}

// Name returns "box".
func (Box) Name() string { return "box" }

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

// DistancePenalty is the fixed Laplacian kernel on positions, log K(t, s) = −Slope·|t − s|
// (ALiBi's linear bias with one slope for all heads).
type DistancePenalty struct{ Slope float64 }

// Name returns "distance".
func (DistancePenalty) Name() string { return "distance" }

// Restrict returns m unchanged.
func (DistancePenalty) Restrict(m autodiff.Mask) autodiff.Mask { return m }

// PositionScores returns −Slope·|t − s| (P = 1).
func (d DistancePenalty) PositionScores(g *autodiff.Graph, tq, tk, offset int) *autodiff.Node {
	vals := make([]float64, tq*tk)
	for t := range tq {
		for s := range tk {
			vals[t*tk+s] = -d.Slope * math.Abs(float64(t+offset-s))
		}
	}
	return g.ConstTensor([]int{tq * tk}, vals)
}

// RelativeBias is a learned position kernel, log K(t, s) = b_head[clip(s − t)], with one
// bias per head and relative distance clipped to ±MaxDistance (Shaw et al., T5 without
// buckets). Bind creates `<scope>.weight` [heads, 2·MaxDistance+1], initialised to 0 so
// that a fresh layer is content-only.
type RelativeBias struct {
	MaxDistance int
	weight      *autodiff.Param
}

// Name returns "relative".
func (RelativeBias) Name() string { return "relative" }

// Restrict returns m unchanged.
func (RelativeBias) Restrict(m autodiff.Mask) autodiff.Mask { return m }

// Bind creates the bias table under s and returns it as the product of the constant
// content kernel and the bound RelativeBias.
func (r RelativeBias) Bind(s autodiff.Scope, heads int) (ContentKernel, error) {
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
	return Product{Content: constantKernel{}, Position: r}, nil
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

// constantKernel is K = 1 (log K = 0): the content part of a position-only kernel.
type constantKernel struct{}

func (constantKernel) Name() string                           { return "constant" }
func (constantKernel) LogK(q, k []float64, h float64) float64 { return 0 }
func (constantKernel) Scores(g *autodiff.Graph, q, k *autodiff.Node, _ Width) *autodiff.Node {
	if !checkQK(g, "constant", q, k) {
		return nil
	}
	qs, ks := q.Shape(), k.Shape()
	return g.ConstTensor([]int{qs[0], qs[1], ks[1]}, make([]float64, qs[0]*qs[1]*ks[1]))
}

// Product is the product kernel K₁(q, k)·K₂(t, s) of a content kernel and a position
// kernel (THEORY.md §1): its scores are the content scores plus the position scores,
// restricted to the position kernel's box. Scores and LogK give the content part; the
// attention layer adds PositionScores and applies Restrict.
type Product struct {
	Content  ContentKernel
	Position PositionKernel
}

// Name returns "product(<content>,<position>)".
func (p Product) Name() string {
	return "product(" + nameOf(p.Content) + "," + nameOfPos(p.Position) + ")"
}

func nameOf(k ContentKernel) string {
	if k == nil {
		return "<nil>"
	}
	return k.Name()
}

func nameOfPos(k PositionKernel) string {
	if k == nil {
		return "<nil>"
	}
	return k.Name()
}

// LogK returns the content kernel's log K(q, k).
func (p Product) LogK(q, k []float64, h float64) float64 { return p.Content.LogK(q, k, h) }

// Scores returns the content kernel's scores.
func (p Product) Scores(g *autodiff.Graph, q, k *autodiff.Node, h Width) *autodiff.Node {
	if p.Content == nil {
		return g.Fail(fmt.Errorf("kernel %s: nil content kernel", p.Name()))
	}
	return p.Content.Scores(g, q, k, h)
}

// Restrict applies the position kernel's box.
func (p Product) Restrict(m autodiff.Mask) autodiff.Mask {
	if p.Position == nil {
		return m
	}
	return p.Position.Restrict(m)
}

// PositionScores returns the position kernel's scores.
func (p Product) PositionScores(g *autodiff.Graph, tq, tk, offset int) *autodiff.Node {
	if p.Position == nil {
		return nil
	}
	return p.Position.PositionScores(g, tq, tk, offset)
}

// Bind binds whichever parts are Learnable, under s.Sub("content") and
// s.Sub("position").
func (p Product) Bind(s autodiff.Scope, heads int) (ContentKernel, error) {
	if p.Content == nil {
		return nil, fmt.Errorf("kernel %s: nil content kernel", p.Name())
	}
	if l, ok := p.Content.(Learnable); ok {
		c, err := l.Bind(s.Sub("content"), heads)
		if err != nil {
			return nil, err
		}
		p.Content = c
	}
	if l, ok := p.Position.(Learnable); ok {
		c, err := l.Bind(s.Sub("position"), heads)
		if err != nil {
			return nil, err
		}
		pk, ok := c.(PositionKernel)
		if !ok {
			return nil, fmt.Errorf("kernel %s: bound position kernel %s is not a PositionKernel", p.Name(), c.Name())
		}
		if inner, ok := pk.(Product); ok && inner.Position != nil {
			pk = inner.Position
		}
		p.Position = pk
	}
	return p, nil
}
