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
	kern      PairKernel32
	direct    DirectPairKernel32 // non-nil: its values, not its scores
	dot, dist bool               // the term it reads
	radial    bool               // a DistancePairKernel32: the distance, not its square
	x, e, g   []float32          // [Tk] its terms, its values exp(s − m), its gradients
	w         float32            // its weight softmax(θ)_l in the current problem
}

// rowsMix32 evaluates the rows of a mixture (MixturePairKernel32) in float32: per query,
// each component's log-scores (or values) from its term, the shift m = the largest
// log-score (at least 0 with a component of values), the mixture's values
// Σ_l w_l·exp(s_l − m) normalised as a DirectPairKernel's are; the backward pass forms
// them again and sends w_l·exp(s_l − m)/K̃ times the score gradients through each
// component. The dot products stay in the op's buffer; the distances are formed from
// them per component. TiledLocalMean's tiles use it too (tileValues, coefs).
type rowsMix32 struct {
	k       *pairSpec
	d       tiledDims
	acc     *pairAcc
	comps   []mixComp
	eb      []float32 // exp(bias − max bias)
	qq, kk  []float32 // the problem's squared norms
	tot, iv []float32 // [Tk] the mixture's shifted values, and gs / them
	cs      []float32 // [Tk] each key's Σ_t ∂L/∂d²_ts
}

func newRowsMix32(k *pairSpec, d tiledDims, acc *pairAcc) *rowsMix32 {
	r := &rowsMix32{k: k, d: d, acc: acc, tot: make([]float32, d.tk), iv: make([]float32, d.tk)}
	for _, c := range k.mix32 {
		mc := mixComp{kern: c, x: make([]float32, d.tk), e: make([]float32, d.tk), g: make([]float32, d.tk)}
		mc.direct, _ = c.(DirectPairKernel32)
		mc.dot, mc.dist = c.PairTerms()
		_, mc.radial = c.(DistancePairKernel32)
		mc.radial = mc.radial && mc.dist
		r.comps = append(r.comps, mc)
	}
	if k.useDist {
		r.qq, r.kk = make([]float32, d.tq), make([]float32, d.tk)
		if acc != nil {
			r.cs = make([]float32, d.tk)
		}
	}
	return r
}

// start computes the problem's weights softmax(θ), squared norms and bias factors.
func (r *rowsMix32) start(pr *problem[float32]) {
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
		r.comps[l].w = float32(math.Exp(pr.theta[l] - lz))
	}
	if r.k.useDist {
		sqNorms32(pr.q, r.d.tq, r.d.d, r.d.lq, r.qq)
		sqNorms32(pr.k, r.d.tk, r.d.d, r.d.lq, r.kk)
	}
	if pr.bias != nil {
		r.eb = expBias32(pr.bias, r.eb)
	}
}

func (r *rowsMix32) begin(pr *problem[float32], _ int) { r.start(pr) }

func (r *rowsMix32) beginGrads(pr *problem[float32], _ int) {
	r.start(pr)
	clear(r.cs)
}

// values sets each component's e to exp(s_l − m) (its values times exp(−m) for a
// component of values) for query t and the n keys from c0, 0 for the keys it does not
// see (outside lo..hi−1, itself for a hollow mask, those the key mask hides), tot to the
// mixture's Σ_l w_l e_l, and returns m, the largest log-score of a key it sees (at least 0
// beside a component of values); false when a score is NaN or +Inf.
func (r *rowsMix32) values(pr *problem[float32], drow []float32, t, c0, n, lo, hi, self int) (float32, bool) {
	h := float32(pr.bandwidth(t))
	m := float32(math.Inf(-1))
	for l := range r.comps {
		c := &r.comps[l]
		x := c.x[:n]
		switch {
		case c.radial:
			vmath.Dist(x, drow, r.qq[t], r.kk[c0:c0+n])
		case c.dist:
			vmath.SqDist(x, drow, r.qq[t], r.kk[c0:c0+n])
		case c.dot:
			copy(x, drow)
		default:
			clear(x)
		}
		e := c.e[:n]
		if c.direct != nil {
			c.direct.PairValues32(e, x, h)
			hideOutside(e, 0, pr.km, c0, lo, hi, self)
			m = max(m, 0)
			continue
		}
		c.kern.PairScores32(e, x, h)
		hideOutside(e, float32(math.Inf(-1)), pr.km, c0, lo, hi, self)
		m = max(m, vmath.Max(e))
	}
	if m != m || math.IsInf(float64(m), 1) { // a NaN or +Inf score: the row is NaN
		return m, false
	}
	if math.IsInf(float64(m), -1) {
		m = 0
	}
	tot := r.tot[:n]
	clear(tot)
	for l := range r.comps {
		c := &r.comps[l]
		e := c.e[:n]
		if c.direct != nil {
			vmath.Scale(e, vmath.Exp32(-m))
		} else {
			vmath.ExpShiftSum(e, m)
		}
		vmath.AddScaled(tot, e, c.w)
	}
	return m, true
}

func (r *rowsMix32) weights(pr *problem[float32], row, drow []float32, t, clo, chi int) {
	k := r.k
	lo, hi, self, ok := visibleRow(k.mask, row, t, clo, chi)
	if !ok {
		return
	}
	w := row[lo:hi]
	if _, ok := r.values(pr, drow, t, lo, hi-lo, lo, hi, self); !ok {
		fillNaN(w)
		return
	}
	copy(w, r.tot[:hi-lo])
	if pr.bias != nil {
		mulBias(k, w, r.eb, t, lo)
	}
	normaliseValues32(w)
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
	m, ok := r.values(pr, drow, t, c0, w, lo, hi, self)
	if !ok {
		return m, false
	}
	copy(s, r.tot[:w])
	if pr.bias != nil {
		mulBias(r.k, s, r.eb, t, c0)
	}
	return m, true
}

func (r *rowsMix32) coefs(pr *problem[float32], cv, prow, drow []float32, delta float64, t, lo, hi, pi int) float64 {
	k := r.k
	n := hi - lo
	vmath.ScoreGrad(cv, prow, float32(delta), 1) // the score gradients w ⊙ (dm·vᵀ − δ)
	if r.acc.biasParts != nil {
		bw := 2*k.biasM + 1
		addBiasGrads(k, r.acc.biasParts[pi*bw:(pi+1)*bw], cv, t, lo)
	}
	vlo, vhi, self := k.mask.visible(t, r.d.tk)
	if _, ok := r.values(pr, drow, t, lo, n, max(vlo, lo), min(vhi, hi), self); !ok {
		fillNaN(cv)
		return math.NaN()
	}
	// iv = gs / K̃ (0 where gs or K̃ is 0): gs·r_l = w_l·e_l·iv.
	iv, tot := r.iv[:n], r.tot[:n]
	for j, g := range cv {
		if g == 0 || tot[j] == 0 {
			iv[j] = 0
			continue
		}
		iv[j] = g / tot[j]
	}
	var sg float64
	if r.acc.thetaParts != nil {
		sg = vmath.Sum64(cv)
	}
	clear(cv)
	h := float32(pr.bandwidth(t))
	var gh, rowD2 float64
	for l := range r.comps {
		c := &r.comps[l]
		g, e := c.g[:n], c.e[:n]
		for j, v := range e {
			g[j] = c.w * v * iv[j]
		}
		if r.acc.thetaParts != nil {
			r.acc.thetaParts[pi*len(r.comps)+l] += vmath.Sum64(g) - float64(c.w)*sg
		}
		gh += c.kern.PairGrads32(g, c.x[:n], h)
		switch {
		case c.dist:
			if c.radial {
				vmath.DistGrad(g, c.x[:n])
			}
			rowD2 += float64(vmath.AddSumScale(g, r.cs[lo:hi], -2))
			vmath.Add(cv, g)
		case c.dot:
			vmath.Add(cv, g)
		}
	}
	if r.acc.hRows != nil {
		r.acc.hRows[pi*r.d.tq+t] += gh
	}
	return rowD2
}

func (r *rowsMix32) endGrads(pr *problem[float32], dk []float32) {
	if r.k.useDist {
		addNormGrads(dk, pr.k, r.cs, 0, r.d.lq, r.d.d)
	}
}
