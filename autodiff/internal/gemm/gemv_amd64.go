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
// columns of whole vectors, and for the last n mod w columns from a copy of them padded
// with zeros to w columns (k ≤ kc), as the micro-kernels' last panel: every element is
// the same FMAs in the same order as theirs.
func gemvNVec(asm gemvAsm, w int) func(k, n int, x, b []float32, ldb int, y []float32, set bool) {
	return func(k, n int, x, b []float32, ldb int, y []float32, set bool) {
		_ = x[k-1]
		nv := n / w * w
		if nv > 0 {
			_ = b[(k-1)*ldb+nv-1]
			_ = y[nv-1]
			asm(k, nv, &x[0], &b[0], ldb, &y[0], set)
		}
		if nv == n {
			return
		}
		cols := n - nv
		ws := pool.Get().(*workspace)
		panel := ws.b[:k*w]
		for p := range k {
			q := panel[p*w : p*w+w]
			copy(q, b[p*ldb+nv:p*ldb+n])
			clear(q[cols:])
		}
		t := ws.tmp[:w]
		asm(k, w, &x[0], &panel[0], w, &t[0], true)
		addTile(1, cols, w, t, y[nv:], 0, set)
		pool.Put(ws)
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
