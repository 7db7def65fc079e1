package autodiff

import (
	"fmt"
	"math"
	"sort"

	"gorgonia.org/tensor"
)

// This file holds the fused ops that localization kernels need beyond the dot product:
// exact pairwise distances, per-row (per-query) bandwidth scaling, the log-clamp of a
// compactly supported kernel, log-sum-exp for kernel mixtures and the k-nearest-neighbour
// distance of an adaptive bandwidth.

// ScaleRows multiplies every row of x [..., C] by the matching entry of s, whose shape is
// x's shape without the last axis: out[..., c] = x[..., c]·s[...]. It applies a
// per-query bandwidth to scores [N, Tq, Tk] without a broadcast copy of s.
func (g *Graph) ScaleRows(x, s *Node) *Node {
	if !g.ok("ScaleRows", x, s) {
		return nil
	}
	xs, ss := x.n.Shape(), s.n.Shape()
	if xs.Dims() < 2 || ss.Dims() != xs.Dims()-1 || !ss.Eq(xs[:xs.Dims()-1]) {
		return g.failf("ScaleRows: scale %v does not match the rows of %v (want %v)", ss, xs, xs[:max(xs.Dims()-1, 0)])
	}
	return g.applyFused(scaleRowsKernel{}, x, s)
}

type scaleRowsKernel struct{}

func (scaleRowsKernel) opName() string                                   { return "ScaleRows" }
func (scaleRowsKernel) hashAttrs() string                                { return "" }
func (scaleRowsKernel) arity() int                                       { return 2 }
func (scaleRowsKernel) diffWRT() []bool                                  { return []bool{true, true} }
func (scaleRowsKernel) floatInputs() []bool                              { return []bool{true, true} }
func (scaleRowsKernel) outShape(in []tensor.Shape) (tensor.Shape, error) { return in[0].Clone(), nil }

func (scaleRowsKernel) forward(in []*tensor.Dense, out *tensor.Dense) error {
	switch x := in[0].Data().(type) {
	case []float32:
		scaleRowsFwd(x, in[1].Data().([]float32), out.Data().([]float32))
	case []float64:
		scaleRowsFwd(x, in[1].Data().([]float64), out.Data().([]float64))
	}
	return nil
}

func scaleRowsFwd[T float](x, s, out []T) {
	c := len(x) / len(s)
	for r, sr := range s {
		xr, or := x[r*c:(r+1)*c], out[r*c:(r+1)*c]
		for j, v := range xr {
			or[j] = v * sr
		}
	}
}

func (scaleRowsKernel) backward(wrt int, in []*tensor.Dense, _, gout, dst *tensor.Dense) error {
	switch x := in[0].Data().(type) {
	case []float32:
		scaleRowsBwd(wrt, x, in[1].Data().([]float32), gout.Data().([]float32), dst.Data().([]float32))
	case []float64:
		scaleRowsBwd(wrt, x, in[1].Data().([]float64), gout.Data().([]float64), dst.Data().([]float64))
	}
	return nil
}

func scaleRowsBwd[T float](wrt int, x, s, g, dst []T) {
	if wrt == 0 {
		scaleRowsFwd(g, s, dst)
		return
	}
	c := len(x) / len(s)
	for r := range s {
		var acc float64
		xr, gr := x[r*c:(r+1)*c], g[r*c:(r+1)*c]
		for j, v := range xr {
			acc += float64(v) * float64(gr[j])
		}
		dst[r] = T(acc)
	}
}

// LogSumExp returns log Σ_c exp(x[..., c]) over the last axis of x (at least 2-D),
// computed stably; the result drops that axis. Entries of −Inf contribute nothing; a row
// of −Inf gives −Inf and a zero gradient. The gradient is softmax(x)·g per row. It
// combines the log-kernels of a mixture: log Σ_l w_l K_l = LogSumExp(log w_l + log K_l).
func (g *Graph) LogSumExp(x *Node) *Node {
	if !g.ok("LogSumExp", x) {
		return nil
	}
	if x.Dims() < 2 {
		return g.failf("LogSumExp: input %v must have at least 2 axes", x.n.Shape())
	}
	return g.applyFused(logSumExpKernel{}, x)
}

type logSumExpKernel struct{}

func (logSumExpKernel) opName() string      { return "LogSumExp" }
func (logSumExpKernel) hashAttrs() string   { return "" }
func (logSumExpKernel) arity() int          { return 1 }
func (logSumExpKernel) diffWRT() []bool     { return []bool{true} }
func (logSumExpKernel) floatInputs() []bool { return []bool{true} }
func (logSumExpKernel) outShape(in []tensor.Shape) (tensor.Shape, error) {
	return in[0][:in[0].Dims()-1].Clone(), nil
}

func (logSumExpKernel) forward(in []*tensor.Dense, out *tensor.Dense) error {
	switch x := in[0].Data().(type) {
	case []float32:
		logSumExpFwd(x, out.Data().([]float32))
	case []float64:
		logSumExpFwd(x, out.Data().([]float64))
	}
	return nil
}

func logSumExpFwd[T float](x, out []T) {
	c := len(x) / len(out)
	for r := range out {
		xr := x[r*c : (r+1)*c]
		m := math.Inf(-1)
		for _, v := range xr {
			m = math.Max(m, float64(v))
		}
		if math.IsInf(m, 0) {
			out[r] = T(m)
			continue
		}
		var s float64
		for _, v := range xr {
			s += math.Exp(float64(v) - m)
		}
		out[r] = T(m + math.Log(s))
	}
}

func (logSumExpKernel) backward(_ int, in []*tensor.Dense, out, gout, dst *tensor.Dense) error {
	switch x := in[0].Data().(type) {
	case []float32:
		logSumExpBwd(x, out.Data().([]float32), gout.Data().([]float32), dst.Data().([]float32))
	case []float64:
		logSumExpBwd(x, out.Data().([]float64), gout.Data().([]float64), dst.Data().([]float64))
	}
	return nil
}

func logSumExpBwd[T float](x, out, g, dst []T) {
	c := len(x) / len(out)
	for r, lse := range out {
		xr, dr := x[r*c:(r+1)*c], dst[r*c:(r+1)*c]
		if math.IsInf(float64(lse), 0) {
			clear(dr)
			continue
		}
		for j, v := range xr {
			dr[j] = T(float64(g[r]) * math.Exp(float64(v)-float64(lse)))
		}
	}
}

// PairwiseDist returns the Euclidean distances between the rows of q [N, Tq, d] and
// k [N, Tk, d] as [N, Tq, Tk]: ‖q_t − k_s‖² if squared, else ‖q_t − k_s‖. The
// differences are taken directly (no cancellation, exactly 0 at q_t = k_s). The
// distance's gradient at 0 is the zero subgradient, never NaN.
func (g *Graph) PairwiseDist(q, k *Node, squared bool) *Node {
	if !g.ok("PairwiseDist", q, k) {
		return nil
	}
	qs, ks := q.n.Shape(), k.n.Shape()
	if qs.Dims() != 3 || ks.Dims() != 3 || qs[0] != ks[0] || qs[2] != ks[2] {
		return g.failf("PairwiseDist: shapes %v and %v (want [N,Tq,d] and [N,Tk,d])", qs, ks)
	}
	return g.applyFused(pairDistKernel{squared: squared}, q, k)
}

type pairDistKernel struct{ squared bool }

func (pairDistKernel) opName() string      { return "PairwiseDist" }
func (k pairDistKernel) hashAttrs() string { return fmt.Sprintf("{squared:%v}", k.squared) }
func (pairDistKernel) arity() int          { return 2 }
func (pairDistKernel) diffWRT() []bool     { return []bool{true, true} }
func (pairDistKernel) floatInputs() []bool { return []bool{true, true} }
func (pairDistKernel) outShape(in []tensor.Shape) (tensor.Shape, error) {
	return tensor.Shape{in[0][0], in[0][1], in[1][1]}, nil
}

func (k pairDistKernel) forward(in []*tensor.Dense, out *tensor.Dense) error {
	qs, ks := in[0].Shape(), in[1].Shape()
	switch q := in[0].Data().(type) {
	case []float32:
		pairDistFwd(q, in[1].Data().([]float32), out.Data().([]float32), qs[0], qs[1], ks[1], qs[2], k.squared)
	case []float64:
		pairDistFwd(q, in[1].Data().([]float64), out.Data().([]float64), qs[0], qs[1], ks[1], qs[2], k.squared)
	}
	return nil
}

func pairDistFwd[T float](q, k, out []T, n, tq, tk, d int, squared bool) {
	parallelFor(n, tq*tk*d, func(lo, hi int) {
		for p := lo; p < hi; p++ {
			for t := 0; t < tq; t++ {
				qt := q[(p*tq+t)*d : (p*tq+t+1)*d]
				ot := out[(p*tq+t)*tk : (p*tq+t+1)*tk]
				for s := 0; s < tk; s++ {
					ks := k[(p*tk+s)*d : (p*tk+s+1)*d]
					var acc float64
					for i, v := range qt {
						diff := float64(v) - float64(ks[i])
						acc += diff * diff
					}
					if !squared {
						acc = math.Sqrt(acc)
					}
					ot[s] = T(acc)
				}
			}
		}
	})
}

func (k pairDistKernel) backward(wrt int, in []*tensor.Dense, out, gout, dst *tensor.Dense) error {
	qs, ks := in[0].Shape(), in[1].Shape()
	switch q := in[0].Data().(type) {
	case []float32:
		pairDistBwd(wrt, q, in[1].Data().([]float32), out.Data().([]float32), gout.Data().([]float32), dst.Data().([]float32), qs[0], qs[1], ks[1], qs[2], k.squared)
	case []float64:
		pairDistBwd(wrt, q, in[1].Data().([]float64), out.Data().([]float64), gout.Data().([]float64), dst.Data().([]float64), qs[0], qs[1], ks[1], qs[2], k.squared)
	}
	return nil
}

// pairDistBwd: with c_ts = 2 g_ts (squared) or g_ts / d_ts (distance, 0 where d_ts = 0),
// dq_t = Σ_s c_ts (q_t − k_s) and dk_s = −Σ_t c_ts (q_t − k_s).
func pairDistBwd[T float](wrt int, q, k, out, g, dst []T, n, tq, tk, d int, squared bool) {
	coef := func(idx int) float64 {
		if squared {
			return 2 * float64(g[idx])
		}
		if out[idx] == 0 {
			return 0
		}
		return float64(g[idx]) / float64(out[idx])
	}
	clear(dst)
	parallelFor(n, tq*tk*d, func(lo, hi int) {
		for p := lo; p < hi; p++ {
			for t := 0; t < tq; t++ {
				qt := q[(p*tq+t)*d : (p*tq+t+1)*d]
				for s := 0; s < tk; s++ {
					c := coef((p*tq+t)*tk + s)
					if c == 0 {
						continue
					}
					ks := k[(p*tk+s)*d : (p*tk+s+1)*d]
					var dd []T
					if wrt == 0 {
						dd = dst[(p*tq+t)*d : (p*tq+t+1)*d]
					} else {
						dd = dst[(p*tk+s)*d : (p*tk+s+1)*d]
						c = -c
					}
					for i, v := range qt {
						dd[i] += T(c * (float64(v) - float64(ks[i])))
					}
				}
			}
		}
	})
}

// LogPositive returns log x where x > 0 and −Inf elsewhere, with gradient g/x inside and
// exactly 0 outside (not NaN). It is the log-clamp log max(0, x) of a compactly
// supported kernel such as Epanechnikov's.
func (g *Graph) LogPositive(x *Node) *Node {
	if !g.ok("LogPositive", x) {
		return nil
	}
	return g.applyFused(logPositiveKernel{}, x)
}

type logPositiveKernel struct{}

func (logPositiveKernel) opName() string                                   { return "LogPositive" }
func (logPositiveKernel) hashAttrs() string                                { return "" }
func (logPositiveKernel) arity() int                                       { return 1 }
func (logPositiveKernel) diffWRT() []bool                                  { return []bool{true} }
func (logPositiveKernel) floatInputs() []bool                              { return []bool{true} }
func (logPositiveKernel) outShape(in []tensor.Shape) (tensor.Shape, error) { return in[0].Clone(), nil }

func logPositive(x float64) float64 {
	if x > 0 {
		return math.Log(x)
	}
	return math.Inf(-1)
}

func (logPositiveKernel) forward(in []*tensor.Dense, out *tensor.Dense) error {
	switch x := in[0].Data().(type) {
	case []float32:
		mapInto(x, out.Data().([]float32), logPositive)
	case []float64:
		mapInto(x, out.Data().([]float64), logPositive)
	}
	return nil
}

func (logPositiveKernel) backward(_ int, in []*tensor.Dense, _, gout, dst *tensor.Dense) error {
	switch x := in[0].Data().(type) {
	case []float32:
		logPositiveBwd(x, gout.Data().([]float32), dst.Data().([]float32))
	case []float64:
		logPositiveBwd(x, gout.Data().([]float64), dst.Data().([]float64))
	}
	return nil
}

func logPositiveBwd[T float](x, g, dst []T) {
	for i, v := range x {
		if v > 0 {
			dst[i] = g[i] / v
		} else {
			dst[i] = 0
		}
	}
}

// KthSmallest returns, for every row of x [N, Tq, Tk] or [B, H, Tq, Tk], the k-th
// smallest entry (k >= 1) among the keys that mask and keyMask allow (the same rules as
// LocalMean); a row with fewer than k visible keys gives its largest visible entry, a row
// with none gives 0. The result has x's shape without the last axis. Applied to
// PairwiseDist it is the k-nearest-neighbour bandwidth. The gradient flows to the chosen
// entry only (the choice itself is not differentiated; ties pick the lowest index).
func (g *Graph) KthSmallest(x, keyMask *Node, k int, mask Mask) *Node {
	if !g.ok("KthSmallest", x) {
		return nil
	}
	xs := x.n.Shape()
	if xs.Dims() < 3 || xs.Dims() > 4 {
		return g.failf("KthSmallest: input %v (want [N,Tq,Tk] or [B,H,Tq,Tk])", xs)
	}
	if k < 1 {
		return g.failf("KthSmallest: k = %d, want k >= 1", k)
	}
	if mask.Window < 0 {
		return g.failf("KthSmallest: negative window %d", mask.Window)
	}
	kern := &kthSmallestKernel{k: k, mask: mask}
	if keyMask == nil {
		return g.applyFused(kern, x)
	}
	if !g.ok("KthSmallest", keyMask) {
		return nil
	}
	ks := keyMask.n.Shape()
	if ks.Dims() != 2 || ks[0] != xs[0] || ks[1] != xs[xs.Dims()-1] {
		return g.failf("KthSmallest: key mask %v, want [%d, %d] for %v", ks, xs[0], xs[xs.Dims()-1], xs)
	}
	kern.keyMasked = true
	return g.applyFused(kern, x, keyMask)
}

type kthSmallestKernel struct {
	k         int
	mask      Mask
	keyMasked bool
	// idx caches the chosen key of every row (−1 for none) for the backward pass.
	idx []int
}

func (k *kthSmallestKernel) opName() string { return "KthSmallest" }
func (k *kthSmallestKernel) hashAttrs() string {
	return fmt.Sprintf("{k:%d}%v{keymask:%v}", k.k, k.mask, k.keyMasked)
}
func (k *kthSmallestKernel) arity() int {
	if k.keyMasked {
		return 2
	}
	return 1
}
func (k *kthSmallestKernel) diffWRT() []bool     { return []bool{true, false}[:k.arity()] }
func (k *kthSmallestKernel) floatInputs() []bool { return []bool{true, true}[:k.arity()] }
func (k *kthSmallestKernel) outShape(in []tensor.Shape) (tensor.Shape, error) {
	return in[0][:in[0].Dims()-1].Clone(), nil
}

func (k *kthSmallestKernel) forward(in []*tensor.Dense, out *tensor.Dense) error {
	s := in[0].Shape()
	nd := s.Dims()
	d := lmDims{tq: s[nd-2], tk: s[nd-1], heads: 1}
	d.n = s.TotalSize() / (d.tq * d.tk)
	if nd == 4 {
		d.heads = s[1]
	}
	if len(k.idx) != d.n*d.tq {
		k.idx = make([]int, d.n*d.tq)
	}
	switch x := in[0].Data().(type) {
	case []float32:
		kthSmallestFwd(d, k.k, k.mask, x, keyMaskOf[float32](in, k.keyMasked), k.idx, out.Data().([]float32))
	case []float64:
		kthSmallestFwd(d, k.k, k.mask, x, keyMaskOf[float64](in, k.keyMasked), k.idx, out.Data().([]float64))
	}
	return nil
}

func keyMaskOf[T float](in []*tensor.Dense, masked bool) []T {
	if !masked {
		return nil
	}
	return in[1].Data().([]T)
}

func kthSmallestFwd[T float](d lmDims, k int, mask Mask, x, keyMask []T, idx []int, out []T) {
	parallelFor(d.n, d.tq*d.tk*4, func(lo, hi int) {
		var cand []int
		for p := lo; p < hi; p++ {
			var km []T
			if keyMask != nil {
				b := p / d.heads
				km = keyMask[b*d.tk : (b+1)*d.tk]
			}
			for t := 0; t < d.tq; t++ {
				row := x[(p*d.tq+t)*d.tk : (p*d.tq+t+1)*d.tk]
				r := p*d.tq + t
				first, last, self := mask.visible(t, d.tk)
				cand = cand[:0]
				for j := first; j < last; j++ {
					if j != self && (km == nil || km[j] != 0) {
						cand = append(cand, j)
					}
				}
				if len(cand) == 0 {
					idx[r], out[r] = -1, 0
					continue
				}
				sort.SliceStable(cand, func(a, b int) bool { return row[cand[a]] < row[cand[b]] })
				j := cand[min(k, len(cand))-1]
				idx[r], out[r] = j, row[j]
			}
		}
	})
}

func (k *kthSmallestKernel) backward(_ int, in []*tensor.Dense, _, gout, dst *tensor.Dense) error {
	s := in[0].Shape()
	tk := s[s.Dims()-1]
	switch dd := dst.Data().(type) {
	case []float32:
		kthSmallestBwd(k.idx, tk, gout.Data().([]float32), dd)
	case []float64:
		kthSmallestBwd(k.idx, tk, gout.Data().([]float64), dd)
	}
	return nil
}

func kthSmallestBwd[T float](idx []int, tk int, g, dst []T) {
	clear(dst)
	for r, j := range idx {
		if j >= 0 {
			dst[r*tk+j] = g[r]
		}
	}
}
