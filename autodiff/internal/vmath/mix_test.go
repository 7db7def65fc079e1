package vmath

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// mixSame says whether two results agree bit for bit, any NaN matching any NaN.
func mixSame(a, b float32) bool {
	return math.Float32bits(a) == math.Float32bits(b) || a != a && b != b
}

// mixDiff returns the first index where a and b differ (mixSame), or −1.
func mixDiff(a, b []float32) int {
	for i := range a {
		if !mixSame(a[i], b[i]) {
			return i
		}
	}
	return -1
}

// termsOf forms the pair terms of l as the separate loops do: the dot products
// themselves, SqDist or Dist.
func termsOf(term Term, dots []float32, qq float32, kk []float32) []float32 {
	x := make([]float32, len(dots))
	switch term {
	case TermDot:
		copy(x, dots)
	case TermSqDist:
		SqDist(x, dots, qq, kk)
	case TermDist:
		Dist(x, dots, qq, kk)
	}
	return x
}

// mixInputs returns a row's dot products (special values included), keys' squared
// norms (≥ 0, some 0) and queries' squared norms to try.
func mixInputs(rng *rand.Rand, n int) (dots, kk []float32, qqs []float32) {
	dots, kk = elemInput(rng, n), elemInput(rng, n)
	for i := range kk {
		kk[i] = float32(math.Abs(float64(kk[i])))
		if i%7 == 2 {
			kk[i] = 0
		}
		if i%9 == 4 && i < len(dots) { // a key at the query: distance 0
			dots[i] = 0.5 * kk[i]
		}
	}
	return dots, kk, []float32{0, 1.25, float32(math.Inf(1))}
}

var mixTerms = []Term{TermDot, TermSqDist, TermDist}

// mixSecond returns the second components to try: linear in each term (factor −0.75),
// and rational (Cauchy's at h = 1.6: C = 1/h², A = h²).
func mixSecond() []Comp {
	var cs []Comp
	for _, t := range mixTerms {
		cs = append(cs, Comp{C: -0.75, Term: t})
	}
	const h = float32(1.6)
	return append(cs, Comp{C: 1 / (h * h), A: h * h, Term: TermSqDist, Rational: true})
}

// mixLengths are the row lengths the fused mixture loops are checked at.
var mixLengths = []int{0, 1, 7, 8, 9, 15, 16, 17, 31, 33, 64}

// TestMixScores2 checks MixScores2 against ScaleMax or SqDistScaleMax per component, bit
// for bit (the largest score by value), for every pair of terms, on both paths.
func TestMixScores2(t *testing.T) {
	rng := rand.New(rand.NewPCG(61, 62))
	onEachPath(func(avx bool) {
		for _, n := range mixLengths {
			dots, kk, qqs := mixInputs(rng, n)
			for _, qq := range qqs {
				for _, t0 := range mixTerms {
					for _, b := range mixSecond() {
						t1 := b.Term
						a := Comp{C: 1.5, Term: t0}
						want := func(l Comp) ([]float32, float32) {
							e := make([]float32, n)
							if l.Rational { // Recip1p of the squared distances, out of the largest
								SqDist(e, dots, qq, kk)
								Recip1p(e, e, l.C)
								return e, float32(math.Inf(-1))
							}
							if l.Term == TermDot {
								return e, ScaleMax(e, dots, l.C)
							}
							return e, SqDistScaleMax(e, dots, qq, kk, l.Term == TermDist, l.C)
						}
						w0, m0 := want(a)
						w1, m1 := want(b)
						wm := max(m0, m1)
						e0, e1 := make([]float32, n), make([]float32, n)
						m := MixScores2(e0, e1, dots, qq, kk, a, b)
						if i := mixDiff(e0, w0); i >= 0 {
							t.Fatalf("avx2=%v n=%d qq=%v terms %d,%d: e0[%d] = %v, want %v", avx, n, qq, t0, t1, i, e0[i], w0[i])
						}
						if i := mixDiff(e1, w1); i >= 0 {
							t.Fatalf("avx2=%v n=%d qq=%v terms %d,%d: e1[%d] = %v, want %v", avx, n, qq, t0, t1, i, e1[i], w1[i])
						}
						if m != wm && !(m != m && wm != wm) {
							t.Fatalf("avx2=%v n=%d qq=%v terms %d,%d: max %v, want %v", avx, n, qq, t0, t1, m, wm)
						}
					}
				}
			}
		}
	})
}

// TestExpShiftSum2 checks ExpShiftSum2 against ExpShiftSum then ExpScaleShiftAdd, bit
// for bit (the values and both sums), on both paths.
func TestExpShiftSum2(t *testing.T) {
	rng := rand.New(rand.NewPCG(63, 64))
	onEachPath(func(avx bool) {
		for _, n := range mixLengths {
			x0, x1 := elemInput(rng, n), elemInput(rng, n)
			for i := range x1 {
				x1[i] *= 40 // some below the clamp
			}
			const s0, s1 = 0.5, -1.25
			for _, values := range []bool{false, true} {
				want := append([]float32(nil), x0...)
				w0 := ExpShiftSum(want, s0)
				var w1 float32
				if values { // Scale then Add: a component of values
					v := append([]float32(nil), x1...)
					Scale(v, s1)
					Add(want, v)
					var l [8]float32
					for i, x := range v {
						l[i&7] += x
					}
					w1 = lanes8(&l)
				} else {
					w1 = ExpScaleShiftAdd(want, x1, 1, s1)
				}
				got := append([]float32(nil), x0...)
				g0, g1 := ExpShiftSum2(got, x1, s0, s1, values)
				if i := mixDiff(got, want); i >= 0 {
					t.Fatalf("avx2=%v n=%d values %v: e0[%d] = %v, want %v", avx, n, values, i, got[i], want[i])
				}
				if !mixSame(g0, w0) || !mixSame(g1, w1) {
					t.Fatalf("avx2=%v n=%d values %v: sums %v, %v, want %v, %v", avx, n, values, g0, g1, w0, w1)
				}
			}
		}
	})
}

// TestMixShare checks MixShare against the component's terms, ExpScoreGrad and
// ScoreGradSub in turn, bit for bit (g, d and both sums), for every term, on both paths.
func TestMixShare(t *testing.T) {
	rng := rand.New(rand.NewPCG(65, 66))
	onEachPath(func(avx bool) {
		for _, n := range mixLengths {
			dots, kk, qqs := mixInputs(rng, n)
			d0, p := elemInput(rng, n), elemInput(rng, n)
			for _, qq := range qqs {
				comps := []Comp{}
				for _, term := range mixTerms {
					comps = append(comps, Comp{C: -0.6, Term: term})
				}
				comps = append(comps, Comp{C: 0.4, A: 2.5, Term: TermSqDist, Rational: true})
				for k, a := range append(comps, comps...) {
					term := a.Term
					const shift, f = 0.3, 1.7
					delta := float32(0.2)
					if k >= len(comps) { // the masked-out lanes' products must not reach the sums
						delta = float32(math.Inf(1))
					}
					x := termsOf(term, dots, qq, kk)
					wg, wd := make([]float32, n), append([]float32(nil), d0...)
					var ws float32
					if a.Rational {
						Recip1p(x, x, a.C)
						ws = ScoreGradSum(wg, wd, x, delta, f)
					} else {
						ws = ExpScoreGrad(wg, x, wd, a.C, shift, delta, f)
					}
					wsd := ScoreGradSub(wd, p, wg, delta)
					g, d := make([]float32, n), append([]float32(nil), d0...)
					s, sd := MixShare(g, d, p, dots, qq, kk, a, shift, delta, f)
					if i := mixDiff(g, wg); i >= 0 {
						t.Fatalf("avx2=%v n=%d qq=%v comp %+v: g[%d] = %v, want %v", avx, n, qq, a, i, g[i], wg[i])
					}
					if i := mixDiff(d, wd); i >= 0 {
						t.Fatalf("avx2=%v n=%d qq=%v comp %+v: d[%d] = %v, want %v", avx, n, qq, a, i, d[i], wd[i])
					}
					if !mixSame(s, ws) || !mixSame(sd, wsd) {
						t.Fatalf("avx2=%v n=%d qq=%v comp %+v: sums %v, %v, want %v, %v", avx, n, qq, a, s, sd, ws, wsd)
					}
				}
			}
		}
	})
}

// TestMixCoefs2 checks MixCoefs2 against DistCoefs (LinearCoefs for a dot product) in
// place for b, then LinearCoefs added for a, bit for bit (coefficients, cs, the four
// sums), for every pair of terms, on both paths.
func TestMixCoefs2(t *testing.T) {
	rng := rand.New(rand.NewPCG(67, 68))
	onEachPath(func(avx bool) {
		for _, n := range mixLengths {
			dots, kk, qqs := mixInputs(rng, n)
			d0, g, cs0 := elemInput(rng, n), elemInput(rng, n), elemInput(rng, n)
			for _, qq := range qqs {
				as := []Comp{}
				for _, ta := range mixTerms {
					as = append(as, Comp{C: -1.3, Term: ta})
				}
				as = append(as, Comp{C: 0.4, A: 2.5, Term: TermSqDist, Rational: true})
				for _, tb := range mixTerms {
					for _, a := range as {
						ta := a.Term
						b := Comp{C: 0.8, Term: tb}
						wd, wcs := append([]float32(nil), d0...), append([]float32(nil), cs0...)
						var wxb, wsb float32
						if tb == TermDot {
							wxb, wsb = LinearCoefs(wd, wd, dots, nil, b.C, TermDot, false)
						} else {
							wxb, wsb = DistCoefs(wd, dots, qq, kk, wcs, b.C, tb == TermDist)
						}
						var wxa, wsa float32
						if a.Rational { // RatioGrad, AddSumScale, Add
							ga := append([]float32(nil), g...)
							wxa = RatioGrad(ga, termsOf(ta, dots, qq, kk), a.A)
							wsa = AddSumScale(ga, wcs, -2)
							Add(wd, ga)
						} else {
							wxa, wsa = LinearCoefs(wd, g, termsOf(ta, dots, qq, kk), wcs, a.C, ta, true)
						}
						g0 := append([]float32(nil), g...)
						d, cs := append([]float32(nil), d0...), append([]float32(nil), cs0...)
						xb, sb, xa, sa := MixCoefs2(d, g, dots, qq, kk, cs, b, a)
						if i := mixDiff(g, g0); i >= 0 {
							t.Fatalf("avx2=%v n=%d qq=%v: g[%d] written", avx, n, qq, i)
						}
						if i := mixDiff(d, wd); i >= 0 {
							t.Fatalf("avx2=%v n=%d qq=%v terms %d,%d rational %v: d[%d] = %v, want %v", avx, n, qq, tb, ta, a.Rational, i, d[i], wd[i])
						}
						if i := mixDiff(cs, wcs); i >= 0 {
							t.Fatalf("avx2=%v n=%d qq=%v terms %d,%d: cs[%d] = %v, want %v", avx, n, qq, tb, ta, i, cs[i], wcs[i])
						}
						for k, p := range [][2]float32{{xb, wxb}, {sb, wsb}, {xa, wxa}, {sa, wsa}} {
							if !mixSame(p[0], p[1]) {
								t.Fatalf("avx2=%v n=%d qq=%v terms %d,%d: sum %d = %v, want %v", avx, n, qq, tb, ta, k, p[0], p[1])
							}
						}
					}
				}
			}
		}
	})
}

// TestMixPathsAgree checks the AVX2 kernels of the fused mixture loops without
// exponentials against their Go loops bit for bit on the same inputs (each path is checked
// against the separate loops above; the exponentials' polynomial rounds differently on
// the two paths, so MixShare and ExpShiftSum2 are checked per path only).
func TestMixPathsAgree(t *testing.T) {
	if !hasAVX2 {
		t.Skip("no AVX2")
	}
	rng := rand.New(rand.NewPCG(69, 70))
	for _, n := range mixLengths {
		dots, kk, _ := mixInputs(rng, n)
		d0, g := elemInput(rng, n), elemInput(rng, n)
		for _, ta := range mixTerms {
			for _, b := range mixSecond() {
				tb := b.Term
				a := Comp{C: 1.1, Term: ta}
				run := func(avx bool) [][]float32 {
					defer setAVX2(hasAVX2)
					setAVX2(avx)
					e0, e1 := make([]float32, n), make([]float32, n)
					m := MixScores2(e0, e1, dots, 2, kk, a, b)
					d, cs := append([]float32(nil), d0...), make([]float32, n)
					xb, sb, xa, sa := MixCoefs2(d, g, dots, 2, kk, cs, a, b) // b as the second, rational or not
					return [][]float32{e0, e1, d, cs, {m, xb, sb, xa, sa}}
				}
				x, y := run(true), run(false)
				for k := range x {
					if i := mixDiff(x[k], y[k]); i >= 0 {
						t.Fatalf("n=%d terms %d,%d: output %d [%d]: AVX2 %v, Go %v", n, ta, tb, k, i, x[k][i], y[k][i])
					}
				}
			}
		}
	}
}

// BenchmarkMixRows runs the fused mixture loops of a forward and a backward pass over
// causal rows of lengths 1..64 (a char-LM head's), one call each per row, with a
// Laplacian component beside one of each term, on normal numbers (subnormal ones would
// time the processor's assists instead).
func BenchmarkMixRows(b *testing.B) {
	rng := rand.New(rand.NewPCG(71, 72))
	const n = 64
	dots, kk, d0, p := make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range n {
		dots[i], d0[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
		kk[i], p[i] = 1+float32(rng.Float64()), float32(rng.Float64())
	}
	g, d, e0, e1, cs := make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
	lap := Comp{C: -0.5, Term: TermDist}
	for _, term := range mixTerms {
		a := Comp{C: -0.6, Term: term}
		b.Run(fmt.Sprintf("term%d", term), func(b *testing.B) {
			for b.Loop() {
				for r := 1; r <= n; r++ {
					m := MixScores2(e0[:r], e1[:r], dots, 1.25, kk, a, lap)
					ExpShiftSum2(e0[:r], e1, m, m, false)
					copy(d, d0)
					MixShare(g[:r], d, p, dots, 1.25, kk, a, 0.3, 0.2, 1.7)
					MixCoefs2(d[:r], g, dots, 1.25, kk, cs, lap, a)
				}
			}
		})
	}
}
