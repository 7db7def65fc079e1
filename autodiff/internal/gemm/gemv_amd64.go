//go:build amd64 && !purego

package gemm

//go:noescape
func gemvN8(k, n int, x, b *float32, ldb int, y *float32, set bool)

//go:noescape
func gemvN16z(k, n int, x, b *float32, ldb int, y *float32, set bool)

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
		addTile(1, cols, w, t, y[nv:], 0, set, nil)
		pool.Put(ws)
	}
}

// gemvTRows is the number of rows of B that gemvTVec transposes at a time: four vectors of
// sums of gemvN8 (its 32-column blocks), a panel of 32·kc values (32 KiB).
const gemvTRows = 32

// packT packs gemvTVec's panels: 8×8 AVX transposes into gemvTRows columns.
var packT = &microKernel{nr: gemvTRows, transposeB8: transposeB8AVX}

// gemvTVec is gemvTGo (k ≤ kc) by gemvN8 over panels of 32 rows of b transposed (packB's
// 8×8 AVX transposes) into the workspace, the last rows padded with zeros, as the
// micro-kernels' packed panels of Bᵀ: every element is the same FMAs in the same order.
// Each panel is transposed once for the m rows of x.
func gemvTVec(m, k, n int, x []float32, ldx int, b []float32, ldb int, c []float32, ldc int, set bool) {
	_ = x[(m-1)*ldx+k-1]
	_ = c[(m-1)*ldc+n-1]
	ws := pool.Get().(*workspace)
	panel := ws.b[:k*gemvTRows]
	t := ws.tmp[:gemvTRows]
	for j := 0; j < n; j += gemvTRows {
		rows := min(gemvTRows, n-j)
		packBPanels(packT, true, b, ldb, 0, j, k, rows, 1, panel)
		for i := range m {
			if rows == gemvTRows {
				gemvN8(k, gemvTRows, &x[i*ldx], &panel[0], gemvTRows, &c[i*ldc+j], set)
				continue
			}
			gemvN8(k, gemvTRows, &x[i*ldx], &panel[0], gemvTRows, &t[0], true)
			addTile(1, rows, gemvTRows, t, c[i*ldc+j:], 0, set, nil)
		}
	}
	pool.Put(ws)
}
