package autodiff

import (
	"math"

	"github.com/locusml/locus/autodiff/internal/vmath"
)

// MixturePairKernel32 is a ParamPairKernel that is the mixture K = Σ_l softmax(θ)_l·K_l
// of components K_l, θ its parameters (one logit per component, in order):
// KernelAttention's float32 runs weigh each pair by the mixture's value, formed from
// the components' float32 rows on vector loops, and pass the score gradients to the
// components through the responsibilities r_l = softmax(θ)_l·K_l / K, instead of a
// log-sum-exp per pair and component in float64.
type MixturePairKernel32 interface {
	ParamPairKernel
	// PairComponents32 returns the components in θ's order, or nil when one of them has
	// no float32 rows (the float64 rows run then).
	PairComponents32() []PairKernel32
}

// mixComponents returns the float32 components of kern when it is a mixture whose every
// component has float32 rows and reads at most one term, else nil.
func mixComponents(kern PairKernel) []PairKernel32 {
	m, ok := kern.(MixturePairKernel32)
	if !ok {
		return nil
	}
	comps := m.PairComponents32()
	if len(comps) == 0 || len(comps) != m.PairParamCount() {
		return nil
	}
	for _, c := range comps {
		if dot, dist := c.PairTerms(); dot && dist {
			return nil
		}
	}
	return comps
}

// mixComp is one component of rowsMix32 and its row buffers.
type mixComp struct {
	kernel32
	x, e, g []float32 // [Tk] its terms, its values (or shares), its score gradients
	term    []float32 // the terms of the current row (x, or the dot products)
	w       float32   // its weight softmax(θ)_l in the current problem
	lw      float64   // log w
}

// rowsMix32 evaluates the rows of a mixture (MixturePairKernel32) in float32. The
// forward pass forms, per query, each component's log-scores (or values) from its term,
// the shift m = the largest log-score (at least 0 with a component of values), and the
// mixture's values Σ_l w_l·exp(s_l − m), normalised as a DirectPairKernel's are; it
// keeps the query's shift c = m and the inverse z of the normalised values' sum (its
// weights are z·Σ_l w_l·exp(s_l − c)·exp(bias − max bias)). The backward pass forms each
// component's share of the weights, q_l = z·w_l·exp(s_l − c)·exp(bias − max bias), for
// every component but one linear in its term (rest), whose score gradients are those of
// the whole row less the others' (Σ_l q_l is the weight): one component's exponentials
// fewer than the forward pass, and no division. The dot products stay in the op's buffer; the distances
// are formed from them per component. TiledLocalMean's tiles use it too (tileValues,
// coefs), with their log-normalisers as c and z = 1.
type rowsMix32 struct {
	k      *pairSpec
	d      tiledDims
	acc    *pairAcc
	comps  []mixComp
	eb     []float32 // exp(bias − max bias)
	qq, kk []float32 // the problem's squared norms
	cs     []float32 // [Tk] each key's Σ_t ∂L/∂d²_ts
	norms  []float32 // [N·(Tq+Tk)] the problems' squared norms, or nil: formed per pass
	shift  []float64 // [N·Tq] each query's shift c
	inv    []float64 // [N·Tq] each query's factor z; nil: 1
	// ratExp holds, when not nil, exp(−c) of each query [N·Tq] as pairValues formed it
	// for a rational component's share; pairCoefs reads it instead of forming it again.
	ratExp []float32
	sums   []float32 // [L] the components' Σ of score gradients in a row
	rest   int       // the component whose score gradients are the row's less the others', or −1
	pair   bool      // two components, rest and another linear or rational: the fused loops (pairValues, pairCoefs)
	pi     int       // the forward pass's problem
	sum    float32   // the row's values' sum, formed with them by values
	sumOK  bool      // sum holds (every component of scores)
	// With pair, the rows of a block between weightsBlock's or coefsBlock's passes: their
	// states, and a row of each [rowBlock·Tk], the second component's log-scores (forward)
	// or the other component's score gradients (backward).
	block []mixRow
	e1    []float32
	jobs  []vmath.MixRow // the block's rows for the row-block loops
}

// rowsMix32 takes KernelAttention's row blocks whole (kattnForward and kattnBackward
// assert blockRows of their row evaluators).
var _ blockRows[float32] = (*rowsMix32)(nil)

// mixRow is a row of weightsBlock or coefsBlock between their passes.
type mixRow struct {
	lo     int     // its first visible key
	m      float32 // weightsBlock: its shift
	sa, sg float32 // coefsBlock: Σ of the other component's score gradients, and of the row's
	done   bool    // nothing more to do: no key seen, a NaN, or done one row at a time
}

// newRowsMix32 returns a worker's rows for the mixture of k; shift and inv hold the op's
// shifts and factors, written by weights and read by coefs (inv nil: 1), norms its
// squared norms (nil: each pass forms its own) and ratExp each query's exp(−c) for a
// rational component (nil: coefs forms it).
func newRowsMix32(k *pairSpec, d tiledDims, acc *pairAcc, shift, inv []float64, norms, ratExp []float32) *rowsMix32 {
	r := &rowsMix32{k: k, d: d, acc: acc, shift: shift, inv: inv, norms: norms, ratExp: ratExp, sums: make([]float32, len(k.mix32))}
	for _, c := range k.mix32 {
		mc := mixComp{kernel32: newKernel32(c), x: make([]float32, d.tk), e: make([]float32, d.tk), g: make([]float32, d.tk)}
		r.comps = append(r.comps, mc)
	}
	// The last component whose log-score is linear in its term takes the row's score
	// gradients less the others': their round-off, about ε·|gs|, is multiplied by a
	// constant. A kernel whose ∂s/∂x grows without bound where its values vanish (the
	// compact kernels at the edge of their support) would magnify it; with none linear,
	// every component forms its own.
	r.rest = -1
	for l, c := range r.comps {
		if c.lin != nil {
			r.rest = l
		}
	}
	if len(r.comps) == 2 && r.rest >= 0 && r.comps[r.rest].linearTerm() {
		o := &r.comps[1-r.rest]
		r.pair = o.linearTerm() || o.rat != nil
	}
	if r.pair {
		r.block, r.e1, r.jobs = make([]mixRow, rowBlock), make([]float32, rowBlock*d.tk), make([]vmath.MixRow, rowBlock)
	}
	if k.useDist {
		r.qq, r.kk = make([]float32, d.tq), make([]float32, d.tk)
		if acc != nil {
			r.cs = make([]float32, d.tk)
		}
	}
	return r
}

// start computes the problem's weights softmax(θ), squared norms and bias factors; with
// the op's norms, the forward pass (forward) keeps the squared norms of problem pi there
// and the backward pass reads them.
func (r *rowsMix32) start(pr *problem[float32], pi int, forward bool) {
	mx := math.Inf(-1)
	for _, a := range pr.theta {
		mx = max(mx, a)
	}
	var z float64
	for _, a := range pr.theta {
		z += math.Exp(a - mx)
	}
	lz := mx + math.Log(z)
	for l := range r.comps {
		c := &r.comps[l]
		c.lw = pr.theta[l] - lz
		c.w = float32(math.Exp(c.lw))
	}
	if r.k.useDist {
		if r.norms != nil {
			nb := r.norms[pi*(r.d.tq+r.d.tk) : (pi+1)*(r.d.tq+r.d.tk)]
			r.qq, r.kk = nb[:r.d.tq], nb[r.d.tq:]
		}
		if r.norms == nil || forward {
			sqNorms32(pr.q, r.d.tq, r.d.d, r.d.lq, r.qq)
			sqNorms32(pr.k, r.d.tk, r.d.d, r.d.lq, r.kk)
		}
	}
	if pr.bias != nil {
		r.eb = expBias32(pr.bias, r.eb)
	}
}

func (r *rowsMix32) begin(pr *problem[float32], pi int) {
	r.start(pr, pi, true)
	r.pi = pi
}

func (r *rowsMix32) beginGrads(pr *problem[float32], pi int) {
	r.start(pr, pi, false)
	clear(r.cs)
}

// terms sets c.term to the term component c reads of query t's pairs with the n keys
// from c0, from their dot products drow: drow itself, or the (squared) distances in c.x,
// or zeros there when it reads none.
func (r *rowsMix32) terms(c *mixComp, drow []float32, t, c0, n int) {
	x, ok := c.kernel32.terms(c.x[:n], drow, r.qq, r.kk, t, c0)
	if !ok {
		clear(x)
	}
	c.term = x
}

// values sets dst[:n] to the mixture's values Σ_l w_l·exp(s_l − m) of query t and the n
// keys from c0 (a component of values gives w_l·K_l·exp(−m)), 0 for the keys it does not
// see (outside lo..hi−1, itself for a hollow mask, those the key mask hides), and returns
// m, the largest log-score of a key it sees (at least 0 beside a component of values);
// false when a score is NaN or +Inf. The first component's row is dst itself.
func (r *rowsMix32) values(pr *problem[float32], dst, drow []float32, t, c0, n, lo, hi, self int) (float32, bool) {
	h := float32(pr.bandwidth(t))
	m := float32(math.Inf(-1))
	// Every key in the row is seen: nothing to hide before the largest score.
	all := pr.km == nil && lo == c0 && hi == c0+n && (self < lo || self >= hi)
	if r.pair && all {
		return r.pairValues(dst, drow, h, t, c0, n)
	}
	for l := range r.comps {
		c := &r.comps[l]
		e := c.e[:n]
		if l == 0 {
			e = dst[:n]
		}
		switch {
		case c.lin != nil && all && c.dist: // the scores straight from the dot products
			m = max(m, vmath.SqDistScaleMax(e, drow[:n], r.qq[t], r.kk[c0:c0+n], c.radial, c.factor1(h)))
			continue
		case c.lin != nil && all:
			r.terms(c, drow, t, c0, n)
			m = max(m, vmath.ScaleMax(e, c.term, c.factor1(h))) // NaN wins
			continue
		}
		r.terms(c, drow, t, c0, n)
		if c.direct != nil {
			c.direct.PairValues32(e, c.term, h)
			hideOutside(e, 0, pr.km, c0, lo, hi, self)
			m = max(m, 0)
			continue
		}
		c.kern.PairScores32(e, c.term, h)
		hideOutside(e, float32(math.Inf(-1)), pr.km, c0, lo, hi, self)
		m = max(m, vmath.Max(e))
	}
	m, ok := rowShift(m)
	if !ok {
		return m, false
	}
	r.sum, r.sumOK = 0, true
	for l := range r.comps {
		c := &r.comps[l]
		e := c.e[:n]
		if l == 0 {
			e = dst[:n]
		}
		switch {
		case c.direct != nil:
			vmath.Scale(e, c.w*vmath.Exp32(-m))
			if l > 0 {
				vmath.Add(dst[:n], e)
			}
			r.sumOK = false
		case l > 0:
			r.sum += vmath.ExpScaleShiftAdd(dst[:n], e, 1, float32(float64(m)-c.lw))
		default:
			r.sum += vmath.ExpShiftSum(e, float32(float64(m)-c.lw))
		}
	}
	return m, true
}

// rowShift returns the shift of a row whose largest log-score is m: m, or 0 when every
// key's score is −Inf; false when m is NaN or +Inf (the row is NaN).
func rowShift(m float32) (float32, bool) {
	switch {
	case m != m || math.IsInf(float64(m), 1):
		return m, false
	case math.IsInf(float64(m), -1):
		return 0, true
	}
	return m, true
}

// pairValues is values for the two components of r.pair when the row hides no key:
// their log-scores (a rational component's values) and the largest in one pass
// (pairScores), the row's values in another (pairExps), the same results as the
// separate loops.
func (r *rowsMix32) pairValues(dst, drow []float32, h float32, t, c0, n int) (float32, bool) {
	e1 := r.pairSecond().e[:n]
	la, lb := r.pairComps(h)
	m, ok := r.pairScores(dst[:n], e1, drow, la, lb, t, c0)
	if !ok {
		return m, false
	}
	r.sum, r.sumOK = r.pairExps(dst[:n], e1, m, t)
	return m, true
}

// pairFirst and pairSecond are r.pair's components in the order of the fused loops: a
// rational component goes second.
func (r *rowsMix32) pairFirst() *mixComp {
	if r.comps[0].rat != nil {
		return &r.comps[1]
	}
	return &r.comps[0]
}

func (r *rowsMix32) pairSecond() *mixComp {
	if r.comps[0].rat != nil {
		return &r.comps[0]
	}
	return &r.comps[1]
}

// pairComps returns the vector loops' forms of r.pair's components at bandwidth h, in
// pairFirst's and pairSecond's order.
func (r *rowsMix32) pairComps(h float32) (vmath.Comp, vmath.Comp) {
	return r.pairFirst().comp(h), r.pairSecond().comp(h)
}

// pairScores sets dst and e1 (of the same length) to the two components' log-scores (a
// rational component's values) of query t and the keys from c0, from their dot
// products drow, in one pass (MixScores2), and returns the row's shift m (rowShift's);
// la and lb are pairComps's at the query's bandwidth.
func (r *rowsMix32) pairScores(dst, e1, drow []float32, la, lb vmath.Comp, t, c0 int) (float32, bool) {
	b := r.pairSecond()
	qq, kk := r.rowNorms(t, c0)
	m := vmath.MixScores2(dst, e1, drow[:len(dst)], qq, kk, la, lb)
	if b.rat != nil {
		m = max(m, 0) // NaN stays
	}
	return rowShift(m)
}

// pairExps turns pairScores's rows at shift m into the row's values in dst in one pass
// (ExpShiftSum2), and returns their sum, which holds (ok) when both components are linear.
func (r *rowsMix32) pairExps(dst, e1 []float32, m float32, t int) (sum float32, ok bool) {
	s0, s1 := r.pairShifts(m, t)
	sum0, sum1 := vmath.ExpShiftSum2(dst, e1, s0, s1, r.pairSecond().rat != nil)
	return sum0 + sum1, r.pairSecond().rat == nil
}

// pairShifts returns ExpShiftSum2's shifts for query t's row at shift m: m − log w of
// each component, or, for a rational second component, its values' factor w·exp(−m),
// kept in r.ratExp.
func (r *rowsMix32) pairShifts(m float32, t int) (s0, s1 float32) {
	a, b := r.pairFirst(), r.pairSecond()
	s1 = float32(float64(m) - b.lw)
	if b.rat != nil { // its values' factor w·exp(−m)
		e := vmath.Exp32(-m)
		if r.ratExp != nil {
			r.ratExp[r.pi*r.d.tq+t] = e
		}
		s1 = b.w * e
	}
	return float32(float64(m) - a.lw), s1
}

// rowNorms returns query t's squared norm and the keys' from c0 (nil without distances).
func (r *rowsMix32) rowNorms(t, c0 int) (float32, []float32) {
	if !r.k.useDist {
		return 0, nil
	}
	return r.qq[t], r.kk[c0:]
}

func (r *rowsMix32) weights(pr *problem[float32], row, drow []float32, t, clo, chi int) {
	i := r.pi*r.d.tq + t
	lo, hi, self, ok := visibleRow(r.k.mask, row, t, clo, chi)
	if !ok {
		r.shift[i] = math.Inf(-1)
		return
	}
	w := row[lo:hi]
	m, ok := r.values(pr, w, drow, t, lo, hi-lo, lo, hi, self)
	if !ok {
		fillNaN(w)
		r.shift[i] = math.NaN()
		return
	}
	r.normalise(pr, w, m, r.sum, r.sumOK, t, lo)
}

// normalise turns query t's values w (of the keys from lo) at shift m into its weights
// and keeps its shift and factor; sum is their sum when sumOK (no bias then multiplies
// them).
func (r *rowsMix32) normalise(pr *problem[float32], w []float32, m, sum32 float32, sumOK bool, t, lo int) {
	if f, ok := r.normaliser(pr, w, m, sum32, sumOK, t, lo); ok {
		vmath.ScaleFlush(w, f)
	}
}

// normaliser is normalise but for the last step: it returns the factor that turns w
// into the weights (kept as the query's), false when w is already done (NaN, or no key
// with a weight).
func (r *rowsMix32) normaliser(pr *problem[float32], w []float32, m, sum32 float32, sumOK bool, t, lo int) (float32, bool) {
	i := r.pi*r.d.tq + t
	var sum float64
	if pr.bias == nil && sumOK { // the sum of the exponentials that values formed
		sum = float64(sum32)
	} else {
		if pr.bias != nil {
			mulBias(r.k, w, r.eb, t, lo)
		}
		sum = vmath.Sum64(w)
	}
	switch {
	case math.IsNaN(sum) || math.IsInf(sum, 0):
		fillNaN(w)
		r.shift[i] = math.NaN()
		return 0, false
	case sum == 0:
		clear(w)
		r.shift[i] = math.Inf(-1)
		return 0, false
	}
	f := float32(1 / sum)
	r.shift[i], r.inv[i] = float64(m), float64(f)
	return f, true
}

// weightsBlock is weights for the queries r0..r1−1 (their rows of ph, the problem's
// weights, and dh its dot products): with r.pair and rows that hide no key, in three
// passes over the rows, scores (MixScores2Rows), values (ExpShiftSum2Rows) and weights
// (ScaleFlushRows), so that the rows' independent chains of work overlap; the same
// results as weights.
func (r *rowsMix32) weightsBlock(pr *problem[float32], ph, dh []float32, r0, r1, clo, chi int) {
	tk := r.d.tk
	if !r.pair || pr.km != nil || r.k.mask.Hollow {
		weightRows(r, r.k.mask, pr, ph, dh, tk, r0, r1, clo, chi)
		return
	}
	rows, jobs := r.block[:r1-r0], r.jobs[:r1-r0]
	for j := range rows {
		t, st, job := r0+j, &rows[j], &jobs[j]
		*job = vmath.MixRow{}
		st.done = true
		lo, hi, _, ok := visibleRow(r.k.mask, ph[t*tk:(t+1)*tk], t, clo, chi)
		if !ok {
			r.shift[r.pi*r.d.tq+t] = math.Inf(-1)
			continue
		}
		job.E0, job.E1, job.Dots = ph[t*tk+lo:t*tk+hi], r.e1[j*tk:j*tk+hi-lo], dh[t*tk+lo:t*tk+hi]
		if r.k.useDist {
			job.QQ, job.KK = r.qq[t], r.kk[lo:hi]
		}
		st.lo, st.done = lo, false
	}
	bandwidthRuns(pr, r0, r1, func(j0, j1 int, h float32) {
		la, lb := r.pairComps(h)
		vmath.MixScores2Rows(jobs[j0:j1], la, lb)
	})
	rational := r.pairSecond().rat != nil
	for j := range rows {
		if st, job := &rows[j], &jobs[j]; !st.done {
			t, m := r0+j, job.R0
			if rational {
				m = max(m, 0) // NaN stays
			}
			m, ok := rowShift(m)
			if !ok {
				fillNaN(job.E0)
				r.shift[r.pi*r.d.tq+t] = math.NaN()
				st.done, job.E0 = true, nil
				continue
			}
			st.m = m
			job.S0, job.S1 = r.pairShifts(m, t)
		}
	}
	vmath.ExpShiftSum2Rows(jobs, rational)
	for j := range rows {
		if st, job := &rows[j], &jobs[j]; !st.done {
			f, ok := r.normaliser(pr, job.E0, st.m, job.R0+job.R1, !rational, r0+j, st.lo)
			job.S0 = f
			if !ok {
				job.E0 = nil
			}
		}
	}
	vmath.ScaleFlushRows(jobs)
}

// tileValues sets s[:c1−c0] to the values of query t and keys c0..c1−1 that values
// gives, times exp(bias − max bias), 0 for the keys it does not see, and returns m, their
// scale: the mixture's weight of key j is proportional to s[j]·exp(m) (the tiles' row
// in value space); false when a score is NaN or +Inf. drow holds the keys' dot products.
func (r *rowsMix32) tileValues(pr *problem[float32], s, drow []float32, t, c0, c1 int) (float32, bool) {
	w := c1 - c0
	s = s[:w]
	lo, hi, self := r.k.mask.visible(t, r.d.tk)
	lo, hi = max(lo, c0), min(hi, c1)
	if hi <= lo {
		clear(s)
		return 0, true
	}
	m, ok := r.values(pr, s, drow, t, c0, w, lo, hi, self)
	if !ok {
		return m, false
	}
	if pr.bias != nil {
		mulBias(r.k, s, r.eb, t, c0)
	}
	return m, true
}

// share sets c.e[:n] to component c's share of query t's weights of the n keys from lo
// but for a factor, which it returns: z for exp(s_l − c + log w_l), or z·w_l·exp(−c) for
// a component of values, whose share is then K_l; times exp(bias − max bias), 0 for the
// keys it does not see (lo..hi within the visible ones vlo..vhi−1); from the terms in
// c.term.
func (r *rowsMix32) share(pr *problem[float32], c *mixComp, shift, z float64, h float32, t, lo, n, vlo, vhi, self int) float32 {
	e := c.e[:n]
	f := z
	var fv float64
	if c.direct != nil {
		fv = z * float64(c.w) * math.Exp(-shift)
	}
	switch {
	case c.lin != nil:
		vmath.ExpScaleShiftSum(e, c.term, c.factor1(h), float32(shift-c.lw))
		hideOutside(e, 0, pr.km, lo, vlo, vhi, self)
	case c.direct != nil && fv <= math.MaxFloat32:
		c.direct.PairValues32(e, c.term, h)
		hideOutside(e, 0, pr.km, lo, vlo, vhi, self)
		f = fv
	default: // a component of scores, or values whose factor overflows: from the scores
		c.kern.PairScores32(e, c.term, h)
		hideOutside(e, float32(math.Inf(-1)), pr.km, lo, vlo, vhi, self)
		vmath.ExpShiftSum(e, float32(shift-c.lw))
	}
	if pr.bias != nil {
		mulBias(r.k, e, r.eb, t, lo)
	}
	return float32(f)
}

func (r *rowsMix32) coefs(pr *problem[float32], cv, prow, drow []float32, delta float64, t, lo, hi, pi int) float64 {
	k := r.k
	n := hi - lo
	shift, z := r.shift[pi*r.d.tq+t], 1.0
	if r.inv != nil {
		z = r.inv[pi*r.d.tq+t]
	}
	switch {
	case math.IsInf(shift, -1): // the query sees no key: its weights are 0
		clear(cv)
		return 0
	case math.IsNaN(shift) || math.IsInf(shift, 1):
		fillNaN(cv)
		return math.NaN()
	}
	vlo, vhi, self := k.mask.visible(t, r.d.tk)
	vlo, vhi = max(vlo, lo), min(vhi, hi)
	h := float32(pr.bandwidth(t))
	// g_l = q_l ⊙ (dm·vᵀ − δ) and its sum, before cv becomes the row's score gradients,
	// for every component but r.rest.
	var others float32 // Σ_{l≠rest} Σ g_l
	// Every key in the row is seen and none has a bias: a linear component's shares go
	// straight into its score gradients.
	plain := pr.km == nil && pr.bias == nil && vlo == lo && vhi == hi && (self < lo || self >= hi)
	if r.pair && plain && r.acc.biasParts == nil {
		if rowD2, ok := r.pairCoefs(cv, prow, drow, shift, z, delta, h, t, lo, n, pi); ok {
			return rowD2
		}
	}
	for l := range r.comps {
		if l == r.rest {
			continue
		}
		c := &r.comps[l]
		r.terms(c, drow, t, lo, n)
		if c.lin != nil && plain {
			r.sums[l] = vmath.ExpScoreGrad(c.g[:n], c.term, cv, c.factor1(h), float32(shift-c.lw), float32(delta), float32(z))
		} else {
			f := r.share(pr, c, shift, z, h, t, lo, n, vlo, vhi, self)
			r.sums[l] = vmath.ScoreGradSum(c.g[:n], cv, c.e[:n], float32(delta), f)
		}
		others += r.sums[l]
	}
	// The score gradients gs = w ⊙ (dm·vᵀ − δ), and r.rest's, the row's less the others',
	// in cv: with two components and no bias (whose gradients read gs), in one pass.
	var sg float32
	if one := 1 - r.rest; len(r.comps) == 2 && r.rest >= 0 && r.acc.biasParts == nil {
		sg = vmath.ScoreGradSub(cv, prow, r.comps[one].g[:n], float32(delta))
	} else {
		sg = vmath.ScoreGradSum(cv, cv, prow, float32(delta), 1)
		if r.acc.biasParts != nil {
			bw := 2*k.biasM + 1
			addBiasGrads(k, r.acc.biasParts[pi*bw:(pi+1)*bw], cv, t, lo)
		}
		if r.rest >= 0 {
			for l := range r.comps {
				if l != r.rest {
					vmath.AddScaled(cv, r.comps[l].g[:n], -1)
				}
			}
		}
	}
	var cs []float32 // the keys' Σ ∂L/∂d², when a component reads distances
	if k.useDist {
		cs = r.cs[lo:hi]
	}
	var gh, rowD2 float64
	if r.rest >= 0 {
		r.sums[r.rest] = sg - others
		c := &r.comps[r.rest]
		if c.dist { // its distances formed and used in one pass
			f, df := c.factor(h)
			gx, sd := vmath.DistCoefs(cv, drow, r.qq[t], r.kk[lo:hi], cs, f, c.radial)
			gh, rowD2 = float64(gx)*df, float64(sd)
		} else {
			r.terms(c, drow, t, lo, n)
			gh, rowD2 = c.termCoefs(cv, cv, c.term, cs, h, false)
		}
	} else {
		clear(cv)
	}
	if r.acc.thetaParts != nil { // ∂L/∂θ_l = Σ g_l − w_l·Σ gs
		th := r.acc.thetaParts[pi*len(r.comps):]
		for l := range r.comps {
			th[l] += float64(r.sums[l]) - float64(r.comps[l].w)*float64(sg)
		}
	}
	for l := range r.comps {
		if l == r.rest {
			continue
		}
		c := &r.comps[l]
		ghl, d2 := c.termCoefs(cv, c.g[:n], c.term, cs, h, true)
		gh, rowD2 = gh+ghl, rowD2+d2
	}
	if r.acc.hRows != nil {
		r.acc.hRows[pi*r.d.tq+t] += gh
	}
	return rowD2
}

// pairCoefs is coefs for the two components of r.pair when the row hides no key and has
// no bias: the other component's share of the score gradients and the row's own, less
// it, for r.rest (pairShare), then both components' coefficients (pairFinish), each in
// one pass, the same results as the separate loops; false (nothing done) when a rational
// component's factor overflows float32 (share forms it from the scores then).
func (r *rowsMix32) pairCoefs(cv, prow, drow []float32, shift, z, delta float64, h float32, t, lo, n, pi int) (float64, bool) {
	g := r.comps[1-r.rest].g[:n]
	la, lb := r.restComps(h)
	sa, sg, ok := r.pairShare(g, cv, prow, drow, shift, z, delta, la, t, lo, pi)
	if !ok {
		return 0, false
	}
	return r.pairFinish(cv, g, drow, sa, sg, la, lb, h, t, lo, pi), true
}

// restComps returns the vector loops' forms at bandwidth h of r.pair's component other
// than r.rest and of r.rest.
func (r *rowsMix32) restComps(h float32) (vmath.Comp, vmath.Comp) {
	return r.comps[1-r.rest].comp(h), r.comps[r.rest].comp(h)
}

// pairShare sets g to the score gradients of the component other than r.rest and cv to
// the row's less them, from the products cv = dm·vᵀ, the weights prow, the dot products
// drow and the row's shift, factor z and δ (MixShare), and returns Σ g and the row's Σ of
// score gradients; false (nothing done) when a rational component's factor overflows
// float32. la is the component's restComps form at the query's bandwidth.
func (r *rowsMix32) pairShare(g, cv, prow, drow []float32, shift, z, delta float64, la vmath.Comp, t, lo, pi int) (sa, sg float32, ok bool) {
	f, sh, ok := r.shareFactor(shift, z, t, pi)
	if !ok {
		return 0, 0, false
	}
	qq, kk := r.rowNorms(t, lo)
	sa, sg = vmath.MixShare(g, cv, prow, drow, qq, kk, la, sh, float32(delta), f)
	return sa, sg, true
}

// shareFactor returns MixShare's factor and shift for query t's row at shift and factor
// z: z and shift − log w, or z·w·exp(−shift) and 0 for a rational component, whose share
// is that times its values; false when that overflows float32.
func (r *rowsMix32) shareFactor(shift, z float64, t, pi int) (f, sh float32, ok bool) {
	a := &r.comps[1-r.rest]
	if a.rat == nil {
		return float32(z), float32(shift - a.lw), true
	}
	var e float64
	if r.ratExp != nil { // the forward pass's, as it weighed the values
		e = float64(r.ratExp[pi*r.d.tq+t])
	} else {
		e = math.Exp(-shift)
	}
	fv := z * float64(a.w) * e
	if fv > math.MaxFloat32 {
		return 0, 0, false
	}
	return float32(fv), 0, true
}

// pairFinish turns pairShare's score gradients, cv of r.rest and g of the other, into
// the coefficients of the row's dot products in cv (MixCoefs2); it adds the parameter
// gradients into the pass's pairAcc and returns the row's Σ_s ∂L/∂d²_ts; la and lb are
// restComps's at the query's bandwidth h.
func (r *rowsMix32) pairFinish(cv, g, drow []float32, sa, sg float32, la, lb vmath.Comp, h float32, t, lo, pi int) float64 {
	qq, kk := r.rowNorms(t, lo)
	var cs []float32
	if r.k.useDist {
		cs = r.cs[lo : lo+len(cv)]
	}
	gxb, sdb, gxa, sda := vmath.MixCoefs2(cv, g, drow, qq, kk, cs, lb, la)
	return r.pairTotals(gxb, sdb, gxa, sda, sa, sg, h, t, pi)
}

// pairTotals adds the parameter gradients of query t's row into the pass's pairAcc from
// MixCoefs2's sums (gxb, sdb of r.rest; gxa, sda of the other) and pairShare's (sa, sg),
// and returns the row's Σ_s ∂L/∂d²_ts.
func (r *rowsMix32) pairTotals(gxb, sdb, gxa, sda, sa, sg, h float32, t, pi int) float64 {
	oi := 1 - r.rest
	r.sums[oi], r.sums[r.rest] = sa, sg-sa
	if r.acc.thetaParts != nil { // ∂L/∂θ_l = Σ g_l − w_l·Σ gs
		th := r.acc.thetaParts[pi*2:]
		for l := range r.comps {
			th[l] += float64(r.sums[l]) - float64(r.comps[l].w)*float64(sg)
		}
	}
	if r.acc.hRows != nil {
		_, dfa := r.comps[oi].factor(h)
		_, dfb := r.comps[r.rest].factor(h)
		r.acc.hRows[pi*r.d.tq+t] += float64(gxb)*dfb + float64(gxa)*dfa
	}
	return float64(sdb) + float64(sda)
}

// coefsBlock is coefs for the queries r0..r1−1 of a row block whose visible keys lie in
// [clo, chi): c holds their products dm·vᵀ, rows of width chi − clo (0 outside each
// row's visible keys), ph and dh the problem's weights and dot products, deltas their
// δ; it sets rs[i] to row r0+i's Σ_s ∂L/∂d²_ts. With r.pair and rows that hide no key
// and have no bias, in two passes over the rows (MixShareRows, then MixCoefs2Rows); the
// same results as coefs.
func (r *rowsMix32) coefsBlock(pr *problem[float32], c, ph, dh []float32, deltas, rs []float64, r0, r1, clo, chi, pi int) {
	tk, w := r.d.tk, chi-clo
	pass := r.pair && pr.km == nil && pr.bias == nil && r.acc.biasParts == nil && !r.k.mask.Hollow && r.inv != nil
	if !pass {
		coefRows(r, r.k.mask, pr, c, ph, dh, deltas, rs, tk, r0, r1, clo, chi, pi)
		return
	}
	rows, jobs := r.block[:r1-r0], r.jobs[:r1-r0]
	for j := range rows {
		t, st, job := r0+j, &rows[j], &jobs[j]
		*job = vmath.MixRow{}
		st.done, rs[j] = true, 0
		lo, hi := visibleKeys(r.k.mask, t, tk, clo, chi)
		if hi <= lo {
			continue
		}
		cv, prow, drow := c[j*w+lo-clo:j*w+hi-clo], ph[t*tk+lo:t*tk+hi], dh[t*tk+lo:t*tk+hi]
		shift := r.shift[pi*r.d.tq+t]
		f, sh, ok := r.shareFactor(shift, r.inv[pi*r.d.tq+t], t, pi)
		if math.IsInf(shift, 0) || math.IsNaN(shift) || !ok {
			rs[j] = r.coefs(pr, cv, prow, drow, deltas[j], t, lo, hi, pi)
			continue
		}
		job.E0, job.E1, job.P, job.Dots = cv, r.e1[j*tk:j*tk+hi-lo], prow, drow
		if r.k.useDist {
			job.QQ, job.KK, job.CS = r.qq[t], r.kk[lo:hi], r.cs[lo:hi]
		}
		job.S0, job.S1, job.S2 = sh, float32(deltas[j]), f
		st.done = false
	}
	bandwidthRuns(pr, r0, r1, func(j0, j1 int, h float32) {
		la, _ := r.restComps(h)
		vmath.MixShareRows(jobs[j0:j1], la)
	})
	for j := range rows {
		if st := &rows[j]; !st.done {
			st.sa, st.sg = jobs[j].R0, jobs[j].R1
		}
	}
	bandwidthRuns(pr, r0, r1, func(j0, j1 int, h float32) {
		la, lb := r.restComps(h)
		vmath.MixCoefs2Rows(jobs[j0:j1], lb, la)
	})
	for j := range rows {
		if st, job := &rows[j], &jobs[j]; !st.done {
			t := r0 + j
			rs[j] = r.pairTotals(job.R0, job.R1, job.R2, job.R3, st.sa, st.sg, float32(pr.bandwidth(t)), t, pi)
		}
	}
}

// bandwidthRuns calls f(j0, j1, h) for each run r0+j0 … r0+j1−1 of the queries r0..r1−1
// that share the bandwidth h (one run unless each query has its own), in order.
func bandwidthRuns(pr *problem[float32], r0, r1 int, f func(j0, j1 int, h float32)) {
	j0, h := 0, float32(pr.bandwidth(r0))
	for t := r0 + 1; pr.h != nil && t < r1; t++ {
		if math.Float32bits(pr.h[t]) != math.Float32bits(h) {
			f(j0, t-r0, h)
			j0, h = t-r0, pr.h[t]
		}
	}
	f(j0, r1-r0, h)
}

func (r *rowsMix32) endGrads(pr *problem[float32], dk []float32) {
	if r.k.useDist {
		addNormGrads(dk, pr.k, r.cs, 0, r.d.lq, r.d.d)
	}
}
