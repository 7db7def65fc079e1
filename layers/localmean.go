package layers

import (
	"fmt"

	"github.com/locusml/locus/autodiff"
)

// LocalMeanOptions are the optional parts of a LocalMean call.
type LocalMeanOptions struct {
	// Mask is the box position kernel: causal, sliding window, the offset of query 0 among
	// the keys, and Hollow for the leave-one-out local mean.
	Mask autodiff.Mask
	// KeyMask is nil or [N, Tk] with 0 for keys (padding) that no query may see.
	KeyMask *autodiff.Node
}

// LocalMean returns the kernel-weighted mean of the values v [N, Tk, dv] at every query
// (THEORY.md §2): m_t = Σ_s K(q_t, k_s) v_s / Σ_s K(q_t, k_s), for queries q [N, Tq, d]
// and keys k [N, Tk, d], as [N, Tq, dv]. The kernel's scores at bandwidth h are
// normalised per query over the keys that the options (and a Product kernel's position
// part) allow; a query with no visible key, or none inside a compact kernel's support,
// gets 0. Learnable kernels must be bound first (Bind).
func LocalMean(g *autodiff.Graph, q, k, v *autodiff.Node, kern ContentKernel, h Width, opt LocalMeanOptions) *autodiff.Node {
	if g == nil || g.Err() != nil {
		return nil
	}
	if kern == nil {
		return g.Fail(fmt.Errorf("local mean: nil kernel"))
	}
	if !checkQK(g, kern.Name(), q, k) {
		return nil
	}
	if v == nil || len(v.Shape()) != 3 || v.Shape()[0] != q.Shape()[0] || v.Shape()[1] != k.Shape()[1] {
		return g.Fail(fmt.Errorf("local mean: values %v, want [%d, %d, dv] for keys %v", v.Shape(), q.Shape()[0], k.Shape()[1], k.Shape()))
	}
	mask := restrictMask(kern, opt.Mask)
	s := addPositionScores(g, kern, kern.Scores(g, q, k, h), 1, mask.Offset)
	return g.LocalMean(s, v, opt.KeyMask, mask)
}

// restrictMask narrows m by the kernel's position box, if it has one.
func restrictMask(kern ContentKernel, m autodiff.Mask) autodiff.Mask {
	for _, f := range positionFactors(kern) {
		m = f.Restrict(m)
	}
	return m
}

// addPositionScores adds a product kernel's position scores [P·Tq·Tk] to the content
// scores s [N, Tq, Tk], where N = batch·heads and P is 1 or heads (laid out as
// n = b·heads + j, PyTorch's head split).
func addPositionScores(g *autodiff.Graph, kern ContentKernel, s *autodiff.Node, heads, offset int) *autodiff.Node {
	for _, f := range positionFactors(kern) {
		if s == nil {
			return nil
		}
		sh := s.Shape()
		ps := f.PositionScores(g, sh[1], sh[2], offset)
		if ps == nil {
			continue
		}
		size := ps.Shape()
		p := 0
		if len(size) == 1 && size[0]%(sh[1]*sh[2]) == 0 {
			p = size[0] / (sh[1] * sh[2])
		}
		if p != 1 && (p != heads || sh[0]%heads != 0) {
			return g.Fail(fmt.Errorf("kernel %s: position scores %v for scores %v with %d heads", kern.Name(), size, sh, heads))
		}
		s = g.Reshape(g.AddBias(g.Reshape(s, []int{sh[0] / p, size[0]}), ps), sh)
	}
	return s
}
