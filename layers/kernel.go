package layers

import (
	"fmt"
	"math"

	"github.com/locusml/locus/autodiff"
)

// Kernel is a localization kernel K(q, k) with bandwidth h, evaluated in the log domain
// (THEORY.md §1). Name returns the kernel's spec (see ParseKernel), so that
// ParseKernel(k.Name()) rebuilds k.
type Kernel interface {
	Name() string
	// LogK returns log K(q, k) at bandwidth h > 0; math.Inf(-1) where the kernel is zero.
	LogK(q, k []float64, h float64) float64
}

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

// pairOf returns the fast path of a content kernel, the form in which autodiff's fused
// and tiled local means evaluate it pair by pair (autodiff.PairKernel and the optional
// interfaces it lists), or nil where it has none. The kernels of this package keep theirs
// off their exported method sets (an unexported pairKernel method returns it); a kernel
// of another package gets the fused ops by implementing autodiff.PairKernel itself.
func pairOf(k ContentKernel) autodiff.PairKernel {
	if p, ok := k.(interface{ pairKernel() autodiff.PairKernel }); ok {
		return p.pairKernel()
	}
	pk, _ := k.(autodiff.PairKernel)
	return pk
}

// contentForm registers a content kernel without arguments.
func contentForm(k ContentKernel, doc string) KernelForm {
	return KernelForm{Name: k.Name(), Doc: doc, Parse: func([]SpecArg) (Term, error) { return k, nil }}
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

func checkLen(q, k []float64) {
	if len(q) != len(k) {
		panic(fmt.Sprintf("layers: kernel arguments have lengths %d and %d", len(q), len(k)))
	}
}

func sqDist(q, k []float64) float64 {
	checkLen(q, k)
	var s float64
	for i, v := range q {
		d := v - k[i]
		s += d * d
	}
	return s
}

// scaledSqDist returns ‖q − k‖² / h², dividing each coordinate by h before squaring so
// that a bandwidth below 1e-154 (where h·h underflows to 0) still gives the right
// score, +Inf far away and 0 at q = k, never 0/0.
func scaledSqDist(q, k []float64, h float64) float64 {
	checkLen(q, k)
	var s float64
	for i, v := range q {
		d := (v - k[i]) / h
		s += d * d
	}
	return s
}

// scaledDist returns ‖q − k‖ / h, without underflow or overflow of the squares when
// the coordinates are finite: the largest |q_i − k_i| / h is factored out.
func scaledDist(q, k []float64, h float64) float64 {
	checkLen(q, k)
	var scale float64
	for i, v := range q {
		scale = max(scale, math.Abs(v-k[i]))
	}
	if scale == 0 {
		return 0
	}
	var s float64
	for i, v := range q {
		d := (v - k[i]) / scale
		s += d * d
	}
	return scale / h * math.Sqrt(s)
}
