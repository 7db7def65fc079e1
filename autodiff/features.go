package autodiff

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"

	"gorgonia.org/tensor"

	"github.com/locusml/locus/autodiff/internal/gemm"
)

// FeatureOptions configure RandomFeatureAttention.
type FeatureOptions struct {
	// Features holds the m feature rows w_j of width d, row-major [m, d].
	Features []float64
	M        int
	// The key features are φ(k)_j = exp(w_j·k + KeyCoef·‖k‖² − KeyShift), the query
	// features φ(q)_j = softmax_j(w_j·q) (any per-query factor cancels in the mean).
	KeyCoef, KeyShift float64
	// Causal lets query t see keys s <= t + Offset; otherwise every key is seen.
	Causal bool
	Offset int
	// KeyMask is nil or [B, Tk] with B·Heads = N: it multiplies φ(k) of batch element
	// n / Heads (0 marks padding). Heads 0 means 1.
	KeyMask *Node
	Heads   int
	// HeadsInFeatures takes q [B, Tq, H·d], k [B, Tk, H·d] and v [B, Tk, H·dv] and returns
	// [B, Tq, H·dv], head j in feature columns j·d..(j+1)·d−1 (no head split or merge
	// copies); N = B·H in the shapes above.
	HeadsInFeatures bool
}

// RandomFeatureAttention is the local mean of v [N, Tk, dv] at queries q [N, Tq, d] and
// keys k [N, Tk, d] under the kernel φ(q)·φ(k) of random features (FAVOR+), [N, Tq, dv]:
//
//	m_t = Σ_s (φ(q_t)·φ(k_s)) v_s / (Σ_s φ(q_t)·φ(k_s) + 1e−30)
//
// over the visible keys, computed per sequence with running prefix sums
// S_t = Σ_{s visible} φ(k_s)[v_s, 1]ᵀ (CausalLinearAttention) on features formed in a
// per-worker scratch. It keeps only the denominators per query besides its inputs and
// output: the [N, T, m] features and their gradients are recomputed in the backward pass
// instead of held by the graph, so its memory is O(N·T·(d+dv)) where the composition of
// feature, exponential, softmax and prefix-sum ops holds several [N, T, m] tensors.
// Gradients flow to q, k and v.
func (g *Graph) RandomFeatureAttention(q, k, v *Node, opt FeatureOptions) *Node {
	if !g.ok("RandomFeatureAttention", q, k, v) {
		return nil
	}
	d := q.n.Shape()[len(q.n.Shape())-1]
	if opt.HeadsInFeatures && opt.Heads > 0 {
		d /= opt.Heads
	}
	if opt.M <= 0 || len(opt.Features) != opt.M*d {
		return g.failf("RandomFeatureAttention: %d feature values for m = %d rows of width %d", len(opt.Features), opt.M, d)
	}
	if opt.Offset < 0 || opt.Heads < 0 {
		return g.failf("RandomFeatureAttention: offset %d and heads %d, want >= 0", opt.Offset, opt.Heads)
	}
	h := fnv.New64a()
	for _, x := range opt.Features {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], math.Float64bits(x))
		h.Write(b[:])
	}
	fk := &featureKernel{
		w64: append([]float64(nil), opt.Features...), m: opt.M, d: d,
		coef: opt.KeyCoef, shift: opt.KeyShift, causal: opt.Causal, offset: opt.Offset,
		heads: max(opt.Heads, 1), masked: opt.KeyMask != nil, wHash: h.Sum64(), inFeatures: opt.HeadsInFeatures,
	}
	fk.w32 = make([]float32, len(fk.w64))
	for i, x := range fk.w64 {
		fk.w32[i] = float32(x)
	}
	if opt.KeyMask != nil {
		return g.applyFused(fk, q, k, v, opt.KeyMask)
	}
	return g.applyFused(fk, q, k, v)
}

type featureKernel struct {
	w64          []float64
	w32          []float32
	m, d         int
	coef, shift  float64
	causal       bool
	offset       int
	heads        int
	masked       bool
	inFeatures   bool
	wHash        uint64
	den          []float64 // per query row of the last forward pass
	grads        []*tensor.Dense
	gen, gradGen int
}

func (k *featureKernel) opName() string { return "RandomFeatureAttention" }
func (k *featureKernel) hashAttrs() string {
	return fmt.Sprintf("{m:%d,d:%d,w:%x,coef:%g,shift:%g,causal:%v,offset:%d,heads:%d,mask:%v,infeatures:%v}",
		k.m, k.d, k.wHash, k.coef, k.shift, k.causal, k.offset, k.heads, k.masked, k.inFeatures)
}
func (k *featureKernel) arity() int { return 3 + b2i(k.masked) }
func (k *featureKernel) diffWRT() []bool {
	return []bool{true, true, true, false}[:k.arity()]
}
func (k *featureKernel) floatInputs() []bool { return []bool{true, true, true, true}[:k.arity()] }
func (k *featureKernel) outShape(in []tensor.Shape) (tensor.Shape, error) {
	q, kk, v := in[0], in[1], in[2]
	w, heads := k.d, 1 // query and key width, heads per row
	if k.inFeatures {
		w, heads = k.d*k.heads, k.heads
	}
	if q.Dims() != 3 || kk.Dims() != 3 || v.Dims() != 3 || q[0] != kk[0] || kk[0] != v[0] || q[2] != w || kk[2] != w || kk[1] != v[1] || v[2]%heads != 0 {
		return nil, fmt.Errorf("queries %v, keys %v and values %v, want [N, Tq, %d], [N, Tk, %d] and [N, Tk, dv·%d]", q, kk, v, w, w, heads)
	}
	if k.masked {
		if km := in[3]; km.Dims() != 2 || km[0]*k.heads != q[0]*heads || km[1] != kk[1] {
			return nil, fmt.Errorf("key mask %v, want [%d, %d] (batch, Tk)", km, q[0]*heads/k.heads, kk[1])
		}
	}
	return tensor.Shape{q[0], q[1], v[2]}, nil
}

// visible returns the prefix-sum offset: query t sees keys s <= t + offset.
func (k *featureKernel) visible(tk int) int {
	if k.causal {
		return k.offset
	}
	return tk
}

// featureArgs are one call's inputs, output and gradients as slices of the op's dtype.
type featureArgs[T float] struct {
	q, k, v, km, out, gout []T
	gq, gk, gv             []T // backward only
}

// featureDims are the sizes of one call: n sequences (problems) of tq queries and tk keys
// of width d (values dv) per head, rows lq (queries, keys) and lv (values, output) apart;
// with heads > 0 the heads share rows ([B, T, H·d], problem p = b·heads + h).
type featureDims struct{ n, tq, tk, d, dv, m, lq, lv, heads int }

func (k *featureKernel) dims(in []*tensor.Dense) featureDims {
	qs, vs := in[0].Shape(), in[2].Shape()
	if k.inFeatures {
		h := k.heads
		return featureDims{n: qs[0] * h, tq: qs[1], tk: vs[1], d: k.d, dv: vs[2] / h, m: k.m, lq: qs[2], lv: vs[2], heads: h}
	}
	return featureDims{n: qs[0], tq: qs[1], tk: vs[1], d: qs[2], dv: vs[2], m: k.m, lq: qs[2], lv: vs[2]}
}

// off returns where problem p's rows start in a tensor of rows × width per head, ld apart.
func (d featureDims) off(p, rows, width, ld int) int {
	if d.heads > 0 {
		return (p/d.heads)*rows*ld + (p%d.heads)*width
	}
	return p * rows * width
}

func (k *featureKernel) forward(in []*tensor.Dense, out *tensor.Dense) error {
	d := k.dims(in)
	if len(k.den) != d.n*d.tq {
		k.den = make([]float64, d.n*d.tq)
	}
	k.gen++
	switch in[0].Dtype() {
	case Float32:
		featureSweep(k, d, gemm.Sgemm, k.w32, featureInputs[float32](k, in, out, nil, nil), false)
	case Float64:
		featureSweep(k, d, gemm.Dgemm, k.w64, featureInputs[float64](k, in, out, nil, nil), false)
	}
	return nil
}

func (k *featureKernel) backward(wrt int, in []*tensor.Dense, out, gout, dst *tensor.Dense) error {
	if k.gradGen != k.gen || len(k.grads) != 3 {
		if len(k.grads) != 3 {
			k.grads = make([]*tensor.Dense, 3)
		}
		for i := range 3 {
			if k.grads[i] == nil || !k.grads[i].Shape().Eq(in[i].Shape()) || k.grads[i].Dtype() != in[i].Dtype() {
				k.grads[i] = newDense(in[i].Dtype(), in[i].Shape())
			}
		}
		d := k.dims(in)
		switch in[0].Dtype() {
		case Float32:
			featureSweep(k, d, gemm.Sgemm, k.w32, featureInputs[float32](k, in, out, gout, k.grads), true)
		case Float64:
			featureSweep(k, d, gemm.Dgemm, k.w64, featureInputs[float64](k, in, out, gout, k.grads), true)
		}
		k.gradGen = k.gen
	}
	switch dst.Dtype() {
	case Float32:
		copy(dst.Float32s(), k.grads[wrt].Float32s())
	case Float64:
		copy(dst.Float64s(), k.grads[wrt].Float64s())
	}
	return nil
}

func featureInputs[T float](k *featureKernel, in []*tensor.Dense, out, gout *tensor.Dense, grads []*tensor.Dense) featureArgs[T] {
	a := featureArgs[T]{q: flat[T](in[0]), k: flat[T](in[1]), v: flat[T](in[2]), out: flat[T](out)}
	if k.masked {
		a.km = flat[T](in[3])
	}
	if gout != nil {
		a.gout = flat[T](gout)
		a.gq, a.gk, a.gv = flat[T](grads[0]), flat[T](grads[1]), flat[T](grads[2])
	}
	return a
}

// featureSweep runs the forward pass (writing a.out and k.den) or, with grad, the
// backward pass (writing a.gq, a.gk, a.gv), one sequence n at a time: it forms φ(q) and
// φ(k) of the sequence in scratch and runs the prefix sums over them.
func featureSweep[T float](k *featureKernel, d featureDims, mm gemmFunc[T], w []T, a featureArgs[T], grad bool) {
	m, dv1, off := d.m, d.dv+1, k.visible(d.tk)
	parallelFor(d.n, (d.tq+d.tk)*m*(d.d+3*dv1), func(lo, hi int) {
		pq, pk := make([]T, d.tq*m), make([]T, d.tk*m)
		v1, o := make([]T, d.tk*dv1), make([]T, d.tq*dv1)
		var gpq, gpk, gv1 []T
		var rowSums []float64
		if grad {
			gpq, gpk, gv1 = make([]T, d.tq*m), make([]T, d.tk*m), make([]T, d.tk*dv1)
			rowSums = make([]float64, d.tk)
		}
		for n := lo; n < hi; n++ {
			qb, kb := d.off(n, d.tq, d.d, d.lq), d.off(n, d.tk, d.d, d.lq)
			vb, ob := d.off(n, d.tk, d.dv, d.lv), d.off(n, d.tq, d.dv, d.lv)
			// φ(q) = softmax(Wq) per row
			mm(false, true, d.tq, m, d.d, 1, a.q[qb:], d.lq, w, d.d, 0, pq, m)
			for t := range d.tq {
				row := pq[t*m:][:m]
				mx := math.Inf(-1)
				for _, x := range row {
					mx = max(mx, float64(x))
				}
				var sum float64
				for j, x := range row {
					e := math.Exp(float64(x) - mx)
					row[j] = T(e)
					sum += e
				}
				for j := range row {
					row[j] = T(float64(row[j]) / sum)
				}
			}
			// φ(k) = exp(Wk + coef·‖k‖² − shift), times the key mask
			mm(false, true, d.tk, m, d.d, 1, a.k[kb:], d.lq, w, d.d, 0, pk, m)
			for s := range d.tk {
				var n2 float64
				for _, x := range a.k[kb+s*d.lq:][:d.d] {
					n2 += float64(x) * float64(x)
				}
				c := k.coef*n2 - k.shift
				scale := 1.0
				if a.km != nil {
					scale = float64(a.km[(n/k.heads)*d.tk+s])
				}
				row := pk[s*m:][:m]
				for j, x := range row {
					row[j] = T(scale * math.Exp(float64(x)+c))
				}
				copy(v1[s*dv1:], a.v[vb+s*d.lv:][:d.dv])
				v1[s*dv1+d.dv] = 1
			}
			den := k.den[n*d.tq:][:d.tq]
			if !grad {
				causalLinearFwdRows(pq, pk, v1, nil, o, d.tq, m, d.tk, dv1, off, 0, 1)
				for t := range d.tq {
					den[t] = float64(o[t*dv1+d.dv]) + 1e-30
					out := a.out[ob+t*d.lv:][:d.dv]
					for c := range out {
						out[c] = T(float64(o[t*dv1+c]) / den[t])
					}
				}
				continue
			}
			// ∂L/∂num = g/den, ∂L/∂den = −(g·out)/den, into o as the gradient of [num, den]
			for t := range d.tq {
				g, out := a.gout[ob+t*d.lv:][:d.dv], a.out[ob+t*d.lv:][:d.dv]
				var dot float64
				for c, gc := range g {
					o[t*dv1+c] = T(float64(gc) / den[t])
					dot += float64(gc) * float64(out[c])
				}
				o[t*dv1+d.dv] = T(-dot / den[t])
			}
			causalLinearFwdRows(pq, pk, v1, o, gpq, d.tq, m, d.tk, dv1, off, 0, 1) // ∂L/∂φ(q)
			causalLinearBwdRows(1, pq, pk, v1, o, gpk, d.tq, m, d.tk, dv1, off, 0, 1)
			causalLinearBwdRows(2, pq, pk, v1, o, gv1, d.tq, m, d.tk, dv1, off, 0, 1)
			// softmax: ∂L/∂(Wq)_j = φ_j (gφ_j − Σ_i φ_i gφ_i)
			for t := range d.tq {
				p, gp := pq[t*m:][:m], gpq[t*m:][:m]
				var dot float64
				for j := range p {
					dot += float64(p[j]) * float64(gp[j])
				}
				for j := range p {
					gp[j] = T(float64(p[j]) * (float64(gp[j]) - dot))
				}
			}
			mm(false, false, d.tq, d.d, m, 1, gpq, m, w, d.d, 0, a.gq[qb:], d.lq)
			// exp: ∂L/∂e = φ(k) ⊙ ∂L/∂φ(k); e = Wk + coef·‖k‖² − shift
			for s := range d.tk {
				p, gp := pk[s*m:][:m], gpk[s*m:][:m]
				var sum float64
				for j := range p {
					x := float64(p[j]) * float64(gp[j])
					gp[j] = T(x)
					sum += x
				}
				rowSums[s] = sum
			}
			mm(false, false, d.tk, d.d, m, 1, gpk, m, w, d.d, 0, a.gk[kb:], d.lq)
			for s := range d.tk {
				f := 2 * k.coef * rowSums[s]
				gk, kk := a.gk[kb+s*d.lq:][:d.d], a.k[kb+s*d.lq:][:d.d]
				for c := range gk {
					gk[c] += T(f * float64(kk[c]))
				}
				copy(a.gv[vb+s*d.lv:][:d.dv], gv1[s*dv1:][:d.dv])
			}
		}
	})
}
