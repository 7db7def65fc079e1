package vmath

import (
	"fmt"
	"math"
)

// AddTo sets y[i] = a[i] + b[i] (b and y must be at least as long as a), the same
// float32 additions on every path.
func AddTo(a, b, y []float32) {
	b, y = b[:len(a)], y[:len(a)]
	n := 0
	if hasAVX2 {
		n = len(a) &^ 7
		if n > 0 {
			addToAVX2(&a[0], &b[0], &y[0], n)
		}
	}
	for i := n; i < len(a); i++ {
		y[i] = a[i] + b[i]
	}
}

// SigmoidGrad sets dx[i] = g[i]·y[i]·(1 − y[i]) (rounded left to right in float32), the
// gradient of the logistic function from its output y; g and dx must be at least as
// long as y.
func SigmoidGrad(y, g, dx []float32) {
	g, dx = g[:len(y)], dx[:len(y)]
	n := 0
	if hasAVX2 {
		n = len(y) &^ 7
		if n > 0 {
			sigmoidGradAVX2(&y[0], &g[0], &dx[0], n)
		}
	}
	for i := n; i < len(y); i++ {
		s := y[i]
		dx[i] = g[i] * s * (1 - s)
	}
}

// SqDist sets x[j] = qq + kk[j] − 2·dots[j], made 0 where round-off takes it below 0 (a
// NaN stays NaN): the squared distances ‖q‖² + ‖k_j‖² − 2q·k_j of a query and keys from
// their squared norms and dot products, the same float32 result on every path. dots and
// kk must be at least as long as x; x may be dots.
func SqDist(x, dots []float32, qq float32, kk []float32) { sqDist(x, dots, qq, kk, false) }

// Dist sets x[j] = √max(qq + kk[j] − 2·dots[j], 0) (SqDist's squared distances, then
// their square roots, correctly rounded on every path): the distances ‖q − k_j‖.
func Dist(x, dots []float32, qq float32, kk []float32) { sqDist(x, dots, qq, kk, true) }

func sqDist(x, dots []float32, qq float32, kk []float32, root bool) {
	dots, kk = dots[:len(x)], kk[:len(x)]
	if hasAVX2 && len(x) > 0 {
		sqDistAVX2(&x[0], &dots[0], qq, &kk[0], len(x), root)
		return
	}
	for j := range x {
		v := (qq + kk[j]) - 2*dots[j]
		if v < 0 {
			v = 0
		}
		if root {
			v = float32(math.Sqrt(float64(v))) // exact: a float64 root rounds once more, correctly
		}
		x[j] = v
	}
}

// SqDistScaleMax sets e to c times the squared distances SqDist gives (the distances Dist
// gives, if root) and returns the largest, NaN when one is NaN (Max's rule), −Inf for
// none: the same values on every path. dots and kk must be at least as long as e.
func SqDistScaleMax(e, dots []float32, qq float32, kk []float32, root bool, c float32) float32 {
	dots, kk = dots[:len(e)], kk[:len(e)]
	if hasAVX2 && len(e) > 0 {
		return sqDistScaleMaxAVX2(&e[0], &dots[0], qq, &kk[0], len(e), root, c)
	}
	m := float32(math.Inf(-1))
	for j := range e {
		v := (qq + kk[j]) - 2*dots[j]
		if v < 0 {
			v = 0
		}
		if root {
			v = float32(math.Sqrt(float64(v)))
		}
		v *= c
		e[j] = v
		m = max(m, v) // NaN wins
	}
	return m
}

// DistGrad turns gradients g with respect to distances r into gradients with respect to
// the squared distances r²: g[j] = g[j] / (2·r[j]), and 0 where g[j] or r[j] is 0 (the zero
// subgradient at r = 0); a NaN stays NaN. r must be at least as long as g.
func DistGrad(g, r []float32) {
	r = r[:len(g)]
	n := 0
	if hasAVX2 {
		n = len(g) &^ 7
		if n > 0 {
			distGradAVX2(&g[0], &r[0], n)
		}
	}
	for j := n; j < len(g); j++ {
		if g[j] == 0 || r[j] == 0 {
			g[j] = 0
			continue
		}
		g[j] /= 2 * r[j]
	}
}

// AddScaled sets y[i] = y[i] + a·x[i] (the product rounded, then the sum: no fused
// multiply-add, the same result on every path); x must be at least as long as y.
func AddScaled(y, x []float32, a float32) {
	x = x[:len(y)]
	n := 0
	if hasAVX2 {
		n = len(y) &^ 7
		if n > 0 {
			addScaledRowsAVX2(&y[0], &x[0], &a, 1, n, n)
		}
	}
	for i := n; i < len(y); i++ {
		y[i] += float32(a * x[i]) // the conversion rounds the product: no fusing
	}
}

// AddScaledRows is AddScaled(y[r·ld : r·ld+n], x[r·ld : r·ld+n], a[r]) for each row r
// of a, with the same bits: one call for the rows of a matrix (rows ld apart, n wide).
func AddScaledRows(y, x, a []float32, ld, n int) {
	rows := len(a)
	if rows == 0 || n <= 0 {
		return
	}
	if last := (rows-1)*ld + n; ld < n || len(y) < last || len(x) < last {
		panic(fmt.Sprintf("vmath: AddScaledRows of %d rows of %d, %d apart, over %d and %d elements", rows, n, ld, len(y), len(x)))
	}
	n8 := 0
	if hasAVX2 {
		n8 = n &^ 7
		if n8 > 0 {
			addScaledRowsAVX2(&y[0], &x[0], &a[0], rows, ld, n8)
		}
	}
	if n8 < n {
		for r, f := range a {
			yr, xr := y[r*ld+n8:r*ld+n], x[r*ld+n8:r*ld+n]
			for i := range yr {
				yr[i] += float32(f * xr[i]) // the conversion rounds the product: no fusing
			}
		}
	}
}

// Term names the pair term x of a log-score c·x that is linear in it, for LinearCoefs.
type Term int

const (
	TermDot    Term = iota // the dot product q·k
	TermSqDist             // the squared distance ‖q − k‖²
	TermDist               // the distance ‖q − k‖
)

// LinearCoefs turns the score gradients g of a row whose log-scores are c·x into the
// coefficients of its dot products, in one pass: c·g for TermDot; for the distance terms
// ∂L/∂d² (c·g, or c·g/(2r) with DistGrad's rule for TermDist) added into cs, and
// −2·∂L/∂d². They go into dst (added to it if add; dst may be g). It returns gx = Σ g·x
// (ScaleDot's lanes: the log-scores' derivative in c is x) and sd = Σ ∂L/∂d²
// (AddSumScale's lanes; 0 for TermDot): ScaleDot, DistGrad, AddSumScale and Add in
// one, the same result on every path. g and x (and cs, but for TermDot) must be at least
// as long as dst.
func LinearCoefs(dst, g, x, cs []float32, c float32, term Term, add bool) (gx, sd float32) {
	g, x = g[:len(dst)], x[:len(dst)]
	var csp *float32
	if term != TermDot {
		cs = cs[:len(dst)]
		if len(dst) > 0 {
			csp = &cs[0]
		}
	}
	if hasAVX2 && len(dst) > 0 {
		return linearCoefsAVX2(&dst[0], &g[0], &x[0], csp, len(dst), c, int(term), add)
	}
	var sx, ss [8]float32
	for i := range dst {
		gi := g[i]
		sx[i&7] += float32(gi * x[i])
		v := c * gi
		if term == TermDist {
			if v == 0 || x[i] == 0 {
				v = 0
			} else {
				v /= 2 * x[i]
			}
		}
		if term != TermDot {
			ss[i&7] += v
			cs[i] += v
			v *= -2
		}
		if add {
			dst[i] += v
		} else {
			dst[i] = v
		}
	}
	return lanes8(&sx), lanes8(&ss)
}

// DistCoefs is LinearCoefs(g, g, x, cs, c, term, false) of the score gradients g in
// place, with x the distances Dist forms from dots, qq and kk (TermDist, if root) or the
// squared distances SqDist forms (TermSqDist), without storing them: the same result on
// every path. dots, kk and cs must be at least as long as g.
func DistCoefs(g, dots []float32, qq float32, kk, cs []float32, c float32, root bool) (gx, sd float32) {
	dots, kk, cs = dots[:len(g)], kk[:len(g)], cs[:len(g)]
	if hasAVX2 && len(g) > 0 {
		return distCoefsAVX2(&g[0], &dots[0], &kk[0], &cs[0], len(g), qq, c, root)
	}
	var sx, ss [8]float32
	for i, gi := range g {
		x := (qq + kk[i]) - 2*dots[i]
		if x < 0 {
			x = 0
		}
		if root {
			x = float32(math.Sqrt(float64(x)))
		}
		sx[i&7] += float32(gi * x)
		v := c * gi
		if root {
			if v == 0 || x == 0 {
				v = 0
			} else {
				v /= 2 * x
			}
		}
		ss[i&7] += v
		cs[i] += v
		g[i] = -2 * v
	}
	return lanes8(&sx), lanes8(&ss)
}
