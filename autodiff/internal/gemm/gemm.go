// Package gemm is a single-precision general matrix multiply for row-major matrices:
// C = alpha·op(A)·op(B) + beta·C, with op(X) = X or Xᵀ and leading dimensions, as BLAS's
// sgemm. It packs panels of A and B where needed (transposes, alpha and edges; A and the
// full column panels of a plain B are read in place by the assembly kernels) and runs a
// register-blocked micro-kernel, chosen at run time: 12×32 in AVX-512 assembly
// on amd64 CPUs with AVX-512F, 6×16 in AVX2/FMA assembly on other amd64 CPUs with AVX2 and
// FMA, and 6×16 in plain Go elsewhere (and with -tags purego); LOCUS_CPU=avx2|generic
// caps the choice (package internal/simd). The assembly kernels have tail kernels of
// fewer rows for a product's last rows, and a 16-column kernel for narrow products and
// last column panels. Products of one to three rows (four with op(B) = Bᵀ: generation's
// one token at a time) take a matrix–vector path instead, in AVX-512, AVX2 or Go by the
// same choice, with the same sums as the micro-kernels (gemv.go). Sgemm is serial; Parallel splits large
// products over GOMAXPROCS goroutines. BenchmarkShapes gives every workload product's fraction of the FMA peak.
package gemm

import (
	"runtime"
	"sync"

	"github.com/locusml/locus/internal/par"
	"github.com/locusml/locus/internal/simd"
)

// Cache blocking sizes. The micro-tile (mr×nr) is the chosen micro-kernel's; mc is a
// multiple of every kernel's mr.
const (
	kc = 256 // depth of a packed panel
	mc = 96  // rows of A packed at once
	nc = 2048

	maxMR = 12 // largest micro-tile
	maxNR = 32
)

// A microKernel adds the product of an mr-row packed A panel and an nr-column B panel
// over depth k into an mr×nr tile of c (leading dimension ldc), or stores it there when
// set is true (the first panel of a product with beta = 0: c is not read). Row p of the
// B panel is b[p·ldb : p·ldb+nr]: ldb = nr for a packed panel, B's own row stride where
// B is read in place.
//
// With set, a bias (nil, or at least nr values) is added to every row of the stored tile:
// c[i·ldc+j] = Σ + bias[j], the same sum as filling c with the bias and adding the tile.
type microKernel struct {
	name   string
	level  simd.Level // the instructions it needs
	mr, nr int
	packed func(k int, a, b []float32, ldb int, c []float32, ldc int, set bool, bias []float32)
	// direct is packed with A's mr rows read in place at stride lda; nil where the kernel
	// needs A packed.
	direct func(k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, set bool, bias []float32)
	// directT is direct for a transposed A: the mr values of step p are a[p·lda+i];
	// nil where the kernel needs Aᵀ packed.
	directT func(k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, set bool, bias []float32)
	// packATCols and packATRows: sgemm packs a transposed A (the weight gradient Gᵀ·X of a
	// Linear layer) rather than read it in place where the product has at least
	// packATCols columns and packATRows rows (at least mc; packATCols 0: always in place),
	// and, unless packATTall, no more rows than columns.
	// In place, every column panel reads each tile's mr values per step from a new line
	// of A (stride lda); packed (packAT), A's lines are read once per block, and the
	// packed kernel reads them from a contiguous panel. Packing pays where there are
	// enough column panels to share it and where A's stride is long. Measured on an Intel
	// Xeon (family 6 model 167), one core, fraction of the FMA peak, in place against
	// packed by copyAT (bench/PROFILE.md round nineteen): AVX2 1024×256×1024 0.74 → 0.87,
	// 384×384×2048 0.77 → 0.88, 1152×128×2048 0.71 → 0.85, 96×256×1024 0.82 → 0.86, but
	// 256×64×1024 0.85 → 0.80 and 64×64×1024 0.86 → 0.74; AVX-512 1536×384×2048
	// 0.59 → 0.73, 384×1536×2048 0.60 → 0.67, 384×256×1024 0.70 → 0.73, but 256×256×1024
	// 0.74 → 0.70, 1024×128×1024 0.68 → 0.65 and 256×384×1024 0.72 → 0.70 (its kernel
	// is twice as fast per FLOP, so the copy weighs twice as much).
	packATCols, packATRows int
	// packATTall: packsAT also packs products of more rows than columns (m > n); where
	// false, only m ≤ n.
	packATTall bool
	// copyAT, if not nil, is packAT's copy of whole panels (alpha 1): for p < kb and r <
	// panels, dst[r·kb·mr + p·mr ...] = the mr values a[p·lda + r·mr ...].
	copyAT func(kb int, a []float32, lda int, dst []float32, panels int)
	// packsBForT: sgemm packs B's panels rather than read them in place (stridedB) in a
	// product with a transposed A of at least mc rows (a Linear layer's weight gradient
	// Gᵀ·X, whose B is X with a row stride of the layer's width). Measured for the AVX2
	// kernel on Zen 3 (bench/PROFILE.md round fourteen), both cores, fraction of the FMA
	// peak: the mid size's 256×256×2048 weight gradient 0.72 with B in place, 0.82
	// packed; the baby GPT's 384×384×4096 0.69 against 0.82. At 65 rows (the output
	// layer's 65×256×2048) in place stays faster: 0.78 against 0.63. For the AVX-512
	// kernel on an Intel Xeon (family 6 model 167), one core: 256×1024×1024 0.59 in place
	// against 0.74 packed, 384×1536×2048 0.56 against 0.68, the others equal.
	packsBForT bool
	// stridedB: packB may hand this kernel B's full panels in place (row stride ldb).
	// Measured for the assembly kernels (BenchmarkBInPlace); the Go kernel keeps packed
	// panels.
	stridedB bool
	// narrow, if not nil, is a kernel with the same mr and fewer columns (nr) that
	// sgemm uses for products of at most narrow.nr columns, where the wide tile would
	// be part zeros.
	narrow *microKernel
	// transposeB8, if not nil, packs eight rows of a transposed B (vector transposes):
	// dst[p·nr+i] = alpha·b[i·ldb+p] for i < 8, p < 8·blocks. packBPanels does it in Go
	// where it is nil.
	transposeB8 func(blocks int, b []float32, ldb int, dst []float32, nr int, alpha float32)
	// copyRows, if not nil, packs a panel of a plain B: dst[p·nr : p·nr+nr] =
	// b[p·ldb : p·ldb+nr] for p < rows, with vector loads and stores. packBPanels copies
	// row by row in Go where it is nil.
	copyRows func(rows int, b []float32, ldb int, dst []float32, nr int)
	// tails are kernels of fewer rows (ascending), the same columns and both direct
	// forms, for the last rows of a product read in place (macroDirect).
	tails []*microKernel
	// gemvN and gemvT are the products of the gemv path (gemv.go), for k ≤ kc: gemvN sets
	// y[j] = Σ_p x[p]·b[p·ldb+j] for j < n, gemvT c[i·ldc+j] = Σ_p x[i·ldx+p]·b[j·ldb+p]
	// for i < m, j < n; stored if set, else added.
	gemvN func(k, n int, x, b []float32, ldb int, y []float32, set bool)
	gemvT func(m, k, n int, x []float32, ldx int, b []float32, ldb int, c []float32, ldc int, set bool)
}

// tail returns the kernel for the last rows of an m-row product read in place, of which
// rows (< mr) are left, and its row count: the smallest of kr's tails with at least rows
// rows and at most m (computing the last of them, overlapping the tile before), else kr
// itself where m ≥ mr, else nil (m < mr: A's rows are packed).
func (kr *microKernel) tail(m, rows int) (*microKernel, int) {
	for _, t := range kr.tails {
		if t.mr >= rows && t.mr <= m {
			return t, t.mr
		}
	}
	if m >= kr.mr {
		return kr, kr.mr
	}
	return nil, kr.mr
}

// goKernel is the portable kernel, in plain Go.
var goKernel = &microKernel{name: "go", mr: 6, nr: 16, packed: kernelGo, gemvN: gemvNGo, gemvT: gemvTGo}

// active is the kernel Sgemm uses: the best of kernels() that LOCUS_CPU allows (tests
// switch it).
var active = best(kernels(), simd.Current())

// best returns the first of ks (best first) that level l allows.
func best(ks []*microKernel, l simd.Level) *microKernel {
	for _, k := range ks {
		if k.level <= l {
			return k
		}
	}
	return goKernel
}

// Kernel returns the name of the micro-kernel Sgemm uses: avx512, avx2 or go.
func Kernel() string { return active.name }

type workspace struct {
	a   []float32 // mc × kc packed A
	b   []float32 // kc × nc packed B
	tmp [maxMR * maxNR]float32
	t   []float32 // Cᵀ of a flipped product (flips), grown as needed
}

var pool = sync.Pool{New: func() any {
	return &workspace{a: make([]float32, mc*kc), b: make([]float32, kc*nc)}
}}

// Sgemm sets C = alpha·op(A)·op(B) + beta·C where op(A) is m×k and op(B) is k×n, all
// row-major: element (i, j) of A is a[i·lda+j] (of the stored matrix, before op).
// beta = 0 overwrites C without reading it.
func Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	sgemm(active, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

func sgemm(kr *microKernel, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	sgemmBias(kr, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, nil)
}

// fillBias copies bias into each of the m rows of c (the first n columns).
func fillBias(m, n int, bias, c []float32, ldc int) {
	for i := range m {
		copy(c[i*ldc:i*ldc+n], bias[:n])
	}
}

// sgemmBias is sgemm with, where bias is not nil (then alpha = 1 and beta = 0), the bias
// added to every row of C: by the micro-kernels as they store the first depth panel's
// tiles, or, on the paths that store no tiles (depth 0, the gemv rows, a flipped
// product), by filling C with it and adding the product (beta = 1), which gives the
// same bits.
func sgemmBias(kr *microKernel, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int, bias []float32) {
	if m == 0 || n == 0 {
		return
	}
	if k == 0 || alpha == 0 {
		scaleC(m, n, beta, c, ldc)
		if bias != nil {
			fillBias(m, n, bias, c, ldc)
		}
		return
	}
	if useGemv && kr.gemvN != nil && m <= gemvRows(transB) {
		if bias != nil {
			fillBias(m, n, bias, c, ldc)
			beta = 1
		}
		gemv(kr, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	fb := beta // the flipped product's beta: 1 where it adds to C filled with the bias
	if bias != nil {
		fb = 1
	}
	if flips(kr, transA, transB, m, n, k, alpha, fb) {
		if bias != nil {
			fillBias(m, n, bias, c, ldc)
		}
		sgemmFlipped(kr, m, n, k, a, lda, b, ldb, fb, c, ldc)
		return
	}
	if kr.narrow != nil && n <= kr.narrow.nr {
		kr = kr.narrow
	}
	// With beta = 0 the first depth panel stores its tiles (C is neither cleared nor
	// read); every later panel adds.
	setC := beta == 0
	if !setC {
		scaleC(m, n, beta, c, ldc)
	}
	// alpha scales the operand that is packed: B where A is read in place (B is then
	// packed whole), else A.
	directA := readsAInPlace(kr, transA, m, n)
	alphaA, alphaB := alpha, float32(1)
	if directA {
		alphaA, alphaB = 1, alpha
	}
	bInPlaceOK := m <= maxRowsBInPlace && !(kr.packsBForT && transA && m >= mc)
	ws := pool.Get().(*workspace)
	for jc := 0; jc < n; jc += nc {
		nb := min(nc, n-jc)
		for pc := 0; pc < k; pc += kc {
			kb := min(kc, k-pc)
			bp := packB(kr, transB, b, ldb, pc, jc, kb, nb, bInPlaceOK, alphaB, ws.b)
			var bias0 []float32 // the bias, added where the first depth panel stores C
			if pc == 0 {
				bias0 = sub(bias, jc)
			}
			if directA {
				// A is read in place by the micro-kernel; only edge rows are packed.
				macroDirect(kr, transA, m, nb, kb, ws, a, lda, pc, bp, c[jc:], ldc, setC && pc == 0, bias0)
				continue
			}
			for ic := 0; ic < m; ic += mc {
				mb := min(mc, m-ic)
				packA(kr, transA, a, lda, ic, pc, mb, kb, alphaA, ws.a)
				macro(kr, mb, nb, kb, ws, bp, c[ic*ldc+jc:], ldc, setC && pc == 0, bias0)
			}
		}
	}
	pool.Put(ws)
}

// flips reports whether sgemm computes the product C = A·Bᵀ (alpha 1) as its transpose
// Cᵀ = B·Aᵀ (sgemmFlipped). A transposed B is packed by transposes, n·k values; the
// flipped product reads B in place as its A and packs Aᵀ, m·k values, and transposes C
// into a scratch Cᵀ and back (m·n values each way; one way when beta = 0). It flips when
// that moves fewer values: a Linear forward x·Wᵀ of few rows and many outputs (the DAE's
// 64×256×784 and 64×784×256 in 2 parts) packs x instead of the weight.
func flips(kr *microKernel, transA, transB bool, m, n, k int, alpha, beta float32) bool {
	if !flipNT || !transB || transA || alpha != 1 || kr.direct == nil || kr.transposeB8 == nil || m >= n {
		return false
	}
	moved := m*k + m*n
	if beta != 0 {
		moved += m * n
	}
	return moved < n*k
}

// flipNT lets sgemm flip products (tests switch it off to compare).
var flipNT = true

// sgemmFlipped sets C = A·Bᵀ + beta·C (A m×k, B n×k, as stored) by computing Cᵀ = B·Aᵀ +
// beta·Cᵀ into a scratch n×m matrix and transposing it into C. Every element is the same
// sum in the same order (the kernels sum over the depth in order, panel by panel, and
// scale, store or add C the same way in either orientation), so the result has the same
// bits as the unflipped product.
func sgemmFlipped(kr *microKernel, m, n, k int, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	ws := pool.Get().(*workspace)
	if cap(ws.t) < m*n {
		ws.t = make([]float32, m*n)
	}
	t := ws.t[:m*n]
	if beta != 0 {
		transpose(kr, m, n, c, ldc, t, m)
	}
	sgemm(kr, false, true, n, m, k, 1, b, ldb, a, lda, beta, t, m)
	transpose(kr, n, m, t, m, c, ldc)
	pool.Put(ws)
}

// transpose sets dst[j·ldd + i] = src[i·lds + j] for i < rows, j < cols, eight rows at a
// time by the kernel's vector transposes.
func transpose(kr *microKernel, rows, cols int, src []float32, lds int, dst []float32, ldd int) {
	blocks := cols / 8
	i := 0
	for ; i+8 <= rows && blocks > 0; i += 8 {
		kr.transposeB8(blocks, src[i*lds:], lds, dst[i:], ldd, 1)
		for j := blocks * 8; j < cols; j++ {
			for r := i; r < i+8; r++ {
				dst[j*ldd+r] = src[r*lds+j]
			}
		}
	}
	for ; i < rows; i++ {
		for j, v := range src[i*lds : i*lds+cols] {
			dst[j*ldd+i] = v
		}
	}
}

// readsAInPlace reports whether kr reads op(A) of an m×n product without packing it.
func readsAInPlace(kr *microKernel, transA bool, m, n int) bool {
	if !transA {
		return kr.direct != nil
	}
	if kr.directT == nil {
		return false
	}
	switch transAChoice {
	case transAInPlace:
		return true
	case transAPacked:
		return false
	}
	return !kr.packsAT(m, n)
}

// packsAT reports whether kr packs a transposed A of an m×n product rather than read it in
// place (kr.packATCols, kr.packATRows).
func (kr *microKernel) packsAT(m, n int) bool {
	return kr.packATCols > 0 && n >= kr.packATCols && m >= max(mc, kr.packATRows) && (kr.packATTall || m <= n)
}

// transAChoice overrides packsAT (tests and BenchmarkDirectBlocks compare the two ways).
var transAChoice = transAByRule

const (
	transAByRule = iota
	transAInPlace
	transAPacked
)

func scaleC(m, n int, beta float32, c []float32, ldc int) {
	if beta == 1 {
		return
	}
	for i := range m {
		row := c[i*ldc : i*ldc+n]
		if beta == 0 {
			clear(row)
			continue
		}
		for j := range row {
			row[j] *= beta
		}
	}
}

// copyN copies len(dst) (one of the tile sizes) values of src into dst.
func copyN(dst, src []float32) {
	switch len(dst) {
	case 6:
		*(*[6]float32)(dst) = *(*[6]float32)(src)
	case 12:
		*(*[12]float32)(dst) = *(*[12]float32)(src)
	case 16:
		*(*[16]float32)(dst) = *(*[16]float32)(src)
	case 32:
		*(*[32]float32)(dst) = *(*[32]float32)(src)
	default:
		copy(dst, src[:len(dst)])
	}
}

// packA packs rows ic..ic+mb−1, columns pc..pc+kb−1 of op(A), times alpha, into panels
// of mr rows: panel r holds, for each p, the mr values op(A)[ic+r·mr+i, pc+p]; missing
// rows are zero.
func packA(kr *microKernel, trans bool, a []float32, lda, ic, pc, mb, kb int, alpha float32, dst []float32) {
	if trans {
		packAT(kr, a, lda, ic, pc, mb, kb, alpha, dst)
		return
	}
	mr := kr.mr
	for r := 0; r < mb; r += mr {
		rows := min(mr, mb-r)
		panel := dst[r*kb : r*kb+mr*kb]
		if mr == 6 && rows == mr && alpha == 1 {
			// The common case: six contiguous rows.
			base := (ic+r)*lda + pc
			a0, a1, a2 := a[base:base+kb], a[base+lda:base+lda+kb], a[base+2*lda:base+2*lda+kb]
			a3, a4, a5 := a[base+3*lda:base+3*lda+kb], a[base+4*lda:base+4*lda+kb], a[base+5*lda:base+5*lda+kb]
			for p := range kb {
				q := panel[p*6 : p*6+6 : p*6+6]
				q[0], q[1], q[2], q[3], q[4], q[5] = a0[p], a1[p], a2[p], a3[p], a4[p], a5[p]
			}
			continue
		}
		for i := range mr {
			if i >= rows {
				for p := range kb {
					panel[p*mr+i] = 0
				}
				continue
			}
			row := a[(ic+r+i)*lda+pc : (ic+r+i)*lda+pc+kb]
			if alpha == 1 {
				for p, v := range row {
					panel[p*mr+i] = v
				}
				continue
			}
			for p, v := range row {
				panel[p*mr+i] = alpha * v
			}
		}
	}
}

// packAT is packA for op(A) = Aᵀ: op(A)[i, p] = a[p·lda + i], so row p of the stored A holds
// step p of every panel. It walks the stored rows once, each as one contiguous run of mb
// values dealt out to the panels: a panel at a time would read every row mb/mr times at
// stride lda, which on an 8-way L2 with a large power-of-two-ish stride (lda 1536 for the
// baby GPT's d_ff) keeps evicting the lines it is about to reuse. Where the kernel has
// copyAT (alpha 1), that copies the whole panels and the loop here only the last partial
// one.
func packAT(kr *microKernel, a []float32, lda, ic, pc, mb, kb int, alpha float32, dst []float32) {
	mr := kr.mr
	full := mb / mr * mr
	copied := 0 // the rows of A (panels' values) already copied by copyAT
	if kr.copyAT != nil && alpha == 1 && full > 0 {
		kr.copyAT(kb, a[pc*lda+ic:], lda, dst, full/mr)
		copied = full
	}
	for p := range kb {
		src := a[(pc+p)*lda+ic : (pc+p)*lda+ic+mb]
		for r := copied; r < full; r += mr {
			q := dst[r*kb+p*mr : r*kb+p*mr+mr]
			if mr == 6 && alpha == 1 {
				// Element by element: copyN's six-value array copy is a call to memmove,
				// which took most of the packing's time.
				v := src[r : r+6 : r+6]
				q = q[:6:6]
				q[0], q[1], q[2], q[3], q[4], q[5] = v[0], v[1], v[2], v[3], v[4], v[5]
				continue
			}
			if mr == 12 && alpha == 1 {
				// Three 16-byte moves; copyN's 48-byte array copy is a call to memmove.
				v := src[r : r+12 : r+12]
				*(*[4]float32)(q[0:4]) = *(*[4]float32)(v[0:4])
				*(*[4]float32)(q[4:8]) = *(*[4]float32)(v[4:8])
				*(*[4]float32)(q[8:12]) = *(*[4]float32)(v[8:12])
				continue
			}
			if alpha == 1 {
				copyN(q, src[r:])
				continue
			}
			for i, v := range src[r : r+mr] {
				q[i] = alpha * v
			}
		}
		if full == mb {
			continue
		}
		q := dst[full*kb+p*mr : full*kb+p*mr+mr]
		for i := range q {
			q[i] = 0
			if full+i < mb {
				q[i] = alpha * src[full+i]
			}
		}
	}
}

// bPanels says where the nr-column panels of a kb×nb block of op(B) are: panel s (the
// columns s..s+nr−1) is read in place, at b[s:] with row stride ldb, for s < inPlace,
// and packed, at packed[(s−inPlace)·kb:] with row stride nr, from there on.
type bPanels struct {
	b       []float32
	ldb     int
	inPlace int
	packed  []float32
}

// bInPlace lets packB read a plain B's full panels in place (tests switch it off to
// compare with packing every panel).
var bInPlace = true

// panel returns panel s and its row stride.
func (bp bPanels) panel(s, kb, nr int) ([]float32, int) {
	if s < bp.inPlace {
		return bp.b[s:], bp.ldb
	}
	return bp.packed[(s-bp.inPlace)*kb:], nr
}

// maxRowsBInPlace is the most rows of C (m) for which packB reads B in place. A packed
// panel is contiguous and stays in L1 while every row tile of A passes over it; B's rows
// in place lie at stride ldb, and strides of a multiple of 256 bytes fall into a few
// cache sets. Thread CPU time per product (AVX2 and AVX-512, 7 alternating rounds): in
// place 8–25% faster for m ≤ 256 (the DAE, Linear weight gradients, attention heads),
// 3–6% slower at m = 784 and 2048 (the input gradients of charlm's Linear layers).
const maxRowsBInPlace = 512

// packB prepares rows pc..pc+kb−1, columns jc..jc+nb−1 of alpha·op(B). Where op(B) = B
// (not transposed), alpha = 1, the kernel reads B fast at a stride (stridedB) and the
// product allows it (inPlace: m ≤ maxRowsBInPlace, and not kr.packsBForT's case), its
// full nr-column panels are read in place, as their rows are already contiguous nr
// values, and only a last partial panel is packed into dst (zero-padded to nr columns);
// otherwise every panel is packed (packBPanels).
func packB(kr *microKernel, trans bool, b []float32, ldb, pc, jc, kb, nb int, inPlace bool, alpha float32, dst []float32) bPanels {
	nr := kr.nr
	if trans || alpha != 1 || !kr.stridedB || !inPlace || !bInPlace {
		packBPanels(kr, trans, b, ldb, pc, jc, kb, nb, alpha, dst)
		return bPanels{packed: dst}
	}
	full := nb / nr * nr
	if full < nb {
		packBPanels(kr, false, b, ldb, pc, jc+full, kb, nb-full, 1, dst)
	}
	return bPanels{b: b[pc*ldb+jc:], ldb: ldb, inPlace: full, packed: dst}
}

// packBPanels packs rows pc..pc+kb−1, columns jc..jc+nb−1 of alpha·op(B) into panels of
// kr.nr columns: panel s holds, for each p, the nr values alpha·op(B)[pc+p, jc+s·nr+j];
// missing columns are zero.
func packBPanels(kr *microKernel, trans bool, b []float32, ldb, pc, jc, kb, nb int, alpha float32, dst []float32) {
	nr := kr.nr
	for s := 0; s < nb; s += nr {
		cols := min(nr, nb-s)
		panel := dst[s*kb : s*kb+nr*kb]
		if !trans {
			if cols == nr && alpha == 1 && kr.copyRows != nil {
				kr.copyRows(kb, b[pc*ldb+jc+s:], ldb, panel, nr)
				continue
			}
			for p := range kb {
				q := panel[p*nr : p*nr+nr]
				src := b[(pc+p)*ldb+jc+s:]
				switch {
				case alpha != 1:
					for j, v := range src[:cols] {
						q[j] = alpha * v
					}
				case cols == nr:
					copyN(q, src)
					continue
				default:
					copy(q, src[:cols])
				}
				clear(q[cols:])
			}
			continue
		}
		// op(B) = Bᵀ: op(B)[p, j] = b[j·ldb + p]; walk the stored rows, eight or four at
		// a time (eight by 8×8 vector transposes where the kernel has them, for the
		// depths of whole blocks of eight).
		j := 0
		for ; j+8 <= cols; j += 8 {
			base := (jc+s+j)*ldb + pc
			p0 := 0
			if kr.transposeB8 != nil {
				p0 = kb / 8 * 8
				kr.transposeB8(kb/8, b[base:], ldb, panel[j:], nr, alpha)
			}
			r0, r1 := b[base:base+kb], b[base+ldb:base+ldb+kb]
			r2, r3 := b[base+2*ldb:base+2*ldb+kb], b[base+3*ldb:base+3*ldb+kb]
			r4, r5 := b[base+4*ldb:base+4*ldb+kb], b[base+5*ldb:base+5*ldb+kb]
			r6, r7 := b[base+6*ldb:base+6*ldb+kb], b[base+7*ldb:base+7*ldb+kb]
			for p := p0; p < kb; p++ {
				q := panel[p*nr+j : p*nr+j+8 : p*nr+j+8]
				q[0], q[1], q[2], q[3] = alpha*r0[p], alpha*r1[p], alpha*r2[p], alpha*r3[p]
				q[4], q[5], q[6], q[7] = alpha*r4[p], alpha*r5[p], alpha*r6[p], alpha*r7[p]
			}
		}
		for ; j+4 <= cols; j += 4 {
			base := (jc+s+j)*ldb + pc
			r0, r1 := b[base:base+kb], b[base+ldb:base+ldb+kb]
			r2, r3 := b[base+2*ldb:base+2*ldb+kb], b[base+3*ldb:base+3*ldb+kb]
			for p := range kb {
				q := panel[p*nr+j : p*nr+j+4 : p*nr+j+4]
				q[0], q[1], q[2], q[3] = alpha*r0[p], alpha*r1[p], alpha*r2[p], alpha*r3[p]
			}
		}
		for ; j < nr; j++ {
			if j >= cols {
				for p := range kb {
					panel[p*nr+j] = 0
				}
				continue
			}
			row := b[(jc+s+j)*ldb+pc : (jc+s+j)*ldb+pc+kb]
			for p, v := range row {
				panel[p*nr+j] = alpha * v
			}
		}
	}
}

// sub is bias from column j on, or nil without a bias.
func sub(bias []float32, j int) []float32 {
	if bias == nil {
		return nil
	}
	return bias[j:]
}

// addTile adds the rows×cols corner of t (row stride nr) into c (ldc), or copies it
// there if set, plus bias[j] where bias is not nil.
func addTile(rows, cols, nr int, t, c []float32, ldc int, set bool, bias []float32) {
	for i := range rows {
		dst := c[i*ldc : i*ldc+cols]
		if set && bias != nil {
			for j, v := range t[i*nr : i*nr+cols] {
				dst[j] = v + bias[j]
			}
			continue
		}
		if set {
			copy(dst, t[i*nr:i*nr+cols])
			continue
		}
		for j, v := range t[i*nr : i*nr+cols] {
			dst[j] += v
		}
	}
}

// macro multiplies the packed mb×kb block of A by the kb×nb block of B (bp), adding
// into c (ldc), or storing it there if set.
func macro(kr *microKernel, mb, nb, kb int, ws *workspace, bp bPanels, c []float32, ldc int, set bool, bias []float32) {
	mr, nr := kr.mr, kr.nr
	for s := 0; s < nb; s += nr {
		cols := min(nr, nb-s)
		b, ldb := bp.panel(s, kb, nr)
		for r := 0; r < mb; r += mr {
			rows := min(mr, mb-r)
			ap := ws.a[r*kb:]
			if rows == mr && cols == nr {
				kr.packed(kb, ap, b, ldb, c[r*ldc+s:], ldc, set, sub(bias, s))
				continue
			}
			t := ws.tmp[:mr*nr]
			kr.packed(kb, ap, b, ldb, t, nr, true, nil)
			addTile(rows, cols, nr, t, c[r*ldc+s:], ldc, set, sub(bias, s))
		}
	}
}

// macroDirect is macro with op(A) (alpha 1) read in place from rows 0..m−1, columns
// pc..pc+kb−1 (of a, or of aᵀ if trans), in blocks of directRows(kb) rows (the last block
// takes the rows left over), each block one column panel of B at a time (panelDirect). A
// last panel of at most narrow.nr columns (n = 65 or 784 with 32-column panels) is
// computed by the narrow kernel, which reads the first columns of the packed panel, where
// m is at least both kernels' rows (so that neither packs A's rows).
func macroDirect(kr *microKernel, trans bool, m, nb, kb int, ws *workspace, a []float32, lda, pc int, bp bPanels, c []float32, ldc int, set bool, bias []float32) {
	nr := kr.nr
	if tk, _ := kr.tail(m, m%kr.mr); tk == nil {
		packA(kr, trans, a, lda, 0, pc, m, kb, 1, ws.a)
	}
	edge := kr.narrow
	if edge != nil && (m < edge.mr || m < kr.mr) {
		edge = nil
	}
	rows := directRows(kb)
	chunks := max(1, m/rows)
	for ch := range chunks {
		lo, hi := ch*rows, (ch+1)*rows
		if ch == chunks-1 {
			hi = m
		}
		aa := a[lo:] // Aᵀ's rows are A's columns
		if !trans {
			aa = a[lo*lda:]
		}
		cc := c[lo*ldc:]
		for s := 0; s < nb; s += nr {
			cols := min(nr, nb-s)
			b, ldb := bp.panel(s, kb, nr)
			k := kr
			if edge != nil && cols <= edge.nr {
				k = edge
			}
			panelDirect(k, trans, hi-lo, cols, kb, ws, aa, lda, pc, b, ldb, cc[s:], ldc, set, sub(bias, s))
		}
	}
}

// directABytes bounds the block of A that macroDirect runs every column panel over: A read
// in place is not packed into an L2-sized block (ws.a), so a block of it must stay in L2
// across the panels on its own. Over the whole of a 2048-row A (2 MiB at depth 256) each
// panel streamed A from L3: the baby GPT's 2048×1536×384 forward product ran at 0.62 of
// the FMA peak on a Zen 3 core (512 KiB L2) and at 0.80 in 96-row blocks
// (BenchmarkDirectBlocks, median of 5; bench/PROFILE.md round thirteen has every product).
const directABytes = 96 * 256 * 4

// directRows is the rows of A in one block of macroDirect at depth kb: directABytes of A,
// in whole tiles of every kernel (a multiple of 12), at least 96.
func directRows(kb int) int {
	if !blockDirect {
		return 1 << 30
	}
	return max(96, directABytes/(4*kb)/12*12)
}

// blockDirect lets macroDirect block A's rows (tests and BenchmarkDirectBlocks switch it
// off to compare).
var blockDirect = true

// panelDirect computes the m×cols block of C for one column panel b (row stride ldb) of
// B by kernel kr, with op(A) read in place as in macroDirect. A last partial tile of rows
// is computed by the smallest of the kernel's tails that covers it (kr.tail), where it has
// more rows than are left, as its tile of the last rows (overlapping the tile before it)
// into a scratch tile of which only its new rows go to c; where m is below every fitting
// kernel's rows, from A's rows packed by macroDirect.
func panelDirect(kr *microKernel, trans bool, m, cols, kb int, ws *workspace, a []float32, lda, pc int, b []float32, ldb int, c []float32, ldc int, set bool, bias []float32) {
	mr, nr := kr.mr, kr.nr
	direct, at := kr.direct, func(r int) []float32 { return a[r*lda+pc:] }
	if trans {
		direct, at = kr.directT, func(r int) []float32 { return a[pc*lda+r:] }
	}
	full := m / mr * mr // rows in full tiles
	for r := 0; r < full; r += mr {
		if cols == nr {
			direct(kb, at(r), lda, b, ldb, c[r*ldc:], ldc, set, bias)
			continue
		}
		t := ws.tmp[:mr*nr]
		direct(kb, at(r), lda, b, ldb, t, nr, true, nil)
		addTile(mr, cols, nr, t, c[r*ldc:], ldc, set, bias)
	}
	rem := m - full
	if rem == 0 {
		return
	}
	tk, tmr := kr.tail(m, rem)
	if tk == nil { // m < mr: A's rows are packed in ws.a
		t := ws.tmp[:mr*nr]
		kr.packed(kb, ws.a, b, ldb, t, nr, true, nil)
		addTile(rem, cols, nr, t, c, ldc, set, bias)
		return
	}
	tail := tk.direct
	if trans {
		tail = tk.directT
	}
	if rem == tmr && cols == nr {
		tail(kb, at(full), lda, b, ldb, c[full*ldc:], ldc, set, bias)
		return
	}
	// Rows m−tmr..m−1; the first tmr−rem of them belong to the tile before.
	t := ws.tmp[:tmr*nr]
	tail(kb, at(m-tmr), lda, b, ldb, t, nr, true, nil)
	addTile(rem, cols, nr, t[(tmr-rem)*nr:], c[full*ldc:], ldc, set, bias)
}

// kernelGo is the portable micro-kernel: c[6×16] (ldc) += a-panel · b-panel (ldb) over k
// (= if set). It walks the tile in blocks of 2 rows × 4 columns whose eight sums stay in
// registers over the whole depth (summing over p in order, as every kernel); a 6×16 array
// of sums in memory would make each step load, add and store every sum.
func kernelGo(k int, a, b []float32, ldb int, c []float32, ldc int, set bool, bias []float32) {
	const mr, nr = 6, 16
	a = a[:k*mr]
	b = b[:(k-1)*ldb+nr]
	for i := 0; i < mr; i += 2 {
		for j := 0; j < nr; j += 4 {
			var c00, c01, c02, c03, c10, c11, c12, c13 float32
			for p := range k {
				ap := (*[2]float32)(a[p*mr+i:])
				bp := (*[4]float32)(b[p*ldb+j:])
				a0, a1 := ap[0], ap[1]
				b0, b1, b2, b3 := bp[0], bp[1], bp[2], bp[3]
				c00 += a0 * b0
				c01 += a0 * b1
				c02 += a0 * b2
				c03 += a0 * b3
				c10 += a1 * b0
				c11 += a1 * b1
				c12 += a1 * b2
				c13 += a1 * b3
			}
			r0 := (*[4]float32)(c[i*ldc+j:])
			r1 := (*[4]float32)(c[(i+1)*ldc+j:])
			if set && bias != nil {
				bv := (*[4]float32)(bias[j:])
				*r0 = [4]float32{c00 + bv[0], c01 + bv[1], c02 + bv[2], c03 + bv[3]}
				*r1 = [4]float32{c10 + bv[0], c11 + bv[1], c12 + bv[2], c13 + bv[3]}
				continue
			}
			if set {
				*r0 = [4]float32{c00, c01, c02, c03}
				*r1 = [4]float32{c10, c11, c12, c13}
				continue
			}
			r0[0] += c00
			r0[1] += c01
			r0[2] += c02
			r0[3] += c03
			r1[0] += c10
			r1[1] += c11
			r1[2] += c12
			r1[3] += c13
		}
	}
}

// Parallel is Sgemm split over up to GOMAXPROCS goroutines (internal/par) by rows of C (or by columns
// when C has few rows); small products run serially.
func Parallel(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	parallel(active, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// ParallelBias sets C = op(A)·op(B) + bias, bias (n values) added to every row of C (a
// Linear layer's x·Wᵀ + b), split as Parallel splits Sgemm. The kernels add the bias to
// the tiles they store (C is neither filled first nor read), with the same bits as filling
// C with the bias and adding the product (Parallel with beta = 1).
func ParallelBias(transA, transB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, bias, c []float32, ldc int) {
	parallelBias(active, transA, transB, m, n, k, 1, a, lda, b, ldb, 0, c, ldc, bias[:n])
}

func parallel(kr *microKernel, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	parallelBias(kr, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, nil)
}

func parallelBias(kr *microKernel, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int, bias []float32) {
	workers := runtime.GOMAXPROCS(0)
	// Where the pool is busy (inside a batch part of autodiff.Model's step, every part a
	// chunk of one section), the parts would run one after the other here, and a split
	// would only repeat packing: all of op(B) per row part, all of op(A) per column part
	// (a weight gradient's packed Aᵀ, twice). Each element's sum is the same either way.
	if workers <= 1 || m*n*k < 1<<18 || par.Busy() {
		sgemmBias(kr, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, bias)
		return
	}
	mr, nr := kr.mr, kr.nr
	// Splitting rows makes every worker pack all of op(B); splitting columns makes every
	// worker pack all of op(A), which costs nothing when A is read in place.
	directA := readsAInPlace(kr, transA, m, n)
	splitRows := m >= workers*mr*2 && (n < workers*nr*2 || (!directA && n*4 < m))
	if splitRows {
		// Equal parts, rounded up to whole tiles: of the smallest tail kernel's rows
		// where the kernel has tails (64 rows: 32 + 32 rather than 36 + 28).
		g := mr
		if kn := kr.narrow; kn != nil && n <= kn.nr {
			g = kn.mr
			kr = kn
		}
		if len(kr.tails) > 0 {
			g = kr.tails[0].mr
		}
		chunk := ((m+workers-1)/workers + g - 1) / g * g
		par.For(m, chunk, func(lo, hi int) {
			var aa []float32
			if transA {
				aa = a[lo:]
			} else {
				aa = a[lo*lda:]
			}
			sgemmBias(kr, transA, transB, hi-lo, n, k, alpha, aa, lda, b, ldb, beta, c[lo*ldc:], ldc, bias)
		})
	} else {
		// Whole tiles, rounded down: the columns left over (784 = 2·384 + 16) are one
		// more chunk, which the first part to finish takes (a 16-column panel is the
		// narrow kernel's, half a tile), where rounding up would give one part a whole
		// tile more (416 + 368: 13 tiles against 11.5).
		chunk := n / workers / nr * nr
		if chunk == 0 {
			chunk = nr
		}
		par.For(n, chunk, func(lo, hi int) {
			var bb []float32
			if transB {
				bb = b[lo*ldb:]
			} else {
				bb = b[lo:]
			}
			sgemmBias(kr, transA, transB, m, hi-lo, k, alpha, a, lda, bb, ldb, beta, c[lo:], ldc, sub(bias, lo))
		})
	}
}

// Dgemm is the float64 counterpart of Sgemm, a plain loop for gradient checks and other
// float64 graphs (not tuned).
func Dgemm(transA, transB bool, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	for i := range m {
		row := c[i*ldc : i*ldc+n]
		if beta == 0 {
			clear(row)
		} else if beta != 1 {
			for j := range row {
				row[j] *= beta
			}
		}
		for p := range k {
			var av float64
			if transA {
				av = a[p*lda+i]
			} else {
				av = a[i*lda+p]
			}
			av *= alpha
			if transB {
				for j := range row {
					row[j] += av * b[j*ldb+p]
				}
			} else {
				br := b[p*ldb : p*ldb+n]
				for j, bv := range br {
					row[j] += av * bv
				}
			}
		}
	}
}

// A peakLoop is an FMA loop run n times (fn(n)) doing flops float32 operations each time:
// the benchmarks' measure of the core's peak.
type peakLoop struct {
	fn    func(n int)
	flops int
}
