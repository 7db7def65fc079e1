//go:build amd64 && !purego

package gemm

//go:noescape
func gemvN8(k, n int, x, b *float32, ldb int, y *float32, set bool)

//go:noescape
func gemvT8(k, n int, x, b *float32, ldb int, y *float32, set bool)

//go:noescape
func gemvN16z(k, n int, x, b *float32, ldb int, y *float32, set bool)

//go:noescape
func gemvT16z(k, n int, x, b *float32, ldb int, y *float32, set bool)

type gemvAsm func(k, n int, x, b *float32, ldb int, y *float32, set bool)

// gemvNVec is gemvNGo by asm, a vector of w columns per register (gemv_amd64.s), for the
// columns of whole vectors; the last n mod w columns in Go. Each element is summed over p
// in order either way.
func gemvNVec(asm gemvAsm, w int) func(k, n int, x, b []float32, ldb int, y []float32, set bool) {
	return func(k, n int, x, b []float32, ldb int, y []float32, set bool) {
		nv := n / w * w
		if nv > 0 {
			_ = x[k-1]
			_ = b[(k-1)*ldb+nv-1]
			_ = y[nv-1]
			asm(k, nv, &x[0], &b[0], ldb, &y[0], set)
		}
		if nv < n {
			gemvNGo(k, n-nv, x, b[nv:], ldb, y[nv:], set)
		}
	}
}

// gemvTVec is gemvTGo by asm over the depths of whole vectors of w (gemv_amd64.s); the
// last k mod w products of each row are added after, in Go.
func gemvTVec(asm gemvAsm, w int) func(k, n int, x, b []float32, ldb int, y []float32, set bool) {
	return func(k, n int, x, b []float32, ldb int, y []float32, set bool) {
		kv := k / w * w
		if kv == 0 {
			gemvTGo(k, n, x, b, ldb, y, set)
			return
		}
		_ = x[kv-1]
		_ = b[(n-1)*ldb+kv-1]
		_ = y[n-1]
		asm(kv, n, &x[0], &b[0], ldb, &y[0], set)
		if kv < k {
			gemvTTail(kv, k, n, x, b, ldb, y, false)
		}
	}
}
