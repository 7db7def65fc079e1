package vmath

import "math"

// Comp is one component of a mixture for the fused mixture loops (MixScores2,
// ExpShiftSum2, MixShare, MixCoefs2): a log-score C·x linear in the pair term x, or, if
// Rational, the value 1/(1 + C·x) (log-score −log(1 + C·x)) whose score gradients g turn
// into g/(A + x) with A = 1/C as the kernel rounds it (Recip1p's values and RatioGrad's
// gradients; a Rational component reads the squared distance). The loops form the term
// from the dot products dots, the query's squared norm qq and the keys' squared norms kk
// themselves: dots[i] for TermDot, the squared distance max(qq + kk[i] − 2·dots[i], 0) for
// TermSqDist, its square root for TermDist (as SqDist and Dist form them).
type Comp struct {
	C, A     float32
	Term     Term
	Rational bool
}

// value is a Rational component's value at term x, as Recip1p forms it.
func (l Comp) value(x float32) float32 { return 1 / (1 + float32(x*l.C)) }

// term is the pair term of l from a dot product and the two squared norms.
func (l Comp) term(dot, qq, kk float32) float32 {
	if l.Term == TermDot {
		return dot
	}
	v := (qq + kk) - 2*dot
	if v < 0 {
		v = 0
	}
	if l.Term == TermDist {
		v = float32(math.Sqrt(float64(v)))
	}
	return v
}

// distances says whether a loop over a and b reads the keys' squared norms.
func distances(a, b Comp) bool { return a.Term != TermDot || b.Term != TermDot }

// MixScores2 sets e0[i] = a.C·x_a[i] and e1[i] = b.C·x_b[i], the log-scores of two
// linear components, and returns the largest of both rows, NaN when one is NaN: ScaleMax
// or SqDistScaleMax for each, in one pass, the same result on every path (sixteen lanes
// at a time with AVX-512). A Rational b
// gets its values (SqDist then Recip1p) and stays out of the largest. a must not be
// Rational. dots (and kk, read only when a term is a distance) must be at least as long
// as e0, and e1 as long.
func MixScores2(e0, e1, dots []float32, qq float32, kk []float32, a, b Comp) float32 {
	n := len(e0)
	e1, dots = e1[:n], dots[:n]
	if distances(a, b) {
		kk = kk[:n]
	} else {
		kk = dots // not read
	}
	if hasAVX2 && n > 0 {
		return mixScores2AVX2(&e0[0], &e1[0], &dots[0], &kk[0], n, qq, a.C, b.C, int(a.Term), int(b.Term), b.Rational, hasAVX512)
	}
	m := float32(math.Inf(-1))
	for i, d := range dots {
		v0 := a.C * a.term(d, qq, kk[i])
		e0[i] = v0
		m = max(m, v0) // NaN wins
		if b.Rational {
			e1[i] = b.value(b.term(d, qq, kk[i]))
			continue
		}
		v1 := b.C * b.term(d, qq, kk[i])
		e1[i] = v1
		m = max(m, v1)
	}
	return m
}

// ExpShiftSum2 sets e0[i] = exp(e0[i] − s0) + exp(e1[i] − s1) and returns the sums of
// the two exponentials: ExpShiftSum(e0, s0) then ExpScaleShiftAdd(e0, e1, 1, s1) in one
// pass, the same result on every path (sixteen lanes at a time with AVX-512); e1 must
// be at least as long as e0. With values1, e1 holds a component's values and e0[i] =
// exp(e0[i] − s0) + s1·e1[i] (Scale(e1, s1) then Add, e1 left as it was).
func ExpShiftSum2(e0, e1 []float32, s0, s1 float32, values1 bool) (sum0, sum1 float32) {
	e1 = e1[:len(e0)]
	if hasAVX2 && len(e0) > 0 {
		return expShiftSum2AVX2(&e0[0], &e1[0], len(e0), s0, s1, values1, hasAVX512)
	}
	var a, b [8]float32
	for i, v := range e1 {
		v0 := expFlush(e0[i] - s0)
		var v1 float32
		if values1 {
			v1 = v * s1
		} else {
			v1 = expFlush(v - s1)
		}
		e0[i] = v0 + v1
		a[i&7] += v0
		b[i&7] += v1
	}
	return lanes8(&a), lanes8(&b)
}

// MixShare is a mixture component's share of a row's score gradients and the row's own,
// from the products d = dm·vᵀ and the weights p: g[i] = (f·exp(a.C·x_a[i] − shift))·(d[i]
// − delta), then d[i] = p[i]·(d[i] − delta) − g[i]; it returns Σ g and Σ p·(d − delta).
// That is ExpScoreGrad of the component's terms then ScoreGradSub, in one pass, the same
// result on every path (sixteen lanes at a time with AVX-512). A Rational a takes its values for the exponentials (shift is not
// read): Recip1p then ScoreGradSum at scale f. d, p and dots (and kk, read only for a
// distance) must be at least as long as g.
func MixShare(g, d, p, dots []float32, qq float32, kk []float32, a Comp, shift, delta, f float32) (sg, sd float32) {
	n := len(g)
	d, p, dots = d[:n], p[:n], dots[:n]
	if a.Term != TermDot {
		kk = kk[:n]
	} else {
		kk = dots // not read
	}
	if hasAVX2 && n > 0 {
		return mixShareAVX2(&g[0], &d[0], &p[0], &dots[0], &kk[0], n, qq, a.C, shift, delta, f, int(a.Term), a.Rational, hasAVX512)
	}
	var s, t [8]float32
	for i, dot := range dots {
		var e float32
		if x := a.term(dot, qq, kk[i]); a.Rational {
			e = a.value(x)
		} else {
			e = expFlush(float32(a.C*x) - shift)
		}
		dd := d[i] - delta
		v := float32(f * e * dd)
		g[i] = v
		s[i&7] += v
		w := float32(p[i] * dd) // rounded: no fused multiply-add into t
		t[i&7] += w
		d[i] = w - v
	}
	return lanes8(&s), lanes8(&t)
}

// MixCoefs2 turns the score gradients of a two-component mixture's row into the
// coefficients of its dot products: LinearCoefs(d, d, x_b, cs, b.C, b.Term, false) for
// component b, whose score gradients are in d, then LinearCoefs(d, g, x_a, cs, a.C,
// a.Term, true) for component a's in g, in one pass, the same result on every path; it
// returns both calls' sums. A Rational a takes RatioGrad(g, x_a, a.A), AddSumScale(g, cs,
// −2) and Add(d, g) instead (g left as it was), and returns their sums. b must not be
// Rational. g and dots (kk and cs, read only when a term is a distance) must be at least
// as long as d.
func MixCoefs2(d, g, dots []float32, qq float32, kk, cs []float32, b, a Comp) (gxb, sdb, gxa, sda float32) {
	n := len(d)
	g, dots = g[:n], dots[:n]
	if distances(a, b) {
		kk, cs = kk[:n], cs[:n]
	} else {
		kk, cs = dots, nil // not read
	}
	if hasAVX2 && n > 0 {
		var csp *float32
		if cs != nil {
			csp = &cs[0]
		}
		ca := a.C
		if a.Rational {
			ca = a.A
		}
		return mixCoefs2AVX2(&d[0], &g[0], &dots[0], &kk[0], csp, n, qq, b.C, ca, int(b.Term), int(a.Term), a.Rational, hasAVX512)
	}
	var xb, sb, xa, sa [8]float32
	for i, dot := range dots {
		v := linearCoef(b, d[i], b.term(dot, qq, kk[i]), &xb[i&7], &sb[i&7], cs, i)
		d[i] = v + linearCoef(a, g[i], a.term(dot, qq, kk[i]), &xa[i&7], &sa[i&7], cs, i)
	}
	return lanes8(&xb), lanes8(&sb), lanes8(&xa), lanes8(&sa)
}

// linearCoef is LinearCoefs of one score gradient gi at term x (RatioGrad's and
// AddSumScale's for a Rational l): it adds gi·x (f·x) into *sx and, for a distance,
// ∂L/∂d² into *ss and cs[i], and returns the coefficient.
func linearCoef(l Comp, gi, x float32, sx, ss *float32, cs []float32, i int) float32 {
	if l.Rational {
		f := gi / (l.A + x)
		*sx += float32(f * x)
		v := -f
		*ss += v
		cs[i] += v
		return -2 * v
	}
	*sx += float32(gi * x)
	v := l.C * gi
	if l.Term == TermDist {
		if v == 0 || x == 0 {
			v = 0
		} else {
			v /= 2 * x
		}
	}
	if l.Term != TermDot {
		*ss += v
		cs[i] += v
		v *= -2
	}
	return v
}
