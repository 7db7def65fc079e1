// Package compact holds the float32 row loops of the kernels with compact support
// (Tricube, Epanechnikov): their values and score gradients over a row of pair terms, on
// AVX2 where the CPU has it (and LOCUS_CPU allows it), in plain Go elsewhere, the same
// bits on both paths. The sums keep element j in lane j mod 8, then add the lanes as
// lanes8 does.
package compact

// TricubeValues sets k[j] = (1 − u³)³ with u = r[j]·c, 0 where u ≥ 1 (NaN stays NaN);
// each product and difference rounded to float32 in the order written. r must be at
// least as long as k.
func TricubeValues(k, r []float32, c float32) {
	n := len(k)
	r = r[:n]
	done := vectorPart(n)
	if done > 0 {
		tricubeValuesAVX2(&k[0], &r[0], done, c)
	}
	for j := done; j < n; j++ {
		u := r[j] * c
		if u >= 1 {
			k[j] = 0
			continue
		}
		w := 1 - float32(float32(u*u)*u)
		k[j] = float32(w*w) * w
	}
}

// TricubeGrads sets g[j] to −f·ih with f = 9·g[j]·u²/(1 − u³), u = r[j]·ih, the score
// gradient times ∂s/∂r of a tricube kernel at bandwidth 1/ih, 0 where g[j] = 0 or u ≥ 1,
// and returns Σ f·u over the others (the bandwidth's share before its factor ih). r must
// be at least as long as g.
func TricubeGrads(g, r []float32, ih float32) float32 {
	n := len(g)
	r = r[:n]
	var s [8]float32
	done := vectorPart(n)
	if done > 0 {
		tricubeGradsAVX2(&g[0], &r[0], done, ih, &s)
	}
	for j := done; j < n; j++ {
		v, u := g[j], r[j]*ih
		if v == 0 || u >= 1 {
			g[j] = 0
			continue
		}
		u2 := u * u
		f := float32(float32(9*v)*u2) / (1 - float32(u2*u))
		s[j&7] += float32(f * u)
		g[j] = -float32(f * ih)
	}
	return lanes8(&s)
}

// EpanechnikovGrads sets g[j] to −f with f = g[j]/(hh − x[j]), the score gradient times
// ∂s/∂x of an Epanechnikov kernel at squared bandwidth hh and squared distance x[j], 0
// where g[j] = 0 or hh − x[j] ≤ 0, and returns Σ f·x over the others. x must be at least
// as long as g.
func EpanechnikovGrads(g, x []float32, hh float32) float32 {
	n := len(g)
	x = x[:n]
	var s [8]float32
	done := vectorPart(n)
	if done > 0 {
		epanechnikovGradsAVX2(&g[0], &x[0], done, hh, &s)
	}
	for j := done; j < n; j++ {
		v, den := g[j], hh-x[j]
		if v == 0 || den <= 0 {
			g[j] = 0
			continue
		}
		f := v / den
		s[j&7] += float32(f * x[j])
		g[j] = -f
	}
	return lanes8(&s)
}

// vectorPart returns how many of n elements the AVX2 loops take: the whole vectors of
// eight, or none without AVX2; the Go loops take the rest.
func vectorPart(n int) int {
	if !hasAVX2 {
		return 0
	}
	return n &^ 7
}

// lanes8 adds the eight lanes: j + 4, then j + 2, then j + 1.
func lanes8(s *[8]float32) float32 {
	for w := 4; w >= 1; w /= 2 {
		for j := range w {
			s[j] += s[j+w]
		}
	}
	return s[0]
}
