package layers

import (
	"fmt"

	"github.com/locusml/locus/autodiff"
)

// AttentionConfig configures a KernelAttention layer. The zero values of Kernel and
// Bandwidth give standard scaled dot-product attention.
type AttentionConfig struct {
	Dim   int // model width d: query input and output
	Heads int // number of heads; Dim must be a multiple
	KVDim int // width of the key/value input (cross-attention); 0 means Dim

	Kernel    ContentKernel   // the localization kernel; nil means Exponential{}
	Bandwidth BandwidthConfig // fixed √d_head by default

	Causal bool // box kernel 1[s <= t]
	Window int  // box kernel 1[|t − s| < Window] if > 0
	Hollow bool // leave-one-out: a query never sees its own position

	Rotary     bool    // rotary position embedding of queries and keys
	RotaryBase float64 // 0 means 10000

	NoBias bool // omit the biases of the q, k, v and o maps
	Init   Init

	// Tiling chooses between the local mean that keeps its weights (fast at short
	// lengths) and the tiled one in O(T) memory; the zero value picks by length.
	Tiling Tiling

	// RandomFeatures m > 0 replaces the exponential or Gaussian kernel by m positive
	// orthogonal random features (FAVOR+, randomfeatures.go); 0 is exact attention.
	RandomFeatures int
	// RandomFeatureSeed, mixed with the layer's scope name, draws the features.
	RandomFeatureSeed uint64

	// Dropout p drops the local mean's weights in training, each with probability p, the
	// kept ones scaled by 1/(1−p), the normalisation using the undropped weights (GPT-2's
	// attention dropout); 0: none. The layer keeps its path, tiled or not: the fused ops
	// drop inside (autodiff's AttentionDropout, KernelAttention and TiledLocalMean with
	// Dropout), the general path through LocalMeanDropout. Random-feature attention has
	// no weights, and refuses it.
	Dropout float64
}

// Tiling says when KernelAttention computes its local mean tile by tile
// (autodiff.Graph.TiledLocalMean: O(T) memory, weights recomputed in the backward pass)
// instead of keeping the N·Tq·Tk weights. Both compute the same function.
type Tiling int

const (
	// TilingAuto tiles from TiledMinKeys keys on (TiledMinKeysStandard for standard
	// attention, whose fused op with stored weights is faster).
	TilingAuto Tiling = iota
	// TilingNever always keeps the weights.
	TilingNever
	// TilingAlways always tiles (where the kernel allows it).
	TilingAlways
)

// The numbers of keys from which TilingAuto tiles (README, "Long sequences"). The stored
// paths are faster in CPU time at every length measured (a kernel's tiles take 1.2–1.4× the
// stored path's time from 512 to 2048 keys, standard attention's 1.4–1.7×), so each tiles
// only where its stored arrays grow large: standard attention keeps N·Tq·Tk weights and
// tiles from 2048 keys, where they take gigabytes; a kernel keeps its pair terms beside its
// weights, twice as much per pair, and tiles from 1024 keys, where it holds half of what
// standard attention holds just below 2048.
const (
	TiledMinKeys         = 1024
	TiledMinKeysStandard = 2048
)

var tilingNames = []string{"auto", "never", "always"}

// String returns auto, never or always.
func (t Tiling) String() string { return stringEnum("Tiling", tilingNames, t) }

// MarshalText returns the tiling's name.
func (t Tiling) MarshalText() ([]byte, error) { return marshalEnum("tiling", tilingNames, t) }

// UnmarshalText parses a tiling's name.
func (t *Tiling) UnmarshalText(b []byte) (err error) {
	*t, err = parseEnum[Tiling]("tiling", tilingNames, string(b))
	return err
}

// tiles reports whether a call over tk keys takes the tiled local mean. A graph that taps
// the local-mean weights (autodiff.Graph.Tapping: inspect -attention) keeps them, whatever
// the tiling.
func (a *KernelAttention) tiles(g *autodiff.Graph, tk int) bool {
	if g.Tapping() {
		return false
	}
	switch a.cfg.Tiling {
	case TilingNever:
		return false
	case TilingAlways:
		return true
	}
	if a.standard() {
		return tk >= TiledMinKeysStandard
	}
	return tk >= TiledMinKeys
}

// pairKernel returns the content kernel as the tiled local mean evaluates it, if it can.
func (a *KernelAttention) pairKernel() (autodiff.PairKernel, bool) {
	pk := pairOf(contentOf(a.Kernel))
	if pk == nil {
		return nil, false
	}
	for _, f := range positionFactors(a.Kernel) {
		if _, ok := f.(RelativePositionKernel); !ok {
			return nil, false
		}
	}
	return pk, true
}

// Validate reports the first invalid field.
func (c AttentionConfig) Validate() error {
	switch {
	case c.Dim <= 0:
		return fmt.Errorf("AttentionConfig.Dim = %d, want > 0", c.Dim)
	case c.Heads <= 0:
		return fmt.Errorf("AttentionConfig.Heads = %d, want > 0", c.Heads)
	case c.Dim%c.Heads != 0:
		return fmt.Errorf("AttentionConfig.Dim = %d is not a multiple of Heads = %d", c.Dim, c.Heads)
	case c.KVDim < 0:
		return fmt.Errorf("AttentionConfig.KVDim = %d, want >= 0 (0 means Dim)", c.KVDim)
	case c.Window < 0:
		return fmt.Errorf("AttentionConfig.Window = %d, want >= 0", c.Window)
	case c.Rotary && (c.Dim/c.Heads)%2 != 0:
		return fmt.Errorf("AttentionConfig.Rotary needs an even head width, got %d", c.Dim/c.Heads)
	case c.RotaryBase < 0:
		return fmt.Errorf("AttentionConfig.RotaryBase = %g, want >= 0", c.RotaryBase)
	case c.RandomFeatures < 0 || c.RandomFeatures > MaxRandomFeatures:
		return fmt.Errorf("AttentionConfig.RandomFeatures = %d, want 0 (exact attention) to %d", c.RandomFeatures, MaxRandomFeatures)
	case c.Tiling < TilingAuto || c.Tiling > TilingAlways:
		return fmt.Errorf("AttentionConfig.Tiling = %v, want auto, never or always", c.Tiling)
	case !(c.Dropout >= 0 && c.Dropout < 1):
		return fmt.Errorf("AttentionConfig.Dropout = %g, want 0 <= p < 1", c.Dropout)
	case c.Dropout > 0 && c.RandomFeatures > 0:
		return fmt.Errorf("AttentionConfig.Dropout = %g with RandomFeatures = %d: random-feature attention has no weights to drop", c.Dropout, c.RandomFeatures)
	}
	if err := c.Bandwidth.Validate(); err != nil {
		return fmt.Errorf("AttentionConfig.%w", err)
	}
	return c.Init.validate("AttentionConfig.Init")
}

// KernelAttention is multi-head attention as a local mean with a learned kernel
// (THEORY.md §5): per head j, queries q = x W_Qᵀ, keys k = m W_Kᵀ and values v = m W_Vᵀ
// restricted to feature columns j·dh..(j+1)·dh−1, the local mean of the values under
// Kernel at the configured bandwidth and box, then the output map W_O over the merged
// heads. With the exponential kernel and fixed bandwidth √dh it is exactly
// softmax(QKᵀ/√dh)V, PyTorch's attention.
//
// Parameters under its scope: q, k, v, o (Linear: `q.weight` [Dim, Dim], `k.weight`
// [Dim, KVDim], ...), `bandwidth.*` for learned bandwidths, `kernel.*` for learnable
// kernels.
type KernelAttention struct {
	Q, K, V, O *Linear
	// Kernel is the bound kernel.
	Kernel ContentKernel
	Heads  int
	DHead  int
	cfg    AttentionConfig
	bw     *bandwidth
	scope  string
	rf     []float64 // [RandomFeatures, DHead] feature rows, when RandomFeatures > 0
	// unfused sends every kernel through the general path (scores, then LocalMean):
	// the reference that the tests compare the fused ops with.
	unfused bool
}

// NewKernelAttention creates the layer's parameters under s.
func NewKernelAttention(s autodiff.Scope, cfg AttentionConfig) (*KernelAttention, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("kernel attention %q: %w", s.Name(), err)
	}
	if cfg.KVDim == 0 {
		cfg.KVDim = cfg.Dim
	}
	a := &KernelAttention{Heads: cfg.Heads, DHead: cfg.Dim / cfg.Heads, cfg: cfg, scope: s.Name(), Kernel: cfg.Kernel}
	var err error
	lin := func(name string, in int) *Linear {
		if err != nil {
			return nil
		}
		var l *Linear
		l, err = NewLinear(s.Sub(name), LinearConfig{In: in, Out: cfg.Dim, NoBias: cfg.NoBias, Init: cfg.Init})
		return l
	}
	a.Q, a.K, a.V, a.O = lin("q", cfg.Dim), lin("k", cfg.KVDim), lin("v", cfg.KVDim), lin("o", cfg.Dim)
	if err != nil {
		return nil, err
	}
	if a.Kernel == nil {
		a.Kernel = Exponential{}
	}
	if l, ok := a.Kernel.(Learnable); ok {
		if a.Kernel, err = l.Bind(s.Sub("kernel"), cfg.Heads); err != nil {
			return nil, err
		}
	}
	if _, uniform := contentOf(a.Kernel).(Uniform); uniform && learnsBandwidth(cfg.Bandwidth.Mode) {
		return nil, fmt.Errorf("kernel attention %q: kernel %s has no bandwidth to learn (its content kernel is uniform): use the fixed bandwidth", s.Name(), a.Kernel.Name())
	}
	if err := randomFeatureCheck(cfg, a.Kernel); err != nil {
		return nil, fmt.Errorf("kernel attention %q: %w", s.Name(), err)
	}
	if a.bw, err = newBandwidth(s.Sub("bandwidth"), cfg.Bandwidth, cfg.Dim, cfg.Heads, a.DHead, cfg.Init); err != nil {
		return nil, err
	}
	if cfg.RandomFeatures > 0 {
		a.rf = OrthogonalFeatures(cfg.RandomFeatures, a.DHead, featureSeed(cfg.RandomFeatureSeed, s.Name()))
	}
	return a, nil
}

// Bandwidths returns the layer's current bandwidths under the key "<scope>.bandwidth":
// the fixed or learned value (one per layer or per head), for per-query bandwidths each
// head's value at a zero query, softplus(b_j) + h_min; kNN bandwidths depend on the data
// and are not listed.
func (a *KernelAttention) Bandwidths() map[string][]float64 {
	v := a.bw.values()
	if v == nil {
		return map[string][]float64{}
	}
	return map[string][]float64{joinName(a.scope, "bandwidth"): v}
}

func joinName(scope, name string) string {
	if scope == "" {
		return name
	}
	return scope + "." + name
}

// AttendOptions are the optional parts of an attention call.
type AttendOptions struct {
	// KeyMask is nil or [B, Tk], 0 marking padding keys (a box kernel on key positions).
	KeyMask *autodiff.Node
	// Offset is the position of query 0 among the keys: Tk − Tq when decoding with a
	// key/value cache, 0 otherwise.
	Offset int
	// Rotary, if not nil, holds the queries' rotary factors [B·Heads, Tq, DHead] as data
	// (rotary positions only): AttendKV rotates the queries by them instead of by their
	// index plus Offset, so that a decoding step whose keys are not at their positions'
	// indices (a cache of fixed size) runs one compiled graph at every position.
	Rotary *RotaryAngles
}

// Forward is self-attention: x [B, T, Dim] to [B, T, Dim].
func (a *KernelAttention) Forward(g *autodiff.Graph, x *autodiff.Node) *autodiff.Node {
	return a.Attend(g, x, x, AttendOptions{})
}

// Attend lets the queries of x [B, Tq, Dim] attend over the keys and values of
// mem [B, Tk, KVDim] (cross-attention when mem is not x), returning [B, Tq, Dim].
func (a *KernelAttention) Attend(g *autodiff.Graph, x, mem *autodiff.Node, opt AttendOptions) *autodiff.Node {
	if a.cfg.RandomFeatures == 0 && a.inFeatures() && !(a.cfg.Rotary && opt.Rotary != nil) {
		return a.attendFused(g, x, mem, opt)
	}
	if a.cfg.RandomFeatures > 0 && a.bw.cfg.Mode == BandwidthFixed && !a.cfg.Rotary {
		return a.attendFeatures(g, x, mem, opt)
	}
	k, v := a.KeysValues(g, mem, 0)
	return a.AttendKV(g, x, k, v, opt)
}

// standard reports whether the layer is plain scaled dot-product attention (the
// exponential kernel at a fixed bandwidth, after the rotary embedding of the queries and
// keys where the layer has one), which Attend runs as autodiff's Attention, the fused op
// of softmax(QKᵀ/h)V.
func (a *KernelAttention) standard() bool {
	_, exp := a.Kernel.(Exponential)
	return exp && a.bw.cfg.Mode == BandwidthFixed
}

// inFeatures reports whether Attend runs one fused op on the [B, T, Dim] layout instead
// of split heads: standard attention, or a kernel that the fused kernel ops evaluate
// (pairKernel; every bandwidth mode works there; kNN reads the projections in that layout
// too). Rotary positions rotate the queries and keys in that layout first
// (rotateFeatures).
func (a *KernelAttention) inFeatures() bool {
	if a.unfused {
		return false
	}
	if a.standard() {
		return true
	}
	_, ok := a.pairKernel()
	return ok
}

// rotateFeatures applies the rotary embedding to x [B, T, Heads·DHead] on that layout,
// each head's DHead columns rotated as ApplyRotary rotates a row of split heads, at
// positions offset..offset+T−1 (autodiff's fused Rotary op): the same numbers as
// splitting the heads, rotating and merging, without the copies.
func (a *KernelAttention) rotateFeatures(g *autodiff.Graph, x *autodiff.Node, offset int) *autodiff.Node {
	return g.Rotary(x, a.Heads, offset, a.cfg.RotaryBase)
}

// attendFused is Attend on the [B, T, Dim] layout (inFeatures): the same function as
// KeysValues followed by AttendKV, computed by autodiff's Attention (standard attention),
// KernelAttention or TiledLocalMean without head split or merge copies.
func (a *KernelAttention) attendFused(g *autodiff.Graph, x, mem *autodiff.Node, opt AttendOptions) *autodiff.Node {
	if !a.checkAttend(g, x, mem, opt) {
		return nil
	}
	xs, ms := x.Shape(), mem.Shape()
	q, k, v := a.Q.Forward(g, x), a.K.Forward(g, mem), a.V.Forward(g, mem)
	if a.cfg.Rotary {
		q, k = a.rotateFeatures(g, q, opt.Offset), a.rotateFeatures(g, k, 0)
	}
	mask := autodiff.Mask{Causal: a.cfg.Causal, Window: a.cfg.Window, Offset: opt.Offset, Hollow: a.cfg.Hollow}
	if a.standard() && !a.tiles(g, ms[1]) {
		m := g.AttentionDropout(q, k, v, opt.KeyMask, a.Heads, 1/a.bw.h0, mask, a.cfg.Dropout)
		a.tapWeights(g, m)
		return a.O.Forward(g, m)
	}
	pk, _ := a.pairKernel()
	mask = restrictMask(a.Kernel, mask)
	h := a.bw.fusedWidth(g, x, q, k, opt.KeyMask, mask, xs[0], xs[1], true)
	return a.O.Forward(g, a.pairMean(g, pk, q, k, v, h, opt, mask, xs[0], xs[1], ms[1], true))
}

// attendFeatures is Attend for random features at a fixed bandwidth without rotary
// positions: the same function as KeysValues followed by AttendKV, computed on the
// [B, T, Dim] layout (no head split or merge copies) with the bandwidth folded into the
// feature rows, one RandomFeatureAttention op between the q, k, v maps and the o map.
func (a *KernelAttention) attendFeatures(g *autodiff.Graph, x, mem *autodiff.Node, opt AttendOptions) *autodiff.Node {
	if !a.checkAttend(g, x, mem, opt) {
		return nil
	}
	q, k, v := a.Q.Forward(g, x), a.K.Forward(g, mem), a.V.Forward(g, mem)
	mask := restrictMask(a.Kernel, autodiff.Mask{Causal: a.cfg.Causal, Offset: opt.Offset})
	return a.O.Forward(g, g.RandomFeatureAttention(q, k, v, a.featureOptions(a.bw.h0, mask, opt, true)))
}

// checkAttend checks the inputs of an attention call on the [B, T, Dim] layout.
func (a *KernelAttention) checkAttend(g *autodiff.Graph, x, mem *autodiff.Node, opt AttendOptions) bool {
	if !ready(g, "kernel attention", a.scope, x, mem) {
		return false
	}
	xs, ms := x.Shape(), mem.Shape()
	switch {
	case len(ms) != 3 || ms[2] != a.cfg.KVDim:
		fail(g, "kernel attention", a.scope, "keys/values input %v, want [B, Tk, %d]", ms, a.cfg.KVDim)
	case len(xs) != 3 || xs[2] != a.cfg.Dim:
		fail(g, "kernel attention", a.scope, "query input %v, want [B, Tq, %d]", xs, a.cfg.Dim)
	case xs[0] != ms[0]:
		fail(g, "kernel attention", a.scope, "keys/values input %v, want batch %d for queries %v", ms, xs[0], xs)
	case opt.Offset < 0:
		fail(g, "kernel attention", a.scope, "negative offset %d", opt.Offset)
	}
	return g.Err() == nil
}

// pairMean is the local mean under a kernel that autodiff evaluates pair by pair
// (pairKernel), at bandwidth h (bandwidth.fusedWidth): TiledLocalMean where the layer
// tiles, else KernelAttention, which keeps the weights (and taps them). It runs on split
// heads [B·H, T, DHead] or (inFeatures) on [B, T, Dim].
func (a *KernelAttention) pairMean(g *autodiff.Graph, pk autodiff.PairKernel, q, k, v *autodiff.Node, h Width,
	opt AttendOptions, mask autodiff.Mask, b, tq, tk int, inFeatures bool) *autodiff.Node {
	table, _ := relativeScores(g, a.Kernel, tq, tk, opt.Offset)
	o := autodiff.TiledOptions{
		Bandwidth: h.Node, BandwidthValue: h.Value, RelBias: table, KeyMask: opt.KeyMask, Heads: a.Heads, Mask: mask,
		HeadsInFeatures: inFeatures, Dropout: a.cfg.Dropout,
	}
	if pp, ok := pk.(interface {
		pairParams(*autodiff.Graph) *autodiff.Node
	}); ok {
		o.KernelParams = pp.pairParams(g)
	}
	if a.tiles(g, tk) {
		return g.TiledLocalMean(pk, q, k, v, o)
	}
	m := g.KernelAttention(pk, q, k, v, o)
	a.tapWeights(g, m)
	a.tapBandwidth(g, h, b, tq)
	return m
}

// tapBandwidth taps the per-query bandwidths h [B·H, Tq] of the query and knn modes.
func (a *KernelAttention) tapBandwidth(g *autodiff.Graph, h Width, b, tq int) {
	if g.Tapping() && h.Node != nil && len(h.Node.Shape()) == 2 && a.bw.cfg.Mode >= BandwidthQuery {
		g.Tap(joinName(a.scope, TapBandwidth), g.Reshape(h.Node, []int{b, a.Heads, tq}))
	}
}

// KeysValues projects mem [B, Tk, KVDim], at positions offset..offset+Tk−1, to the
// per-head keys and values [B·Heads, Tk, DHead] that AttendKV takes. A decoder caches
// them and concatenates (axis 1) the new tokens' keys and values at every step.
func (a *KernelAttention) KeysValues(g *autodiff.Graph, mem *autodiff.Node, offset int) (k, v *autodiff.Node) {
	if !ready(g, "kernel attention", a.scope, mem) {
		return nil, nil
	}
	ms := mem.Shape()
	if len(ms) != 3 || ms[2] != a.cfg.KVDim {
		fail(g, "kernel attention", a.scope, "keys/values input %v, want [B, Tk, %d]", ms, a.cfg.KVDim)
		return nil, nil
	}
	k = a.splitHeads(g, a.K.Forward(g, mem))
	v = a.splitHeads(g, a.V.Forward(g, mem))
	if a.cfg.Rotary {
		k = ApplyRotary(g, k, offset, a.cfg.RotaryBase)
	}
	return k, v
}

// KeysValuesAt is KeysValues with the keys' rotary factors [B·Heads, Tk, DHead] as data
// (rot; nil, or ignored, without rotary positions) instead of from an offset.
func (a *KernelAttention) KeysValuesAt(g *autodiff.Graph, mem *autodiff.Node, rot *RotaryAngles) (k, v *autodiff.Node) {
	if !a.cfg.Rotary {
		return a.KeysValues(g, mem, 0)
	}
	if !ready(g, "kernel attention", a.scope, mem) {
		return nil, nil
	}
	if rot == nil {
		fail(g, "kernel attention", a.scope, "rotary positions need the keys' rotary factors")
		return nil, nil
	}
	ms := mem.Shape()
	if len(ms) != 3 || ms[2] != a.cfg.KVDim {
		fail(g, "kernel attention", a.scope, "keys/values input %v, want [B, Tk, %d]", ms, a.cfg.KVDim)
		return nil, nil
	}
	k = rotate(g, a.splitHeads(g, a.K.Forward(g, mem)), rot.Cos, rot.Sin)
	return k, a.splitHeads(g, a.V.Forward(g, mem))
}

// AppendKeysValues returns the keys and values of h [B, Tn, KVDim] at positions
// offset..offset+Tn−1, appended (axis 1) to the cached ones when cacheK and cacheV are not
// nil: the cache of incremental decoding.
func (a *KernelAttention) AppendKeysValues(g *autodiff.Graph, h, cacheK, cacheV *autodiff.Node, offset int) (k, v *autodiff.Node) {
	return a.AppendKeysValuesWith(g, h, cacheK, cacheV, AttendOptions{Offset: offset})
}

// AppendKeysValuesWith is AppendKeysValues with the new keys at opt.Offset, or, with
// opt.Rotary, rotated by those factors (KeysValuesAt).
func (a *KernelAttention) AppendKeysValuesWith(g *autodiff.Graph, h, cacheK, cacheV *autodiff.Node, opt AttendOptions) (k, v *autodiff.Node) {
	if opt.Rotary != nil {
		k, v = a.KeysValuesAt(g, h, opt.Rotary)
	} else {
		k, v = a.KeysValues(g, h, opt.Offset)
	}
	if cacheK != nil {
		k, v = g.Concat(1, cacheK, k), g.Concat(1, cacheV, v)
	}
	return k, v
}

// AttendKV lets the queries of x [B, Tq, Dim] attend over per-head keys and values
// [B·Heads, Tk, DHead] (from KeysValues), returning [B, Tq, Dim].
func (a *KernelAttention) AttendKV(g *autodiff.Graph, x, k, v *autodiff.Node, opt AttendOptions) *autodiff.Node {
	if !ready(g, "kernel attention", a.scope, x, k, v) {
		return nil
	}
	xs, ks, vs := x.Shape(), k.Shape(), v.Shape()
	if len(xs) != 3 || xs[2] != a.cfg.Dim {
		return fail(g, "kernel attention", a.scope, "query input %v, want [B, Tq, %d]", xs, a.cfg.Dim)
	}
	b, tq := xs[0], xs[1]
	want := []int{b * a.Heads, 0, a.DHead}
	if len(ks) != 3 || ks[0] != want[0] || ks[2] != a.DHead || len(vs) != 3 || vs[0] != want[0] || vs[1] != ks[1] || vs[2] != a.DHead {
		return fail(g, "kernel attention", a.scope, "keys %v and values %v, want [%d, Tk, %d] for queries %v", ks, vs, want[0], a.DHead, xs)
	}
	if opt.Offset < 0 {
		return fail(g, "kernel attention", a.scope, "negative offset %d", opt.Offset)
	}
	tk := ks[1]
	q := a.splitHeads(g, a.Q.Forward(g, x))
	switch {
	case a.cfg.Rotary && opt.Rotary != nil:
		q = rotate(g, q, opt.Rotary.Cos, opt.Rotary.Sin)
	case a.cfg.Rotary:
		q = ApplyRotary(g, q, opt.Offset, a.cfg.RotaryBase)
	}
	mask := restrictMask(a.Kernel, autodiff.Mask{Causal: a.cfg.Causal, Window: a.cfg.Window, Offset: opt.Offset, Hollow: a.cfg.Hollow})
	var m *autodiff.Node // [B, H, Tq, dh]
	switch pk, ok := a.pairKernel(); {
	case a.cfg.RandomFeatures > 0:
		h := a.bw.width(g, x, q, k, opt.KeyMask, mask, b, tq, false)
		hk := a.bw.width(g, x, q, k, opt.KeyMask, mask, b, tk, false)
		m = g.Reshape(a.randomFeatureMean(g, q, k, v, h, hk, opt, mask), []int{b, a.Heads, tq, a.DHead})
	case ok && !a.unfused:
		h := a.bw.fusedWidth(g, x, q, k, opt.KeyMask, mask, b, tq, false)
		m = g.Reshape(a.pairMean(g, pk, q, k, v, h, opt, mask, b, tq, tk, false), []int{b, a.Heads, tq, a.DHead})
	default:
		m = a.generalMean(g, q, k, v, a.bw.width(g, x, q, k, opt.KeyMask, mask, b, tq, false), opt, mask)
	}
	merged := g.Reshape(g.Transpose(m, 0, 2, 1, 3), []int{b, tq, a.cfg.Dim})
	return a.O.Forward(g, merged)
}

// generalMean is the local mean of any kernel (mixtures of mixtures, position kernels
// without the relative form): the kernel's scores [B·H, Tq, Tk] and position scores materialised, then
// autodiff's LocalMean, returning [B, H, Tq, DHead]. It taps the weights and per-query
// bandwidths.
func (a *KernelAttention) generalMean(g *autodiff.Graph, q, k, v *autodiff.Node, h Width, opt AttendOptions, mask autodiff.Mask) *autodiff.Node {
	if g.Err() != nil {
		return nil
	}
	qs, ks := q.Shape(), k.Shape()
	b, tq, tk := qs[0]/a.Heads, qs[1], ks[1]
	s := addPositionScores(g, a.Kernel, a.Kernel.Scores(g, q, k, h), a.Heads, opt.Offset)
	s = g.Reshape(s, []int{b, a.Heads, tq, tk})
	m := g.LocalMeanDropout(s, g.Reshape(v, []int{b, a.Heads, tk, a.DHead}), opt.KeyMask, mask, a.cfg.Dropout) // [B, H, Tq, dh]
	a.tapWeights(g, m)
	a.tapBandwidth(g, h, b, tq)
	return m
}

// The names under which KernelAttention taps its insides (autodiff.Graph.Tap), after
// the layer's scope: "blocks.0.attn.weights".
const (
	// TapWeights is the local mean's normalised weights [B, Heads, Tq, Tk], the op's own
	// (autodiff.Graph.LocalMeanWeights).
	TapWeights = "weights"
	// TapVisible is 1 where a key is visible to a query, 0 where the box kernel (causal,
	// window, hollow) or the key mask hides it, [B, Heads, Tq, Tk].
	TapVisible = "visible"
	// TapBandwidth is the per-query bandwidth [B, Heads, Tq] of the query and knn modes.
	TapBandwidth = "bandwidth"
)

// tapWeights taps the weights and visibility of the local mean whose output is m.
func (a *KernelAttention) tapWeights(g *autodiff.Graph, m *autodiff.Node) {
	if !g.Tapping() {
		return
	}
	w, vis := g.LocalMeanWeights(m)
	g.Tap(joinName(a.scope, TapWeights), w)
	g.Tap(joinName(a.scope, TapVisible), vis)
}

// splitHeads maps [B, T, Dim] to [B·Heads, T, DHead], head j taking columns
// j·DHead..(j+1)·DHead−1.
func (a *KernelAttention) splitHeads(g *autodiff.Graph, x *autodiff.Node) *autodiff.Node {
	if x == nil {
		return nil
	}
	xs := x.Shape()
	y := g.Transpose(g.Reshape(x, []int{xs[0], xs[1], a.Heads, a.DHead}), 0, 2, 1, 3)
	return g.Reshape(y, []int{xs[0] * a.Heads, xs[1], a.DHead})
}
