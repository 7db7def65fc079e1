package layers

import (
	"fmt"
	"math"
	"strings"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/onnx"
)

func init() {
	RegisterKernel(KernelForm{
		Name: "mixture", Syntax: "mixture(K1, K2, ...)", Example: "mixture(exponential, laplacian)", MinArgs: 1, MaxArgs: -1,
		Doc: "log Σ_l softmax(a)_l K_l: content kernels with learned weights",
		Parse: func(args []SpecArg) (Term, error) {
			m := Mixture{Kernels: make([]ContentKernel, len(args))}
			for i, a := range args {
				k, err := a.Content(fmt.Sprintf("mixture component %d", i+1))
				if err != nil {
					return nil, err
				}
				m.Kernels[i] = k
			}
			return m, nil
		},
	})
}

// Mixture is the multi-kernel log Σ_l w_l K_l(q, k) with weights w = softmax(a) on the
// simplex (THEORY.md §1, §4), every component at the same bandwidth. Bind creates the
// logits a as `<scope>.logits` [L] (init 0: equal weights), shared by all heads. The
// scores are combined by a stable log-sum-exp, so a compact component's −Inf only
// removes that component's mass.
type Mixture struct {
	Kernels []ContentKernel
	logits  *autodiff.Param
}

// Name returns the spec "mixture(<k1>, <k2>, ...)".
func (m Mixture) Name() string {
	names := make([]string, len(m.Kernels))
	for i, k := range m.Kernels {
		names[i] = nameOf(k)
	}
	return "mixture(" + strings.Join(names, ", ") + ")"
}

// MarshalText returns the spec.
func (m Mixture) MarshalText() ([]byte, error) { return []byte(m.Name()), nil }

// UnmarshalText parses a spec of a mixture.
func (m *Mixture) UnmarshalText(b []byte) error { return unmarshalTerm(b, m) }

// Weights returns the simplex weights softmax(a) from the current parameter values
// (uniform before Bind).
func (m Mixture) Weights() []float64 {
	w := make([]float64, len(m.Kernels))
	if m.logits == nil {
		for i := range w {
			w[i] = 1 / float64(len(w))
		}
		return w
	}
	mx := math.Inf(-1)
	for i := range w {
		mx = math.Max(mx, m.logits.At(i))
	}
	var s float64
	for i := range w {
		w[i] = math.Exp(m.logits.At(i) - mx)
		s += w[i]
	}
	for i := range w {
		w[i] /= s
	}
	return w
}

// LogK returns log Σ_l w_l K_l(q, k) with the current weights.
func (m Mixture) LogK(q, k []float64, h float64) float64 {
	w := m.Weights()
	mx := math.Inf(-1)
	terms := make([]float64, len(m.Kernels))
	for i, kern := range m.Kernels {
		terms[i] = math.Log(w[i]) + kern.LogK(q, k, h)
		mx = math.Max(mx, terms[i])
	}
	if math.IsInf(mx, -1) {
		return mx
	}
	var s float64
	for _, t := range terms {
		s += math.Exp(t - mx)
	}
	return mx + math.Log(s)
}

// Bind creates the mixture logits under s and binds Learnable components under
// s.Sub("<i>").
func (m Mixture) Bind(s autodiff.Scope, heads int) (ContentKernel, error) {
	if len(m.Kernels) == 0 {
		return nil, fmt.Errorf("mixture kernel %q: no components", s.Name())
	}
	ks := make([]ContentKernel, len(m.Kernels))
	for i, k := range m.Kernels {
		if k == nil {
			return nil, fmt.Errorf("mixture kernel %q: component %d is nil", s.Name(), i)
		}
		if _, ok := k.(PositionKernel); ok {
			return nil, fmt.Errorf("mixture kernel %q: component %s has a position part; put the mixture inside a Product instead", s.Name(), k.Name())
		}
		ks[i] = k
		if l, ok := k.(Learnable); ok {
			b, err := l.Bind(s.Subf("%d", i), heads)
			if err != nil {
				return nil, err
			}
			ks[i] = b
		}
	}
	p, err := newParam(s, "mixture kernel", "logits", []int{len(m.Kernels)}, autodiff.Zeros())
	if err != nil {
		return nil, err
	}
	return Mixture{Kernels: ks, logits: p}, nil
}

// Scores returns LogSumExp_l(log softmax(a)_l + s_l) over the component scores.
func (m Mixture) Scores(g *autodiff.Graph, q, k *autodiff.Node, h Width) *autodiff.Node {
	if !checkQK(g, m.Name(), q, k) {
		return nil
	}
	if m.logits == nil {
		return g.Fail(fmt.Errorf("kernel %s: not bound to parameters (use it inside KernelAttention or call Bind)", m.Name()))
	}
	parts := make([]*autodiff.Node, len(m.Kernels))
	var shape []int
	for i, kern := range m.Kernels {
		s := kern.Scores(g, q, k, h)
		if s == nil {
			return nil
		}
		shape = s.Shape()
		parts[i] = g.Reshape(s, append(shape, 1))
	}
	stacked := g.Concat(len(shape), parts...) // [N, Tq, Tk, L]
	logw := g.Reshape(g.LogSoftmax(g.Reshape(g.Param(m.logits), []int{1, len(m.Kernels)}), nil), []int{len(m.Kernels)})
	return g.LogSumExp(g.AddBias(stacked, logw))
}

// ONNXScores writes LogSumExp_l(log softmax(a)_l + s_l) into g, stable where every
// component is −Inf.
func (m Mixture) ONNXScores(g *onnx.Graph, q, k string, h ONNXWidth) string {
	if m.logits == nil {
		return g.Failf("kernel %s: not bound to parameters", m.Name())
	}
	parts := make([]string, len(m.Kernels))
	for i, kern := range m.Kernels {
		parts[i] = g.Unsqueeze(onnxKernelScores(g, kern, q, k, h), 4)
	}
	stacked := g.Op("Concat", parts, onnx.AttrInt("axis", 4)) // [B, H, Tq, Tk, L]
	logw := g.Op("LogSoftmax", []string{ONNXParam(g, m.logits)}, onnx.AttrInt("axis", 0))
	x := g.Add(stacked, logw)
	mx := g.ReduceMax(x, true, -1)
	mx = g.Where(g.Unary("IsInf", mx), g.Scalar(0), mx)
	lse := g.Add(g.Unary("Log", g.ReduceSum(g.Unary("Exp", g.Sub(x, mx)), true, -1)), mx)
	return g.Squeeze(lse, 4)
}
