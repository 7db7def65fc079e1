package vmath

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
