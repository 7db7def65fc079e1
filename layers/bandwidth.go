package layers

import (
	"fmt"
	"math"

	"github.com/locusml/locus/autodiff"
)

// BandwidthMode says how a kernel attention layer chooses its bandwidth h (THEORY.md §4).
type BandwidthMode int

const (
	// BandwidthFixed is a constant h = Init (√d_head by default).
	BandwidthFixed BandwidthMode = iota
	// BandwidthLayer learns one h = softplus(ρ) + Min for the layer.
	BandwidthLayer
	// BandwidthHead learns one h = softplus(ρ_j) + Min per head j.
	BandwidthHead
	// BandwidthQuery computes h(x) = softplus(w_j·x + b_j) + Min per head j from each
	// query token x (the balloon estimator).
	BandwidthQuery
	// BandwidthKNN uses the distance from each query to its K-th nearest visible key,
	// plus Min (no gradient through the choice of neighbour).
	BandwidthKNN
)

var bandwidthModeNames = []string{"fixed", "layer", "head", "query", "knn"}

// BandwidthModeNames returns the text forms of the bandwidth modes.
func BandwidthModeNames() []string { return append([]string(nil), bandwidthModeNames...) }

// String returns the mode's name: fixed, layer, head, query or knn.
func (m BandwidthMode) String() string { return stringEnum("BandwidthMode", bandwidthModeNames, m) }

// MarshalText returns the mode's name.
func (m BandwidthMode) MarshalText() ([]byte, error) {
	return marshalEnum("bandwidth mode", bandwidthModeNames, m)
}

// UnmarshalText parses a mode's name.
func (m *BandwidthMode) UnmarshalText(b []byte) (err error) {
	*m, err = parseEnum[BandwidthMode]("bandwidth mode", bandwidthModeNames, string(b))
	return err
}

// learnsBandwidth reports whether the mode has bandwidth parameters.
func learnsBandwidth(m BandwidthMode) bool {
	return m == BandwidthLayer || m == BandwidthHead || m == BandwidthQuery
}

// BandwidthConfig configures a layer's bandwidth.
type BandwidthConfig struct {
	// Mode chooses how h is set; the zero value is BandwidthFixed.
	Mode BandwidthMode
	// Init is the fixed bandwidth, or the initial one of a learned mode; 0 means √d_head.
	Init float64
	// Min is the floor h_min of the learned, per-query and kNN modes; 0 means 1e-3.
	Min float64
	// K is the neighbour rank of BandwidthKNN; 0 means 8.
	K int
}

const (
	defaultMinBandwidth = 1e-3
	defaultKNN          = 8
)

// Validate reports the first invalid field.
func (c BandwidthConfig) Validate() error {
	if c.Mode < BandwidthFixed || c.Mode > BandwidthKNN {
		return fmt.Errorf("BandwidthConfig.Mode = %v, want one of fixed, layer, head, query, knn", c.Mode)
	}
	if c.Init < 0 || math.IsNaN(c.Init) || math.IsInf(c.Init, 0) {
		return fmt.Errorf("BandwidthConfig.Init = %g, want a finite value >= 0 (0 means √d_head)", c.Init)
	}
	if c.Min < 0 || math.IsNaN(c.Min) || math.IsInf(c.Min, 0) {
		return fmt.Errorf("BandwidthConfig.Min = %g, want a finite value >= 0", c.Min)
	}
	if c.K < 0 {
		return fmt.Errorf("BandwidthConfig.K = %d, want >= 0 (0 means %d)", c.K, defaultKNN)
	}
	if c.Init > 0 && c.Mode != BandwidthFixed && c.Mode != BandwidthKNN && c.Init <= c.min() {
		return fmt.Errorf("BandwidthConfig.Init = %g must exceed Min = %g for a learned bandwidth", c.Init, c.min())
	}
	return nil
}

func (c BandwidthConfig) min() float64 {
	if c.Min == 0 {
		return defaultMinBandwidth
	}
	return c.Min
}

func (c BandwidthConfig) init(dHead int) float64 {
	if c.Init == 0 {
		return math.Sqrt(float64(dHead))
	}
	return c.Init
}

func (c BandwidthConfig) k() int {
	if c.K == 0 {
		return defaultKNN
	}
	return c.K
}

// bandwidth holds a layer's bandwidth parameters.
type bandwidth struct {
	cfg   BandwidthConfig
	h0    float64
	hmin  float64
	heads int
	rho   *autodiff.Param // layer [1] or head [heads]
	query *Linear         // per-query map d → heads
}

func newBandwidth(s autodiff.Scope, cfg BandwidthConfig, dim, heads, dHead int, init Init) (*bandwidth, error) {
	b := &bandwidth{cfg: cfg, h0: cfg.init(dHead), hmin: cfg.min(), heads: heads}
	if b.h0 <= b.hmin && cfg.Mode != BandwidthFixed && cfg.Mode != BandwidthKNN {
		return nil, fmt.Errorf("bandwidth %q: initial bandwidth %g must exceed Min = %g", s.Name(), b.h0, b.hmin)
	}
	rho0 := softplusInv(b.h0 - b.hmin)
	var err error
	switch cfg.Mode {
	case BandwidthLayer:
		b.rho, err = newParam(s, "bandwidth", "rho", []int{1}, autodiff.Constant(rho0))
	case BandwidthHead:
		b.rho, err = newParam(s, "bandwidth", "rho", []int{heads}, autodiff.Constant(rho0))
	case BandwidthQuery:
		b.query, err = NewLinear(s, LinearConfig{In: dim, Out: heads, Init: init})
		if err == nil {
			// Start every query at h0: w = 0, b = softplus⁻¹(h0 − h_min).
			for i := range b.query.Weight.Size() {
				b.query.Weight.SetAt(i, 0)
			}
			for i := range heads {
				b.query.Bias.SetAt(i, rho0)
			}
		}
	}
	if err != nil {
		return nil, err
	}
	return b, nil
}

// values returns the current bandwidths: one (fixed, layer), one per head (head), the
// per-head value at a zero query (query), or nil (knn, which depends on the data).
func (b *bandwidth) values() []float64 {
	switch b.cfg.Mode {
	case BandwidthFixed:
		return []float64{b.h0}
	case BandwidthLayer, BandwidthHead:
		out := make([]float64, b.rho.Size())
		for i := range out {
			out[i] = softplus(b.rho.At(i)) + b.hmin
		}
		return out
	case BandwidthQuery:
		out := make([]float64, b.heads)
		for i := range out {
			out[i] = softplus(b.query.Bias.At(i)) + b.hmin
		}
		return out
	}
	return nil
}

// width resolves the bandwidth for one pass. x is the query input [B, Tq, d]; q and k are
// the per-head queries and keys [B·H, Tq, dh] and [B·H, Tk, dh], or with inFeatures the
// projections [B, Tq, H·dh] and [B, Tk, H·dh] (only kNN reads them).
func (b *bandwidth) width(g *autodiff.Graph, x, q, k, keyMask *autodiff.Node, mask autodiff.Mask, batch, tq int, inFeatures bool) Width {
	switch b.cfg.Mode {
	case BandwidthFixed:
		return Fixed(b.h0)
	case BandwidthLayer:
		return Width{Node: g.AddConst(g.Softplus(g.Param(b.rho)), b.hmin)}
	case BandwidthHead:
		h := g.AddConst(g.Softplus(g.Param(b.rho)), b.hmin) // [H]
		return Width{Node: broadcastHeads(g, h, batch, b.heads, tq)}
	case BandwidthQuery:
		h := g.AddConst(g.Softplus(b.query.Forward(g, x)), b.hmin) // [B, Tq, H]
		h = g.Transpose(h, 0, 2, 1)
		return Width{Node: g.Reshape(h, []int{batch * b.heads, tq})}
	case BandwidthKNN:
		return knnWidth(g, q, k, keyMask, b.cfg.k(), b.hmin, mask, b.heads, inFeatures)
	}
	return Width{Node: g.Fail(fmt.Errorf("bandwidth: unknown mode %v", b.cfg.Mode))}
}

// fusedWidth is width as autodiff's fused kernel ops take it (TiledOptions.Bandwidth):
// the same except that per-head bandwidths stay one node [Heads] instead of being
// broadcast to every query row.
func (b *bandwidth) fusedWidth(g *autodiff.Graph, x, q, k, keyMask *autodiff.Node, mask autodiff.Mask, batch, tq int, inFeatures bool) Width {
	if b.cfg.Mode == BandwidthHead {
		return Width{Node: g.AddConst(g.Softplus(g.Param(b.rho)), b.hmin)}
	}
	return b.width(g, x, q, k, keyMask, mask, batch, tq, inFeatures)
}

// broadcastHeads turns per-head values h [H] into [B·H, Tq] with two outer products.
func broadcastHeads(g *autodiff.Graph, h *autodiff.Node, batch, heads, tq int) *autodiff.Node {
	bh := g.MatMul(g.ConstTensor([]int{batch, 1}, ones(batch)), g.Reshape(h, []int{1, heads}))
	return g.MatMul(g.Reshape(bh, []int{batch * heads, 1}), g.ConstTensor([]int{1, tq}, ones(tq)))
}

func ones(n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = 1
	}
	return v
}

// KNNWidth returns the k-nearest-neighbour bandwidth of queries q [N, Tq, d] over keys
// k [N, Tk, d]: per query, the Euclidean distance to its k-th nearest key among those
// that mask and keyMask ([B, Tk] with N = B·heads, or nil) allow, plus hmin > 0. The
// gradient flows through that distance but not through the choice of neighbour. It keeps
// O(N·Tq) values (autodiff.Graph.KNNDistance), not the N·Tq·Tk distances.
func KNNWidth(g *autodiff.Graph, q, k, keyMask *autodiff.Node, kth int, hmin float64, mask autodiff.Mask, heads int) Width {
	return knnWidth(g, q, k, keyMask, kth, hmin, mask, heads, false)
}

// knnWidth is KNNWidth, with inFeatures for queries and keys in the [B, T, heads·d]
// layout of the fused paths.
func knnWidth(g *autodiff.Graph, q, k, keyMask *autodiff.Node, kth int, hmin float64, mask autodiff.Mask, heads int, inFeatures bool) Width {
	if !checkQK(g, "knn bandwidth", q, k) {
		return Width{}
	}
	if !(hmin > 0) {
		return Width{Node: g.Fail(fmt.Errorf("knn bandwidth: hmin = %g, want > 0", hmin))}
	}
	h := g.KNNDistance(q, k, autodiff.KNNOptions{K: kth, Mask: mask, KeyMask: keyMask, Heads: heads, HeadsInFeatures: inFeatures})
	return Width{Node: g.AddConst(h, hmin)}
}
