package layers

import (
	"fmt"
	"strings"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/onnx"
)

func init() {
	RegisterKernel(KernelForm{
		Name: "product", Syntax: "product(K1, K2, ...)", Example: "product(gaussian, window(16))", MinArgs: 2, MaxArgs: -1,
		Doc: "K1·K2·…, the same as K1 * K2 * …: one content kernel and position kernels",
		Parse: func(args []SpecArg) (Term, error) {
			terms := make([]Term, len(args))
			for i, a := range args {
				t, err := a.Term(fmt.Sprintf("product argument %d", i+1))
				if err != nil {
					return nil, err
				}
				terms[i] = t
			}
			return combine(terms, func(i int, format string, v ...any) error { return args[i].Errorf(format, v...) })
		},
	})
	RegisterKernel(contentForm(Uniform{}, "log K = 0: equal weights, the plain mean over the visible keys"))
}

// PositionKernel is a kernel K(t, s) on the positions of a query t and a key s
// (THEORY.md §1): a box part, which narrows which keys a query may see, and an optional
// smooth part added to the content scores (the product kernel K₁(q,k)·K₂(t,s)).
type PositionKernel interface {
	// Name returns the kernel's spec.
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

// LearnablePosition is a position kernel with parameters; Product.Bind binds it.
type LearnablePosition interface {
	BindPosition(s autodiff.Scope, heads int) (PositionKernel, error)
}

// Uniform is the constant kernel K = 1 (log K = 0): the local mean is the plain mean of
// the values a query may see. It is the content part of a product of position kernels
// only, e.g. window(8) alone.
type Uniform struct{}

// Name returns "uniform".
func (Uniform) Name() string { return "uniform" }

// MarshalText returns the spec.
func (k Uniform) MarshalText() ([]byte, error) { return []byte(k.Name()), nil }

// UnmarshalText parses a spec of this kernel.
func (k *Uniform) UnmarshalText(b []byte) error { return unmarshalTerm(b, k) }

// LogK returns 0.
func (Uniform) LogK(q, k []float64, h float64) float64 { checkLen(q, k); return 0 }

// Scores returns zeros [N, Tq, Tk], as 0·(q·k) so that the result is a node of the
// graph (a constant alone cannot be reshaped by gorgonia) with a zero gradient.
func (Uniform) Scores(g *autodiff.Graph, q, k *autodiff.Node, _ Width) *autodiff.Node {
	if !checkQK(g, "uniform", q, k) {
		return nil
	}
	return g.Scale(g.BatchedMatMul(q, k, false, true), 0)
}

// pairKernel returns the kernel's fast path (autodiff.PairKernel, see pairOf).
func (k Uniform) pairKernel() autodiff.PairKernel { return uniformPair(k) }

// uniformPair is Uniform's fast path: its scores and gradients from the pair terms, in
// float64 rows and float32 ones.
type uniformPair Uniform

// Name returns Uniform's spec.
func (k uniformPair) Name() string { return Uniform(k).Name() }

// PairTerms reads nothing (autodiff.PairKernel, for the tiled local mean).
func (uniformPair) PairTerms() (dot, dist bool) { return false, false }

// PairScores sets s = 0.
func (uniformPair) PairScores(s, _, _ []float64, _ float64) { clear(s) }

// PairGrads returns 0: the scores depend on nothing.
func (uniformPair) PairGrads(_, _, _ []float64, _ float64, _, _ []float64) float64 { return 0 }

// PairScores32 sets s = 0 (autodiff.PairKernel32).
func (uniformPair) PairScores32(s, _ []float32, _ float32) { clear(s) }

// PairGrads32 sets g = 0 and returns 0: the scores depend on nothing.
func (uniformPair) PairGrads32(g, _ []float32, _ float32) float64 {
	clear(g)
	return 0
}

// Product is the product kernel K₁(q, k)·K₂(t, s) of a content kernel and a position
// kernel (THEORY.md §1): its scores are the content scores plus the position scores,
// restricted to the position kernel's box. Scores and LogK give the content part; the
// attention layer adds PositionScores and applies Restrict. Several position kernels
// multiply as a PositionProduct.
type Product struct {
	Content  ContentKernel
	Position PositionKernel
}

// Name returns the spec "<content> * <position>", leaving out a uniform content kernel.
func (p Product) Name() string {
	var parts []string
	if _, uniform := p.Content.(Uniform); !uniform || p.Position == nil {
		parts = append(parts, nameOf(p.Content))
	}
	if p.Position != nil {
		parts = append(parts, p.Position.Name())
	}
	return strings.Join(parts, " * ")
}

// MarshalText returns the spec.
func (p Product) MarshalText() ([]byte, error) { return []byte(p.Name()), nil }

// UnmarshalText parses a spec of a product.
func (p *Product) UnmarshalText(b []byte) error { return unmarshalTerm(b, p) }

func nameOf(k ContentKernel) string {
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

// Restrict applies the position kernels' boxes.
func (p Product) Restrict(m autodiff.Mask) autodiff.Mask {
	for _, f := range positionFactors(p) {
		m = f.Restrict(m)
	}
	return m
}

// PositionScores returns the position kernel's scores.
func (p Product) PositionScores(g *autodiff.Graph, tq, tk, offset int) *autodiff.Node {
	if p.Position == nil {
		return nil
	}
	return p.Position.PositionScores(g, tq, tk, offset)
}

// Bind binds whichever parts are learnable, under s.Sub("content") and
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
	if l, ok := p.Position.(LearnablePosition); ok {
		pk, err := l.BindPosition(s.Sub("position"), heads)
		if err != nil {
			return nil, err
		}
		p.Position = pk
	}
	return p, nil
}

// PositionProduct is the product of several position kernels: their boxes intersect and
// their scores add. Learnable factors bind under "<scope>.<i>".
type PositionProduct []PositionKernel

// Name returns the factors' specs joined by " * ".
func (pp PositionProduct) Name() string {
	names := make([]string, len(pp))
	for i, f := range pp {
		names[i] = f.Name()
	}
	return strings.Join(names, " * ")
}

// Restrict applies every factor's box.
func (pp PositionProduct) Restrict(m autodiff.Mask) autodiff.Mask {
	for _, f := range pp {
		m = f.Restrict(m)
	}
	return m
}

// PositionScores returns the sum of the factors' scores, which must have one size
// (attention adds each factor's scores on its own, so sizes may differ there).
func (pp PositionProduct) PositionScores(g *autodiff.Graph, tq, tk, offset int) *autodiff.Node {
	var sum *autodiff.Node
	for _, f := range pp {
		s := f.PositionScores(g, tq, tk, offset)
		switch {
		case s == nil:
		case sum == nil:
			sum = s
		case len(s.Shape()) != 1 || s.Shape()[0] != sum.Shape()[0]:
			return g.Fail(fmt.Errorf("kernel %s: position scores of sizes %v and %v", pp.Name(), sum.Shape(), s.Shape()))
		default:
			sum = g.Add(sum, s)
		}
	}
	return sum
}

// BindPosition binds the learnable factors, factor i under s.Sub("<i>").
func (pp PositionProduct) BindPosition(s autodiff.Scope, heads int) (PositionKernel, error) {
	out := make(PositionProduct, len(pp))
	for i, f := range pp {
		out[i] = f
		if l, ok := f.(LearnablePosition); ok {
			b, err := l.BindPosition(s.Subf("%d", i), heads)
			if err != nil {
				return nil, err
			}
			out[i] = b
		}
	}
	return out, nil
}

// contentOf returns the content kernel of k: k itself unless k is a Product.
func contentOf(k ContentKernel) ContentKernel {
	for {
		p, ok := k.(Product)
		if !ok {
			return k
		}
		k = p.Content
	}
}

// HasPositions reports whether k has position factors (causal, window, distance, relbias,
// …): its scores then depend on where a query and a key stand in their sequences, not only
// on their features.
func HasPositions(k ContentKernel) bool { return len(positionFactors(k)) > 0 }

// positionFactors returns the position kernels of k: none unless k is a Product, whose
// content may itself be a Product.
func positionFactors(k ContentKernel) []PositionKernel {
	p, ok := k.(Product)
	if !ok {
		return nil
	}
	out := positionFactors(p.Content)
	switch pos := p.Position.(type) {
	case nil:
	case PositionProduct:
		out = append(out, pos...)
	default:
		out = append(out, pos)
	}
	return out
}

// ONNXScores writes zeros [B, H, Tq, Tk] into g.
func (Uniform) ONNXScores(g *onnx.Graph, q, k string, _ ONNXWidth) string {
	return g.Scale(g.MatMul(q, g.Transpose(k, 0, 1, 3, 2)), 0)
}

// ONNXScores writes the content kernel's scores into g; the attention layer adds the
// position kernels' scores and box.
func (p Product) ONNXScores(g *onnx.Graph, q, k string, h ONNXWidth) string {
	if p.Content == nil {
		return g.Failf("kernel %s: nil content kernel", p.Name())
	}
	return onnxKernelScores(g, p.Content, q, k, h)
}

// ONNXPositionScores writes the sum of the factors' scores into g.
func (pp PositionProduct) ONNXPositionScores(g *onnx.Graph, pos ONNXPositions) string {
	sum := ""
	for _, f := range pp {
		pk, ok := f.(ONNXPositionKernel)
		if !ok {
			return g.Failf("position kernel %s has no ONNX form", f.Name())
		}
		switch s := pk.ONNXPositionScores(g, pos); {
		case s == "":
		case sum == "":
			sum = s
		default:
			sum = g.Add(sum, s)
		}
	}
	return sum
}

// RelativePositionKernel is a PositionKernel whose scores depend on the relative position
// s − t alone, clipped to ±M: the form that the tiled local mean
// (autodiff.Graph.TiledLocalMean) evaluates inside its tiles without an N·Tq·Tk tensor.
type RelativePositionKernel interface {
	PositionKernel
	// RelativeScores returns the table [P, 2M+1] of log K at s − t − offset = −M..M
	// (beyond ±M, the edge entries), P = 1 or one row per head, or nil for a pure box.
	RelativeScores(g *autodiff.Graph, tq, tk, offset int) *autodiff.Node
}

// RelativeScores returns the sum of the factors' tables, each widened to the largest M
// and to one row per head where any factor has one.
func (pp PositionProduct) RelativeScores(g *autodiff.Graph, tq, tk, offset int) *autodiff.Node {
	var tables []*autodiff.Node
	for _, f := range pp {
		r, ok := f.(RelativePositionKernel)
		if !ok {
			return g.Fail(fmt.Errorf("kernel %s: factor %s is not a relative position kernel", pp.Name(), f.Name()))
		}
		if t := r.RelativeScores(g, tq, tk, offset); t != nil {
			tables = append(tables, t)
		}
	}
	return sumRelativeTables(g, tables)
}

// sumRelativeTables adds tables [P_i, 2M_i+1] as [P, 2M+1], P and M the largest.
func sumRelativeTables(g *autodiff.Graph, tables []*autodiff.Node) *autodiff.Node {
	if len(tables) == 0 || g.Err() != nil {
		return nil
	}
	if len(tables) == 1 {
		return tables[0]
	}
	p, m := 1, 0
	for _, t := range tables {
		p, m = max(p, t.Shape()[0]), max(m, t.Shape()[1]/2)
	}
	var sum *autodiff.Node
	for _, t := range tables {
		tp, tm := t.Shape()[0], t.Shape()[1]/2
		if tm < m { // widen: entry r of the result is entry clip(r, ±tm) of t
			sel := make([]float64, (2*tm+1)*(2*m+1))
			for r := -m; r <= m; r++ {
				sel[(min(max(r, -tm), tm)+tm)*(2*m+1)+r+m] = 1
			}
			t = g.MatMul(t, g.ConstTensor([]int{2*tm + 1, 2*m + 1}, sel))
		}
		if tp < p {
			t = g.MatMul(g.ConstTensor([]int{p, 1}, ones(p)), t)
		}
		if sum == nil {
			sum = t
		} else {
			sum = g.Add(sum, t)
		}
	}
	return sum
}

// relativeScores returns the summed relative-position table of k's position factors
// (nil when they are all boxes) and whether every factor is relative.
func relativeScores(g *autodiff.Graph, k ContentKernel, tq, tk, offset int) (*autodiff.Node, bool) {
	factors := positionFactors(k)
	for _, f := range factors {
		if _, ok := f.(RelativePositionKernel); !ok {
			return nil, false
		}
	}
	var tables []*autodiff.Node
	for _, f := range factors {
		if t := f.(RelativePositionKernel).RelativeScores(g, tq, tk, offset); t != nil {
			tables = append(tables, t)
		}
	}
	return sumRelativeTables(g, tables), true
}
