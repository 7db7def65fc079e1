// Package gradsum holds the vector loop that sums the parts of a batch (autodiff's
// batch-sharded runs) into a parameter's gradient. (The contributions of a node used
// more than once, which gorgonia's Backprop adds with its own Add, go through
// vmath.AddTo.)
package gradsum

// AddScaled2 sets dst[i] += ca·a[i] + cb·b[i] for i < len(dst) (a and b must be as
// long): each product rounded to float32, then their sum, then the addition to dst,
// with the same bits on every code path (no fused multiply-add).
func AddScaled2(dst, a, b []float32, ca, cb float32) {
	a, b = a[:len(dst)], b[:len(dst)]
	n := 0
	if hasAVX2 {
		n = len(dst) &^ 7
		if n > 0 {
			addScaled2AVX2(&dst[0], &a[0], &b[0], n, ca, cb)
		}
	}
	addScaled2(dst[n:], a[n:], b[n:], ca, cb)
}

// addScaled2 is AddScaled2 in plain Go. The explicit conversions keep the compiler from
// fusing a multiply and an add (GOAMD64=v3, arm64), so that it rounds as the vector loop.
func addScaled2(dst, a, b []float32, ca, cb float32) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := range dst {
		dst[i] += float32(ca*a[i]) + float32(cb*b[i])
	}
}
