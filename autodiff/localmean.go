package autodiff

import (
	"fmt"
	"math"

	"gorgonia.org/tensor"

	"github.com/locusml/locus/autodiff/internal/gemm"
	"github.com/locusml/locus/autodiff/internal/vmath"
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
	// Only the key blocks that keyRange leaves visible are written (see localMeanForward).
	w32 []float32
	w64 []float64
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
	switch in[0].Dtype() {
	case Float32:
		s := in[0].Float32s()
		if len(k.w32) != len(s) {
			k.w32 = make([]float32, len(s))
		}
		localMeanForward(d, k.mask, gemm.Sgemm, vmath.ExpShift, s, in[1].Float32s(), keyMaskData[float32](in, k.keyMasked), k.w32, out.Float32s())
	case Float64:
		s := in[0].Float64s()
		if len(k.w64) != len(s) {
			k.w64 = make([]float64, len(s))
		}
		localMeanForward(d, k.mask, gemm.Dgemm, expShift64, s, in[1].Float64s(), keyMaskData[float64](in, k.keyMasked), k.w64, out.Float64s())
	}
	return nil
}

func keyMaskData[T float](in []*tensor.Dense, masked bool) []T {
	if !masked {
		return nil
	}
	return flat[T](in[2])
}

// localMeanForward works per (batch·head) problem in blocks of rowBlock queries: it
// normalises the scores of the block's rows into w over the union [clo, chi) of the
// keys they may see (keyRange; zero where a row's own mask hides a key) and sets
// m[r0:r1] = w[r0:r1, clo:chi]·v[clo:chi] with one matrix product. Entries of w outside
// [clo, chi) are neither written nor read (the backward pass uses the same blocks), so
// fully masked key blocks (a causal mask's upper triangle) cost nothing.
func localMeanForward[T float](d lmDims, mask Mask, mm gemmFunc[T], expShift func([]T, T), s, v, keyMask, w, m []T) {
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
			for r0 := 0; r0 < d.tq; r0 += rowBlock {
				r1 := min(r0+rowBlock, d.tq)
				clo, chi := keyRange(mask, r0, r1, d.tk)
				if chi <= clo {
					clear(mp[r0*d.dv : r1*d.dv])
					continue
				}
				for t := r0; t < r1; t++ {
					normalise(sp[t*d.tk:(t+1)*d.tk], wp[t*d.tk:(t+1)*d.tk], km, mask, t, clo, chi, expShift)
				}
				mm(false, false, r1-r0, d.dv, chi-clo, 1, wp[r0*d.tk+clo:], d.tk, vp[clo*d.dv:], d.dv, 0, mp[r0*d.dv:], d.dv)
			}
		}
	})
}

// normalise writes into wt[clo:chi] the softmax of the scores st of query t over the keys
// that the mask and key mask km allow, zero for the other keys of [clo, chi), which must
// contain the query's visible range. Scores of −Inf get weight exactly 0; a row with no
// key of finite score is all zero. expShift sets x[i] = exp(x[i] − shift).
func normalise[T float](st, wt, km []T, mask Mask, t, clo, chi int, expShift func([]T, T)) {
	lo, hi, self := mask.visible(t, len(st))
	lo, hi = max(lo, clo), min(hi, chi) // no-op for a visible range inside [clo, chi)
	if hi <= lo {
		clear(wt[clo:chi])
		return
	}
	clear(wt[clo:lo])
	clear(wt[hi:chi])
	mx := T(math.Inf(-1))
	if self >= lo && self < hi || km != nil {
		for j := lo; j < hi; j++ {
			if j == self || (km != nil && km[j] == 0) {
				continue
			}
			if x := st[j]; x > mx {
				mx = x
			}
		}
	} else {
		mx = maxOf(st[lo:hi])
	}
	row := wt[lo:hi]
	if math.IsInf(float64(mx), -1) {
		clear(row)
		return
	}
	copy(row, st[lo:hi])
	expShift(row, mx)
	// Zero the hidden keys, whose scores took no part in the maximum, and the keys whose
	// weight exp(s − max) is below tinyWeight: exp is clamped below, so
	// that −Inf scores (a compact kernel's outside) get weight exactly 0.
	if self >= lo && self < hi {
		row[self-lo] = 0
	}
	if km != nil {
		for j := lo; j < hi; j++ {
			if km[j] == 0 {
				wt[j] = 0
			}
		}
	}
	inv := T(1 / sumFlush(row))
	for j := range row {
		row[j] *= inv
	}
}

// maxOf returns the largest entry of x (−Inf for none). A NaN entry gives NaN or is
// ignored; either way the row's weights come out NaN, as with any other max.
func maxOf[T float](x []T) T {
	if x32, ok := any(x).([]float32); ok {
		return T(maxOf32(x32))
	}
	m := T(math.Inf(-1))
	for _, v := range x {
		if v > m {
			m = v
		}
	}
	return m
}

// maxOf32 compares the float32s as sign-magnitude integers mapped to two's complement
// order, which compiles to branch-free conditional moves (a float comparison branches,
// and mispredicts on random data).
func maxOf32(x []float32) float32 {
	ninf := f32key(float32(math.Inf(-1)))
	m0, m1, m2, m3 := ninf, ninf, ninf, ninf
	i := 0
	for ; i+4 <= len(x); i += 4 {
		x := x[i : i+4 : i+4]
		m0 = max(m0, f32key(x[0]))
		m1 = max(m1, f32key(x[1]))
		m2 = max(m2, f32key(x[2]))
		m3 = max(m3, f32key(x[3]))
	}
	for ; i < len(x); i++ {
		m0 = max(m0, f32key(x[i]))
	}
	return f32unkey(max(max(m0, m1), max(m2, m3)))
}

// f32key maps a float32's bits to an int32 of the same order (−0 below +0).
func f32key(v float32) int32 {
	b := int32(math.Float32bits(v))
	return b ^ (b >> 31 & 0x7fffffff)
}

func f32unkey(k int32) float32 { return math.Float32frombits(uint32(k ^ (k >> 31 & 0x7fffffff))) }

// tinyWeight is twice the smallest normal float32, above the floor of the clamped
// float32 exp (exp(−87.34) ≈ 2⁻¹²⁶): exp(s − max) below it counts as 0, relative to the
// maximum's weight 1 far below round-off.
const tinyWeight = 0x1p-125

// sumFlush zeroes the entries of x below tinyWeight and returns the sum of the rest,
// accumulated in float64.
func sumFlush[T float](x []T) float64 {
	var s0, s1 float64
	i := 0
	for ; i+2 <= len(x); i += 2 {
		x := x[i : i+2 : i+2]
		if x[0] < tinyWeight {
			x[0] = 0
		}
		if x[1] < tinyWeight {
			x[1] = 0
		}
		s0 += float64(x[0])
		s1 += float64(x[1])
	}
	if i < len(x) {
		if x[i] < tinyWeight {
			x[i] = 0
		}
		s0 += float64(x[i])
	}
	return s0 + s1
}

// dot64 returns Σ x·y accumulated in float64.
func dot64[T float](x, y []T) float64 {
	y = y[:len(x)]
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s0 += float64(x[i]) * float64(y[i])
		s1 += float64(x[i+1]) * float64(y[i+1])
		s2 += float64(x[i+2]) * float64(y[i+2])
		s3 += float64(x[i+3]) * float64(y[i+3])
	}
	for ; i < len(x); i++ {
		s0 += float64(x[i]) * float64(y[i])
	}
	return (s0 + s1) + (s2 + s3)
}

func (k *localMeanKernel) backward(wrt int, in []*tensor.Dense, _, gout, dst *tensor.Dense) error {
	d := dimsOf(in[0].Shape(), in[1].Shape())
	switch gout.Dtype() {
	case Float32:
		dm := gout.Float32s()
		if wrt == 1 {
			localMeanGradValues(d, k.mask, gemm.Sgemm, k.w32, dm, dst.Float32s())
			return nil
		}
		localMeanGradScores(d, k.mask, gemm.Sgemm, k.w32, in[1].Float32s(), dm, dst.Float32s())
	case Float64:
		dm := gout.Float64s()
		if wrt == 1 {
			localMeanGradValues(d, k.mask, gemm.Dgemm, k.w64, dm, dst.Float64s())
			return nil
		}
		localMeanGradScores(d, k.mask, gemm.Dgemm, k.w64, in[1].Float64s(), dm, dst.Float64s())
	}
	return nil
}

// localMeanGradValues computes dv_s = Σ_t w_ts dm_t, that is dV = Wᵀ·dM over the key
// blocks of the forward pass.
func localMeanGradValues[T float](d lmDims, mask Mask, mm gemmFunc[T], w, dm, dv []T) {
	parallelFor(d.n, d.tq*d.tk*(d.dv+1), func(lo, hi int) {
		for p := lo; p < hi; p++ {
			wp := w[p*d.tq*d.tk : (p+1)*d.tq*d.tk]
			dmp := dm[p*d.tq*d.dv : (p+1)*d.tq*d.dv]
			dvp := dv[p*d.tk*d.dv : (p+1)*d.tk*d.dv]
			clear(dvp)
			for r0 := 0; r0 < d.tq; r0 += rowBlock {
				r1 := min(r0+rowBlock, d.tq)
				clo, chi := keyRange(mask, r0, r1, d.tk)
				if chi > clo {
					mm(true, false, chi-clo, d.dv, r1-r0, 1, wp[r0*d.tk+clo:], d.tk, dmp[r0*d.dv:], d.dv, 1, dvp[clo*d.dv:], d.dv)
				}
			}
		}
	})
}

// localMeanGradScores computes ds_ts = w_ts (a_ts − Σ_u w_tu a_tu) with A = dM·Vᵀ (one
// matrix product per key block, written into ds), using dm_t·m_t = Σ_s w_ts a_ts so that
// m itself is not needed.
func localMeanGradScores[T float](d lmDims, mask Mask, mm gemmFunc[T], w, v, dm, ds []T) {
	parallelFor(d.n, d.tq*d.tk*(d.dv+2), func(lo, hi int) {
		for p := lo; p < hi; p++ {
			wp := w[p*d.tq*d.tk : (p+1)*d.tq*d.tk]
			dsp := ds[p*d.tq*d.tk : (p+1)*d.tq*d.tk]
			vp := v[p*d.tk*d.dv : (p+1)*d.tk*d.dv]
			dmp := dm[p*d.tq*d.dv : (p+1)*d.tq*d.dv]
			for r0 := 0; r0 < d.tq; r0 += rowBlock {
				r1 := min(r0+rowBlock, d.tq)
				clo, chi := keyRange(mask, r0, r1, d.tk)
				if chi <= clo {
					clear(dsp[r0*d.tk : r1*d.tk])
					continue
				}
				mm(false, true, r1-r0, chi-clo, d.dv, 1, dmp[r0*d.dv:], d.dv, vp[clo*d.dv:], d.dv, 0, dsp[r0*d.tk+clo:], d.tk)
				for t := r0; t < r1; t++ {
					dst := dsp[t*d.tk : (t+1)*d.tk]
					clear(dst[:clo])
					clear(dst[chi:])
					wr, ar := wp[t*d.tk+clo:t*d.tk+chi], dst[clo:chi]
					c := T(dot64(wr, ar))
					ar = ar[:len(wr)]
					for j, wj := range wr {
						ar[j] = wj * (ar[j] - c)
					}
				}
			}
		}
	})
}
