package layers

import (
	"fmt"

	"github.com/locusml/locus/autodiff"
)

// ContentKernel is a Kernel that can also be built into a graph: Scores returns the
// log-kernel scores s_ts = log K(q_t, k_s) for queries q [N, Tq, d] and keys k [N, Tk, d]
// at bandwidth h, as [N, Tq, Tk], ready for autodiff's fused LocalMean. Entries of −Inf
// are outside a compact kernel's support. N is usually batch × heads.
//
// The scores are exact log-kernels (no dropped constant); a term in q alone would cancel
// in the per-query normalisation, but keeping it makes Scores match LogK.
type ContentKernel interface {
	Kernel
	Scores(g *autodiff.Graph, q, k *autodiff.Node, h Width) *autodiff.Node
}

// checkQK records a shape error naming the kernel unless q and k are [N, Tq, d] and
// [N, Tk, d].
func checkQK(g *autodiff.Graph, name string, q, k *autodiff.Node) bool {
	if g.Err() != nil {
		return false
	}
	if q == nil || k == nil {
		g.Fail(fmt.Errorf("kernel %s: nil queries or keys", name))
		return false
	}
	qs, ks := q.Shape(), k.Shape()
	if len(qs) != 3 || len(ks) != 3 || qs[0] != ks[0] || qs[2] != ks[2] {
		g.Fail(fmt.Errorf("kernel %s: queries %v and keys %v, want [N, Tq, d] and [N, Tk, d]", name, qs, ks))
		return false
	}
	return true
}

// Scores returns q·k / h (one batched matrix product).
func (Exponential) Scores(g *autodiff.Graph, q, k *autodiff.Node, h Width) *autodiff.Node {
	if !checkQK(g, "exponential", q, k) {
		return nil
	}
	return h.divide(g, g.BatchedMatMul(q, k, false, true), 1)
}

// Scores returns −‖q − k‖² / (2h²), with the squared distances computed directly.
func (Gaussian) Scores(g *autodiff.Graph, q, k *autodiff.Node, h Width) *autodiff.Node {
	if !checkQK(g, "gaussian", q, k) {
		return nil
	}
	return h.divide(g, g.Scale(g.PairwiseDist(q, k, true), -0.5), 2)
}

// Scores returns −‖q − k‖ / h; the gradient at q = k is the zero subgradient.
func (Laplacian) Scores(g *autodiff.Graph, q, k *autodiff.Node, h Width) *autodiff.Node {
	if !checkQK(g, "laplacian", q, k) {
		return nil
	}
	return h.divide(g, g.Neg(g.PairwiseDist(q, k, false)), 1)
}

// Scores returns −log(1 + ‖q − k‖² / h²).
func (Cauchy) Scores(g *autodiff.Graph, q, k *autodiff.Node, h Width) *autodiff.Node {
	if !checkQK(g, "cauchy", q, k) {
		return nil
	}
	return g.Neg(g.Log(g.AddConst(h.divide(g, g.PairwiseDist(q, k, true), 2), 1)))
}

// Scores returns log max(0, 1 − ‖q − k‖² / h²): −Inf outside the support, where the
// gradient is exactly 0.
func (Epanechnikov) Scores(g *autodiff.Graph, q, k *autodiff.Node, h Width) *autodiff.Node {
	if !checkQK(g, "epanechnikov", q, k) {
		return nil
	}
	return g.LogPositive(g.AddConst(g.Neg(h.divide(g, g.PairwiseDist(q, k, true), 2)), 1))
}
