package layers

import (
	"math"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/onnx"
)

// ONNX export. Each layer writes its forward pass into an onnx.Graph with the same
// function as Forward; each kernel writes its own scores (ONNXKernel, in the kernel's
// file), so a new kernel stays one file. In the graph, attention works on the layout
// [B, H, T, dh] (batch and heads as separate axes), and a bandwidth is a value that
// broadcasts against scores [B, H, Tq, Tk].

// ONNXWidth is a bandwidth h in an ONNX graph: the name of a float value that broadcasts
// against scores [B, H, Tq, Tk] (a scalar, [1, H, 1, 1] or [B, H, Tq, 1]).
type ONNXWidth string

// divide returns x / h^pow.
func (h ONNXWidth) divide(g *onnx.Graph, x string, pow int) string {
	d := string(h)
	if pow == 2 {
		d = g.Mul(d, d)
	}
	return g.Div(x, d)
}

// ONNXKernel is a ContentKernel that writes its scores into an ONNX graph: for queries
// q [B, H, Tq, d] and keys k [B, H, Tk, d] at bandwidth h, the log-kernel scores
// [B, H, Tq, Tk], as Scores computes them.
type ONNXKernel interface {
	ONNXScores(g *onnx.Graph, q, k string, h ONNXWidth) string
}

// ONNXPositions are the positions of one attention call in an ONNX graph: Diff is the
// int64 matrix [Tq, Tk] of s − t (key position minus query position) and Visible the
// bool matrix [Tq, Tk] of the box kernel.
type ONNXPositions struct {
	Diff, Visible string
}

// ONNXPositionKernel is a PositionKernel that writes its smooth part into an ONNX
// graph: log K(t, s) as [Tq, Tk] (shared by the heads) or [H, Tq, Tk], or "" for a pure
// box (whose support is in Visible already).
type ONNXPositionKernel interface {
	ONNXPositionScores(g *onnx.Graph, pos ONNXPositions) string
}

// ONNXParam adds p as a float32 initializer under its own name.
func ONNXParam(g *onnx.Graph, p *autodiff.Param) string {
	vals := make([]float32, p.Size())
	for i := range vals {
		vals[i] = float32(p.At(i))
	}
	return g.Initializer(p.Name(), p.Shape(), vals)
}

// onnxSqDist returns ‖q_t − k_s‖² [B, H, Tq, Tk] from the differences themselves, as
// autodiff.PairwiseDist does (no cancellation).
func onnxSqDist(g *onnx.Graph, q, k string) string {
	d := g.Sub(g.Unsqueeze(q, 3), g.Unsqueeze(k, 2)) // [B, H, Tq, Tk, d]
	return g.ReduceSum(g.Mul(d, d), false, -1)
}

// onnxDist returns ‖q_t − k_s‖ [B, H, Tq, Tk].
func onnxDist(g *onnx.Graph, q, k string) string { return g.Unary("Sqrt", onnxSqDist(g, q, k)) }

// onnxLogPositive returns log x where x > 0 and −Inf elsewhere.
func onnxLogPositive(g *onnx.Graph, x string) string { return g.Unary("Log", g.Unary("Relu", x)) }

// onnxKernelScores returns kern's scores, or records an error naming a kernel without an
// ONNX form.
func onnxKernelScores(g *onnx.Graph, kern ContentKernel, q, k string, h ONNXWidth) string {
	ok, isONNX := kern.(ONNXKernel)
	if !isONNX {
		return g.Failf("kernel %s has no ONNX form (it does not implement layers.ONNXKernel)", kern.Name())
	}
	return ok.ONNXScores(g, q, k, h)
}

// ONNX writes the linear map of x [..., In] into g.
func (l *Linear) ONNX(g *onnx.Graph, x string) string {
	y := g.MatMul(x, g.Transpose(ONNXParam(g, l.Weight), 1, 0))
	if l.Bias != nil {
		y = g.Add(y, ONNXParam(g, l.Bias))
	}
	return y
}

// ONNX writes the embedding of int64 ids into g: [..., Dim].
func (e *Embedding) ONNX(g *onnx.Graph, ids string) string {
	return g.Op("Gather", []string{ONNXParam(g, e.Weight), ids})
}

// ONNX writes the normalisation of x over its last axis into g (LayerNormalization).
func (n *LayerNorm) ONNX(g *onnx.Graph, x string) string {
	in := []string{x, ONNXParam(g, n.Weight)}
	if n.Bias != nil {
		in = append(in, ONNXParam(g, n.Bias))
	}
	return g.Op("LayerNormalization", in, onnx.AttrInt("axis", -1), onnx.AttrFloat("epsilon", float32(n.Eps)))
}

// onnxNorm writes a Norm into g.
func onnxNorm(g *onnx.Graph, n Norm, x string) string {
	ln, ok := n.(*LayerNorm)
	if !ok {
		return g.Failf("norm %T has no ONNX form", n)
	}
	return ln.ONNX(g, x)
}

// ONNX writes the activation of x into g.
func (a Activation) ONNX(g *onnx.Graph, x string) string {
	switch a {
	case GELUTanh:
		cube := g.Mul(g.Mul(x, x), x)
		inner := g.Scale(g.Add(x, g.Scale(cube, 0.044715)), math.Sqrt(2/math.Pi))
		return g.Mul(g.Scale(x, 0.5), g.AddConst(g.Unary("Tanh", inner), 1))
	case GELUExact:
		return g.Mul(g.Scale(x, 0.5), g.AddConst(g.Unary("Erf", g.Scale(x, 1/math.Sqrt2)), 1))
	case ReLU:
		return g.Unary("Relu", x)
	}
	return g.Failf("activation %v has no ONNX form", a)
}

// ONNX writes the feed-forward map of x into g.
func (f *FeedForward) ONNX(g *onnx.Graph, x string) string {
	return f.FC2.ONNX(g, f.Activation.ONNX(g, f.FC1.ONNX(g, x)))
}

// ONNXResidual writes Residual (without dropout, as at inference) into g.
func ONNXResidual(g *onnx.Graph, x string, ln Norm, postLN bool, f func(string) string) string {
	if postLN {
		return onnxNorm(g, ln, g.Add(x, f(x)))
	}
	return g.Add(x, f(onnxNorm(g, ln, x)))
}

// ONNX writes the block's self-attention and feed-forward steps on x [B, T, Dim] into g;
// maxLen bounds T (the rotary tables' length).
func (b *Block) ONNX(g *onnx.Graph, x string, maxLen int) string {
	y := ONNXResidual(g, x, b.LN1, b.PostLN, func(h string) string { return b.Attn.ONNX(g, h, h, maxLen) })
	return ONNXResidual(g, y, b.LN2, b.PostLN, func(h string) string { return b.FFN.ONNX(g, h) })
}

// ONNXPositionTable adds the first T rows (T = the length of axis 1 of x) of a table
// [rows, cols] to x [B, T, cols].
func ONNXPositionTable(g *onnx.Graph, x, table string) string {
	return g.Add(x, onnxRows(g, table, g.Dim(x, 1)))
}

// onnxRows returns rows 0..n−1 of a table (n an int64 [1]).
func onnxRows(g *onnx.Graph, table, n string) string {
	return g.Op("Slice", []string{table, g.Ints(0), n, g.Ints(0)})
}

// ONNX adds the learned positions 0..T−1 to x [B, T, Dim].
func (p *LearnedPositions) ONNX(g *onnx.Graph, x string) string {
	return ONNXPositionTable(g, x, ONNXParam(g, p.Weight))
}

// ONNXSinusoidal adds the sinusoidal positions 0..T−1 to x [B, T, dim], T <= maxLen.
func ONNXSinusoidal(g *onnx.Graph, x string, maxLen, dim int) string {
	pe := Sinusoidal(maxLen, dim, 0)
	vals := make([]float32, len(pe))
	for i, v := range pe {
		vals[i] = float32(v)
	}
	return ONNXPositionTable(g, x, g.Const([]int{maxLen, dim}, vals...))
}

// onnxRotary applies the rotary embedding to x [B, H, T, dh] at positions 0..T−1 <
// maxLen, with the tables of ApplyRotary.
func onnxRotary(g *onnx.Graph, x string, maxLen, dh int, base float64) string {
	if base == 0 {
		base = defaultRotaryBase
	}
	half := dh / 2
	cos := make([]float32, maxLen*dh)
	sin := make([]float32, maxLen*dh)
	for p := range maxLen {
		for i := range half {
			angle := float64(p) * math.Pow(base, -2*float64(i)/float64(dh))
			c, s := float32(math.Cos(angle)), float32(math.Sin(angle))
			cos[p*dh+i], cos[p*dh+i+half] = c, c
			sin[p*dh+i], sin[p*dh+i+half] = s, s
		}
	}
	t := g.Dim(x, 2)
	c := onnxRows(g, g.Const([]int{maxLen, dh}, cos...), t)
	s := onnxRows(g, g.Const([]int{maxLen, dh}, sin...), t)
	lo := g.Op("Slice", []string{x, g.Ints(0), g.Ints(int64(half)), g.Ints(3)})
	hi := g.Op("Slice", []string{x, g.Ints(int64(half)), g.Ints(int64(dh)), g.Ints(3)})
	rot := g.Op("Concat", []string{g.Unary("Neg", hi), lo}, onnx.AttrInt("axis", 3))
	return g.Add(g.Mul(x, c), g.Mul(rot, s))
}

// onnxSplitHeads maps [B, T, H·dh] to [B, H, T, dh].
func (a *KernelAttention) onnxSplitHeads(g *onnx.Graph, x string) string {
	return g.Transpose(g.Reshape(x, 0, 0, int64(a.Heads), int64(a.DHead)), 0, 2, 1, 3)
}

// onnxPositions returns the positions of queries x [B, Tq, ·] over keys mem [B, Tk, ·]
// under the box rules of m (offset 0).
func onnxPositions(g *onnx.Graph, x, mem string, m autodiff.Mask) ONNXPositions {
	rng := func(v string) string {
		return g.Op("Range", []string{g.IntScalar(0), g.Squeeze(g.Dim(v, 1), 0), g.IntScalar(1)})
	}
	t := g.Unsqueeze(rng(x), 1)                    // [Tq, 1]
	s := g.Unsqueeze(rng(mem), 0)                  // [1, Tk]
	diff := g.Sub(s, t)                            // [Tq, Tk]
	visible := g.Op("Equal", []string{diff, diff}) // all true; each box rule narrows it
	and := func(c string) { visible = g.Op("And", []string{visible, c}) }
	if m.Causal {
		and(g.Op("LessOrEqual", []string{diff, g.IntScalar(0)}))
	}
	if m.Window > 0 {
		and(g.Op("Less", []string{g.Unary("Abs", diff), g.IntScalar(int64(m.Window))}))
	}
	if m.Hollow {
		and(g.Unary("Not", g.Op("Equal", []string{diff, g.IntScalar(0)})))
	}
	return ONNXPositions{Diff: diff, Visible: visible}
}

// ONNX writes the attention of the queries of x [B, Tq, Dim] over mem [B, Tk, KVDim]
// into g (self-attention when mem is x), returning [B, Tq, Dim]; maxLen bounds the
// positions of rotary embeddings.
func (a *KernelAttention) ONNX(g *onnx.Graph, x, mem string, maxLen int) string {
	if a.cfg.RandomFeatures > 0 {
		return g.Failf("kernel attention %q: random-feature attention has no ONNX export", a.scope)
	}
	q := a.onnxSplitHeads(g, a.Q.ONNX(g, x))
	k := a.onnxSplitHeads(g, a.K.ONNX(g, mem))
	v := a.onnxSplitHeads(g, a.V.ONNX(g, mem))
	if a.cfg.Rotary {
		q = onnxRotary(g, q, maxLen, a.DHead, a.cfg.RotaryBase)
		k = onnxRotary(g, k, maxLen, a.DHead, a.cfg.RotaryBase)
	}
	mask := restrictMask(a.Kernel, autodiff.Mask{Causal: a.cfg.Causal, Window: a.cfg.Window, Hollow: a.cfg.Hollow})
	pos := onnxPositions(g, x, mem, mask)
	h := a.bw.onnx(g, x, q, k, pos)
	s := onnxKernelScores(g, a.Kernel, q, k, h)
	for _, f := range positionFactors(a.Kernel) {
		pk, ok := f.(ONNXPositionKernel)
		if !ok {
			return g.Failf("position kernel %s has no ONNX form (it does not implement layers.ONNXPositionKernel)", f.Name())
		}
		if ps := pk.ONNXPositionScores(g, pos); ps != "" {
			s = g.Add(s, ps)
		}
	}
	m := onnxLocalMean(g, s, v, pos.Visible) // [B, H, Tq, dh]
	merged := g.Reshape(g.Transpose(m, 0, 2, 1, 3), 0, 0, int64(a.cfg.Dim))
	return a.O.ONNX(g, merged)
}

// onnxLocalMean is autodiff.LocalMean: the softmax of the scores [B, H, Tq, Tk] over the
// visible keys, applied to v [B, H, Tk, dv]; a query that sees no key gets 0.
func onnxLocalMean(g *onnx.Graph, s, v, visible string) string {
	s = g.Where(visible, s, g.Scalar(float32(math.Inf(-1))))
	mx := g.ReduceMax(s, true, -1)
	mx = g.Where(g.Unary("IsInf", mx), g.Scalar(0), mx)
	e := g.Unary("Exp", g.Sub(s, mx))
	z := g.ReduceSum(e, true, -1)
	z = g.Where(g.Op("Equal", []string{z, g.Scalar(0)}), g.Scalar(1), z)
	return g.MatMul(g.Div(e, z), v)
}

// onnx returns the bandwidth for one attention call: x is the query input [B, Tq, d], q
// and k the per-head queries and keys [B, H, T, dh].
func (b *bandwidth) onnx(g *onnx.Graph, x, q, k string, pos ONNXPositions) ONNXWidth {
	softplus := func(v string) string { return g.AddConst(g.Unary("Softplus", v), b.hmin) }
	switch b.cfg.Mode {
	case BandwidthFixed:
		return ONNXWidth(g.Scalar(float32(b.h0)))
	case BandwidthLayer:
		return ONNXWidth(softplus(ONNXParam(g, b.rho)))
	case BandwidthHead:
		return ONNXWidth(g.Reshape(softplus(ONNXParam(g, b.rho)), 1, -1, 1, 1))
	case BandwidthQuery:
		h := softplus(b.query.ONNX(g, x)) // [B, Tq, H]
		return ONNXWidth(g.Unsqueeze(g.Transpose(h, 0, 2, 1), 3))
	case BandwidthKNN:
		return ONNXWidth(onnxKNNWidth(g, q, k, pos.Visible, b.cfg.k(), b.hmin))
	}
	return ONNXWidth(g.Failf("bandwidth mode %v has no ONNX form", b.cfg.Mode))
}

// onnxKNNWidth is KNNWidth: per query, the distance to its kth nearest visible key (its
// farthest when fewer are visible, 0 when none is), plus hmin; [B, H, Tq, 1].
func onnxKNNWidth(g *onnx.Graph, q, k, visible string, kth int, hmin float64) string {
	d := g.Where(visible, onnxDist(g, q, k), g.Scalar(float32(math.Inf(1))))
	n := g.Op("Min", []string{g.Ints(int64(kth)), g.Dim(d, 3)})
	sorted := g.OpN("TopK", []string{d, n}, 2, onnx.AttrInt("axis", -1), onnx.AttrInt("largest", 0), onnx.AttrInt("sorted", 1))
	if sorted == nil {
		return ""
	}
	count := g.ReduceSum(g.Cast(visible, onnx.Int64), true, -1) // [Tq, 1]
	idx := g.Op("Max", []string{g.Sub(g.Op("Min", []string{count, g.IntScalar(int64(kth))}), g.IntScalar(1)), g.IntScalar(0)})
	shape := g.Op("Concat", []string{g.Op("Shape", []string{d}, onnx.AttrInt("end", 3)), g.Ints(1)}, onnx.AttrInt("axis", 0))
	chosen := g.Op("GatherElements", []string{sorted[0], g.Op("Expand", []string{idx, shape})}, onnx.AttrInt("axis", 3))
	chosen = g.Where(g.Op("Equal", []string{count, g.IntScalar(0)}), g.Scalar(0), chosen)
	return g.AddConst(chosen, hmin)
}
