package autodiff

import (
	"fmt"
	"math"
	"sync"

	"gorgonia.org/tensor"

	"github.com/locusml/locus/autodiff/internal/gemm"
	"github.com/locusml/locus/autodiff/internal/vmath"
)

// Attention is fused multi-head scaled dot-product attention: with queries q
// [B, Tq, H·dk], keys k [B, Tk, H·dk] and values v [B, Tk, H·dv], head j using feature
// columns j·dk..(j+1)·dk−1 (PyTorch's head split), it returns [B, Tq, H·dv] with
//
//	out[b, t, j·dv+c] = Σ_s w_ts v[b, s, j·dv+c],   w_ts = softmax_s(scale · q_bt·k_bs)
//
// normalised over the keys that mask and keyMask allow, exactly as LocalMean of the
// per-head scores scale·QKᵀ, with LocalMean's rules for every edge case. keyMask is nil
// or [B, Tk], zero marking padding keys. A query that sees no key gets 0 and zero
// gradient.
//
// It reads and writes the [B, T, H·d] layout directly (no head split or merge copies),
// computes only the key blocks the mask leaves visible, runs its products on the packed
// sgemm and runs batch × heads in parallel; the weights are kept for the backward pass.
func (g *Graph) Attention(q, k, v, keyMask *Node, heads int, scale float64, mask Mask) *Node {
	return g.attention(q, k, v, keyMask, heads, scale, mask, nil)
}

// attention is Attention, or AttentionDropout's op when drop is not nil.
func (g *Graph) attention(q, k, v, keyMask *Node, heads int, scale float64, mask Mask, drop *fusedDrop) *Node {
	if !g.ok("Attention", q, k, v) {
		return nil
	}
	qs, ks, vs := q.n.Shape(), k.n.Shape(), v.n.Shape()
	if qs.Dims() != 3 || ks.Dims() != 3 || vs.Dims() != 3 || qs[0] != ks[0] || ks[0] != vs[0] || ks[1] != vs[1] || qs[2] != ks[2] {
		return g.failf("Attention: queries %v, keys %v and values %v (want [B,Tq,H·dk], [B,Tk,H·dk], [B,Tk,H·dv])", qs, ks, vs)
	}
	if heads <= 0 || qs[2]%heads != 0 || vs[2]%heads != 0 {
		return g.failf("Attention: %d heads do not divide the widths of queries %v and values %v", heads, qs, vs)
	}
	if !(scale > 0) || math.IsInf(scale, 0) {
		return g.failf("Attention: scale %g, want a positive finite value", scale)
	}
	if mask.Window < 0 {
		return g.failf("Attention: negative window %d", mask.Window)
	}
	kern := &attentionKernel{heads: heads, scale: scale, mask: mask, drop: drop}
	var op fusedKernel = kern
	if drop != nil {
		op = &attentionDropoutKernel{kern}
	}
	if keyMask == nil {
		return g.applyFused(op, q, k, v)
	}
	if !g.ok("Attention", keyMask) {
		return nil
	}
	if ms := keyMask.n.Shape(); ms.Dims() != 2 || ms[0] != qs[0] || ms[1] != ks[1] {
		return g.failf("Attention: key mask %v, want [%d, %d]", ms, qs[0], ks[1])
	}
	kern.keyMasked, kern.keyMask = true, keyMask
	return g.applyFused(op, q, k, v, keyMask)
}

type attentionKernel struct {
	heads     int
	scale     float64
	mask      Mask
	keyMasked bool
	keyMask   *Node      // the key mask input, for LocalMeanWeights
	drop      *fusedDrop // AttentionDropout's; nil: none
	// Weights of the last forward pass, [B, H, Tq, Tk], undropped; only the key blocks
	// that keyRange leaves visible are written and read.
	p32 []float32
	p64 []float64
	// Gradients of q, k and v computed ahead by the first backward call of a pass (gradGen
	// == gen), which wrote its own input's (gradAt) into its dst.
	grads                []*tensor.Dense
	gen, gradGen, gradAt int
}

func (k *attentionKernel) opName() string { return "Attention" }
func (k *attentionKernel) hashAttrs() string {
	return fmt.Sprintf("{heads:%d,scale:%g,mask:%v,keymask:%v}", k.heads, k.scale, k.mask, k.keyMasked)
}
func (k *attentionKernel) arity() int {
	if k.keyMasked {
		return 4
	}
	return 3
}
func (k *attentionKernel) diffWRT() []bool     { return []bool{true, true, true, false}[:k.arity()] }
func (k *attentionKernel) floatInputs() []bool { return []bool{true, true, true, true}[:k.arity()] }
func (k *attentionKernel) outShape(in []tensor.Shape) (tensor.Shape, error) {
	return tensor.Shape{in[0][0], in[0][1], in[2][2]}, nil
}

// attnDims are the sizes of one attention call.
type attnDims struct {
	b, h, tq, tk, dk, dv int
}

func (k *attentionKernel) dims(in []*tensor.Dense) attnDims {
	qs, vs := in[0].Shape(), in[2].Shape()
	return attnDims{b: qs[0], h: k.heads, tq: qs[1], tk: vs[1], dk: qs[2] / k.heads, dv: vs[2] / k.heads}
}

// gemmFunc is gemm.Sgemm or gemm.Dgemm.
type gemmFunc[T float] func(tA, tB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int)

func (k *attentionKernel) forward(in []*tensor.Dense, out *tensor.Dense) error {
	d := k.dims(in)
	n := d.b * d.h * d.tq * d.tk
	k.gen++
	if k.drop != nil {
		k.drop.draw()
	}
	switch in[0].Dtype() {
	case Float32:
		q := in[0].Float32s()
		if len(k.p32) != n {
			k.p32 = make([]float32, n)
		}
		var km []float32
		if k.keyMasked {
			km = in[3].Float32s()
		}
		attnForward(k, d, gemm.Sgemm, q, in[1].Float32s(), in[2].Float32s(), km, k.p32, out.Float32s())
	case Float64:
		q := in[0].Float64s()
		if len(k.p64) != n {
			k.p64 = make([]float64, n)
		}
		var km []float64
		if k.keyMasked {
			km = in[3].Float64s()
		}
		attnForward(k, d, gemm.Dgemm, q, in[1].Float64s(), in[2].Float64s(), km, k.p64, out.Float64s())
	}
	return nil
}

func attnForward[T float](k *attentionKernel, d attnDims, mm gemmFunc[T], q, kk, v, km, p, out []T) {
	dq, dvw := d.h*d.dk, d.h*d.dv
	scale := T(k.scale)
	parallelFor(d.b*d.h, d.tq*d.tk*(d.dk+d.dv+4), func(lo, hi int) {
		ldt := headStride(d.tk)
		kt := getScratch[T](d.dk * ldt)
		defer putScratch(kt)
		var dw *[]T // AttentionDropout's dropped weights of a block
		if k.drop != nil {
			dw = getScratch[T](rowBlock * d.tk)
			defer putScratch(dw)
		}
		for pair := lo; pair < hi; pair++ {
			b, h := pair/d.h, pair%d.h
			qh := q[b*d.tq*dq+h*d.dk:]
			vh := v[b*d.tk*dvw+h*d.dv:]
			oh := out[b*d.tq*dvw+h*d.dv:]
			ph := p[pair*d.tq*d.tk : (pair+1)*d.tq*d.tk]
			var kmb []T
			if km != nil {
				kmb = km[b*d.tk : (b+1)*d.tk]
			}
			// scale·Kᵀ of the head, [dk, ldt]: the score products read it and the queries
			// in place (no packing of a transposed B or of a scaled A per row block).
			transposeHead(*kt, kk[b*d.tk*dq+h*d.dk:], d.tk, d.dk, dq, ldt, scale)
			for r0 := 0; r0 < d.tq; r0 += rowBlock {
				r1 := min(r0+rowBlock, d.tq)
				clo, chi := keyRange(k.mask, r0, r1, d.tk)
				if chi <= clo { // no query of the block sees a key
					for t := r0; t < r1; t++ {
						clear(oh[t*dvw : t*dvw+d.dv])
					}
					continue
				}
				mm(false, false, r1-r0, chi-clo, d.dk, 1, qh[r0*dq:], dq, (*kt)[clo:], ldt, 0, ph[r0*d.tk+clo:], d.tk)
				for t := r0; t < r1; t++ {
					row := ph[t*d.tk : (t+1)*d.tk]
					softmaxVisible(row, row, kmb, k.mask, t, clo, chi)
				}
				if dw != nil {
					dropBlock(k.drop, *dw, ph, pair*d.tq*d.tk, d.tk, r0, r1, clo, chi)
					mm(false, false, r1-r0, d.dv, chi-clo, 1, *dw, chi-clo, vh[clo*dvw:], dvw, 0, oh[r0*dvw:], dvw)
					continue
				}
				mm(false, false, r1-r0, d.dv, chi-clo, 1, ph[r0*d.tk+clo:], d.tk, vh[clo*dvw:], dvw, 0, oh[r0*dvw:], dvw)
			}
		}
	})
}

// transposeHead sets dst[c·ldt + s] = a·x[s·ld + c] for the rows×cols block of x at row
// stride ld: one head's keys or values, transposed. In float32 it runs on package
// vmath's 8×8 register tiles; in float64 it walks eight rows of x at a time, so that each
// column's eight values are stored together.
func transposeHead[T float](dst, x []T, rows, cols, ld, ldt int, a T) {
	if d32, ok := any(dst).([]float32); ok {
		vmath.Transpose(d32, ldt, any(x).([]float32), ld, rows, cols, float32(a))
		return
	}
	s := 0
	for ; s+8 <= rows; s += 8 {
		x0 := x[s*ld : s*ld+cols]
		x1, x2, x3 := x[(s+1)*ld:][:len(x0)], x[(s+2)*ld:][:len(x0)], x[(s+3)*ld:][:len(x0)]
		x4, x5, x6 := x[(s+4)*ld:][:len(x0)], x[(s+5)*ld:][:len(x0)], x[(s+6)*ld:][:len(x0)]
		x7 := x[(s+7)*ld:][:len(x0)]
		for c, v := range x0 {
			o := (*[8]T)(dst[c*ldt+s:])
			o[0], o[1], o[2], o[3] = a*v, a*x1[c], a*x2[c], a*x3[c]
			o[4], o[5], o[6], o[7] = a*x4[c], a*x5[c], a*x6[c], a*x7[c]
		}
	}
	for ; s < rows; s++ {
		for c, v := range x[s*ld : s*ld+cols] {
			dst[c*ldt+s] = a * v
		}
	}
}

// headStride is the row stride of a transposed head of tk keys: a multiple of 16 (rows
// 64-byte aligned) that is not a multiple of 64 (256 bytes in float32: rows at such
// strides fall into few cache sets, and the transposing stores alias the loads).
func headStride(tk int) int {
	ld := (tk + 15) &^ 15
	if ld%64 == 0 {
		ld += 16
	}
	return ld
}

// scratch32 and scratch64 hold the per-goroutine scratch slices of the attention ops.
var scratch32, scratch64 = sync.Pool{New: func() any { return new([]float32) }}, sync.Pool{New: func() any { return new([]float64) }}

// getScratch returns a scratch slice of length n from the pool of T (contents undefined);
// putScratch gives it back.
func getScratch[T float](n int) *[]T {
	var s *[]T
	if _, f32 := any(T(0)).(float32); f32 {
		s = scratch32.Get().(*[]T)
	} else {
		s = scratch64.Get().(*[]T)
	}
	if cap(*s) < n {
		*s = make([]T, n)
	}
	*s = (*s)[:n]
	return s
}

func putScratch[T float](s *[]T) {
	if _, f32 := any(T(0)).(float32); f32 {
		scratch32.Put(s)
	} else {
		scratch64.Put(s)
	}
}

// stateBufs: the weights, [B, H, Tq, Tk], from the forward pass to the backward ops, and
// the gradients of the inputs computed ahead by the first backward call.
func (k *attentionKernel) stateBufs(in []tensor.Shape) []stateBuf {
	qs, vs := in[0], in[2]
	return inputGradBufs([]stateBuf{{shape: tensor.Shape{qs[0], k.heads, qs[1], vs[1]}, fromForward: true}}, in)
}

func (k *attentionKernel) useState(bufs []*tensor.Dense) {
	if p := bufs[0]; p != nil {
		switch p.Dtype() {
		case Float32:
			k.p32 = p.Float32s()
		case Float64:
			k.p64 = p.Float64s()
		}
	}
	k.grads = bufs[1:] // gradBuffers makes those the plan left out
}

func (k *attentionKernel) backward(wrt int, in []*tensor.Dense, out, gout, dst *tensor.Dense) error {
	if k.gradGen == k.gen && k.gradAt != wrt && len(k.grads) == len(in) {
		copyGrad(dst, k.grads[wrt])
		return nil
	}
	// The first call of a pass computes the gradients of q, k and v together, its own
	// into dst and the others into k.grads for the calls that follow.
	k.grads = gradBuffers(k.grads, in)
	d := k.dims(in)
	switch in[0].Dtype() {
	case Float32:
		gr := [3][]float32{k.grads[0].Float32s(), k.grads[1].Float32s(), k.grads[2].Float32s()}
		gr[wrt] = dst.Float32s()
		attnBackward(k, d, gemm.Sgemm, in[0].Float32s(), in[1].Float32s(), in[2].Float32s(), k.p32,
			out.Float32s(), gout.Float32s(), gr)
	case Float64:
		gr := [3][]float64{k.grads[0].Float64s(), k.grads[1].Float64s(), k.grads[2].Float64s()}
		gr[wrt] = dst.Float64s()
		attnBackward(k, d, gemm.Dgemm, in[0].Float64s(), in[1].Float64s(), in[2].Float64s(), k.p64,
			out.Float64s(), gout.Float64s(), gr)
	}
	k.gradGen, k.gradAt = k.gen, wrt
	return nil
}

// attnBackward writes the gradients with respect to the queries, keys and values into
// gr[0], gr[1] and gr[2] in one pass per head and block of query rows. With G = ∂L/∂out
// and O = out per head, dV = Pᵀ·G, and the score gradients
// dS = scale·P ⊙ (G·Vᵀ − δ), δ_t = G_t·O_t = Σ_s P_ts (G·Vᵀ)_ts (THEORY.md §8: the
// weighted mean of the weight gradients), give dQ = dS·K and dK = dSᵀ·Q; dS lives only
// for its block.
func attnBackward[T float](k *attentionKernel, d attnDims, mm gemmFunc[T], q, kk, v, p, out, gy []T, gr [3][]T) {
	dq, dvw := d.h*d.dk, d.h*d.dv
	scale := T(k.scale)
	parallelFor(d.b*d.h, d.tq*d.tk*(2*d.dk+2*d.dv+4), func(lo, hi int) {
		ldt := headStride(d.tk)
		vt := getScratch[T](d.dv * ldt)
		defer putScratch(vt)
		ds := getScratch[T](rowBlock * d.tk)
		defer putScratch(ds)
		var dw *[]T // AttentionDropout's dropped weights of a block
		if k.drop != nil {
			dw = getScratch[T](rowBlock * d.tk)
			defer putScratch(dw)
		}
		for pair := lo; pair < hi; pair++ {
			b, h := pair/d.h, pair%d.h
			qh, kh := q[b*d.tq*dq+h*d.dk:], kk[b*d.tk*dq+h*d.dk:]
			gh, oh := gy[b*d.tq*dvw+h*d.dv:], out[b*d.tq*dvw+h*d.dv:]
			dqh, dkh, dvh := gr[0][b*d.tq*dq+h*d.dk:], gr[1][b*d.tk*dq+h*d.dk:], gr[2][b*d.tk*dvw+h*d.dv:]
			ph := p[pair*d.tq*d.tk : (pair+1)*d.tq*d.tk]
			for s := range d.tk {
				clear(dkh[s*dq : s*dq+d.dk])
				clear(dvh[s*dvw : s*dvw+d.dv])
			}
			transposeHead(*vt, v[b*d.tk*dvw+h*d.dv:], d.tk, d.dv, dvw, ldt, 1)
			for r0 := 0; r0 < d.tq; r0 += rowBlock {
				r1 := min(r0+rowBlock, d.tq)
				rb := r1 - r0
				clo, chi := keyRange(k.mask, r0, r1, d.tk)
				if chi <= clo {
					for t := r0; t < r1; t++ {
						clear(dqh[t*dq : t*dq+d.dk])
					}
					continue
				}
				w := chi - clo
				prefetchRows(oh[r0*dvw:], rb, d.dv, dvw) // the block's outputs, read cold for δ
				c := (*ds)[:rb*w]
				if dw != nil {
					// With dropout (fusedDrop): dS = G·Vᵀ ⊙ keep/(1−p), dV += Dᵀ·G.
					mm(false, false, rb, w, d.dv, 1, gh[r0*dvw:], dvw, (*vt)[clo:], ldt, 0, c, w)
					dropGradBlock(k.drop, *dw, c, ph, pair*d.tq*d.tk, d.tk, r0, r1, clo, chi)
					mm(true, false, w, d.dv, rb, 1, *dw, w, gh[r0*dvw:], dvw, 1, dvh[clo*dvw:], dvw)
				} else {
					// dV[clo:chi] += P[r0:r1, clo:chi]ᵀ·G[r0:r1]
					mm(true, false, w, d.dv, rb, 1, ph[r0*d.tk+clo:], d.tk, gh[r0*dvw:], dvw, 1, dvh[clo*dvw:], dvw)
					// dS = G[r0:r1]·V[clo:chi]ᵀ, then scale·P ⊙ (dS − δ) row by row
					mm(false, false, rb, w, d.dv, 1, gh[r0*dvw:], dvw, (*vt)[clo:], ldt, 0, c, w)
				}
				for i := range rb {
					t := r0 + i
					delta := dotRow(gh[t*dvw:t*dvw+d.dv], oh[t*dvw:t*dvw+d.dv])
					scoreGrad(c[i*w:(i+1)*w], ph[t*d.tk+clo:t*d.tk+chi], delta, scale)
				}
				// dQ[r0:r1] = dS·K[clo:chi], dK[clo:chi] += dSᵀ·Q[r0:r1]
				mm(false, false, rb, d.dk, w, 1, c, w, kh[clo*dq:], dq, 0, dqh[r0*dq:], dq)
				mm(true, false, w, d.dk, rb, 1, c, w, qh[r0*dq:], dq, 1, dkh[clo*dq:], dq)
			}
		}
	})
}

// dotRow returns Σ x[i]·y[i] in T, in order.
func dotRow[T float](x, y []T) T {
	y = y[:len(x)]
	var s T
	for i, v := range x {
		s += v * y[i]
	}
	return s
}

// scoreGrad sets d[j] = (scale·p[j])·(d[j] − delta), on package vmath's vector kernel in
// float32.
func scoreGrad[T float](d, p []T, delta, scale T) {
	if d32, ok := any(d).([]float32); ok {
		vmath.ScoreGrad(d32, any(p).([]float32), float32(delta), float32(scale))
		return
	}
	p = p[:len(d)]
	for j, x := range p {
		d[j] = scale * x * (d[j] - delta)
	}
}
