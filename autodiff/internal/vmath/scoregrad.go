package vmath

// ScoreGrad sets d[i] = (scale·p[i])·(d[i] − delta): the gradient of the scores of one
// softmax row, with p the row's weights, d the gradient of the loss with respect to the
// weights on entry and delta = Σ p[i]·d[i] (or any value equal to it, such as the
// attention output row's dot product with its gradient). Both paths round alike: the two
// products and the difference are each rounded to float32, no fused multiply-add.
func ScoreGrad(d, p []float32, delta, scale float32) {
	p = p[:len(d)]
	n := 0
	if hasAVX2 {
		n = len(d) &^ 7
		if n > 0 {
			scoreGradAVX2(&d[0], &p[0], n, delta, scale)
		}
	}
	for i := n; i < len(d); i++ {
		d[i] = scale * p[i] * (d[i] - delta)
	}
}

// ScoreGradSum sets dst[i] = (scale·p[i])·(d[i] − delta) with ScoreGrad's roundings (dst
// may be d) and returns Σ dst[i] in ScaleDot's lanes (element i in lane i mod 8, then
// lanes8): the same result on every path; d and p must be at least as long as dst.
func ScoreGradSum(dst, d, p []float32, delta, scale float32) float32 {
	d, p = d[:len(dst)], p[:len(dst)]
	if hasAVX2 && len(dst) > 0 {
		return scoreGradSumAVX2(&dst[0], &d[0], &p[0], len(dst), delta, scale)
	}
	var s [8]float32
	for i := range dst {
		v := float32(scale * p[i] * (d[i] - delta)) // rounded: no fused multiply-add into s
		dst[i] = v
		s[i&7] += v
	}
	return lanes8(&s)
}

// ExpScoreGrad sets g[i] = (f·e[i])·(d[i] − delta) with e[i] = exp(c·x[i] − shift) as
// ExpScaleShiftSum forms it, the values ScoreGradSum gives for weights e, and returns
// their sum in its lanes: the same result on every path; x and d must be at least as
// long as g.
func ExpScoreGrad(g, x, d []float32, c, shift, delta, f float32) float32 {
	x, d = x[:len(g)], d[:len(g)]
	if hasAVX2 && len(g) > 0 {
		return expScoreGradAVX2(&g[0], &x[0], &d[0], len(g), c, shift, delta, f)
	}
	var s [8]float32
	for i := range g {
		e := expFlush(float32(c*x[i]) - shift)
		v := float32(f * e * (d[i] - delta))
		g[i] = v
		s[i&7] += v
	}
	return lanes8(&s)
}

// ScoreGradSub sets d[i] = v − sub[i] with v = p[i]·(d[i] − delta), the value
// ScoreGradSum gives at scale 1, and returns Σ v in its lanes: ScoreGradSum(d, d, p,
// delta, 1) then AddScaled(d, sub, −1) in one pass, the same result on every path; p and
// sub must be at least as long as d.
func ScoreGradSub(d, p, sub []float32, delta float32) float32 {
	p, sub = p[:len(d)], sub[:len(d)]
	if hasAVX2 && len(d) > 0 {
		return scoreGradSubAVX2(&d[0], &p[0], &sub[0], len(d), delta)
	}
	var s [8]float32
	for i := range d {
		v := float32(p[i] * (d[i] - delta)) // rounded: no fused multiply-add into s
		s[i&7] += v
		d[i] = v - sub[i]
	}
	return lanes8(&s)
}
