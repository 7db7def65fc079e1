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
