package autodiff

import (
	"fmt"
	"math"
	"sync"

	"gorgonia.org/tensor"

	"github.com/locusml/locus/autodiff/internal/gemm"
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
	kern := &attentionKernel{heads: heads, scale: scale, mask: mask}
	if keyMask == nil {
		return g.applyFused(kern, q, k, v)
	}
	if !g.ok("Attention", keyMask) {
		return nil
	}
	if ms := keyMask.n.Shape(); ms.Dims() != 2 || ms[0] != qs[0] || ms[1] != ks[1] {
		return g.failf("Attention: key mask %v, want [%d, %d]", ms, qs[0], ks[1])
	}
	kern.keyMasked, kern.keyMask = true, keyMask
	return g.applyFused(kern, q, k, v, keyMask)
}

type attentionKernel struct {
	heads     int
	scale     float64
	mask      Mask
	keyMasked bool
	keyMask   *Node // the key mask input, for LocalMeanWeights
	// Weights of the last forward pass and the score gradients of the last backward
	// pass, [B, H, Tq, Tk]; dsGen == gen when ds belongs to the current pass. Only the
	// key blocks that keyRange leaves visible are written and read.
	p32, ds32  []float32
	p64, ds64  []float64
	gen, dsGen int
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
				mm(false, false, r1-r0, d.dv, chi-clo, 1, ph[r0*d.tk+clo:], d.tk, vh[clo*dvw:], dvw, 0, oh[r0*dvw:], dvw)
			}
		}
	})
}

// transposeHead sets dst[c·ldt + s] = a·x[s·ld + c] for the rows×cols block of x at row
// stride ld: one head's keys or values, transposed. It walks eight rows of x at a time,
// so that each column's eight values are stored together.
func transposeHead[T float](dst, x []T, rows, cols, ld, ldt int, a T) {
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

func (k *attentionKernel) backward(wrt int, in []*tensor.Dense, _, gout, dst *tensor.Dense) error {
	d := k.dims(in)
	switch in[0].Dtype() {
	case Float32:
		q := in[0].Float32s()
		if len(k.ds32) != len(k.p32) {
			k.ds32 = make([]float32, len(k.p32))
		}
		attnBackward(k, d, wrt, gemm.Sgemm, q, in[1].Float32s(), in[2].Float32s(), k.p32, k.ds32, gout.Float32s(), dst.Float32s())
	case Float64:
		q := in[0].Float64s()
		if len(k.ds64) != len(k.p64) {
			k.ds64 = make([]float64, len(k.p64))
		}
		attnBackward(k, d, wrt, gemm.Dgemm, q, in[1].Float64s(), in[2].Float64s(), k.p64, k.ds64, gout.Float64s(), dst.Float64s())
	}
	return nil
}

// attnBackward writes the gradient with respect to the queries (wrt 0), keys (1) or
// values (2) into dst. With G = ∂L/∂out per head, dV = Pᵀ·G; the score gradients
// dS = scale·P ⊙ (G·Vᵀ − rowsum(P ⊙ G·Vᵀ)) are computed once per pass and give
// dQ = dS·K and dK = dSᵀ·Q.
func attnBackward[T float](k *attentionKernel, d attnDims, wrt int, mm gemmFunc[T], q, kk, v, p, ds, gy, dst []T) {
	dq, dvw := d.h*d.dk, d.h*d.dv
	if wrt != 2 && k.dsGen != k.gen {
		scale := T(k.scale)
		parallelFor(d.b*d.h, d.tq*d.tk*(d.dv+2), func(lo, hi int) {
			for pair := lo; pair < hi; pair++ {
				b, h := pair/d.h, pair%d.h
				vh := v[b*d.tk*dvw+h*d.dv:]
				gh := gy[b*d.tq*dvw+h*d.dv:]
				ph := p[pair*d.tq*d.tk : (pair+1)*d.tq*d.tk]
				dsh := ds[pair*d.tq*d.tk : (pair+1)*d.tq*d.tk]
				for r0 := 0; r0 < d.tq; r0 += rowBlock {
					r1 := min(r0+rowBlock, d.tq)
					clo, chi := keyRange(k.mask, r0, r1, d.tk)
					if chi <= clo {
						continue
					}
					mm(false, true, r1-r0, chi-clo, d.dv, 1, gh[r0*dvw:], dvw, vh[clo*dvw:], dvw, 0, dsh[r0*d.tk+clo:], d.tk)
					for t := r0; t < r1; t++ {
						pr, dr := ph[t*d.tk+clo:t*d.tk+chi], dsh[t*d.tk+clo:t*d.tk+chi]
						dr = dr[:len(pr)]
						var c T
						for j, w := range pr {
							c += w * dr[j]
						}
						for j, w := range pr {
							dr[j] = scale * w * (dr[j] - c)
						}
					}
				}
			}
		})
		k.dsGen = k.gen
	}
	parallelFor(d.b*d.h, d.tq*d.tk*(d.dk+1), func(lo, hi int) {
		for pair := lo; pair < hi; pair++ {
			b, h := pair/d.h, pair%d.h
			var dh []T // this head's block of dst
			ld, width, rows := dq, d.dk, d.tk
			switch wrt {
			case 0:
				dh, rows = dst[b*d.tq*dq+h*d.dk:], d.tq
			case 1:
				dh = dst[b*d.tk*dq+h*d.dk:]
			case 2:
				dh, ld, width = dst[b*d.tk*dvw+h*d.dv:], dvw, d.dv
			}
			for t := range rows {
				clear(dh[t*ld : t*ld+width])
			}
			ph := p[pair*d.tq*d.tk : (pair+1)*d.tq*d.tk]
			dsh := ds[pair*d.tq*d.tk : (pair+1)*d.tq*d.tk]
			for r0 := 0; r0 < d.tq; r0 += rowBlock {
				r1 := min(r0+rowBlock, d.tq)
				clo, chi := keyRange(k.mask, r0, r1, d.tk)
				if chi <= clo {
					continue
				}
				switch wrt {
				case 0: // dQ[r0:r1] = dS[r0:r1, clo:chi]·K[clo:chi]
					kh := kk[b*d.tk*dq+h*d.dk:]
					mm(false, false, r1-r0, d.dk, chi-clo, 1, dsh[r0*d.tk+clo:], d.tk, kh[clo*dq:], dq, 0, dh[r0*dq:], dq)
				case 1: // dK[clo:chi] += dS[r0:r1, clo:chi]ᵀ·Q[r0:r1]
					qh := q[b*d.tq*dq+h*d.dk:]
					mm(true, false, chi-clo, d.dk, r1-r0, 1, dsh[r0*d.tk+clo:], d.tk, qh[r0*dq:], dq, 1, dh[clo*dq:], dq)
				case 2: // dV[clo:chi] += P[r0:r1, clo:chi]ᵀ·G[r0:r1]
					gh := gy[b*d.tq*dvw+h*d.dv:]
					mm(true, false, chi-clo, d.dv, r1-r0, 1, ph[r0*d.tk+clo:], d.tk, gh[r0*dvw:], dvw, 1, dh[clo*dvw:], dvw)
				}
			}
		}
	})
}
