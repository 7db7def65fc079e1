//lint:file-ignore U1000 rows64[T]'s methods are called through the generic interface pairRows[T], which staticcheck's unused check does not follow (dominikh/go-tools#1440); go vet and the tests see them.

package autodiff

import (
	"math"

	"github.com/locusml/locus/autodiff/internal/vmath"
)

// PairKernel32 is a PairKernel that also evaluates a row of pairs in float32, in place:
// KernelAttention's float32 runs take it for a kernel that reads one term (the dot
// product or the squared distance) and has no parameters θ of its own, instead of
// converting every pair to float64 and back. The float64 methods stay the reference
// (float64 runs and gradient checks use them).
type PairKernel32 interface {
	PairKernel
	// PairScores32 sets s[j] to the log-score at bandwidth h of the pair whose term is
	// x[j], the one that PairTerms names (no meaning for a kernel that reads none; the
	// distance for a DistancePairKernel32): −Inf outside the support. s may be x.
	PairScores32(s, x []float32, h float32)
	// PairGrads32 replaces each score gradient g[j] by g[j]·∂s_j/∂x_j at the pair terms x
	// (PairScores32's) and returns Σ_j g[j]·∂s_j/∂h. Where g[j] is 0 the result is 0,
	// never NaN.
	PairGrads32(g, x []float32, h float32) (gh float64)
}

// LinearPairKernel32 is a PairKernel32 whose log-score is a factor c(h) times its pair
// term (PairScores32 sets s = c(h)·x with Scale32, and PairGrads32 gives g·c(h) and
// c′(h)·Σ g·x): KernelAttention folds the factor into its vector loops (the largest score
// with the products, the exponentials, the coefficients) instead of passes of its own.
type LinearPairKernel32 interface {
	PairKernel32
	// PairFactor32 returns c(h), the factor PairScores32 multiplies by, and dc = c′(h).
	PairFactor32(h float32) (c float32, dc float64)
}

// DirectPairKernel32 is a DirectPairKernel with float32 rows: KernelAttention's float32
// runs normalise its values as DirectPairKernel's do.
type DirectPairKernel32 interface {
	DirectPairKernel
	PairKernel32
	// PairValues32 sets k[j] to the kernel's value K = exp(score) in [0, 1] of the pair
	// whose term is x[j], 0 outside the support. k may be x.
	PairValues32(k, x []float32, h float32)
}

// RationalPairKernel32 is a DirectPairKernel32 of the squared distance x whose value is
// 1/(1 + x/a(h)) (Cauchy's, a = h²): PairValues32 is Recip1p32 at 1/a, PairGrads32 turns g
// into −g/(a + x) with RatioGrad32 and gives a′(h)/a(h)·Σ g/(a + x)·x. KernelAttention's
// fused mixture loops form its values and gradients beside a linear component's.
type RationalPairKernel32 interface {
	DirectPairKernel32
	// PairRatio32 returns a(h) and a′(h)/a(h).
	PairRatio32(h float32) (a float32, dlog float64)
}

// DistancePairKernel32 is a PairKernel32 of the squared distance whose float32 rows read
// the distance r = ‖q − k‖ itself as their term x, and whose PairGrads32 gives
// g·∂s/∂r: KernelAttention takes the square roots and turns ∂L/∂r into
// ∂L/∂r² = ∂L/∂r / (2r) (0 at r = 0, the zero subgradient) in vector loops, so that the
// kernel's own loops need neither (Laplacian and tricube kernels).
type DistancePairKernel32 interface {
	PairKernel32
	// PairDistance32 marks the kernel; it does nothing.
	PairDistance32()
}

// ScaleDot32 sets g[i] = c·g[i] and returns Σ g[i]·x[i] over the g it was given, on
// vector loops where the CPU has them (the same result on every path): PairGrads32 of a
// kernel whose log-score is c times its pair term, Σ g·x giving the bandwidth's share.
func ScaleDot32(g, x []float32, c float32) float64 { return float64(vmath.ScaleDot(g, x, c)) }

// Scale32 sets dst[i] = c·x[i] on vector loops where the CPU has them (the same result
// on every path), dst no longer than x: PairScores32 of a kernel whose log-score is c
// times its pair term. dst may be x.
func Scale32(dst, x []float32, c float32) { vmath.ScaleTo(dst, x, c) }

// Recip1p32 sets k[j] = 1/(1 + c·x[j]) on vector loops where the CPU has them (the same
// result on every path), k no longer than x (k may be x): PairValues32 of a kernel of
// that form (Cauchy's).
func Recip1p32(k, x []float32, c float32) { vmath.Recip1p(k, x, c) }

// RatioGrad32 sets f = g[j]/(a + x[j]) and g[j] = −f, and returns Σ f·x[j], on vector
// loops where the CPU has them (the same result on every path): PairGrads32 of a kernel
// whose log-score is −log(a + x) + const (Cauchy's, a = h²).
func RatioGrad32(g, x []float32, a float32) float64 { return float64(vmath.RatioGrad(g, x, a)) }

// kernel32 is a PairKernel32 with what its float32 rows need to know of it: the term it
// reads, whether it gives values (DirectPairKernel32), and its factor when it is a
// LinearPairKernel32 (kept for the bandwidth last asked for).
type kernel32 struct {
	kern      PairKernel32
	direct    DirectPairKernel32   // non-nil: its values, not its scores
	lin       LinearPairKernel32   // non-nil: its log-scores are a factor times its term
	rat       RationalPairKernel32 // non-nil (and lin nil): its values are 1/(1 + x/a(h))
	dot, dist bool                 // the term it reads
	radial    bool                 // a DistancePairKernel32: the distance, not its square
	kind      vmath.Term           // the term, for LinearCoefs
	f, fh     float32              // factor's c(h) (a rational kernel's a(h)) and h
	df        float64              // factor's c′(h) (a′(h)/a(h))
	fok       bool                 // f and df hold for fh
}

func newKernel32(kern PairKernel32) kernel32 {
	k := kernel32{kern: kern}
	k.direct, _ = kern.(DirectPairKernel32)
	k.lin, _ = kern.(LinearPairKernel32)
	k.dot, k.dist = kern.PairTerms()
	_, k.radial = kern.(DistancePairKernel32)
	k.radial = k.radial && k.dist
	if r, ok := kern.(RationalPairKernel32); ok && k.lin == nil && k.dist && !k.dot && !k.radial {
		k.rat = r
	}
	switch {
	case k.radial:
		k.kind = vmath.TermDist
	case k.dist:
		k.kind = vmath.TermSqDist
	}
	return k
}

// terms forms in dst the term the kernel reads of query t's pairs with keys
// lo..lo+len(dst)−1 from their dot products dots (dst may be dots; qq and kk the
// problem's squared norms, read only for distances): the squared distances, the
// distances for a DistancePairKernel32, or dots itself; false for a kernel that reads
// neither (dst is then left alone).
func (k *kernel32) terms(dst, dots, qq, kk []float32, t, lo int) ([]float32, bool) {
	switch {
	case k.radial:
		vmath.Dist(dst, dots, qq[t], kk[lo:lo+len(dst)])
	case k.dist:
		vmath.SqDist(dst, dots, qq[t], kk[lo:lo+len(dst)])
	case k.dot:
		return dots[:len(dst)], true
	default:
		return dst, false
	}
	return dst, true
}

// linearTerm says whether the kernel is linear in one term (the dot product or a
// distance), the components the fused mixture loops take for either place.
func (k *kernel32) linearTerm() bool { return k.lin != nil && (k.dot || k.dist) }

// comp returns a linear or rational kernel at bandwidth h for the fused mixture loops.
func (k *kernel32) comp(h float32) vmath.Comp {
	f, _ := k.factor(h)
	if k.rat != nil {
		return vmath.Comp{C: 1 / f, A: f, Term: vmath.TermSqDist, Rational: true}
	}
	return vmath.Comp{C: f, Term: k.kind}
}

// factor returns a linear kernel's factor c(h) and its derivative, or a rational
// kernel's a(h) and a′(h)/a(h).
func (k *kernel32) factor(h float32) (float32, float64) {
	if h != k.fh || !k.fok {
		if k.rat != nil {
			k.f, k.df = k.rat.PairRatio32(h)
		} else {
			k.f, k.df = k.lin.PairFactor32(h)
		}
		k.fh, k.fok = h, true
	}
	return k.f, k.df
}

// factor1 is factor's c(h) alone.
func (k *kernel32) factor1(h float32) float32 {
	f, _ := k.factor(h)
	return f
}

// termCoefs turns the score gradients g of a row whose pair terms are x into the
// coefficients of its dot products, g·∂s/∂dot or −2·∂L/∂d² with ∂L/∂d² added into the
// keys' sums cs: in place when add is false (dst must then be g), else added into dst (g
// is overwritten unless the kernel is linear). It returns the bandwidth's share and the
// row's Σ ∂L/∂d².
func (k *kernel32) termCoefs(dst, g, x, cs []float32, h float32, add bool) (gh, rowD2 float64) {
	if k.lin != nil { // ScaleDot, DistGrad, AddSumScale and Add in one pass
		f, df := k.factor(h)
		if !k.dist {
			cs = nil
		}
		gx, sd := vmath.LinearCoefs(dst, g, x, cs, f, k.kind, add)
		return float64(gx) * df, float64(sd)
	}
	gh = k.kern.PairGrads32(g, x, h)
	if k.dist {
		if k.radial {
			vmath.DistGrad(g, x)
		}
		// cs += ∂L/∂d², and the coefficients of q·k are −2·∂L/∂d² (in the gemms' alpha,
		// −2 would make them pack their B).
		rowD2 = float64(vmath.AddSumScale(g, cs, -2))
	}
	if add && (k.dot || k.dist) {
		vmath.Add(dst, g)
	}
	return gh, rowD2
}

// pairAcc holds a backward pass's parts of the parameter gradients, per problem (or per
// problem and query row), reduced by pairParamGrads: nil where the input is absent.
type pairAcc struct {
	hRows      []float64 // [N·Tq] bandwidth gradients per query row
	biasParts  []float64 // [N, 2M+1]
	thetaParts []float64 // [N, nTheta]
}

// pairRows is how one worker of KernelAttention turns the dot products of a query's
// visible keys into its weights, and the products dm·vᵀ back into the coefficients of
// dq and dk: rows64 in float64 for every kernel, rows32 in float32 for a PairKernel32,
// rowsMix32 in float32 for a mixture of them (pairmix.go).
type pairRows[T float] interface {
	// begin starts problem pi of the forward pass (its squared norms, kept for the
	// backward pass, and its bias's exponentials).
	begin(pr *problem[T], pi int)
	// weights sets row[clo:chi] to query t's weights, 0 for the keys it does not see, from
	// the dot products drow of the keys it sees in [clo, chi) (nil when none).
	weights(pr *problem[T], row, drow []T, t, clo, chi int)
	// beginGrads starts problem pi of the backward pass.
	beginGrads(pr *problem[T], pi int)
	// coefs replaces cv, the products dm_t·v_s of query t with keys lo..hi−1, by the
	// coefficients c of its dot products (dq_t += Σ_s c_s k_s, dk_s += c_s q_t) from its
	// weights prow, δ = dm_t·m_t and its dot products drow (on rows32, the terms its
	// forward pass left there); it adds the parameter gradients into the pass's pairAcc
	// and returns the row's Σ_s ∂L/∂d²_ts.
	coefs(pr *problem[T], cv, prow, drow []T, delta float64, t, lo, hi, pi int) (rowD2 float64)
	// endGrads adds the keys' share of the squared norms' gradient into dk.
	endGrads(pr *problem[T], dk []T)
}

// blockRows is a pairRows that evaluates a block of rows (queries r0..r1−1, whose
// visible keys lie in [clo, chi)) at once, pass by pass: ph holds the problem's weights
// [Tq, Tk] and dh its dot products (nil without them).
type blockRows[T float] interface {
	weightsBlock(pr *problem[T], ph, dh []T, r0, r1, clo, chi int)
	// coefsBlock is coefs for the block's rows: c holds their products dm·vᵀ, rows of
	// width chi − clo, 0 outside each row's visible keys, and deltas their δ; it sets
	// rs[i] to row r0+i's Σ_s ∂L/∂d²_ts.
	coefsBlock(pr *problem[T], c, ph, dh []T, deltas, rs []float64, r0, r1, clo, chi, pi int)
}

// visibleKeys returns the keys [lo, hi) that query t sees among tk in [clo, chi)
// (hi <= lo: none).
func visibleKeys(m Mask, t, tk, clo, chi int) (lo, hi int) {
	lo, hi, _ = m.visible(t, tk)
	return max(lo, clo), min(hi, chi)
}

// visibleDots returns the dot products dh[t, lo:hi] of query t with the keys it sees in
// [clo, chi), nil when it sees none or dh is nil.
func visibleDots[T float](m Mask, dh []T, tk, t, clo, chi int) []T {
	lo, hi := visibleKeys(m, t, tk, clo, chi)
	if dh == nil || hi <= lo {
		return nil
	}
	return dh[t*tk+lo : t*tk+hi]
}

// weightRows is pairRows.weights for the queries r0..r1−1 of a row block, one at a time
// (blockRows.weightsBlock's arguments).
func weightRows[T float](rw pairRows[T], m Mask, pr *problem[T], ph, dh []T, tk, r0, r1, clo, chi int) {
	for t := r0; t < r1; t++ {
		rw.weights(pr, ph[t*tk:(t+1)*tk], visibleDots(m, dh, tk, t, clo, chi), t, clo, chi)
	}
}

// coefRows is pairRows.coefs for the queries r0..r1−1 of a row block, one at a time
// (blockRows.coefsBlock's arguments); rs[i] is 0 for a row that sees no key.
func coefRows[T float](rw pairRows[T], m Mask, pr *problem[T], c, ph, dh []T, deltas, rs []float64, tk, r0, r1, clo, chi, pi int) {
	w := chi - clo
	for j := range r1 - r0 {
		t := r0 + j
		rs[j] = 0
		if lo, hi := visibleKeys(m, t, tk, clo, chi); hi > lo {
			rs[j] = rw.coefs(pr, c[j*w+lo-clo:j*w+hi-clo], ph[t*tk+lo:t*tk+hi], visibleDots(m, dh, tk, t, clo, chi), deltas[j], t, lo, hi, pi)
		}
	}
}

// rows64 evaluates rows in float64 through PairKernel (or ParamPairKernel, or
// DirectPairKernel).
type rows64[T float] struct {
	k      *kernelAttention
	d      tiledDims
	acc    *pairAcc
	direct DirectPairKernel
	sc     pairScratch
	eb     []float64 // exp(bias − max bias), for a direct kernel
	cs     []float64 // [Tk] each key's Σ_t ∂L/∂d²_ts
}

func newRows64[T float](k *kernelAttention, d tiledDims, acc *pairAcc) pairRows[T] {
	r := &rows64[T]{k: k, d: d, acc: acc, sc: newPairScratch(d.tk, d.tq, d.tk)}
	if k.pk == nil { // with θ, its values depend on θ: the scores' path
		r.direct, _ = k.kern.(DirectPairKernel)
	}
	if acc != nil {
		r.cs = make([]float64, d.tk)
	}
	return r
}

func (r *rows64[T]) begin(pr *problem[T], pi int) {
	if r.direct != nil && pr.bias != nil {
		r.eb = expBias(pr.bias, r.eb)
	}
	if problemNorms(&r.k.pairSpec, r.d, pr, &r.sc) {
		nb := r.k.norms[pi*(r.d.tq+r.d.tk) : (pi+1)*(r.d.tq+r.d.tk)]
		copy(nb, r.sc.qq[:r.d.tq])
		copy(nb[r.d.tq:], r.sc.kk[:r.d.tk])
	}
}

func (r *rows64[T]) weights(pr *problem[T], row, drow []T, t, clo, chi int) {
	k := r.k
	if r.direct != nil {
		directWeights(k, r.direct, pr, &r.sc, r.eb, drow, row, t, clo, chi)
		return
	}
	lo, hi, _ := k.mask.visible(t, len(row))
	lo, hi = max(lo, clo), min(hi, chi)
	if hi > lo {
		for j, x := range pairRowScores(&k.pairSpec, pr, &r.sc, drow, t, lo, hi) {
			row[lo+j] = T(x)
		}
	}
	softmaxVisible(row, row, pr.km, k.mask, t, clo, chi)
}

func (r *rows64[T]) beginGrads(pr *problem[T], pi int) {
	if r.k.useDist { // the forward pass's squared norms
		nb := r.k.norms[pi*(r.d.tq+r.d.tk) : (pi+1)*(r.d.tq+r.d.tk)]
		r.sc.qq, r.sc.kk = nb[:r.d.tq], nb[r.d.tq:]
		clear(r.cs)
	}
}

func (r *rows64[T]) coefs(pr *problem[T], cv, prow, drow []T, delta float64, t, lo, hi, pi int) float64 {
	k := r.k
	gs := r.sc.gs[:hi-lo]
	nz := false
	for j, x := range prow {
		gs[j] = float64(x) * (float64(cv[j]) - delta)
		nz = nz || gs[j] != 0
	}
	if !nz {
		clear(cv)
		return 0
	}
	if r.acc.biasParts != nil {
		bw := 2*k.biasM + 1
		addBiasGrads(&k.pairSpec, r.acc.biasParts[pi*bw:(pi+1)*bw], gs, t, lo)
	}
	return pairRowCoefs(&k.pairSpec, &r.sc, pr, gs, drow, cv, t, lo, hi, pi, r.d.tq, r.acc.hRows, r.acc.thetaParts, r.cs)
}

func (r *rows64[T]) endGrads(pr *problem[T], dk []T) {
	if r.k.useDist {
		addNormGrads(dk, pr.k, r.cs[:r.d.tk], 0, r.d.lq, r.d.d)
	}
}

// rows32 evaluates rows in float32 through PairKernel32 (DirectPairKernel32), with
// package vmath's vector loops around the kernel's own: the forward pass turns the dot
// products into the terms the kernel reads in place (the squared distances, once), and
// the backward pass reads them there and turns the products dm·vᵀ into the score
// gradients and then ∂L/∂term in place.
type rows32 struct {
	k   *kernelAttention
	d   tiledDims
	acc *pairAcc
	kernel32
	zeros  []float32 // [Tk] the terms of a kernel that reads none
	eb     []float32 // exp(bias − max bias), for a direct kernel
	bt     []float32 // the problem's bias by relative position (biasTemplate32), for a linear kernel
	qq, kk []float32 // the problem's squared norms
	cs     []float32 // [Tk] each key's Σ_t ∂L/∂d²_ts
}

func newRows32(k *kernelAttention, d tiledDims, acc *pairAcc) pairRows[float32] {
	r := &rows32{k: k, d: d, acc: acc, kernel32: newKernel32(k.k32), zeros: make([]float32, d.tk)}
	if k.useDist {
		r.qq, r.kk = make([]float32, d.tq), make([]float32, d.tk)
	}
	if acc != nil {
		r.cs = make([]float32, d.tk)
	}
	return r
}

func (r *rows32) begin(pr *problem[float32], pi int) {
	if r.direct != nil && pr.bias != nil {
		r.eb = expBias32(pr.bias, r.eb)
	}
	if r.lin != nil && pr.bias != nil {
		r.bt = biasTemplate32(&r.k.pairSpec, pr.bias, r.d.tq, r.d.tk, r.bt)
	}
	if r.k.useDist {
		sqNorms32(pr.q, r.d.tq, r.d.d, r.d.lq, r.qq)
		sqNorms32(pr.k, r.d.tk, r.d.d, r.d.lq, r.kk)
	}
}

// sqNorms32 sets out[i] = ‖x_i‖² for rows x_i of x (ld apart, d wide).
func sqNorms32(x []float32, rows, d, ld int, out []float32) {
	vmath.SqNorms(out[:rows], x, d, ld)
}

// biasTemplate32 returns, in buf, the bias of every pair of a problem's Tq queries and Tk
// keys by relative position: entry s − t + Tq − 1 holds query t's and key s's, bias[r +
// M] with r = s − t − Offset clipped to [−M, M] (addRelBias's), so that query t's row of
// keys lo..hi−1 is the slice from lo − t + Tq − 1.
func biasTemplate32(k *pairSpec, bias []float32, tq, tk int, buf []float32) []float32 {
	buf = resized(buf, tq+tk-1)
	m := k.biasM
	for i := range buf {
		r := min(max(i-(tq-1)-k.mask.Offset, -m), m)
		buf[i] = bias[r+m]
	}
	return buf
}

// expBias32 is expBias in float32.
func expBias32(bias, buf []float32) []float32 {
	buf = resized(buf, len(bias))
	mx := float32(math.Inf(-1))
	for _, b := range bias {
		mx = max(mx, b)
	}
	for i, b := range bias {
		buf[i] = vmath.Exp32(b - mx)
	}
	return buf
}

// terms returns the terms the kernel reads of query t's pairs with keys lo..lo+len(x)−1
// from their dot products in drow: the dot products themselves, or the squared
// distances (the distances, for a DistancePairKernel32) written over them, or zeros when
// it reads neither.
func (r *rows32) terms(drow []float32, t, lo, n int) []float32 {
	if drow == nil { // the kernel reads no term
		return r.zeros[:n]
	}
	x, _ := r.kernel32.terms(drow[:n], drow, r.qq, r.kk, t, lo)
	return x
}

func (r *rows32) weights(pr *problem[float32], row, drow []float32, t, clo, chi int) {
	k := r.k
	lo, hi, self, ok := visibleRow(k.mask, row, t, clo, chi)
	if !ok {
		return
	}
	x := r.terms(drow, t, lo, hi-lo)
	h := float32(pr.bandwidth(t))
	w := row[lo:hi]
	if r.lin != nil && drow != nil && pr.km == nil && (self < lo || self >= hi) {
		// Every key in [lo, hi) seen: the scores (plus their bias) and their maximum in
		// one pass.
		if pr.bias == nil {
			vmath.SoftmaxMax(w, vmath.ScaleMax(w, x, r.factor1(h)))
		} else {
			b := r.bt[lo-t+r.d.tq-1:]
			vmath.SoftmaxMax(w, vmath.ScaleAddMax(w, x, b, r.factor1(h)))
		}
		return
	}
	if r.direct == nil {
		r.kern.PairScores32(w, x, h)
		if pr.bias != nil {
			addRelBias(&k.pairSpec, w, pr.bias, t, lo)
		}
		softmaxVisible(row, row, pr.km, k.mask, t, clo, chi)
		return
	}
	r.direct.PairValues32(w, x, h)
	if pr.bias != nil {
		mulBias(&k.pairSpec, w, r.eb, t, lo)
	}
	hideKeys(w, pr.km, self, lo, hi)
	normaliseValues32(w)
}

// normaliseValues32 is normaliseValues in place on float32, on vector loops; it returns
// the values' sum.
func normaliseValues32(w []float32) float64 { return normaliseBy32(w, vmath.Sum64(w)) }

// normaliseBy32 is normaliseValues32 with the values' sum given.
func normaliseBy32(w []float32, sum float64) float64 {
	switch {
	case math.IsNaN(sum) || math.IsInf(sum, 0):
		fillNaN(w)
	case sum == 0:
		clear(w)
	default:
		vmath.ScaleFlush(w, float32(1/sum))
	}
	return sum
}

func (r *rows32) beginGrads(*problem[float32], int) {
	if r.k.useDist {
		clear(r.cs)
	}
}

func (r *rows32) coefs(pr *problem[float32], cv, prow, drow []float32, delta float64, t, lo, hi, pi int) float64 {
	k := r.k
	vmath.ScoreGrad(cv, prow, float32(delta), 1) // the score gradients w ⊙ (dm·vᵀ − δ)
	if r.acc.biasParts != nil {
		bw := 2*k.biasM + 1
		addBiasGrads(&k.pairSpec, r.acc.biasParts[pi*bw:(pi+1)*bw], cv, t, lo)
	}
	x := drow // the forward pass's terms
	if x == nil {
		x = r.zeros[:hi-lo]
	}
	var cs []float32
	if k.useDist {
		cs = r.cs[lo:hi]
	}
	gh, rowD2 := r.termCoefs(cv, cv, x, cs, float32(pr.bandwidth(t)), false)
	if r.acc.hRows != nil {
		r.acc.hRows[pi*r.d.tq+t] += gh
	}
	return rowD2
}

func (r *rows32) endGrads(pr *problem[float32], dk []float32) {
	if r.k.useDist {
		addNormGrads(dk, pr.k, r.cs, 0, r.d.lq, r.d.d)
	}
}

// directWeights is softmaxVisible for a DirectPairKernel: it writes into row[clo:chi] the
// weights of query t, K_ts·exp(bias_ts) normalised over the visible keys, 0 for the
// others, with softmaxVisible's rules (normaliseValues). eb is exp(bias − max bias) of
// the problem's bias row, or unused without a bias.
func directWeights[T float](k *kernelAttention, kern DirectPairKernel, pr *problem[T], sc *pairScratch, eb []float64, dots, row []T, t, clo, chi int) {
	lo, hi, self, ok := visibleRow(k.mask, row, t, clo, chi)
	if !ok {
		return
	}
	dot, d2 := pairRowTerms(&k.pairSpec, sc, dots, t, lo, hi)
	kv := sc.s[:hi-lo]
	kern.PairValues(kv, dot, d2, pr.bandwidth(t))
	if pr.bias != nil {
		mulBias(&k.pairSpec, kv, eb, t, lo)
	}
	hideKeys(kv, pr.km, self, lo, hi)
	normaliseValues(kv, row[lo:hi])
}

// expBias returns exp(b − max b) for the entries of a bias row, in buf's storage.
func expBias[T float](bias []T, buf []float64) []float64 {
	buf = resized(buf, len(bias))
	mx := math.Inf(-1)
	for _, b := range bias {
		mx = max(mx, float64(b))
	}
	for i, b := range bias {
		buf[i] = math.Exp(float64(b) - mx)
	}
	return buf
}

// mulBias multiplies the kernel values kv of query t and keys lo..lo+len(kv)−1 by
// exp(bias − max bias), eb, the relative bias's factors.
func mulBias[S float](k *pairSpec, kv, eb []S, t, lo int) {
	j0, j1 := k.biasSpan(t, lo, len(kv))
	m := k.biasM
	for j := range j0 {
		kv[j] *= eb[0]
	}
	for j := j0; j < j1; j++ {
		kv[j] *= eb[lo+j-t-k.mask.Offset+m]
	}
	for j := j1; j < len(kv); j++ {
		kv[j] *= eb[2*m]
	}
}

// hideKeys zeroes the values kv of keys lo..hi−1 that a query does not see: itself (self,
// for a hollow mask) and the keys that the key mask km zeroes.
func hideKeys[S, T float](kv []S, km []T, self, lo, hi int) {
	if self >= lo && self < hi {
		kv[self-lo] = 0
	}
	if km != nil {
		for j, x := range km[lo:hi] {
			if x == 0 {
				kv[j] = 0
			}
		}
	}
}

// normaliseValues sets w to the kernel values kv divided by their sum, with
// softmaxVisible's rules: a NaN or infinite sum makes the row NaN, a zero sum makes it 0,
// and a float32 weight below the smallest normal float32 is 0.
func normaliseValues[S, T float](kv []S, w []T) {
	sum := sumOf(kv)
	w = w[:len(kv)]
	switch {
	case math.IsNaN(sum) || math.IsInf(sum, 0):
		fillNaN(w)
		return
	case sum == 0:
		clear(w)
		return
	}
	inv := 1 / sum
	var tiny float64 // the smallest normal of T: smaller weights are 0, as softmaxVisible's
	if _, f32 := any(w).([]float32); f32 {
		tiny = 0x1p-126
	}
	for j, x := range kv {
		v := float64(x) * inv
		if v < tiny {
			v = 0
		}
		w[j] = T(v)
	}
}

// visibleRow clears row[clo:chi] outside the keys lo..hi−1 that query t sees (within
// [clo, chi)) and returns them and the query's own key (for a hollow mask); ok is false,
// the block cleared, when it sees none.
func visibleRow[T float](m Mask, row []T, t, clo, chi int) (lo, hi, self int, ok bool) {
	lo, hi, self = m.visible(t, len(row))
	lo, hi = max(lo, clo), min(hi, chi)
	if hi <= lo {
		clear(row[clo:chi])
		return lo, hi, self, false
	}
	clear(row[clo:lo])
	clear(row[hi:chi])
	return lo, hi, self, true
}

// fillNaN sets every x[i] to NaN.
func fillNaN[T float](x []T) {
	for i := range x {
		x[i] = T(math.NaN())
	}
}
