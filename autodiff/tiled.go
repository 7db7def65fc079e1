package autodiff

import (
	"fmt"
	"math"

	"gorgonia.org/tensor"

	"github.com/locusml/locus/autodiff/internal/gemm"
	"github.com/locusml/locus/autodiff/internal/vmath"
)

// PairKernel is a content kernel whose log-score depends on a query q and a key k only
// through their dot product q·k and squared distance ‖q − k‖², at a bandwidth h > 0:
// the form TiledLocalMean evaluates tile by tile and KernelAttention block by block, a
// kernel's fast path. Every kernel of THEORY.md §1 has it (package layers keeps each
// kernel's on an unexported type, beside its Scores).
//
// PairKernel is the whole contract; the fused ops find these optional forms of it by
// type assertion, each a cheaper way to the same weights and gradients except
// ParamPairKernel, which adds parameters:
//
//	ParamPairKernel       parameters θ of its own (a mixture's logits)
//	DirectPairKernel      the values K = exp(score) directly, where they cost less
//	PairKernel32          float32 rows, in place, for a kernel that reads one term
//	LinearPairKernel32    a score c(h)·x, whose factor the vector loops fold in
//	DirectPairKernel32    DirectPairKernel's values in float32
//	RationalPairKernel32  a value 1/(1 + x/a(h)) (Cauchy's)
//	DistancePairKernel32  float32 rows of the distance ‖q − k‖ instead of its square
//	MixturePairKernel32   a mixture whose components have float32 rows
type PairKernel interface {
	// Name identifies the kernel (its spec).
	Name() string
	// PairTerms reports which terms the score reads: the dot product, the squared
	// distance, or both (neither for a constant kernel).
	PairTerms() (dot, dist bool)
	// PairScores sets s[j] = log K of pair j from dot[j] and d2[j] at bandwidth h; a slice
	// the kernel does not read (PairTerms) is nil. −Inf marks a pair outside the support.
	PairScores(s, dot, d2 []float64, h float64)
	// PairGrads sets gdot[j] = gs[j]·∂s_j/∂dot and gd2[j] = gs[j]·∂s_j/∂d2 for the
	// gradients gs of the scores, and returns Σ_j gs[j]·∂s_j/∂h. Where gs[j] is 0 (a pair
	// of weight 0, outside the support) both are 0, never NaN.
	PairGrads(gs, dot, d2 []float64, h float64, gdot, gd2 []float64) (gh float64)
}

// ParamPairKernel is a PairKernel with learned parameters θ of its own (a mixture's
// weight logits): TiledLocalMean and KernelAttention take θ as the node
// TiledOptions.KernelParams [PairParamCount()], evaluate the kernel at its values and
// return its gradient Σ over pairs of ∂L/∂s·∂s/∂θ, computed in the backward pass with the
// bandwidth's.
type ParamPairKernel interface {
	PairKernel
	// PairParamCount returns the length of θ.
	PairParamCount() int
	// PairScoresAt is PairScores at parameters theta.
	PairScoresAt(theta, s, dot, d2 []float64, h float64)
	// PairGradsAt is PairGrads at parameters theta that also adds Σ_j gs[j]·∂s_j/∂θ into
	// gtheta; a pair with gs[j] = 0 adds nothing (never NaN).
	PairGradsAt(theta, gs, dot, d2 []float64, h float64, gdot, gd2, gtheta []float64) (gh float64)
}

// TiledOptions are the optional parts of a TiledLocalMean call.
type TiledOptions struct {
	// Bandwidth is nil for the constant BandwidthValue, or a node [1] (one bandwidth for
	// every query), [Heads] (one per head) or [N, Tq] (one per query row).
	Bandwidth      *Node
	BandwidthValue float64
	// RelBias is nil or a table [P, 2M+1], P = 1 or Heads: the score of query t and key s
	// gains RelBias[p, clip(s − t − Offset, −M, M) + M] (a position kernel on relative
	// positions), p the query's head when P = Heads.
	RelBias *Node
	// KeyMask is nil or [B, Tk], zero marking keys that no query of batch element b sees.
	KeyMask *Node
	// KernelParams is the parameter vector θ [PairParamCount()] of a ParamPairKernel
	// (required for one, nil for any other kernel).
	KernelParams *Node
	// Heads is the number of heads in N = B·Heads (row n is batch n / Heads, head
	// n % Heads); 0 means 1.
	Heads int
	// Mask is the box kernel (causal, window, offset, hollow).
	Mask Mask
	// HeadsInFeatures takes q [B, Tq, H·d], k [B, Tk, H·d] and v [B, Tk, H·dv] and returns
	// [B, Tq, H·dv], head j in feature columns j·d..(j+1)·d−1 (Attention's layout, no head
	// split or merge copies); N = B·H in the shapes above.
	HeadsInFeatures bool
	// Dropout p drops the weights in training, each with probability p, the kept ones
	// scaled by 1/(1−p) and the normalisation using the undropped weights
	// (AttentionDropout's rule and mask); 0: none, and none in evaluation.
	Dropout float64
}

// Tile sizes of TiledLocalMean: query rows per block and keys per tile.
const (
	tileRows = 64
	tileKeys = 64
)

// TiledLocalMean is the local mean of THEORY.md §8 in O(T) memory: for queries q
// [N, Tq, d], keys k [N, Tk, d] and values v [N, Tk, dv] it returns [N, Tq, dv] with
//
//	m_t = Σ_s w_ts v_s,   w_ts = exp(s_ts) / Σ_u exp(s_tu),   s_ts = kern(q_t·k_s, ‖q_t − k_s‖²; h_t) + bias
//
// over the keys that opt.Mask and opt.KeyMask allow, the same function and the same
// edge-case rules as LocalMean of the kernel's scores. It walks the keys in tiles with a
// running maximum and sum per query (FlashAttention-2), keeps only the log-normaliser per
// query, and recomputes each tile's weights in the backward pass, so it never holds the
// N·Tq·Tk weights; tiles that the mask hides entirely (causal, window) are skipped, so a
// window of w keys costs O(T·w). Gradients flow to q, k, v, the bandwidth node and the
// relative-bias table. With opt.Dropout p > 0, in training, it drops its weights as
// AttentionDropout does (the same rule and mask), regenerating the mask tile by tile in
// the backward pass.
func (g *Graph) TiledLocalMean(kern PairKernel, q, k, v *Node, opt TiledOptions) *Node {
	spec, inputs, ok := g.pairInputs("TiledLocalMean", kern, q, k, v, opt)
	if !ok {
		return nil
	}
	tk := &tiledKernel{pairSpec: spec}
	if opt.Dropout == 0 || !g.Training() {
		return g.applyFused(tk, inputs...)
	}
	if g.rng == nil {
		return g.failf("TiledLocalMean: Dropout = %g, but the graph has no random generator", opt.Dropout)
	}
	g.usesRNG = true
	tk.drop = &fusedDrop{p: opt.Dropout, rng: g.rng}
	return g.applyFused(&tiledKernelDropout{tk}, inputs...)
}

// pairSpec is what TiledLocalMean and KernelAttention know of a call besides its
// tensors: the kernel, the layout, the mask, and where the optional inputs are.
type pairSpec struct {
	kern            PairKernel
	useDot, useDist bool
	heads           int
	mask            Mask
	h               float64
	hMode           int
	hIn, biasIn     int // input indices, 0 when absent
	maskIn, thetaIn int
	pk              ParamPairKernel // the kernel when it has parameters θ, else nil
	k32             PairKernel32    // the kernel's float32 rows, where it has them and reads at most one term
	mix32           []PairKernel32  // a mixture's components' float32 rows, where each has them
	nTheta          int
	headsInFeatures bool
	biasP, biasM    int
}

// pairInputs checks the arguments of TiledLocalMean or KernelAttention (op) and returns
// the call's spec and its inputs q, k, v, then the bandwidth, the bias table and the key
// mask where given; false after recording the error.
func (g *Graph) pairInputs(op string, kern PairKernel, q, k, v *Node, opt TiledOptions) (pairSpec, []*Node, bool) {
	fail := func(format string, args ...any) (pairSpec, []*Node, bool) {
		g.failf(op+": "+format, args...)
		return pairSpec{}, nil, false
	}
	if !g.ok(op, q, k, v) {
		return pairSpec{}, nil, false
	}
	if kern == nil {
		return fail("nil kernel")
	}
	if !(opt.Dropout >= 0 && opt.Dropout < 1) {
		return fail("Dropout = %g, want 0 ≤ p < 1", opt.Dropout)
	}
	qs, ks, vs := q.n.Shape(), k.n.Shape(), v.n.Shape()
	if qs.Dims() != 3 || ks.Dims() != 3 || vs.Dims() != 3 || qs[0] != ks[0] || ks[0] != vs[0] || qs[2] != ks[2] || ks[1] != vs[1] {
		return fail("queries %v, keys %v and values %v (want [N,Tq,d], [N,Tk,d], [N,Tk,dv])", qs, ks, vs)
	}
	heads := max(opt.Heads, 1)
	n := qs[0] // problems: batch × heads
	if opt.HeadsInFeatures {
		if qs[2]%heads != 0 || vs[2]%heads != 0 {
			return fail("%d heads do not divide the widths of queries %v and values %v", heads, qs, vs)
		}
		n *= heads
	} else if qs[0]%heads != 0 {
		return fail("%d heads do not divide %d rows", heads, qs[0])
	}
	if opt.Mask.Window < 0 || opt.Mask.Offset < 0 {
		return fail("mask %v, want a window and offset >= 0", opt.Mask)
	}
	sp := pairSpec{kern: kern, heads: heads, mask: opt.Mask, h: opt.BandwidthValue, headsInFeatures: opt.HeadsInFeatures}
	sp.useDot, sp.useDist = kern.PairTerms()
	if k32, ok := kern.(PairKernel32); ok && !(sp.useDot && sp.useDist) {
		sp.k32 = k32
	}
	inputs := []*Node{q, k, v}
	if opt.Bandwidth != nil {
		if !g.ok(op, opt.Bandwidth) {
			return pairSpec{}, nil, false
		}
		hs := opt.Bandwidth.n.Shape()
		switch {
		case hs.TotalSize() == 1:
			sp.hMode = hScalar
		case hs.Dims() == 1 && hs[0] == heads:
			sp.hMode = hHeads
		case hs.Dims() == 2 && hs[0] == n && hs[1] == qs[1]:
			sp.hMode = hRows
		default:
			return fail("bandwidth %v, want [1], [%d] or [%d, %d]", hs, heads, n, qs[1])
		}
		sp.hIn = len(inputs)
		inputs = append(inputs, opt.Bandwidth)
	} else if !(sp.h > 0) || math.IsInf(sp.h, 0) {
		return fail("bandwidth %g, want a positive finite value", sp.h)
	}
	if opt.RelBias != nil {
		if !g.ok(op, opt.RelBias) {
			return pairSpec{}, nil, false
		}
		bs := opt.RelBias.n.Shape()
		if bs.Dims() != 2 || (bs[0] != 1 && bs[0] != heads) || bs[1]%2 != 1 {
			return fail("relative bias %v, want [1 or %d, 2M+1]", bs, heads)
		}
		sp.biasP, sp.biasM = bs[0], bs[1]/2
		sp.biasIn = len(inputs)
		inputs = append(inputs, opt.RelBias)
	}
	if pk, ok := kern.(ParamPairKernel); ok {
		if opt.KernelParams == nil {
			return fail("kernel %s has %d parameters of its own but KernelParams is nil", kern.Name(), pk.PairParamCount())
		}
		if !g.ok(op, opt.KernelParams) {
			return pairSpec{}, nil, false
		}
		if ts := opt.KernelParams.n.Shape(); ts.Dims() != 1 || ts[0] != pk.PairParamCount() {
			return fail("kernel parameters %v, want [%d] for kernel %s", ts, pk.PairParamCount(), kern.Name())
		}
		sp.pk, sp.nTheta = pk, pk.PairParamCount()
		sp.k32 = nil // its scores depend on θ
		sp.mix32 = mixComponents(kern)
		sp.thetaIn = len(inputs)
		inputs = append(inputs, opt.KernelParams)
	} else if opt.KernelParams != nil {
		return fail("kernel parameters %v given, but kernel %s has none", opt.KernelParams.n.Shape(), kern.Name())
	}
	if opt.KeyMask != nil {
		if !g.ok(op, opt.KeyMask) {
			return pairSpec{}, nil, false
		}
		if ms := opt.KeyMask.n.Shape(); ms.Dims() != 2 || ms[0] != n/heads || ms[1] != ks[1] {
			return fail("key mask %v, want [%d, %d]", ms, n/heads, ks[1])
		}
		sp.maskIn = len(inputs)
		inputs = append(inputs, opt.KeyMask)
	}
	return sp, inputs, true
}

// Bandwidth modes of a pairSpec: the constant h, one input value, one per head, one
// per query row.
const (
	hConst = iota
	hScalar
	hHeads
	hRows
)

type tiledKernel struct {
	pairSpec
	// lse holds each query's log-normaliser M + log ℓ from the last forward pass (−Inf
	// for a query that sees nothing, NaN for a NaN row): O(N·Tq), all the backward pass
	// keeps besides the inputs and the output.
	lse  []float64
	drop *fusedDrop // with Dropout, in training; nil: none
	// Gradients of every input, computed together by the first backward call of a pass.
	grads   []*tensor.Dense
	gen     int
	gradGen int
}

func (k *tiledKernel) opName() string    { return "TiledLocalMean" }
func (k *tiledKernel) hashAttrs() string { return k.attrs() }

// attrs returns every attribute of the call, for hashAttrs.
func (k *pairSpec) attrs() string {
	return fmt.Sprintf("{kernel:%s,heads:%d,infeatures:%v,mask:%v,h:%g,hmode:%d,bias:%d/%d,keymask:%v,params:%d}",
		k.kern.Name(), k.heads, k.headsInFeatures, k.mask, k.h, k.hMode, k.biasP, k.biasM, k.maskIn > 0, k.nTheta)
}
func (k *pairSpec) arity() int {
	return 3 + b2i(k.hIn > 0) + b2i(k.biasIn > 0) + b2i(k.maskIn > 0) + b2i(k.thetaIn > 0)
}
func (k *pairSpec) diffWRT() []bool {
	d := make([]bool, k.arity())
	for i := range d {
		d[i] = k.maskIn == 0 || i != k.maskIn
	}
	return d
}
func (k *pairSpec) floatInputs() []bool {
	f := make([]bool, k.arity())
	for i := range f {
		f[i] = true
	}
	return f
}
func (k *pairSpec) outShape(in []tensor.Shape) (tensor.Shape, error) {
	return tensor.Shape{in[0][0], in[0][1], in[2][2]}, nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// tiledDims are the sizes of one TiledLocalMean call: n problems of tq queries and tk
// keys of width d (values dv) per head, rows lq (queries, keys) and lv (values, output)
// apart; with heads > 0 the heads share rows ([B, T, H·d], problem p = b·heads + h).
type tiledDims struct {
	n, tq, tk, d, dv int
	lq, lv, heads    int
}

// off returns where problem p's rows start in a tensor of rows × width per head, ld apart.
func (d tiledDims) off(p, rows, width, ld int) int {
	if d.heads > 0 {
		return (p/d.heads)*rows*ld + (p%d.heads)*width
	}
	return p * rows * width
}

// tiledArgs are one pass's inputs as slices of the op's dtype.
type tiledArgs[T float] struct {
	q, k, v, h, bias, km, theta []T
}

func tiledInputs[T float](k *pairSpec, in []*tensor.Dense) tiledArgs[T] {
	a := tiledArgs[T]{q: flat[T](in[0]), k: flat[T](in[1]), v: flat[T](in[2])}
	if k.hIn > 0 {
		a.h = flat[T](in[k.hIn])
	}
	if k.biasIn > 0 {
		a.bias = flat[T](in[k.biasIn])
	}
	if k.maskIn > 0 {
		a.km = flat[T](in[k.maskIn])
	}
	if k.thetaIn > 0 {
		a.theta = flat[T](in[k.thetaIn])
	}
	return a
}

func (k *pairSpec) dims(in []*tensor.Dense) tiledDims {
	qs, vs := in[0].Shape(), in[2].Shape()
	if k.headsInFeatures {
		h := k.heads
		return tiledDims{n: qs[0] * h, tq: qs[1], tk: vs[1], d: qs[2] / h, dv: vs[2] / h, lq: qs[2], lv: vs[2], heads: h}
	}
	return tiledDims{n: qs[0], tq: qs[1], tk: vs[1], d: qs[2], dv: vs[2], lq: qs[2], lv: vs[2]}
}

func (k *tiledKernel) forward(in []*tensor.Dense, out *tensor.Dense) error {
	d := k.dims(in)
	if len(k.lse) != d.n*d.tq {
		k.lse = make([]float64, d.n*d.tq)
	}
	k.gen++
	if k.drop != nil {
		k.drop.draw()
	}
	switch in[0].Dtype() {
	case Float32:
		tiledForward(k, d, gemm.Sgemm, tiledInputs[float32](&k.pairSpec, in), out.Float32s())
	case Float64:
		tiledForward(k, d, gemm.Dgemm, tiledInputs[float64](&k.pairSpec, in), out.Float64s())
	}
	return nil
}

// pairScratch is one worker's float64 buffers for a row of pairs: the terms the kernel
// reads, its scores and their gradients, and the squared norms of a problem's queries
// and keys.
type pairScratch struct {
	dot, d2, s, gs []float64 // one row of pairs
	gdot, gd2      []float64
	qq, kk         []float64 // squared norms of the problem's queries and keys
}

func newPairScratch(row, tq, tk int) pairScratch {
	return pairScratch{
		dot: make([]float64, row), d2: make([]float64, row), s: make([]float64, row),
		gs: make([]float64, row), gdot: make([]float64, row), gd2: make([]float64, row),
		qq: make([]float64, tq), kk: make([]float64, tk),
	}
}

// tileScratch is one worker's buffers for a block of rows and a tile of keys.
type tileScratch[T float] struct {
	dots, p, c []T // [tileRows, tileKeys]: q·k, weights, coefficient matrix
	t          []T // [tileKeys, tileRows]: a transposed tile (a packed gemm reads it faster)
	acc        []T // [tileRows, dv]
	pairScratch
}

func newTileScratch[T float](d tiledDims) *tileScratch[T] {
	return &tileScratch[T]{
		dots: make([]T, tileRows*tileKeys), p: make([]T, tileRows*tileKeys), c: make([]T, tileRows*tileKeys),
		t:           make([]T, tileRows*tileKeys),
		acc:         make([]T, tileRows*d.dv),
		pairScratch: newPairScratch(tileKeys, d.tq, d.tk),
	}
}

// problem is one (batch, head) slice of a call.
type problem[T float] struct {
	q, k, v []T
	km      []T // the batch element's key mask, or nil
	bias    []T // the head's relative-bias row [2M+1], or nil
	h       []T // per-row bandwidths [Tq], or nil
	h0      float64
	theta   []float64 // the kernel's parameters, or nil
}

func tiledProblem[T float](k *pairSpec, d tiledDims, a tiledArgs[T], p int) problem[T] {
	pr := problem[T]{
		q:  a.q[d.off(p, d.tq, d.d, d.lq):],
		k:  a.k[d.off(p, d.tk, d.d, d.lq):],
		v:  a.v[d.off(p, d.tk, d.dv, d.lv):],
		h0: k.h,
	}
	if a.km != nil {
		b := p / k.heads
		pr.km = a.km[b*d.tk : (b+1)*d.tk]
	}
	if a.bias != nil {
		row := 0
		if k.biasP > 1 {
			row = p % k.heads
		}
		w := 2*k.biasM + 1
		pr.bias = a.bias[row*w : (row+1)*w]
	}
	if a.theta != nil {
		pr.theta = make([]float64, len(a.theta))
		for i, x := range a.theta {
			pr.theta[i] = float64(x)
		}
	}
	switch k.hMode {
	case hScalar:
		pr.h0 = float64(a.h[0])
	case hHeads:
		pr.h0 = float64(a.h[p%k.heads])
	case hRows:
		pr.h = a.h[p*d.tq : (p+1)*d.tq]
	}
	return pr
}

func (pr *problem[T]) bandwidth(t int) float64 {
	if pr.h != nil {
		return float64(pr.h[t])
	}
	return pr.h0
}

// transposeTile sets dst[j·tileRows + i] = src[i·tileKeys + j] for i < rows, j < cols.
func transposeTile[T float](src, dst []T, rows, cols int) {
	for i := range rows {
		for j, x := range src[i*tileKeys : i*tileKeys+cols] {
			dst[j*tileRows+i] = x
		}
	}
}

func sqNorms[T float](x []T, rows, d, ld int, out []float64) {
	for i := range rows {
		out[i] = dot64(x[i*ld:i*ld+d], x[i*ld:i*ld+d])
	}
}

// pairRowTerms returns the terms that the kernel reads for query t and keys lo..hi−1
// (nil where it reads none), in sc's buffers: the dot products from dots (q_t·k_s for
// those keys, as the gemm gave them) and the squared distances ‖q_t‖² + ‖k_s‖² − 2q_t·k_s
// from the squared norms in sc.qq and sc.kk.
func pairRowTerms[T float](k *pairSpec, sc *pairScratch, dots []T, t, lo, hi int) (dot, d2 []float64) {
	w := hi - lo
	if k.useDot {
		dot = sc.dot[:w]
		for j, x := range dots[:w] {
			dot[j] = float64(x)
		}
	}
	if k.useDist {
		d2 = sc.d2[:w]
		qq, kk := sc.qq[t], sc.kk[lo:hi]
		for j, x := range dots[:w] {
			v := qq + kk[j] - 2*float64(x)
			if v < 0 { // round-off below 0; NaN stays NaN
				v = 0
			}
			d2[j] = v
		}
	}
	return dot, d2
}

// pairRowScores returns, in sc.s, the scores of query t against keys lo..hi−1: the
// kernel's log K at the query's bandwidth plus the relative bias.
func pairRowScores[T float](k *pairSpec, pr *problem[T], sc *pairScratch, dots []T, t, lo, hi int) []float64 {
	dot, d2 := pairRowTerms(k, sc, dots, t, lo, hi)
	s := sc.s[:hi-lo]
	if k.pk != nil {
		k.pk.PairScoresAt(pr.theta, s, dot, d2, pr.bandwidth(t))
	} else {
		k.kern.PairScores(s, dot, d2, pr.bandwidth(t))
	}
	if pr.bias != nil {
		addRelBias(k, s, pr.bias, t, lo)
	}
	return s
}

// pairGrads is the kernel's PairGrads (PairGradsAt for a kernel with parameters, which
// adds into gtheta) at bandwidth h.
func (k *pairSpec) pairGrads(theta, gs, dot, d2 []float64, h float64, gdot, gd2, gtheta []float64) float64 {
	if k.pk != nil {
		return k.pk.PairGradsAt(theta, gs, dot, d2, h, gdot, gd2, gtheta)
	}
	return k.kern.PairGrads(gs, dot, d2, h, gdot, gd2)
}

// biasSpan splits the keys lo..lo+n−1 of query t by their relative position
// r = s − t − Offset: keys j < j0 have r <= −M (bias entry 0), keys j >= j1 have r >= M
// (entry 2M), and the keys between take entry r + M, consecutive entries.
func (k *pairSpec) biasSpan(t, lo, n int) (j0, j1 int) {
	pos := t + k.mask.Offset
	j0 = min(max(pos-k.biasM-lo+1, 0), n)
	j1 = min(max(pos+k.biasM-lo, j0), n)
	return j0, j1
}

// addRelBias adds the relative bias row bias [2M+1] to the scores s of query t and keys
// lo..lo+len(s)−1.
func addRelBias[S, T float](k *pairSpec, s []S, bias []T, t, lo int) {
	j0, j1 := k.biasSpan(t, lo, len(s))
	m := k.biasM
	shift(s[:j0], S(bias[0]))
	if j1 > j0 {
		inner := bias[lo+j0-t-k.mask.Offset+m:]
		for j := j0; j < j1; j++ {
			s[j] += S(inner[j-j0])
		}
	}
	shift(s[j1:], S(bias[2*m]))
}

// shift adds a to every x[i], on vmath.Shift's vector loop in float32.
func shift[T float](x []T, a T) {
	if x32, ok := any(x).([]float32); ok {
		vmath.Shift(x32, float32(a))
		return
	}
	for i := range x {
		x[i] += a
	}
}

// addBiasGrads adds the score gradients gs of query t and keys lo..lo+len(gs)−1 into the
// gradient of the bias row, part [2M+1].
func addBiasGrads[T float](k *pairSpec, part []float64, gs []T, t, lo int) {
	j0, j1 := k.biasSpan(t, lo, len(gs))
	m := k.biasM
	part[0] += sumOf(gs[:j0])
	if j1 > j0 {
		inner := part[lo+j0-t-k.mask.Offset+m:]
		for j, x := range gs[j0:j1] {
			inner[j] += float64(x)
		}
	}
	part[2*m] += sumOf(gs[j1:])
}

// sumOf returns Σ x in float64: on vmath.Sum64's vector loop in float32, with four
// partial sums in float64 (an addition waiting on the one before would take a cycle
// count per element of its latency).
func sumOf[T float](x []T) float64 {
	if x32, ok := any(x).([]float32); ok {
		return vmath.Sum64(x32)
	}
	var s0, s1, s2, s3 float64
	j := 0
	for ; j+4 <= len(x); j += 4 {
		s0 += float64(x[j])
		s1 += float64(x[j+1])
		s2 += float64(x[j+2])
		s3 += float64(x[j+3])
	}
	for ; j < len(x); j++ {
		s0 += float64(x[j])
	}
	return (s0 + s1) + (s2 + s3)
}

// tileScores sets sc.s[:c1−c0] to the scores of query t against keys c0..c1−1 (row i of
// the block's dot-product tile), −Inf for the hidden keys, and returns whether any
// key of the tile is visible.
func tileScores[T float](k *tiledKernel, d tiledDims, pr *problem[T], sc *tileScratch[T], i, t, c0, c1 int) bool {
	lo, hi, self := k.mask.visible(t, d.tk)
	lo, hi = max(lo, c0), min(hi, c1)
	if hi <= lo {
		return false
	}
	w := c1 - c0
	s := pairRowScores(&k.pairSpec, pr, &sc.pairScratch, sc.dots[i*tileKeys:i*tileKeys+w], t, c0, c1)
	hideOutside(s[:w], math.Inf(-1), pr.km, c0, lo, hi, self)
	return true
}

// hideOutside sets x[j] (key c0 + j) to v for the keys a query does not see: outside
// lo..hi−1, itself (self), and those the key mask km hides.
func hideOutside[S, T float](x []S, v S, km []T, c0, lo, hi, self int) {
	for j := range min(lo-c0, len(x)) {
		x[j] = v
	}
	for j := max(hi-c0, 0); j < len(x); j++ {
		x[j] = v
	}
	if self >= lo && self < hi {
		x[self-c0] = v
	}
	if km != nil {
		for j, z := range km[c0 : c0+len(x)] {
			if z == 0 {
				x[j] = v
			}
		}
	}
}

// tileScores32 is tileScores on a PairKernel32's float32 rows: it sets row i of r.p to
// the scores of query t against keys c0..c1−1 from their dot products in row i of
// r.dots, which it overwrites with the terms the kernel reads (for the backward pass),
// −Inf for the keys the query does not see, and reports whether it sees any.
func tileScores32[T float](k *tiledKernel, pr *problem[T], r *tile32, i, t, tk, c0, c1 int) bool {
	lo, hi, self := k.mask.visible(t, tk)
	lo, hi = max(lo, c0), min(hi, c1)
	if hi <= lo {
		return false
	}
	w := c1 - c0
	s, x := r.p[i*tileKeys:i*tileKeys+w], r.dots[i*tileKeys:i*tileKeys+w]
	if _, ok := r.kern.terms(x, x, r.qq, r.kk, t, c0); !ok {
		clear(x)
	}
	k.k32.PairScores32(s, x, float32(pr.bandwidth(t)))
	if pr.bias != nil {
		addRelBias(&k.pairSpec, s, pr.bias, t, c0)
	}
	hideOutside(s, float32(math.Inf(-1)), pr.km, c0, lo, hi, self)
	return true
}

// tile32 holds one worker's float32 views of its tile scratch, for a PairKernel32 in a
// float32 run (nil otherwise): the tiles then take the kernel's float32 rows.
type tile32 struct {
	p, dots, c []float32
	acc        []float32  // the forward pass's outputs of the row block
	qq, kk     []float32  // the problem's squared norms
	cs         []float32  // [Tk] each key's Σ_t ∂L/∂d²_ts (backward)
	mix        *rowsMix32 // a mixture's rows (MixturePairKernel32), or nil
	kern       kernel32   // the kernel, when it is no mixture
}

// newTile32 returns the float32 views of a worker's scratch when the tiles run on float32
// rows (a PairKernel32 or a mixture of them, in a float32 run), else nil; acc takes a
// mixture's parameter gradients in the backward pass, from the log-normalisers lse.
func newTile32[T float](k *pairSpec, d tiledDims, sc *tileScratch[T], acc *pairAcc, lse []float64) *tile32 {
	p, ok := any(sc.p).([]float32)
	if !ok || (k.k32 == nil && k.mix32 == nil) {
		return nil
	}
	r := &tile32{p: p, dots: any(sc.dots).([]float32), c: any(sc.c).([]float32), acc: any(sc.acc).([]float32)}
	if k.mix32 != nil {
		r.mix = newRowsMix32(k, d, acc, lse, nil, nil, nil)
		return r
	}
	r.kern = newKernel32(k.k32)
	if k.useDist {
		r.qq, r.kk, r.cs = make([]float32, d.tq), make([]float32, d.tk), make([]float32, d.tk)
	}
	return r
}

// start begins a problem: its squared norms when the kernel reads distances (a
// mixture's weights, norms and bias factors, and in the backward pass its sums cleared).
func (r *tile32) start(k *pairSpec, d tiledDims, pr any) {
	if r.mix != nil {
		r.mix.beginGrads(pr.(*problem[float32]), 0) // norms nil: formed here
		return
	}
	if k.useDist {
		p := pr.(*problem[float32])
		sqNorms32(p.q, d.tq, d.d, d.lq, r.qq)
		sqNorms32(p.k, d.tk, d.d, d.lq, r.kk)
		clear(r.cs)
	}
}

// keyNorms returns each key's Σ_t ∂L/∂d²_ts of the problem.
func (r *tile32) keyNorms() []float32 {
	if r.mix != nil {
		return r.mix.cs
	}
	return r.cs
}

func tiledForward[T float](k *tiledKernel, d tiledDims, mm gemmFunc[T], a tiledArgs[T], out []T) {
	parallelFor(d.n, d.tq*d.tk*(d.d+d.dv+8), func(plo, phi int) {
		sc := newTileScratch[T](d)
		r32 := newTile32(&k.pairSpec, d, sc, nil, nil)
		mx := make([]float64, tileRows)
		ell := make([]float64, tileRows)
		bad := make([]bool, tileRows)
		for p := plo; p < phi; p++ {
			pr := tiledProblem(&k.pairSpec, d, a, p)
			op := out[d.off(p, d.tq, d.dv, d.lv):]
			lse := k.lse[p*d.tq : (p+1)*d.tq]
			var pr32 *problem[float32]
			if r32 != nil {
				pr32 = any(&pr).(*problem[float32])
				r32.start(&k.pairSpec, d, pr32)
			} else {
				problemNorms(&k.pairSpec, d, &pr, &sc.pairScratch)
			}
			for r0 := 0; r0 < d.tq; r0 += tileRows {
				r1 := min(r0+tileRows, d.tq)
				rb := r1 - r0
				clo, chi := keyRange(k.mask, r0, r1, d.tk)
				acc := sc.acc[:rb*d.dv]
				clear(acc)
				for i := range rb {
					mx[i], ell[i], bad[i] = math.Inf(-1), 0, false
				}
				for c0 := clo; c0 < chi; c0 += tileKeys {
					c1 := min(c0+tileKeys, chi)
					w := c1 - c0
					if k.useDot || k.useDist {
						mm(false, true, rb, w, d.d, 1, pr.q[r0*d.lq:], d.lq, pr.k[c0*d.lq:], d.lq, 0, sc.dots, tileKeys)
					}
					seen := false
					for i := range rb {
						prow := sc.p[i*tileKeys : i*tileKeys+w]
						if r32 != nil && r32.mix != nil { // a mixture: the row in value space
							if r32.mixRow(pr32, i, r0+i, c0, c1, &bad[i], &mx[i], &ell[i], r32.acc[i*d.dv:(i+1)*d.dv]) {
								seen = true
							}
							continue
						}
						tmax := math.Inf(-1)
						var s []float64
						if r32 != nil { // the scores in prow itself
							if !tileScores32(k, &pr, r32, i, r0+i, d.tk, c0, c1) {
								clear(prow)
								continue
							}
							tmax = float64(vmath.Max(r32.p[i*tileKeys : i*tileKeys+w])) // NaN wins
						} else {
							if !tileScores(k, d, &pr, sc, i, r0+i, c0, c1) {
								clear(prow)
								continue
							}
							s = sc.s[:w]
							for _, x := range s {
								tmax = max(tmax, x) // NaN wins
							}
						}
						if math.IsNaN(tmax) || math.IsInf(tmax, 1) {
							bad[i] = true
						}
						if bad[i] || math.IsInf(tmax, -1) {
							clear(prow)
							continue
						}
						seen = true
						if tmax > mx[i] {
							if !math.IsInf(mx[i], -1) {
								f := math.Exp(mx[i] - tmax)
								ell[i] *= f
								scaleBy(acc[i*d.dv:(i+1)*d.dv], T(f))
							}
							mx[i] = tmax
						}
						if r32 != nil {
							ell[i] += float64(expShiftSum(prow, T(mx[i])))
							continue
						}
						for j, x := range s {
							prow[j] = T(x - mx[i])
						}
						ell[i] += float64(expShiftSum(prow, 0))
					}
					if seen {
						if k.drop != nil { // the sums ell keep the undropped weights
							dropTile(k.drop, sc.p, p*d.tq*d.tk, d.tk, r0, rb, c0, w)
						}
						mm(false, false, rb, d.dv, w, 1, sc.p, tileKeys, pr.v[c0*d.lv:], d.lv, 1, acc, d.dv)
					}
				}
				for i := range rb {
					t := r0 + i
					o := op[t*d.lv : t*d.lv+d.dv]
					switch {
					case bad[i]:
						for c := range o {
							o[c] = T(math.NaN())
						}
						lse[t] = math.NaN()
					case ell[i] == 0:
						clear(o)
						lse[t] = math.Inf(-1)
					default:
						inv := 1 / ell[i]
						for c, x := range acc[i*d.dv : (i+1)*d.dv] {
							o[c] = T(float64(x) * inv)
						}
						lse[t] = mx[i] + math.Log(ell[i])
					}
				}
			}
		}
	})
}

// stateBufs: the gradients of the inputs computed together by the first backward call.
func (k *tiledKernel) stateBufs(in []tensor.Shape) []stateBuf { return inputGradBufs(nil, in) }

// useState takes the plan's buffers; gradBuffers makes those it left out.
func (k *tiledKernel) useState(bufs []*tensor.Dense) { k.grads = bufs }

func (k *tiledKernel) backward(wrt int, in []*tensor.Dense, out, gout, dst *tensor.Dense) error {
	if k.gradGen != k.gen || len(k.grads) != len(in) {
		k.grads = gradBuffers(k.grads, in)
		d := k.dims(in)
		switch in[0].Dtype() {
		case Float32:
			tiledBackward(k, d, gemm.Sgemm, tiledInputs[float32](&k.pairSpec, in), out.Float32s(), gout.Float32s(), tiledInputs[float32](&k.pairSpec, k.grads))
		case Float64:
			tiledBackward(k, d, gemm.Dgemm, tiledInputs[float64](&k.pairSpec, in), out.Float64s(), gout.Float64s(), tiledInputs[float64](&k.pairSpec, k.grads))
		}
		k.gradGen = k.gen
	}
	copyGrad(dst, k.grads[wrt])
	return nil
}

// gradBuffers returns grads resized to one zero-initialised tensor per input of in.
func gradBuffers(grads []*tensor.Dense, in []*tensor.Dense) []*tensor.Dense {
	if len(grads) != len(in) {
		grads = make([]*tensor.Dense, len(in))
	}
	for i, x := range in {
		if grads[i] == nil || !grads[i].Shape().Eq(x.Shape()) || grads[i].Dtype() != x.Dtype() {
			grads[i] = newDense(x.Dtype(), x.Shape())
		}
	}
	return grads
}

// copyGrad copies a gradient computed ahead into the backward op's output.
func copyGrad(dst, src *tensor.Dense) {
	switch dst.Dtype() {
	case Float32:
		copy(dst.Float32s(), src.Float32s())
	case Float64:
		copy(dst.Float64s(), src.Float64s())
	}
}

// tiledBackward computes every input's gradient into gr (q, k, v, the bandwidth and the
// bias table; the key mask's slot stays unused): per block and tile it recomputes the
// weights w = exp(s − lse), then dv += wᵀ·dm, gs = w ⊙ (dm·vᵀ − dm·m) (THEORY.md §8), and
// passes gs through the kernel (PairGrads) to the dot products and squared distances.
func tiledBackward[T float](k *tiledKernel, d tiledDims, mm gemmFunc[T], a tiledArgs[T], out, dm []T, gr tiledArgs[T]) {
	clear(gr.q)
	clear(gr.k)
	clear(gr.v)
	var hRows []float64 // per (problem, row) bandwidth gradients
	if gr.h != nil {
		hRows = make([]float64, d.n*d.tq)
	}
	var biasParts []float64 // per problem, [2M+1]
	bw := 2*k.biasM + 1
	if gr.bias != nil {
		biasParts = make([]float64, d.n*bw)
	}
	var thetaParts []float64 // per problem, [nTheta]
	if gr.theta != nil {
		thetaParts = make([]float64, d.n*k.nTheta)
	}
	parallelFor(d.n, d.tq*d.tk*(2*d.d+2*d.dv+8), func(plo, phi int) {
		sc := newTileScratch[T](d)
		r32 := newTile32(&k.pairSpec, d, sc, &pairAcc{hRows: hRows, biasParts: biasParts, thetaParts: thetaParts}, k.lse)
		delta := make([]float64, tileRows)
		rs := make([]float64, tileRows)
		cs := make([]float64, d.tk)
		var zeros []float32 // the terms of a kernel that reads none
		if r32 != nil && !k.useDot && !k.useDist {
			zeros = make([]float32, tileKeys)
		}
		var keep []T // with dropout, a tile's factors keep/(1−p)
		if k.drop != nil {
			keep = make([]T, tileRows*tileKeys)
		}
		for p := plo; p < phi; p++ {
			pr := tiledProblem(&k.pairSpec, d, a, p)
			lse := k.lse[p*d.tq : (p+1)*d.tq]
			op := out[d.off(p, d.tq, d.dv, d.lv):]
			dmp := dm[d.off(p, d.tq, d.dv, d.lv):]
			dq := gr.q[d.off(p, d.tq, d.d, d.lq):]
			dk := gr.k[d.off(p, d.tk, d.d, d.lq):]
			dv := gr.v[d.off(p, d.tk, d.dv, d.lv):]
			var pr32 *problem[float32]
			if r32 != nil {
				pr32 = any(&pr).(*problem[float32])
				r32.start(&k.pairSpec, d, pr32)
			} else if problemNorms(&k.pairSpec, d, &pr, &sc.pairScratch) {
				clear(cs)
			}
			for r0 := 0; r0 < d.tq; r0 += tileRows {
				r1 := min(r0+tileRows, d.tq)
				rb := r1 - r0
				clo, chi := keyRange(k.mask, r0, r1, d.tk)
				for i := range rb {
					t := r0 + i
					delta[i] = dot64(dmp[t*d.lv:t*d.lv+d.dv], op[t*d.lv:t*d.lv+d.dv])
					rs[i] = 0
				}
				for c0 := clo; c0 < chi; c0 += tileKeys {
					c1 := min(c0+tileKeys, chi)
					w := c1 - c0
					if k.useDot || k.useDist {
						mm(false, true, rb, w, d.d, 1, pr.q[r0*d.lq:], d.lq, pr.k[c0*d.lq:], d.lq, 0, sc.dots, tileKeys)
					}
					// The weights first; then dm·vᵀ goes into c, which becomes the
					// coefficients ∂L/∂dot − 2∂L/∂d² row by row.
					seen := false
					for i := range rb {
						t := r0 + i
						prow := sc.p[i*tileKeys : i*tileKeys+w]
						if r32 != nil && r32.mix != nil {
							s32 := r32.p[i*tileKeys : i*tileKeys+w]
							m, ok := r32.mix.tileValues(pr32, s32, r32.dots[i*tileKeys:i*tileKeys+w], t, c0, c1)
							if math.IsInf(lse[t], 0) || math.IsNaN(lse[t]) || !ok {
								clear(prow)
								continue
							}
							seen = true
							vmath.Scale(s32, float32(math.Exp(float64(m)-lse[t])))
							continue
						}
						if r32 != nil {
							if math.IsInf(lse[t], 0) || math.IsNaN(lse[t]) ||
								!tileScores32(k, &pr, r32, i, t, d.tk, c0, c1) {
								clear(prow)
								continue
							}
							seen = true
							expShiftSum(prow, T(lse[t]))
							continue
						}
						if math.IsInf(lse[t], 0) || math.IsNaN(lse[t]) || !tileScores(k, d, &pr, sc, i, t, c0, c1) {
							clear(prow)
							continue
						}
						seen = true
						for j, x := range sc.s[:w] {
							prow[j] = T(x - lse[t])
						}
						expShiftSum(prow, 0)
					}
					if !seen {
						continue
					}
					if keep != nil { // dropout (fusedDrop): dv += Dᵀ·dm, and dm·vᵀ ⊙ keep/(1−p)
						tileFactors(k.drop, keep, p*d.tq*d.tk, d.tk, r0, rb, c0, w)
						transposeTileScaled(sc.p, keep, sc.t, rb, w)
					} else {
						transposeTile(sc.p, sc.t, rb, w)
					}
					mm(false, false, w, d.dv, rb, 1, sc.t, tileRows, dmp[r0*d.lv:], d.lv, 1, dv[c0*d.lv:], d.lv)
					mm(false, true, rb, w, d.dv, 1, dmp[r0*d.lv:], d.lv, pr.v[c0*d.lv:], d.lv, 0, sc.c, tileKeys) // dm·vᵀ
					if keep != nil {
						scaleTile(sc.c, keep, rb, w)
					}
					needQK := k.useDot || k.useDist
					for i := range rb {
						t := r0 + i
						prow := sc.p[i*tileKeys : i*tileKeys+w]
						crow := sc.c[i*tileKeys : i*tileKeys+w]
						if math.IsInf(lse[t], 0) || math.IsNaN(lse[t]) {
							clear(crow)
							continue
						}
						if r32 != nil && r32.mix != nil {
							rs[i] += r32.mix.coefs(pr32, r32.c[i*tileKeys:i*tileKeys+w], r32.p[i*tileKeys:i*tileKeys+w],
								r32.dots[i*tileKeys:i*tileKeys+w], delta[i], t, c0, c1, p)
							continue
						}
						if r32 != nil {
							rs[i] += tileCoefs32(k, &pr, r32, zeros, biasParts, hRows, delta[i], i, t, p, d.tq, c0, c1)
							continue
						}
						gs := sc.gs[:w]
						nz := false
						for j, pj := range prow {
							gs[j] = float64(pj) * (float64(crow[j]) - delta[i])
							nz = nz || gs[j] != 0
						}
						if !nz {
							clear(crow)
							continue
						}
						if biasParts != nil {
							addBiasGrads(&k.pairSpec, biasParts[p*bw:(p+1)*bw], gs, t, c0)
						}
						r := pairRowCoefs(&k.pairSpec, &sc.pairScratch, &pr, gs, sc.dots[i*tileKeys:i*tileKeys+w], crow, t, c0, c1, p, d.tq, hRows, thetaParts, cs)
						if k.useDist {
							rs[i] += r
						}
					}
					if needQK {
						mm(false, false, rb, d.d, w, 1, sc.c, tileKeys, pr.k[c0*d.lq:], d.lq, 1, dq[r0*d.lq:], d.lq)
						transposeTile(sc.c, sc.t, rb, w)
						mm(false, false, w, d.d, rb, 1, sc.t, tileRows, pr.q[r0*d.lq:], d.lq, 1, dk[c0*d.lq:], d.lq)
					}
				}
				if k.useDist {
					addNormGrads(dq, pr.q, rs[:rb], r0, d.lq, d.d)
				}
			}
			if k.useDist && r32 != nil {
				addNormGrads(dk, pr.k, r32.keyNorms(), 0, d.lq, d.d)
			} else if k.useDist {
				addNormGrads(dk, pr.k, cs[:d.tk], 0, d.lq, d.d)
			}
		}
	})
	pairParamGrads(&k.pairSpec, d.n, d.tq, hRows, biasParts, thetaParts, gr)
}

// tileCoefs32 is the backward pass's row of a tile on a PairKernel32's float32 rows: it
// turns query t's products dm·vᵀ with keys c0..c1−1 (row i of r.c) into the coefficients
// of its dot products, from its weights (row i of r.p) and the terms tileScores32 left in
// row i of r.dots (zeros for a kernel that reads none), adds the bias and bandwidth
// gradients (biasParts, hRows of problem p) and each key's ∂L/∂d² into r.cs, and returns
// the row's Σ ∂L/∂d².
func tileCoefs32[T float](k *tiledKernel, pr *problem[T], r *tile32, zeros []float32, biasParts, hRows []float64,
	delta float64, i, t, p, tq, c0, c1 int) float64 {
	w := c1 - c0
	crow := r.c[i*tileKeys : i*tileKeys+w]
	vmath.ScoreGrad(crow, r.p[i*tileKeys:i*tileKeys+w], float32(delta), 1) // w ⊙ (dm·vᵀ − δ)
	if biasParts != nil {
		bw := 2*k.biasM + 1
		addBiasGrads(&k.pairSpec, biasParts[p*bw:(p+1)*bw], crow, t, c0)
	}
	x := r.dots[i*tileKeys : i*tileKeys+w]
	if zeros != nil {
		x = zeros[:w]
	}
	var cs []float32
	if k.useDist {
		cs = r.cs[c0:c1]
	}
	gh, rowD2 := r.kern.termCoefs(crow, crow, x, cs, float32(pr.bandwidth(t)), false)
	if hRows != nil {
		hRows[p*tq+t] += gh
	}
	return rowD2
}

// thetaPart returns problem p's part [n] of the kernel-parameter gradients, nil without.
func thetaPart(parts []float64, n, p int) []float64 {
	if parts == nil {
		return nil
	}
	return parts[p*n : (p+1)*n]
}

// pairParamGrads writes the gradients of the bandwidth input, of the bias table and of
// the kernel's parameters into gr from hRows (per problem and query row), biasParts (per
// problem, [2M+1]) and thetaParts (per problem, [nTheta]).
func pairParamGrads[T float](k *pairSpec, n, tq int, hRows, biasParts, thetaParts []float64, gr tiledArgs[T]) {
	if gr.theta != nil {
		sums := make([]float64, k.nTheta)
		for i, x := range thetaParts {
			sums[i%k.nTheta] += x
		}
		for i, x := range sums {
			gr.theta[i] = T(x)
		}
	}
	switch {
	case gr.h == nil:
	case k.hMode == hScalar:
		var s float64
		for _, x := range hRows {
			s += x
		}
		gr.h[0] = T(s)
	case k.hMode == hHeads:
		sums := make([]float64, k.heads)
		for i, x := range hRows {
			sums[(i/tq)%k.heads] += x
		}
		for j, x := range sums {
			gr.h[j] = T(x)
		}
	default:
		for i, x := range hRows {
			gr.h[i] = T(x)
		}
	}
	if gr.bias != nil {
		bw := 2*k.biasM + 1
		clear(gr.bias)
		for p := range n {
			row := 0
			if k.biasP > 1 {
				row = p % k.heads
			}
			for j, x := range biasParts[p*bw : (p+1)*bw] {
				gr.bias[row*bw+j] += T(x)
			}
		}
	}
}

// addNormGrads adds 2·g[i]·x_{r0+i} to the rows r0, r0+1, … of dx (rows ld apart, d wide):
// the gradient of the squared norms in ‖q − k‖² = ‖q‖² − 2q·k + ‖k‖², for g the sums of
// the score gradients over each query's keys (dq) or each key's queries (dk).
func addNormGrads[T, G float](dx, x []T, g []G, r0, ld, d int) {
	if dx32, ok := any(dx).([]float32); ok {
		x32 := any(x).([]float32)
		var f [64]float32 // the rows' factors, a chunk at a time: one vector call per chunk
		for c0 := 0; c0 < len(g); c0 += len(f) {
			n := min(len(f), len(g)-c0)
			for i, gi := range g[c0 : c0+n] {
				f[i] = float32(2 * gi)
			}
			o := (r0 + c0) * ld
			vmath.AddScaledRows(dx32[o:], x32[o:], f[:n], ld, d)
		}
		return
	}
	for i, gi := range g {
		t := r0 + i
		f := T(2 * gi)
		for c, v := range x[t*ld : t*ld+d] {
			dx[t*ld+c] += f * v
		}
	}
}

// pairRowCoefs turns the score gradients gs of query t's pairs with keys lo…hi−1 (of
// problem p) into the coefficients c[j] = ∂L/∂dot_j − 2·∂L/∂d2_j of their q·k products;
// it adds the row's bandwidth gradient to hRows (per-row bandwidths; nil otherwise), the
// kernel parameters' to their part of thetaParts and each key's ∂L/∂d2 to cs[lo+j], and
// returns the row's Σ_j ∂L/∂d2 (the coefficient of the query's ‖q‖² term; 0 when the
// kernel reads no distance). KernelAttention and TiledLocalMean share it.
func pairRowCoefs[T float](k *pairSpec, sc *pairScratch, pr *problem[T], gs []float64, dots, c []T, t, lo, hi, p, tq int,
	hRows, thetaParts, cs []float64) (rowD2 float64) {
	dot, d2 := pairRowTerms(k, sc, dots, t, lo, hi)
	gdot, gd2 := sc.gdot[:hi-lo], sc.gd2[:hi-lo]
	clear(gdot)
	clear(gd2)
	gh := k.pairGrads(pr.theta, gs, dot, d2, pr.bandwidth(t), gdot, gd2, thetaPart(thetaParts, k.nTheta, p))
	if hRows != nil {
		hRows[p*tq+t] += gh
	}
	for j := range c {
		c[j] = T(gdot[j] - 2*gd2[j])
	}
	if k.useDist {
		for j, x := range gd2 {
			rowD2 += x
			cs[lo+j] += x
		}
	}
	return rowD2
}

// problemNorms sets the squared norms ‖q_t‖² and ‖k_s‖² of problem pr in sc when the
// kernel reads squared distances (‖q − k‖² = ‖q‖² − 2q·k + ‖k‖²), and reports whether it
// does.
func problemNorms[T float](k *pairSpec, d tiledDims, pr *problem[T], sc *pairScratch) bool {
	if !k.useDist {
		return false
	}
	sqNorms(pr.q, d.tq, d.d, d.lq, sc.qq)
	sqNorms(pr.k, d.tk, d.d, d.lq, sc.kk)
	return true
}

// mixRow is the forward pass's row i (query t, keys c0..c1−1) of a tile for a mixture: its
// values and their scale m (rowsMix32.tileValues) in place of scores, folded into the
// query's running scale mx, sum ell and output acc; it reports whether the row adds
// anything, and marks the query bad (NaN) for a NaN or +Inf score.
func (r *tile32) mixRow(pr *problem[float32], i, t, c0, c1 int, bad *bool, mx, ell *float64, acc []float32) bool {
	w := c1 - c0
	s := r.p[i*tileKeys : i*tileKeys+w]
	m, ok := r.mix.tileValues(pr, s, r.dots[i*tileKeys:i*tileKeys+w], t, c0, c1)
	if top := vmath.Max(s); !ok || top != top {
		*bad = true
	} else if top == 0 && !*bad {
		return false // nothing seen in this tile
	}
	if *bad {
		clear(s)
		return false
	}
	tm := float64(m)
	if tm > *mx {
		if !math.IsInf(*mx, -1) {
			f := math.Exp(*mx - tm)
			*ell *= f
			vmath.Scale(acc, float32(f))
		}
		*mx = tm
	}
	vmath.Scale(s, float32(math.Exp(tm-*mx)))
	*ell += vmath.Sum64(s)
	return true
}
