package layers

import (
	"fmt"

	"github.com/locusml/locus/autodiff"
)

// Bandwidth is a bandwidth outside an attention layer: the h of a LocalMean that a
// model builds itself (THEORY.md §4), fixed, or learned as one value h = softplus(ρ) +
// Min whose parameter "<scope>.bandwidth.rho" the optimizer trains like any other.
type Bandwidth struct {
	b     *bandwidth
	scope string
}

// NewBandwidth creates a bandwidth under s. cfg.Mode is BandwidthFixed or
// BandwidthLayer (one learned value); the per-head, per-query and kNN modes belong to
// an attention layer's heads and queries. Init 0 means 1, Min 0 means 1e-3.
func NewBandwidth(s autodiff.Scope, cfg BandwidthConfig) (*Bandwidth, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("bandwidth %q: %w", s.Name(), err)
	}
	if cfg.Mode != BandwidthFixed && cfg.Mode != BandwidthLayer {
		return nil, fmt.Errorf("bandwidth %q: BandwidthConfig.Mode = %v, want fixed or layer (the %v mode needs an attention layer)", s.Name(), cfg.Mode, cfg.Mode)
	}
	b, err := newBandwidth(s.Sub("bandwidth"), cfg, 1, 1, 1, InitTorch)
	if err != nil {
		return nil, err
	}
	return &Bandwidth{b: b, scope: s.Name()}, nil
}

// Width returns the bandwidth for one forward pass of g, as LocalMean and a kernel's
// Scores take it; a learned one carries the gradient to its parameter.
func (b *Bandwidth) Width(g *autodiff.Graph) Width {
	return b.b.width(g, nil, nil, nil, nil, autodiff.Mask{}, 1, 1, false)
}

// Value returns the current bandwidth h.
func (b *Bandwidth) Value() float64 { return b.b.values()[0] }

// Bandwidths returns the value under the key "<scope>.bandwidth", as
// KernelAttention.Bandwidths does.
func (b *Bandwidth) Bandwidths() map[string][]float64 {
	return map[string][]float64{joinName(b.scope, "bandwidth"): b.b.values()}
}
