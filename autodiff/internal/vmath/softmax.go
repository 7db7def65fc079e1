package vmath

import "math"

// Softmax sets x[i] = exp(x[i] − m) / Σ_j exp(x[j] − m), m = max x, in place, with the
// rules of a masked softmax row: −Inf entries get 0; a row of −Inf only (or an empty
// row) is all 0; a NaN or +Inf entry makes the row NaN; a weight exp(x[i] − m) below
// the smallest normal float32 is 0. The same values, bit for bit, as Max, ExpShiftSum
// with shift m and Scale by 1/sum in turn, in one pass of calls (the AVX2 path
// exponentiates, sums and scales in one assembly routine).
func Softmax(x []float32) {
	if len(x) == 0 {
		return
	}
	SoftmaxMax(x, Max(x))
}

// SoftmaxMax is Softmax of x whose largest entry (Max's, NaN for a NaN) m already is.
func SoftmaxMax(x []float32, m float32) {
	if len(x) == 0 {
		return
	}
	switch {
	case math.IsInf(float64(m), -1):
		clear(x)
		return
	case math.IsNaN(float64(m)) || math.IsInf(float64(m), 1):
		nan := float32(math.NaN())
		for i := range x {
			x[i] = nan
		}
		return
	}
	if hasAVX2 {
		softmaxExpScaleAVX2(&x[0], len(x), m)
		return
	}
	Scale(x, 1/ExpShiftSum(x, m))
}
