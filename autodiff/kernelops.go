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
	switch in[0].Dtype() {
	case Float32:
		x := in[0].Float32s()
		scaleRowsFwd(x, in[1].Float32s(), out.Float32s())
	case Float64:
		x := in[0].Float64s()
		scaleRowsFwd(x, in[1].Float64s(), out.Float64s())
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
	switch in[0].Dtype() {
	case Float32:
		x := in[0].Float32s()
		scaleRowsBwd(wrt, x, in[1].Float32s(), gout.Float32s(), dst.Float32s())
	case Float64:
		x := in[0].Float64s()
		scaleRowsBwd(wrt, x, in[1].Float64s(), gout.Float64s(), dst.Float64s())
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
	switch in[0].Dtype() {
	case Float32:
		x := in[0].Float32s()
		logSumExpFwd(x, out.Float32s())
	case Float64:
		x := in[0].Float64s()
		logSumExpFwd(x, out.Float64s())
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
	switch in[0].Dtype() {
	case Float32:
		x := in[0].Float32s()
		logSumExpBwd(x, out.Float32s(), gout.Float32s(), dst.Float32s())
	case Float64:
		x := in[0].Float64s()
		logSumExpBwd(x, out.Float64s(), gout.Float64s(), dst.Float64s())
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
	switch in[0].Dtype() {
	case Float32:
		q := in[0].Float32s()
		pairDistFwd(q, in[1].Float32s(), out.Float32s(), qs[0], qs[1], ks[1], qs[2], k.squared)
	case Float64:
		q := in[0].Float64s()
		pairDistFwd(q, in[1].Float64s(), out.Float64s(), qs[0], qs[1], ks[1], qs[2], k.squared)
	}
	return nil
}

func pairDistFwd[T float](q, k, out []T, n, tq, tk, d int, squared bool) {
	if q32, ok := any(q).([]float32); ok && hasAVX512 && d > 0 && tk > 0 {
		pairDistFwdAVX512(q32, any(k).([]float32), any(out).([]float32), n, tq, tk, d, squared)
		return
	}
	parallelFor(n, tq*tk*d, func(lo, hi int) {
		for p := lo; p < hi; p++ {
			kp := k[p*tk*d : (p+1)*tk*d]
			for t := 0; t < tq; t++ {
				qt := q[(p*tq+t)*d : (p*tq+t+1)*d]
				ot := out[(p*tq+t)*tk : (p*tq+t+1)*tk]
				sqDists(qt, kp, ot)
				if !squared {
					for s, v := range ot {
						ot[s] = T(math.Sqrt(float64(v)))
					}
				}
			}
		}
	})
}

// pairDistFwdAVX512 is pairDistFwd on the AVX-512 kernel: the keys of each problem are
// transposed to [d, Tk] so that sixteen keys' distances to a query accumulate in one
// register.
func pairDistFwdAVX512(q, k, out []float32, n, tq, tk, d int, squared bool) {
	parallelFor(n, tq*tk*d, func(lo, hi int) {
		kt := make([]float32, d*tk)
		for p := lo; p < hi; p++ {
			kp := k[p*tk*d : (p+1)*tk*d]
			for s := 0; s < tk; s++ {
				for i, v := range kp[s*d : (s+1)*d] {
					kt[i*tk+s] = v
				}
			}
			for t := 0; t < tq; t++ {
				qt := q[(p*tq+t)*d : (p*tq+t+1)*d]
				ot := out[(p*tq+t)*tk : (p*tq+t+1)*tk]
				for s0 := 0; s0 < tk; s0 += 16 {
					sqDistsAVX512(&qt[0], d, &kt[s0], tk, &ot[s0], laneMask(tk-s0), !squared)
				}
			}
		}
	})
}

// laneMask selects the first min(n, 16) lanes.
func laneMask(n int) uint16 {
	if n >= 16 {
		return 0xffff
	}
	return uint16(1)<<n - 1
}

// sqDists sets out[s] = ‖q − k_s‖² for the rows k_s of k (len(q) wide), four keys at a
// time so that the sums are independent chains.
func sqDists[T float](q, k, out []T) {
	d := len(q)
	s := 0
	for ; s+4 <= len(out); s += 4 {
		k0 := k[s*d : (s+1)*d]
		k1 := k[(s+1)*d : (s+2)*d]
		k2 := k[(s+2)*d : (s+3)*d]
		k3 := k[(s+3)*d : (s+4)*d]
		var a0, a1, a2, a3 T
		for i, qi := range q {
			d0, d1, d2, d3 := qi-k0[i], qi-k1[i], qi-k2[i], qi-k3[i]
			a0 += d0 * d0
			a1 += d1 * d1
			a2 += d2 * d2
			a3 += d3 * d3
		}
		o := out[s : s+4 : s+4]
		o[0], o[1], o[2], o[3] = a0, a1, a2, a3
	}
	for ; s < len(out); s++ {
		ks := k[s*d : (s+1)*d]
		var a T
		for i, qi := range q {
			di := qi - ks[i]
			a += di * di
		}
		out[s] = a
	}
}

func (k pairDistKernel) backward(wrt int, in []*tensor.Dense, out, gout, dst *tensor.Dense) error {
	qs, ks := in[0].Shape(), in[1].Shape()
	switch in[0].Dtype() {
	case Float32:
		q := in[0].Float32s()
		pairDistBwd(wrt, q, in[1].Float32s(), out.Float32s(), gout.Float32s(), dst.Float32s(), qs[0], qs[1], ks[1], qs[2], k.squared)
	case Float64:
		q := in[0].Float64s()
		pairDistBwd(wrt, q, in[1].Float64s(), out.Float64s(), gout.Float64s(), dst.Float64s(), qs[0], qs[1], ks[1], qs[2], k.squared)
	}
	return nil
}

// pairDistBwd: with c_ts = 2 g_ts (squared) or g_ts / d_ts (distance, 0 where d_ts = 0),
// dq_t = Σ_s c_ts (q_t − k_s) and dk_s = −Σ_t c_ts (q_t − k_s), the differences taken
// directly; pairs with c_ts = 0 (masked scores, whose gradient is 0) are skipped.
func pairDistBwd[T float](wrt int, q, k, out, g, dst []T, n, tq, tk, d int, squared bool) {
	parallelFor(n, tq*tk*d, func(lo, hi int) {
		c := make([]T, tq*tk) // the coefficients c_ts of one (batch·head) problem
		for p := lo; p < hi; p++ {
			qp, kp := q[p*tq*d:(p+1)*tq*d], k[p*tk*d:(p+1)*tk*d]
			r := p * tq * tk
			pairDistCoef(g[r:r+tq*tk], out[r:r+tq*tk], c, squared)
			if wrt == 0 {
				// dq_t = Σ_s c_ts (q_t − k_s): rows of c against the keys.
				dqp := dst[p*tq*d : (p+1)*tq*d]
				for t := 0; t < tq; t++ {
					diffSums(c[t*tk:], 1, tk, qp[t*d:(t+1)*d], kp, d, dqp[t*d:(t+1)*d])
				}
				continue
			}
			// dk_s = −Σ_t c_ts (q_t − k_s) = Σ_t c_ts (k_s − q_t): columns of c against
			// the queries.
			dkp := dst[p*tk*d : (p+1)*tk*d]
			for s := 0; s < tk; s++ {
				diffSums(c[s:], tk, tq, kp[s*d:(s+1)*d], qp, d, dkp[s*d:(s+1)*d])
			}
		}
	})
}

// diffSums sets out[i] = Σ_u c[u·stride] (x[i] − ys[u·d + i]) for u < count and i < d,
// skipping zero coefficients. It holds four columns in independent accumulators and
// takes every difference directly.
func diffSums[T float](c []T, stride, count int, x, ys []T, d int, out []T) {
	if count == 0 {
		clear(out[:d])
		return
	}
	c = c[:(count-1)*stride+1]
	ys = ys[:count*d]
	x, out = x[:d], out[:d]
	if c32, ok := any(c).([]float32); ok && hasAVX512 && d > 0 {
		x32, ys32, out32 := any(x).([]float32), any(ys).([]float32), any(out).([]float32)
		for i := 0; i < d; i += 16 {
			diffSumsAVX512(&c32[0], stride, count, &x32[i], &ys32[i], d, &out32[i], laneMask(d-i))
		}
		return
	}
	i := 0
	for ; i+4 <= d; i += 4 {
		x0, x1, x2, x3 := x[i], x[i+1], x[i+2], x[i+3]
		var a0, a1, a2, a3 T
		for u := 0; u < count; u++ {
			cu := c[u*stride]
			if cu == 0 {
				continue
			}
			y := ys[u*d+i : u*d+i+4 : u*d+i+4]
			a0 += cu * (x0 - y[0])
			a1 += cu * (x1 - y[1])
			a2 += cu * (x2 - y[2])
			a3 += cu * (x3 - y[3])
		}
		o := out[i : i+4 : i+4]
		o[0], o[1], o[2], o[3] = a0, a1, a2, a3
	}
	for ; i < d; i++ {
		xi := x[i]
		var a T
		for u := 0; u < count; u++ {
			if cu := c[u*stride]; cu != 0 {
				a += cu * (xi - ys[u*d+i])
			}
		}
		out[i] = a
	}
}

// pairDistCoef sets c = 2g (squared) or g/dist, 0 where dist = 0.
func pairDistCoef[T float](g, dist, c []T, squared bool) {
	c = c[:len(g)]
	if squared {
		for s, v := range g {
			c[s] = 2 * v
		}
		return
	}
	dist = dist[:len(g)]
	for s, v := range g {
		if dist[s] == 0 {
			c[s] = 0
		} else {
			c[s] = v / dist[s]
		}
	}
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
	switch in[0].Dtype() {
	case Float32:
		x := in[0].Float32s()
		logPositiveFwd(x, out.Float32s())
	case Float64:
		x := in[0].Float64s()
		logPositiveFwd(x, out.Float64s())
	}
	return nil
}

// logPositiveChunk is the number of entries per parallel task of LogPositive.
const logPositiveChunk = 4096

func logPositiveFwd[T float](x, out []T) {
	out = out[:len(x)]
	parallelFor((len(x)+logPositiveChunk-1)/logPositiveChunk, 20*logPositiveChunk, func(lo, hi int) {
		xs, os := x[lo*logPositiveChunk:min(hi*logPositiveChunk, len(x))], out[lo*logPositiveChunk:]
		os = os[:len(xs)]
		for i, v := range xs {
			os[i] = T(logPositive(float64(v)))
		}
	})
}

func (logPositiveKernel) backward(_ int, in []*tensor.Dense, _, gout, dst *tensor.Dense) error {
	switch in[0].Dtype() {
	case Float32:
		x := in[0].Float32s()
		logPositiveBwd(x, gout.Float32s(), dst.Float32s())
	case Float64:
		x := in[0].Float64s()
		logPositiveBwd(x, gout.Float64s(), dst.Float64s())
	}
	return nil
}

func logPositiveBwd[T float](x, g, dst []T) {
	g, dst = g[:len(x)], dst[:len(x)]
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
	switch in[0].Dtype() {
	case Float32:
		x := in[0].Float32s()
		kthSmallestFwd(d, k.k, k.mask, x, keyMaskOf[float32](in, k.keyMasked), k.idx, out.Float32s())
	case Float64:
		x := in[0].Float64s()
		kthSmallestFwd(d, k.k, k.mask, x, keyMaskOf[float64](in, k.keyMasked), k.idx, out.Float64s())
	}
	return nil
}

func keyMaskOf[T float](in []*tensor.Dense, masked bool) []T {
	if !masked {
		return nil
	}
	return flat[T](in[1])
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
	switch dst.Dtype() {
	case Float32:
		dd := dst.Float32s()
		kthSmallestBwd(k.idx, tk, gout.Float32s(), dd)
	case Float64:
		dd := dst.Float64s()
		kthSmallestBwd(k.idx, tk, gout.Float64s(), dd)
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
