package autodiff

import (
	"fmt"
	"math"

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

// rowBlock is the number of query rows whose visible key range is computed together.
const rowBlock = 32

// keyRange returns the union [lo, hi) of the keys visible to queries r0..r1−1.
func keyRange(m Mask, r0, r1, tk int) (lo, hi int) {
	lo, hi = tk, 0
	for t := r0; t < r1; t++ {
		l, h, _ := m.visible(t, tk)
		if h > l {
			lo, hi = min(lo, l), max(hi, h)
		}
	}
	return lo, hi
}

// softmaxVisible is the masked normalisation of both fused attention ops, LocalMean and
// Attention: it writes into w[clo:chi] the weights of query t,
//
//	w_j = exp(s_j − max) / Σ_u exp(s_u − max)
//
// over the keys u that mask m and the key mask km allow (km is nil or has one entry per
// key, zero hiding the key), and 0 for the other keys of [clo, chi), a range (clo ≤ chi)
// that must contain the query's visible keys, as keyRange's does. Entries of w outside
// [clo, chi) are not touched; s and w may be the same slice.
//
// Every row has one defined result:
//   - a score of −Inf (a compact kernel's outside) gets weight exactly 0, and so does a
//     float32 weight exp(s − max) below the smallest normal float32;
//   - a row with no visible key, or only visible keys of score −Inf, is all zero, so the
//     op's output and gradient there are zero, never NaN;
//   - scores count relative to their maximum, so logits of 1e4 are as stable as of 1;
//   - a NaN or +Inf among the visible scores makes the row NaN: the error upstream shows
//     in the loss instead of passing for a valid weighting. The scores of hidden keys
//     take no part, whatever they are.
func softmaxVisible[T float](s, w, km []T, m Mask, t, clo, chi int) {
	lo, hi, self := m.visible(t, len(s))
	lo, hi = max(lo, clo), min(hi, chi) // no-op for a visible range inside [clo, chi)
	if hi <= lo {
		clear(w[clo:chi])
		return
	}
	clear(w[clo:lo])
	clear(w[hi:chi])
	row := w[lo:hi]
	if &row[0] != &s[lo] {
		copy(row, s[lo:hi])
	}
	// A hidden key's score becomes −Inf: no part in the maximum, and weight 0.
	ninf := T(math.Inf(-1))
	if self >= lo && self < hi {
		row[self-lo] = ninf
	}
	if km != nil {
		for j, k := range km[lo:hi] {
			if k == 0 {
				row[j] = ninf
			}
		}
	}
	if r32, ok := any(row).([]float32); ok {
		vmath.Softmax(r32) // the steps below, bit for bit, in one call
		return
	}
	mx := maxOf(row)
	switch {
	case math.IsInf(float64(mx), -1):
		clear(row)
		return
	case math.IsNaN(float64(mx)) || math.IsInf(float64(mx), 1):
		for j := range row {
			row[j] = T(math.NaN())
		}
		return
	}
	scaleBy(row, 1/expShiftSum(row, mx)) // the sum is at least 1, the maximum's weight
}

// The float32 steps run on package vmath's vector kernels, the float64 ones in Go.

// maxOf returns the largest entry of x, NaN if any entry is NaN, −Inf for none.
func maxOf[T float](x []T) T {
	if x32, ok := any(x).([]float32); ok {
		return T(vmath.Max(x32))
	}
	m := T(math.Inf(-1))
	for _, v := range x {
		m = max(m, v) // NaN wins
	}
	return m
}

// expShiftSum sets x[i] = exp(x[i] − shift) (0 for −Inf) and returns Σ x[i].
func expShiftSum[T float](x []T, shift T) T {
	if x32, ok := any(x).([]float32); ok {
		return T(vmath.ExpShiftSum(x32, float32(shift)))
	}
	var sum T
	for i, v := range x {
		e := T(math.Exp(float64(v - shift)))
		x[i] = e
		sum += e
	}
	return sum
}

// scaleBy sets x[i] = a·x[i].
func scaleBy[T float](x []T, a T) {
	if x32, ok := any(x).([]float32); ok {
		vmath.Scale(x32, float32(a))
		return
	}
	for i := range x {
		x[i] *= a
	}
}
