package vmath

import "math"

// Max returns the largest element of x: NaN if any element is NaN, −Inf for none.
func Max(x []float32) float32 {
	if hasAVX2 && len(x) >= 8 {
		var lanes [8]float32
		if maxAVX2(&x[0], len(x), &lanes) {
			return float32(math.NaN())
		}
		return max(max(max(lanes[0], lanes[1]), max(lanes[2], lanes[3])), max(max(lanes[4], lanes[5]), max(lanes[6], lanes[7])))
	}
	// The builtin max propagates NaN without branching; four chains hide its latency.
	ninf := float32(math.Inf(-1))
	m0, m1, m2, m3 := ninf, ninf, ninf, ninf
	i := 0
	for ; i+4 <= len(x); i += 4 {
		x := x[i : i+4 : i+4]
		m0 = max(m0, x[0])
		m1 = max(m1, x[1])
		m2 = max(m2, x[2])
		m3 = max(m3, x[3])
	}
	for ; i < len(x); i++ {
		m0 = max(m0, x[i])
	}
	return max(max(m0, m1), max(m2, m3))
}

// ScaleMax sets dst[i] = c·x[i] and returns the largest, NaN when one is NaN (Max's
// rule), −Inf for none; x must be at least as long as dst, and dst may be x.
func ScaleMax(dst, x []float32, c float32) float32 {
	x = x[:len(dst)]
	if hasAVX2 && len(dst) > 0 {
		return scaleMaxAVX2(&dst[0], &x[0], nil, len(dst), c)
	}
	m := float32(math.Inf(-1))
	for i, v := range x {
		v *= c
		dst[i] = v
		m = max(m, v) // NaN wins
	}
	return m
}

// ScaleAddMax sets dst[i] = c·x[i] + b[i] (the product rounded, then the sum: ScaleMax
// then Add, bit for bit) and returns the largest, NaN when one is NaN; x and b must be at
// least as long as dst.
func ScaleAddMax(dst, x, b []float32, c float32) float32 {
	x, b = x[:len(dst)], b[:len(dst)]
	if hasAVX2 && len(dst) > 0 {
		return scaleMaxAVX2(&dst[0], &x[0], &b[0], len(dst), c)
	}
	m := float32(math.Inf(-1))
	for i, v := range x {
		v = float32(v*c) + b[i]
		dst[i] = v
		m = max(m, v) // NaN wins
	}
	return m
}

// Add sets dst[i] += x[i] for i < len(dst) (x must be as long).
func Add(dst, x []float32) {
	x = x[:len(dst)]
	if hasAVX2 && len(dst) > 0 {
		addAVX2(&dst[0], &x[0], len(dst))
		return
	}
	for i := range dst {
		dst[i] += x[i]
	}
}

// Scale sets x[i] = a·x[i].
func Scale(x []float32, a float32) { ScaleTo(x, x, a) }

// ScaleTo sets dst[i] = a·x[i]; x must be at least as long as dst (dst may be x).
func ScaleTo(dst, x []float32, a float32) {
	x = x[:len(dst)]
	n := 0
	if hasAVX2 {
		n = len(dst) &^ 7
		if n > 0 {
			scaleToAVX2(&dst[0], &x[0], n, a)
		}
	}
	for i := n; i < len(dst); i++ {
		dst[i] = a * x[i]
	}
}

// ScaleFlush sets x[i] = a·x[i], and 0 where that is below the smallest normal float32
// 2⁻¹²⁶ (negative values included; a NaN stays NaN): weights normalised by their sum,
// with Softmax's rule for the smallest. The same result on every path (with AVX-512,
// sixteen elements at a time and a masked tail).
func ScaleFlush(x []float32, a float32) {
	n := 0
	switch {
	case hasAVX2 && hasAVX512 && len(x) > 0:
		scaleFlushAVX2(&x[0], len(x), a, true)
		return
	case hasAVX2:
		n = len(x) &^ 7
		if n > 0 {
			scaleFlushAVX2(&x[0], n, a, false)
		}
	}
	for i := n; i < len(x); i++ {
		v := a * x[i]
		if v < 0x1p-126 {
			v = 0
		}
		x[i] = v
	}
}

// Shift sets x[i] = x[i] + a.
func Shift(x []float32, a float32) {
	n := 0
	if hasAVX2 {
		n = len(x) &^ 7
		if n > 0 {
			shiftAVX2(&x[0], n, a)
		}
	}
	for i := n; i < len(x); i++ {
		x[i] += a
	}
}

// ReLU sets y[i] = x[i] if x[i] ≥ 0, else x[i]·0 (−0 for negative x, NaN for NaN and
// −Inf), as autodiff's scalar reluFwd, bit for bit.
func ReLU(x, y []float32) {
	y = y[:len(x)]
	n := 0
	if hasAVX2 {
		n = len(x) &^ 7
		if n > 0 {
			reluAVX2(&x[0], &y[0], n)
		}
	}
	for i := n; i < len(x); i++ {
		if v := x[i]; v >= 0 {
			y[i] = v
		} else {
			y[i] = v * 0
		}
	}
}

// ReLUGrad sets dx[i] = g[i] if x[i] ≥ 0, else g[i]·0, as autodiff's scalar reluBwd.
func ReLUGrad(x, g, dx []float32) {
	g, dx = g[:len(x)], dx[:len(x)]
	n := 0
	if hasAVX2 {
		n = len(x) &^ 7
		if n > 0 {
			reluGradAVX2(&x[0], &g[0], &dx[0], n)
		}
	}
	for i := n; i < len(x); i++ {
		if x[i] >= 0 {
			dx[i] = g[i]
		} else {
			dx[i] = g[i] * 0
		}
	}
}

// ScaledDiff sets d[i] = float32(c·(float64(p[i]) − float64(t[i]))), each operation
// rounded in float64 (the MSE gradient).
func ScaledDiff(p, t []float32, c float64, d []float32) {
	t, d = t[:len(p)], d[:len(p)]
	n := 0
	if hasAVX2 {
		n = len(p) &^ 7
		if n > 0 {
			scaledDiffAVX2(&p[0], &t[0], &d[0], n, c)
		}
	}
	for i := n; i < len(p); i++ {
		d[i] = float32(c * (float64(p[i]) - float64(t[i])))
	}
}

// SqDiffSum returns Σ (float64(p[i]) − float64(t[i]))² in a fixed order that does not
// depend on the CPU: sixteen partial sums, partial j over the elements i ≡ j (mod 16)
// of the leading multiple of 16, combined pairwise, then the remaining elements added
// in order.
func SqDiffSum(p, t []float32) float64 {
	t = t[:len(p)]
	n := len(p) &^ 15
	var s [16]float64
	if n > 0 {
		if hasAVX2 {
			sqDiffSumAVX2(&p[0], &t[0], n, &s)
		} else {
			for i := 0; i < n; i += 16 {
				for j := range 16 {
					d := float64(p[i+j]) - float64(t[i+j])
					s[j] = s[j] + float64(d*d)
				}
			}
		}
	}
	for w := 8; w >= 1; w /= 2 {
		for j := range w {
			s[j] = s[j] + s[j+w]
		}
	}
	r := s[0]
	for i := n; i < len(p); i++ {
		d := float64(p[i]) - float64(t[i])
		r = r + float64(d*d)
	}
	return r
}

// Recip1p sets k[i] = 1/(1 + x[i]·c), each step rounded to float32: the same values on
// every path; x must be at least as long as k (k may be x).
func Recip1p(k, x []float32, c float32) {
	x = x[:len(k)]
	if hasAVX2 && len(k) > 0 {
		recip1pAVX2(&k[0], &x[0], len(k), c)
		return
	}
	for i, v := range x {
		k[i] = 1 / (1 + float32(v*c)) // rounded: no fused multiply-add
	}
}

// RatioGrad sets f = g[i]/(a + x[i]) and g[i] = −f, and returns Σ f·x[i] in ScaleDot's
// lanes (element i in lane i mod 8, then lanes8): the same result on every path; x
// must be at least as long as g.
func RatioGrad(g, x []float32, a float32) float32 {
	x = x[:len(g)]
	if hasAVX2 && len(g) > 0 {
		return ratioGradAVX2(&g[0], &x[0], len(g), a)
	}
	var s [8]float32
	for i, v := range g {
		f := v / (a + x[i])
		s[i&7] += float32(f * x[i])
		g[i] = -f
	}
	return lanes8(&s)
}
