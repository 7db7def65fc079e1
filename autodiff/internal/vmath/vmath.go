// Package vmath holds vectorised float32 kernels, transcendental (exp, GELU and its
// gradient, sigmoid), element-wise (ReLU, Add, the MSE loss and gradient) and the steps
// of a softmax (max, exp-and-sum, scale), as AVX2/FMA assembly on amd64 CPUs that have
// it (and that LOCUS_CPU allows) and plain Go elsewhere, for the fused ops of package
// autodiff. The fused mixture loops (MixScores2, ExpShiftSum2, MixShare, MixCoefs2) also
// run sixteen lanes at a time where the CPU has AVX-512F and LOCUS_CPU allows it, with
// the AVX2 loops' bits.
package vmath

import "math"

// Exp32 is exp in float32 (Cephes expf: range reduction by ln 2 and a degree-6
// polynomial), accurate to about 1 ulp; arguments are clamped to [−87.34, 88].
func Exp32(x float32) float32 {
	const (
		log2e = 1.44269504088896341
		ln2hi = 0.693359375
		ln2lo = -2.12194440e-4
		magic = 12582912 // 1.5·2²³: adding it rounds to an integer in the low mantissa bits
	)
	if x < -87.33654 {
		x = -87.33654
	}
	if x > 88 {
		x = 88
	}
	t := x*log2e + magic
	n := int32(math.Float32bits(t)) - 0x4b400000
	fx := t - magic
	x = x - fx*ln2hi - fx*ln2lo
	z := x * x
	y := ((((1.9875691500e-4*x+1.3981999507e-3)*x+8.3334519073e-3)*x+4.1665795894e-2)*x+1.6666665459e-1)*x + 5.0000001201e-1
	y = y*z + x + 1
	return y * math.Float32frombits(uint32(n+127)<<23)
}

// expFloor is where Exp32 clamps its argument from below: exp(expFloor) ≈ 2⁻¹²⁶, the
// smallest normal float32.
const expFloor = -87.33654

// ExpShiftSum sets x[i] = exp(x[i] − shift), exactly 0 where x[i] − shift is below
// expFloor (−Inf included) or NaN, and returns Σ x[i] in a fixed order: eight partial
// sums, partial j over the elements i ≡ j (mod 8), combined pairwise.
func ExpShiftSum(x []float32, shift float32) float32 { return ExpScaleShiftSum(x, x, 1, shift) }

// ExpScaleShiftSum sets dst[i] = exp(c·x[i] − shift), the product and the difference
// each rounded to float32, as ExpShiftSum does with its flush to 0, and returns their
// sum in ExpShiftSum's order: the same result on every path. dst may be x; x must be at
// least as long as dst.
func ExpScaleShiftSum(dst, x []float32, c, shift float32) float32 {
	return expScaleShift(dst, x, c, shift, false)
}

// ExpScaleShiftAdd adds the values ExpScaleShiftSum gives into dst and returns their sum.
func ExpScaleShiftAdd(dst, x []float32, c, shift float32) float32 {
	return expScaleShift(dst, x, c, shift, true)
}

func expScaleShift(dst, x []float32, c, shift float32, add bool) float32 {
	x = x[:len(dst)]
	if hasAVX2 {
		if len(dst) == 0 {
			return 0
		}
		return expScaleShiftSumAVX2(&dst[0], &x[0], len(dst), c, shift, add)
	}
	var s [8]float32
	for i, v := range x {
		v = expFlush(float32(c*v) - shift)
		if add {
			dst[i] += v
		} else {
			dst[i] = v
		}
		s[i&7] += v
	}
	return lanes8(&s)
}

// expFlush is Exp32 with 0 below the clamp (and for NaN).
func expFlush(a float32) float32 {
	if !(a >= expFloor) {
		return 0
	}
	return Exp32(a)
}

const (
	sqrt2OverPi = 0.7978845608028654
	cubic       = 0.044715
)

// GELUTanh sets s[i] = 0.5·(1 + tanh(u)) = 1/(1 + exp(−2u)) with
// u = √(2/π)(x + 0.044715x³), and y[i] = x[i]·s[i] (GELU in its tanh form). The
// logistic form has no cancellation for negative x.
func GELUTanh(x, s, y []float32) {
	s, y = s[:len(x)], y[:len(x)]
	n := 0
	if hasAVX2 {
		n = len(x) &^ 7
		if n > 0 {
			geluTanhAVX2(&x[0], &s[0], &y[0], n)
		}
	}
	for i := n; i < len(x); i++ {
		v := x[i]
		sg := 1 / (1 + Exp32(-2*sqrt2OverPi*(v+cubic*v*v*v)))
		s[i] = sg
		y[i] = v * sg
	}
}

// GELUExact sets y[i] = x[i]·Φ(x[i]) (GELU in its exact, erf form). Φ comes from erfc
// by Numerical Recipes' Chebyshev fit (fractional error below 1.2e-7 on [0, ∞)):
// erfc(z) = t·exp(P(t) − z²), t = 1/(1 + z/2), z = |x|/√2, evaluated in float32 (the
// exponent rounded once); then Φ(x) = ½·erfc(z) for x < 0 and 1 − ½·erfc(z) for x ≥ 0,
// so neither side cancels.
func GELUExact(x, y []float32) {
	y = y[:len(x)]
	n := 0
	if hasAVX2 {
		n = len(x) &^ 7
		if n > 0 {
			geluExactAVX2(&x[0], &y[0], n)
		}
	}
	for i := n; i < len(x); i++ {
		y[i] = x[i] * normalCDF(x[i])
	}
}

// GELUExactGrad sets dx[i] = g[i]·(Φ(x) + x·φ(x)), x = x[i]: the derivative of the exact
// GELU times the incoming gradient, Φ as GELUExact forms it, recomputed from x, so that
// the forward pass keeps nothing; φ(x) = exp(−x²/2)/√(2π), the exponent rounded once.
func GELUExactGrad(x, g, dx []float32) {
	n := len(x)
	g, dx = g[:n], dx[:n]
	done := 0
	if hasAVX2 {
		done = n &^ 7
		if done > 0 {
			geluExactGradAVX2(&x[0], &g[0], &dx[0], done)
		}
	}
	const invSqrt2Pi = 0.3989422804014327
	for i := done; i < n; i++ {
		v := x[i]
		dens := v * (Exp32(float32(-float64(v)*float64(0.5*v))) * invSqrt2Pi)
		dx[i] = g[i] * (dens + normalCDF(v))
	}
}

// normalCDF is Φ(v) as GELUExact forms it.
func normalCDF(v float32) float32 {
	const invSqrt2 = 0.7071067811865476
	z := float32(math.Abs(float64(v))) * invSqrt2
	t := 1 / (1 + 0.5*z)
	p := float32(0.17087277)
	for _, c := range [...]float32{-0.82215223, 1.48851587, -1.13520398, 0.27886807, -0.18628806, 0.09678418, 0.37409196, 1.00002368, -1.26551223} {
		p = p*t + c
	}
	exponent := float64(p) - float64(v)*float64(0.5*v) // the product exact in float64
	half := 0.5 * (Exp32(float32(exponent)) * t)
	if v >= 0 {
		return 1 - half
	}
	return half
}

// Sigmoid sets y[i] = 1/(1 + exp(−x[i])).
func Sigmoid(x, y []float32) {
	y = y[:len(x)]
	n := 0
	if hasAVX2 {
		n = len(x) &^ 7
		if n > 0 {
			sigmoidAVX2(&x[0], &y[0], n)
		}
	}
	for i := n; i < len(x); i++ {
		y[i] = 1 / (1 + Exp32(-x[i]))
	}
}

// GELUGrad sets dx[i] = g[i]·(s + 2x·s·(1 − s)·√(2/π)·(1 + 3·0.044715·x²)), x = x[i] and
// s = s[i] as GELUTanh left it: the derivative of the tanh GELU times the incoming
// gradient, with the same float32 roundings on both paths.
func GELUGrad(x, s, g, dx []float32) {
	n := len(x)
	s, g, dx = s[:n], g[:n], dx[:n]
	done := 0
	if hasAVX2 {
		done = n &^ 7
		if done > 0 {
			geluGradAVX2(&x[0], &s[0], &g[0], &dx[0], done, sqrt2OverPi, 3*cubic, 1)
		}
	}
	for i := done; i < n; i++ {
		dx[i] = g[i] * geluDeriv(x[i], s[i])
	}
}

// geluDeriv is s + 2x·s·(1 − s)·√(2/π)·(1 + 3·0.044715·x²), rounded as the vector loops do.
func geluDeriv(v, sg float32) float32 {
	return sg + 2*v*sg*(1-sg)*sqrt2OverPi*(1+3*cubic*v*v)
}

// geluTiny is the |x| below which GELUGradOut takes s = 0.5: there 0.5(1 + tanh(u))
// rounds to 0.5 in float32 (|u| < 2⁻⁶³), and y = x·s may be subnormal, so y/x would
// not be s.
const geluTiny = 0x1p-64

// GELUGradOut is GELUGrad with s recomputed from the forward pass's output y = x·s as
// s = y/x (0.5 where |x| < geluTiny), so that the forward pass need not keep s: one
// division per element instead of a value kept from the forward pass to the backward.
// s is y/x rounded, within an ulp or two of GELUTanh's s; where s underflows (x below
// about −10) both are below 1e-37, and so is the derivative.
func GELUGradOut(x, y, g, dx []float32) {
	n := len(x)
	y, g, dx = y[:n], g[:n], dx[:n]
	done := 0
	if hasAVX2 {
		done = n &^ 7
		if done > 0 {
			geluGradOutAVX2(&x[0], &y[0], &g[0], &dx[0], done, sqrt2OverPi, 3*cubic, 1, 0.5, geluTiny)
		}
	}
	for i := done; i < n; i++ {
		dx[i] = g[i] * geluDeriv(x[i], geluS(x[i], y[i]))
	}
}

// geluS is s = y/x, or 0.5 where |x| < geluTiny.
func geluS(x, y float32) float32 {
	if abs32(x) < geluTiny {
		return 0.5
	}
	return y / x
}

func abs32(x float32) float32 { return math.Float32frombits(math.Float32bits(x) &^ (1 << 31)) }

// lanes8 adds the eight lanes of s pairwise (s[j] += s[j+w] for w = 4, 2, 1), as
// ExpShiftSum does, and returns the total.
func lanes8(s *[8]float32) float32 {
	for w := 4; w >= 1; w /= 2 {
		for j := range w {
			s[j] += s[j+w]
		}
	}
	return s[0]
}

// ScaleDot sets g[i] = c·g[i] and returns Σ g[i]·x[i] over the g it was given: the
// products rounded to float32 and summed in eight float32 lanes (element i in lane
// i mod 8, then lanes8), the same result on every path; x must be at least as long as g.
func ScaleDot(g, x []float32, c float32) float32 {
	x = x[:len(g)]
	if hasAVX2 && len(g) > 0 {
		r := scaleDotAVX2(&g[0], &x[0], len(g), c) // every product; the scaling of n &^ 7
		for i := len(g) &^ 7; i < len(g); i++ {
			g[i] *= c
		}
		return r
	}
	var s [8]float32
	for i, v := range g {
		s[i&7] += float32(v * x[i])
		g[i] = c * v
	}
	return lanes8(&s)
}

// AddSumScale adds g into acc, returns Σ g[i] (in ScaleDot's lanes) and sets
// g[i] = c·g[i], the same result on every path; acc must be at least as long as g.
func AddSumScale(g, acc []float32, c float32) float32 {
	acc = acc[:len(g)]
	if hasAVX2 && len(g) > 0 {
		r := addSumScaleAVX2(&g[0], &acc[0], len(g), c) // every sum; the updates of n &^ 7
		for i := len(g) &^ 7; i < len(g); i++ {
			v := g[i]
			acc[i] += v
			g[i] = c * v
		}
		return r
	}
	var s [8]float32
	for i, v := range g {
		s[i&7] += v
		acc[i] += v
		g[i] = c * v
	}
	return lanes8(&s)
}
