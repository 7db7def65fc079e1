package vmath

import "math"

// Row kernels of LayerNorm over float32 data with float64 arithmetic. Every function
// gives the same bits on every code path: the sums run in a fixed order that does not
// depend on the CPU (sixteen partial sums, partial j over the elements i ≡ j (mod 16) of
// the leading multiple of 16, combined pairwise, then the remaining elements added in
// order), and the element-wise results round every float64 operation as written, with
// no fused multiply-add.

// combine16 adds the sixteen partial sums pairwise, s[j] += s[j+w] for w = 8, 4, 2, 1,
// and returns s[0] (the assembly kernels end with the same additions).
func combine16(s *[16]float64) float64 {
	a0, a1, a2, a3 := s[0]+s[8], s[1]+s[9], s[2]+s[10], s[3]+s[11]
	a4, a5, a6, a7 := s[4]+s[12], s[5]+s[13], s[6]+s[14], s[7]+s[15]
	a0, a1, a2, a3 = a0+a4, a1+a5, a2+a6, a3+a7
	return (a0 + a2) + (a1 + a3)
}

// Sum64 returns Σ float64(x[i]) in the fixed order above.
func Sum64(x []float32) float64 {
	n := len(x) &^ 15
	var r float64
	if n > 0 && hasAVX2 {
		r = sum64AVX2(&x[0], n)
	} else if n > 0 {
		var s [16]float64
		for i := 0; i < n; i += 16 {
			for j := range 16 {
				s[j] = s[j] + float64(x[i+j])
			}
		}
		r = combine16(&s)
	}
	for i := n; i < len(x); i++ {
		r = r + float64(x[i])
	}
	return r
}

// SqDev64 returns Σ (float64(x[i]) − mu)² in the fixed order above.
func SqDev64(x []float32, mu float64) float64 {
	n := len(x) &^ 15
	var r float64
	if n > 0 && hasAVX2 {
		r = sqDev64AVX2(&x[0], n, mu)
	} else if n > 0 {
		var s [16]float64
		for i := 0; i < n; i += 16 {
			for j := range 16 {
				d := float64(x[i+j]) - mu
				s[j] = s[j] + d*d
			}
		}
		r = combine16(&s)
	}
	for i := n; i < len(x); i++ {
		d := float64(x[i]) - mu
		r = r + d*d
	}
	return r
}

// NormAffine sets y[i] = float32((float64(x[i]) − mu)·rstd·float64(w[i]) + float64(b[i])),
// each operation rounded in float64 from left to right; b nil adds nothing. w, b and y
// must be at least as long as x.
func NormAffine(x, w, b, y []float32, mu, rstd float64) {
	w, y = w[:len(x)], y[:len(x)]
	if b != nil {
		b = b[:len(x)]
	}
	n := 0
	if hasAVX2 {
		n = len(x) &^ 3
		if n > 0 {
			var bp *float32
			if b != nil {
				bp = &b[0]
			}
			normAffineAVX2(&x[0], &w[0], bp, &y[0], n, mu, rstd)
		}
	}
	for i := n; i < len(x); i++ {
		v := (float64(x[i]) - mu) * rstd * float64(w[i])
		if b != nil {
			v = v + float64(b[i])
		}
		y[i] = float32(v)
	}
}

// NormGradSums returns s1 = Σ dh and s2 = Σ dh·h in the fixed order above, where
// dh = float64(g[i])·float64(w[i]) and h = (float64(x[i]) − mu)·rstd: the row sums of
// LayerNorm's input gradient. g and w must be at least as long as x.
func NormGradSums(x, g, w []float32, mu, rstd float64) (s1, s2 float64) {
	g, w = g[:len(x)], w[:len(x)]
	n := len(x) &^ 15
	if n > 0 && hasAVX2 {
		s1, s2 = normGradSumsAVX2(&x[0], &g[0], &w[0], n, mu, rstd)
	} else if n > 0 {
		var a, b [16]float64
		for i := 0; i < n; i += 16 {
			for j := range 16 {
				dh := float64(g[i+j]) * float64(w[i+j])
				h := (float64(x[i+j]) - mu) * rstd
				a[j] = a[j] + dh
				b[j] = b[j] + dh*h
			}
		}
		s1, s2 = combine16(&a), combine16(&b)
	}
	for i := n; i < len(x); i++ {
		dh := float64(g[i]) * float64(w[i])
		h := (float64(x[i]) - mu) * rstd
		s1 = s1 + dh
		s2 = s2 + dh*h
	}
	return s1, s2
}

// NormGrad sets dx[i] = float32(rstd·((dh − m1) − h·m2)) with dh and h as in
// NormGradSums: LayerNorm's input gradient, m1 and m2 being the row means of dh and dh·h.
func NormGrad(x, g, w, dx []float32, mu, rstd, m1, m2 float64) {
	g, w, dx = g[:len(x)], w[:len(x)], dx[:len(x)]
	n := 0
	if hasAVX2 {
		n = len(x) &^ 3
		if n > 0 {
			normGradAVX2(&x[0], &g[0], &w[0], &dx[0], n, mu, rstd, m1, m2)
		}
	}
	for i := n; i < len(x); i++ {
		dh := float64(g[i]) * float64(w[i])
		h := (float64(x[i]) - mu) * rstd
		dx[i] = float32(rstd * (dh - m1 - h*m2))
	}
}

// NormParamGradAdd adds float64(g[i])·(float64(x[i]) − mu)·rstd (rounded left to right)
// to dw[i] and, where db is not nil, float64(g[i]) to db[i]: one row's terms of
// LayerNorm's weight and bias gradients. x, g (and db) must be at least as long as dw.
func NormParamGradAdd(x, g []float32, mu, rstd float64, dw, db []float64) {
	x, g = x[:len(dw)], g[:len(dw)]
	if db != nil {
		db = db[:len(dw)]
	}
	n := 0
	if hasAVX2 {
		n = len(dw) &^ 3
		if n > 0 {
			var dbp *float64
			if db != nil {
				dbp = &db[0]
			}
			normParamGradAddAVX2(&x[0], &g[0], n, mu, rstd, &dw[0], dbp)
		}
	}
	for i := n; i < len(dw); i++ {
		dw[i] = dw[i] + float64(g[i])*(float64(x[i])-mu)*rstd
		if db != nil {
			db[i] = db[i] + float64(g[i])
		}
	}
}

// LayerNormRow normalises one row: mu = Sum64(x)/n, rstd = 1/√(SqDev64(x, mu)/n + eps)
// and NormAffine(x, w, b, y, mu, rstd), n = len(x) > 0; it returns mu and rstd. Rows of a
// multiple of 16 run in one vector call; the results are those of the three calls.
func LayerNormRow(x, w, b, y []float32, eps float64) (mu, rstd float64) {
	n := len(x)
	if hasAVX2 && n > 0 && n%16 == 0 {
		w, y = w[:n], y[:n]
		var bp *float32
		if b != nil {
			bp = &b[:n][0]
		}
		return layerNormRowAVX2(&x[0], &w[0], bp, &y[0], n, eps)
	}
	nf := float64(n)
	mu = Sum64(x) / nf
	rstd = 1 / math.Sqrt(SqDev64(x, mu)/nf+eps)
	NormAffine(x, w, b, y, mu, rstd)
	return mu, rstd
}

// LayerNormRowGrad sets one row's input gradient: with s1, s2 = NormGradSums(x, g, w,
// mu, rstd), NormGrad(x, g, w, dx, mu, rstd, s1/n, s2/n), n = len(x). Rows of a multiple
// of 16 run in one vector call with the same results.
func LayerNormRowGrad(x, g, w, dx []float32, mu, rstd float64) {
	n := len(x)
	if hasAVX2 && n > 0 && n%16 == 0 {
		g, w, dx = g[:n], w[:n], dx[:n]
		layerNormRowGradAVX2(&x[0], &g[0], &w[0], &dx[0], n, mu, rstd)
		return
	}
	nf := float64(n)
	s1, s2 := NormGradSums(x, g, w, mu, rstd)
	NormGrad(x, g, w, dx, mu, rstd, s1/nf, s2/nf)
}

// SqNorms sets out[r] to the squared norm of row r of x (d wide, ld apart), the squares
// rounded to float32 and summed in eight float32 lanes (element i in lane i mod 8, then
// lanes8): the same result on every path. x must hold len(out) rows.
func SqNorms(out, x []float32, d, ld int) {
	if len(out) == 0 || d == 0 {
		clear(out)
		return
	}
	x = x[:(len(out)-1)*ld+d]
	if hasAVX2 {
		sqNormsAVX2(&out[0], &x[0], len(out), d, ld)
		return
	}
	for r := range out {
		var s [8]float32
		for i, v := range x[r*ld : r*ld+d] {
			s[i&7] += float32(v * v)
		}
		out[r] = lanes8(&s)
	}
}
