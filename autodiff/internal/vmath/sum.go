package vmath

import "math"

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
	n := 0
	if hasAVX2 {
		n = len(x) &^ 7
		if n > 0 {
			sqDistAVX2(&x[0], &dots[0], qq, &kk[0], n, root)
		}
	}
	for j := n; j < len(x); j++ {
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
			addScaledAVX2(&y[0], &x[0], n, a)
		}
	}
	for i := n; i < len(y); i++ {
		y[i] += float32(a * x[i]) // the conversion rounds the product: no fusing
	}
}
