package layers

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"

	"github.com/locusml/locus/autodiff"
)

// Random-feature attention (FAVOR+, Choromanski et al. 2021): with AttentionConfig.
// RandomFeatures = m > 0, the exponential kernel exp(q·k/h) is replaced by the inner
// product φ(q')·φ(k') of positive random features
//
//	φ(x) = exp(Wx − ‖x‖²/2) / √m,   q' = q/√h, k' = k/√h,
//
// whose expectation is exactly exp(q'·k'). W [m, d_head] holds orthogonal rows: blocks of
// d_head Gaussian rows orthogonalised by Gram–Schmidt, each row rescaled to the norm of an
// independent Gaussian vector (chi-distributed), so every row is marginally N(0, I).
// The Gaussian kernel exp(−‖q − k‖²/(2h²)) is the exponential kernel at bandwidth h² times
// exp(−‖q‖²/(2h²)), which cancels in each query's normalisation, and the per-key weight
// exp(−‖k‖²/(2h²)), folded into φ(k).
//
// The local mean is then m_t = φ(q_t)ᵀ Σ_s φ(k_s) v_sᵀ / φ(q_t)ᵀ Σ_s φ(k_s); with a
// causal order the sums run over s <= t, as running prefix sums. One fused op
// (autodiff.Graph.RandomFeatureAttention) computes it in O(T·m·d) time with O(m·d) state
// per sequence and head, forming the [T, m] features in scratch and recomputing them in
// the backward pass, so the graph keeps O(T·d) per head. Decoding carries the prefix
// sums as a recurrent state of constant size (recurrent.go).
//
// W is not a parameter and not stored in checkpoints: it is regenerated deterministically
// from RandomFeatureSeed and the layer's scope name (FNV-1a), both fixed by the model's
// configuration, so a resumed or loaded model sees the same features. It is never redrawn.
//
// Per-query and kNN bandwidths, windows, hollow attention and position kernels other than
// causal break the factorisation and are refused when the layer is built.

// MaxRandomFeatures bounds AttentionConfig.RandomFeatures, so that a mistyped size is an
// error before the feature rows are allocated: the estimator's error falls only as 1/√m,
// and at this many features (1024 per dimension of a 64-wide head, 32 MB of rows per
// layer) it is exact attention's in all but cost.
const MaxRandomFeatures = 1 << 16

// randomFeatureCheck returns why cfg with kernel kern cannot use random features, or nil.
func randomFeatureCheck(cfg AttentionConfig, kern ContentKernel) error {
	if cfg.RandomFeatures < 0 || cfg.RandomFeatures > MaxRandomFeatures {
		return fmt.Errorf("RandomFeatures = %d, want 0 (exact attention) to %d", cfg.RandomFeatures, MaxRandomFeatures)
	}
	if cfg.RandomFeatures == 0 {
		return nil
	}
	switch contentOf(kern).(type) {
	case Exponential, Gaussian:
	default:
		return fmt.Errorf("random features need the exponential or gaussian kernel, not %s", kern.Name())
	}
	for _, f := range positionFactors(kern) {
		if b, ok := f.(Box); !ok || b.Window > 0 {
			return fmt.Errorf("random features take no position kernel but causal, got %s", kern.Name())
		}
	}
	switch cfg.Bandwidth.Mode {
	case BandwidthFixed, BandwidthLayer, BandwidthHead:
	default:
		return fmt.Errorf("random features need a fixed, per-layer or per-head bandwidth, not %v (a per-query or kNN bandwidth breaks the factorisation)", cfg.Bandwidth.Mode)
	}
	if cfg.Window > 0 || cfg.Hollow {
		return fmt.Errorf("random features take no window and no hollow attention")
	}
	return nil
}

// OrthogonalFeatures returns m orthogonal random feature rows of width d, row-major
// [m, d], drawn from seed (m at most MaxRandomFeatures, which AttentionConfig.Validate
// checks): blocks of d Gaussian rows orthogonalised by Gram–Schmidt, each
// row then scaled to the norm of an independent N(0, I_d) vector.
func OrthogonalFeatures(m, d int, seed uint64) []float64 {
	rng := rand.New(rand.NewPCG(seed, 0x6661766f72))
	w := make([]float64, m*d)
	for start := 0; start < m; start += d {
		n := min(d, m-start)
		block := w[start*d : (start+n)*d]
		for i := range n {
			row := block[i*d : (i+1)*d]
			for {
				for j := range row {
					row[j] = rng.NormFloat64()
				}
				for p := range i {
					prev := block[p*d : (p+1)*d]
					var dot float64
					for j := range row {
						dot += row[j] * prev[j]
					}
					for j := range row {
						row[j] -= dot * prev[j]
					}
				}
				var nn float64
				for _, x := range row {
					nn += x * x
				}
				if nn > 1e-12 {
					s := 1 / math.Sqrt(nn)
					for j := range row {
						row[j] *= s
					}
					break
				}
			}
		}
		for i := range n {
			var chi2 float64
			for range d {
				z := rng.NormFloat64()
				chi2 += z * z
			}
			s := math.Sqrt(chi2)
			for j := range d {
				block[i*d+j] *= s
			}
		}
	}
	return w
}

// featureSeed is the seed of a layer's features: the configured seed mixed with the
// layer's scope name.
func featureSeed(seed uint64, scope string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(scope))
	return h.Sum64() ^ seed
}

// scaleWidth returns x [N, T, dh] / h^pow, h a fixed value or a node [N, T] (or one value).
func scaleWidth(g *autodiff.Graph, x *autodiff.Node, h Width, pow float64) *autodiff.Node {
	if h.Node == nil {
		if !(h.Value > 0) || math.IsInf(h.Value, 0) {
			return g.Fail(fmt.Errorf("bandwidth %g, want a positive finite value", h.Value))
		}
		return g.Scale(x, math.Pow(h.Value, -pow))
	}
	hn := h.Node
	if pow == 0.5 {
		hn = g.Sqrt(hn)
	}
	shape := hn.Shape()
	n := 1
	for _, d := range shape {
		n *= d
	}
	inv := g.Div(g.ConstTensor(shape, ones(n)), hn)
	if n == 1 {
		return g.MulScalar(x, g.Reshape(inv, []int{1}))
	}
	return g.ScaleRows(x, inv)
}

// features returns the exponents Wx + coef·‖x‖² − c [N, T, m] of x [N, T, dh] in one
// matrix product: the rows of x are extended by ‖x‖² and 1, the feature rows by coef and
// −c, so that no [N, T, m] broadcast is formed.
func (a *KernelAttention) features(g *autodiff.Graph, x *autodiff.Node, coef, c float64) *autodiff.Node {
	xs := x.Shape()
	m, dh := a.cfg.RandomFeatures, a.DHead
	w := make([]float64, m*(dh+2))
	for j := range m {
		copy(w[j*(dh+2):], a.rf[j*dh:(j+1)*dh])
		w[j*(dh+2)+dh], w[j*(dh+2)+dh+1] = coef, -c
	}
	wc := g.ConstTensor([]int{1, m, dh + 2}, w) // constants take no Reshape
	sq := g.Reshape(g.Sum(g.Square(x), 2), []int{xs[0], xs[1], 1})
	xe := g.Concat(2, x, sq, g.ConstTensor([]int{xs[0], xs[1], 1}, ones(xs[0]*xs[1])))
	e := g.BatchedMatMul(g.Reshape(xe, []int{1, xs[0] * xs[1], dh + 2}), wc, false, true)
	return g.Reshape(e, []int{xs[0], xs[1], m})
}

// maxRowNorm2 returns the largest squared norm of the feature rows.
func (a *KernelAttention) maxRowNorm2() float64 {
	dh := a.DHead
	var best float64
	for j := range a.cfg.RandomFeatures {
		var n2 float64
		for _, x := range a.rf[j*dh : (j+1)*dh] {
			n2 += x * x
		}
		best = max(best, n2)
	}
	return best
}

// featureMaps returns the random features φ(q) [N, Tq, m] and φ(k) [N, Tk, m] of queries
// q [N, Tq, dh] and keys k [N, Tk, dh] at the bandwidths hq and hk over their rows.
func (a *KernelAttention) featureMaps(g *autodiff.Graph, q, k *autodiff.Node, hq, hk Width) (phiQ, phiK *autodiff.Node) {
	pow, coef, c := a.featureConstants()
	qs, ks := scaleWidth(g, q, hq, pow), scaleWidth(g, k, hk, pow)
	if g.Err() != nil {
		return nil, nil
	}
	// Queries: any factor constant over a query's features cancels in its normalisation,
	// so φ(q) ∝ softmax(Wq) over the features (stable, ‖q‖² dropped).
	phiQ = g.Softmax(a.features(g, qs, 0, 0), nil)
	return phiQ, g.Exp(a.features(g, ks, coef, c))
}

// featureConstants returns the power of the bandwidth that divides queries and keys
// (h^½ for the exponential kernel, h for the Gaussian) and the key features' exponent
// coefficient and shift: exp(Wk − ‖k‖²/2) for the exponential kernel, exp(Wk − ‖k‖²)
// for the Gaussian (its per-key weight folded in), each divided by the constant exp(c)
// (which cancels): Wk − ‖k‖²/2 <= ‖w‖²/2 and Wk − ‖k‖² <= ‖w‖²/4, so with c the largest
// of these bounds no feature overflows. A key far from every w may underflow to 0 (a
// weight below e^−87 in float32); the denominators get a floor so that a query whose keys
// all underflow gives 0, not NaN.
func (a *KernelAttention) featureConstants() (pow, coef, c float64) {
	if _, gauss := contentOf(a.Kernel).(Gaussian); gauss {
		return 1, -1, a.maxRowNorm2() / 4
	}
	return 0.5, -0.5, a.maxRowNorm2() / 2
}

// withOnes returns v [N, T, dv] extended by a column of ones, [N, T, dv+1]: the feature
// sums of its last column are the local mean's denominators.
func withOnes(g *autodiff.Graph, v *autodiff.Node) *autodiff.Node {
	if !ready(g, "random features", "", v) {
		return nil
	}
	vs := v.Shape()
	return g.Concat(2, v, g.ConstTensor([]int{vs[0], vs[1], 1}, ones(vs[0]*vs[1])))
}

// featureMean divides the numerators out [N, Tq, dv+1] (last column: the denominators)
// into the local mean [N, Tq, dv].
func featureMean(g *autodiff.Graph, out *autodiff.Node) *autodiff.Node {
	if !ready(g, "random features", "", out) {
		return nil
	}
	os := out.Shape()
	n, tq, dv := os[0], os[1], os[2]-1
	num := g.Slice(out, 2, 0, dv)
	den := g.Reshape(g.Slice(out, 2, dv, dv+1), []int{n, tq})
	den = g.AddConst(den, 1e-30)
	return g.ScaleRows(num, g.Div(g.ConstTensor([]int{n, tq}, ones(n*tq)), den))
}

// randomFeatureMean is the local mean of v [N, Tk, dh] at queries q [N, Tq, dh] and keys
// k under the random-feature kernel, [N, Tq, dh]. hq and hk are the bandwidth over the
// query and key rows. One fused op (autodiff.Graph.RandomFeatureAttention) forms the
// features, runs the prefix sums and normalises, recomputing the [N, T, m] features in
// the backward pass instead of keeping them; featureMaps, withOnes and featureMean are the
// same function op by op (the recurrent decoding step uses them).
func (a *KernelAttention) randomFeatureMean(g *autodiff.Graph, q, k, v *autodiff.Node, hq, hk Width, opt AttendOptions, mask autodiff.Mask) *autodiff.Node {
	if hq.Node == nil && hk.Node == nil && hq.Value == hk.Value {
		return g.RandomFeatureAttention(q, k, v, a.featureOptions(hq.Value, mask, opt, false))
	}
	pow, _, _ := a.featureConstants()
	qs, ks := scaleWidth(g, q, hq, pow), scaleWidth(g, k, hk, pow)
	if g.Err() != nil {
		return nil
	}
	return g.RandomFeatureAttention(qs, ks, v, a.featureOptions(1, mask, opt, false))
}

// featureOptions returns the options of RandomFeatureAttention for queries and keys at
// the fixed bandwidth h (1 when they come scaled): h^−pow scales the feature rows, and
// h^−2pow the keys' squared-norm coefficient, as if q and k were divided by h^pow.
func (a *KernelAttention) featureOptions(h float64, mask autodiff.Mask, opt AttendOptions, inFeatures bool) autodiff.FeatureOptions {
	pow, coef, c := a.featureConstants()
	s := math.Pow(h, -pow)
	w := make([]float64, len(a.rf))
	for i, x := range a.rf {
		w[i] = s * x
	}
	return autodiff.FeatureOptions{
		Features: w, M: a.cfg.RandomFeatures, KeyCoef: coef * s * s, KeyShift: c,
		Causal: mask.Causal, Offset: mask.Offset, KeyMask: opt.KeyMask, Heads: a.Heads,
		HeadsInFeatures: inFeatures,
	}
}
