package layers

import (
	"fmt"
	"math"
	"strings"
	"sync"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/onnx"
)

func init() {
	RegisterKernel(KernelForm{
		Name: "mixture", Syntax: "mixture(K1, K2, ...)", Example: "mixture(exponential, laplacian)", MinArgs: 1, MaxArgs: MaxMixtureComponents,
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
// removes that component's mass. A mixture of kernels that autodiff evaluates pair by
// pair (autodiff.PairKernel, no parameters of their own) has a fast path of that form
// too, an autodiff.ParamPairKernel whose parameters are the logits, so that
// KernelAttention runs it on the fused and tiled local means.
type Mixture struct {
	Kernels []ContentKernel
	logits  *autodiff.Param
	pairs   []autodiff.PairKernel // the components as pair kernels, nil unless all are
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
	if len(m.Kernels) > MaxMixtureComponents {
		return nil, fmt.Errorf("mixture kernel %q: %d components, want at most %d", s.Name(), len(m.Kernels), MaxMixtureComponents)
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
	return Mixture{Kernels: ks, logits: p, pairs: pairComponents(ks)}, nil
}

// pairComponents returns the kernels as pair kernels, or nil unless every one is a pair
// kernel without parameters of its own (a nested mixture has them).
func pairComponents(ks []ContentKernel) []autodiff.PairKernel {
	pairs := make([]autodiff.PairKernel, len(ks))
	for i, k := range ks {
		pk := pairOf(k)
		if _, param := pk.(autodiff.ParamPairKernel); pk == nil || param {
			return nil
		}
		pairs[i] = pk
	}
	return pairs
}

// pairKernel returns the mixture's fast path (autodiff.ParamPairKernel, see pairOf), or
// nil unless the fused and tiled local means evaluate it: it is bound and every
// component is a pair kernel without parameters of its own.
func (m Mixture) pairKernel() autodiff.PairKernel {
	if m.logits == nil || m.pairs == nil {
		return nil
	}
	return mixturePair(m)
}

// mixturePair is Mixture's fast path: an autodiff.ParamPairKernel whose parameters are
// the logits, its pair rows formed from the components' (autodiff.MixturePairKernel32).
type mixturePair Mixture

// Name returns the mixture's spec.
func (m mixturePair) Name() string { return Mixture(m).Name() }

// pairParams returns the node of the logits, the parameters that the fused and tiled
// local means take with the kernel (autodiff.TiledOptions.KernelParams).
func (m mixturePair) pairParams(g *autodiff.Graph) *autodiff.Node {
	if m.logits == nil {
		return g.Fail(fmt.Errorf("kernel %s: not bound to parameters (use it inside KernelAttention or call Bind)", m.Name()))
	}
	return g.Param(m.logits)
}

// components returns the components as pair kernels, nil if one is not.
func (m mixturePair) components() []autodiff.PairKernel {
	if m.pairs != nil {
		return m.pairs
	}
	return pairComponents(m.Kernels)
}

// PairTerms reads the terms that any component reads (autodiff.PairKernel).
func (m mixturePair) PairTerms() (dot, dist bool) {
	for _, c := range m.components() {
		d, s := c.PairTerms()
		dot, dist = dot || d, dist || s
	}
	return dot, dist
}

// PairComponents32 returns the components' float32 rows, nil when one has none
// (autodiff.MixturePairKernel32).
func (m mixturePair) PairComponents32() []autodiff.PairKernel32 {
	comps := m.components()
	if comps == nil {
		return nil
	}
	out := make([]autodiff.PairKernel32, len(comps))
	for i, c := range comps {
		c32, ok := c.(autodiff.PairKernel32)
		if !ok {
			return nil
		}
		out[i] = c32
	}
	return out
}

// PairParamCount returns the number of logits (autodiff.ParamPairKernel).
func (m mixturePair) PairParamCount() int { return len(m.Kernels) }

// currentLogits returns the logits' current values (0 before Bind).
func (m mixturePair) currentLogits() []float64 {
	a := make([]float64, len(m.Kernels))
	if m.logits != nil {
		for i := range a {
			a[i] = m.logits.At(i)
		}
	}
	return a
}

// PairScores is PairScoresAt with the current logits.
func (m mixturePair) PairScores(s, dot, d2 []float64, h float64) {
	m.PairScoresAt(m.currentLogits(), s, dot, d2, h)
}

// PairGrads is PairGradsAt with the current logits, without their gradient.
func (m mixturePair) PairGrads(gs, dot, d2 []float64, h float64, gdot, gd2 []float64) float64 {
	return m.PairGradsAt(m.currentLogits(), gs, dot, d2, h, gdot, gd2, nil)
}

// mixtureBuffers holds the per-call float64 scratch of the mixture's pair methods.
var mixtureBuffers = sync.Pool{New: func() any { return new([]float64) }}

func mixtureBuffer(n int) *[]float64 {
	b := mixtureBuffers.Get().(*[]float64)
	if cap(*b) < n {
		*b = make([]float64, n)
	}
	*b = (*b)[:n]
	return b
}

// mixtureTerms sets logw to log softmax(a), comp[l·n:(l+1)·n] to component l's scores
// and tot to their log-sum-exp log Σ_l w_l K_l per pair: −Inf where every component is,
// NaN where one is NaN. A component that is not a pair kernel gives NaN (unreachable:
// Mixture.pairKernel gives a fast path only when every component has one).
func (m mixturePair) mixtureTerms(a, logw, comp, tot, dot, d2 []float64, h float64) {
	n := len(tot)
	mx := math.Inf(-1)
	for _, x := range a {
		mx = max(mx, x)
	}
	var z float64
	for _, x := range a {
		z += math.Exp(x - mx)
	}
	lz := mx + math.Log(z)
	for l, x := range a {
		logw[l] = x - lz
	}
	comps := m.components()
	if comps == nil {
		for j := range tot {
			tot[j] = math.NaN()
		}
		return
	}
	for l, c := range comps {
		c.PairScores(comp[l*n:(l+1)*n], dot, d2, h)
	}
	for j := range tot {
		top := math.Inf(-1)
		for l := range comps {
			top = max(top, logw[l]+comp[l*n+j]) // NaN wins
		}
		if math.IsInf(top, 0) || math.IsNaN(top) {
			tot[j] = top
			continue
		}
		var sum float64
		for l := range comps {
			sum += math.Exp(logw[l] + comp[l*n+j] - top)
		}
		tot[j] = top + math.Log(sum)
	}
}

// PairScoresAt sets s[j] = log Σ_l softmax(a)_l K_l of pair j, by a stable log-sum-exp
// of the components' scores: a compact component's −Inf removes only its mass, and a
// pair outside every component's support is −Inf (autodiff.ParamPairKernel).
func (m mixturePair) PairScoresAt(a, s, dot, d2 []float64, h float64) {
	n, nl := len(s), len(m.Kernels)
	b := mixtureBuffer(nl + nl*n)
	m.mixtureTerms(a, (*b)[:nl], (*b)[nl:], s, dot, d2, h)
	mixtureBuffers.Put(b)
}

// PairGradsAt passes the score gradients gs to the components through the
// responsibilities r_l = w_l K_l / Σ_m w_m K_m (∂s/∂s_l), so that ∂s/∂dot, ∂s/∂d² and
// ∂s/∂h are Σ_l r_l times the component's, and adds Σ_j gs[j]·(r_l − w_l), the gradient
// of the logit a_l, into ga[l] when ga is not nil (autodiff.ParamPairKernel). A pair with
// gs[j] = 0 (of weight 0, outside every support) contributes nothing.
func (m mixturePair) PairGradsAt(a, gs, dot, d2 []float64, h float64, gdot, gd2, ga []float64) float64 {
	n, nl := len(gs), len(m.Kernels)
	b := mixtureBuffer(nl + nl*n + 4*n)
	buf := *b
	logw, comp := buf[:nl], buf[nl:nl+nl*n]
	rest := buf[nl+nl*n:]
	tot, gsl, tdot, td2 := rest[:n], rest[n:2*n], rest[2*n:3*n], rest[3*n:4*n]
	m.mixtureTerms(a, logw, comp, tot, dot, d2, h)
	clear(gdot)
	clear(gd2)
	var gh, sg float64 // sg = Σ_j gs[j]
	for _, g := range gs {
		sg += g
	}
	for l, c := range m.components() {
		var ra float64 // Σ_j gs[j]·r_l[j]
		for j, g := range gs {
			r := 0.0
			if g != 0 && !math.IsInf(tot[j], 0) && !math.IsNaN(tot[j]) {
				r = math.Exp(logw[l] + comp[l*n+j] - tot[j])
			}
			gsl[j] = g * r
			ra += gsl[j]
		}
		if ga != nil {
			ga[l] += ra - math.Exp(logw[l])*sg
		}
		clear(tdot)
		clear(td2)
		gh += c.PairGrads(gsl, dot, d2, h, tdot, td2)
		if dot != nil {
			for j, x := range tdot {
				gdot[j] += x
			}
		}
		if d2 != nil {
			for j, x := range td2 {
				gd2[j] += x
			}
		}
	}
	mixtureBuffers.Put(b)
	return gh
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
