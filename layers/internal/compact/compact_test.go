package compact

import (
	"math"
	"math/rand/v2"
	"testing"
)

// input returns n floats around the kernels' support edge (u from 0 to 2), with zeros,
// infinities and NaNs among them.
func input(rng *rand.Rand, n int, scale float64) []float32 {
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.NaN()), 1}
	x := make([]float32, n)
	for i := range x {
		if i%7 == 3 {
			x[i] = special[rng.IntN(len(special))]
		} else {
			x[i] = float32(rng.Float64() * scale)
		}
	}
	return x
}

// same returns the first index where a and b differ bit for bit (any NaN matching any
// NaN), or −1.
func same(a, b []float32) int {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) && !(a[i] != a[i] && b[i] != b[i]) {
			return i
		}
	}
	return -1
}

// TestPathsAgree checks the AVX2 loops against the Go ones bit for bit (values, gradients
// and sums) at lengths around the vector width, and the Go loops against the kernels'
// formulas.
func TestPathsAgree(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	run := func(avx bool, f func()) {
		defer func(old bool) { hasAVX2 = old }(hasAVX2)
		hasAVX2 = avx
		f()
	}
	// c = 1 puts the inputs equal to 1 on the edge of the support: u = 1, hh − x = 0.
	for _, c := range []float32{1, 1.3} {
		for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 33, 64, 100} {
			r, g0 := input(rng, n, 2), input(rng, n, 3)
			for i := range g0 {
				if i%5 == 1 {
					g0[i] = -g0[i]
				}
			}
			var outs [2][][]float32
			for p, avx := range []bool{false, true} {
				run(avx, func() {
					k := make([]float32, n)
					TricubeValues(k, r, c)
					gt := append([]float32(nil), g0...)
					st := TricubeGrads(gt, r, c)
					ge := append([]float32(nil), g0...)
					se := EpanechnikovGrads(ge, r, c)
					outs[p] = [][]float32{k, gt, ge, {st, se}}
				})
			}
			for o := range outs[0] {
				if i := same(outs[1][o], outs[0][o]); i >= 0 {
					t.Fatalf("c=%v n=%d output %d [%d]: AVX2 %v, Go %v", c, n, o, i, outs[1][o][i], outs[0][o][i])
				}
			}
			// The Go loops against the formulas in float64, from u rounded to float32 as the
			// loops round it (near u = 1 the formulas magnify that rounding).
			k, gt, ge := outs[0][0], outs[0][1], outs[0][2]
			for j := range n {
				u := float64(r[j] * c)
				want := 0.0
				if u < 1 || math.IsNaN(u) {
					want = math.Pow(1-u*u*u, 3)
				}
				if !close32(k[j], want) {
					t.Fatalf("n=%d: tricube value %d = %v, want %v", n, j, k[j], want)
				}
				v := float64(g0[j])
				want = 0
				if v != 0 && (u < 1 || math.IsNaN(u)) {
					want = -9 * v * u * u / (1 - u*u*u) * float64(c)
				}
				if !close32(gt[j], want) {
					t.Fatalf("n=%d: tricube gradient %d = %v, want %v", n, j, gt[j], want)
				}
				den := float64(c) - float64(r[j])
				want = 0
				if v != 0 && !(den <= 0) {
					want = -v / den
				}
				if !close32(ge[j], want) {
					t.Fatalf("n=%d: Epanechnikov gradient %d = %v, want %v", n, j, ge[j], want)
				}
			}
		}
	}
}

// close32 says whether the float32 result x is want to a few float32 roundings (both NaN,
// or both infinite of one sign, counts).
func close32(x float32, want float64) bool {
	if math.IsNaN(want) || math.IsInf(want, 0) {
		return float64(x) == want || x != x && want != want
	}
	return math.Abs(float64(x)-want) <= 1e-5*math.Max(1, math.Abs(want))
}
