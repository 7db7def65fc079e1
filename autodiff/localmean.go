package autodiff

import (
	"fmt"
	"math"

	"gorgonia.org/tensor"
)

// Mask is a box position kernel (THEORY.md §1): which keys each query may see. Key s is
// visible to query t when every set rule allows it; a query's position among the keys
// is t + Offset.
type Mask struct {
	// Causal hides keys after the query: s <= t + Offset.
	Causal bool
	// Window, if positive, hides keys at distance Window or more: |t + Offset − s| < Window.
	Window int
	// Offset is the position of query 0 among the keys (Tk − Tq when decoding with a
	// key/value cache; 0 for self-attention).
	Offset int
	// Hollow hides the query's own position s = t + Offset (the leave-one-out local mean).
	Hollow bool
}

func (m Mask) String() string {
	return fmt.Sprintf("{causal:%v window:%d offset:%d hollow:%v}", m.Causal, m.Window, m.Offset, m.Hollow)
}

// visible returns the half-open range of keys [lo, hi) that the structural rules allow
// for query t among tk keys, and whether the query's own position must be skipped.
func (m Mask) visible(t, tk int) (lo, hi, self int) {
	pos := t + m.Offset
	lo, hi = 0, tk
	if m.Causal {
		hi = min(hi, pos+1)
	}
	if m.Window > 0 {
		lo = max(lo, pos-m.Window+1)
		hi = min(hi, pos+m.Window)
	}
	if hi < lo {
		hi = lo
	}
	self = -1
	if m.Hollow {
		self = pos
	}
	return lo, hi, self
}

// LocalMean is the fused local-mean op of THEORY.md §2, the heart of kernel attention.
// Given log-kernel scores s [N, Tq, Tk] or [B, H, Tq, Tk] and values v [..., Tk, Dv] with
// the same leading dimensions, it returns m [..., Tq, Dv] with
//
//	m_t = Σ_s w_ts v_s,   w_ts = exp(s_ts) / Σ_u exp(s_tu)
//
// normalised per query over the keys that mask and keyMask allow. keyMask is nil or a
// [B, Tk] float tensor whose zero entries mark keys (padding) that no query of that batch
// element may see; B is the first dimension of s. Scores of −Inf (a compact kernel's
// outside) get weight 0. A query that sees no key gets m = 0 and zero gradient.
//
// The gradients are ∂m_t/∂s_ts = w_ts (v_s − m_t) and ∂m_t/∂v_s = w_ts; batch and heads
// run in parallel.
func (g *Graph) LocalMean(scores, values, keyMask *Node, mask Mask) *Node {
	if !g.ok("LocalMean", scores, values) {
		return nil
	}
	ss, vs := scores.n.Shape(), values.n.Shape()
	if ss.Dims() < 3 || ss.Dims() > 4 || vs.Dims() != ss.Dims() {
		return g.failf("LocalMean: scores %v and values %v (want [N,Tq,Tk] or [B,H,Tq,Tk] and [...,Tk,Dv])", ss, vs)
	}
	nd := ss.Dims()
	for i := 0; i < nd-2; i++ {
		if ss[i] != vs[i] {
			return g.failf("LocalMean: leading dimensions of scores %v and values %v differ", ss, vs)
		}
	}
	if ss[nd-1] != vs[nd-2] {
		return g.failf("LocalMean: scores %v have %d keys but values %v have %d", ss, ss[nd-1], vs, vs[nd-2])
	}
	if mask.Window < 0 {
		return g.failf("LocalMean: negative window %d", mask.Window)
	}
	k := &localMeanKernel{mask: mask}
	if keyMask == nil {
		return g.applyFused(k, scores, values)
	}
	if !g.ok("LocalMean", keyMask) {
		return nil
	}
	ks := keyMask.n.Shape()
	if ks.Dims() != 2 || ks[0] != ss[0] || ks[1] != ss[nd-1] {
		return g.failf("LocalMean: key mask %v, want [%d, %d] for scores %v", ks, ss[0], ss[nd-1], ss)
	}
	k.keyMasked = true
	return g.applyFused(k, scores, values, keyMask)
}

type localMeanKernel struct {
	mask      Mask
	keyMasked bool
	// w caches the normalised weights of the last forward pass for the backward pass.
	w32 []float32
	w64 []float64
	// a is scratch for dM·v in the scores backward pass.
	a32 []float32
	a64 []float64
}

func (k *localMeanKernel) opName() string { return "LocalMean" }
func (k *localMeanKernel) hashAttrs() string {
	return fmt.Sprintf("%v{keymask:%v}", k.mask, k.keyMasked)
}
func (k *localMeanKernel) arity() int {
	if k.keyMasked {
		return 3
	}
	return 2
}
func (k *localMeanKernel) diffWRT() []bool     { return []bool{true, true, false}[:k.arity()] }
func (k *localMeanKernel) floatInputs() []bool { return []bool{true, true, true}[:k.arity()] }
func (k *localMeanKernel) outShape(in []tensor.Shape) (tensor.Shape, error) {
	s := in[0].Clone()
	s[s.Dims()-1] = in[1][in[1].Dims()-1]
	return s, nil
}

// lmDims are the sizes of one local-mean problem.
type lmDims struct {
	n, heads, tq, tk, dv int
}

func dimsOf(scores, values tensor.Shape) lmDims {
	nd := scores.Dims()
	d := lmDims{tq: scores[nd-2], tk: scores[nd-1], dv: values[nd-1], heads: 1}
	d.n = scores.TotalSize() / (d.tq * d.tk)
	if nd == 4 {
		d.heads = scores[1]
	}
	return d
}

func (k *localMeanKernel) forward(in []*tensor.Dense, out *tensor.Dense) error {
	d := dimsOf(in[0].Shape(), in[1].Shape())
	switch s := in[0].Data().(type) {
	case []float32:
		if len(k.w32) != len(s) {
			k.w32 = make([]float32, len(s))
		}
		localMeanForward(d, k.mask, s, in[1].Data().([]float32), keyMaskData[float32](in, k.keyMasked), k.w32, out.Data().([]float32))
	case []float64:
		if len(k.w64) != len(s) {
			k.w64 = make([]float64, len(s))
		}
		localMeanForward(d, k.mask, s, in[1].Data().([]float64), keyMaskData[float64](in, k.keyMasked), k.w64, out.Data().([]float64))
	}
	return nil
}

func keyMaskData[T float](in []*tensor.Dense, masked bool) []T {
	if !masked {
		return nil
	}
	return in[2].Data().([]T)
}

func localMeanForward[T float](d lmDims, mask Mask, s, v, keyMask, w, m []T) {
	parallelFor(d.n, d.tq*d.tk*(d.dv+4), func(lo, hi int) {
		for p := lo; p < hi; p++ {
			sp := s[p*d.tq*d.tk : (p+1)*d.tq*d.tk]
			wp := w[p*d.tq*d.tk : (p+1)*d.tq*d.tk]
			vp := v[p*d.tk*d.dv : (p+1)*d.tk*d.dv]
			mp := m[p*d.tq*d.dv : (p+1)*d.tq*d.dv]
			var km []T
			if keyMask != nil {
				b := p / d.heads
				km = keyMask[b*d.tk : (b+1)*d.tk]
			}
			for t := 0; t < d.tq; t++ {
				st, wt := sp[t*d.tk:(t+1)*d.tk], wp[t*d.tk:(t+1)*d.tk]
				mt := mp[t*d.dv : (t+1)*d.dv]
				clear(mt)
				lo, hi, self := mask.visible(t, d.tk)
				if !normalise(st, wt, km, lo, hi, self) {
					continue
				}
				for j := lo; j < hi; j++ {
					wj := wt[j]
					if wj == 0 {
						continue
					}
					axpy(wj, vp[j*d.dv:(j+1)*d.dv], mt)
				}
			}
		}
	})
}

// normalise writes the softmax of st over the visible keys into wt (zero elsewhere) and
// reports whether any key had positive weight.
func normalise[T float](st, wt, km []T, lo, hi, self int) bool {
	clear(wt)
	mx := math.Inf(-1)
	for j := lo; j < hi; j++ {
		if j == self || (km != nil && km[j] == 0) {
			continue
		}
		if x := float64(st[j]); x > mx {
			mx = x
		}
	}
	if math.IsInf(mx, -1) || math.IsNaN(mx) {
		return false
	}
	var sum float64
	for j := lo; j < hi; j++ {
		if j == self || (km != nil && km[j] == 0) {
			continue
		}
		e := math.Exp(float64(st[j]) - mx)
		wt[j] = T(e)
		sum += e
	}
	inv := 1 / sum
	for j := lo; j < hi; j++ {
		wt[j] = T(float64(wt[j]) * inv)
	}
	return true
}

// axpy sets y += a·x.
func axpy[T float](a T, x, y []T) {
	y = y[:len(x)]
	for i, xi := range x {
		y[i] += a * xi
	}
}

func dot[T float](x, y []T) T {
	y = y[:len(x)]
	var s T
	for i, xi := range x {
		s += xi * y[i]
	}
	return s
}

func (k *localMeanKernel) backward(wrt int, in []*tensor.Dense, _, gout, dst *tensor.Dense) error {
	d := dimsOf(in[0].Shape(), in[1].Shape())
	switch dm := gout.Data().(type) {
	case []float32:
		if wrt == 1 {
			localMeanGradValues(d, k.mask, k.w32, dm, dst.Data().([]float32))
			return nil
		}
		if len(k.a32) != len(k.w32) {
			k.a32 = make([]float32, len(k.w32))
		}
		localMeanGradScores(d, k.mask, k.w32, in[1].Data().([]float32), dm, k.a32, dst.Data().([]float32))
	case []float64:
		if wrt == 1 {
			localMeanGradValues(d, k.mask, k.w64, dm, dst.Data().([]float64))
			return nil
		}
		if len(k.a64) != len(k.w64) {
			k.a64 = make([]float64, len(k.w64))
		}
		localMeanGradScores(d, k.mask, k.w64, in[1].Data().([]float64), dm, k.a64, dst.Data().([]float64))
	}
	return nil
}

// localMeanGradValues computes dv_s = Σ_t w_ts dm_t.
func localMeanGradValues[T float](d lmDims, mask Mask, w, dm, dv []T) {
	parallelFor(d.n, d.tq*d.tk*(d.dv+1), func(lo, hi int) {
		for p := lo; p < hi; p++ {
			wp := w[p*d.tq*d.tk : (p+1)*d.tq*d.tk]
			dmp := dm[p*d.tq*d.dv : (p+1)*d.tq*d.dv]
			dvp := dv[p*d.tk*d.dv : (p+1)*d.tk*d.dv]
			clear(dvp)
			for t := 0; t < d.tq; t++ {
				wt := wp[t*d.tk : (t+1)*d.tk]
				dmt := dmp[t*d.dv : (t+1)*d.dv]
				lo, hi, _ := mask.visible(t, d.tk)
				for j := lo; j < hi; j++ {
					if wt[j] != 0 {
						axpy(wt[j], dmt, dvp[j*d.dv:(j+1)*d.dv])
					}
				}
			}
		}
	})
}

// localMeanGradScores computes ds_ts = w_ts (dm_t·v_s − dm_t·m_t), using
// dm_t·m_t = Σ_s w_ts (dm_t·v_s) so that m itself is not needed.
func localMeanGradScores[T float](d lmDims, mask Mask, w, v, dm, a, ds []T) {
	parallelFor(d.n, d.tq*d.tk*(d.dv+2), func(lo, hi int) {
		for p := lo; p < hi; p++ {
			wp := w[p*d.tq*d.tk : (p+1)*d.tq*d.tk]
			ap := a[p*d.tq*d.tk : (p+1)*d.tq*d.tk]
			dsp := ds[p*d.tq*d.tk : (p+1)*d.tq*d.tk]
			vp := v[p*d.tk*d.dv : (p+1)*d.tk*d.dv]
			dmp := dm[p*d.tq*d.dv : (p+1)*d.tq*d.dv]
			for t := 0; t < d.tq; t++ {
				wt, at, dst := wp[t*d.tk:(t+1)*d.tk], ap[t*d.tk:(t+1)*d.tk], dsp[t*d.tk:(t+1)*d.tk]
				dmt := dmp[t*d.dv : (t+1)*d.dv]
				clear(dst)
				lo, hi, _ := mask.visible(t, d.tk)
				var c float64
				for j := lo; j < hi; j++ {
					if wt[j] == 0 {
						continue
					}
					at[j] = dot(dmt, vp[j*d.dv:(j+1)*d.dv])
					c += float64(wt[j]) * float64(at[j])
				}
				for j := lo; j < hi; j++ {
					if wt[j] != 0 {
						dst[j] = T(float64(wt[j]) * (float64(at[j]) - c))
					}
				}
			}
		}
	})
}
