package gemm

// Products of one to a few rows (generation's one token at a time: x·Wᵀ for a Linear, q·Kᵀ
// and p·V for attention) go to a matrix–vector path instead of the micro-kernels: those compute a whole tile of rows (12 for AVX-512, 6 for AVX2 and
// Go) from A's rows packed with zeros where fewer rows are wanted, and a flipped x·Wᵀ
// (flips) computes Cᵀ's m columns with a 16-column kernel. FMAs per product of m rows, in
// units of n·k (micro-kernels AVX-512 / AVX2 / Go, against gemv's m):
//
//	x·B,  m = 1: 12 / 6 / 6    m = 2: 12 / 2 (2-row tail) / 6    m = 3: 12 / 6 / 6
//	x·B,  m = 4: 4 / 4 (4-row tails) / 6, each reading B once where gemv reads it 4 times
//	x·Bᵀ, m ≤ 4: 16 / 16 (flipped: 16 columns of Cᵀ) / 6, gemv reading B once for m rows
//
// so gemv takes x·B up to 3 rows (one row of A at a time) and x·Bᵀ up to 4 (gemvRows). A
// product reads B once per row of x·B, once for x·Bᵀ: the baby GPT's 384×1536 weights
// are 2.4 MB of float32 per token, which Parallel splits by
// columns over the cores above its size threshold (m·n·k ≥ 2¹⁸: 1 MiB of B for one row),
// as other products of few rows.
//
// Accumulation order: every element is summed over p in order, in depth panels of kc, by
// the same FMAs as the micro-kernels (one vector of sums per 8 or 16 columns of C, the last
// columns from a zero-padded copy): with alpha = 1 a row has their bits, whatever the
// number of rows of its product (TestGemvSameBits). For x·Bᵀ, 32 rows of B at a time are
// first transposed into a 32-column panel (8×8 AVX transposes, as packB), which the x·B
// kernel reads: 2·32·kc values through L1 for 32·kc FMAs.

// gemvRows returns the most rows of C for which sgemm takes the gemv path.
func gemvRows(transB bool) int {
	if transB {
		return 4
	}
	return 3
}

// useGemv lets sgemm take the gemv path (tests switch it off to compare).
var useGemv = true

// gemv sets C = alpha·op(A)·op(B) + beta·C for m ≤ gemvRows rows by kr's gemvN (B, one
// row of op(A) at a time) or gemvT (Bᵀ, all m rows over each panel of B). Aᵀ, or A times
// alpha ≠ 1, is first gathered into a scratch m×k matrix (m·k values, against m·n·k of
// work).
func gemv(kr *microKernel, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	set := beta == 0
	if !set {
		scaleC(m, n, beta, c, ldc)
	}
	x, ldx := a, lda
	var ws *workspace
	if transA || alpha != 1 {
		ws = pool.Get().(*workspace)
		if cap(ws.t) < m*k {
			ws.t = make([]float32, m*k)
		}
		x, ldx = ws.t[:m*k], k
		for i := range m {
			row := x[i*k : i*k+k]
			if transA {
				for p := range row {
					row[p] = alpha * a[p*lda+i]
				}
				continue
			}
			for p, v := range a[i*lda : i*lda+k] {
				row[p] = alpha * v
			}
		}
	}
	// In depth panels of kc, as sgemm: each element is then the micro-kernels' sum, with
	// the same bits (alpha = 1).
	for pc := 0; pc < k; pc += kc {
		kb := min(kc, k-pc)
		if transB {
			kr.gemvT(m, kb, n, x[pc:], ldx, b[pc:], ldb, c, ldc, set && pc == 0)
			continue
		}
		for i := range m {
			kr.gemvN(kb, n, x[i*ldx+pc:], b[pc*ldb:], ldb, c[i*ldc:], set && pc == 0)
		}
	}
	if ws != nil {
		pool.Put(ws)
	}
}

// gemvNGo sets y[j] = Σ_p x[p]·b[p·ldb+j] for j < n (adds it to y[j] unless set), k ≥ 1:
// eight columns at a time, whose sums stay in registers over the whole depth, summed over
// p in order.
func gemvNGo(k, n int, x, b []float32, ldb int, y []float32, set bool) {
	x = x[:k]
	y = y[:n]
	j := 0
	for ; j+8 <= n; j += 8 {
		var s0, s1, s2, s3, s4, s5, s6, s7 float32
		for p, xv := range x {
			bp := (*[8]float32)(b[p*ldb+j:])
			s0 += xv * bp[0]
			s1 += xv * bp[1]
			s2 += xv * bp[2]
			s3 += xv * bp[3]
			s4 += xv * bp[4]
			s5 += xv * bp[5]
			s6 += xv * bp[6]
			s7 += xv * bp[7]
		}
		yp := (*[8]float32)(y[j:])
		if set {
			*yp = [8]float32{s0, s1, s2, s3, s4, s5, s6, s7}
			continue
		}
		yp[0] += s0
		yp[1] += s1
		yp[2] += s2
		yp[3] += s3
		yp[4] += s4
		yp[5] += s5
		yp[6] += s6
		yp[7] += s7
	}
	for ; j < n; j++ {
		var s float32
		for p, xv := range x {
			s += xv * b[p*ldb+j]
		}
		if set {
			y[j] = s
		} else {
			y[j] += s
		}
	}
}

// gemvTGo sets row i of C, c[i·ldc+j] for j < n, to Σ_p x[i·ldx+p]·b[j·ldb+p] (adds it
// unless set) for i < m, one row at a time (gemvTRow).
func gemvTGo(m, k, n int, x []float32, ldx int, b []float32, ldb int, c []float32, ldc int, set bool) {
	for i := range m {
		gemvTRow(k, n, x[i*ldx:], b, ldb, c[i*ldc:], set)
	}
}

// gemvTRow sets y[j] = Σ_p x[p]·b[j·ldb+p] for j < n (adds it to y[j] unless set): a dot
// product per row of b summed over p in order, four rows at a time.
func gemvTRow(k, n int, x, b []float32, ldb int, y []float32, set bool) {
	x = x[:k]
	y = y[:n]
	j := 0
	for ; j+4 <= n; j += 4 {
		r0, r1 := b[j*ldb:j*ldb+k], b[(j+1)*ldb:(j+1)*ldb+k]
		r2, r3 := b[(j+2)*ldb:(j+2)*ldb+k], b[(j+3)*ldb:(j+3)*ldb+k]
		var s0, s1, s2, s3 float32
		for p, xv := range x {
			s0 += xv * r0[p]
			s1 += xv * r1[p]
			s2 += xv * r2[p]
			s3 += xv * r3[p]
		}
		yp := (*[4]float32)(y[j:])
		if set {
			*yp = [4]float32{s0, s1, s2, s3}
			continue
		}
		yp[0] += s0
		yp[1] += s1
		yp[2] += s2
		yp[3] += s3
	}
	for ; j < n; j++ {
		row := b[j*ldb : j*ldb+k]
		var s float32
		for p, xv := range x {
			s += xv * row[p]
		}
		if set {
			y[j] = s
		} else {
			y[j] += s
		}
	}
}
